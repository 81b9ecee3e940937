"""Sentence filtering: malformed-sentence reasons, the content rule, counts.

Covers: pipeline.corpus.select, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline.corpus.select import (
    REASONS,
    FilterConfigError,
    FilterSettings,
    filter_sentences,
    has_verb,
    load_filter_settings,
    malformed_reason,
)
from pipeline.documents import Annotation, Document, Sentence
from pipeline.schema import load_schema
from tests.conftest import shared_path

SCHEMA = load_schema()
SETTINGS = load_filter_settings()
GOOD = "Carriers of the CYP2C9*3 allele required lower warfarin doses than non-carriers."


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (GOOD, None),
        ("1.2 +/- 0.3 (12; 95% 4-9).", "no_alpha"),
        ("METHODS:", "section_label"),
        ("Results", "section_label"),
        ("PATIENTS AND METHODS:", "section_label"),
        ("It was.", "too_short"),
        ("Warfarin " + "dose was adjusted in patients carrying variants " * 30 + ".", "too_long"),
        ("Warfarin was prescribed.", "too_few_tokens"),
        ("Warfarin " + "a " * 160 + "was given.", "too_many_tokens"),
        ("and the CYP2C9*3 allele carriers required lower warfarin doses.", "lowercase_start"),
        ("p53 mutations predicted resistance to cisplatin in these tumours.", None),
        ("mRNA levels of ABCB1 were increased by rifampicin treatment.", None),
        ("beta-Blockers reduce mortality in carriers of the ADRB1 variant.", None),
        ("Carriers of the CYP2C9*3 allele (n = 12 required lower warfarin doses.", "unbalanced_brackets"),
        ("Carriers of the CYP2C9*3 allele n = 12) required lower warfarin doses.", "unbalanced_brackets"),
        ("Carriers [of the CYP2C9*3 allele (n = 12]) required lower doses.", "unbalanced_brackets"),
        ("Effect of the CYP2C9*3 allele on warfarin dose requirements in elderly patients.", "no_verb"),
        ("The CYP2C9*3 allele decreases warfarin clearance in most patients.", None),
        ("Rifampicin induces CYP3A4 expression in human hepatocytes in vitro.", None),
    ],
)
def test_malformed_reasons(text: str, reason: str | None) -> None:
    assert malformed_reason(text, SETTINGS) == reason


def test_title_is_exempt_from_verb_check_only() -> None:
    title = "Effect of the CYP2C9*3 allele on warfarin dose requirements in elderly patients."
    assert malformed_reason(title, SETTINGS, title=True) is None
    strict = FilterSettings(section_labels=SETTINGS.section_labels, titles_need_verb=True)
    assert malformed_reason(title, strict, title=True) == "no_verb"
    assert malformed_reason("and the warfarin dose in CYP2C9 carriers.", SETTINGS, title=True) == "lowercase_start"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("warfarin was given", True),
        ("the allele decreases clearance", True),
        ("clopidogrel-treated patients", True),
        ("the speed of a hundred red beds", False),
        ("association of the allele with response", False),
    ],
)
def test_verb_heuristic(text: str, expected: bool) -> None:
    assert has_verb(text) is expected


def _doc(sentences: list[str], annotations: list[tuple[str, str, int, str]], title_index: int = 0) -> Document:
    """A document whose title is sentence 0 and whose abstract is the other sentences joined by spaces.

    annotations: (sentence text fragment, type, sentence number, source).
    """
    title = sentences[0]
    abstract = " ".join(sentences[1:])
    text = title + "\n" + abstract
    spans = []
    pos = 0
    for s in sentences:
        start = text.index(s, pos)
        spans.append(Sentence(start, start + len(s)))
        pos = start + len(s)
    anns = []
    for mention, type_, k, source in annotations:
        start = text.index(mention, spans[k].start)
        anns.append(Annotation(((start, start + len(mention)),), type_, source, text=mention))
    return Document(pmid="123", title=title, text=text, sentences=tuple(spans)).with_annotations(anns)


def test_filter_content_rule_and_counts() -> None:
    sentences = [
        "Warfarin dose requirements in carriers of CYP2C9 variants.",            # title: kept, no verb needed
        "Carriers of CYP2C9*3 required lower warfarin doses than others.",       # kept (Chemical + variation)
        "Warfarin was given to all patients in the study cohort daily.",         # no genomic factor
        "The CYP2C9 gene was sequenced in all patients of the cohort.",          # no chemical
        "METHODS:",                                                              # label
        "Clopidogrel response was reduced in CYP2C19 poor metabolizers.",        # composite + key, types mixed
    ]
    doc = _doc(
        sentences,
        [
            ("Warfarin", "Chemical", 0, "pubtator"),
            ("CYP2C9", "Gene_or_protein", 0, "pubtator"),
            ("CYP2C9*3", "Limited_variation", 1, "pubtator"),
            ("warfarin", "Chemical", 1, "pubtator"),
            ("Warfarin", "Chemical", 2, "pubtator"),
            ("CYP2C9", "Gene_or_protein", 3, "pubtator"),
            ("Clopidogrel response", "Pharmacodynamic_phenotype", 5, "ontology"),
            ("Clopidogrel", "Chemical", 5, "pubtator"),
            ("CYP2C19 poor metabolizers", "Genomic_variation", 5, "ontology"),
        ],
    )
    counts: Counter[str] = Counter()
    kept = list(filter_sentences([doc], "pgx", SCHEMA, counts))
    assert [r.index for r in kept] == [0, 1, 5]
    assert counts["dropped:no_genomic_factor"] == 1
    assert counts["dropped:no_chemical"] == 1
    assert counts["dropped:section_label"] == 1
    assert counts["sentences"] == 6 and counts["kept"] == 3
    assert sum(v for k, v in counts.items() if k.startswith("dropped:")) == 3
    assert {k.split(":", 1)[1] for k in counts if k.startswith("dropped:")} <= set(REASONS)
    # offsets are sentence-relative
    record = kept[1]
    for a in record.annotations:
        assert a.covered(record.text) == a.text


def test_filter_maps_source_types_and_none_rule_keeps_everything() -> None:
    sentences = ["Title of the paper about drugs.", "Carriers of rs1057910 were given more warfarin than others.",
                 "and then.", "METHODS:"]
    doc = _doc(sentences, [("rs1057910", "SNP", 1, "pubtator"), ("warfarin", "Chemical", 1, "pubtator")])
    counts: Counter[str] = Counter()
    assert [r.index for r in filter_sentences([doc], "pgx", SCHEMA, counts)] == [1]
    counts = Counter()
    assert [r.index for r in filter_sentences([doc], "none", SCHEMA, counts)] == [0, 1, 2, 3]
    assert counts["kept"] == 4 and not any(k.startswith("dropped:") for k in counts)


def test_unknown_rule_and_missing_sentences() -> None:
    with pytest.raises(ValueError, match="unknown filter rule"):
        list(filter_sentences([], "drugs", SCHEMA, Counter()))
    counts: Counter[str] = Counter()
    doc = Document(pmid="9", title="T", text="T\nabstract")
    assert list(filter_sentences([doc], "pgx", SCHEMA, counts)) == []
    assert counts["documents_without_sentences"] == 1


def test_bad_settings_file(tmp_path: Path) -> None:
    bad = tmp_path / "filter.yaml"
    bad.write_text("min_chars: -3\n", encoding="utf-8")
    with pytest.raises(FilterConfigError, match="filter.yaml"):
        load_filter_settings(bad)
    bad.write_text("min_char: 3\n", encoding="utf-8")
    with pytest.raises(FilterConfigError, match="unknown setting"):
        load_filter_settings(bad)


def test_real_pgxcorpus_sentences_are_well_formed() -> None:
    """Sentences the PGxCorpus build kept pass the malformed checks (titles = sentence 1 there)."""
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    reasons: Counter[str | None] = Counter()
    for txt in sorted(gold.glob("*.txt")):
        is_title = txt.stem.endswith("_1")
        reasons[malformed_reason(txt.read_text(encoding="utf-8"), SETTINGS, title=is_title)] += 1
    total = sum(reasons.values())
    assert total == 300
    assert reasons[None] >= 0.98 * total, reasons


@pytest.mark.parametrize("rule", ["pgx", "none"])
def test_filter_from_files_equals_filtering_with_the_loaded_files(rule: str) -> None:
    from pipeline.corpus.select import filter_from_files, load_filter_settings
    from pipeline.schema import DEFAULT_SCHEMA

    doc = _doc(["Warfarin and CYP2C9.", "Carriers of CYP2C9*3 required lower warfarin doses than others.",
                "The CYP2C9 gene was sequenced in all patients of the cohort."],
               [("CYP2C9*3", "Limited_variation", 1, "pubtator"), ("warfarin", "Chemical", 1, "pubtator"),
                ("CYP2C9", "Gene_or_protein", 2, "pubtator")])
    expected_counts: Counter[str] = Counter()
    settings = load_filter_settings() if rule != "none" else None
    expected = list(filter_sentences([doc], rule, SCHEMA, expected_counts, settings=settings))
    counts: Counter[str] = Counter()
    assert list(filter_from_files([doc], rule, counts, schema_path=DEFAULT_SCHEMA)) == expected
    assert counts == expected_counts and expected
