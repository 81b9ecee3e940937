"""One reader for the versioned YAML files of ``config/`` and the campaign's decisions files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def read_mapping(path: Path, error: type[Exception], what: str, shape: str = "a mapping") -> dict[str, Any]:
    """The top-level mapping of the YAML file ``path`` (an empty file gives ``{}``).

    Raises ``error`` naming the file when it cannot be read or parsed ("cannot read {what}") or when its top
    level is not a mapping ("top level must be {shape}"), so every caller reports bad files the same way.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise error(f"{path}: cannot read {what}: {exc}") from exc
    if not isinstance(data, dict):
        raise error(f"{path}: top level must be {shape}")
    return data
