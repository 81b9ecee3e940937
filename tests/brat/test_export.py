"""Tests of pipeline.brat.export.

Covers: pipeline.brat.export, pipeline.brat.standoff, pipeline.cli, pipeline.cli.corpus_commands,
pipeline.cli.train_commands, pipeline.schema
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from bioc import biocjson, biocxml

from pipeline import cli
from pipeline.brat.export import (
    ExportConfig,
    ExportConfigError,
    export,
    load_export_config,
    map_relations,
    parse_ratios,
    split_pmids,
    to_conll,
    to_pubtator,
    tokenize,
)
from pipeline.brat.standoff import parse_ann, read_directory
from pipeline.schema import load_schema
from tests.conftest import FIXTURES, shared_path

STATS_FIXTURE = FIXTURES / "corpus" / "stats"


@pytest.fixture(scope="module")
def schema():  # type: ignore[no-untyped-def]
    return load_schema()


@pytest.fixture(scope="module")
def fixture_docs():  # type: ignore[no-untyped-def]
    docs, issues = read_directory(STATS_FIXTURE)
    assert len(issues) == 1  # the fixture's deliberately broken line
    return docs


def run_cli(*argv: str) -> int:
    return cli.main(list(argv))


def test_default_config_maps_rare_relations_to_parent(schema) -> None:  # type: ignore[no-untyped-def]
    cfg = load_export_config()
    assert cfg.relation_map == {"metabolizes": "influences", "transports": "influences"}
    for child, parent in cfg.relation_map.items():
        assert parent is not None and schema.relation_parent[child] == parent


def test_map_relations_rewrites_and_drops(fixture_docs) -> None:  # type: ignore[no-untyped-def]
    counts: Counter[str] = Counter()
    out = map_relations(fixture_docs, {"metabolizes": "influences", "decreases": None}, counts)
    doc = next(d for d in out if d.name == "100_1")
    assert sorted(r.type for r in doc.relations) == ["influences", "isAssociatedWith"]
    assert doc.notes == []  # the note of the dropped relation goes with it
    assert counts == Counter({"relations_mapped": 1, "relations_mapped:metabolizes->influences": 1,
                             "relations_dropped": 1})
    assert any(r.type == "metabolizes" for r in fixture_docs[0].relations)  # inputs untouched


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_bioc_round_trip(tmp_path: Path, fixture_docs, schema, fmt: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "corpus"
    export(fixture_docs, fmt, out, schema, config=load_export_config())
    with out.open(encoding="utf-8") as fh:
        collection = biocxml.load(fh) if fmt == "bioc-xml" else biocjson.load(fh)
    assert [d.id for d in collection.documents] == ["100_1", "100_2", "200_0"]
    by_id = {d.id: d for d in collection.documents}
    for brat_doc in fixture_docs:
        passage = by_id[brat_doc.name].passages[0]
        assert passage.offset == 0 and passage.text == brat_doc.text
        assert len(passage.annotations) == len(brat_doc.textbounds)
        for ann in passage.annotations:
            tb = brat_doc.textbound(ann.id)
            assert tb is not None and ann.infons["type"] == tb.type
            assert sorted((loc.offset, loc.offset + loc.length) for loc in ann.locations) == sorted(tb.fragments)
            assert ann.text == " ".join(brat_doc.text[s:e] for s, e in sorted(tb.fragments))
    rels = {r.id: r for r in by_id["100_1"].passages[0].relations}
    assert rels["R3"].infons["type"] == "influences"  # metabolizes, post-processed
    assert rels["R1"].infons["Negated"] == "true" and "Hypothetical" not in rels["R1"].infons
    assert rels["R2"].infons["Hypothetical"] == "true"
    assert [(n.refid, n.role) for n in rels["R1"].nodes] == [("T4", "Arg1"), ("T2", "Arg2")]
    r200 = by_id["200_0"].passages[0].relations[0]
    assert (r200.infons["Negated"], r200.infons["Hypothetical"]) == ("true", "true")


def test_pubtator(fixture_docs, schema) -> None:  # type: ignore[no-untyped-def]
    counts: Counter[str] = Counter()
    text, _ = to_pubtator(fixture_docs[:2], schema, level="sentence", discontiguous="skip", counts=counts)
    blocks = text.split("\n\n")
    assert blocks[0].splitlines()[:3] == [
        "100_1|t|Warfarin response in CYP2C9 *3 carriers was decreased .",
        "100_1|a|",
        "100_1\t0\t8\tWarfarin\tChemical\t-\t100_1:T1",
    ]
    assert "Tamoxifen levels" not in text and counts["discontiguous_skipped"] == 1
    assert counts["entities"] == 8 and counts["entity_lines"] == 8  # what was written, not what was read
    split, _ = to_pubtator(fixture_docs[1:2], schema, level="sentence", counts=counts)
    assert "100_2\t0\t9\tTamoxifen\tPharmacokinetic_phenotype\t-\t100_2:T3" in split
    assert "100_2\t14\t20\tlevels\tPharmacokinetic_phenotype\t-\t100_2:T3" in split
    assert counts["discontiguous_entities"] == 1


def test_pubtator_identifiers(schema) -> None:  # type: ignore[no-untyped-def]
    doc, _ = parse_ann("5_1", "warfarin", "T1\tChemical 0 8\twarfarin\nN1\tReference T1 MESH:D014859\twarfarin\n")
    assert to_pubtator([doc], schema)[0].splitlines()[2] == "5\t0\t8\twarfarin\tChemical\tMESH:D014859\t5_1:T1"


def test_tokenize() -> None:
    text = "CYP2C9*3 (n=4), ok"
    assert [text[s:e] for s, e in tokenize(text)] == ["CYP2C9", "*", "3", "(", "n", "=", "4", ")", ",", "ok"]


def conll_labels(text: str) -> list[list[str]]:
    lines = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    return [[line[0], *line[3:]] for line in lines]


def test_conll_outermost_and_layers(fixture_docs) -> None:  # type: ignore[no-untyped-def]
    doc = next(d for d in fixture_docs if d.name == "100_1")
    counts: Counter[str] = Counter()
    out = to_conll([doc], counts=counts)
    assert out.startswith("# 100_1\nWarfarin\t0\t8\t")
    rows = conll_labels(out)
    assert rows[:6] == [
        ["Warfarin", "B-Pharmacodynamic_phenotype"], ["response", "I-Pharmacodynamic_phenotype"], ["in", "O"],
        ["CYP2C9", "B-Limited_variation"], ["*", "I-Limited_variation"], ["3", "I-Limited_variation"],
    ]
    assert counts["conll_not_in_first_layer"] == 3  # Warfarin, CYP2C9 and "response in" are hidden
    rows = conll_labels(to_conll([doc], scheme="layers"))
    assert rows[0] == ["Warfarin", "B-Pharmacodynamic_phenotype", "B-Chemical"]
    assert rows[2] == ["in", "O", "I-Phenotype"]
    assert rows[3] == ["CYP2C9", "B-Limited_variation", "B-Gene_or_protein"]
    disc = next(d for d in fixture_docs if d.name == "200_0")
    assert conll_labels(to_conll([disc])) == [
        ["CYP2D6", "B-Gene_or_protein"], ["poor", "B-Pharmacokinetic_phenotype"],
        # a second fragment one space after the first is a span of its own (issue 40: "poor metabolizers" as
        # one span would read back as a contiguous entity that was never annotated)
        ["metabolizers", "B-Pharmacokinetic_phenotype"], [".", "O"],
    ]


def test_conll_discontiguous_after_contiguous(fixture_docs) -> None:  # type: ignore[no-untyped-def]
    doc = next(d for d in fixture_docs if d.name == "100_2")
    rows = conll_labels(to_conll([doc], scheme="layers"))
    # first layer: contiguous entities, longest first; the discontiguous "Tamoxifen ... levels" comes later
    assert [r[1] for r in rows[:5]] == ["B-Chemical", "O", "B-Pharmacokinetic_phenotype",
                                        "I-Pharmacokinetic_phenotype", "I-Pharmacokinetic_phenotype"]
    # each fragment of the discontiguous entity opens with B-: never I- after O
    assert rows[0][2] == "B-Pharmacokinetic_phenotype" and rows[1][2] == "O"
    assert rows[2][2] == "B-Pharmacokinetic_phenotype"


def test_conll_never_gives_i_after_o_on_the_dev_gold() -> None:
    docs, _ = read_directory(shared_path("data", "pgxcorpus-dev", "gold"))
    for scheme in ("outermost", "layers"):
        text = to_conll(docs, scheme=scheme)
        columns: dict[int, str] = {}
        bad = 0
        for line in text.splitlines():
            if not line or line.startswith("# "):
                columns = {}
                continue
            for k, label in enumerate(line.split("\t")[3:]):
                if label.startswith("I-") and columns.get(k, "O") == "O":
                    bad += 1
                columns[k] = label
        assert bad == 0, scheme


def test_conll_misaligned_boundaries_are_counted() -> None:
    doc, _ = parse_ann("1_0", "CYP2C9*3 carriers", "T1\tGene_or_protein 0 5\tCYP2C\n")
    counts: Counter[str] = Counter()
    rows = conll_labels(to_conll([doc], counts=counts))
    assert rows[0] == ["CYP2C9", "B-Gene_or_protein"] and counts["conll_misaligned"] == 1


def test_conll_keeps_adjacent_fragments_apart() -> None:
    """Fragments one space apart are two spans (each opens with B-), never one span joining them."""
    doc, _ = parse_ann("1_1", "poor CYP2D6 metabolizers", "T1\tPhenotype 0 4;5 11\tpoor CYP2D6\n"
                       "T2\tGene_or_protein 12 24\tmetabolizers\n")
    counts: Counter[str] = Counter()
    for scheme in ("outermost", "layers"):
        rows = conll_labels(to_conll([doc], scheme=scheme, counts=counts))
        assert [r[1] for r in rows] == ["B-Phenotype", "B-Phenotype", "B-Gene_or_protein"], scheme
    assert counts["conll_fragments_joined"] == 0
    # fragments sharing a token cannot be told apart in BIO: one span, counted
    doc, _ = parse_ann("1_2", "CYP2D6 x", "T1\tGene_or_protein 0 3;4 6\tCYP D6\n")
    rows = conll_labels(to_conll([doc], counts=counts))
    assert rows[0] == ["CYP2D6", "B-Gene_or_protein"] and counts["conll_fragments_joined"] == 1


def test_split_pmids_grouped_seeded_and_ratios() -> None:
    pmids = [str(1000 + i) for i in range(50)]
    a = split_pmids(pmids, (60, 20, 20), seed=1)
    assert a == split_pmids(list(reversed(pmids)), (60, 20, 20), seed=1)  # input order does not matter
    assert a != split_pmids(pmids, (60, 20, 20), seed=2)
    assert [len(a[k]) for k in ("train", "dev", "test")] == [30, 10, 10]
    assert sorted(a["train"] + a["dev"] + a["test"]) == pmids
    assert [len(v) for v in split_pmids(pmids[:7], (60, 20, 20), seed=1).values()] == [4, 1, 2]


def test_splits_keep_abstracts_together(tmp_path: Path, fixture_docs, schema) -> None:  # type: ignore[no-untyped-def]
    summary = export(fixture_docs, "splits", tmp_path / "s", schema, ratios=(1, 0, 1), seed=5)
    lists = {k: (tmp_path / "s" / f"pmids_{k}.txt").read_text().split() for k in ("train", "dev", "test")}
    assert sorted(lists["train"] + lists["dev"] + lists["test"]) == ["100", "200"] and lists["dev"] == []
    where = {p: k for k, ps in lists.items() for p in ps}
    assert sorted(p.name for p in (tmp_path / "s" / where["100"]).glob("*.ann")) == ["100_1.ann", "100_2.ann"]
    assert summary["splits"][where["100"]]["documents"] == 2
    data = json.loads((tmp_path / "s" / "splits.json").read_text())
    assert data["seed"] == 5 and data["ratios"] == [1, 0, 1]
    split_docs, issues = read_directory(tmp_path / "s" / where["100"])
    assert not issues and {r.type for d in split_docs for r in d.relations} >= {"influences"}


@pytest.mark.parametrize("bad", ["60,20", "a,b,c", "-1,2,3", "0,0,0"])
def test_bad_ratios(bad: str) -> None:
    with pytest.raises(ExportConfigError):
        parse_ratios(bad)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.json"
    assert run_cli("export", str(STATS_FIXTURE), "--format", "bioc-json", "--out", str(out), "--json") == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["counts"]["relations_mapped"] == 1 and len(summary["parse_issues"]) == 1
    assert "200_0.ann:5" in captured.err
    with out.open() as fh:
        assert len(biocjson.load(fh).documents) == 3
    assert run_cli("export", str(STATS_FIXTURE), "--format", "splits", "--out", str(tmp_path / "sp"),
                   "--ratios", "50,0,50", "--seed", "3") == 0
    assert (tmp_path / "sp" / "pmids_test.txt").exists()
    assert run_cli("export", str(STATS_FIXTURE), "--format", "conll", "--out", str(tmp_path / "c"),
                   "--ratios", "1,2") == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("conll_scheme: nested\n")
    assert run_cli("export", str(STATS_FIXTURE), "--format", "conll", "--out", str(tmp_path / "c"),
                   "--config", str(bad)) == 2
    assert run_cli("export", str(STATS_FIXTURE), "--format", "pubtator", "--out", str(tmp_path / "p.txt"),
                   "--no-relation-map") == 0


def test_dev_subset_round_trip(tmp_path: Path, schema) -> None:  # type: ignore[no-untyped-def]
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    docs, _ = read_directory(gold)
    counts: Counter[str] = Counter()
    export(docs, "bioc-xml", tmp_path / "dev.xml", schema, config=ExportConfig(), counts=counts)
    with (tmp_path / "dev.xml").open(encoding="utf-8") as fh:
        collection = biocxml.load(fh)
    assert len(collection.documents) == 300
    assert sum(len(p.annotations) for d in collection.documents for p in d.passages) == 2178
    assert sum(len(p.relations) for d in collection.documents for p in d.passages) == 920
