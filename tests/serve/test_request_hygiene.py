"""Smaller defects of the served campaign (issue 35, item 6), on a live waitress server with the real brat:
log lines escape and cap request values, answers carry no server path, brat's client files have one URL
each and a long one is 404 (not 500), a save naming a missing annotation is refused with its line, and
requests brat would crash on get a clear refusal.  None of them changes a byte.

Covers: pipeline.brat.validate, pipeline.serve.app, pipeline.serve.logtext
"""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Iterator

import pytest

from pipeline.brat.validate import validate_collection
from pipeline.serve.app import ServeApp
from tests.serve.builders import Demo, build_served_campaign, tree_digest
from tests.serve.live import HttpClient, LiveServer


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return build_served_campaign(tmp_path_factory.mktemp("hygiene"))


@pytest.fixture(scope="module")
def live(demo: Demo) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(demo.root)) as server:
        yield server


@pytest.fixture()
def alice(live: LiveServer, demo: Demo) -> HttpClient:
    client = HttpClient(live.port)
    assert client.login("alice", demo.passwords["alice"]).get("exception") is None
    return client


def digest(demo: Demo) -> dict[str, str]:
    return {k: v for k, v in tree_digest(demo.root).items() if not k.startswith("locks/")}


def get(live: LiveServer, target: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=60)
    conn.putrequest("GET", target, skip_host=True)
    conn.putheader("Host", f"127.0.0.1:{live.port}")
    conn.endheaders()
    status = conn.getresponse().status
    conn.close()
    return status


def test_logged_request_values_are_escaped_and_capped(alice: HttpClient, demo: Demo,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    forged = "/phase1/alice/\n2026-01-01 INFO pipeline.serve.app login erin from 10.0.0.1\r\u2028x"
    before = digest(demo)
    alice.ajax("getDocument", collection=forged, document=demo.editable["alice"])
    alice.ajax("getDocument", collection="/phase1/alice/", document="d" * 200_000)
    alice.ajax("getDocument\nforged", collection="/phase1/alice/", document=demo.editable["alice"])
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("pipeline.serve")]
    assert len(lines) == 3
    for line in lines:
        assert "\n" not in line and "\r" not in line and "\u2028" not in line
        assert len(line) < 1200
    assert "\\x0a2026-01-01 INFO" in lines[0] and "\\x0d\\u2028x" in lines[0]
    assert "...[200000 characters]" in lines[1]
    assert "getDocument\\x0aforged" in lines[2]
    assert digest(demo) == before


def test_search_answers_name_the_collection_not_the_server_path(alice: HttpClient, demo: Demo) -> None:
    for action in ("searchTextInCollection", "searchTextInDocument", "searchEntityInCollection",
                   "searchNoteInCollection", "searchRelationInCollection"):
        answer = alice.ajax(action, collection="/phase1/alice/", document=demo.editable["alice"], text="Warfarin",
                            scope="collection", type="", concordancing="false", context_length="50",
                            text_match="word", match_case="false")
        assert not answer.get("exception"), (action, answer.get("messages"))
        assert answer["collection"] == "/phase1/alice/"
        assert str(demo.root) not in json.dumps(answer) and "/tmp" not in json.dumps(answer)


def test_brat_client_files_have_one_url_each_and_a_long_path_is_404(live: LiveServer) -> None:
    assert get(live, "/client/src/visualizer.js") == 200
    for variant in ("/client/src/visualizer.js/", "client/src/visualizer.js", "/client//src/visualizer.js",
                    "/client/src/./visualizer.js/"):
        assert get(live, variant) == 404, variant
    assert get(live, "/client/src/" + "a" * 8000) == 404
    assert get(live, "/static/" + "/".join(["b" * 250] * 30)) == 404


def test_a_comment_on_a_missing_annotation_is_refused_with_its_line(alice: HttpClient, demo: Demo) -> None:
    doc = demo.editable["alice"]
    before = digest(demo)
    answer = alice.ajax("createComment", collection="/phase1/alice/", document=doc, id="T99", comment="a note")
    assert answer["exception"] == "annotationSaveRefused"
    message = answer["messages"][0][0]
    assert f"{doc}.ann:3: #1: target T99 is not defined" in message and "previous version stays" in message
    assert digest(demo) == before
    assert [p for p in validate_collection(demo.root / "phase1" / "alice") if "not defined" in p.message] == []
    ok = alice.ajax("createComment", collection="/phase1/alice/", document=doc, id="T1", comment="a note")
    assert not ok.get("exception") and "AnnotatorNotes T1\ta note" in (
        demo.root / "phase1" / "alice" / f"{doc}.ann").read_text(encoding="utf-8")


@pytest.mark.parametrize(("action", "params", "said"), [
    ("searchEventInDocument", {}, "needs its args"),
    ("searchEventInCollection", {"scope": "collection"}, "needs its args"),
    ("createArc", {"origin": "T99", "target": "T1", "type": "isAssociatedWith"}, "No annotation T99"),
    ("createArc", {"origin": "T1", "target": "T98", "type": "isAssociatedWith"}, "No annotation T98"),
    ("deleteArc", {"origin": "T99", "target": "T1", "type": "isAssociatedWith"}, "No annotation T99"),
    ("splitSpan", {"id": "T99", "args": "[]"}, "No annotation T99"),
    ("undo", {"token": json.dumps({"action": "add_tb", "id": "T99"})}, "No annotation T99"),
    ("undo", {"token": "{}"}, "undo token"),
    ("undo", {"token": "not json"}, "undo token"),
])
def test_requests_brat_would_crash_on_are_refused(alice: HttpClient, demo: Demo, caplog: pytest.LogCaptureFixture,
                                                  action: str, params: dict[str, str], said: str) -> None:
    before = digest(demo)
    answer = alice.ajax(action, collection="/phase1/alice/", document=demo.editable["alice"], **params)
    assert answer["exception"] in ("invalidRequest", "annotationNotFound")
    assert said in answer["messages"][0][0] and "nothing" in answer["messages"][0][0]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert digest(demo) == before


def test_a_session_keeps_no_oversized_options(alice: HttpClient, demo: Demo) -> None:
    small = json.dumps({"abbrevsOn": True, "textBackgrounds": "striped"})
    assert not alice.ajax("saveConf", config=small).get("exception")
    answer = alice.ajax("saveConf", config="x" * 200_000)
    assert answer["exception"] is True and "larger than" in answer["messages"][0][0]
    assert alice.ajax("loadConf")["config"] == small
