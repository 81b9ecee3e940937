"""Tests of pipeline.nlp.align.

Covers: pipeline.documents, pipeline.nlp.align, pipeline.sources.bioc_io
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pipeline.documents import Annotation
from pipeline.nlp.align import Aligner, equivalent, loose, normalize, realign
from pipeline.sources.bioc_io import UNKNOWN


def mention(text: str, needle: str, occurrence: int = 0, *, type_: str = "Gene", ann_text: str | None = None
            ) -> Annotation:
    """An annotation on the ``occurrence``-th ``needle`` of ``text``."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(needle, start + 1)
    return Annotation(fragments=((start, start + len(needle)),), type=type_, source="pubtator",
                      text=needle if ann_text is None else ann_text)


# (case, source text, document text, mention in the source, occurrence, expected document text)
REALIGNED = [
    ("greek spelled out in source", "TNF-alpha levels rose.", "TNF-α levels rose.", "TNF-alpha", 0, "TNF-α"),
    ("greek folded to latin", "TNF-a levels rose.", "TNF-α levels rose.", "TNF-a", 0, "TNF-α"),
    ("greek in source, spelled in doc", "IFN-γ was high.", "IFN-gamma was high.", "IFN-γ", 0, "IFN-gamma"),
    ("greek capital", "Abeta42 binds ApoE.", "Aβ42 binds ApoE.", "ApoE", 0, "ApoE"),
    ("beta spelled, after", "The beta2-adrenergic receptor ADRB2.", "The β2-adrenergic receptor ADRB2.",
     "ADRB2", 0, "ADRB2"),
    ("micro sign as u", "We gave 5 ug/ml warfarin.", "We gave 5 \u00b5g/ml warfarin.", "ug/ml", 0,
     "\u00b5g/ml"),
    ("greek mu as micro", "We gave 5 microg of drug.", "We gave 5 \u03bcg of drug.", "microg", 0, "\u03bcg"),
    ("mention after micro sign", "with 5 ug/ml rifampicin daily", "with 5 \u00b5g/ml rifampicin daily",
     "rifampicin", 0, "rifampicin"),
    ("accents stripped", "Sjogren syndrome and Behcet disease.", "Sjögren syndrome and Behçet disease.",
     "Behcet disease", 0, "Behçet disease"),
    ("accent inside mention", "Sjogren syndrome and Behcet disease.", "Sjögren syndrome and Behçet disease.",
     "Sjogren syndrome", 0, "Sjögren syndrome"),
    ("plus-minus folded", "IC50 of 3 +/- 1 nM for imatinib.", "IC50 of 3 ± 1 nM for imatinib.", "imatinib", 0,
     "imatinib"),
    ("en dash folded", "The CYP2C9-VKORC1 pair.", "The CYP2C9\u2013VKORC1 pair.", "CYP2C9-VKORC1", 0,
     "CYP2C9\u2013VKORC1"),
    ("label only in source", "Warfarin.\nBACKGROUND: CYP2C9 matters. METHODS: VKORC1 too.",
     "Warfarin.\nCYP2C9 matters. VKORC1 too.", "VKORC1", 0, "VKORC1"),
    ("label only in document", "Warfarin.\nCYP2C9 matters. VKORC1 too.",
     "Warfarin.\nBACKGROUND: CYP2C9 matters. METHODS: VKORC1 too.", "CYP2C9", 0, "CYP2C9"),
    ("repeated mention picks the aligned one", "T.\nBACKGROUND: BC cells. BC grows.", "T.\nBC cells. BC grows.",
     "BC", 1, "BC"),
    ("same text at the same offsets by coincidence", "P. BC and more BC end.", "P. Extra words BC and more BC end.",
     "BC", 1, "BC"),
    ("whitespace differences", "Title here. \nCYP2D6  poor\tmetabolizers of codeine.",
     "Title here.\nCYP2D6 poor metabolizers of codeine.", "codeine", 0, "codeine"),
    ("title separator space vs newline", "A study of tamoxifen. CYP2D6 was typed.",
     "A study of tamoxifen.\nCYP2D6 was typed.", "CYP2D6", 0, "CYP2D6"),
    ("multi-word mention with inner whitespace", "breast  cancer risk", "breast cancer risk", "breast  cancer", 0,
     "breast cancer"),
    ("letter-name folding never spans two words", "TNF-alpha Behcet and more.", "TNF-α Behçet and more.",
     "Behcet", 0, "Behçet"),
    ("ligature and case", "The ﬁbrinogen gene FGB.", "The fibrinogen gene FGB.", "ﬁbrinogen", 0, "fibrinogen"),
]


@pytest.mark.parametrize(("case", "source", "doc", "needle", "occurrence", "expected"), REALIGNED,
                         ids=[c[0] for c in REALIGNED])
