"""Local annotator: variant patterns, lexicon matching, abbreviations, offsets.

Covers: pipeline.documents, pipeline.nlp.lexicon, pipeline.nlp.local_annotator
"""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

import pytest

from pipeline.documents import Annotation
from pipeline.nlp import lexicon as lx
from pipeline.nlp.local_annotator import LexiconMissingError, LocalAnnotator

TABLES: dict[str, list[list[str]]] = {
    "exact": [
        ["CYP2D6", "Gene", "NCBIGene:1565"],
        ["HLA-B", "Gene", "NCBIGene:3106"],
        ["KIT", "Gene", "NCBIGene:3815"],
        ["HRAS", "Gene", "NCBIGene:3265"],
        ["A2", "Gene", "NCBIGene:9999"],
        ["MTX", "Gene", "NCBIGene:4580"],
        ["EGFR", "Gene", "NCBIGene:1956"],
        ["E2F", "Gene", "FPLX:E2F"],
        ["TNF-alpha", "Gene", "NCBIGene:7124"],
        ["OR2", "Gene", "FPLX:OR2"],
    ],
    "relaxed": [["DRD2", "Gene", "NCBIGene:1813"], ["OR2", "Gene", "FPLX:OR2"]],
    "folded": [
        ["warfarin", "Chemical", "MESH:D014859"],
        ["methotrexate", "Chemical", "MESH:D008727"],
        ["paclitaxel", "Chemical", "MESH:D017239"],
        ["alcohol", "Chemical", "MESH:D000431"],
        ["tyrosine", "Chemical", "MESH:D014443"],
        ["nucleotide", "Chemical", "MESH:D009711"],
        ["tyrosine kinase", "Gene", "MESH:D011505"],
        ["epidermal growth factor receptor", "Gene", "NCBIGene:1956"],
        ["breast cancer", "Disease", "MESH:D001943"],
        ["ovarian cancer", "Disease", "MESH:D010051"],
        ["alcohol dependence", "Disease", "MESH:D000437"],
        ["tumor", "Disease", "MESH:D009369"],
        ["tamoxifen", "Chemical", "MESH:D013629"],
        ["imatinib", "Chemical", "MESH:D000068877"],
        ["valproate", "Chemical", "MESH:D014635"],
        ["sodium", "Chemical", "MESH:D012964"],
        ["glutamate", "Chemical", "MESH:D018698"],
        ["vitamin D", "Chemical", "MESH:D014807"],
        ["glutamate receptor", "Gene", "MESH:D017470"],
        ["cytochrome P450", "Gene", "FPLX:CYP"],
        ["cytochrome P450 enzymes", "Gene", "MESH:D003577"],
    ],
}


@pytest.fixture(scope="module")
def annotator() -> LocalAnnotator:
    return LocalAnnotator(TABLES)


def found(annotator: LocalAnnotator, text: str) -> list[tuple[str, str]]:
    return [(a.text, a.type) for a in annotator.annotate(text)]


