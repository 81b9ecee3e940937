"""Tests of pipeline.brat.stats.

Covers: pipeline.brat.standoff, pipeline.brat.stats, pipeline.cli, pipeline.cli.corpus_commands, pipeline.documents,
pipeline.schema
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.standoff import TextBound, parse_ann, read_directory
from pipeline.brat.stats import brat_stats, collection_stats, format_markdown, nested_ids, pipeline_stats, write_outputs
from pipeline.documents import Annotation, Document, Sentence, SentenceRecord, to_dict
from pipeline.schema import load_schema
from tests.conftest import FIXTURES, shared_path

STATS_FIXTURE = FIXTURES / "corpus" / "stats"


@pytest.fixture(scope="module")
def schema():  # type: ignore[no-untyped-def]
    return load_schema()


def run_cli(*argv: str) -> int:
    return cli.main(list(argv))


def tb(tid: str, *frags: tuple[int, int]) -> TextBound:
    return TextBound(tid, "X", tuple(frags), "")


@pytest.mark.parametrize(
    ("textbounds", "expected"),
    [
        ([tb("A", (0, 10)), tb("B", (2, 5))], {"A"}),  # A wholly contains B; B is only contained
        ([tb("A", (0, 10)), tb("B", (0, 10))], set()),  # B is exactly A's fragment: not nesting
        ([tb("A", (0, 10)), tb("B", (0, 4))], {"A"}),  # sharing a boundary still counts
        ([tb("A", (0, 6)), tb("B", (4, 10))], set()),  # crossing is not nesting
        ([tb("A", (0, 5)), tb("B", (5, 9))], set()),  # touching (half-open)
        ([tb("A", (0, 3), (10, 15)), tb("B", (4, 9))], set()),  # B sits in the gap of a discontiguous entity
        ([tb("A", (0, 3), (10, 15)), tb("B", (10, 12))], {"A"}),  # one fragment of A contains B: both
        ([tb("A", (0, 3), (10, 15)), tb("B", (10, 15))], set()),  # B is exactly one fragment of A: not nesting
        ([tb("A", (0, 3), (10, 15)), tb("B", (0, 3), (10, 15))], set()),  # same fragments, no single one holds B
        ([tb("A", (0, 3), (10, 15)), tb("B", (2, 11))], set()),  # B spans both fragments: no single one holds it
        ([tb("A", (0, 20)), tb("B", (2, 4), (8, 12))], {"A"}),  # discontiguous B inside one fragment of A
        ([tb("A", (0, 20)), tb("B", (0, 3), (15, 20))], {"A"}),  # B's fragments at A's edges, B is not (0, 20)
        ([tb("A", (0, 20)), tb("B", (2, 8)), tb("C", (4, 6))], {"A", "B"}),  # C innermost is simple
        ([tb("A", (0, 5)), tb("A2", (0, 5)), tb("C", (1, 2))], {"A", "A2"}),  # duplicates each contain C
    ],
)
def test_nested_definition(textbounds: list[TextBound], expected: set[str]) -> None:
    assert nested_ids(textbounds) == expected


def _reference_category(t: TextBound, others: list[TextBound]) -> str:
    """A second, straightforward reading of the paper's rule, written independently of stats.nested_ids."""
    nested = False
    for fs, fe in t.fragments:
        for o in others:
            if o is t:
                continue
            inside = True
            for s, e in o.fragments:
                if s < fs or e > fe:
                    inside = False
            same = len(o.fragments) == 1 and o.fragments[0][0] == fs and o.fragments[0][1] == fe
            if inside and not same:
                nested = True
    disc = len(t.fragments) > 1
    if nested and disc:
        return "both"
    if nested:
        return "nested"
    return "discontiguous" if disc else "simple"


def test_table2_cells_on_dev_subset(schema) -> None:  # type: ignore[no-untyped-def]
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    r = brat_stats(gold, schema)
    expected: dict[str, Counter[str]] = {}
    for doc in read_directory(gold)[0]:
        for t in doc.textbounds:
            expected.setdefault(t.type, Counter())[_reference_category(t, doc.textbounds)] += 1
    for type_, row in r["entities"].items():
        assert {c: row[c] for c in ("simple", "nested", "discontiguous", "both")} == {
            c: expected[type_][c] for c in ("simple", "nested", "discontiguous", "both")
        }, type_
    # the figures of the 300 dev sentences under this rule (simple, nested, discontiguous, both)
    cats = ("simple", "nested", "discontiguous", "both")
    cells = {t: tuple(row[c] for c in cats) for t, row in r["entities"].items()}
    assert cells == {
        "Chemical": (487, 53, 0, 4),
        "Genomic_factor": (3, 27, 0, 0),
        "Gene_or_protein": (555, 6, 1, 0),
        "Genomic_variation": (7, 12, 0, 0),
        "Limited_variation": (64, 161, 32, 19),
        "Haplotype": (5, 31, 2, 0),
        "Phenotype": (87, 134, 24, 8),
        "Disease": (146, 50, 6, 12),
        "Pharmacodynamic_phenotype": (50, 122, 18, 7),
        "Pharmacokinetic_phenotype": (6, 38, 1, 0),
    }
    assert r["entity_totals"] == {
        "simple": 1410, "nested": 634, "discontiguous": 84, "both": 50, "total": 2178,
    }


