"""Luigi in one package: `pipeline/tasks/` is the only place that imports Luigi, through public names only.

Read with `ast` (nothing is executed), every module of `pipeline/`: an ``import luigi`` (or any
``luigi.*``) outside `pipeline/tasks/` is reported, and so is, inside it, a private Luigi name: a module
or a name imported with a leading underscore, an attribute chain from a Luigi import with one
(``luigi.Task._event_callbacks``), or ``self._x`` in a subclass of a Luigi class whose own code sets or
reads ``self._x`` (``worker.Worker``'s ``self._id``).  Tests of the checker itself run it on small
sources with each of the uses the package had before (issue 38).

Covers: pipeline.cli, pipeline.cli.build_commands, pipeline.cli.import_commands, pipeline.cli.worker_commands,
pipeline.corpus.stages, pipeline.layers, pipeline.tasks.build
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from pipeline import layers
from tests import source_trees

PIPELINE = Path(layers.__file__).resolve().parent
TASKS = PIPELINE / "tasks"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def luigi_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """The imports of Luigi in a module: (line, module name)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "luigi"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "luigi":
            found.append((node.lineno, str(node.module)))
    return found


def _luigi_self_attributes(cls: type) -> set[str]:
    """The private ``self._x`` names the code of a Luigi class and its Luigi bases uses."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] != "luigi":
            continue
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        names |= {m for m in re.findall(r"self\.(_\w+)", source) if _private(m)}
    return names


def private_luigi_names(source: str) -> list[tuple[int, str]]:
    """The private Luigi names a module uses: (line, dotted name)."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name -> luigi dotted name
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "luigi":
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else "luigi"
                    found += [(node.lineno, alias.name) for part in alias.name.split(".") if _private(part)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "luigi":
            module = str(node.module)
            for alias in node.names:
                dotted = f"{module}.{alias.name}"
                bound[alias.asname or alias.name] = dotted
                if any(_private(part) for part in dotted.split(".")):
                    found.append((node.lineno, dotted))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain: list[str] = []
            inner: ast.AST = node
            while isinstance(inner, ast.Attribute):
                chain.insert(0, inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in bound and any(_private(part) for part in chain):
                found.append((node.lineno, ".".join([bound[inner.id], *chain])))
        elif isinstance(node, ast.ClassDef):
            bases = []
            for base in node.bases:
                dotted = ast.unparse(base)
                head, _, rest = dotted.partition(".")
                if head in bound:
                    module, _, name = (bound[head] + ("." + rest if rest else "")).rpartition(".")
                    try:
                        bases.append(getattr(importlib.import_module(module), name))
                    except (ImportError, AttributeError):
                        continue
            used = {n for b in bases if isinstance(b, type) for n in _luigi_self_attributes(b)}
            for sub in ast.walk(node):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self"
                        and sub.attr in used):
                    found.append((sub.lineno, f"{node.name}: self.{sub.attr}"))
    return sorted(set(found))


def test_no_luigi_import_outside_the_tasks_package() -> None:
    outside = [
        f"{path.relative_to(PIPELINE.parent)}:{line}: import {name}"
        for path in sorted(PIPELINE.rglob("*.py")) if TASKS not in path.parents
        for line, name in luigi_imports(source_trees.parse(path))
    ]
    assert outside == []


def test_the_tasks_package_uses_public_luigi_names_only() -> None:
    private = [
        f"{path.relative_to(PIPELINE.parent)}:{line}: {name}"
        for path in sorted(TASKS.rglob("*.py"))
        for line, name in private_luigi_names(path.read_text(encoding="utf-8"))
    ]
    assert private == []


def test_the_checker_finds_the_private_uses_the_cli_had() -> None:
    source = (
        "import luigi\n"
        "from luigi import interface, worker\n"
        "class Factory(interface._WorkerSchedulerFactory):\n"
        "    pass\n"
        "class Waiting(worker.Worker):\n"
        "    def run(self):\n"
        "        return self._id\n"
        "def forget(callback):\n"
        "    luigi.Task._event_callbacks[luigi.Task][luigi.Event.FAILURE].discard(callback)\n"
        "from luigi.interface import _WorkerSchedulerFactory as F\n"
    )
    names = [name for _, name in private_luigi_names(source)]
    assert "luigi.interface._WorkerSchedulerFactory" in names
    assert "Waiting: self._id" in names
    assert "luigi.Task._event_callbacks" in names
    assert len([n for n in names if n.endswith("_WorkerSchedulerFactory")]) == 2
    public = ("import luigi\nclass T(luigi.Task):\n    def run(self):\n        self.mine = 1\n"
              "        luigi.build([self])\n")
    assert private_luigi_names(public) == []


def test_the_checker_finds_luigi_imports_in_any_form() -> None:
    tree = ast.parse("import luigi.rpc\ndef f():\n    from luigi import worker\nimport json\nfrom .luigi import x\n")
    assert luigi_imports(tree) == [(1, "luigi.rpc"), (3, "luigi")]


def test_the_stages_are_written_once() -> None:
    """``STAGES`` (no Luigi) names the build's stage tasks, in order, and is what ``build --until`` takes."""
    from pipeline import cli
    from pipeline.corpus.stages import STAGES
    from pipeline.tasks.build import STAGE_TASKS

    assert tuple(STAGE_TASKS) == STAGES
    stage_dirs = [STAGE_TASKS[stage].stage for stage in STAGES]  # type: ignore[attr-defined]
    assert stage_dirs == sorted(stage_dirs)  # work/NN_<stage>: the same order
    parser = cli.make_parser()
    for stage in STAGES:
        assert parser.parse_args(["build", "--out", "x", "--until", stage]).until == stage
    with pytest.raises(SystemExit):
        parser.parse_args(["build", "--out", "x", "--until", "published"])
