"""docs/reference/campaign-layout.md against pipeline.campaign.layout: every top-level part of a campaign directory
that the module names (TOP_LEVEL) is listed on the page, and every part the page lists is one the module names.

Covers: pipeline.campaign.layout
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.campaign import layout

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "campaign-layout.md"

#: the top-level parts of CAMPAIGN_DIR, as the one module that names them lists them
CODE_PARTS = layout.TOP_LEVEL


def listed_parts() -> set[str]:
    """The top-level names of the page's table (its first column, up to the first slash)."""
    table = PAGE.read_text(encoding="utf-8").split("## In brat")[0]
    return {m.group(1) for m in re.finditer(r"^\| `([^`/<]+)", table, re.M)}


def test_every_part_the_code_names_is_listed() -> None:
    assert sorted(CODE_PARTS - listed_parts()) == []


def test_every_listed_part_is_one_the_code_names() -> None:
    assert sorted(listed_parts() - CODE_PARTS) == []
