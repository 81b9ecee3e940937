"""A session ends when its password does (issue 35, item 2), on a live waitress server with the real brat.

Each case logs people in, changes the users file or the campaign the way the manager's commands do, and
checks the old cookies at their next request: a reset, a revocation, a revocation followed by a reset
before the person's next request, and ``campaign users logout`` end them; a role change keeps the
session with the new role's rights; ``campaign replace`` ends the leaver's; ``reassign`` ends nobody's.
A refused request changes no byte.

Covers: pipeline.campaign.team, pipeline.campaign.users, pipeline.cli, pipeline.serve.app, pipeline.serve.sessions
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.campaign import team
from pipeline.campaign.users import create_users, reset_password, revoke
from pipeline.serve.app import ServeApp
from pipeline.serve.sessions import SessionStore
from tests.serve.builders import Demo, build_served_campaign, tree_digest
from tests.serve.live import HttpClient, LiveServer

LOG_IN_FIRST = ["Log in first (Login button, top right)."]


@pytest.fixture()
def demo(tmp_path: Path) -> Demo:
    return build_served_campaign(tmp_path)


@pytest.fixture()
def live(demo: Demo) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(demo.root)) as server:
        yield server


def logged_in(live: LiveServer, demo: Demo, person: str) -> HttpClient:
    client = HttpClient(live.port)
    assert client.login(person, demo.passwords[person]).get("exception") is None
    assert client.ajax("whoami")["user"] == person
    return client


def can_read(client: HttpClient, collection: str, document: str) -> bool:
    answer = client.ajax("getDocument", collection=collection, document=document)
    return not answer.get("exception") and "text" in answer


def assert_ended(client: HttpClient, demo: Demo, person: str) -> None:
    """Every kind of request by the old cookie is refused, and none changes a byte."""
    before = tree_digest(demo.root)
    collection, document = f"/phase1/{person}/", demo.editable[person]
    assert client.ajax("whoami")["user"] is None
    listing = client.ajax("getCollectionInformation", collection=collection)
    assert listing["exception"] is True and [m[0] for m in listing["messages"]] == LOG_IN_FIRST
    assert not can_read(client, collection, document)
    write = client.ajax("createSpan", collection=collection, document=document, offsets="[[9,14]]", type="Phenotype")
    assert write["exception"] is True
    assert tree_digest(demo.root) == before


def test_reset_ends_the_session(live: LiveServer, demo: Demo) -> None:
    alice, bob = logged_in(live, demo, "alice"), logged_in(live, demo, "bob")
    password = reset_password(demo.root, "alice")
    assert_ended(alice, demo, "alice")
    assert bob.ajax("whoami")["user"] == "bob"  # nobody else's session ends
    again = HttpClient(live.port)
    assert again.login("alice", demo.passwords["alice"])["exception"] == "invalidAuth"
    assert again.login("alice", password).get("exception") is None
    assert can_read(again, "/phase1/alice/", demo.editable["alice"])


def test_revoke_ends_the_session(live: LiveServer, demo: Demo) -> None:
    alice = logged_in(live, demo, "alice")
    revoke(demo.root, "alice")
    assert_ended(alice, demo, "alice")


def test_revoke_then_reset_before_the_next_request_ends_the_session(live: LiveServer, demo: Demo) -> None:
    alice = logged_in(live, demo, "alice")
    revoke(demo.root, "alice")
    password = reset_password(demo.root, "alice")  # serve never saw the revocation
    assert_ended(alice, demo, "alice")
    assert HttpClient(live.port).login("alice", password).get("exception") is None


def test_a_reset_while_serve_was_not_watching_ends_the_session(live: LiveServer, demo: Demo) -> None:
    """Two resets in a row, and a users file replaced by another process's tools: the state decides."""
    alice = logged_in(live, demo, "alice")
    reset_password(demo.root, "alice")
    reset_password(demo.root, "alice")
    assert_ended(alice, demo, "alice")


def test_a_role_change_keeps_the_session_with_the_new_rights(live: LiveServer, demo: Demo) -> None:
    dave = logged_in(live, demo, "dave")
    assert can_read(dave, "/phase2/dave/", demo.merged)
    create_users(demo.root, {"dave": ["annotator"]})  # no longer a senior (and no phase-1 collection)
    assert dave.ajax("whoami")["user"] == "dave"
    assert not can_read(dave, "/phase2/dave/", demo.merged)
    assert dave.ajax("getCollectionInformation", collection="/")["items"] == []
    create_users(demo.root, {"dave": ["senior"]})
    assert can_read(dave, "/phase2/dave/", demo.merged)


def test_removal_by_replace_ends_the_session(live: LiveServer, demo: Demo) -> None:
    bob, alice = logged_in(live, demo, "bob"), logged_in(live, demo, "alice")
    result = team.replace(demo.root, "bob", "zed", started="move", when="2026-03-01T09:00:00+00:00")
    assert result.revoked == ["bob"]
    assert_ended(bob, demo, "bob")
    assert alice.ajax("whoami")["user"] == "alice"
    zed = HttpClient(live.port)
    assert zed.login("zed", result.passwords["zed"]).get("exception") is None
    assert [i[2] for i in zed.ajax("getCollectionInformation", collection="/")["items"]] == ["phase1/zed"]


def test_reassign_ends_nobodys_session(live: LiveServer, demo: Demo) -> None:
    alice, bob = logged_in(live, demo, "alice"), logged_in(live, demo, "bob")
    document = sorted(set(demo.files("alice")) - set(demo.files("bob")) - {"a..b_1"})[-1]
    team.reassign(demo.root, [document], "bob", giver="alice", started="move")
    assert alice.ajax("whoami")["user"] == "alice" and bob.ajax("whoami")["user"] == "bob"
    assert can_read(bob, "/phase1/bob/", document)
    assert can_read(alice, "/phase1/alice/", demo.editable["alice"]) or demo.editable["alice"] == document


def test_users_logout_ends_every_session_of_one_person(live: LiveServer, demo: Demo,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    first, second, bob = logged_in(live, demo, "alice"), logged_in(live, demo, "alice"), logged_in(live, demo, "bob")
    assert cli.main(["campaign", "users", str(demo.root), "logout", "alice"]) == 0
    out = capsys.readouterr().out
    assert "alice" in out and demo.passwords["alice"] not in out
    assert_ended(first, demo, "alice")
    assert_ended(second, demo, "alice")
    assert bob.ajax("whoami")["user"] == "bob"
    again = logged_in(live, demo, "alice")  # the password is still hers
    assert can_read(again, "/phase1/alice/", demo.editable["alice"])
    assert cli.main(["campaign", "users", str(demo.root), "logout", "nobody"]) == 2
    assert "nobody" in capsys.readouterr().err


def test_sessions_per_person_are_limited(demo: Demo) -> None:
    with LiveServer(ServeApp(demo.root, sessions=SessionStore(max_sessions=3))) as live:
        tabs = [logged_in(live, demo, "alice") for _ in range(4)]
        bob = logged_in(live, demo, "bob")
        assert tabs[0].ajax("whoami")["user"] is None  # the least recently used one ended
        assert [t.ajax("whoami")["user"] for t in tabs[1:]] == ["alice"] * 3
        assert bob.ajax("whoami")["user"] == "bob"
        assert live.app.sessions.count("alice") == 3
