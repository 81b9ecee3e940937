"""Durable files and directories (pipeline/durable.py): atomicity and clean-up under kills, fsync order, modes,
the cleaner's names old and new, and that no other module of pipeline/ renames, fsyncs or flocks itself.

Covers: pipeline.durable
"""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import pipeline
from pipeline import durable
from tests import source_trees
from tests.crash import harness

DEAD_PID = 4_000_000  # above the kernel's pid_max: no live process


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- the target: one module renames, fsyncs and flocks ------------------------------------------------

_FORBIDDEN = {("os", "rename"), ("os", "renames"), ("os", "replace"), ("os", "fsync"), ("fcntl", "flock")}


def _forbidden_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(source_trees.parse(path)):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "fcntl"):
            found += [f"{path}:{node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if (node.module, a.name) in _FORBIDDEN]
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        func = node.func
        if isinstance(func.value, ast.Name) and (func.value.id, func.attr) in _FORBIDDEN:
            found.append(f"{path}:{node.lineno}: {func.value.id}.{func.attr}")
        elif func.attr in ("rename", "replace") and len(node.args) == 1 and not node.keywords \
                and not (isinstance(func.value, ast.Name) and func.value.id == "dataclasses"):
            # Path.rename(target) / Path.replace(target): one positional argument (str.replace takes two,
            # datetime.replace and dataclasses.replace take keywords)
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_but_durable_renames_fsyncs_or_flocks() -> None:
    package = Path(pipeline.__file__).parent
    found = [hit for path in sorted(package.rglob("*.py")) if path != package / "durable.py"
             for hit in _forbidden_calls(path)]
    assert found == []


def test_the_scan_sees_each_forbidden_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os, fcntl\nfrom os import replace\nos.rename(a, b)\nos.replace(a, b)\nos.fsync(3)\n"
                      "fcntl.flock(3, 2)\np.rename(q)\np.replace(q)\ns.replace('a', 'b')\n"
                      "when.replace(tzinfo=None)\ndataclasses.replace(d)\n")
    assert [hit.split(": ", 1)[1] for hit in _forbidden_calls(sample)] == [
        "from os import replace", "os.rename", "os.replace", "os.fsync", "fcntl.flock", "p.rename(q)", "p.replace(q)"]


# --- replace, create once, append ---------------------------------------------------------------------


