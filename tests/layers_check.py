"""The checker of the import layers of `pipeline/` (`pipeline/layers.py`'s ``LAYERS``), used by tests only.

``check`` reads every module with `ast` (no import is executed), so it sees every
``import`` statement: module-level or inside a function, absolute or relative, under ``if TYPE_CHECKING:``
too; ``importlib.import_module`` of a literal name counts. `tests/test_layers.py` runs it on `pipeline/`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.layers import LAYERS
from tests import source_trees


@dataclass(frozen=True, order=True)
class Import:
    """One import of a pipeline module by another.

    Attributes:
        path: The importing file.
        line: The 1-based line of the ``import`` statement in ``path``.
        source: The dotted name of the importing module (``pipeline.brat.conf``).
        target: The dotted name of the imported pipeline module (``pipeline.campaign.layout``).
    """

    path: Path
    line: int
    source: str
    target: str


def module_files(package_dir: Path) -> dict[str, Path]:
    """Map every module of a package to its file.

    Args:
        package_dir: The package's directory (`pipeline/`); its name is the package's name.

    Returns:
        Dotted module names (a package's ``__init__.py`` under the package's own name) to their files.
    """
    root = package_dir.name
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = [root, *path.relative_to(package_dir).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_package(name: str, modules: Mapping[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _import_module_target(node: ast.AST) -> str | None:
    """The name in ``importlib.import_module("a.literal.name")`` (or ``import_module(...)``), else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = node.args[0]
    if name == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def imports(package_dir: Path) -> list[Import]:
    """Every import, anywhere in a module, of one module of a package by another.

    ``from a.b import c`` imports the module ``a.b.c`` when there is one, else the module ``a.b``;
    relative imports are resolved against the importing module's package; ``importlib.import_module``
    counts when its argument is a string literal (a name computed at run time cannot be seen). Imports of
    modules outside the package are left out.

    Args:
        package_dir: The package's directory (`pipeline/`).

    Returns:
        The imports, sorted by file and line.

    Raises:
        SyntaxError: If a module does not parse.
    """
    modules = module_files(package_dir)
    found: set[Import] = set()
    for source, path in modules.items():
        tree = source_trees.parse(path)
        package = source if _is_package(source, modules) else source.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            dynamic = _import_module_target(node)
            if dynamic is not None:
                targets = [dynamic]
            elif not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                # `import a.b.c` names a.b.c; keep the longest prefix that is a module of the package
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != source:
                    found.add(Import(path, getattr(node, "lineno", 0), source, target))
    return sorted(found)


def unit_of(module: str) -> str:
    """The unit of a module: its subpackage, or itself when it is a top-level module.

    Args:
        module: A dotted module name (``pipeline.brat.conf``, ``pipeline.store``, ``pipeline``).

    Returns:
        The unit's name as ``LAYERS`` spells it (``brat``, ``store``, ``__init__``).
    """
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The cycles of a directed graph: its strongly connected components of more than one node.

    Args:
        edges: The graph's edges, (from, to); self-loops are ignored.

    Returns:
        Each component's nodes, sorted; the components sorted.
    """
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set())
        graph.setdefault(b, set())
        if a != b:
            graph[a].add(b)
    # Tarjan's algorithm, iterative so that a deep chain of imports cannot hit the recursion limit
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def check(package_dir: Path, layers: Sequence[str] = LAYERS) -> list[str]:
    """Check a package's imports against an ordered stack of units.

    Args:
        package_dir: The package's directory (`pipeline/`).
        layers: The package's units, from the bottom of the stack to the top.

    Returns:
        One message per violation, empty when there is none: a module whose unit is not in ``layers``;
        an import of a unit above the importer's (``file:line: ...``); a cycle of units; a cycle of
        modules (each import of the cycle named by ``file:line``).

    Raises:
        SyntaxError: If a module does not parse.
    """
    rank = {unit: i for i, unit in enumerate(layers)}
    found = imports(package_dir)
    problems: list[str] = []
    for module, path in module_files(package_dir).items():
        if unit_of(module) not in rank:
            problems.append(f"{path}: module {module} is in no layer (unit {unit_of(module)!r})")
    for imp in found:
        low, high = unit_of(imp.source), unit_of(imp.target)
        if low in rank and high in rank and rank[high] > rank[low]:
            problems.append(f"{imp.path}:{imp.line}: upward import: {imp.source} ({low}) imports "
                            f"{imp.target} ({high}), a layer above")
    unit_edges = {(unit_of(i.source), unit_of(i.target)) for i in found}
    for component in cycles(unit_edges):
        first: dict[tuple[str, str], Import] = {}
        for i in found:
            pair = (unit_of(i.source), unit_of(i.target))
            if pair[0] != pair[1] and pair[0] in component and pair[1] in component:
                first.setdefault(pair, i)
        where = [f"{a} -> {b} ({i.path}:{i.line})" for (a, b), i in sorted(first.items())]
        problems.append(f"import cycle among units {', '.join(component)}: {'; '.join(where)}")
    for component in cycles((i.source, i.target) for i in found):
        where = [f"{i.path}:{i.line} ({i.source} -> {i.target})" for i in found
                 if i.source in component and i.target in component]
        problems.append(f"import cycle among modules {', '.join(component)}: {'; '.join(where)}")
    return problems
