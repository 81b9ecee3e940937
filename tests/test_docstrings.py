"""The docstring convention of `pipeline/`, checked from the source (issue 25).

Google style, rendered by mkdocstrings on the API reference (`docs/reference/api/`):

- every public function and method (no leading `_`, in a public module and class) has a docstring
  whose `Args:` section names each of its parameters, and a `Returns:` or `Yields:` section unless
  it returns `None`;
- every public dataclass, NamedTuple or TypedDict lists its fields under `Attributes:`;
- no Sphinx role (`:func:`, `:class:` ...) is left: cross-references are autorefs links with a full
  dotted path, which `mkdocs build --strict` resolves;
- every module of `pipeline/` is rendered on one page of the API reference.

ruff's pydocstyle rules (`convention = "google"`) check the form; this checks the content ruff
cannot (a function without an `Args:` section passes ruff's D417).

Covers: none (it reads the source of every module as text)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import source_trees

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "pipeline"
API_PAGES = ROOT / "docs" / "reference" / "api"

SPHINX_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|term|ref):`")
SECTION = re.compile(r"^(\s*)(Args|Arguments|Returns|Yields|Raises|Attributes|Note|Notes|Example|Examples):\s*$")

# Methods that implement a framework's protocol (Luigi's Task, logging's Handler, ...): the base
# class documents what they take and return, so they need a summary only.
PROTOCOL_METHODS = frozenset({"requires", "output", "run", "complete", "emit", "program_args"})
RECORD_BASES = frozenset({"NamedTuple", "TypedDict"})


def _modules() -> list[Path]:
    return sorted(PIPELINE.rglob("*.py"))


def _sections(doc: str) -> dict[str, list[str]]:
    """Split a Google docstring into its sections: name -> the section's item lines."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    indent = 0
    for line in doc.splitlines():
        match = SECTION.match(line)
        if match:
            current, indent = match.group(2), len(match.group(1))
            out[current] = []
            continue
        if current is None:
            continue
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            current = None
            continue
        out[current].append(line)
    return out


def _documented_names(lines: list[str]) -> set[str]:
    """The item names of a section: `name: text` or `name (type): text` at the items' indent."""
    items = [ln for ln in lines if ln.strip()]
    if not items:
        return set()
    base = min(len(ln) - len(ln.lstrip()) for ln in items)
    names = set()
    for ln in items:
        if len(ln) - len(ln.lstrip()) != base:
            continue
        match = re.match(r"\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:", ln)
        if match:
            names.add(match.group(1).lstrip("*"))
    return names


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    names = set()
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _is_generator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and sub is not node:
            continue
        if isinstance(sub, (ast.Yield, ast.YieldFrom)):
            return True
    return False


