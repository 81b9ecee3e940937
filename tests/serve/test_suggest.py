"""The "Suggest relations" button through the real app and the real brat code: the listing names it in
the person's writable phase-1 collection only; a press adds relations in brat's edit answer, saves
atomically, journals with the scorer's version and records each suggestion; no repeats; the undo token
takes the press back; ``campaign status`` counts kept, retyped and deleted.

Covers: pipeline.brat.standoff, pipeline.campaign.batches, pipeline.campaign.journal, pipeline.campaign.phase1,
pipeline.campaign.status, pipeline.campaign.suggestions, pipeline.campaign.users, pipeline.corpus.brat_export,
pipeline.documents, pipeline.nlp.relations.rules, pipeline.schema, pipeline.serve.app, pipeline.serve.policy,
pipeline.serve.suggest
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.brat.standoff import read_document
from pipeline.campaign.batches import prepare_batches
from pipeline.campaign.journal import Journal
from pipeline.campaign.layout import read_campaign
from pipeline.campaign.status import campaign_status, format_markdown
from pipeline.campaign.suggestions import read_records, records_path
from pipeline.campaign.users import create_users
from pipeline.corpus.brat_export import export_collection
from pipeline.documents import Annotation, SentenceRecord
from pipeline.schema import load_schema
from pipeline.serve.app import ServeApp
from pipeline.serve.policy import TAGGER_ID
from pipeline.serve.suggest import TAGGER
from tests.serve.builders import Client, tree_digest

SCHEMA = load_schema()
TEXT = "Carriers of rs1045642 had a higher risk of myopathy with simvastatin."
NAMES = ["200_1", "200_2", "201_1", "201_2"]
VARIANT = "T1\tGenomic_variation 12 21\trs1045642"
DISEASE = "T2\tDisease 43 51\tmyopathy"


@dataclass
class Camp:
    root: Path
    passwords: dict[str, str]
    doc: dict[str, str]  # annotator -> one of their documents


PRE = (Annotation(((12, 21),), "Genomic_variation", "pubtator", text="rs1045642"),
       Annotation(((43, 51),), "Disease", "pubtator", text="myopathy"))


def build_suggest_campaign(tmp: Path, pre: tuple[Annotation, ...] = PRE) -> Camp:
    """Two annotators on one sentence (by default rs1045642 and myopathy pre-annotated, simvastatin not),
    a senior, a manager."""
    records = [SentenceRecord(n.split("_")[0], int(n.split("_")[1]) - 1, TEXT, annotations=pre) for n in NAMES]
    coll = tmp / "coll"
    export_collection(records, coll, SCHEMA, Counter())
    roster = tmp / "roster.csv"
    roster.write_text("id,role,phase1\nalice,annotator,yes\nbob,annotator,yes\ndave,senior,no\n", encoding="utf-8")
    root = tmp / "campaign"
    prepare_batches(coll, roster, root, seed=5, counts=Counter())
    passwords = create_users(root, {"alice": ["annotator"], "bob": ["annotator"], "dave": ["senior"],
                                    "erin": ["manager"]})
    docs = {p: sorted(x.stem for x in (root / "phase1" / p).glob("*.txt"))[0] for p in ("alice", "bob")}
    assert read_campaign(root)["people"]
    return Camp(root, passwords, docs)


@pytest.fixture(scope="module")
def app_factory() -> type[ServeApp]:
    return ServeApp


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Camp:
    """The campaign, written once per module (its users' scrypt hashes are the slow part)."""
    return build_suggest_campaign(tmp_path_factory.mktemp("suggest"))


@pytest.fixture()
def camp(template: Camp, tmp_path: Path) -> Camp:
    """Each test's own copy of the module's campaign."""
    shutil.copytree(template.root.parent, tmp_path, dirs_exist_ok=True)
    return Camp(tmp_path / template.root.name, dict(template.passwords), dict(template.doc))


def _client(app: ServeApp, camp: Camp, person: str) -> Client:
    c = Client(app)
    assert not c.login(person, camp.passwords[person]).refused
    return c


def _ann(camp: Camp, person: str) -> Path:
    return camp.root / "phase1" / person / f"{camp.doc[person]}.ann"


def _press(c: Client, person: str, camp: Camp, tagger: str = TAGGER_ID) -> dict:
    reply = c.ajax("tag", collection=f"/phase1/{person}/", document=camp.doc[person], tagger=tagger)
    return reply.json


def test_button_listed_in_own_writable_phase1_collection_only(camp: Camp) -> None:
    app = ServeApp(camp.root)
    alice = _client(app, camp, "alice")
    assert alice.ajax("getCollectionInformation", collection="/phase1/alice/").json["ner_taggers"] == [TAGGER]
    root = alice.ajax("getCollectionInformation", collection="/").json
    assert not root.get("ner_taggers")
    erin = _client(app, camp, "erin")  # the manager reads phase 1, never edits it
    assert not erin.ajax("getCollectionInformation", collection="/phase1/alice/").json.get("ner_taggers")
    assert not (camp.root / "phase1" / "alice" / "tools.conf").exists() or \
        TAGGER_ID not in (camp.root / "phase1" / "alice" / "tools.conf").read_text(encoding="utf-8")


def test_press_suggests_saves_journals_records_and_never_repeats(camp: Camp) -> None:
    app = ServeApp(camp.root)
    alice = _client(app, camp, "alice")
    ann = _ann(camp, "alice")
    before = ann.read_text(encoding="utf-8")
    assert before == f"{VARIANT}\n{DISEASE}\n"
    # the annotator adds the chemical brat's build missed
    edit = alice.ajax("createSpan", collection="/phase1/alice/", document=camp.doc["alice"],
                      offsets="[[57,68]]", type="Chemical")
    assert not edit.json.get("exception"), edit.messages
    journal = Journal(camp.root)
    n_journal = len(journal.entries())
    answer = _press(alice, "alice", camp)
    assert not answer.get("exception"), answer["messages"]
    assert answer["action"] == "tag"
    assert answer["edited"] == [["R1"], ["R2"]]
    assert [m[0] for m in answer["messages"]] == ["2 relations suggested."]
    assert sorted(r[:3] for r in answer["annotations"]["relations"]) == [
        ["R1", "increases", [["Arg1", "T1"], ["Arg2", "T2"]]], ["R2", "treats", [["Arg1", "T3"], ["Arg2", "T2"]]]]
    assert answer["annotations"]["text"] == TEXT
    assert ann.read_text(encoding="utf-8").split("\n") == [
        VARIANT, DISEASE, "T3\tChemical 57 68\tsimvastatin",
        "R1\tincreases Arg1:T1 Arg2:T2\t", "R2\ttreats Arg1:T3 Arg2:T2\t", ""]
    entries = journal.entries()
    assert len(entries) == n_journal + 1 and entries[-1].action == "tag"
    line = json.loads(journal.log_bytes().splitlines()[-1])
    assert line["scorer"] == app.suggester.version and line["scorer"].startswith("relation_scorer.json@")
    token = json.loads(answer["undo"])
    recs = read_records(records_path(camp.root, "phase1/alice", camp.doc["alice"]))
    assert token["action"] == TAGGER_ID and {(r["press"], r["sha256"]) for r in recs} == {
        (token["press"], entries[-1].sha256)}
    assert [(r["type"], r["arg1"], r["arg2"], r["modality"], r["scorer"], r["person"]) for r in recs] == [
        ("increases", (((12, 21),), "Genomic_variation"), (((43, 51),), "Disease"), [], line["scorer"], "alice"),
        ("treats", (((57, 68),), "Chemical"), (((43, 51),), "Disease"), [], line["scorer"], "alice")]
    assert not any(p.is_relative_to(camp.root / "phase1") for p in (camp.root / "suggestions").rglob("*"))
    # pressing again with no edit between: no byte, no journal line, no record
    digest = tree_digest(camp.root)
    again = _press(alice, "alice", camp)
    assert again["edited"] == [] and [m[0] for m in again["messages"]] == ["No new relation to suggest here."]
    assert tree_digest(camp.root) == digest
    # retype one, delete the other, press again: neither comes back
    r1 = alice.ajax("createArc", collection="/phase1/alice/", document=camp.doc["alice"], origin="T1", target="T2",
                    old_target="T2", type="isAssociatedWith", old_type="increases")
    assert not r1.json.get("exception"), r1.messages
    r2 = alice.ajax("deleteArc", collection="/phase1/alice/", document=camp.doc["alice"], origin="T3", target="T2",
                    type="treats")
    assert not r2.json.get("exception"), r2.messages
    digest = tree_digest(camp.root)
    third = _press(alice, "alice", camp)
    assert third["edited"] == [] and tree_digest(camp.root) == digest
    assert ann.read_text(encoding="utf-8").split("\n") == [
        VARIANT, DISEASE, "T3\tChemical 57 68\tsimvastatin", "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t", ""]
    # campaign status: per person, kept / retyped / deleted; review and finalize never read the records
    status = campaign_status(camp.root)
    row = next(r for r in status["rows"] if r["person"] == "alice" and r["phase"] == 1)
    assert row["suggestions"] == {"kept": 0, "retyped": 1, "deleted": 1}
    bob = next(r for r in status["rows"] if r["person"] == "bob" and r["phase"] == 1)
    assert bob["suggestions"] == {"kept": 0, "retyped": 0, "deleted": 0}
    assert "| alice | 0 | 1 | 1 |" in format_markdown(status)


def test_changed_entity_may_be_suggested_again(camp: Camp) -> None:
    app = ServeApp(camp.root)
    alice = _client(app, camp, "alice")
    doc = camp.doc["alice"]
    assert _press(alice, "alice", camp)["edited"] == [["R1"]]
    alice.ajax("deleteArc", collection="/phase1/alice/", document=doc, origin="T1", target="T2", type="increases")
    assert _press(alice, "alice", camp)["edited"] == []
    # the disease's span changes: a new pair of entities
    moved = alice.ajax("createSpan", collection="/phase1/alice/", document=doc, id="T2", offsets="[[35,51]]",
                       type="Disease")
    assert not moved.json.get("exception"), moved.messages
    assert _press(alice, "alice", camp)["edited"] == [["R1"]]


def test_undo_takes_the_press_back(camp: Camp) -> None:
    app = ServeApp(camp.root)
    alice = _client(app, camp, "alice")
    ann = _ann(camp, "alice")
    before = ann.read_bytes()
    answer = _press(alice, "alice", camp)
    assert answer["edited"] == [["R1"]] and ann.read_bytes() != before
    undone = alice.ajax("undo", collection="/phase1/alice/", document=camp.doc["alice"], token=answer["undo"]).json
    assert not undone.get("exception"), undone["messages"]
    assert undone["annotations"]["relations"] == []
    assert ann.read_bytes() == before
    assert [e.action for e in Journal(camp.root).entries()][-2:] == ["tag", "undo"]
    assert read_records(records_path(camp.root, "phase1/alice", camp.doc["alice"])) == []
    # the same token again names a press already taken back: refused, nothing changes
    digest = tree_digest(camp.root)
    again = alice.ajax("undo", collection="/phase1/alice/", document=camp.doc["alice"], token=answer["undo"])
    assert again.refused and tree_digest(camp.root) == digest
    # taken back, the suggestion may be made again
    assert _press(alice, "alice", camp)["edited"] == [["R1"]]


def test_refused_presses_change_nothing(camp: Camp) -> None:
    app = ServeApp(camp.root)
    alice, bob, erin = (_client(app, camp, p) for p in ("alice", "bob", "erin"))
    digest = tree_digest(camp.root)
    assert Client(app).ajax("tag", collection="/phase1/alice/", document=camp.doc["alice"], tagger=TAGGER_ID).refused
    for c, person, tagger in ((alice, "alice", "x"), (alice, "alice", ""), (alice, "alice", "random")):
        reply = c.ajax("tag", collection=f"/phase1/{person}/", document=camp.doc[person], tagger=tagger)
        assert reply.refused and reply.messages == ["There is no such automatic annotation here."]
    for c in (bob, erin):
        assert c.ajax("tag", collection="/phase1/alice/", document=camp.doc["alice"], tagger=TAGGER_ID).refused
    get = alice.request("GET", "/ajax.cgi", {"action": "tag", "collection": "/phase1/alice/",
                                             "document": camp.doc["alice"], "tagger": TAGGER_ID})
    assert get.refused
    cross = Client(app, origin="http://evil.example")
    cross.cookie = alice.cookie
    assert cross.ajax("tag", collection="/phase1/alice/", document=camp.doc["alice"], tagger=TAGGER_ID).refused
    forged = json.dumps({"action": TAGGER_ID, "press": "0" * 64, "relations": [["R1", "x", "T1", "T2"]]})
    assert alice.ajax("undo", collection="/phase1/alice/", document=camp.doc["alice"], token=forged).refused
    assert tree_digest(camp.root) == digest


def test_press_p95_under_300_ms_on_one_sentence(camp: Camp) -> None:
    """A press on a one-sentence document, taken back each time so every press suggests."""
    app = ServeApp(camp.root)
    alice = _client(app, camp, "alice")
    times = []
    for _ in range(20):
        started = time.perf_counter()
        answer = _press(alice, "alice", camp)
        times.append(time.perf_counter() - started)
        assert answer["edited"] == [["R1"]]
        alice.ajax("undo", collection="/phase1/alice/", document=camp.doc["alice"], token=answer["undo"])
    times.sort()
    p95 = times[int(0.95 * len(times)) - 1]
    assert p95 <= 0.3, f"p95 {p95 * 1000:.0f} ms"


def test_read_only_document_refuses_the_press(camp: Camp) -> None:
    app = ServeApp(camp.root)
    alice = _client(app, camp, "alice")
    phase2 = camp.root / "phase2" / "dave"
    phase2.mkdir(parents=True)
    (phase2 / f"{camp.doc['alice']}.txt").write_text(TEXT, encoding="utf-8")  # as if merged by review
    digest = tree_digest(camp.root)
    reply = alice.ajax("tag", collection="/phase1/alice/", document=camp.doc["alice"], tagger=TAGGER_ID)
    assert reply.refused and "read-only" in reply.messages[0]
    assert tree_digest(camp.root) == digest
    assert read_document(camp.root / "phase1" / "alice" / f"{camp.doc['alice']}.txt")[0].relations == []


def test_review_finalize_and_release_never_read_the_records() -> None:
    """Only serve (writing) and status (counting) know the records (layout only names their directory): the corpus
    steps do not import them."""
    import pipeline.campaign as campaign_pkg

    base = Path(campaign_pkg.__file__).parent
    readers = sorted(p.relative_to(base).as_posix() for p in base.rglob("*.py")
                     if p.name not in ("suggestions.py", "layout.py")
                     and any(needle in p.read_text(encoding="utf-8")
                             for needle in ("campaign.suggestions", "SUGGESTIONS_DIR", '"suggestions"')))
    assert readers == ["status.py"]
    corpus_steps = [base / name for name in ("review.py", "finalize.py", "release_data.py", "publish.py", "merge.py")]
    corpus_steps += sorted((base / "release").glob("*.py"))
    assert len(corpus_steps) > 6
    for path in corpus_steps:
        assert "SUGGESTIONS_DIR" not in path.read_text(encoding="utf-8")


def test_serve_uses_the_campaigns_newest_scorer_that_loads(camp: Camp, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 36 item 4: after `campaign retrain`, the button suggests with the newest campaign scorer that
    loads (a broken newer one is logged by name and skipped), IN_USE says which, and the journal names it."""
    import logging
    import shutil

    from pipeline.nlp.relations.rules import DEFAULT_RULES, rule_files
    from pipeline.serve.suggest import RelationSuggester, load_resources

    models = camp.root / "models" / "relations"
    models.mkdir(parents=True)
    shutil.copyfile(rule_files(DEFAULT_RULES)[-1], models / "001.json")
    (models / "002.json").write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        app = ServeApp(camp.root)
    assert app.suggester is not None
    assert app.suggester.version.startswith("001.json@")
    assert (models / "IN_USE").read_text(encoding="utf-8").strip() == "001"
    assert any("002.json" in r.getMessage() for r in caplog.records)
    c = _client(app, camp, "alice")
    _press(c, "alice", camp)
    tags = [json.loads(line) for line in (camp.root / "journal" / "log.jsonl").read_text().splitlines()
            if json.loads(line)["action"] == "tag"]
    assert tags and all(t["scorer"].startswith("001.json@") for t in tags)
    # no campaign scorer: the shipped one
    shutil.rmtree(camp.root / "models")
    assert RelationSuggester(camp.root, app.journal, app.brat).version == load_resources().version
