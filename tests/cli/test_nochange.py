"""A build with nothing changed is answered before Luigi loads; any change runs the build.

Covers: pipeline.cli.nochange, pipeline.cli.build_commands
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import nochange

PROJECT = Path(__file__).resolve().parents[2]
NOTHING = "nothing changed since the last build"


def build(out: Path, source: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", "build", "--out", str(out), "--pubmed-xml", str(source),
         "--until", "sentences", *extra],
        cwd=PROJECT, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


@pytest.mark.slow
def test_no_change_is_answered_without_luigi_and_a_change_runs_the_build(tmp_path: Path) -> None:
    source = tmp_path / "demo.xml"
    shutil.copyfile(PROJECT / "data" / "demo" / "pubmed" / "demo.xml", source)
    out = tmp_path / "out"
    first = build(out, source)
    assert first.returncode == 0, first.stderr
    assert NOTHING not in first.stderr and nochange.record_path(out).is_file()
    again = build(out, source)
    assert again.returncode == 0, again.stderr
    assert NOTHING in again.stderr and "luigi" not in again.stderr
    assert again.stdout == first.stdout and again.stdout.startswith("manifest: ")
    # another option: the build runs (and records itself)
    other = build(out, source, "--shard-size", "500000")
    assert other.returncode == 0 and NOTHING not in other.stderr, other.stderr
    assert NOTHING in build(out, source, "--shard-size", "500000").stderr
    # a source touched: the build runs
    st = source.stat()
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    touched = build(out, source, "--shard-size", "500000")
    assert touched.returncode == 0 and NOTHING not in touched.stderr, touched.stderr
    # a stage's output removed: the check sends the build to Luigi (which decides, from the run's
    # manifest, what to run again)
    manifest = Path(touched.stdout.split("manifest: ", 1)[1].splitlines()[0])
    stage = Path(json.loads(manifest.read_text(encoding="utf-8"))["outputs"]["sentences"])
    shutil.rmtree(stage)
    rerun = build(out, source, "--shard-size", "500000")
    assert rerun.returncode == 0 and NOTHING not in rerun.stderr, rerun.stderr


def namespace(**kw: object) -> argparse.Namespace:
    base = {"pubmed_xml": [Path("x.xml")], "pubtator": [], "query": None, "query_file": None,
            "scheduler_host": None, "wait_for_workers": 0}
    return argparse.Namespace(**{**base, **kw})


@pytest.mark.parametrize(("kw", "expected"), [
    ({}, True), ({"query": "warfarin"}, False), ({"query_file": Path("q.txt")}, False),
    ({"scheduler_host": "localhost"}, False), ({"wait_for_workers": 1}, False),
    ({"pubmed_xml": [], "pubtator": [Path("p.txt")]}, True), ({"pubmed_xml": []}, False),
])
def test_applies_to_offline_builds_of_one_process(kw: dict[str, object], expected: bool) -> None:
    assert nochange.applies(namespace(**kw)) is expected


def test_a_missing_or_broken_record_means_build(tmp_path: Path) -> None:
    assert nochange.unchanged(tmp_path, {"out": str(tmp_path)}) is None
    nochange.record_path(tmp_path).parent.mkdir(parents=True)
    nochange.record_path(tmp_path).write_text("{not json", encoding="utf-8")
    assert nochange.unchanged(tmp_path, {"out": str(tmp_path)}) is None
    nochange.record_path(tmp_path).write_text('{"format": 1, "key": 3}', encoding="utf-8")
    assert nochange.unchanged(tmp_path, {"out": str(tmp_path)}) is None
