"""The security matrix: every brat ajax action x every kind of person x every kind of target, against the
real brat code behind the real app.  A refused request (and every read) changes no byte of the campaign
directory; no password appears in any served byte, log line or output.

Covers: pipeline.serve.app, pipeline.serve.brat_adapter, pipeline.serve.policy
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from pipeline.serve.app import ServeApp
from pipeline.serve.brat_adapter import load_brat
from pipeline.serve.policy import AUTH_ACTIONS, READ_ACTIONS, SESSION_ACTIONS, TAGGER_ID, WRITE_ACTIONS
from tests.serve.builders import Client, Demo, build_served_campaign, tree_digest

BRAT = load_brat()
#: brat's dispatch.DISPATCHER, every action but login/logout/whoami (answered by the app: tested below)
ACTIONS = sorted(set(BRAT.actions) - AUTH_ACTIONS)
PEOPLE = ("anonymous", "alice", "bob", "dave", "erin", "carol")
TARGETS = ("alice", "bob", "preannotation", "review", "phase2", "final", "root", "access", "phase1_dir",
           "dotdot", "dotdot_doc", "absolute", "absolute_doc", "hidden_doc")
#: what each person may read and edit, written out (not computed by the policy under test)
READS = {"alice": {"alice"}, "bob": {"bob"}, "dave": {"phase2"}, "erin": {"alice", "bob", "phase2", "final"}}
WRITES = {"alice": {"alice"}, "bob": {"bob"}, "dave": {"phase2"}}
LOGGED_IN = {"alice", "bob", "dave", "erin"}
ARG_VALUES = {
    "offsets": "[[9,14]]", "type": "Phenotype", "id": "T1", "origin": "T1", "target": "T2", "old_target": "T2",
    "old_type": "isAssociatedWith", "comment": "a note", "attributes": "{}", "normalizations": "[]",
    "text": "Warfarin", "scope": "document", "extension": "ann", "include_conf": "0", "log": "x", "config": "{}",
    "concordancing": "false", "context_length": "50", "text_match": "word", "match_case": "false",
    "token": "{}", "name": "x", "database": "x", "key": "x", "document_text": "x", "docid": "x",
    "svg": "<svg/>", "tagger": "x", "type_match": "x", "entity": "x", "relation": "x", "arg1": "x", "arg2": "x",
    "format": "x", "user": "x", "password": "x", "collection": "/", "document": "x",
}


def target(demo: Demo, name: str) -> tuple[str, str, str]:
    """(collection, document, extension) of a target."""
    d = demo
    return {
        "alice": ("/phase1/alice/", d.editable["alice"], "ann"),
        "bob": ("/phase1/bob/", d.editable["bob"], "ann"),
        "preannotation": ("/preannotation/", d.editable["alice"], "ann"),
        "review": ("/review/merged/dave/", d.merged, "ann"),
        "phase2": ("/phase2/dave/", d.merged, "ann"),
        "final": ("/final/", d.finalized, "ann"),
        "root": ("/", "campaign", "json"),
        "access": ("/access/", "users", "json"),
        "phase1_dir": ("/phase1/", "acl", "conf"),
        "dotdot": ("/phase1/alice/../bob/", d.editable["bob"], "ann"),
        "dotdot_doc": ("/phase1/alice/", f"../bob/{d.editable['bob']}", "ann"),
        "absolute": (str(d.root / "phase1" / "bob") + "/", d.editable["bob"], "ann"),
        "absolute_doc": ("/phase1/alice/", str(d.root / "phase1" / "bob" / d.editable["bob"]), "ann"),
        "hidden_doc": ("/phase1/alice/", "../../access/users", "json"),
    }[name]


MALFORMED = {"dotdot", "dotdot_doc", "absolute_doc", "hidden_doc"}  # refused whatever the action


def expected(person: str, action: str, tname: str) -> bool:
    if tname in MALFORMED:
        return False
    if action == "loadConf":
        return True  # the client asks before any login: the options stored in the session, none then
    if action in SESSION_ACTIONS:
        return person in LOGGED_IN
    if action == "getCollectionInformation" and tname in ("root", "phase1_dir"):
        return True  # the person's own collections only (none when not logged in)
    if action in READ_ACTIONS:
        return tname in READS.get(person, set())
    if action == "tag":  # the matrix's tagger "x": no such tagger, whoever asks (see the test below)
        return False
    if action in WRITE_ACTIONS:
        return tname in WRITES.get(person, set())
    return False  # every other brat action is refused


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return build_served_campaign(tmp_path_factory.mktemp("matrix"))


@pytest.fixture()
def fresh(tmp_path: Path) -> Demo:
    return build_served_campaign(tmp_path)


def clients(app: ServeApp, demo: Demo) -> dict[str, Client]:
    out = {"anonymous": Client(app)}
    for person in ("alice", "bob", "dave", "erin"):
        out[person] = Client(app)
        assert not out[person].login(person, demo.passwords[person]).refused
    # carol's session was opened before she was revoked: it ends at her next request
    out["carol"] = Client(app)
    out["carol"].cookie = app.sessions.create("carol").sid
    return out


@pytest.mark.slow  # every role, action and document on a live server (23 s of CPU)
def test_security_matrix(demo: Demo, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.INFO)
    app = ServeApp(demo.root)
    people = clients(app, demo)
    failures: list[str] = []
    counted = {"allowed": 0, "refused": 0}
    for action in ACTIONS:
        for person in PEOPLE:
            for tname in TARGETS:
                collection, document, extension = target(demo, tname)
                args = {name: ARG_VALUES.get(name, "x") for name in BRAT.actions[action]}
                args.update(collection=collection, document=document, extension=extension)
                before = tree_digest(demo.root)
                reply = people[person].ajax(action, **args)
                after = tree_digest(demo.root)
                allowed = not reply.refused
                counted["allowed" if allowed else "refused"] += 1
                if allowed != expected(person, action, tname):
                    failures.append(f"{action} by {person} on {tname}: {'allowed' if allowed else 'refused'} "
                                    f"{reply.messages}")
                if reply.refused:
                    assert reply.messages, f"{action} by {person} on {tname}: refused without a message"
                if (reply.refused or action not in WRITE_ACTIONS) and before != after:
                    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                    failures.append(f"{action} by {person} on {tname} changed {changed}")
    assert not failures, "\n".join(failures[:40])
    assert counted["allowed"] > 50 and counted["refused"] > 1000
    served = b"".join(b for c in people.values() for b in c.seen)
    out = capsys.readouterr()
    for person, password in demo.passwords.items():
        assert password.encode() not in served, f"{person}'s password was served"
        assert password not in caplog.text, f"{person}'s password was logged"
        assert password not in out.out + out.err


def test_security_matrix_of_the_suggest_button(fresh: Demo) -> None:
    """brat's tag with the one tagger serve answers: every person x every target (on a campaign the matrix
    above has not written into).  Only an annotator on their own phase-1 collection is answered (never
    phase 2, the manager or another person's); a refused press changes no byte; any other tagger id is
    refused whoever asks (the matrix above)."""
    demo = fresh
    app = ServeApp(demo.root)
    people = clients(app, demo)
    failures = []
    for person in PEOPLE:
        for tname in TARGETS:
            collection, document, _ = target(demo, tname)
            before = tree_digest(demo.root)
            reply = people[person].ajax("tag", collection=collection, document=document, tagger=TAGGER_ID)
            allowed = not reply.refused
            want = tname not in MALFORMED and tname in WRITES.get(person, set()) and tname in ("alice", "bob")
            if allowed != want:
                failures.append(f"tag by {person} on {tname}: {'allowed' if allowed else 'refused'} {reply.messages}")
            if reply.refused:
                assert reply.messages
                if tree_digest(demo.root) != before:
                    failures.append(f"refused tag by {person} on {tname} changed a file")
            else:
                assert reply.json["action"] == "tag" and "annotations" in reply.json
    assert not failures, "\n".join(failures)


def test_revoked_session_ends_and_stays_ended(fresh: Demo) -> None:
    app = ServeApp(fresh.root)
    client = Client(app)
    client.cookie = app.sessions.create("carol").sid
    assert client.ajax("whoami").json["user"] is None
    assert app.sessions.get(client.cookie) is None
    assert client.login("carol", "anything").json["exception"] == "invalidAuth"


def test_root_listing_shows_own_collections_only(fresh: Demo) -> None:
    app = ServeApp(fresh.root)
    expected_items: dict[str, list[str]] = {
        "alice": ["phase1/alice"], "dave": ["phase2/dave"],
        "erin": ["final", "phase1/alice", "phase1/bob", "phase1/carol", "phase2/dave"]}
    for person, items in expected_items.items():
        client = Client(app)
        client.login(person, fresh.passwords[person])
        reply = client.ajax("getCollectionInformation", collection="/")
        assert [i[2] for i in reply.json["items"]] == items
        assert reply.messages == []
    assert Client(app).ajax("getCollectionInformation", collection="/").json["items"] == []
    erin = Client(app)
    erin.login("erin", fresh.passwords["erin"])
    listing = erin.ajax("getCollectionInformation", collection="/phase1/").json["items"]
    assert [i[2] for i in listing] == ["..", "alice", "bob", "carol"]


def test_listing_state_column_and_valid_dotdot_name(fresh: Demo) -> None:
    app = ServeApp(fresh.root)
    client = Client(app)
    client.login("alice", fresh.passwords["alice"])
    listing = client.ajax("getCollectionInformation", collection="/phase1/alice/").json
    assert listing["header"][:2] == [["Document", "string"], ["State", "string"]]
    states = {item[2]: item[3] for item in listing["items"] if item[0] == "d"}
    merged = {fresh.finalized, fresh.merged} & set(states)
    assert merged and all(states[m] == "done (read-only)" for m in merged)
    assert states["a..b_1"] == "to do"
    reply = client.ajax("getDocument", collection="/phase1/alice/", document="a..b_1")
    assert not reply.refused and reply.json["text"]
    assert not list((fresh.root / "phase1" / "alice").glob(".stats_cache"))


def test_read_only_documents_refuse_edits(fresh: Demo) -> None:
    app = ServeApp(fresh.root)
    merged_by = next(p for p in ("alice", "bob", "carol")
                     if (fresh.root / "phase1" / p / f"{fresh.merged}.txt").exists() and p != "carol")
    annotator = Client(app)
    annotator.login(merged_by, fresh.passwords[merged_by])
    senior = Client(app)
    senior.login("dave", fresh.passwords["dave"])
    before = tree_digest(fresh.root)
    span: dict[str, Any] = {"offsets": "[[9,14]]", "type": "Phenotype"}
    r1 = annotator.ajax("createSpan", collection=f"/phase1/{merged_by}/", document=fresh.merged, **span)
    r2 = senior.ajax("createSpan", collection="/phase2/dave/", document=fresh.finalized, **span)
    assert r1.refused and "merged into phase 2" in r1.messages[0]
    assert r2.refused and "finalized" in r2.messages[0]
    assert tree_digest(fresh.root) == before
    r3 = senior.ajax("createSpan", collection="/phase2/dave/", document=fresh.merged, **span)
    assert not r3.refused and r3.json.get("exception") is None
    assert "T" in (fresh.root / "phase2" / "dave" / f"{fresh.merged}.ann").read_text(encoding="utf-8")


def test_static_files_only_from_brat_client(fresh: Demo) -> None:
    app = ServeApp(fresh.root)
    client = Client(app)
    assert client.request("GET", "/client/src/ajax.js").status == "200 OK"
    assert client.request("GET", "/static/style-ui.css").status == "200 OK"
    for path in ("/server/src/auth.py", "/config_template.py", "/client/../server/src/auth.py",
                 "/static/../../brat/server/src/dispatch.py", "/campaign.json", "/phase1/alice/acl.conf",
                 "/access/users.json", "/ajax.fcgi", "/standalone.py", "/static/%2e%2e/index.xhtml"):
        assert client.request("GET", path).status == "404 Not Found", path
    page = client.request("GET", "/").body
    assert b'id="pgx_guide_link"' in page and page.count(b'id="help_link"') == 1
    assert (app.brat.root / "index.xhtml").read_bytes() != page  # served with the link; brat's file unchanged


def test_guides_per_person(fresh: Demo) -> None:
    app = ServeApp(fresh.root)
    anonymous = Client(app)
    assert anonymous.request("GET", "/guide/phase1/alice/").status == "403 Forbidden"
    alice = Client(app)
    alice.login("alice", fresh.passwords["alice"])
    page = alice.request("GET", "/guide/phase1/alice/")
    assert page.status == "200 OK" and b"Annotator guide" in page.body
    assert alice.request("GET", "/guide/phase1/bob/").status == "404 Not Found"
    assert alice.request("GET", "/guide/phase2/dave/").status == "404 Not Found"
    assert b"/guide/phase1/alice/" in alice.request("GET", "/guide/").body


def test_path_of_absolute_collection_is_never_reached(fresh: Demo, tmp_path: Path) -> None:
    app = ServeApp(fresh.root)
    alice = Client(app)
    alice.login("alice", fresh.passwords["alice"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("secret", encoding="utf-8")
    reply = alice.ajax("getDocument", collection=str(outside) + "/", document="x")
    assert reply.refused and b"secret" not in reply.body


def test_saving_an_unchanged_document_changes_no_byte(fresh: Demo) -> None:
    app = ServeApp(fresh.root)
    alice = Client(app)
    alice.login("alice", fresh.passwords["alice"])
    doc = fresh.editable["alice"]
    ann = fresh.root / "phase1" / "alice" / f"{doc}.ann"
    with ann.open("a", encoding="utf-8") as fh:
        fh.write("N1\tReference T1 PubChem:54678486\tWarfarin\n#1\tAnnotatorNotes T1\tkept as it is\n")
    before = tree_digest(fresh.root)
    assert not alice.ajax("getDocument", collection="/phase1/alice/", document=doc).refused
    # brat's span dialog pressed OK without a change: the client sends T1 as it is (type, notes, attributes,
    # normalizations)
    reply = alice.ajax("createSpan", collection="/phase1/alice/", document=doc, id="T1", offsets="[[0,8]]",
                       type="Chemical", comment="kept as it is", attributes="{}",
                       normalizations='[["PubChem", "54678486", "Warfarin"]]')
    assert not reply.refused and reply.json.get("exception") is None
    after = tree_digest(fresh.root)
    assert {k: v for k, v in after.items() if not k.startswith("locks/")} == {
        k: v for k, v in before.items() if not k.startswith("locks/")}  # nor a journal entry
