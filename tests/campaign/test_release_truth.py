"""Issue 24, part 4: a release that cannot state what is false.

Decisions must have taken effect in FINAL, the campaign and the build manifest must be FINAL's, the datasheet
accounts for every assigned document, the machine's provenance notes are not released, and ``--out`` is never
inside FINAL.  Each refusal exits 2 with one ``pgx-corpus release: ...`` line and writes nothing.

Covers: pipeline.campaign.finalize, pipeline.cli, pipeline.cli.release_commands
"""

from __future__ import annotations

import gzip
import json
import tarfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.campaign.finalize import finalize
from pipeline.cli import main
from tests.campaign.builders import SCHEMA
from tests.campaign.test_release import build_inputs, run_release

# what these tests read is the datasheet, the metadata and the refusals: the charts are drawn in test_release.py
pytestmark = pytest.mark.usefixtures("charts_not_drawn")


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    return build_inputs(tmp_path)


def _refusal(capsys: pytest.CaptureFixture[str]) -> str:
    """The one stderr line of a refused release."""
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("pgx-corpus release:")]
    assert len(lines) == 1, lines
    return lines[0]


def test_decisions_must_have_taken_effect_in_final(inputs: dict[str, Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    decisions = tmp_path / "phase3.yaml"
    decisions.write_text("retype:\n  - {term: thrombosis, from: Disease, to: Disease}\n"
                         "remove:\n  - {term: codeine, why: not in scope}\n")
    out = tmp_path / "rel"
    assert run_release(inputs, out) == 2  # the decisions were never applied to FINAL
    line = _refusal(capsys)
    assert "phase3.yaml: remove entry 1 has not taken effect in FINAL; it would still change 1 document(s): 100_1" \
        in line
    assert "retype entry 1" not in line  # a retype to the type it has already took effect
    assert not out.exists()
    assert main(["decisions", "apply", str(inputs["final"]), str(decisions)]) == 0
    capsys.readouterr()
    assert run_release(inputs, out) == 0
    readme = (out / "README.md").read_text()
    assert "homogenized in bulk (phase 3, decisions below)" in readme and "Applied in bulk" in readme
    # FINAL rebuilt by finalize after the decisions: the removed term is back, the release refuses again
    finalize(inputs["campaign"], inputs["final"], SCHEMA)
    assert run_release(inputs, tmp_path / "rel2") == 2
    assert "remove entry 1 has not taken effect" in _refusal(capsys)
    assert not (tmp_path / "rel2").exists()


def test_no_decisions_file_states_no_homogenization(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "rel"
    assert main(["release", str(inputs["final"]), "--out", str(out), "--campaign", str(inputs["campaign"])]) == 0
    readme = (out / "README.md").read_text()
    assert "in bulk" not in readme
    assert "no homogenization decisions file was given (`--decisions`), so none is stated" in readme


def test_campaign_must_be_finals(inputs: dict[str, Path], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other"
    (other / "phase1" / "x").mkdir(parents=True)
    (other / "manifest.csv").write_text("document,phase,annotator\n100_1,1,x\n900_1,1,x\n")
    out = tmp_path / "rel"
    assert main(["release", str(inputs["final"]), "--out", str(out), "--campaign", str(other)]) == 2
    assert "2 document(s) of FINAL are not documents of this campaign: 100_2, 300_1" in _refusal(capsys)
    assert not out.exists()
    # campaign.json is the source of truth when there is one: it assigns every document but 300_1
    entries = [{"document": n, "files": [n], "phase1": ["ann1", "ann2"], "phase2": "senior1"}
               for n in ("100_1", "100_2", "200_1")]
    (other / "campaign.json").write_text(json.dumps({"documents": entries}))
    assert main(["release", str(inputs["final"]), "--out", str(out), "--campaign", str(other)]) == 2
    assert "1 document(s) of FINAL are not documents of this campaign: 300_1" in _refusal(capsys)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["release", str(inputs["final"]), "--out", str(out), "--campaign", str(empty)]) == 2
    assert "not a campaign directory" in _refusal(capsys)
    assert not out.exists()


def test_manifest_must_be_finals_build(inputs: dict[str, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    manifest = json.loads(inputs["manifest"].read_text())
    # another build: its sampled sentences are other texts, its brat collection another one
    other_sampled = tmp_path / "other_sampled"
    other_sampled.mkdir()
    with gzip.open(other_sampled / "shard-000000.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"pmid": "100", "index": 0, "text": "Another sentence.", "start": 0}) + "\n")
    manifest["outputs"] = {"sampled": str(other_sampled)}
    other = tmp_path / "runs" / "other" / "manifest.json"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps(manifest))
    out = tmp_path / "rel"
    assert main(["release", str(inputs["final"]), "--out", str(out), "--manifest", str(other)]) == 2
    assert "3 document(s) of FINAL are not sentences of this build (read: sampled): 100_1, 100_2, 300_1" \
        in _refusal(capsys)
    manifest["outputs"] = {"brat": str(tmp_path / "gone")}
    other.write_text(json.dumps(manifest))
    assert main(["release", str(inputs["final"]), "--out", str(out), "--manifest", str(other)]) == 2
    assert "none of the build's outputs (brat, sampled, filtered) can be read" in _refusal(capsys)
    assert not out.exists()


def test_datasheet_accounts_for_every_assigned_document(inputs: dict[str, Path], tmp_path: Path) -> None:
    # 300_1 loses its senior's sign-off: pending, not released
    ann = inputs["campaign"] / "phase2" / "senior2" / "300_1.ann"
    ann.write_text(ann.read_text().replace("T3\tDone 0 9\tTamoxifen\n", ""))
    finalize(inputs["campaign"], inputs["final"], SCHEMA)
    out = tmp_path / "rel"
    assert main(["release", str(inputs["final"]), "--out", str(out), "--campaign", str(inputs["campaign"]),
                 "--manifest", str(inputs["manifest"])]) == 0
    acc = json.loads((out / "release.json").read_text())["campaign"]["accounting"]
    # 100_1, 100_2 released; 300_2 discarded in phase 1 (typo and a Discard without reason); 200_2 by its
    # senior (scope); 200_1 held back (a broken line); 300_1 pending a sign-off
    assert {k: acc[k] for k in ("assigned", "released", "discarded_phase1", "discarded_phase2", "held_back",
                                "pending_signoff", "pending_phase2", "not_accounted_for")} == {
        "assigned": 6, "released": 2, "discarded_phase1": 1, "discarded_phase2": 1, "held_back": 1,
        "pending_signoff": 1, "pending_phase2": 0, "not_accounted_for": 0}
    assert acc["discard_reasons_phase1"] == {"typo": 1, "unspecified": 1}
    assert acc["discard_reasons_phase2"] == {"scope": 1}
    readme = (out / "README.md").read_text()
    for row in ("| released | 2 |  |", "| discarded in phase 1 (by an annotator, never reviewed) | 1 | typo 1, "
                "unspecified 1 |", "| discarded in phase 2 (by the senior) | 1 | scope 1 |",
                "| held back (unresolved or invalid) | 1 |  |", "| pending: not signed off by the senior | 1 |  |",
                "| pending: not in phase 2 yet | 0 |  |", "| **assigned** | **6** |  |"):
        assert row in readme, row
    assert "none 1" not in readme and "not accounted for" not in readme


def test_machine_notes_are_not_released(inputs: dict[str, Path], tmp_path: Path) -> None:
    ann = inputs["final"] / "100_1.ann"
    ann.write_text(ann.read_text()
                   + "#1\tAnnotatorNotes T2\tsource=ontology; class=CHEBI:16714; rule=chebi; key=19-26\n"
                   + "#2\tAnnotatorNotes T1\tann1: source=pubtator,ontology; ann2: check the gene name\n")
    out = tmp_path / "rel"
    assert main(["release", str(inputs["final"]), "--out", str(out)]) == 0
    info = json.loads((out / "release.json").read_text())
    assert info["machine_notes"] == {"dropped": 1, "trimmed": 1}
    released = (out / "brat" / "100_1.ann").read_text()
    assert "source=" not in released and "ann2: check the gene name" in released
    texts = [p.read_text() for p in out.rglob("*") if p.suffix in (".ann", ".xml", ".json", ".pubtator", ".conll")]
    assert texts and not any("source=" in t for t in texts)
    with tarfile.open(out / "brat.tar.gz") as tar:
        member = tar.extractfile("corpus/100_1.ann")  # no --name: the archive root is "corpus"
        assert member is not None and b"source=" not in member.read()
    rows = [str(r) for p in (out / "hf").rglob("*.parquet") for r in pq.read_table(p).to_pylist()]
    assert rows and not any("source=" in r for r in rows) and any("check the gene name" in r for r in rows)


def test_out_inside_final_is_refused(inputs: dict[str, Path], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    final = inputs["final"]
    before = sorted(p.name for p in final.iterdir())
    assert main(["release", str(final), "--out", str(final / "release")]) == 2
    assert "the release directory is inside FINAL" in _refusal(capsys)
    assert sorted(p.name for p in final.iterdir()) == before
    assert main(["release", str(final), "--out", str(final)]) == 2
    assert "inside FINAL" in _refusal(capsys)
    # FINAL inside the release directory (an empty one would otherwise be replaced with FINAL in it)
    holder = tmp_path / "holder"
    (holder / "final").mkdir(parents=True)
    for p in final.iterdir():
        (holder / "final" / p.name).write_bytes(p.read_bytes())
    assert main(["release", str(holder / "final"), "--out", str(holder)]) == 2
    assert "is inside the release directory" in _refusal(capsys)
    assert sorted(p.name for p in (holder / "final").iterdir()) == before