@pytest.mark.parametrize(
    ("text", "mention"),
    [
        ("the rs1045642 variant", "rs1045642"),
        ("ABCB1 c.3435C>T was", "c.3435C>T"),
        ("p.Glu542Lys and", "p.Glu542Lys"),
        ("p.(Arg389Gly) carriers", "p.(Arg389Gly)"),
        ("CYP2B6 g.15582C>T on", "g.15582C>T"),
        ("c.1236delT frameshift", "c.1236delT"),
        ("the IVS4+76G>A variant", "IVS4+76G>A"),
        ("the 699G>A change", "699G>A"),
        ("promoter -1639G>A polymorphism", "-1639G>A"),
        ("single nucleotide polymorphism -37C-->A in", "-37C-->A"),
        ("the 779A/C polymorphism", "779A/C"),
        ("MTHFR C677T polymorphism", "C677T"),
        ("BRAF V600E mutation", "V600E"),
        ("COMT Val158Met genotype", "Val158Met"),
        ("the Val(660)Leu substitution", "Val(660)Leu"),
        ("ADRB1 Arg389Gly carriers", "Arg389Gly"),
        ("and *347_*348insA polymorphisms", "*347_*348insA"),
        ("( Met233Ile ) ,", "Met233Ile"),
    ],
)
def test_variant_patterns(annotator: LocalAnnotator, text: str, mention: str) -> None:
    assert (mention, "Mutation") in found(annotator, text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Star alleles: PubTator tags the gene only, never the allele.
        ("CYP2D6*4 carriers", [("CYP2D6", "Gene")]),
        ("HLA-B * 5701 screening", [("HLA-B", "Gene")]),
        ("HLA-B*5701 screening", [("HLA-B", "Gene")]),
        # Gene symbols that look like protein changes are genes.
        ("E2F activity", [("E2F", "Gene")]),
        ("p53 and H1N1", []),
        # Drug development codes, but not cell lines.
        ("the MEK inhibitor PD98059 failed", [("PD98059", "Chemical")]),
        ("in HEK293 cells", []),
    ],
)
def test_variant_lookalikes(annotator: LocalAnnotator, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(annotator, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Warfarin and breast cancer", [("Warfarin", "Chemical"), ("breast cancer", "Disease")]),
        ("Breast Cancers treated with WARFARIN", [("Breast Cancers", "Disease"), ("WARFARIN", "Chemical")]),
        ("tumours", [("tumours", "Disease")]),
        ("TNF-\u03b1 levels", [("TNF-\u03b1", "Gene")]),
        ("Drd2 and drd2 knockout", [("Drd2", "Gene"), ("drd2", "Gene")]),
        ("1 or 2 alleles", []),  # "or 2" is not the symbol OR2: symbols are written in one piece
        ("mtx", []),  # exact-case table only
        ("warfarinization", []),  # no match inside a word
        ("single nucleotide polymorphism", []),  # stop phrase
        ("breast and ovarian cancers", [("breast and ovarian cancers", "Disease")]),
    ],
)
def test_dictionary(annotator: LocalAnnotator, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(annotator, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cells exposed to MnCl(2) or SrCl2", [("MnCl(2)", "Chemical"), ("SrCl2", "Chemical")]),
        ("the cardiac Na(+) channel and Ca2+ influx", [("Na(+)", "Chemical"), ("Ca2+", "Chemical")]),
        ("CHO and HLA cells", []),  # element-like letters without a two-letter element or charge
        ("4-hydroxy-tamoxifen levels", [("4-hydroxy-tamoxifen", "Chemical")]),
        ("low 25-OH vitamin D levels", [("25-OH vitamin D", "Chemical")]),
        (
            "imatinib mesylate and sodium valproate",
            [("imatinib mesylate", "Chemical"), ("sodium valproate", "Chemical")],
        ),
        ("c-kit and H-ras and c- kit", [("c-kit", "Gene"), ("H-ras", "Gene")]),
        ("the A2/A2 genotype", []),  # allele notation, not the A2 gene
        ("glutamate receptor 1 was altered", [("glutamate receptor 1", "Gene")]),
        ("glutamate receptors and tyrosine", [("glutamate", "Chemical"), ("tyrosine", "Chemical")]),
        ("the cytochrome P450 enzymes", [("cytochrome P450", "Gene")]),
    ],
)
def test_naming_conventions(annotator: LocalAnnotator, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(annotator, text) == expected


def test_pubtator_span_conventions(annotator: LocalAnnotator) -> None:
    # "<chemical> dependence" -> the chemical only; a generic "<chemical> kinase" -> the chemical.
    assert found(annotator, "alcohol dependence in men") == [("alcohol", "Chemical")]
    assert found(annotator, "tyrosine kinase inhibitors") == [("tyrosine", "Chemical")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "methotrexate ( MTX ) clearance ; MTX levels",
            [("methotrexate", "Chemical"), ("MTX", "Chemical"), ("MTX", "Chemical")],
        ),
        ("paclitaxel (PTX) and PTX-based", [("paclitaxel", "Chemical"), ("PTX", "Chemical")]),
        (
            "epidermal growth factor receptor ( EGFR )",
            [("epidermal growth factor receptor", "Gene"), ("EGFR", "Gene")],
        ),
        ("alcohol dependence ( AD ) risk", [("alcohol", "Chemical"), ("AD", "Disease")]),
        ("warfarin (see above)", [("warfarin", "Chemical")]),
        ("tumor (ABC)", [("tumor", "Disease")]),  # "ABC" cannot abbreviate "tumor" (first letters differ)
    ],
)
def test_abbreviations(annotator: LocalAnnotator, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(annotator, text) == expected


def test_abbreviation_identifier_comes_from_long_form(annotator: LocalAnnotator) -> None:
    mtx = [a for a in annotator.annotate("methotrexate ( MTX )") if a.text == "MTX"]
    assert [a.identifier for a in mtx] == ["MESH:D008727"]


@pytest.mark.parametrize(
    "text",
    [
        "CYP2D6 poor metabolizers on warfarin ( rs1065852 , C677T ) had breast cancer .",
        "CYP2D6 poor metabolizers on warfarin (rs1065852, C677T) had breast cancer.",
        "Title line\nmethotrexate (MTX) and HLA-B*5701; MTX again.",
    ],
)
def test_offsets_exact_sorted_non_overlapping(annotator: LocalAnnotator, text: str) -> None:
    annotations = annotator.annotate(text)
    assert annotations
    assert annotations == sorted(annotations, key=Annotation.sort_key)
    for a in annotations:
        assert a.source == "local"
        assert a.text == text[a.start : a.end] == a.covered(text)
        assert a.text == a.text.strip()
    for left, right in zip(annotations, annotations[1:], strict=False):
        assert left.end <= right.start
    shifted = annotator.annotate("xx. " + text)
    assert [(a.start - 4, a.end - 4, a.type) for a in shifted] == [(a.start, a.end, a.type) for a in annotations]


def test_plain_and_pretokenized_agree(annotator: LocalAnnotator) -> None:
    plain = found(annotator, "CYP2D6 poor metabolizers on warfarin (rs1065852, C677T) had breast cancer.")
    spaced = found(annotator, "CYP2D6 poor metabolizers on warfarin ( rs1065852 , C677T ) had breast cancer .")
    assert plain == spaced


def test_counts(annotator: LocalAnnotator) -> None:
    counts: collections.Counter[str] = collections.Counter()
    annotator.annotate("methotrexate ( MTX ) and rs1045642", counts)
    assert counts["mentions.Chemical"] == 2
    assert counts["mentions.Mutation"] == 1
    assert counts["abbreviations.retyped"] == 1


def test_load_missing_lexicon_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(LexiconMissingError, match="pgx-corpus lexicon build"):
        LocalAnnotator.load(tmp_path / "absent.json.gz")


def test_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({"format": lx.LEXICON_FORMAT, "wheels": lx.WHEELS, "tables": TABLES}, fh)
    loaded = LocalAnnotator.load(path)
    assert found(loaded, "warfarin and CYP2D6") == [("warfarin", "Chemical"), ("CYP2D6", "Gene")]


@pytest.fixture(scope="module")
def real_annotator() -> LocalAnnotator:
    if not lx.DEFAULT_LEXICON.is_file():
        pytest.skip(
            f"real lexicon not built ({lx.DEFAULT_LEXICON}); run `make setup` or `pgx-corpus lexicon build`"
        )
    return LocalAnnotator.load()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "CYP2D6 poor metabolizers treated with tamoxifen had more breast cancer recurrences (rs3892097).",
            {("CYP2D6", "Gene"), ("tamoxifen", "Chemical"), ("breast cancer", "Disease"), ("rs3892097", "Mutation")},
        ),
        (
            "The VKORC1 -1639G>A polymorphism and warfarin dose requirements .",
            {("VKORC1", "Gene"), ("-1639G>A", "Mutation"), ("warfarin", "Chemical")},
        ),
        (
            "Carbamazepine-induced Stevens-Johnson syndrome and HLA-B*1502 in Han Chinese.",
            {("Carbamazepine", "Chemical"), ("Stevens-Johnson syndrome", "Disease"), ("HLA-B", "Gene")},
        ),
    ],
)
def test_real_lexicon(real_annotator: LocalAnnotator, text: str, expected: set[tuple[str, str]]) -> None:
    assert expected <= set(found(real_annotator, text))


def test_load_once_loads_a_lexicon_once_per_content(tmp_path: Path) -> None:
    from pipeline.nlp.local_annotator import load_once

    path = tmp_path / "lexicon.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({"format": lx.LEXICON_FORMAT, "wheels": lx.WHEELS, "tables": TABLES}, fh)
    first = load_once(path)
    assert load_once(path) is first
    assert found(first, "warfarin and CYP2D6") == [("warfarin", "Chemical"), ("CYP2D6", "Gene")]
    with pytest.raises(LexiconMissingError):
        load_once(tmp_path / "absent.json.gz")
