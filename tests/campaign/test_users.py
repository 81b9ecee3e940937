"""The campaign's users (pipeline.campaign.users): scrypt hashes, one-time passwords, reset, revoke, reload.

Covers: pipeline.campaign.users
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from pipeline.campaign import users
from pipeline.campaign.users import Person, UsersError, UserStore, create_users, reset_password, revoke


def all_bytes(root: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_create_hashes_with_scrypt_and_never_stores_the_password(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                                production_scrypt: int) -> None:
    caplog.set_level(logging.DEBUG)
    created = create_users(tmp_path, {"alice": ["annotator"], "dave": ["senior", "annotator"], "mia": ["manager"]})
    assert sorted(created) == ["alice", "dave", "mia"]
    assert len(set(created.values())) == 3 and all(len(pw) >= 16 for pw in created.values())
    path = tmp_path / "access" / "users.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = json.loads(path.read_text(encoding="utf-8"))
    for person, password in created.items():
        stored = record["people"][person]["password"]
        assert stored.startswith("scrypt:32768:8:1$") and password not in stored  # the production cost
        assert production_scrypt == 32768
        assert users.check_password(stored, password) and not users.check_password(stored, password + "x")
    assert record["people"]["dave"]["roles"] == ["annotator", "senior"]
    salts = {record["people"][p]["password"].split("$")[1] for p in created}
    assert len(salts) == 3  # a salt per person
    everything = all_bytes(tmp_path) + caplog.text.encode()
    assert not any(pw.encode() in everything for pw in created.values())


def test_rerun_keeps_passwords_and_updates_roles(tmp_path: Path) -> None:
    first = create_users(tmp_path, {"alice": ["annotator"], "bob": ["annotator"]})
    again = create_users(tmp_path, {"alice": ["annotator", "senior"], "bob": ["annotator"], "carol": ["annotator"]})
    assert list(again) == ["carol"]  # only the new person gets a password; nobody else's changes
    store = UserStore(tmp_path)
    assert store.verify("alice", first["alice"]) == Person("alice", frozenset({"annotator", "senior"}))
    assert store.verify("bob", first["bob"]) == Person("bob", frozenset({"annotator"}))
    assert store.verify("carol", again["carol"]) is not None


@pytest.mark.parametrize(("people", "message"), [
    ({"al/ice": ["annotator"]}, "letters, digits"),
    ({"..": ["annotator"]}, "letters, digits"),
    ({"alice": ["admin"]}, "subset"),
    ({"alice": []}, "subset"),
])
def test_bad_people_are_refused_before_anything_is_written(tmp_path: Path, people: dict[str, list[str]],
                                                           message: str) -> None:
    with pytest.raises(UsersError, match=message):
        create_users(tmp_path, people)
    assert not (tmp_path / "access" / "users.json").exists()


def test_verify_wrong_unknown_revoked_and_reset(tmp_path: Path) -> None:
    created = create_users(tmp_path, {"alice": ["annotator"], "bob": ["annotator"]})
    store = UserStore(tmp_path)
    assert store.verify("alice", created["alice"]) is not None
    assert store.verify("alice", created["bob"]) is None
    assert store.verify("nobody", created["alice"]) is None and store.get("nobody") is None
    assert store.verify("alice", "") is None
    revoke(tmp_path, "alice")
    assert store.verify("alice", created["alice"]) is None  # picked up without a new store
    assert store.get("alice") == Person("alice", frozenset({"annotator"}), revoked=True)
    assert "password" in (tmp_path / "access" / "users.json").read_text()
    assert json.loads((tmp_path / "access" / "users.json").read_text())["people"]["alice"]["password"] is None
    new = reset_password(tmp_path, "alice")
    assert new != created["alice"]
    assert store.verify("alice", new) == Person("alice", frozenset({"annotator"}))
    assert store.verify("alice", created["alice"]) is None
    bob_before = store.verify("bob", created["bob"])
    reset_password(tmp_path, "bob")
    assert bob_before is not None and store.verify("bob", created["bob"]) is None
    with pytest.raises(UsersError, match="no person 'carol'"):
        reset_password(tmp_path, "carol")
    with pytest.raises(UsersError, match="no person 'carol'"):
        revoke(tmp_path, "carol")


def test_store_picks_up_new_people_and_denies_everyone_on_a_broken_file(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    store = UserStore(tmp_path)
    assert store.get("alice") is None  # no file yet: nobody
    created = create_users(tmp_path, {"alice": ["annotator"]})
    assert store.verify("alice", created["alice"]) is not None
    later = create_users(tmp_path, {"zoe": ["senior"]})
    assert store.verify("zoe", later["zoe"]) == Person("zoe", frozenset({"senior"}))
    path = tmp_path / "access" / "users.json"
    good = path.read_bytes()
    path.write_bytes(b"{not json")
    assert store.verify("alice", created["alice"]) is None
    assert "nobody may log in" in caplog.text
    with pytest.raises(UsersError, match="not a users file"):
        users.list_people(tmp_path)
    with pytest.raises(UsersError, match="not a users file"):
        create_users(tmp_path, {"bob": ["annotator"]})  # a broken file is never overwritten
    assert path.read_bytes() == b"{not json"
    path.write_bytes(good)
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert store.verify("alice", created["alice"]) is not None


def test_unknown_people_cost_a_scrypt_check_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a cost where scrypt still dominates every path (~8 ms a check) without the production one's 12 checks
    monkeypatch.setattr(users, "SCRYPT_N", 2**12)
    created = create_users(tmp_path, {"alice": ["annotator"]})
    revoke(tmp_path, "alice")
    create_users(tmp_path, {"bob": ["annotator"]})
    store = UserStore(tmp_path)
    store.get("bob")

    def timed(person: str, password: str) -> float:
        start = time.perf_counter()
        for _ in range(3):
            store.verify(person, password)
        return time.perf_counter() - start

    known, unknown, revoked = timed("bob", "wrong"), timed("nobody", "wrong"), timed("alice", created["alice"])
    # scrypt dominates every path: none is an order of magnitude faster than a known person's check
    assert unknown > known / 3 and revoked > known / 3


def test_concurrent_writers_lose_nobody(tmp_path: Path) -> None:
    results: dict[str, str] = {}

    def add(i: int) -> None:
        results.update(create_users(tmp_path, {f"p{i}": ["annotator"]}))

    threads = [threading.Thread(target=add, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.id for p in users.list_people(tmp_path)) == [f"p{i}" for i in range(6)]
    store = UserStore(tmp_path)
    assert all(store.verify(p, pw) is not None for p, pw in results.items())


def _create(campaign: str, person: str, scrypt_n: int) -> None:
    users.SCRYPT_N = scrypt_n  # a spawned process: the cost of the test that started it (tests/campaign/conftest.py)
    create_users(Path(campaign), {person: ["annotator"]})


def test_concurrent_processes_lose_nobody(tmp_path: Path) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_create, args=(str(tmp_path), f"q{i}", users.SCRYPT_N)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert [p.id for p in users.list_people(tmp_path)] == [f"q{i}" for i in range(4)]


def test_store_reads_while_the_file_changes(tmp_path: Path) -> None:
    create_users(tmp_path, {"alice": ["annotator"]})
    store = UserStore(tmp_path)
    seen: list[Person | None] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.append(store.get("alice"))

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(5):
        create_users(tmp_path, {"alice": ["annotator"] if i % 2 else ["annotator", "senior"]})
    stop.set()
    for t in threads:
        t.join()
    assert seen and all(p is not None and p.id == "alice" for p in seen)  # never a half-read file


def test_the_log_says_whether_passwords_were_shown(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`build --roster` creates people without showing a password: its log must not claim otherwise."""
    with caplog.at_level(logging.INFO, logger="pipeline.campaign.users"):
        create_users(tmp_path / "a", {"alice": ["annotator"]})
        create_users(tmp_path / "b", {"alice": ["annotator"]}, shown=False)
    shown, hidden = (r.getMessage() for r in caplog.records if "new people" in r.getMessage())
    assert "passwords shown once to the manager" in shown
    assert "shown" in hidden and "passwords shown once" not in hidden
    assert "campaign users reset PERSON" in hidden
