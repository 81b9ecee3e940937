"""Every test file names the modules of `pipeline/` it covers, and every module is named by one (issue 38).

The convention: a paragraph of the test file's module docstring that begins with ``Covers:`` and lists
dotted module names, separated by commas, e.g. ``Covers: pipeline.brat.standoff, pipeline.cli.brat_commands``
(it may wrap onto the following lines; a blank line ends it). A module is every ``.py`` file under
`pipeline/`, a package's ``__init__.py`` only when it holds more than its docstring. A CLI command is
covered by naming its ``pipeline.cli.*_commands`` module.  ``pytest -m "not slow"`` runs at least one test of
every module: each module is named by a test file with a test that is not marked slow.

Covers: none (it reads the test files and the modules of the source tree as text)
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "pipeline"
TESTS = ROOT / "tests"

NAME = re.compile(r"\bpipeline(?:\.\w+)*")


@cache
def parsed(path: Path) -> ast.Module:
    """A source file's syntax tree, parsed once per test session."""
    return ast.parse(path.read_text(encoding="utf-8"))


@cache
def pipeline_modules() -> frozenset[str]:
    """The dotted names of the modules under pipeline/ that a test file must name."""
    names = set()
    for path in PIPELINE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            body = parsed(path).body
            if all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body):
                continue  # a docstring only: nothing to test
            parts = parts[:-1]
        names.add(".".join(parts))
    return frozenset(names)


def all_test_files() -> list[Path]:
    """Every test module under tests/."""
    return sorted(TESTS.rglob("test_*.py"))


def covers(path: Path) -> list[str] | None:
    """The names on the ``Covers:`` paragraph of a test file's docstring, or None without one."""
    doc = ast.get_docstring(parsed(path), clean=True) or ""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Covers:"):
            paragraph = [line[len("Covers:"):]]
            for more in lines[i + 1:]:
                if not more.strip():
                    break
                paragraph.append(more)
            return NAME.findall(" ".join(paragraph))
    return None


def imported_modules(path: Path, modules: frozenset[str]) -> list[str]:
    """The pipeline modules a test file imports (a draft of its ``Covers:`` line)."""
    found = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
    return sorted(found & modules)


def is_slow(node: ast.expr) -> bool:
    """Whether a decorator or ``pytestmark`` value is (or lists) ``pytest.mark.slow``."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(is_slow(element) for element in node.elts)
    return ast.unparse(node) == "pytest.mark.slow"


def fast_tests(path: Path) -> list[str]:
    """The test functions of a file that ``-m "not slow"`` runs (read from the source, not collected)."""
    tree = parsed(path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets):
            if is_slow(node.value):
                return []
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef) and node.name.startswith("Test")):
        if not any(is_slow(decorator) for decorator in cls.decorator_list):
            functions += [node for node in cls.body if isinstance(node, ast.FunctionDef)]
    return [function.name for function in functions if function.name.startswith("test")
            and not any(is_slow(decorator) for decorator in function.decorator_list)]


def test_every_test_file_has_a_covers_line() -> None:
    modules = pipeline_modules()
    missing = {
        path.relative_to(ROOT): imported_modules(path, modules) for path in all_test_files() if covers(path) is None
    }
    assert not missing, "add a 'Covers:' paragraph to the module docstring of each of these test files " \
        "(drafted from their imports; add the *_commands module of each CLI command they run):\n" + "\n".join(
            f"  {path}: Covers: {', '.join(names) or 'pipeline.MODULE'}" for path, names in sorted(missing.items()))


def test_every_name_on_a_covers_line_is_a_module() -> None:
    modules = pipeline_modules()
    unknown = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in all_test_files() for name in covers(path) or [] if name not in modules
    }
    assert not unknown, "these 'Covers:' names are not modules under pipeline/ (moved or renamed? " \
        "write the module's new dotted name):\n  " + "\n  ".join(sorted(unknown))


def test_modules_that_no_test_file_names() -> None:
    modules = pipeline_modules()
    named = {name for path in all_test_files() for name in covers(path) or []}
    unnamed = sorted(modules - named)
    imports = {path: imported_modules(path, modules) for path in all_test_files()}
    importers = {module: [str(path.relative_to(ROOT)) for path in imports if module in imports[path]]
                 for module in unnamed}
    assert not unnamed, "no test file names these modules on its 'Covers:' line; add each to the docstring of " \
        "the test file that tests it (or write one):\n" + "\n".join(
            f"  {module}" + (f" (imported by {', '.join(importers[module])})" if importers[module] else "")
            for module in unnamed)


def test_every_module_has_a_test_that_is_not_slow() -> None:
    modules = pipeline_modules()
    fast = {name for path in all_test_files() if fast_tests(path) for name in covers(path) or []}
    only_slow = sorted(modules - fast)
    assert not only_slow, "only slow tests cover these modules; write a cheaper test of each (a smaller input), " \
        "not marked slow, in a test file that names it:\n  " + "\n  ".join(only_slow)


def test_the_covers_convention_on_a_sample(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text('"""A sample.\n\nCovers: pipeline.brat.standoff,\n    pipeline.cli.brat_commands\n\n'
                      'Not pipeline.store.\n"""\nfrom pipeline.brat import standoff\nfrom pipeline.store import x\n',
                      encoding="utf-8")
    assert covers(sample) == ["pipeline.brat.standoff", "pipeline.cli.brat_commands"]
    assert imported_modules(sample, pipeline_modules()) == ["pipeline.brat.standoff", "pipeline.store"]
    bare = tmp_path / "test_bare.py"
    bare.write_text("import pipeline.store\n", encoding="utf-8")
    assert covers(bare) is None
    assert "pipeline.tasks" in pipeline_modules() and "pipeline.sources" not in pipeline_modules()
    marked = tmp_path / "test_marked.py"
    marked.write_text("import pytest\n\n@pytest.mark.slow\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n\n"
                      "class TestC:\n    def test_c(self):\n        pass\n", encoding="utf-8")
    assert fast_tests(marked) == ["test_b", "test_c"]
    marked = tmp_path / "test_marked_module.py"
    marked.write_text("import pytest\n\npytestmark = [pytest.mark.skipif(False, reason='x'), pytest.mark.slow]\n\n"
                      "def test_b():\n    pass\n", encoding="utf-8")
    assert fast_tests(marked) == []


def test_more_slow_tests_than_allowed_stop_the_run() -> None:
    """conftest refuses a collection with more than MAX_SLOW slow tests; the real collection is within it."""
    from tests.conftest import MAX_SLOW, slow_count_error

    class Item:
        def __init__(self, slow: bool) -> None:
            self.slow = slow

        def get_closest_marker(self, name: str) -> object | None:
            return object() if self.slow and name == "slow" else None

    assert slow_count_error([Item(True)] * MAX_SLOW + [Item(False)]) == ""  # type: ignore[list-item]
    assert "151 tests are marked slow, more than 150" in slow_count_error([Item(True)] * (MAX_SLOW + 1))  # type: ignore[list-item]
