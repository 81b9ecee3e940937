"""Tests of pipeline.brat.harmonize.

Covers: pipeline.brat.harmonize, pipeline.brat.standoff, pipeline.cli, pipeline.cli.corpus_commands
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.harmonize import (
    DecisionError,
    ambiguity_report,
    apply_decisions,
    centroid_spans,
    harmonize,
    harmonize_documents,
    nesting_layers,
    read_decisions,
)
from pipeline.brat.standoff import BratDocument, TextBound, parse_ann, read_directory, write_document


def run_cli(*argv: str) -> int:
    return cli.main(list(argv))


@pytest.mark.parametrize(
    ("annotators", "threshold", "expected"),
    [
        # unanimous
        ([[(0, 5)], [(0, 5)], [(0, 5)]], 2, [(0, 5)]),
        # boundary disagreement: "big dog" vs "dog" x2 -> the part most annotators share
        ([[(0, 7)], [(4, 7)], [(4, 7)]], 2, [(4, 7)]),
        # the longer span wins when two annotators agree on it
        ([[(0, 7)], [(0, 7)], [(4, 7)]], 2, [(0, 7)]),
        # [AB] by one, [A][B] by two: the join between A and B has one vote, so two entities
        ([[(0, 2)], [(0, 1), (1, 2)], [(0, 1), (1, 2)]], 2, [(0, 1), (1, 2)]),
        # [A][B] by one, [AB] by two: the join has two votes, one entity
        ([[(0, 1), (1, 2)], [(0, 2)], [(0, 2)]], 2, [(0, 2)]),
        # three overlapping spans, each character voted by at least two: the centroid (2, 8)
        ([[(0, 6)], [(2, 8)], [(4, 10)]], 2, [(2, 8)]),
        # one vote only: dropped; threshold 1 is the union
        ([[(0, 5)], [], []], 2, []),
        ([[(0, 3)], [(5, 8)], []], 1, [(0, 3), (5, 8)]),
        # an annotator votes once even with two overlapping annotations of the type
        ([[(0, 5), (0, 3)], [], []], 2, []),
        # single-character entities need no join
        ([[(4, 5)], [(4, 5)], []], 2, [(4, 5)]),
    ],
)
def test_centroid(annotators: list, threshold: int, expected: list) -> None:  # type: ignore[type-arg]
    assert centroid_spans(annotators, threshold) == expected


def test_centroid_rejects_bad_threshold() -> None:
    with pytest.raises(ValueError):
        centroid_spans([[(0, 1)]], 0)


def d(ann: str, text: str = "big dog ate warfarin and aspirin") -> BratDocument:
    doc, issues = parse_ann("1_0", text, ann)
    assert not issues
    return doc


def test_per_type_votes_and_discontiguous() -> None:
    versions = [
        d("T1\tChemical 12 20\tx\nT2\tPhenotype 0 3;8 11\tx\n"),
        d("T1\tGene_or_protein 12 20\tx\nT2\tPhenotype 0 3;8 11\tx\n"),
        d("T1\tChemical 12 20\tx\nT2\tPhenotype 0 3\tx\n"),
        None,  # this annotator lacks the document: no votes
    ]
    out = harmonize_documents(versions, 2)
    assert [(t.id, t.type, t.fragments, t.text) for t in out] == [
        ("T1", "Phenotype", ((0, 3), (8, 11)), "big ate"),
        ("T2", "Chemical", ((12, 20),), "warfarin"),
    ]


def write(directory: Path, name: str, text: str, tbs: list[tuple[str, int, int]]) -> None:
    write_document(directory, BratDocument(
        name=name, text=text, textbounds=[TextBound(f"T{i}", t, ((s, e),), text[s:e]) for i, (t, s, e) in
                                          enumerate(tbs, 1)]))


def test_harmonize_directories_ambiguity_and_decisions(tmp_path: Path) -> None:
    text = "PTH and pth levels rose"
    write(tmp_path / "a", "1_0", text, [("Chemical", 0, 3), ("Gene_or_protein", 8, 11)])
    write(tmp_path / "b", "1_0", text, [("Chemical", 0, 3), ("Gene_or_protein", 8, 11), ("Phenotype", 8, 18)])
    write(tmp_path / "c", "1_0", text, [("Gene_or_protein", 0, 3), ("Gene_or_protein", 8, 11)])
    write(tmp_path / "c", "2_0", text, [("Chemical", 0, 3)])
    docs, report = harmonize([tmp_path / "a", tmp_path / "b", tmp_path / "c"], 2)
    assert report["documents"] == 2 and report["missing"][str(tmp_path / "a")] == ["2_0"]
    first = docs[0]
    assert [(t.type, t.fragments) for t in first.textbounds] == [("Chemical", ((0, 3),)),
                                                                 ("Gene_or_protein", ((8, 11),))]
    assert docs[1].textbounds == []
    amb = ambiguity_report(docs)
    assert amb == {"pth": {"Chemical": 1, "Gene_or_protein": 1}}

    decisions = tmp_path / "decisions.tsv"
    decisions.write_text("# term\taction\ttype\nPTH\tforce\tGene_or_protein\n")
    forced = apply_decisions(docs, read_decisions(decisions))
    assert [(t.id, t.type) for t in forced[0].textbounds] == [("T1", "Gene_or_protein"), ("T2", "Gene_or_protein")]
    assert ambiguity_report(forced) == {}

    yaml_file = tmp_path / "decisions.yaml"
    yaml_file.write_text("- {term: pth, action: drop, type: Chemical}\n- {term: levels, action: remove}\n")
    dropped = apply_decisions(docs, read_decisions(yaml_file))
    assert [(t.type, t.fragments) for t in dropped[0].textbounds] == [("Gene_or_protein", ((8, 11),))]

    removed = apply_decisions(docs, read_decisions_text(tmp_path, "pth\tremove\n"))
    assert removed[0].textbounds == []


def read_decisions_text(tmp_path: Path, content: str):  # type: ignore[no-untyped-def]
    p = tmp_path / "x.tsv"
    p.write_text(content)
    return read_decisions(p)


def test_decisions_keep_relations_of_kept_entities(tmp_path: Path) -> None:
    doc = d("T1\tChemical 12 20\twarfarin\nT2\tChemical 25 32\taspirin\nT3\tPhenotype 0 7\tbig dog\n"
            "R1\ttreats Arg1:T1 Arg2:T3\t\nR2\ttreats Arg1:T2 Arg2:T3\t\n#1\tAnnotatorNotes R2\thyp\n")
    out = apply_decisions([doc], read_decisions_text(tmp_path, "Aspirin\tremove\n"))[0]
    assert [(t.id, t.text) for t in out.textbounds] == [("T1", "big dog"), ("T2", "warfarin")]
    assert [(r.id, r.args) for r in out.relations] == [("R1", (("Arg1", "T2"), ("Arg2", "T1")))]
    assert out.notes == []


@pytest.mark.parametrize(
    ("content", "message"),
    [("pth\tdelete\n", "x.tsv:1: unknown action 'delete'"), ("pth\n", "x.tsv:1: expected term"),
     ("a\tremove\npth\tforce\n", "x.tsv:2: action force needs a type")],
)
def test_bad_decision_files(tmp_path: Path, content: str, message: str) -> None:
    with pytest.raises(DecisionError, match=message):
        read_decisions_text(tmp_path, content)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "PTH and pth levels rose"
    for name, tbs in (("a", [("Chemical", 0, 3)]), ("b", [("Chemical", 0, 3), ("Gene_or_protein", 8, 11)]),
                      ("c", [("Gene_or_protein", 8, 11)])):
        write(tmp_path / name, "1_0", text, tbs)
    (tmp_path / "c" / "1_0.ann").write_text((tmp_path / "c" / "1_0.ann").read_text() + "T9\tChemical 1\tbad\n")
    dirs = [str(tmp_path / n) for n in "abc"]
    assert run_cli("harmonize", *dirs, "--threshold", "2", "--out", str(tmp_path / "out"), "--ambiguity",
                   "--json") == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["kept"] == 2 and report["ambiguity"] == {"pth": {"Chemical": 1, "Gene_or_protein": 1}}
    assert "1_0.ann:2" in captured.err  # the bad line is reported, the run goes on
    out_docs, issues = read_directory(tmp_path / "out")
    assert not issues and [t.text for t in out_docs[0].textbounds] == ["PTH", "pth"]
    (tmp_path / "dec.tsv").write_text("pth\tforce\tChemical\n")
    assert run_cli("harmonize", *dirs, "--out", str(tmp_path / "out2"), "--ambiguity", "--decisions",
                   str(tmp_path / "dec.tsv")) == 0
    assert "After 1 decision(s): 0 ambiguous term(s) left" in capsys.readouterr().out
    (tmp_path / "bad.tsv").write_text("pth\tforce\n")
    assert run_cli("harmonize", *dirs, "--out", str(tmp_path / "out3"), "--decisions", str(tmp_path / "bad.tsv")) == 2


@pytest.mark.parametrize("entry", ["{term: [a, b], action: keep}", "{term: x, action: {a: 1}}",
                                   "{term: x, action: force, type: [Chemical]}"])
def test_yaml_decisions_of_the_wrong_type_name_the_file(tmp_path: Path, entry: str) -> None:
    from pipeline.brat.harmonize import DecisionError, read_decisions

    path = tmp_path / "decisions.yaml"
    path.write_text(f"- {entry}\n", encoding="utf-8")
    with pytest.raises(DecisionError, match=rf"^{path}: entry 1: \w+ must be a string"):
        read_decisions(path)


# --- nested spans of one type (issue 40 item 3) ----------------------------------------------------

NESTED = ("chemotherapy with carboplatin and cisplatin or paclitaxel ( Taxol )", (
    "T1\tChemical 0 29\tchemotherapy with carboplatin\nT2\tChemical 18 29\tcarboplatin\n"
    "T3\tChemical 34 43\tcisplatin\nT4\tChemical 47 67\tpaclitaxel ( Taxol )\nT5\tChemical 47 57\tpaclitaxel\n"
    "T6\tChemical 60 65\tTaxol\nT7\tPhenotype 0 12;30 33\tchemotherapy and\nT8\tPhenotype 4 8\tothe\n"
    "T9\tGene_or_protein 18 29\tcarboplatin\nT10\tGene_or_protein 18 22\tcarb\n"
    "T11\tGene_or_protein 20 33\trboplatin and\n"
))


def spans_of(docs: Sequence[BratDocument]) -> list[tuple[str, str, tuple[tuple[int, int], ...]]]:
    return sorted((doc.name, t.type, tuple(sorted(t.fragments))) for doc in docs for t in doc.textbounds)


@pytest.mark.parametrize("threshold", [1, 2, 3])
def test_three_identical_sets_with_nested_spans_of_one_type_come_back_whole(threshold: int) -> None:
    # nested Chemicals two deep, a Phenotype inside a discontiguous one, two crossing Gene_or_protein spans
    doc = d(NESTED[1], NESTED[0])
    counts: Counter[str] = Counter()
    out = harmonize_documents([doc, doc, doc], threshold, counts)
    assert spans_of([BratDocument("1_0", doc.text, textbounds=out)]) == spans_of([doc])
    assert counts["entities_kept"] == 11
    assert counts["nested_kept"] == 8  # T1 T2 T4 T5 T6 (Chemical), T9 T10 T11 (Gene_or_protein)


def test_a_nested_span_kept_when_enough_annotators_made_it_in_whatever_layer() -> None:
    text = "chemotherapy with carboplatin ."
    outer, inner = "T1\tChemical 0 29\tchemotherapy with carboplatin\n", "T2\tChemical 18 29\tcarboplatin\n"
    both, only_outer, only_inner = d(outer + inner, text), d(outer, text), d(inner, text)
    # inner is in layer 2 for the first annotator, layer 1 for the third: 2 annotators made it exactly
    out = harmonize_documents([both, only_outer, only_inner], 2)
    assert [t.fragments for t in out] == [((0, 29),), ((18, 29),)]
    # one annotator's nested span alone is not enough at threshold 2
    out = harmonize_documents([both, only_outer, only_outer], 2)
    assert [t.fragments for t in out] == [((0, 29),)]


def test_nesting_layers() -> None:
    assert nesting_layers([(18, 29), (0, 29), (0, 29), (30, 35), (20, 22), (25, 40)]) == [
        [(0, 29), (30, 35)], [(18, 29)], [(20, 22), (25, 40)]]
    assert nesting_layers([(0, 5), (5, 9)]) == [[(0, 5), (5, 9)]]  # touching spans do not overlap


@pytest.mark.parametrize(("corpus", "entities", "nested"), [("pgxcorpus-dev", 2178, 126),  # in the how-to
                                                             ("pgxcorpus-more", 2413, 197)])
def test_three_copies_of_the_gold_harmonize_to_the_gold(corpus: str, entities: int, nested: int) -> None:
    from tests.conftest import shared_path

    gold = shared_path("data", corpus, "gold")
    docs, _ = read_directory(gold)
    counts: Counter[str] = Counter()
    out, report = harmonize([gold, gold, gold], 2, counts)
    assert spans_of(out) == spans_of(docs)
    assert report["kept"] == sum(len(doc.textbounds) for doc in docs) == entities
    assert counts["nested_kept"] == nested