def _returns_value(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    ann = node.returns
    if ann is None:
        return False
    text = ast.unparse(ann)
    return text not in {"None", "NoReturn", "Never", "typing.NoReturn"}


def _function_problems(node: ast.FunctionDef | ast.AsyncFunctionDef, where: str, method: bool) -> Iterator[str]:
    doc = ast.get_docstring(node)
    if doc is None:
        yield f"{where}: no docstring"
        return
    decorators = _decorators(node)
    if "overload" in decorators:
        return
    if method and node.name in PROTOCOL_METHODS:
        return
    if decorators & {"property", "cached_property", "setter"}:
        return
    sections = _sections(doc)
    args = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
    if node.args.vararg:
        args.append(node.args.vararg.arg)
    if node.args.kwarg:
        args.append(node.args.kwarg.arg)
    if method and args and args[0] in {"self", "cls"} and "staticmethod" not in decorators:
        args = args[1:]
    if args:
        documented = _documented_names(sections.get("Args", sections.get("Arguments", [])))
        missing = [a for a in args if a not in documented]
        if missing:
            yield f"{where}: Args does not name {', '.join(missing)}"
    if _returns_value(node) and node.name != "__init__":
        if "Returns" not in sections and "Yields" not in sections:
            kind = "Yields" if _is_generator(node) else "Returns"
            yield f"{where}: no {kind} section"


def _record_fields(node: ast.ClassDef) -> list[str] | None:
    """The public fields of a dataclass, NamedTuple or TypedDict; None for other classes."""
    bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
    if "dataclass" not in _decorators(node) and not bases & RECORD_BASES:
        return None
    fields = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if "ClassVar" in ast.unparse(stmt.annotation) or stmt.target.id.startswith("_"):
                continue
            fields.append(stmt.target.id)
    return fields


def _module_problems(path: Path, root: Path = ROOT) -> Iterator[str]:
    tree = source_trees.parse(path)
    rel = path.relative_to(root).as_posix()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield from _function_problems(node, f"{rel}:{node.lineno} {node.name}", method=False)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            where = f"{rel}:{node.lineno} {node.name}"
            doc = ast.get_docstring(node)
            if doc is None:
                yield f"{where}: no docstring"
                continue
            fields = _record_fields(node)
            if fields:
                documented = _documented_names(_sections(doc).get("Attributes", []))
                missing = [f for f in fields if f not in documented]
                if missing:
                    yield f"{where}: Attributes does not name {', '.join(missing)}"
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and not sub.name.startswith("_"):
                    yield from _function_problems(sub, f"{rel}:{sub.lineno} {node.name}.{sub.name}", method=True)


def test_public_functions_document_inputs_and_outputs() -> None:
    problems = [p for path in _modules() for p in _module_problems(path)]
    assert not problems, f"{len(problems)} docstring problems:\n" + "\n".join(problems)


def test_no_sphinx_roles_left() -> None:
    found = []
    for path in _modules():
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SPHINX_ROLE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not found, "Sphinx roles (use autorefs links with a full dotted path):\n" + "\n".join(found)


def test_every_module_is_on_an_api_page() -> None:
    rendered = set()
    for page in API_PAGES.glob("*.md"):
        rendered |= {ln[4:].strip() for ln in page.read_text(encoding="utf-8").splitlines() if ln.startswith("::: ")}
    modules = set()
    for path in _modules():
        dotted = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
        dotted = dotted.removesuffix(".__init__")
        if dotted not in {"pipeline", "pipeline.__main__"}:
            modules.add(dotted)
    assert not modules - rendered, f"modules on no page of {API_PAGES}: {sorted(modules - rendered)}"
    assert not rendered - modules, f"API pages render modules that do not exist: {sorted(rendered - modules)}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('def f(a: int) -> int:\n    """Sum."""\n    return a\n', ["Args does not name a", "no Returns section"]),
        (
            'def f(a: int, *rest: int) -> int:\n    """Sum.\n\n    Args:\n        a: One.\n'
            '        *rest: More.\n\n    Returns:\n        The sum.\n    """\n    return a\n',
            [],
        ),
        ('def f(a: int) -> None:\n    """Do.\n\n    Args:\n        a (int): One.\n    """\n', []),
        (
            'def f() -> Iterator[int]:\n    """Count."""\n    yield 1\n',
            ["no Yields section"],
        ),
        (
            "@dataclass(frozen=True)\nclass Span:\n"
            '    """A span.\n\n    Attributes:\n        start: Half-open start.\n    """\n\n'
            "    start: int\n    end: int\n",
            ["Attributes does not name end"],
        ),
        (
            'class T(luigi.Task):\n    """A task."""\n\n    def run(self) -> None:\n        """Run it."""\n\n'
            '    def helper(self, x: int) -> int:\n        """Help."""\n        return x\n',
            ["Args does not name x", "no Returns section"],
        ),
    ],
)
def test_checker_on_synthetic_modules(tmp_path: Path, source: str, expected: list[str]) -> None:
    module = tmp_path / "m.py"
    module.write_text(source, encoding="utf-8")
    problems = list(_module_problems(module, root=tmp_path))
    assert [p.split(": ", 1)[1] for p in problems] == expected