def test_realigned(case: str, source: str, doc: str, needle: str, occurrence: int, expected: str) -> None:
    counts: Counter[str] = Counter()
    ann = mention(source, needle, occurrence)
    (out,) = realign([ann], source, doc, counts)
    assert out.text == expected
    assert out.covered(doc) == expected
    # never shifted onto other text: the document span is equivalent to the source span
    assert equivalent(out.covered(doc), ann.covered(source))
    assert counts["exact"] + counts["realigned"] == 1
    if occurrence:
        # the second "BC" stays the second one (not the first one of a shifted text)
        assert out.start == doc.index(expected, doc.index(expected) + 1)


def test_exact_keeps_offsets_and_counts_exact() -> None:
    text = "Warfarin dose and CYP2C9.\nVKORC1 too."
    anns = [mention(text, "Warfarin", type_="Chemical"), mention(text, "CYP2C9"), mention(text, "VKORC1")]
    counts: Counter[str] = Counter()
    out = realign(anns, text, text, counts)
    assert out == anns
    assert counts == Counter({"exact": 3})


# (case, source text, document text, annotation, reason)
DROPPED = [
    ("offset past the source text", "Short.", "Short. And longer document text.",
     Annotation(fragments=((10, 16),), type="Gene", source="pubtator", text="longer"), "offset_outside_text"),
    ("source text absent from the document", "Patients on warfarin bled.", "Patients on heparin bled.",
     mention("Patients on warfarin bled.", "warfarin", type_="Chemical"), "unalignable"),
    ("annotation text is not the source text", "Patients with breast cancer.", "Patients with breast cancer.",
     mention("Patients with breast cancer.", "breast cancer", ann_text="Breast Neoplasms"), "text_mismatch"),
    ("mention glued to a word in the document only", "An ABC test; BC later.", "An ABC test; later.",
     mention("An ABC test; BC later.", "BC", 1), "unalignable"),
]


@pytest.mark.parametrize(("case", "source", "doc", "ann", "reason"), DROPPED, ids=[c[0] for c in DROPPED])
def test_dropped_by_reason(case: str, source: str, doc: str, ann: Annotation, reason: str) -> None:
    counts: Counter[str] = Counter()
    assert realign([ann], source, doc, counts) == []
    assert counts == Counter({f"dropped_{reason}": 1})


def test_discontiguous_fragments_are_realigned_each() -> None:
    source = "T.\nBACKGROUND: Breast and ovarian cancer."
    doc = "T.\nBreast and ovarian cancer."
    b = source.index("Breast")
    c = source.index("cancer")
    ann = Annotation(fragments=((b, b + 6), (c, c + 6)), type="Disease", source="pubtator", text="Breast cancer")
    counts: Counter[str] = Counter()
    (out,) = realign([ann], source, doc, counts)
    assert out.fragments == ((3, 9), (22, 28))
    assert out.text == "Breast cancer"
    assert counts["realigned"] == 1


def test_discontiguous_text_not_joined_by_space_is_consistent() -> None:
    text = "breast and ovarian cancer"
    ann = Annotation(fragments=((0, 6), (19, 25)), type="Disease", source="pubtator", text="breast and ovarian cancer")
    counts: Counter[str] = Counter()
    (out,) = realign([ann], text, text, counts)
    assert out.text == "breast cancer"
    assert counts["exact"] == 1


# Stand-off annotations (BioC with empty passage text): only the annotation text is known.
# (case, document text, fragment, annotation text, expected document text or drop reason)
STAND_OFF = [
    ("exact", "CYP2C19 and clopidogrel.", (12, 23), "clopidogrel", "clopidogrel"),
    ("normalized equal in place", "Dose of 5 µg.", (10, 12), "ug", "µg"),
    ("shifted nearby", "BACKGROUND: CYP2C19 and clopidogrel.", (12, 23), "clopidogrel", "clopidogrel"),
    ("absent", "CYP2C19 and aspirin.", (12, 19), "heparin", "dropped_unalignable"),
    ("outside the document", "CYP2C19.", (20, 25), "VKORC", "dropped_offset_outside_text"),
    ("no text to check", "CYP2C19 and clopidogrel.", (0, 7), "", "CYP2C19"),
]