def test_fixture_known_answers(schema) -> None:  # type: ignore[no-untyped-def]
    counts: Counter[str] = Counter()
    r = brat_stats(STATS_FIXTURE, schema, counts)
    assert r["entities"] == {
        "Chemical": {"simple": 3, "nested": 0, "discontiguous": 0, "both": 0, "total": 3},
        "Gene_or_protein": {"simple": 2, "nested": 0, "discontiguous": 0, "both": 0, "total": 2},
        "Limited_variation": {"simple": 0, "nested": 1, "discontiguous": 0, "both": 0, "total": 1},
        "Phenotype": {"simple": 1, "nested": 0, "discontiguous": 0, "both": 0, "total": 1},  # crosses T2 only
        "Pharmacodynamic_phenotype": {"simple": 0, "nested": 1, "discontiguous": 0, "both": 0, "total": 1},
        # 100_2 T3's fragment "Tamoxifen" is exactly the Chemical T1: discontiguous, not both
        "Pharmacokinetic_phenotype": {"simple": 0, "nested": 1, "discontiguous": 2, "both": 0, "total": 3},
    }
    assert r["entity_totals"] == {"simple": 6, "nested": 3, "discontiguous": 2, "both": 0, "total": 11}
    assert r["relations"] == {"isAssociatedWith": 1, "influences": 1, "decreases": 1, "metabolizes": 1}
    assert r["relation_total"] == 4
    assert r["relation_modality"] == {
        "isAssociatedWith": {"Hypothetical": 1},
        "influences": {"Hypothetical+Negated": 1},
        "decreases": {"Negated": 1},
        "metabolizes": {"none": 1},
    }
    assert r["sentences"] == {"total": 3, "with_all_key_groups": 1, "without_relation": 1, "with_relation": 2}
    assert r["abstracts"] == 2
    # the broken line is reported with file and line, and the rest of the file is still counted
    assert len(r["parse_issues"]) == 1 and r["parse_issues"][0].endswith(
        "200_0.ann:5: cannot parse line 'T9\\tChemical x y\\tbroken offsets': bad offsets 'x y'"
    )
    assert counts["parse_issues"] == 1 and counts["documents"] == 3 and counts["entities"] == 11
    assert r["text_mismatches"] == []


def test_modality_notes_typos_and_comments(schema) -> None:  # type: ignore[no-untyped-def]
    ann = (
        "T1\tChemical 0 1\ta\nT2\tChemical 2 3\tb\n"
        "R1\ttreats Arg1:T1 Arg2:T2\t\nR2\ttreats Arg1:T2 Arg2:T1\t\nR3\ttreats Arg1:T1 Arg2:T1\t\n"
        "#1\tAnnotatorNotes R1\thtp neg\n#2\tAnnotatorNotes R2\tin cells: a comment\n"
        "#3\tAnnotatorNotes R3\thypo\nA1\tNegated R3\n"
    )
    doc, issues = parse_ann("1_0", "a b", ann)
    assert not issues
    r = collection_stats([doc], schema)
    # htp is a whole modality token (Hypothetical): R1 is Hypothetical+Negated; R3 hypo + the Negated attribute
    assert r["relation_modality"] == {"treats": {"Hypothetical+Negated": 2, "none": 1}}
    assert r["modality_tokens"] == {"htp": {"modality": "Hypothetical", "relations": 1},
                                    "hypo": {"modality": "Hypothetical", "relations": 1},
                                    "neg": {"modality": "Negated", "relations": 1}}
    assert r["comment_notes"] == {"in cells: a comment": 1}
    # the paper's rule reads tokens starting with neg/hyp only: htp is not Hypothetical there
    assert r["relation_modality_paper"] == {"treats": {"Hypothetical+Negated": 1, "Negated": 1, "none": 1}}


@pytest.mark.parametrize(("note", "modality", "free"), [
    ("hypertension is discussed", "none", "hypertension is discussed"),  # never a prefix match
    ("not", "Negated", ""),
    ("NOT hypo", "Hypothetical+Negated", ""),
    ("neg | not sure", "Negated", "not sure"),
    ("hypothesis", "none", "hypothesis"),
])
def test_modality_whole_tokens(schema, note: str, modality: str, free: str) -> None:  # type: ignore[no-untyped-def]
    doc, issues = parse_ann("1_0", "a b", f"T1\tChemical 0 1\ta\nT2\tChemical 2 3\tb\n"
                            f"R1\ttreats Arg1:T1 Arg2:T2\t\n#1\tAnnotatorNotes R1\t{note}\n")
    assert not issues
    r = collection_stats([doc], schema)
    assert r["relation_modality"] == {"treats": {modality: 1}}
    assert r["comment_notes"] == ({free: 1} if free else {})


