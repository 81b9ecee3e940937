"""pipeline/yamlfile.py: size, depth and alias limits checked before anything is built (issue 23, defect 10).

Covers: pipeline.brat.export, pipeline.campaign.decisions, pipeline.cli.corpus_commands, pipeline.nlp.ontology,
pipeline.schema, pipeline.yamlfile
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pipeline import yamlfile
from pipeline.campaign.decisions import DecisionsError, load_decisions
from pipeline.schema import load_schema

PROJECT = Path(__file__).resolve().parent.parent


def bomb(key: str, levels: int = 9) -> str:
    """A "billion laughs": 9 anchors of 9 aliases each, the last one the value of ``key``."""
    lines = ['a0: &a0 "lol lol lol lol lol lol lol lol lol"']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"retype:\n  - {{term: *a{levels}, to: Chemical}}" if key == "term"
                 else f"retype:\n  - {{term: x, to: Chemical, {key}: *a{levels}}}")
    return "\n".join(lines) + "\n"


def test_small_documents_load_as_before() -> None:
    assert yamlfile.safe_load("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.parametrize(
    ("text", "message"),
    [("x: " + "[" * 100 + "]" * 100, "nested more than 64"),
     ("a: &a [1]\n" + "".join(f"b{i}: *a\n" for i in range(1001)), "more than 1000 aliases"),
     (bomb("term"), "expands to more than 1000000 nodes")],
)
def test_limits(text: str, message: str) -> None:
    with pytest.raises(yamlfile.YamlLimitError, match=message):
        yamlfile.safe_load(text)


def test_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlfile, "MAX_BYTES", 10)
    with pytest.raises(yamlfile.YamlLimitError, match="more than the 10"):
        yamlfile.safe_load("a: 12345678901\n")


@pytest.mark.parametrize("key", ["term", "from", "to", "why", "pattern"])
def test_a_decisions_alias_bomb_is_refused_quickly_and_small(tmp_path: Path, key: str) -> None:
    """In a child process, so its peak memory is its own: refused in well under a second and 1 GiB."""
    path = tmp_path / "decisions.yaml"
    text = bomb(key)
    if key == "pattern":
        text = text.replace("{term: x, to: Chemical, pattern:", "{to: Chemical, pattern:")
    path.write_text(text, encoding="utf-8")
    code = (
        "import sys\n"
        "from pipeline.cli import main\n"
        f"code = main(['decisions', 'apply', {str(tmp_path)!r}, {str(path)!r}])\n"
        # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's peak across exec on Linux)
        "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
        "print(code, peak)\n"
    )
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin"})
    elapsed = time.monotonic() - started
    status, peak_kib = proc.stdout.split()
    assert status == "2", proc.stderr
    assert f"pgx-corpus decisions apply: {path}: cannot read decisions: " in proc.stderr
    assert "expands to more than" in proc.stderr and "Traceback" not in proc.stderr
    assert int(peak_kib) < 1024 * 1024 // 4, f"peak {int(peak_kib) // 1024} MiB"
    assert elapsed < 30


@pytest.mark.parametrize(
    ("entry", "message"),
    [("{term: [a, b], to: Chemical}", "term must be a string, got list"),
     ("{term: x, to: [Chemical]}", "to must be a type name"),
     ("{term: x, to: Chemical, from: {a: b}}", "from must be a type name"),
     ("{term: x, to: Chemical, why: [1]}", "why must be a string, got list")],
)
def test_wrong_types_give_a_clear_error(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(f"retype:\n  - {entry}\n", encoding="utf-8")
    with pytest.raises(DecisionsError, match=rf"^{path}: retype entry 1: {message}"):
        load_decisions(path, load_schema())


def test_unhashable_key_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("retype:\n  - {? [a]: b, to: Chemical}\nrelations:\n  - {from: x, ? {k: v}: y}\n", encoding="utf-8")
    with pytest.raises(DecisionsError, match=rf"^{path}: cannot read decisions"):
        load_decisions(path, load_schema())
    path.write_text("1: x\nretype: []\n", encoding="utf-8")
    with pytest.raises(DecisionsError, match=r"unknown key\(s\) \[1\]"):
        load_decisions(path, load_schema())


def test_yaml_errors_are_yaml_errors() -> None:
    assert issubclass(yamlfile.YamlLimitError, yaml.YAMLError)


@pytest.mark.parametrize(
    ("loader", "text"),
    [("schema", "entities: [Chemical]\nrelations: {a: [1, [2]]}\nmapping: {x: {y: [Chemical]}}\n"),
     ("schema", "entities: [Chemical]\nrelation_attributes: {x: [1]}\n"),
     ("export", "split_seed: [1]\n"),
     ("export", "relation_map: [a, b]\n"),
     ("ontology", "classes:\n  - {name: [x]}\n")],
)
def test_wrong_types_in_config_files_name_the_file(tmp_path: Path, loader: str, text: str) -> None:
    """No TypeError/AttributeError traceback from inside a loader: its own error, naming the file."""
    from pipeline.brat.export import ExportConfigError, load_export_config
    from pipeline.nlp.ontology import OntologyError, load_ontology
    from pipeline.schema import SchemaError

    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    load, error = {"schema": (load_schema, SchemaError), "export": (load_export_config, ExportConfigError),
                   "ontology": (load_ontology, OntologyError)}[loader]
    with pytest.raises(error, match=rf"^{path}"):
        load(path)
