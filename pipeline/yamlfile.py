"""One reader for the versioned YAML files of ``config/`` and the campaign's decisions files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: libyaml's loader when PyYAML was built with it: the ontology, schema and filter files are read
#: by every build, and the pure-Python loader took about 0.3 s of a one-second rebuild step
SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with the fastest safe loader available (same results, same errors)."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader



def read_mapping(path: Path, error: type[Exception], what: str, shape: str = "a mapping") -> dict[str, Any]:
    """The top-level mapping of the YAML file ``path`` (an empty file gives ``{}``).

    Raises ``error`` naming the file when it cannot be read or parsed ("cannot read {what}") or when its top
    level is not a mapping ("top level must be {shape}"), so every caller reports bad files the same way.
    """
    try:
        data = safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise error(f"{path}: cannot read {what}: {exc}") from exc
    if not isinstance(data, dict):
        raise error(f"{path}: top level must be {shape}")
    return data
