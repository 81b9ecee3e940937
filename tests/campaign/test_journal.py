"""The campaign's journal (pipeline.campaign.journal): content-addressed objects and an append-only log that
many threads and processes write without losing or tearing a line.

Covers: pipeline.campaign.journal
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from pipeline.campaign.journal import Journal, JournalError, Version


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_record_versions_content(tmp_path: Path) -> None:
    journal = Journal(tmp_path, clock=Clock())
    first = journal.record("alice", "phase1/alice/100_1", b"T1\tChemical 0 8\tWarfarin\n", "createSpan")
    second = journal.record("alice", "phase1/alice/100_1", b"", "deleteSpan")
    journal.record("bob", "phase1/bob/100_1", b"T1\tChemical 0 8\tWarfarin\n", "createSpan", when=5.0)
    again = journal.record("alice", "phase1/alice/100_1", b"T1\tChemical 0 8\tWarfarin\n", "undo")
    assert first == hashlib.sha256(b"T1\tChemical 0 8\tWarfarin\n").hexdigest() == again
    assert journal.versions("phase1/alice/100_1") == [
        Version(1_700_000_001.0, "alice", "phase1/alice/100_1", first, "createSpan", 25, 1),
        Version(1_700_000_002.0, "alice", "phase1/alice/100_1", second, "deleteSpan", 0, 2),
        Version(1_700_000_003.0, "alice", "phase1/alice/100_1", first, "undo", 25, 4),
    ]
    assert [v.time for v in journal.versions("phase1/bob/100_1")] == [5.0]
    assert journal.versions("phase1/carol/100_1") == []
    assert journal.content(first) == b"T1\tChemical 0 8\tWarfarin\n" and journal.content(second) == b""
    objects = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "journal" / "objects").rglob("*")
                     if p.is_file())
    assert objects == sorted(f"journal/objects/{s[:2]}/{s}" for s in (first, second))  # one object per content
    line = json.loads((tmp_path / "journal" / "log.jsonl").read_text().splitlines()[0])
    assert line == {"time": 1_700_000_001.0, "person": "alice", "document": "phase1/alice/100_1", "sha256": first,
                    "action": "createSpan", "size": 25}
    assert oct((tmp_path / "journal" / "log.jsonl").stat().st_mode & 0o777) == "0o600"
    for directory in (tmp_path / "journal", tmp_path / "journal" / "objects", tmp_path / "journal" / "objects" /
                      first[:2]):
        assert oct(directory.stat().st_mode & 0o777) == "0o700", directory
    assert oct((tmp_path / "journal" / "objects" / first[:2] / first).stat().st_mode & 0o777) == "0o600"


def test_bad_requests(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    with pytest.raises(JournalError, match="no such journal object"):
        journal.content("0" * 64)
    with pytest.raises(JournalError, match="not a sha256"):
        journal.content("../../access/users.json")
    with pytest.raises(JournalError, match="multi-line"):
        journal.record("al\nice", "phase1/a/1", b"", "x")
    sha = journal.record("alice", "phase1/a/1", b"abc", "x")
    (tmp_path / "journal" / "objects" / sha[:2] / sha).write_bytes(b"abd")
    with pytest.raises(JournalError, match="corrupt"):
        journal.content(sha)


def test_an_object_is_never_overwritten_and_comes_before_its_line(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    journal = Journal(tmp_path)
    sha = journal.record("alice", "phase1/a/1", b"abc", "x")
    path = tmp_path / "journal" / "objects" / sha[:2] / sha
    inode = path.stat().st_ino
    journal.record("bob", "phase1/b/1", b"abc", "x")
    assert path.stat().st_ino == inode
    # the line is written after the object: when the object cannot be written, no line appears
    import pipeline.campaign.journal as journal_mod

    def full_disk(*args: object, **kwargs: object) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(journal_mod, "create_file", full_disk)
    with pytest.raises(OSError):
        journal.record("alice", "phase1/a/1", b"new content", "x")
    assert len(journal.entries()) == 2
    seen: list[bool] = []
    monkeypatch.undo()
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        if bytes(data).endswith(b"}\n"):
            sha2 = json.loads(bytes(data))["sha256"]
            seen.append((tmp_path / "journal" / "objects" / sha2[:2] / sha2).is_file())
        return real_write(fd, data)

    monkeypatch.setattr(journal_mod.os, "write", spy)
    journal.record("alice", "phase1/a/1", b"later", "x")
    assert seen == [True]


def test_a_torn_last_line_is_left_out(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.record("alice", "phase1/a/1", b"abc", "x")
    with open(tmp_path / "journal" / "log.jsonl", "ab") as fh:
        fh.write(b'{"time": 3, "pers')
    assert len(journal.entries()) == 1
    (tmp_path / "journal" / "log.jsonl").write_bytes(b'garbage\n')
    with pytest.raises(JournalError, match="log.jsonl:1: unreadable"):
        journal.entries()


def _content(writer: int, i: int) -> bytes:
    return f"T1\tChemical 0 8\tWarfarin-{writer}-{i}\n".encode() * (1 + i % 50)


def _write_many(campaign: str, writer: int, count: int) -> None:
    journal = Journal(Path(campaign))
    for i in range(count):
        journal.record(f"p{writer}", f"phase1/p{writer}/1_{i % 3}", _content(writer, i), "createSpan")


def check_complete(campaign: Path, writers: int, count: int) -> None:
    journal = Journal(campaign)
    lines = (campaign / "journal" / "log.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == writers * count + 1
    entries = journal.entries()
    for writer in range(writers):
        mine = [e for e in entries if e.person == f"p{writer}"]
        assert len(mine) == count
        for i, entry in enumerate(mine):  # each writer's lines in its own order, each object intact
            assert journal.content(entry.sha256) == _content(writer, i)
            assert entry.size == len(_content(writer, i))


def test_many_threads_lose_no_line(tmp_path: Path) -> None:
    threads = [threading.Thread(target=_write_many, args=(str(tmp_path), w, 40)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check_complete(tmp_path, 8, 40)


def test_several_processes_lose_no_line(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(str(tmp_path), w, 60)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    check_complete(tmp_path, 4, 60)
