"""campaign finalize: finished phase-2 documents go to FINAL, the others are held back with file:line.

Covers: pipeline.brat.conf, pipeline.brat.standoff, pipeline.brat.validate, pipeline.campaign.finalize, pipeline.cli,
pipeline.cli.release_commands
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pipeline.brat.conf import annotation_conf
from pipeline.brat.standoff import parse_ann, read_directory
from pipeline.brat.validate import validate_collection
from pipeline.campaign.finalize import FinalizeError, finalize
from pipeline.cli import main
from tests.campaign.builders import ANN_300_1, SCHEMA, TEXTS, build_campaign, campaign_conf, done, span
from tests.conftest import shared_path


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_finalize_keeps_finished_documents_and_holds_back_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = build_campaign(tmp_path)
    final = tmp_path / "final"
    assert main(["campaign", "finalize", str(campaign), "--out", str(final)]) == 3  # WORK_LEFT
    err = capsys.readouterr().err
    # every held-back document is on stderr with file:line, naming what is left
    assert (f"held back 100_2: {campaign}/phase2/senior1/100_2.ann:3: R1 (Disputed_treats) is still disputed: "
            "retype it to treats to accept it or delete it to reject it") in err
    assert f"held back 200_1: {campaign}/phase2/senior1/200_1.ann:2: cannot parse line" in err
    # a senior's discard is a decision, not a problem
    assert "200_2" not in err

    docs = sorted(p.name for p in final.iterdir())
    assert docs == ["100_1.ann", "100_1.txt", "300_1.ann", "300_1.txt", "annotation.conf", "finalize.json",
                    "held_back.tsv", "kb_shortcuts.conf", "tools.conf", "visual.conf"]
    # metabolizes -> influences (config/export.yaml); R2 became identical to R1 and is merged
    assert (final / "100_1.ann").read_text() == (
        f"T1\tGene_or_protein {span('100_1', 'CYP2D6')}\tCYP2D6\n"
        f"T2\tChemical {span('100_1', 'codeine')}\tcodeine\n"
        # relation types are kept as annotated: metabolizes is not folded into influences
        "R1\tmetabolizes Arg1:T1 Arg2:T2\t\n"
        "R2\tinfluences Arg1:T1 Arg2:T2\t\n"
    )
    # the Composite presentation attribute and the Done marker are gone, the modality note stays
    assert (final / "300_1.ann").read_text() == ANN_300_1
    conf = (final / "annotation.conf").read_text()
    assert conf == annotation_conf(SCHEMA)
    assert "Disagreement" not in conf and "Discard" not in conf
    assert validate_collection(final) == []

    report = json.loads((final / "finalize.json").read_text())
    assert [h["document"] for h in report["held_back"]] == ["100_2", "200_1"]
    assert report["discarded"] == [{"document": "200_2", "senior": "senior2", "reasons": ["scope"]}]
    assert report["pending"] == []
    # 300_2: ann3 discarded it in phase 1 (a decision); nothing assigned is left unreviewed
    assert report["not_in_phase2"] == [] and report["discarded_in_phase1"] == ["300_2"]
    assert report["counts"].get("relations_merged", 0) == 0  # types kept as annotated: nothing becomes a twin
    assert report["counts"].get("relations_mapped", 0) == 0
    assert report["counts"]["attributes_removed:Composite"] == 1
    assert report["counts"]["done_markers_removed"] == 2
    assert report["counts"]["signed_off"] == 4
    tsv = (final / "held_back.tsv").read_text().splitlines()
    assert tsv[0] == "document\tsenior\tlocation\tkind\tmessage"
    assert "100_2\tsenior1\tphase2/senior1/100_2.ann:3\tdisagreement\t" in "\n".join(tsv)
    assert "200_2" not in "\n".join(tsv)

    # twice: the same bytes
    first = tree(final)
    assert main(["campaign", "finalize", str(campaign), "--out", str(final)]) == 3
    assert tree(final) == first


def test_accepting_the_last_mark_releases_the_document(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    ann = campaign / "phase2" / "senior1" / "100_2.ann"
    # the senior accepts the disputed relation as brat does it: retyped to the real type, the note untouched
    ann.write_text(ann.read_text().replace("Disputed_treats", "treats"))
    result = finalize(campaign, tmp_path / "final", SCHEMA)
    assert "100_2" in result.documents and "100_2" not in result.held_back
    # the merge's "who said what" text is not part of the corpus
    assert (tmp_path / "final" / "100_2.ann").read_text().endswith("R1\ttreats Arg1:T1 Arg2:T2\t\n")
    assert result.counts["dispute_texts_removed"] == 1


def test_changed_text_and_duplicates_are_held_back(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    (campaign / "phase2" / "senior1" / "100_1.txt").write_text("CYP2D6 metabolises codeine in poor metabolizers.")
    shutil.copy(campaign / "phase2" / "senior2" / "300_1.txt", campaign / "phase2" / "senior1" / "300_1.txt")
    shutil.copy(campaign / "phase2" / "senior2" / "300_1.ann", campaign / "phase2" / "senior1" / "300_1.ann")
    (campaign / "phase2" / "senior2" / "900_1.ann").write_text("T1\tChemical 0 4\tAbcd\n")  # no .txt
    (campaign / "phase2" / "senior2" / "900_2.txt").write_bytes(b"caf\xe9")  # not UTF-8
    result = finalize(campaign, tmp_path / "final", SCHEMA)
    assert result.documents == []
    assert [f.kind for f in result.held_back["900_1"]] == ["unreadable"]
    assert "900_1.txt" in str(result.held_back["900_1"][0])
    assert [f.kind for f in result.held_back["900_2"]] == ["unreadable"]
    assert [f.kind for f in result.held_back["100_1"]] == ["text_changed"]
    assert str(result.held_back["100_1"][0]) == ("phase2/senior1/100_1.txt:0: text differs from "
                                                 "phase1/ann1/100_1.txt")
    assert [f.kind for f in result.held_back["300_1"]] == ["duplicate"]


def test_finalize_keeps_relation_types_whatever_the_relation_map(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    mapping = tmp_path / "export.yaml"
    # a relation_map is a training view of `export`: finalize never applies it
    mapping.write_text("relation_map:\n  metabolizes: treats\n")
    assert main(["campaign", "finalize", str(campaign), "--out", str(tmp_path / "final"),
                 "--config", str(mapping)]) == 3
    report = json.loads((tmp_path / "final" / "finalize.json").read_text())
    assert "100_1" not in {h["document"] for h in report["held_back"]}
    assert "R1\tmetabolizes Arg1:T1 Arg2:T2" in (tmp_path / "final" / "100_1.ann").read_text()


def test_finalize_refuses_bad_input_before_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(FinalizeError, match="not an earlier output"):
        finalize(campaign, other, SCHEMA)
    assert (other / "notes.txt").read_text() == "mine"
    assert main(["campaign", "finalize", str(tmp_path / "nowhere"), "--out", str(tmp_path / "f")]) == 2
    assert "no phase-2 collections" in capsys.readouterr().err
    assert not (tmp_path / "f").exists()


def ann_content(directory: Path) -> dict[str, tuple[object, ...]]:
    docs, issues = read_directory(directory)
    assert issues == []
    return {
        d.name: (
            d.text,
            sorted((t.id, t.type, t.fragments, t.text.strip()) for t in d.textbounds),
            sorted((r.id, r.type, r.args) for r in d.relations),
            sorted((a.id, a.type, a.target, a.value) for a in d.attributes),
            sorted((n.id, n.type, n.target, n.text) for n in d.notes),
            sorted((n.id, n.target, n.db, n.db_id) for n in d.normalizations),
        )
        for d in docs
    }


def sign_off(collection: Path) -> None:
    """The senior's sign-off on every document: a Done marker on its first word."""
    for txt in sorted(collection.glob("*.txt")):
        word = re.search(r"\S+", txt.read_text(encoding="utf-8"))
        assert word is not None
        ann = txt.with_suffix(".ann")
        text = ann.read_text(encoding="utf-8") if ann.exists() else ""
        ann.write_text(text + ("" if not text or text.endswith("\n") else "\n")
                       + f"T99999\tDone {word.start()} {word.end()}\t{word.group()}\n", encoding="utf-8")


