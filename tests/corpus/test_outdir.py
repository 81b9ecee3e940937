"""One writer per --out, stale temporaries, atomic publication of OUT/brat (pipeline/corpus/outdir.py).

Covers: pipeline.corpus.outdir
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.corpus import outdir

HOLDER = """
import sys, time
from pathlib import Path
from pipeline.corpus import outdir
lock = outdir.acquire_lock(Path(sys.argv[1]))
print("locked", flush=True)
time.sleep(60)
"""


def _holder(out: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_second_writer_is_refused_naming_host_and_pid(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(outdir.OutputLocked) as err:
            outdir.acquire_lock(tmp_path)
        message = str(err.value)
        assert f"pid {proc.pid} on host {socket.gethostname()}" in message
        assert str(tmp_path) in message and "another build" in message
    finally:
        proc.kill()
        proc.wait()


def test_lock_of_a_killed_build_is_taken_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (tmp_path / outdir.LOCK_NAME).exists()  # left behind by kill -9
    with outdir.acquire_lock(tmp_path) as lock:
        assert lock.info.pid == os.getpid()
        assert json.loads((tmp_path / outdir.LOCK_NAME).read_text())["pid"] == os.getpid()
    assert f"stale lock of a dead build (pid {proc.pid}" in caplog.text
    assert not (tmp_path / outdir.LOCK_NAME).exists()  # released: removed


def test_release_lets_the_next_build_in(tmp_path: Path) -> None:
    first = outdir.acquire_lock(tmp_path)
    first.release()
    with outdir.acquire_lock(tmp_path):
        pass


def test_lock_from_another_host_is_not_taken_over(tmp_path: Path) -> None:
    (tmp_path / outdir.LOCK_NAME).write_text(json.dumps({"host": "elsewhere", "pid": 42, "started": "x"}))
    with pytest.raises(outdir.OutputLocked, match=r"pid 42 on host elsewhere.*remove .*\.build\.lock"):
        outdir.acquire_lock(tmp_path)


def test_stale_temporaries_are_removed(tmp_path: Path) -> None:
    keep = [tmp_path / "work" / "04_extended" / "abc" / "shard-000000.jsonl.gz", tmp_path / "brat" / "a.txt",
            tmp_path / "cache" / "pubtator" / "biocjson_1_2_2_x.json.gz"]
    junk = [tmp_path / "work" / "04_extended" / "abc" / "shard-000001.jsonl.gz-luigi-tmp-0123456789",
            tmp_path / "cache" / "efetch" / ".batch.xml.gz.tmp4242",
            tmp_path / "cache" / "pubtator" / ".tmp-k2j3h4.gz",
            tmp_path / "work" / "08_brat" / "abc" / "params.json.tmp99"]
    for path in keep + junk:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    tmp_dir = tmp_path / "work" / "01_documents" / "abc-luigi-tmp-0000000001"
    tmp_dir.mkdir(parents=True)
    (tmp_dir / "shard-000000.jsonl.gz").write_text("partial")
    staging = tmp_path / ".brat.tmp-777"
    staging.mkdir()
    removed = outdir.clean_stale_temporaries(tmp_path)
    assert sorted(removed) == sorted([*junk, tmp_dir, staging])
    assert all(p.exists() for p in keep) and not any(p.exists() for p in junk + [tmp_dir, staging])


def _collection(path: Path, text: str) -> Path:
    path.mkdir(parents=True)
    (path / "s1.txt").write_text(text)
    (path / "s1.ann").write_text("")
    return path


def test_publish_swaps_the_whole_collection(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = _collection(tmp_path / "run1", "first")
    dest = outdir.publish_collection(first, out / "brat", "run1")
    assert (dest / "s1.txt").read_text() == "first" and (dest / ".run").read_text() == "run1\n"
    second = _collection(tmp_path / "run2", "second")
    (second / "s2.txt").write_text("new")
    outdir.publish_collection(second, out / "brat", "run2")
    assert sorted(p.name for p in (out / "brat").iterdir()) == [".run", "s1.ann", "s1.txt", "s2.txt"]
    assert (out / "brat" / "s1.txt").read_text() == "second"
    assert sorted(p.name for p in out.iterdir()) == ["brat"]  # no staging link left
    assert (out / "brat").is_symlink() and (out / "brat").resolve() == second.resolve()
    assert not Path(os.readlink(out / "brat")).is_absolute()  # OUT can move
    assert (first / "s1.txt").read_text() == "first"  # the earlier collection is untouched


def test_publish_replaces_a_directory_published_by_an_older_version(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _collection(out / "brat", "copied")
    new = _collection(tmp_path / "run2", "linked")
    outdir.publish_collection(new, out / "brat", "run2")
    assert (out / "brat").is_symlink() and (out / "brat" / "s1.txt").read_text() == "linked"
    assert sorted(p.name for p in out.iterdir()) == ["brat"]


def test_a_staged_link_of_a_killed_publication_is_removed_not_its_target(tmp_path: Path) -> None:
    collection = _collection(tmp_path / "work" / "collection", "kept")
    (tmp_path / ".brat.tmp-77").symlink_to(collection, target_is_directory=True)
    outdir.clean_stale_temporaries(tmp_path)
    assert not (tmp_path / ".brat.tmp-77").is_symlink()
    assert (collection / "s1.txt").read_text() == "kept"


def test_interrupted_two_rename_publication_is_completed(tmp_path: Path) -> None:
    # killed after "brat -> .brat.old-PID" and before ".brat.tmp-PID -> brat"
    _collection(tmp_path / ".brat.old-55", "previous")
    _collection(tmp_path / ".brat.tmp-55", "half")
    outdir.clean_stale_temporaries(tmp_path)
    assert (tmp_path / "brat" / "s1.txt").read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["brat"]


def test_failure_note_says_where_the_partial_output_is(tmp_path: Path) -> None:
    assert outdir.failure_note(tmp_path, tmp_path / "work" / "04") == (
        f"no collection was published to {tmp_path / 'brat'}; this build's partial output is under "
        f"{tmp_path / 'work' / '04'}")
    (tmp_path / "brat").mkdir()
    (tmp_path / "brat" / ".run").write_text("abc123\n")
    assert outdir.failure_note(tmp_path, None) == f"{tmp_path / 'brat'} was not replaced (still the collection " \
        "of run abc123)"


def test_pid_alive() -> None:
    assert outdir.pid_alive(os.getpid())
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    time.sleep(0.05)
    assert not outdir.pid_alive(proc.pid)


def test_publication_writes_no_temporary_inside_the_collection(tmp_path: Path) -> None:
    """The .run marker's temporary used to be written in the collection (``..run.tmpPID``), where a kill left
    it for good (the clean-up never walks a collection); it is written beside the collection now."""
    collection = tmp_path / "work" / "08_brat" / "h" / "collection"
    collection.mkdir(parents=True)
    (collection / "1_1.txt").write_text("x")
    opened: list[str] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open" and isinstance(args[0], str | os.PathLike):
            path = os.fspath(args[0])
            if isinstance(path, str) and path.startswith(str(tmp_path)) and args[1] not in ("r", "rb"):
                opened.append(os.path.relpath(path, tmp_path))

    sys.addaudithook(hook)  # stays installed: it only records paths under this test's collection
    outdir.publish_collection(collection, tmp_path / "brat", "run1")
    assert len(opened) == 1  # beside the collection, not in it
    assert re.fullmatch(rf"work/08_brat/h/\.collection\.run\.tmp-{os.getpid()}-[0-9a-f]{{8}}", opened[0])
    assert (tmp_path / "brat" / ".run").read_text() == "run1\n"
    assert sorted(p.name for p in collection.iterdir()) == [".run", "1_1.txt"]
    # and what a kill between the two steps leaves beside it is cleaned at the next start
    (collection.parent / f".collection.run.tmp{os.getpid() + 100000}").write_text("run2\n")
    removed = outdir.clean_stale_temporaries(tmp_path)
    assert [p.name for p in removed] == [f".collection.run.tmp{os.getpid() + 100000}"]


@pytest.mark.parametrize(("failures", "published"), [([], True), ([{"pmids": ["1"]}], False)])
def test_finish_run_publishes_only_a_build_without_failures(
    tmp_path: Path, failures: list[object], published: bool
) -> None:
    out = tmp_path / "out"
    collection = _collection(out / "work" / "08_brat" / "h" / "collection", "text")
    manifest = {"failures": failures, "outputs": {"brat": str(collection)}}
    path = out / "runs" / "r1" / "manifest.json"
    outdir.finish_run(manifest, path, out, collection, "r1")
    assert json.loads(path.read_text(encoding="utf-8")) == manifest
    assert (out / "brat").exists() is published
    outdir.finish_run({"failures": []}, path, out, None, "r1")  # a build that stops before the brat stage
    assert json.loads(path.read_text(encoding="utf-8")) == {"failures": []}


def test_remove_stage_outputs_removes_the_whole_hash_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    shards = work / "02_sentences" / "h1"
    collection = work / "08_brat" / "h2" / "collection"
    for directory in (shards, collection, work / "08_brat" / "h3"):
        directory.mkdir(parents=True)
        (directory / "f").write_text("x")
    outdir.remove_stage_outputs([shards, collection, work / "05_mapped" / "absent"])
    assert sorted(p.relative_to(work).as_posix() for p in work.glob("*/*")) == ["08_brat/h3"]
