"""Every module of pipeline/: no function longer than 120 lines of code, its docstring excluded, and no module
longer than 1,000 lines (issue 38's targets), so that a function keeps to one concern a reader can hold and a
module to one unit of the stack.

Covers: pipeline.campaign.finalize, pipeline.campaign.append, pipeline.nlp.extend_search, pipeline.nlp.learned_data
"""

from __future__ import annotations

import ast
from pathlib import Path

import pipeline
from tests import source_trees

LIMIT = 120
MODULE_LIMIT = 1000
PACKAGE = Path(pipeline.__file__).parent


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines from ``def`` to the function's last line, less its docstring's."""
    assert node.end_lineno is not None
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        assert first.end_lineno is not None
        lines -= first.end_lineno - first.lineno + 1
    return lines


def long_functions(package: Path, limit: int) -> list[str]:
    out = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(source_trees.parse(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and code_lines(node) > limit:
                out.append(f"{path.relative_to(package.parent)}:{node.lineno} {node.name}: {code_lines(node)} lines")
    return out


def test_no_function_is_longer_than_120_lines_of_code() -> None:
    assert long_functions(PACKAGE, LIMIT) == []


def test_no_module_is_longer_than_1000_lines() -> None:
    long = [f"{path.relative_to(PACKAGE.parent)}: {n} lines" for path in sorted(PACKAGE.rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LIMIT]
    assert long == []


def test_the_count_leaves_the_docstring_out(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(3))
    (tmp_path / "m.py").write_text(f'def f():\n    """Doc.\n\n    More.\n    """\n{body}', encoding="utf-8")
    assert long_functions(tmp_path, 4) == []  # def + 3 lines; the 4-line docstring does not count
    assert long_functions(tmp_path, 3) == [f"{tmp_path.name}/m.py:1 f: 4 lines"]
