"""``pgx-corpus suggest-relations`` (pipeline.cli.suggest_commands).

Covers: pipeline.brat.conf, pipeline.brat.standoff, pipeline.campaign.conf, pipeline.cli,
pipeline.cli.suggest_commands, pipeline.schema
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.conf import annotation_conf
from pipeline.brat.standoff import parse_ann
from pipeline.campaign.conf import campaign_annotation_conf
from pipeline.schema import load_schema

PROJECT = Path(__file__).resolve().parents[2]
TEXT = ("CYP2C9 polymorphisms decrease warfarin clearance and increase the risk of bleeding, and VKORC1 variants "
        "did not alter warfarin sensitivity.")
ENTS = ("T1\tGene_or_protein 0 6\tCYP2C9\n"
        "T2\tPharmacokinetic_phenotype 30 48\twarfarin clearance\n"
        "T3\tDisease 74 82\tbleeding\n"
        "T5\tGene_or_protein 88 94\tVKORC1\n"
        "T6\tPharmacodynamic_phenotype 118 138\twarfarin sensitivity\n")


def _collection(tmp_path: Path, conf: bool = True) -> Path:
    col = tmp_path / "col"
    col.mkdir()
    if conf:
        # a phase-2 collection's: Done, Discard and the Disputed_ types
        conf_text = campaign_annotation_conf(annotation_conf(load_schema()), ("ann", "bob"))
        (col / "annotation.conf").write_text(conf_text, encoding="utf-8")
        (col / "visual.conf").write_text("[labels]\n", encoding="utf-8")
    docs = {
        # one relation already there (reversed, disputed types count): its pair gets no other
        "111_1": ENTS + "R3\tDisputed_influences Arg1:T2 Arg2:T1\t\n#4\tAnnotatorNotes T1\ta gene",
        "111_2": ENTS,  # no trailing newline handling is tested on 111_1 (none after the note)
        "111_3": ENTS + "T9\tDone 0 6\tCYP2C9\n",
        "111_4": ENTS + "T7\tChemical 0 3\tXYZ\n",  # the text column does not match: does not validate
        "111_5": ENTS + "no such line\n",  # does not parse
    }
    for name, ann in docs.items():
        (col / f"{name}.txt").write_text(TEXT, encoding="utf-8")
        (col / f"{name}.ann").write_text(ann, encoding="utf-8")
    (col / "notes.md").write_text("not copied", encoding="utf-8")
    return col


def _run(*args: str) -> int:
    return cli.main(["suggest-relations", *args])


def test_suggestions_are_appended_and_everything_else_copied_as_it_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    col = _collection(tmp_path)
    out = tmp_path / "out"
    assert _run(str(col), "--out", str(out)) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["documents"] == 5 and summary["documents_unchanged_bad"] == 2
    assert f"{col / '111_5.ann'}:6: cannot parse line" in captured.err
    assert f"{col / '111_4.ann'}:6:" in captured.err
    names = sorted(p.name for p in out.iterdir())
    assert "notes.md" not in names and "annotation.conf" in names and "visual.conf" in names
    for name in names:
        if not name.endswith(".ann"):
            assert (out / name).read_bytes() == (col / name).read_bytes()
    for unchanged in ("111_3.ann", "111_4.ann", "111_5.ann"):  # Done, invalid, unparsable
        assert (out / unchanged).read_bytes() == (col / unchanged).read_bytes()
    for name, largest_r, largest_note in (("111_1", 3, 4), ("111_2", 0, 0)):
        before = (col / f"{name}.ann").read_text(encoding="utf-8")
        after = (out / f"{name}.ann").read_text(encoding="utf-8")
        head = before if before.endswith("\n") else before + "\n"
        assert after.startswith(head)
        added = after[len(head):].splitlines()
        assert added, name
        rels = [line for line in added if line.startswith("R")]
        notes = [line for line in added if line.startswith("#")]
        assert len(rels) + len(notes) == len(added)
        assert [line.split("\t")[0] for line in rels] == [f"R{largest_r + i + 1}" for i in range(len(rels))]
        assert [line.split("\t")[0] for line in notes] == [f"#{largest_note + i + 1}" for i in range(len(notes))]
        assert all(line.split("\t")[2] in ("neg", "hyp", "hyp neg") for line in notes)
        doc, issues = parse_ann(name, TEXT, after)
        assert not issues
        pairs = [frozenset((r.arg("Arg1"), r.arg("Arg2"))) for r in doc.relations]
        assert len(pairs) == len(set(pairs)), "one relation per pair at most, either direction"
    # the same input gives the same bytes
    again = tmp_path / "again"
    assert _run(str(col), "--out", str(again)) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {p.name: p.read_bytes() for p in again.iterdir()}


def test_types_follow_the_collection_annotation_conf(tmp_path: Path) -> None:
    col = _collection(tmp_path)
    # a conf that allows only isAssociatedWith
    lines = (col / "annotation.conf").read_text(encoding="utf-8").splitlines()
    start, end = lines.index("[relations]"), next(i for i, x in enumerate(lines) if x == "[events]")
    kept = [x for x in lines[start + 1:end] if x.startswith(("isAssociatedWith", "<OVERLAP>", "#")) or not x.strip()]
    (col / "annotation.conf").write_text("\n".join(lines[:start + 1] + kept + lines[end:]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert _run(str(col), "--out", str(out)) == 0
    added = (out / "111_2.ann").read_text(encoding="utf-8").splitlines()[5:]
    types = {line.split("\t")[1].split()[0] for line in added if line.startswith("R")}
    assert types == {"isAssociatedWith"}


def test_refusals_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    col = _collection(tmp_path)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x", encoding="utf-8")
    assert _run(str(col), "--out", str(full)) == 2
    assert sorted(p.name for p in full.iterdir()) == ["x"]
    assert "not empty" in capsys.readouterr().err
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    assert _run(str(col), "--out", str(afile)) == 2
    assert _run(str(tmp_path / "missing"), "--out", str(tmp_path / "o1")) == 2
    assert not (tmp_path / "o1").exists()
    bad_rules = tmp_path / "relations.yaml"
    bad_rules.write_text("version: 1\nscorer: nowhere.json\n", encoding="utf-8")
    assert _run(str(col), "--out", str(tmp_path / "o2"), "--rules", str(bad_rules)) == 2
    assert "relations.yaml:2: cannot read the scorer" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()
    (tmp_path / "scorer.json").write_text('{"format": 0}', encoding="utf-8")
    bad_rules.write_text("version: 1\nscorer: scorer.json\n", encoding="utf-8")
    assert _run(str(col), "--out", str(tmp_path / "o3"), "--rules", str(bad_rules)) == 2
    assert "scorer.json" in capsys.readouterr().err
    assert not (tmp_path / "o3").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _run(str(col), "--out", str(empty)) == 0  # an empty DIR is fine


def test_without_annotation_conf_the_schema_decides(tmp_path: Path) -> None:
    col = _collection(tmp_path, conf=False)
    shutil.rmtree(col.parent / "out", ignore_errors=True)
    out = tmp_path / "out"
    assert _run(str(col), "--out", str(out)) == 0
    after = (out / "111_2.ann").read_text(encoding="utf-8")
    assert after.startswith(ENTS) and len(after.splitlines()) > 5
    # without the campaign's types, a Done mark does not validate: copied unchanged all the same
    assert (out / "111_3.ann").read_bytes() == (col / "111_3.ann").read_bytes()
