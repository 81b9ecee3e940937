"""Per-document locks (pipeline.campaign.locks): one holder at a time, across threads and processes.

Covers: pipeline.campaign.locks
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import threading
import time
from pathlib import Path

import pytest

from pipeline.campaign.locks import document_key, document_lock


def test_document_key_is_campaign_relative_without_extension(tmp_path: Path) -> None:
    assert document_key(tmp_path, tmp_path / "phase1" / "ann1" / "a..b_1.ann") == "phase1/ann1/a..b_1"
    assert document_key(tmp_path, Path("phase2/s1/100_1.txt")) == "phase2/s1/100_1"


def test_document_key_of_a_path_built_from_a_relative_campaign_dir(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`campaign review out/campaign` builds out/campaign/phase2/...: the key (the lock) is serve's."""
    (tmp_path / "out" / "campaign").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    relative = Path("out/campaign")
    assert document_key(relative, relative / "phase2" / "s1" / "100_1.ann") == "phase2/s1/100_1"
    assert document_key(relative, Path("phase2/s1/100_1.ann")) == "phase2/s1/100_1"
    assert document_key(relative, tmp_path / "out" / "campaign" / "phase2" / "s1" / "100_1.txt") == "phase2/s1/100_1"
    with pytest.raises(ValueError):
        document_key(tmp_path, tmp_path.parent / "elsewhere" / "x.ann")
    with pytest.raises(ValueError):
        document_key(tmp_path, Path("phase1/../../x"))


def test_threads_take_turns(tmp_path: Path) -> None:
    inside = 0
    overlaps = 0

    def work() -> None:
        nonlocal inside, overlaps
        for _ in range(20):
            with document_lock(tmp_path, Path("phase1/a/1_1.ann")):
                inside += 1
                if inside > 1:
                    overlaps += 1
                time.sleep(0.001)
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == 0


def _hold(campaign: str, held: multiprocessing.synchronize.Event, release: multiprocessing.synchronize.Event) -> None:
    with document_lock(Path(campaign), Path("phase1/a/1_1.txt")):
        held.set()
        release.wait(10)


def test_another_process_waits(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    held, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold, args=(str(tmp_path), held, release))
    child.start()
    assert held.wait(10)
    got = threading.Event()

    def take() -> None:
        with document_lock(tmp_path, Path("phase1/a/1_1.ann")):
            got.set()

    taker = threading.Thread(target=take)
    taker.start()
    time.sleep(0.2)
    assert not got.is_set()  # the other process holds it
    release.set()
    child.join(10)
    taker.join(10)
    assert got.is_set()
