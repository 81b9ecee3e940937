"""Concurrency on a threaded waitress server: two people's requests interleaved never see each other's
session or messages; two tabs of one person editing one document lose no edit, and every save is
journaled.

Covers: pipeline.campaign.journal, pipeline.serve.app
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from pipeline.campaign.journal import Journal
from pipeline.serve.app import ServeApp
from tests.serve.builders import Demo, build_served_campaign
from tests.serve.live import HttpClient, LiveServer


@pytest.fixture()
def demo(tmp_path: Path) -> Demo:
    return build_served_campaign(tmp_path)


class RecordingJournal(Journal):
    """The campaign's journal, also remembering each record() call (whatever the journal's storage)."""

    def __init__(self, campaign_dir: Path) -> None:
        super().__init__(campaign_dir)
        self.calls: list[tuple[str, str, str]] = []
        self._calls_lock = threading.Lock()

    def record(self, person: str, document: str, content: bytes, action: str, when: float | None = None) -> str:
        digest = super().record(person, document, content, action, when)
        with self._calls_lock:
            self.calls.append((person, document, hashlib.sha256(content).hexdigest()))
        return digest


def demo_text(demo: Demo, doc: str) -> str:
    return (demo.root / "phase1" / "alice" / f"{doc}.txt").read_text(encoding="utf-8")


def test_two_people_interleaved_never_share_a_session(demo: Demo) -> None:
    problems: list[str] = []
    with LiveServer(ServeApp(demo.root)) as live:
        def person(name: str, other: str) -> None:
            client = HttpClient(live.port)
            try:
                _person(client, name, other)
            except Exception as exc:  # an exception in a thread must fail the test
                problems.append(f"{name}: {exc!r}")
            finally:
                client.close()

        def _person(client: HttpClient, name: str, other: str) -> None:
            if True:
                assert "exception" not in client.login(name, demo.passwords[name])
                client.ajax("saveConf", config=json.dumps({"owner": name}))
                for i in range(40):
                    who = client.ajax("whoami")
                    if who.get("user") != name:
                        problems.append(f"{name} saw whoami {who.get('user')}")
                    conf = client.ajax("loadConf")
                    if json.loads(conf.get("config", "{}")).get("owner") != name:
                        problems.append(f"{name} saw options {conf.get('config')}")
                    listing = client.ajax("getCollectionInformation", collection="/")
                    if [item[2] for item in listing["items"]] != [f"phase1/{name}"]:
                        problems.append(f"{name} saw collections {listing['items']}")
                    # a refused request: its message is this person's, and is answered to this person only
                    refused = client.ajax("getDocument", collection=f"/phase1/{other}/", document=f"x{i}")
                    texts = [m[0] for m in refused["messages"]]
                    if texts != [f"Access denied: /phase1/{other}/ is not one of your collections."]:
                        problems.append(f"{name} got messages {texts}")
                    doc = client.ajax("getDocument", collection=f"/phase1/{name}/", document=demo.editable[name])
                    if doc.get("messages") or doc.get("exception"):
                        problems.append(f"{name} got {doc.get('messages')} on their own document")

        threads = [threading.Thread(target=person, args=("alice", "bob")),
                   threading.Thread(target=person, args=("bob", "alice"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert problems == []


def test_two_tabs_of_one_person_lose_no_edit(demo: Demo) -> None:
    doc = demo.editable["alice"]
    ann = demo.root / "phase1" / "alice" / f"{doc}.ann"
    before = ann.read_text(encoding="utf-8").splitlines()
    journal = RecordingJournal(demo.root)
    with LiveServer(ServeApp(demo.root, journal=journal)) as live:
        first = HttpClient(live.port)
        first.login("alice", demo.passwords["alice"])
        second = HttpClient(live.port, cookie=first.cookie)  # a second tab: same session
        errors: list[str] = []

        def tab(client: HttpClient, starts: list[int]) -> None:
            try:
                _tab(client, starts)
            except Exception as exc:  # an exception in a thread must fail the test
                errors.append(repr(exc))

        def _tab(client: HttpClient, starts: list[int]) -> None:
            for start in starts:
                reply = client.ajax("createSpan", collection="/phase1/alice/", document=doc,
                                    offsets=f"[[{start},{start + 1}]]", type="Phenotype")
                if reply.get("exception") or reply.get("messages"):
                    errors.append(f"{start}: {reply.get('exception')} {reply.get('messages')}")

        # characters that are not spaces (brat trims spaces off a span)
        starts = [i for i in range(9, 28) if not demo_text(demo, doc)[i].isspace()]
        threads = [threading.Thread(target=tab, args=(first, starts[0::2])),
                   threading.Thread(target=tab, args=(second, starts[1::2]))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        first.close()
        second.close()
    assert errors == []
    after = ann.read_text(encoding="utf-8").splitlines()
    assert after[: len(before)] == before
    added = sorted(int(line.split("\t")[1].split()[1]) for line in after[len(before):])
    assert added == starts
    mine = [c for c in journal.calls if c[1] == f"phase1/alice/{doc}"]
    assert len(mine) == len(starts) and {c[0] for c in mine} == {"alice"}
    assert mine[-1][2] == hashlib.sha256(ann.read_bytes()).hexdigest()
