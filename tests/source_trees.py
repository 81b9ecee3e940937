"""Syntax trees of source files, for the tests that read `pipeline/` as text (its layers, sizes, docstrings,
durable writes and Luigi imports): each text is parsed once per test process, however many tests read it.

The trees are shared between those tests: read them, never change them.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> ast.Module:
    return ast.parse(text)


def parse(path: Path) -> ast.Module:
    """The syntax tree of a Python file (the same object for the same text: a copy of a file costs no parse).

    Raises:
        SyntaxError: If the file does not parse; the error names the file.
    """
    text = path.read_text(encoding="utf-8")
    try:
        return _parse_text(text)
    except SyntaxError:
        return ast.parse(text, filename=str(path))  # raises again, naming the file