@pytest.mark.parametrize(("case", "doc", "fragment", "ann_text", "expected"), STAND_OFF, ids=[c[0] for c in STAND_OFF])
@pytest.mark.parametrize("source", [None, "", UNKNOWN * 40], ids=["no-source", "empty-source", "unknown-source"])
def test_stand_off(case: str, doc: str, fragment: tuple[int, int], ann_text: str, expected: str,
                   source: str | None) -> None:
    ann = Annotation(fragments=(fragment,), type="Chemical", source="pubtator", text=ann_text)
    counts: Counter[str] = Counter()
    out = realign([ann], source, doc, counts)
    if expected.startswith("dropped_"):
        assert out == []
        assert counts == Counter({expected: 1})
    else:
        assert [a.text for a in out] == [expected]
        assert out[0].covered(doc) == expected
        assert sum(counts.values()) == 1
        assert counts["exact_unverified"] == (0 if ann_text else 1)


def test_unknown_gap_between_passages_falls_back_to_annotation_text() -> None:
    # the title/abstract separator is unknown in BioC; a title-only passage with text,
    # an abstract passage given without text (unknown tail).
    source = "CYP2C19 and clopidogrel." + UNKNOWN * 2
    doc = "CYP2C19 and clopidogrel.\nOmeprazole interacts."
    ann = Annotation(fragments=((25, 35),), type="Chemical", source="pubtator", text="Omeprazole")
    counts: Counter[str] = Counter()
    (out,) = realign([ann], source, doc, counts)
    assert out.text == "Omeprazole"
    assert counts["exact"] == 1


@pytest.mark.parametrize(
    ("text", "norm"),
    [("TNF-α", "tnf-alpha"), ("5 µg", "5mug"), ("Behçet  disease", "behcetdisease"),
     ("A\u00adB\u200bC", "abc"), ("ß", "ss"), ("±", "+/-"), ("Ωmega", "omegamega")],
)
def test_normalize(text: str, norm: str) -> None:
    got, origin = normalize(text)
    assert got == norm
    assert len(origin) == len(got)
    assert origin == sorted(origin)
    assert all(0 <= i < len(text) and not text[i].isspace() for i in origin)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [("TNF-α", "TNF-alpha", True), ("TNF-α", "TNF-a", True), ("µg", "ug", True), ("µg", "microg", True),
     ("μg", "mcg", False), ("Behçet", "behcet", True), ("warfarin", "heparin", False), ("", "", False),
     ("breast  cancer", "breast cancer", True), ("IL-6", "IL6", False)],
)
def test_equivalent(a: str, b: str, same: bool) -> None:
    assert equivalent(a, b) is same
    assert equivalent(b, a) is same


def test_loose_is_symmetric_folding() -> None:
    assert loose("tnf-alpha") == loose("tnf-a") == "tnf-a"
    assert loose("microg") == loose("mug") == loose("ug") == "ug"


def test_search_respects_word_boundaries() -> None:
    aligner = Aligner(None, "ABC cells and more text then BC here")
    span = aligner.search("BC", 1)
    assert span == (29, 31)


FOLDINGS = [("α", "alpha"), ("β", "beta"), ("µ", "u"), ("é", "e"), ("–", "-"), ("γ", "g"), (" ", "  "), ("±", "+/-")]


def test_random_foldings_never_shift_silently() -> None:
    """Property: PubTator-like foldings of a text keep (nearly) every mention, each on equivalent text."""
    rng = random.Random(7)
    words = ["warfarin", "CYP2C9", "VKORC1", "TNF-α", "β-blocker", "5 µg/ml", "Behçet", "IL–6", "and", "the",
             "patients", "dose", "±", "γ-secretase", "in", "of", "response", "BACKGROUND:"]
    kept_total = dropped_total = 0
    for _ in range(60):
        doc_words = [rng.choice(words) for _ in range(rng.randint(20, 60))]
        doc = " ".join(doc_words)
        source = doc
        for a, b in FOLDINGS:
            if rng.random() < 0.7:
                source = source.replace(a, b)
        if rng.random() < 0.5:
            source = "BACKGROUND: " + source
        # mentions: whole words of the source
        anns = []
        pos = 0
        for word in source.split(" "):
            start = source.index(word, pos) if word else pos
            pos = start + len(word)
            if word and word[0].isalnum() and rng.random() < 0.3:
                anns.append(Annotation(fragments=((start, start + len(word)),), type="Gene", source="pubtator",
                                       text=word))
        counts: Counter[str] = Counter()
        out = realign(anns, source, doc, counts)
        by_text = {a.text for a in out}
        for a in out:
            assert a.covered(doc) == a.text
        for kept in out:
            assert any(equivalent(kept.text, a.text) for a in anns)
        assert len(by_text) <= len(anns)
        kept_total += len(out)
        dropped_total += sum(v for k, v in counts.items() if k.startswith("dropped_"))
        assert counts["exact"] + counts["realigned"] + sum(
            v for k, v in counts.items() if k.startswith("dropped_")) == len(anns)
    assert kept_total > 0
    assert dropped_total <= kept_total * 0.02
