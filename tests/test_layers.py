"""The import layers of `pipeline/` (`pipeline/layers.py`): no upward import, no cycle, every module placed.

The checker (`tests/layers_check.py`) reads the modules with `ast`, so function-local imports, imports
under ``if TYPE_CHECKING:`` and ``importlib.import_module`` of a literal name count. Its own tests run it
on tiny synthetic packages, and on a copy of `pipeline/` into which each of the violations issue 25 found
(and a few more) is put back.

Covers: pipeline.cli.import_commands, pipeline.layers
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from pipeline import layers
from tests import layers_check

PIPELINE = Path(layers.__file__).resolve().parent


def test_pipeline_imports_follow_the_stack() -> None:
    problems = layers_check.check(PIPELINE)
    assert problems == [], "\n".join(problems)


def test_every_layer_names_an_existing_unit() -> None:
    units = {layers_check.unit_of(module) for module in layers_check.module_files(PIPELINE)}
    assert sorted(set(layers.LAYERS) - units) == []
    assert len(set(layers.LAYERS)) == len(layers.LAYERS)


def make_package(root: Path, files: dict[str, str]) -> Path:
    """A package ``root/pkg`` with the given files (paths relative to the package, contents dedented)."""
    pkg = root / "pkg"
    for rel, text in {"__init__.py": "", **files}.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    for directory in [p for p in pkg.rglob("*") if p.is_dir()]:
        if not (directory / "__init__.py").exists():
            (directory / "__init__.py").write_text("", encoding="utf-8")
    return pkg


STACK = ("__init__", "base", "low", "high")


def test_downward_imports_pass(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {
        "base.py": "import os\n",
        "low/a.py": "from pkg import base\nfrom pkg.low import b\n",
        "low/b.py": "from . import c\nimport pkg.base\n",
        "low/c.py": "from ..base import os\n",
        "high/x.py": "from pkg.low.a import base\nfrom pkg.low import a, b\n\ndef f() -> None:\n    import pkg.low.c\n",
    })
    assert layers_check.check(pkg, STACK) == []


UPWARD = [
    ("module level", "from pkg.high.x import VALUE\n", 1),
    ("plain import", "import pkg.high.x\n", 1),
    ("package attribute", "from pkg.high import x\n", 1),
    ("relative", "from ..high import x\n", 1),
    ("relative name", "from ..high.x import VALUE\n", 1),
    ("function-local", "def f() -> None:\n    from pkg.high.x import VALUE\n", 2),
    ("TYPE_CHECKING", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import x\n", 3),
    ("method-local", "class C:\n    def m(self) -> None:\n        import pkg.high.x as hx\n", 3),
    ("import_module literal", "import importlib\n\nMOD = importlib.import_module('pkg.high.x')\n", 3),
]


@pytest.mark.parametrize(("kind", "source", "line"), UPWARD, ids=[u[0] for u in UPWARD])
def test_an_upward_import_is_named_by_file_and_line(tmp_path: Path, kind: str, source: str, line: int) -> None:
    pkg = make_package(tmp_path, {"high/x.py": "VALUE = 1\n", "low/a.py": source})
    problems = layers_check.check(pkg, STACK)
    upward = [p for p in problems if "upward import" in p]
    assert upward == [f"{pkg / 'low' / 'a.py'}:{line}: upward import: pkg.low.a (low) imports pkg.high.x (high), "
                      "a layer above"], problems


def test_a_module_cycle_inside_a_unit_is_found_not_only_a_pair(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {
        "low/a.py": "from pkg.low import b\n",
        "low/b.py": "def f() -> None:\n    from pkg.low import c\n",
        "low/c.py": "from . import a\n",
        "low/d.py": "from pkg.low import a\n",  # into the cycle, not part of it
    })
    problems = layers_check.check(pkg, STACK)
    assert len(problems) == 1 and problems[0].startswith(
        "import cycle among modules pkg.low.a, pkg.low.b, pkg.low.c: "), problems
    assert f"{pkg / 'low' / 'b.py'}:2 (pkg.low.b -> pkg.low.c)" in problems[0]
    assert "pkg.low.d" not in problems[0]


def test_a_cycle_of_units_is_found(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {
        "low/a.py": "from pkg.high import x\n",
        "high/x.py": "from pkg.low import b\n",
        "low/b.py": "",
    })
    problems = layers_check.check(pkg, STACK)
    assert [p for p in problems if p.startswith("import cycle among units high, low: ")] == [
        f"import cycle among units high, low: high -> low ({pkg / 'high' / 'x.py'}:1); "
        f"low -> high ({pkg / 'low' / 'a.py'}:1)"], problems
    assert not any(p.startswith("import cycle among modules") for p in problems)  # the modules form no cycle


def test_a_module_in_no_layer_is_named(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {"low/a.py": "", "extra.py": "", "other/y.py": ""})
    assert layers_check.check(pkg, STACK) == [
        f"{pkg / 'extra.py'}: module pkg.extra is in no layer (unit 'extra')",
        f"{pkg / 'other'}/__init__.py: module pkg.other is in no layer (unit 'other')",
        f"{pkg / 'other' / 'y.py'}: module pkg.other.y is in no layer (unit 'other')",
    ]


@pytest.mark.parametrize(("edges", "expected"), [
    ([], []),
    ([("a", "a")], []),
    ([("a", "b"), ("b", "c")], []),
    ([("a", "b"), ("b", "a")], [["a", "b"]]),
    ([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d")], [["a", "b", "c"], ["d", "e"]]),
])
def test_cycles_are_the_strongly_connected_components(edges: list[tuple[str, str]],
                                                      expected: list[list[str]]) -> None:
    assert layers_check.cycles(edges) == expected


# The violations of issue 25 (and the layers' other edges), put back into a copy of pipeline/: each must be
# reported, naming the file and the line of the import.
VIOLATIONS = [
    # brat/conf.py imported campaign/layout.py
    ("brat/conf.py", "from pipeline.campaign.layout import DISCARD_TYPE", "upward import"),
    # brat/agreement.py and brat/stats.py imported corpus/ (then provenance.py)
    ("brat/agreement.py", "from pipeline.corpus.brat_export import SETTINGS_FILE", "upward import"),
    ("brat/stats.py", "from pipeline.corpus import sample", "upward import"),
    # corpus/ imported campaign/phase1.py (batches.py, now in campaign/)
    ("corpus/brat_export.py", "from pipeline.campaign.phase1 import write_phase1", "upward import"),
    # the parse gate's filter, imported the other way round
    ("corpus/select.py", "from pipeline.nlp.parse_gate import ParseGate", "upward import"),
    # campaign/team.py and campaign/guidelines.py imported serve/
    ("campaign/team.py", "from pipeline.serve import app", "upward import"),
    ("campaign/guidelines.py", "import pipeline.serve.backup", "upward import"),
    ("serve/app.py", "from pipeline.tasks import BuildCorpus", "upward import"),
    ("tasks/build.py", "from pipeline.cli import console_main", "upward import"),
    ("store.py", "from pipeline.memo import Memo", "upward import"),
    ("documents.py", "from .schema import Schema", "upward import"),
    # nlp/lexicon.py and nlp/lexicon_lookup.py imported each other
    ("nlp/lexicon.py", "from pipeline.nlp.lexicon_lookup import write_lookup", "import cycle among modules"),
    # cli/campaign_commands.py and cli/team_commands.py, cli/users_commands.py imported each other
    ("cli/campaign_commands.py", "from pipeline.cli.team_commands import run_import", "import cycle among modules"),
    ("cli/campaign_commands.py", "from pipeline.cli import users_commands", "import cycle among modules"),
]


@pytest.fixture(scope="module")
def pipeline_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("layers") / "pipeline"
    shutil.copytree(PIPELINE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


# each violation is put back at module level, in a function, or under TYPE_CHECKING, in turn
PLACED = [(*v, ("module", "function", "type_checking")[i % 3]) for i, v in enumerate(VIOLATIONS)]


@pytest.mark.parametrize(("rel", "statement", "kind", "where"), PLACED,
                         ids=[f"{v[0]}:{v[1]}:{v[3]}" for v in PLACED])
@pytest.mark.slow  # checks a copy of pipeline/ once per violation (the synthetic cases stay fast)
def test_the_violations_found_in_issue_25_are_caught(tmp_path: Path, pipeline_copy: Path, rel: str,
                                                     statement: str, kind: str, where: str) -> None:
    copy = tmp_path / "pipeline"
    shutil.copytree(pipeline_copy, copy)
    path = copy / rel
    original = path.read_text(encoding="utf-8")
    block = {
        "module": statement,
        "function": f"def _injected() -> None:\n    {statement}",
        "type_checking": f"import typing\nif typing.TYPE_CHECKING:\n    {statement}",
    }[where]
    path.write_text(original.rstrip("\n") + "\n\n\n" + block + "\n", encoding="utf-8")
    line = len(original.rstrip("\n").split("\n")) + 3 + block.count("\n")
    problems = layers_check.check(copy)
    assert problems, f"{rel}: `{statement}` ({where}) not reported"
    assert any(p.startswith(kind) or p.startswith(f"{path}:{line}: {kind}") for p in problems), problems
    assert any(f"{path}:{line}" in p for p in problems), problems


def test_a_new_module_outside_the_stack_is_caught(tmp_path: Path, pipeline_copy: Path) -> None:
    copy = tmp_path / "pipeline"
    shutil.copytree(pipeline_copy, copy)
    (copy / "helpers.py").write_text('"""Helpers."""\n', encoding="utf-8")
    (copy / "reports").mkdir()
    (copy / "reports" / "__init__.py").write_text("", encoding="utf-8")
    assert layers_check.check(copy) == [
        f"{copy / 'helpers.py'}: module pipeline.helpers is in no layer (unit 'helpers')",
        f"{copy / 'reports' / '__init__.py'}: module pipeline.reports is in no layer (unit 'reports')",
    ]


def test_the_architecture_page_draws_the_same_stack() -> None:
    page = (PIPELINE.parent / "docs" / "explanation" / "architecture.md").read_text(encoding="utf-8")
    block = page.split("The stack, top first:", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    drawn = [line.split()[0] for line in block.splitlines() if line.strip() and not line.strip().startswith("-")]
    assert drawn == list(reversed(layers.LAYERS))
    # the table of what each layer owns: one row per unit, `name/` or `name.py` in its second column
    table = [cell.strip().strip("`").rstrip("/").removesuffix(".py") for line in page.splitlines()
             if line.startswith("| ") for cell in line.split("|")[2:3] if cell.strip().startswith("`")]
    units = [u for u in table if u in layers.LAYERS]
    assert units == list(reversed(layers.LAYERS))