@pytest.mark.slow  # draws the charts
def test_outputs_markdown_csv_png_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("stats", str(STATS_FIXTURE), "--json", "--out", str(tmp_path / "out")) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)  # exactly one JSON object on stdout
    assert data["entities"]["Chemical"]["total"] == 3
    assert "200_0.ann:5" in captured.err
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["corpus.csv", "entities.csv", "entities.png", "modality_tokens.csv", "relations.csv",
                     "relations.png"]
    assert (tmp_path / "out" / "modality_tokens.csv").read_text().splitlines() == [
        "token,modality,relations", "hyp,Hypothetical,1", "neg,Negated,2"]
    assert (tmp_path / "out" / "entities.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = (tmp_path / "out" / "entities.csv").read_text().splitlines()
    assert rows[0] == "type,simple,nested,discontiguous,both,total"
    assert rows[-1] == "Total,6,3,2,0,11"
    assert run_cli("stats", str(STATS_FIXTURE)) == 0
    md = capsys.readouterr().out
    assert "| Pharmacokinetic_phenotype | 0 | 1 | 2 | 0 | 3 |" in md
    assert "| sentences without relation | 1 |" in md


def _write_stage(directory: Path, records: list) -> None:  # type: ignore[type-arg]
    directory.mkdir(parents=True)
    lines = "".join(json.dumps(to_dict(r)) + "\n" for r in records)
    with gzip.open(directory / "shard-000000.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(lines)


def test_pipeline_run(tmp_path: Path, schema) -> None:  # type: ignore[no-untyped-def]
    text = "Warfarin and CYP2C9 .\nMore ."
    doc = Document("123", "Warfarin and CYP2C9 .", text, sentences=(Sentence(0, 21), Sentence(22, 28)))
    mapped = doc.with_annotations([
        Annotation(((0, 8),), "Chemical", "pubtator", original_type="Chemical"),
        Annotation(((13, 19),), "Gene_or_protein", "pubtator", original_type="Gene"),
        Annotation(((0, 8), (13, 19)), "Phenotype", "ontology", ontology_class="Phenotype"),
    ])
    sent = SentenceRecord("123", 0, "Warfarin and CYP2C9 .")
    outputs = {}
    for stage, records in (("documents", [doc]), ("sentences", [doc]), ("mapped", [mapped]),
                           ("filtered", [sent]), ("sampled", [sent])):
        _write_stage(tmp_path / stage, records)
        outputs[stage] = str(tmp_path / stage)
    outputs["preannotated"] = str(tmp_path / "absent")
    run = tmp_path / "runs" / "abc"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({
        "outputs": outputs, "stages": {"documents": {"kept": 1}},
        "search": {"query": "warfarin[tiab]", "search_date": "2026-01-02", "count": 7, "pmids": 7}}))
    p = pipeline_stats(run)
    assert (p["query"], p["search_date"], p["pubmed_hits"]) == ("warfarin[tiab]", "2026-01-02", 7)
    assert p["abstracts"] == 1 and p["sentences"] == 2 and p["filtered"] == 1 and p["sampled"] == 1
    assert p["preannotations"] == {
        "ontology": {"Phenotype": {"total": 1, "discontiguous": 1}},
        "pubtator": {"Chemical": {"total": 1, "discontiguous": 0}, "Gene_or_protein": {"total": 1, "discontiguous": 0}},
    }
    assert p["preannotation_original_types"]["pubtator"] == {"Chemical -> Chemical": 1, "Gene -> Gene_or_protein": 1}
    assert p["stage_counts"] == {"documents": {"kept": 1}}
    assert p["missing"] == []  # "preannotated" is not read
    result = brat_stats(STATS_FIXTURE, schema)
    result["pipeline"] = p
    md = format_markdown(result)
    assert "| ontology | Phenotype | 1 | 1 |" in md
    assert "| pubmed_hits | 7 |" in md and "| abstracts | 1 |" in md
    assert (tmp_path / "csv" / "preannotations.csv") in write_outputs(result, tmp_path / "csv")


def test_dev_subset_is_consistent(schema) -> None:  # type: ignore[no-untyped-def]
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    r = brat_stats(gold, schema)
    t_lines = r_lines = 0
    for ann in gold.glob("*.ann"):
        for line in ann.read_text(encoding="utf-8").splitlines():
            t_lines += line.startswith("T")
            r_lines += line.startswith("R")
    assert r["parse_issues"] == []
    assert r["entity_totals"]["total"] == t_lines == 2178
    assert r["relation_total"] == r_lines == 920
    for row in r["entities"].values():
        assert row["total"] == row["simple"] + row["nested"] + row["discontiguous"] + row["both"]
    disc = sum(len(t.fragments) > 1 for d in read_directory(gold)[0] for t in d.textbounds)
    assert sum(row["discontiguous"] + row["both"] for row in r["entities"].values()) == disc == 134
    assert r["sentences"]["total"] == 300 and r["abstracts"] == 299
    assert r["sentences"]["without_relation"] + r["sentences"]["with_relation"] == 300
    assert sum(sum(m.values()) for m in r["relation_modality"].values()) == 920
    assert r["text_mismatches"] == []