def test_gold_as_one_seniors_output_finalizes_to_the_gold(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    campaign = tmp_path / "campaign"
    senior = campaign / "phase2" / "senior1"
    shutil.copytree(gold, senior)
    (senior / "annotation.conf").write_text(campaign_conf(), encoding="utf-8")
    sign_off(senior)
    result = finalize(campaign, tmp_path / "final", SCHEMA)
    assert result.held_back == {}
    expected = ann_content(gold)
    assert len(expected) == len(result.documents) == 300
    assert ann_content(tmp_path / "final") == expected


@pytest.mark.slow  # three finalizes of the 300 real documents, each written whole (the gold one above stays fast)
def test_gold_with_the_preannotations_marks_accepted_gives_the_union(tmp_path: Path) -> None:
    """Phase 2 on real data: the gold plus, marked as the other annotator's, the PubTator entities it lacks."""
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    pubtator = shared_path("data", "pgxcorpus-dev", "pubtator")
    campaign = tmp_path / "campaign"
    senior = campaign / "phase2" / "senior1"
    senior.mkdir(parents=True)
    (senior / "annotation.conf").write_text(campaign_conf(), encoding="utf-8")
    union: dict[str, set[tuple[str, tuple[tuple[int, int], ...]]]] = {}
    marked = 0
    generated: dict[str, set[str]] = {}
    for txt in sorted(gold.glob("*.txt")):
        text = txt.read_text(encoding="utf-8")
        gold_ann = txt.with_suffix(".ann").read_text(encoding="utf-8")
        gold_doc, _ = parse_ann(txt.stem, text, gold_ann)
        pub_doc, _ = parse_ann(txt.stem, text, (pubtator / f"{txt.stem}.ann").read_text(encoding="utf-8"))
        have = {(t.type, t.sorted_fragments) for t in gold_doc.textbounds}
        extra = []
        for t in pub_doc.textbounds:
            mapped = SCHEMA.map_type("pubtator", t.type)
            if mapped is not None and (mapped, t.sorted_fragments) not in have:
                have.add((mapped, t.sorted_fragments))
                extra.append((mapped, t))
        union[txt.stem] = have
        lines = [gold_ann if gold_ann.endswith("\n") or not gold_ann else gold_ann + "\n"]
        generated[txt.stem] = {f"{kind}{900 + k}" for kind in "TA" for k in range(1, len(extra) + 1)}
        assert not generated[txt.stem] & set(gold_doc.ids())
        for k, (mapped, t) in enumerate(extra, 1):
            lines.append(f"T{900 + k}\t{mapped} {t.start} {t.end}\t{t.text}\n"
                         f"A{900 + k}\tDisagreement T{900 + k} ann2\n")
        marked += len(extra)
        shutil.copy(txt, senior / txt.name)
        (senior / f"{txt.stem}.ann").write_text("".join(lines), encoding="utf-8")
    assert marked > 100  # PubTator finds many entities the gold does not have
    sign_off(senior)
    unresolved = finalize(campaign, tmp_path / "final", SCHEMA)
    findings = [f for found in unresolved.held_back.values() for f in found]
    assert len(findings) == marked and {f.kind for f in findings} == {"disagreement"}
    assert sum(1 for v in union.values() if len(v) > 0) >= len(unresolved.held_back) > 0
    # the senior rejects every mark (deletes the marked annotations): the gold comes back
    rejected = tmp_path / "rejected"
    shutil.copytree(campaign, rejected)
    for ann in (rejected / "phase2" / "senior1").glob("*.ann"):
        ann.write_text("".join(line for line in ann.read_text(encoding="utf-8").splitlines(keepends=True)
                               if line.split("\t", 1)[0] not in generated[ann.stem]), encoding="utf-8")
    assert finalize(rejected, tmp_path / "final_rejected", SCHEMA).held_back == {}
    assert ann_content(tmp_path / "final_rejected") == ann_content(gold)
    # the senior accepts every mark: removes every Disagreement attribute
    for ann in senior.glob("*.ann"):
        ann.write_text("".join(line for line in ann.read_text(encoding="utf-8").splitlines(keepends=True)
                               if "\tDisagreement " not in line), encoding="utf-8")
    accepted = finalize(campaign, tmp_path / "final", SCHEMA)
    assert accepted.held_back == {} and len(accepted.documents) == 300
    final_docs, issues = read_directory(tmp_path / "final")
    assert issues == [] and validate_collection(tmp_path / "final") == []
    assert {d.name: {(t.type, t.sorted_fragments) for t in d.textbounds} for d in final_docs} == union
    gold_rel = {name: content[2] for name, content in ann_content(gold).items()}
    assert {d.name: sorted((r.id, r.type, r.args) for r in d.relations) for d in final_docs} == gold_rel


def test_a_seniors_discard_is_not_work_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit codes (issue 23): finalize exits 0 when the only documents kept out are its seniors' discards,
    3 (WORK_LEFT) while any other is held back."""
    campaign = build_campaign(tmp_path)
    final = tmp_path / "final"
    assert main(["campaign", "finalize", str(campaign), "--out", str(final)]) == 3
    report = json.loads((final / "finalize.json").read_text())
    discarded = [d["document"] for d in report["discarded"]]
    assert discarded
    assert report["held_back"] and not report["pending"]
    for held in report["held_back"]:  # the senior resolves what holds the document back and signs it off
        name = held["document"]
        signed = done(name, TEXTS[name].split()[0])
        (campaign / "phase2" / held["senior"] / f"{name}.ann").write_text(signed, encoding="utf-8")
    capsys.readouterr()
    assert main(["campaign", "finalize", str(campaign), "--out", str(tmp_path / "final2")]) == 0, \
        capsys.readouterr().err
    again = json.loads((tmp_path / "final2" / "finalize.json").read_text())
    assert [d["document"] for d in again["discarded"]] == discarded and again["held_back"] == []


def test_a_deleted_ann_is_held_back_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    (ann,) = sorted((campaign / "phase2").glob("*/300_1.ann"))
    ann.unlink()
    final = tmp_path / "final"
    assert main(["campaign", "finalize", str(campaign), "--out", str(final)]) == 3
    assert "held back 300_1:" in capsys.readouterr().err and not (final / "300_1.txt").exists()
    report = json.loads((final / "finalize.json").read_text())
    held = {h["document"]: h["problems"] for h in report["held_back"]}
    assert any("annotation file missing" in p for p in held["300_1"])