def test_replace_file_writes_through_one_temporary_name(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    seen: list[str] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "os.rename" and str(args[0]).startswith(str(tmp_path)):
            seen.append(Path(str(args[0])).name)

    sys.addaudithook(hook)  # stays installed: it only records renames under this test's directory
    durable.replace_file(target, b"one")
    durable.replace_file(target, b"two")
    assert target.read_bytes() == b"two"
    assert len(seen) == 2 and all(durable.leftover_pid(name) == (True, os.getpid()) for name in seen)
    assert all(name.startswith(f".a.txt{durable.TMP_MARK}{os.getpid()}-") for name in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_replace_file_modes(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        durable.replace_file(tmp_path / "umask", b"x")
        durable.replace_file(tmp_path / "exact", b"x", mode=0o640, umask=False)
        durable.replace_file(tmp_path / "narrowed", b"x", mode=0o666)
        kept = tmp_path / "kept"
        kept.write_bytes(b"old")
        kept.chmod(0o604)
        durable.replace_file(kept, b"new", mode=0o644, keep_mode=True)
        durable.replace_file(tmp_path / "new-kept", b"x", mode=0o644, keep_mode=True)
        os.umask(0o077)
        durable.replace_file(tmp_path / "exact-under-077", b"x", mode=0o644, umask=False)
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"umask": 0o644, "exact": 0o640, "narrowed": 0o644, "kept": 0o604, "new-kept": 0o644,
                     "exact-under-077": 0o644}


def test_a_failed_replace_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), durable.replacing(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_create_file_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "obj"
    assert durable.create_file(target, b"first", mode=0o600)
    assert not durable.create_file(target, b"second", mode=0o600)
    assert target.read_bytes() == b"first" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["obj"]


def test_appenders_never_interleave(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    lines = [f"{t:02d}-{i:04d}-{'x' * 200}\n".encode() for t in range(8) for i in range(50)]

    def append(t: int) -> None:
        for i in range(50):
            durable.append_bytes(log, lines[t * 50 + i], mode=0o600)

    threads = [threading.Thread(target=append, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(log.read_bytes().splitlines(keepends=True)) == sorted(lines)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_short_append_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "write", lambda fd, data: len(data) // 2)
    with pytest.raises(OSError, match=r"log: wrote 3 of 6 bytes"):
        durable.append_bytes(tmp_path / "log", b"abcde\n")


# --- durability: the fsync calls and their order ----------------------------------------------------------


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record fsync (by the path of the descriptor), rename, link and write, in order."""
    seen: list[tuple[str, str]] = []
    real_fsync, real_replace, real_link, real_write = os.fsync, os.replace, os.link, os.write

    def fsync(fd: int) -> None:
        seen.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(a: str, b: str) -> None:
        seen.append(("rename", f"{Path(a).name} -> {Path(b).name}"))
        real_replace(a, b)

    def link(a: str, b: str) -> None:
        seen.append(("link", f"{Path(a).name} -> {Path(b).name}"))
        real_link(a, b)

    def write(fd: int, data: bytes) -> int:
        seen.append(("write", os.readlink(f"/proc/self/fd/{fd}")))
        return real_write(fd, data)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "link", link)
    monkeypatch.setattr(os, "write", write)
    return seen


def _named(seen: list[tuple[str, str]], tmp_path: Path) -> list[tuple[str, str]]:
    """Temporaries named ``TMP``, paths relative to ``tmp_path``."""
    out = []
    for kind, what in seen:
        if kind in ("fsync", "write"):
            what = os.path.relpath(what, tmp_path)
        out.append((kind, " -> ".join("TMP" if durable.is_temporary(Path(p).name) else p for p in what.split(" -> "))))
    return out


def test_a_durable_replace_flushes_the_file_then_renames_then_flushes_the_directory(
        tmp_path: Path, calls: list[tuple[str, str]]) -> None:
    durable.replace_file(tmp_path / "a.txt", b"data", durable=True)
    assert _named(calls, tmp_path) == [("write", "TMP"), ("fsync", "TMP"), ("rename", "TMP -> a.txt"),
                                       ("fsync", ".")]


def test_a_durable_streamed_replace_flushes_in_the_same_order(tmp_path: Path, calls: list[tuple[str, str]]) -> None:
    with durable.replacing(tmp_path / "a.gz", durable=True) as tmp:
        tmp.write_bytes(b"data")  # through open(), not os.write
    assert _named(calls, tmp_path) == [("fsync", "TMP"), ("rename", "TMP -> a.gz"), ("fsync", ".")]


def test_a_plain_replace_does_not_flush(tmp_path: Path, calls: list[tuple[str, str]]) -> None:
    durable.replace_file(tmp_path / "a.txt", b"data")
    assert _named(calls, tmp_path) == [("write", "TMP"), ("rename", "TMP -> a.txt")]


def test_create_file_flushes_before_linking_and_the_directory_after(tmp_path: Path,
                                                                    calls: list[tuple[str, str]]) -> None:
    durable.create_file(tmp_path / "obj", b"data")
    assert _named(calls, tmp_path) == [("write", "TMP"), ("fsync", "TMP"), ("link", "TMP -> obj"), ("fsync", ".")]


def test_an_append_is_flushed_after_its_write(tmp_path: Path, calls: list[tuple[str, str]]) -> None:
    durable.append_bytes(tmp_path / "log", b"line\n")
    assert _named(calls, tmp_path) == [("write", "log"), ("fsync", "log")]


# --- locks ------------------------------------------------------------------------------------------------


def test_lock_path_excludes_threads_and_keeps_its_file(tmp_path: Path) -> None:
    lock = tmp_path / "locks" / "x.lock"
    inside: list[int] = []
    overlaps: list[bool] = []

    def work() -> None:
        for _ in range(20):
            with durable.lock_path(lock):
                inside.append(1)
                overlaps.append(len(inside) > 1)
                inside.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert overlaps == [False] * 80
    assert lock.is_file() and stat.S_IMODE(lock.parent.stat().st_mode) == 0o700


def test_lock_path_excludes_another_process(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom pathlib import Path\nfrom pipeline import durable\n"
        "with durable.lock_path(Path(sys.argv[1])):\n    print('locked', flush=True)\n    time.sleep(60)\n"),
        str(lock)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        fd = os.open(lock, os.O_RDWR)
        try:
            assert not durable.flock(fd, blocking=False)
        finally:
            os.close(fd)
    finally:
        holder.kill()
        holder.wait()
    with durable.lock_path(lock):
        pass


# --- the cleaner: today's name and every name earlier versions left ------------------------------------------

OLD_NAMES = [
    ".a.txt.tmp-{pid}-0a1b2c3d",  # this module
    ".a.txt.tmp{pid}",  # store.write_atomic, memo
    ".a.counts.json.tmp{pid}",  # memo's counts
    ".brat.tmp-{pid}",  # a staged directory, a serve backup
    ".brat.old-{pid}",  # a directory a killed publication replaced
    ".100_1.ann.{pid}.140234.tmp",  # serve's write_beside
]
UNOWNED_NAMES = [
    "07_sampled-luigi-tmp-0000012345",  # Luigi's temporary_path, DirectoryTarget
    ".tmp-k2j3h4.gz",  # tempfile.mkstemp of the PubTator cache
    "params.json.tmp{pid}",  # StageTask.write_params of older versions
    ".out.import-tmp",  # pgx-corpus import of earlier versions
]


@pytest.mark.parametrize("pattern", OLD_NAMES)
def test_the_cleaner_removes_a_dead_writers_leftover_and_keeps_a_live_ones(tmp_path: Path, pattern: str) -> None:
    dead, live = pattern.format(pid=_dead_pid()), pattern.format(pid=os.getppid())
    for name in (dead, live):
        if ".brat." in name:
            (tmp_path / name).mkdir()
            (tmp_path / name / "1.txt").write_text("x")
        else:
            (tmp_path / name).write_text("x")
    (tmp_path / "c.txt").write_text("kept")
    (tmp_path / ".hidden").write_text("kept")
    assert [p.name for p in durable.clean_leftovers(tmp_path)] == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([".hidden", "c.txt", live])


@pytest.mark.parametrize("pattern", UNOWNED_NAMES)
def test_names_without_a_writer_are_removed_only_by_the_directorys_owner(tmp_path: Path, pattern: str) -> None:
    name = pattern.format(pid=os.getppid())
    (tmp_path / name).write_text("x")
    assert durable.is_temporary(name)
    assert durable.clean_leftovers(tmp_path) == []
    assert [p.name for p in durable.clean_leftovers(tmp_path, owned=True)] == [name]


def test_the_cleaner_takes_one_names_leftovers_only(tmp_path: Path) -> None:
    for name in (f".a.txt.tmp-{DEAD_PID}-00000000", f".b.txt.tmp{DEAD_PID}", f".a.txt.tmp{DEAD_PID}"):
        (tmp_path / name).write_text("x")
    removed = durable.clean_leftovers(tmp_path, "a.txt")
    assert sorted(p.name for p in removed) == [f".a.txt.tmp-{DEAD_PID}-00000000", f".a.txt.tmp{DEAD_PID}"]


def test_a_staged_link_is_removed_without_its_target(tmp_path: Path) -> None:
    (tmp_path / "collection").mkdir()
    (tmp_path / "collection" / "1.txt").write_text("x")
    (tmp_path / f".brat.tmp-{DEAD_PID}").symlink_to("collection", target_is_directory=True)
    assert [p.name for p in durable.clean_leftovers(tmp_path)] == [f".brat.tmp-{DEAD_PID}"]
    assert (tmp_path / "collection" / "1.txt").is_file()


# --- directories ---------------------------------------------------------------------------------------------


def test_publish_directory_swaps_in_one_step_and_removes_the_old(tmp_path: Path) -> None:
    swaps: list[tuple[object, ...]] = []
    sys.addaudithook(lambda event, args: swaps.append(args) if event == "pgx.exchange" else None)
    target = tmp_path / "FINAL"
    target.mkdir()
    (target / "old.txt").write_text("old")
    staging = durable.staging_directory(target)
    (staging / "new.txt").write_text("new")
    durable.publish_directory(staging, target)
    assert sorted(p.name for p in target.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FINAL"]  # the old version removed
    assert any(str(a[1]) == str(target) for a in swaps)  # the swap is an audit event (a crash-test kill point)


def test_publish_a_link_over_a_link(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    (tmp_path / "brat").symlink_to("one")
    staging = durable.temporary_name(tmp_path / "brat")
    staging.symlink_to("two")
    durable.publish_directory(staging, tmp_path / "brat")
    assert os.readlink(tmp_path / "brat") == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["brat", "one", "two"]


def test_staging_cleans_dead_writers_and_restores_an_interrupted_swap(tmp_path: Path) -> None:
    dead = _dead_pid()
    target = tmp_path / "FINAL"
    (tmp_path / f".FINAL.old-{dead}").mkdir()  # killed between the two renames of a publication
    (tmp_path / f".FINAL.old-{dead}" / "a.txt").write_text("a")
    (tmp_path / f".FINAL.tmp-{dead}").mkdir()  # an earlier version's staging name
    (tmp_path / f".FINAL.tmp-{dead}-0a1b2c3d").mkdir()
    live = tmp_path / f".FINAL.tmp-{os.getppid()}-0a1b2c3d"  # another live writer's staging stays
    live.mkdir()
    staging = durable.staging_directory(target)
    assert (target / "a.txt").read_text() == "a"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["FINAL", live.name, staging.name])


# --- atomicity and clean-up under a kill at every mutation (tests/crash/harness.py) -----------------------------

OLD, NEW = b"old content\n", b"new content, longer than the old one\n"


def _setup(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_bytes(OLD)
    (root / "pub").mkdir()
    (root / "pub" / "1.txt").write_bytes(OLD)
    (root / "pub" / "2.txt").write_bytes(OLD)


def _writer(argv: list[str]) -> int:
    """The command the harness runs in its child (cwd: the scenario's directory): every durable writer."""
    root = Path.cwd()
    durable.clean_leftovers(root)
    durable.replace_file(root / "a.txt", NEW, durable=True)
    durable.create_file(root / "once.txt", NEW)
    with durable.replacing(root / "b.gz", mode=0o600) as tmp, open(tmp, "wb") as fh:
        fh.write(NEW)
    staging = durable.staging_directory(root / "pub")
    (staging / "1.txt").write_bytes(NEW)
    (staging / "3.txt").write_bytes(NEW)
    durable.publish_directory(staging, root / "pub")
    return 0


def _tree(root: Path, prefix: str) -> dict[str, tuple[str, bytes]]:
    return {k: v for k, v in harness.snapshot(root).items() if k == prefix or k.startswith(prefix + "/")}


def test_a_kill_at_any_mutation_leaves_old_or_new_and_a_rerun_cleans_up(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.cli

    monkeypatch.setattr(pipeline.cli, "main", _writer)  # the forked child runs pipeline.cli.main
    template, root = tmp_path / "template", tmp_path / "run"
    _setup(template)
    before_pub = _tree(template, "pub")
    import shutil

    shutil.copytree(template, root)
    status, mutations, _, _ = harness.run_child(root, [])
    assert status == "exit 0" and mutations > 10
    expected = harness.snapshot(root)
    assert (root / "a.txt").read_bytes() == NEW and sorted(p.name for p in (root / "pub").iterdir()) == [
        "1.txt", "3.txt"]
    new_pub = _tree(root, "pub")
    for point in range(1, mutations + 1):
        shutil.rmtree(root)
        shutil.copytree(template, root)
        status, *_ = harness.run_child(root, [], kill_at=point)
        assert status == "killed", point
        assert (root / "a.txt").read_bytes() in (OLD, NEW), point  # never a part
        pub = _tree(root, "pub")
        if pub:  # killed between the two renames of a publication: restored by the rerun
            assert pub in (before_pub, new_pub), point
        else:
            assert any(p.name.startswith(".pub.old-") for p in root.iterdir()), point
        assert not (root / "once.txt").exists() or (root / "once.txt").read_bytes() == NEW, point
        status, *_ = harness.run_child(root, [])
        got = harness.snapshot(root)
        assert status == "exit 0", point
        assert harness.differences(expected, got) == [], point
        assert harness.leftovers(expected, got) == [], point
