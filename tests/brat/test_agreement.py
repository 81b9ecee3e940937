"""Tests of pipeline.brat.agreement.

Covers: pipeline.brat.agreement, pipeline.brat.matching, pipeline.brat.standoff, pipeline.cli,
pipeline.cli.corpus_commands, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.agreement import (
    RelationMention,
    agreement,
    entity_tally,
    preannotation_scores,
    relation_tally,
    table10_scores,
)
from pipeline.brat.matching import spans_overlap
from pipeline.brat.standoff import BratDocument, Relation, TextBound, write_document
from pipeline.documents import Annotation
from pipeline.schema import load_schema
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def schema():  # type: ignore[no-untyped-def]
    return load_schema()


def a(type_: str, *frags: tuple[int, int]) -> Annotation:
    return Annotation(tuple(sorted(frags)), type_, "gold")


def counts_of(tally, type_: str | None = None) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    if type_ is None:
        m = tally.micro()
        return m["tp"], m["fp"], m["fn"]
    return tally.tp[type_], tally.fp[type_], tally.fn[type_]


def greedy_partial(ref: list[Annotation], pred: list[Annotation]) -> int:
    """What a greedy first-come overlap matching finds (for contrast with the maximum matching)."""
    used: set[int] = set()
    tp = 0
    for r in ref:
        for j, p in enumerate(pred):
            if j not in used and r.type == p.type and spans_overlap(r.fragments, p.fragments):
                used.add(j)
                tp += 1
                break
    return tp


def test_maximum_matching_beats_greedy() -> None:
    ref = [a("Chemical", (0, 10)), a("Chemical", (8, 12))]
    pred = [a("Chemical", (5, 9)), a("Chemical", (0, 3))]
    assert greedy_partial(ref, pred) == 1  # greedy pairs (0,10) with (5,9) and strands (8,12)
    scores = table10_scores([(ref, pred)])
    assert (scores["partial_same"]["tp"], scores["partial_same"]["fp"], scores["partial_same"]["fn"]) == (2, 0, 0)
    assert scores["exact_same"]["tp"] == 0 and scores["exact_same"]["fn"] == 2


@pytest.mark.parametrize(
    ("ref", "pred", "expected"),
    [
        # exact same type; exact any; partial same; partial any  as (tp, fp, fn)
        ([a("Chemical", (0, 5))], [a("Chemical", (0, 5))], [(1, 0, 0)] * 4),
        ([a("Chemical", (0, 5))], [a("Disease", (0, 5))], [(0, 1, 1), (1, 0, 0), (0, 1, 1), (1, 0, 0)]),
        ([a("Chemical", (0, 5))], [a("Chemical", (2, 7))], [(0, 1, 1), (0, 1, 1), (1, 0, 0), (1, 0, 0)]),
        ([a("Chemical", (0, 5))], [a("Disease", (2, 7))], [(0, 1, 1), (0, 1, 1), (0, 1, 1), (1, 0, 0)]),
        # one long prediction overlapping two references: one-to-one, so one TP
        ([a("Chemical", (0, 3)), a("Chemical", (5, 8))], [a("Chemical", (0, 8))],
         [(0, 1, 2), (0, 1, 2), (1, 0, 1), (1, 0, 1)]),
        # discontiguous: exact needs every fragment, partial any shared character
        ([a("Phenotype", (0, 3), (10, 15))], [a("Phenotype", (0, 3), (10, 15))], [(1, 0, 0)] * 4),
        ([a("Phenotype", (0, 3), (10, 15))], [a("Phenotype", (10, 15))],
         [(0, 1, 1), (0, 1, 1), (1, 0, 0), (1, 0, 0)]),
        ([a("Phenotype", (0, 3), (10, 15))], [a("Phenotype", (4, 9))],  # in the gap: no overlap
         [(0, 1, 1), (0, 1, 1), (0, 1, 1), (0, 1, 1)]),
        # duplicates count once each (multiset), not as a set
        ([a("Chemical", (0, 5))], [a("Chemical", (0, 5)), a("Chemical", (0, 5))], [(1, 1, 0)] * 4),
        ([], [a("Chemical", (0, 5))], [(0, 1, 0)] * 4),
    ],
)
def test_table10_settings(ref: list[Annotation], pred: list[Annotation], expected: list[tuple[int, int, int]]) -> None:
    scores = table10_scores([(ref, pred)])
    got = [(scores[k]["tp"], scores[k]["fp"], scores[k]["fn"]) for k in ("exact_same", "exact_any", "partial_same",
                                                                         "partial_any")]
    assert got == expected


def test_table10_micro_average_and_per_type() -> None:
    docs = [
        ([a("Chemical", (0, 5)), a("Disease", (6, 9))], [a("Chemical", (0, 5))]),
        ([a("Chemical", (0, 5))], [a("Disease", (0, 5))]),
    ]
    s = table10_scores(docs)
    assert (s["exact_same"]["tp"], s["exact_same"]["fp"], s["exact_same"]["fn"]) == (1, 1, 2)
    assert s["exact_same"]["precision"] == pytest.approx(0.5)
    assert s["exact_same"]["recall"] == pytest.approx(1 / 3)
    assert s["exact_same"]["f1"] == pytest.approx(0.4)
    # any type: TP and FN under the reference type, FP under the predicted type
    assert s["per_type"]["exact_any"]["Chemical"]["tp"] == 2
    assert s["per_type"]["exact_any"]["Disease"]["fn"] == 1
    assert s["per_type"]["exact_same"]["Disease"] == {"tp": 0, "fp": 1, "fn": 1, "precision": 0.0, "recall": 0.0,
                                                      "f1": 0.0}


@pytest.mark.parametrize(
    ("ref_type", "pred_type", "expected"),
    [
        # type: (tp, fp, fn)
        ("Pharmacodynamic_phenotype", "Pharmacokinetic_phenotype",
         {"Phenotype": (1, 0, 0), "Pharmacodynamic_phenotype": (0, 0, 1), "Pharmacokinetic_phenotype": (0, 1, 0)}),
        ("Phenotype", "Pharmacodynamic_phenotype",  # too specific: false positive on the specific type
         {"Phenotype": (1, 0, 0), "Pharmacodynamic_phenotype": (0, 1, 0)}),
        ("Pharmacodynamic_phenotype", "Phenotype",  # missed specific type: false negative
         {"Phenotype": (1, 0, 0), "Pharmacodynamic_phenotype": (0, 0, 1)}),
        ("Limited_variation", "Haplotype",
         {"Genomic_factor": (1, 0, 0), "Genomic_variation": (1, 0, 0), "Limited_variation": (0, 0, 1),
          "Haplotype": (0, 1, 0)}),
        ("Chemical", "Disease", {"Chemical": (0, 0, 1), "Phenotype": (0, 1, 0), "Disease": (0, 1, 0)}),
    ],
)
def test_hierarchy(schema, ref_type: str, pred_type: str, expected: dict) -> None:  # type: ignore[no-untyped-def]
    for span, pred_span in (("exact", (0, 5)), ("partial", (2, 7))):
        tally = entity_tally([a(ref_type, (0, 5))], [a(pred_type, pred_span)], span=span, types="hierarchy",
                             schema=schema)
        assert {t: counts_of(tally, t) for t in tally.types()} == expected
    strict = entity_tally([a(ref_type, (0, 5))], [a(pred_type, (0, 5))], span="exact", types="strict")
    assert counts_of(strict) == (0, 1, 1)


def test_macro_average(schema) -> None:  # type: ignore[no-untyped-def]
    tally = entity_tally([a("Chemical", (0, 5)), a("Disease", (6, 9))], [a("Chemical", (0, 5))], span="exact",
                         types="strict")
    assert tally.macro()["f1"] == pytest.approx(0.5)  # Chemical 1.0, Disease 0.0
    assert tally.micro()["f1"] == pytest.approx(2 / 3)


def test_relations_direction_and_settings(schema) -> None:  # type: ignore[no-untyped-def]
    g, v, d = a("Gene_or_protein", (0, 6)), a("Limited_variation", (0, 9)), a("Chemical", (20, 28))
    ref = [RelationMention("metabolizes", g, d)]
    swapped = [RelationMention("metabolizes", d, g)]
    assert counts_of(relation_tally(ref, swapped, span="exact", types="strict", directed=True)) == (0, 1, 1)
    assert counts_of(relation_tally(ref, swapped, span="exact", types="strict", directed=False)) == (1, 0, 0)
    # arguments matched partially: (0,9) overlaps (0,6), but the types differ
    other_arg = [RelationMention("metabolizes", v, d)]
    assert counts_of(relation_tally(ref, other_arg, span="partial", types="strict", directed=True)) == (0, 1, 1)
    assert counts_of(relation_tally(ref, other_arg, span="partial", types="any", directed=True)) == (1, 0, 0)
    assert counts_of(relation_tally(ref, other_arg, span="exact", types="any", directed=True)) == (0, 1, 1)
    # hierarchy: entity types share Genomic_factor; relation types share influences and isAssociatedWith
    transports = [RelationMention("transports", v, d)]
    t = relation_tally(ref, transports, span="partial", types="hierarchy", directed=True, schema=schema)
    assert {k: counts_of(t, k) for k in t.types()} == {
        "influences": (1, 0, 0), "isAssociatedWith": (1, 0, 0), "metabolizes": (0, 0, 1), "transports": (0, 1, 0)}


def _write(
    directory: Path,
    name: str,
    text: str,
    tbs: list[tuple[str, str, int, int]],
    rels: tuple[tuple[str, str, str, str], ...] = (),
) -> None:
    doc = BratDocument(name=name, text=text,
                       textbounds=[TextBound(i, t, ((s, e),), text[s:e]) for i, t, s, e in tbs])
    doc.relations = [Relation(rid, rt, (("Arg1", a1), ("Arg2", a2))) for rid, rt, a1, a2 in rels]
    write_document(directory, doc)


def test_collections_pairwise_with_different_document_sets(tmp_path: Path, schema) -> None:  # type: ignore[no-untyped-def]
    text = "warfarin and CYP2C9"
    for ann in ("a", "b", "c"):
        _write(tmp_path / ann, "1_0", text, [("T1", "Chemical", 0, 8), ("T2", "Gene_or_protein", 13, 19)],
               (("R1", "influences", "T2", "T1"),))
    _write(tmp_path / "a", "2_0", text, [("T1", "Chemical", 0, 8)])
    _write(tmp_path / "c", "2_0", text, [("T1", "Disease", 0, 8)])
    (tmp_path / "b" / "bad.txt").write_text("x")
    (tmp_path / "b" / "bad.ann").write_text("T1\tChemical 0\tx\n")
    result = agreement([tmp_path / "a", tmp_path / "b", tmp_path / "c"], schema)
    assert [(p["reference"][-1], p["predicted"][-1]) for p in result["pairs"]] == [("a", "b"), ("a", "c"), ("b", "c")]
    ab = result["pairs"][0]
    assert ab["documents"] == {"common": 1, "only_reference": ["2_0"], "only_predicted": ["bad"], "text_mismatch": []}
    assert ab["entities"]["exact_strict"]["micro"]["f1"] == 1.0
    assert ab["relations"]["exact_strict_directed"]["micro"]["f1"] == 1.0
    ac = result["pairs"][1]
    assert ac["documents"]["common"] == 2
    assert (ac["entities"]["exact_strict"]["micro"]["tp"], ac["entities"]["exact_strict"]["micro"]["fp"]) == (2, 1)
    assert ac["entities"]["exact_any"]["micro"]["f1"] == 1.0
    assert len(result["parse_issues"]) == 1 and "bad.ann:1" in result["parse_issues"][0]
    assert result["mean_f1"]["entities"]["exact_any"] == 1.0


def run_cli(*argv: str) -> int:
    return cli.main(list(argv))


def test_cli_json_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "warfarin and CYP2C9"
    _write(tmp_path / "pre", "1_0", text, [("T1", "Chemical", 0, 8), ("T2", "Gene", 13, 19)])
    _write(tmp_path / "final", "1_0", text, [("T1", "Chemical", 0, 8), ("T2", "Gene_or_protein", 13, 19)])
    assert run_cli("agreement", "--preannotation", str(tmp_path / "pre"), str(tmp_path / "final"), "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"][0]["scores"]["exact_same"]["f1"] == 1.0  # Gene mapped to Gene_or_protein
    assert run_cli("agreement", str(tmp_path / "final"), str(tmp_path / "pre")) == 0
    out = capsys.readouterr().out
    assert "| exact_strict | 1 | 1 | 1 | 50.0 | 50.0 | 50.0 |" in out
    assert run_cli("agreement", str(tmp_path / "final")) == 2


@pytest.mark.slow  # the real dev gold
def test_dev_subset_table10_reference_figures(schema) -> None:  # type: ignore[no-untyped-def]
    dev = shared_path("data", "pgxcorpus-dev")
    r = preannotation_scores(dev / "pubtator", [dev / "gold"], schema)
    s = r["results"][0]["scores"]
    assert r["results"][0]["documents"]["common"] == 300
    got = [round(100 * s[k]["f1"], 1) for k in ("exact_same", "exact_any", "partial_same", "partial_any")]
    assert got == [59.8, 62.0, 66.0, 71.3]
    gold_vs_gold = agreement([dev / "gold", dev / "gold"], schema)
    assert all(v == 1.0 for v in gold_vs_gold["mean_f1"]["entities"].values())
    assert all(v == 1.0 for v in gold_vs_gold["mean_f1"]["relations"].values())


def test_undefined_agreement_scores_are_null(tmp_path: Path) -> None:
    from pipeline.brat.agreement import Tally, format_agreement, mean_defined, prf

    assert prf(0, 0, 0) == {"tp": 0, "fp": 0, "fn": 0, "precision": None, "recall": None, "f1": None}
    assert prf(0, 0, 2)["precision"] is None and prf(0, 0, 2)["f1"] == 0.0
    assert Tally().macro() == {"precision": None, "recall": None, "f1": None}
    tally = Tally()
    tally.fn["Chemical"] += 1  # precision undefined for Chemical; defined for Disease
    tally.tp["Disease"] += 1
    assert tally.macro() == {"precision": 1.0, "recall": 0.5, "f1": 0.5}
    assert mean_defined([None, None]) is None and mean_defined([None, 0.5, 1.0]) == 0.75
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "d.txt").write_text("abc", encoding="utf-8")
        (tmp_path / name / "d.ann").write_text("", encoding="utf-8")
    result = agreement([tmp_path / "a", tmp_path / "b"], load_schema())
    assert result["pairs"][0]["entities"]["exact_strict"]["micro"]["f1"] is None
    assert result["mean_f1"]["entities"]["exact_strict"] is None
    assert "| exact_strict | 0 | 0 | 0 | n/a | n/a | n/a | n/a |" in format_agreement(result)


def test_modality_agreement_on_matched_relations(tmp_path: Path, schema, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """Modality is not part of a relation match; its agreement on the matched relations is its own figure."""
    text = "warfarin and CYP2C9 and VKORC1"
    tbs = [("T1", "Chemical", 0, 8), ("T2", "Gene_or_protein", 13, 19), ("T3", "Gene_or_protein", 24, 30)]
    rels = (("R1", "influences", "T2", "T1"), ("R2", "influences", "T3", "T1"))
    _write(tmp_path / "a", "1_0", text, tbs, rels)
    _write(tmp_path / "b", "1_0", text, tbs, rels)
    # a: R1 negated by a whole token ("not"), R2 plain; b: R1 "neg", R2 "hypertension ..." (free text, no modality)
    with open(tmp_path / "a" / "1_0.ann", "a") as fh:
        fh.write("#1\tAnnotatorNotes R1\tnot\n")
    with open(tmp_path / "b" / "1_0.ann", "a") as fh:
        fh.write("#1\tAnnotatorNotes R1\tneg\n#2\tAnnotatorNotes R2\thypertension noted\n")
    result = agreement([tmp_path / "a", tmp_path / "b"], schema)
    pair = result["pairs"][0]
    assert pair["relations"]["exact_strict_directed"]["micro"]["f1"] == 1.0
    assert pair["relation_modality"] == {"setting": "exact_strict_directed", "matched": 2, "same_modality": 2,
                                         "agreement": 1.0, "pairs": {"Negated -> Negated": 1, "none -> none": 1}}
    with open(tmp_path / "b" / "1_0.ann", "a") as fh:
        fh.write("#3\tAnnotatorNotes R2\thyp\n")
    pair = agreement([tmp_path / "a", tmp_path / "b"], schema)["pairs"][0]
    assert (pair["relation_modality"]["same_modality"], pair["relation_modality"]["agreement"]) == (1, 0.5)
    assert pair["relation_modality"]["pairs"] == {"Negated -> Negated": 1, "none -> Hypothetical": 1}
    assert run_cli("agreement", str(tmp_path / "a"), str(tmp_path / "b")) == 0
    assert "1 of 2 matched relations have the same modality (50.0%)" in capsys.readouterr().out


def test_hierarchy_settings_without_a_schema_are_a_clear_error() -> None:
    g, d = a("Gene_or_protein", (0, 6)), a("Chemical", (20, 28))
    with pytest.raises(ValueError, match="needs a schema"):
        relation_tally([RelationMention("metabolizes", g, d)], [], span="exact", types="hierarchy", directed=True)
    with pytest.raises(ValueError, match="schema"):
        entity_tally([g], [d], span="exact", types="hierarchy")
