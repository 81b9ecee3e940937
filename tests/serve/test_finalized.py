"""Finalized wherever FINAL is: ``campaign finalize --out`` anywhere writes the campaign's finalize record
(read under each document's lock), and the live server, the manager's view and ``campaign status`` follow
it; campaigns finalized before the record (``CAMPAIGN_DIR/final``) still hold.

Covers: pipeline.campaign.finalize, pipeline.campaign.finalized, pipeline.campaign.locks, pipeline.campaign.status,
pipeline.cli, pipeline.cli.campaign_commands, pipeline.cli.release_commands, pipeline.serve.app
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from pipeline.campaign.finalize import finalize
from pipeline.campaign.finalized import RECORD_FORMAT, read_record
from pipeline.campaign.layout import FINALIZE_RECORD
from pipeline.campaign.locks import document_lock
from pipeline.campaign.status import campaign_status, format_markdown
from pipeline.cli import main
from pipeline.serve.app import ServeApp
from tests.serve.builders import SCHEMA, Demo, build_served_campaign, tree_digest
from tests.serve.live import HttpClient, LiveServer


@pytest.fixture()
def demo(tmp_path: Path) -> Demo:
    return build_served_campaign(tmp_path)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def finalize_outside(demo: Demo, out: Path) -> None:
    """The tutorial's `campaign finalize CAMPAIGN --out out/final`: FINAL outside the campaign, and no
    CAMPAIGN_DIR/final any more."""
    assert main(["campaign", "finalize", str(demo.root), "--out", str(out)]) in (0, 3)
    shutil.rmtree(demo.root / "final")


def test_finalize_writes_the_record(demo: Demo, tmp_path: Path) -> None:
    out = tmp_path / "out" / "final"
    finalize_outside(demo, out)
    data = json.loads((demo.root / FINALIZE_RECORD).read_text(encoding="utf-8"))
    ann = demo.root / "phase2" / "dave" / f"{demo.finalized}.ann"
    assert data == {"format": RECORD_FORMAT, "final": str(out.resolve()),
                    "documents": {demo.finalized: {"senior": "dave", "ann_sha256": sha(ann)}}}
    assert (out / f"{demo.finalized}.ann").is_file()
    assert (demo.root / FINALIZE_RECORD).stat().st_mode & 0o777 == 0o600
    # a second finalize to another --out updates it
    other = tmp_path / "elsewhere"
    finalize(demo.root, other, SCHEMA)
    record = read_record(demo.root)
    assert record is not None and record.final == other.resolve()
    assert set(record.documents) == {demo.finalized}


def test_finalize_reads_each_document_under_its_lock(demo: Demo, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock serve takes (absolute path) is the one finalize takes, given the campaign's relative path as
    the tutorial does (`campaign finalize out/campaign --out out/final`)."""
    ann = demo.root / "phase2" / "dave" / f"{demo.finalized}.ann"
    done = threading.Event()
    monkeypatch.chdir(demo.root.parent)

    def run() -> None:
        finalize(Path(demo.root.name), Path("out"), SCHEMA)
        done.set()

    with document_lock(demo.root, ann):
        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(1.5)
        assert not done.is_set()  # waiting for the lock the senior's save holds
        # the save finishes while finalize waits: finalize takes this version
        ann.write_text(ann.read_text(encoding="utf-8") + "#9\tAnnotatorNotes T90\tlast word\n", encoding="utf-8")
    worker.join(timeout=60)
    assert done.is_set()
    record = read_record(demo.root)
    assert record is not None and record.documents[demo.finalized].ann_sha256 == sha(ann)
    assert record.final == (demo.root.parent / "out").resolve()


