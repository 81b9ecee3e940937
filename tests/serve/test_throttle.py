"""Fair login throttling and bounded memory (issue 35, item 4).

On a live waitress server with the real app, clients come from distinct loopback addresses
(127.0.0.N): a name alone is never locked (failures for it from many addresses only delay it, by 2 s
at most), an (address, name) pair and an address back off exponentially, and the person still logs in
from their own address.  The store's tables stay bounded whatever names are typed.

The live server's store keeps its default delays but runs on a clock the test can move forward
(real time plus a skip): waiting out a backoff is a skip instead of a sleep, while a delay the server
itself sleeps (the name's) is still real time, measured around the request.

Covers: pipeline.serve.app, pipeline.serve.sessions
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator

import pytest

from pipeline.serve.app import ServeApp
from pipeline.serve.sessions import LoginThrottled, SessionStore
from tests.serve.builders import Demo, build_served_campaign
from tests.serve.live import HttpClient, LiveServer

WRONG = ["Incorrect login and/or password"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return build_served_campaign(tmp_path_factory.mktemp("throttle"))


class SkipClock:
    """``time.monotonic`` plus the seconds skipped so far (the store's clock, moved on by tests)."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.skipped

    def skip(self, seconds: float) -> None:
        self.skipped += seconds


@pytest.fixture()
def clock() -> SkipClock:
    return SkipClock()


@pytest.fixture()
def live(demo: Demo, clock: SkipClock) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(demo.root, sessions=SessionStore(clock=clock))) as server:
        yield server


def messages(answer: dict) -> list[str]:  # type: ignore[type-arg]
    return [m[0] for m in answer.get("messages", [])]


def test_a_name_is_never_locked_failures_from_many_addresses_only_delay_it(live: LiveServer, demo: Demo,
                                                                          clock: SkipClock) -> None:
    for n in range(10, 22):  # twelve addresses, one wrong password each, all for alice
        clock.skip(2)  # the name's delay (2 s at most) is over: each failure is counted, none is waited for
        attacker = HttpClient(live.port, source=f"127.0.0.{n}")
        assert messages(attacker.login("alice", "guess")) == WRONG  # checked (maybe after a delay), never locked
        attacker.close()
    alice = HttpClient(live.port, source="127.0.0.2")
    started = time.monotonic()
    answer = alice.login("alice", demo.passwords["alice"])
    elapsed = time.monotonic() - started
    assert answer.get("exception") is None and alice.ajax("whoami")["user"] == "alice"
    assert elapsed < 2 + 1.5  # the name's delay is 2 s at most (plus one password check on a busy machine)


def test_the_name_delay_is_at_most_two_seconds(live: LiveServer, clock: SkipClock) -> None:
    for n in range(30, 45):
        clock.skip(2)  # as above: fifteen failures, whose delays (up to 2 s each) are skipped, not slept
        HttpClient(live.port, source=f"127.0.0.{n}").login("bob", "guess")
    started = time.monotonic()
    assert messages(HttpClient(live.port, source="127.0.0.46").login("bob", "guess")) == WRONG
    assert 1.0 < time.monotonic() - started < 2 + 1.5


def test_a_pair_backs_off_but_not_the_name_nor_the_address(live: LiveServer, demo: Demo) -> None:
    guesser = HttpClient(live.port, source="127.0.0.7")
    for _ in range(5):
        assert messages(guesser.login("alice", "guess")) == WRONG
    refused = guesser.login("alice", demo.passwords["alice"])  # the right password, during the pair's wait
    assert refused["exception"] == "invalidAuth" and "Too many failed logins" in messages(refused)[0]
    assert guesser.login("bob", demo.passwords["bob"]).get("exception") is None  # same address, other name
    assert HttpClient(live.port, source="127.0.0.8").login("alice", demo.passwords["alice"]).get("exception") is None


def test_an_address_backs_off_exponentially(live: LiveServer, demo: Demo, clock: SkipClock) -> None:
    scanner = HttpClient(live.port, source="127.0.0.5")
    for n in range(20):  # twenty names: the twentieth failure starts the address's backoff (1 s)
        assert messages(scanner.login(f"nobody{n}", "x")) == WRONG
    assert "Too many failed logins" in messages(scanner.login("bob", demo.passwords["bob"]))[0]
    assert HttpClient(live.port, source="127.0.0.6").login("bob", demo.passwords["bob"]).get("exception") is None
    clock.skip(1.1)
    assert messages(scanner.login("nobody20", "x")) == WRONG  # the wait is over; this failure doubles it (2 s)
    clock.skip(1.1)
    assert "Too many failed logins" in messages(scanner.login("bob", demo.passwords["bob"]))[0]
    clock.skip(1.1)
    assert scanner.login("bob", demo.passwords["bob"]).get("exception") is None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_tables_are_capped_and_keep_no_name() -> None:
    clock = Clock()
    store = SessionStore(max_entries=50, forget=600, clock=clock)
    name = "n" * (256 * 1024)
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for i in range(500):
            person, address = f"{i}{name}", f"10.0.{i // 250}.{i % 250}{name}"
            try:
                store.check_throttle(person, address)
            except LoginThrottled:
                pass
            store.failed(person, address)
            clock.now += 0.01
        del person, address  # the loop's last values
        kept = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    sizes = store.table_sizes()
    assert sizes["addresses"] == sizes["pairs"] == sizes["names"] == 50
    assert kept < 64 * 1024  # 150 entries of a few dozen bytes; not one 256 KiB name
    for i in range(100):  # checking a name that never failed adds nothing
        store.check_throttle(f"fresh{i}", "10.9.9.9")
    assert store.table_sizes()["names"] == 50
    clock.now += 601  # forgotten 600 s after their last failure: the next failure drops them
    store.failed("x", "10.0.0.1")
    assert store.table_sizes() == {"addresses": 1, "pairs": 1, "names": 1, "sessions": 0}
