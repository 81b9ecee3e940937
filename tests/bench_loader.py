"""Load a script of bench/ as a module, for the tests of its functions (bench/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(monkeypatch: pytest.MonkeyPatch, script: str, *, bench_on_path: bool = False) -> Any:
    """Return ``bench/SCRIPT.py`` executed as the module ``bench_SCRIPT``, registered for this test only.

    Args:
        monkeypatch: The test's monkeypatch; ``sys.modules`` (and ``sys.path``) are restored after the test.
        script: The script's name without ``.py``.
        bench_on_path: Put ``bench/`` on ``sys.path`` first, for a script that imports another bench script.

    Returns:
        The module.  It is registered in ``sys.modules`` because its dataclasses look their module up.
    """
    if bench_on_path:
        monkeypatch.syspath_prepend(str(BENCH))
    name = f"bench_{script}"
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module
