"""``campaign import``: finished brat directories as phase-1 work, on synthetic cases and on the PGxCorpus
dev sentences (the gold as one annotator, the mapped PubTator pre-annotation as the other).

Covers: pipeline.brat.modality, pipeline.brat.standoff, pipeline.brat.validate, pipeline.campaign.assignments,
pipeline.campaign.conf, pipeline.campaign.documents, pipeline.campaign.importing, pipeline.campaign.phase1,
pipeline.campaign.review, pipeline.cli, pipeline.cli.import_commands, pipeline.cli.release_commands,
pipeline.cli.team_commands, pipeline.corpus.brat_export, pipeline.schema
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.modality import parse_note
from pipeline.brat.standoff import read_document
from pipeline.brat.validate import validate_collection
from pipeline.campaign import assignments as asg
from pipeline.campaign.conf import undisputed_type
from pipeline.campaign.documents import entity_keys, is_done
from pipeline.campaign.importing import import_work
from pipeline.campaign.layout import read_campaign
from pipeline.campaign.review import review
from pipeline.corpus.brat_export import export_collection
from pipeline.schema import load_schema
from tests.campaign.test_campaign_real import drop_marks_of, keys, pubtator_records
from tests.campaign.test_team import TEXT, make_collection
from tests.conftest import shared_path

SCHEMA = load_schema()
GENE = "T1\tGene_or_protein 29 35\tCYP2C9\n"
CHEM = "T2\tChemical 0 8\tWarfarin\n"


def work_dir(directory: Path, docs: dict[str, str], text: str = TEXT) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, ann in docs.items():
        (directory / f"{name}.txt").write_text(text, encoding="utf-8")
        (directory / f"{name}.ann").write_text(ann, encoding="utf-8")
    return directory


def test_import_holds_back_what_differs_or_does_not_validate(tmp_path: Path) -> None:
    reference = make_collection(tmp_path / "ref", ["100_1", "100_2", "100_3", "100_4"])
    a = work_dir(tmp_path / "a", {
        "100_1": GENE + CHEM + "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t\n#1\tAnnotatorNotes R1\thtp  not\n",
        "100_2": GENE, "100_3": GENE, "100_4": GENE})
    b = work_dir(tmp_path / "b", {"100_1": GENE, "100_3": "T1\tNoSuchType 29 35\tCYP2C9\n", "100_4": GENE})
    # b's 100_2 has another text
    work_dir(b, {"100_2": GENE}, text=TEXT.replace("lower", "LOWER"))
    root = tmp_path / "campaign"
    report = import_work(root, [("a", a), ("b", b)], SCHEMA, reference=reference, seniors=["s"], when="2026-01-01")
    held = {(h["person"], h["document"]): h["problems"] for h in report["held_back"]}
    assert set(held) == {("b", "100_2"), ("b", "100_3")}
    assert held[("b", "100_2")] == [f"{b / '100_2.txt'}:1: text differs from the campaign's text (first "
                                    "difference on this line)"]
    assert held[("b", "100_3")][0].startswith(f"{b / '100_3.ann'}:1:")
    # held back: b's collection keeps what was handed out (not finished), a's versions are in, finished
    assert not asg.file_started(root, "1", "b", "100_3")
    doc, _ = read_document(root / "phase1" / "a" / "100_1.txt")
    assert is_done(doc) and [parse_note(q.text).label for q in doc.notes] == ["Hypothetical+Negated"]
    assert [q.text for q in doc.notes] == ["hyp neg"]  # PGxCorpus note form read into the canonical grammar
    assert validate_collection(root / "phase1" / "a") == []
    campaign = read_campaign(root)
    assert campaign["provenance"]["guideline_version"] == "1"
    assert campaign["provenance"]["imported"] == {"a": str(a.resolve()), "b": str(b.resolve())}
    assert campaign["provenance"]["reference"] == str(reference.resolve())
    assert asg.replay(asg.read_history(root)) == set(asg.rows(campaign))
    counts: Counter[str] = Counter()
    result = review(root, SCHEMA, counts)
    assert result["documents"] == {"assigned": 4, "ready": 2, "discarded": 0, "held_back": 0, "pending": 2}

    # into the running campaign: b's corrected work comes in where b has not started
    fixed = work_dir(tmp_path / "b2", {"100_2": GENE, "100_3": GENE, "100_4": CHEM})
    report = import_work(root, [("b", fixed)], SCHEMA)
    assert sorted(i["document"] for i in report["imported"]) == ["100_2", "100_3"]
    assert [h["document"] for h in report["held_back"]] == ["100_4"]  # b had finished it: never overwritten
    assert "has started this document" in report["held_back"][0]["problems"][0]
    assert review(root, SCHEMA, Counter())["documents"]["ready"] == 4


def test_import_on_the_command_line_exits_3_with_held_back(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    a = work_dir(tmp_path / "a", {"100_1": GENE, "100_2": GENE})
    b = work_dir(tmp_path / "b", {"100_1": GENE, "100_2": "T1\tGene_or_protein 29 99\tCYP2C9\n"})
    root = tmp_path / "campaign"
    code = cli.main(["campaign", "import", str(root), "--work", f"a={a}", "--work", f"b={b}", "--senior", "s"])
    captured = capsys.readouterr()
    assert code == 3
    assert captured.err.count(str(b / "100_2.ann")) == 1
    assert "s\t" in captured.out and "a\t" in captured.out  # passwords of the new campaign, shown once


@pytest.mark.slow  # the real gold and PubTator (10 s of CPU)
def test_gold_and_pubtator_imported_round_trip(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    records = pubtator_records()
    mapped = tmp_path / "mapped"
    export_collection(records, mapped, SCHEMA, Counter())
    root = tmp_path / "campaign"
    report = import_work(root, [("gold", gold), ("pubtator", mapped)], SCHEMA, reference=mapped,
                         seniors=["senior"], when="2026-01-01T00:00:00+00:00")
    assert report["held_back"] == [] and report["left_out"] == []
    assert len(report["imported"]) == 600

    counts: Counter[str] = Counter()
    result = review(root, SCHEMA, counts)
    assert result["documents"]["ready"] == 300 and counts["added"] == 300
    senior = root / "phase2" / "senior"
    assert validate_collection(senior) == []
    totals: Counter[str] = Counter()
    modality: Counter[str] = Counter()
    for name in sorted(p.stem for p in gold.glob("*.txt")):
        merged, issues = read_document(senior / f"{name}.txt")
        assert issues == []
        g, _ = read_document(root / "phase1" / "gold" / f"{name}.txt")
        p, _ = read_document(root / "phase1" / "pubtator" / f"{name}.txt")
        original, _ = read_document(gold / f"{name}.txt")
        g_ents, g_rels = keys(g)
        p_ents, p_rels = keys(p)
        m_ents, m_rels = keys(merged)
        # the imported gold is the gold, its notes' modality read in the canonical grammar
        assert keys(original) == (g_ents, g_rels), name
        rel_ids = {r.id for r in original.relations}
        before = Counter(parse_note(q.text).label for q in original.notes if q.target in rel_ids)
        after = Counter(parse_note(q.text).label for q in g.notes if q.target in {r.id for r in g.relations})
        assert before == after, name
        modality.update(after)
        # each entity once in the merge; accept-all gives the union; rejecting one side gives the other
        assert max(m_ents.values(), default=1) == 1, name
        assert m_ents == g_ents | p_ents and m_rels == g_rels | p_rels, name
        assert keys(drop_marks_of(merged, "pubtator")) == (g_ents, g_rels), name
        assert keys(drop_marks_of(merged, "gold")) == (p_ents, p_rels), name
        totals["gold_entities"] += sum(g_ents.values())
        totals["pubtator_entities"] += sum(p_ents.values())
        totals["merged_entities"] += sum(m_ents.values())
        totals["agreed_entities"] += sum((g_ents & p_ents).values())
        totals["merged_relations"] += sum(m_rels.values())
        totals["marked"] += sum(1 for a in merged.attributes if a.type == "Disagreement")
        assert len(entity_keys(merged)) == sum(m_ents.values())
    print("import round trip:", dict(totals), "relation modality:", dict(modality))
    union = totals["gold_entities"] + totals["pubtator_entities"] - totals["agreed_entities"]
    assert totals["merged_entities"] == union
    assert totals["merged_entities"] == 2391  # the figure of the earlier walkthroughs
    assert modality["Hypothetical"] > 100 and modality["Negated"] > 10

    # finalize and release run on the imported campaign unchanged: the senior accepts every mark, signs off
    for ann in sorted(senior.glob("*.ann")):
        lines = [x for x in ann.read_text(encoding="utf-8").splitlines() if x and "\tDisagreement " not in x]
        lines = [accept_relation(x) for x in lines]  # a disputed relation is accepted by retyping it
        text = (senior / f"{ann.stem}.txt").read_text(encoding="utf-8")
        first = text.split()[0]
        lines.append(f"T99999\tDone {text.index(first)} {text.index(first) + len(first)}\t{first}")
        ann.write_text("\n".join(lines) + "\n", encoding="utf-8")
    final, released = tmp_path / "final", tmp_path / "release"
    assert cli.main(["campaign", "finalize", str(root), "--out", str(final)]) == 0
    assert cli.main(["release", str(final), "--out", str(released), "--campaign", str(root)]) == 0
    final_entities = 0
    for txt in sorted(final.glob("*.txt")):
        doc, issues = read_document(txt)
        assert issues == []
        final_entities += sum(keys(doc)[0].values())
    assert len(list(final.glob("*.txt"))) == 300 and final_entities == 2391


def accept_relation(line: str) -> str:
    """A relation line retyped from its generated ``Disputed_<type>`` to ``<type>``, as a senior does in brat."""
    if not line.startswith("R"):
        return line
    rid, rest = line.split("\t", 1)
    rtype, args = rest.split(" ", 1)
    return f"{rid}\t{undisputed_type(rtype) or rtype} {args}"
