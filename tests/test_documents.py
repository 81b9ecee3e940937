"""The document model: invariants, projection onto sentences, JSON round trip.

Covers: pipeline.documents
"""

from __future__ import annotations

import pytest

from pipeline.documents import (
    Annotation,
    Document,
    MeshHeading,
    MeshQualifier,
    Section,
    Sentence,
    SentenceRecord,
    from_dict,
    pmid_sort_key,
    to_dict,
)

TITLE = "Warfarin and VKORC1."
ABSTRACT = "BACKGROUND: Warfarin dose varies. RESULTS: VKORC1 -1639G>A explains it."
TEXT = TITLE + "\n" + ABSTRACT


def make_doc() -> Document:
    start = len(TITLE) + 1
    sections = (
        Section(start, start + 33, start + 12, "BACKGROUND", "BACKGROUND"),
        Section(start + 34, len(TEXT), start + 43, "RESULTS", "RESULTS"),
    )
    sents = (Sentence(0, len(TITLE)), Sentence(start, start + 33), Sentence(start + 34, len(TEXT)))
    anns = (
        Annotation(((0, 8),), "Chemical", "pubtator", "MESH:D014859", "Warfarin"),
        Annotation(((start + 12, start + 20),), "Chemical", "pubtator", "MESH:D014859", "Warfarin"),
        Annotation(((start + 43, start + 49),), "Gene", "pubtator", "79001", "VKORC1"),
        # crosses the boundary between sentences 1 and 2
        Annotation(((start + 30, start + 40),), "Disease", "local", None, TEXT[start + 30 : start + 40]),
    )
    mesh = (MeshHeading("Warfarin", "D014859", True, (MeshQualifier("pharmacology", "Q000494", False),)),)
    return Document("123", TITLE, TEXT, sections, mesh, 2020, "J Test", "eng", ("Journal Article",),
                    sentences=sents, annotations=anns)


def test_abstract_offset_convention() -> None:
    doc = make_doc()
    assert doc.abstract_start == len(TITLE) + 1
    assert doc.abstract == ABSTRACT
    assert doc.text[doc.sections[1].text_start :].startswith("VKORC1")


def test_sentence_projection_is_sentence_relative_and_counts_crossing() -> None:
    records, crossing = make_doc().sentence_records()
    assert crossing == 1
    assert [r.index for r in records] == [0, 1, 2]
    for record in records:
        for ann in record.annotations:
            assert ann.covered(record.text) == ann.text
    assert records[2].name == "123_3"
    assert [a.text for a in records[2].annotations] == ["VKORC1"]


@pytest.mark.parametrize(
    "fragments",
    [(), ((3, 3),), ((5, 2),), ((6, 8), (0, 2))],
    ids=["empty", "zero-width", "reversed", "unsorted"],
)
def test_bad_fragments_rejected(fragments: tuple[tuple[int, int], ...]) -> None:
    with pytest.raises(ValueError):
        Annotation(fragments, "Chemical", "local")


def test_discontiguous_covered_text_joins_with_space() -> None:
    text = "warfarin and acenocoumarol sensitivity"
    ann = Annotation(((0, 8), (27, 38)), "Phenotype", "ontology")
    assert ann.discontiguous and ann.covered(text) == "warfarin sensitivity"
    assert ann.shifted(10).fragments == ((10, 18), (37, 48))


def test_json_round_trip_is_exact_and_omits_defaults() -> None:
    doc = make_doc()
    data = to_dict(doc)
    assert "origin" not in data  # default value left out
    assert from_dict(Document, data) == doc
    rec = SentenceRecord("1", 0, "x y", 0, (Annotation(((0, 1),), "Gene", "local"),))
    assert from_dict(SentenceRecord, to_dict(rec)) == rec


def test_from_dict_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        from_dict(Sentence, {"start": 0, "end": 1, "bogus": 2})


def test_with_annotations_dedups_and_sorts() -> None:
    doc = make_doc()
    shuffled = list(reversed(doc.annotations)) + [doc.annotations[0]]
    assert doc.with_annotations(shuffled).annotations == tuple(sorted(doc.annotations, key=Annotation.sort_key))