def test_serve_keeps_finalized_documents_read_only_wherever_final_is(demo: Demo, tmp_path: Path) -> None:
    out = tmp_path / "out" / "final"
    finalize_outside(demo, out)
    with LiveServer(ServeApp(demo.root)) as live:
        dave = HttpClient(live.port)
        assert not dave.login("dave", demo.passwords["dave"]).get("exception")
        before = tree_digest(demo.root)
        reply = dave.ajax("createSpan", collection="/phase2/dave/", document=demo.finalized,
                          offsets="[[0,4]]", type="Phenotype")
        assert reply.get("exception") is True
        assert f"{demo.finalized} has been finalized" in reply["messages"][0][0]
        assert tree_digest(demo.root) == before
        listing = dave.ajax("getCollectionInformation", collection="/phase2/dave/")
        state = {item[2]: item[3] for item in listing["items"] if item[0] == "d"}
        assert state[demo.finalized].endswith("(read-only)")
        assert not state[demo.merged].endswith("(read-only)")  # merged, not finalized: dave edits it
        # the manager's read-only view shows the FINAL the record names
        erin = HttpClient(live.port)
        assert not erin.login("erin", demo.passwords["erin"]).get("exception")
        root = erin.ajax("getCollectionInformation", collection="/")
        assert ["c", None, "final"] in root["items"]
        final = erin.ajax("getCollectionInformation", collection="/final/")
        assert not final.get("exception"), final
        assert demo.finalized in {item[2] for item in final["items"] if item[0] == "d"}
        doc = erin.ajax("getDocument", collection="/final/", document=demo.finalized)
        assert not doc.get("exception") and doc["text"] == (out / f"{demo.finalized}.txt").read_text(encoding="utf-8")
        out_before = tree_digest(out)
        write = erin.ajax("createSpan", collection="/final/", document=demo.finalized, offsets="[[0,4]]",
                          type="Phenotype")
        assert write.get("exception") is True
        assert tree_digest(out) == out_before


def test_a_campaign_finalized_before_the_record_still_holds(demo: Demo) -> None:
    (demo.root / FINALIZE_RECORD).unlink()  # finalized to CAMPAIGN_DIR/final by an older finalize
    with LiveServer(ServeApp(demo.root)) as live:
        dave = HttpClient(live.port)
        dave.login("dave", demo.passwords["dave"])
        before = tree_digest(demo.root)
        reply = dave.ajax("createSpan", collection="/phase2/dave/", document=demo.finalized,
                          offsets="[[0,4]]", type="Phenotype")
        assert reply.get("exception") is True and "has been finalized" in reply["messages"][0][0]
        assert tree_digest(demo.root) == before
        erin = HttpClient(live.port)
        erin.login("erin", demo.passwords["erin"])
        assert ["c", None, "final"] in erin.ajax("getCollectionInformation", collection="/")["items"]


def test_an_unreadable_record_makes_phase2_read_only(demo: Demo) -> None:
    (demo.root / FINALIZE_RECORD).write_text("{not json", encoding="utf-8")
    with LiveServer(ServeApp(demo.root)) as live:
        dave = HttpClient(live.port)
        dave.login("dave", demo.passwords["dave"])
        before = tree_digest(demo.root)
        reply = dave.ajax("createSpan", collection="/phase2/dave/", document=demo.merged,
                          offsets="[[0,4]]", type="Phenotype")
        assert reply.get("exception") is True and "finalize record cannot be read" in reply["messages"][0][0]
        assert tree_digest(demo.root) == before


def test_status_lists_finalized_documents_changed_since(demo: Demo, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out" / "final"
    finalize_outside(demo, out)
    status = campaign_status(demo.root)
    assert status["finalized"] == {"final": str(out.resolve()), "documents": 1, "changed_since": [], "error": None}
    ann = demo.root / "phase2" / "dave" / f"{demo.finalized}.ann"
    ann.write_text(ann.read_text(encoding="utf-8") + "#9\tAnnotatorNotes T90\tafter finalize\n", encoding="utf-8")
    status = campaign_status(demo.root)
    assert status["finalized"]["changed_since"] == [{"document": demo.finalized, "senior": "dave",
                                                     "what": "changed"}]
    assert f"- phase2/dave/{demo.finalized}.ann: changed since finalize" in format_markdown(status)
    main(["campaign", "status", str(demo.root)])
    assert f"phase2/dave/{demo.finalized}.ann: changed since finalize" in capsys.readouterr().out