def test_pmid_sort_key_numeric_first() -> None:
    assert sorted(["10", "9", "abc", "100"], key=pmid_sort_key) == ["9", "10", "100", "abc"]


def _odd_records() -> list[object]:
    doc = make_doc()
    composite = Annotation(((0, 8), (13, 19)), "Phenotype", "ontology", None, "Warfarin VKORC1",
                           original_type="Chemical", ontology_class="Phenotype", rule="compound", key=((0, 8),))
    return [
        doc,
        Document("1", "", ""),  # every optional field at its default
        Document("2", "T", "T", publication_types=(), origin="pubtator", year=0, annotations=(composite,)),
        doc.with_annotations([*doc.annotations, composite]),
        SentenceRecord("3", 2, "x", 5, (composite,)),
        SentenceRecord("4", 0, ""),
        MeshHeading("d", None, False, (MeshQualifier("q"), MeshQualifier("r", "Q1", True))),
        Sentence(0, 1),
    ]


@pytest.mark.parametrize("record", _odd_records(), ids=lambda r: type(r).__name__)
def test_compiled_json_form_matches_the_generic_walk(record: object) -> None:
    from pipeline.documents import _generic_from_dict, _generic_to_dict

    data = to_dict(record)
    assert data == _generic_to_dict(record)
    assert from_dict(type(record), data) == _generic_from_dict(type(record), data) == record


def _parse_data(tokens: list[list[int]], heads: list[int]) -> dict[str, object]:
    n = len(heads)
    return {"start": 0, "end": 2, "tokens": tokens, "heads": heads, "deps": ["dep"] * n, "tags": ["X"] * n,
            "lemmas": ["x"] * n}


def test_parse_json_form_round_trips() -> None:
    """A parse's token spans are read back as tuples (the fast path of the compiled reader)."""
    from pipeline.documents import SentenceParse, _generic_from_dict

    data = {"pmid": "1", "title": "", "text": "ab", "parses": [_parse_data([[0, 1], [1, 2]], [1, 1])]}
    doc = from_dict(Document, data)
    assert doc == _generic_from_dict(Document, data)
    assert doc.parses == (SentenceParse(0, 2, ((0, 1), (1, 2)), (1, 1), ("dep",) * 2, ("X",) * 2, ("x",) * 2),)
    assert to_dict(doc) == data


@pytest.mark.parametrize(
    "data",
    [
        {"pmid": "1", "title": "", "text": "", "bogus": 1},
        {"pmid": "1", "title": "", "text": "", "annotations": [{"fragments": [[0, 1, 2]], "type": "a", "source": "b"}]},
        {"pmid": "1", "title": "", "text": "", "annotations": [{"fragments": [], "type": "a", "source": "b"}]},
        {"pmid": "1", "title": "", "text": "ab", "parses": [_parse_data([[0, 1], [1]], [0, 0])]},
        {"pmid": "1", "title": "", "text": "ab", "parses": [_parse_data([[0, 1], [1, 2, 2]], [0, 0])]},
        {"pmid": "1", "title": "", "text": "ab", "parses": [_parse_data([[0, 1], [1, 2]], [0, 2])]},
        {"pmid": "1", "title": "", "text": "ab", "parses": [_parse_data([[0, 1], [1, 2]], [-1, 0])]},
    ],
    ids=["unknown-field", "three-value-span", "no-fragment", "short-token", "long-token", "head-after",
         "head-before"],
)
def test_compiled_json_form_refuses_what_the_generic_walk_refuses(data: dict[str, object]) -> None:
    from pipeline.documents import _generic_from_dict

    with pytest.raises(ValueError):
        _generic_from_dict(Document, data)
    with pytest.raises(ValueError):
        from_dict(Document, data)


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_sentence_projection_matches_the_plain_scan(order: str) -> None:
    doc = make_doc()
    anns = doc.annotations if order == "sorted" else tuple(reversed(doc.annotations))
    doc = Document(doc.pmid, doc.title, doc.text, sentences=doc.sentences, annotations=anns)
    records, crossing = doc.sentence_records()
    expected = [
        tuple(a.shifted(-s.start) for a in anns if a.start >= s.start and a.end <= s.end) for s in doc.sentences
    ]
    assert [r.annotations for r in records] == expected
    assert crossing == len(anns) - sum(map(len, expected))
