"""PubTator format: tiny cases, the NCBI disease corpus and the real PubTator fixtures.

Covers: pipeline.sources.pubtator_format
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest

from pipeline.sources.pubtator_format import (
    PubtatorAnnotation,
    PubtatorFormatError,
    PubtatorRecord,
    read_pubtator,
    to_document,
)
from tests.conftest import shared_path


def write(tmp_path: Path, text: str, name: str = "in.pubtator") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def read(path: Path, **kw) -> tuple[list[PubtatorRecord], Counter[str]]:  # type: ignore[no-untyped-def]
    counts: Counter[str] = Counter()
    return list(read_pubtator(path, counts=counts, **kw)), counts


BASIC = (
    "111|t|Warfarin and CYP2C9.\n"
    "111|a|CYP2C9*3 carriers need less warfarin.\n"
    "111\t49\t57\twarfarin\tChemical\tMESH:D014859\n"
    "111\t0\t8\tWarfarin\tChemical\tMESH:D014859\n"
    "111\t13\t19\tCYP2C9\tGene\t1559\n"
    "111\tAssociation\tMESH:D014859\t1559\n"
    "\n"
)


def test_basic_record_and_document(tmp_path: Path) -> None:
    (record,), counts = read(write(tmp_path, BASIC))
    assert record.pmid == "111" and record.title == "Warfarin and CYP2C9." and record.line == 1
    assert [(a.start, a.end, a.text, a.type, a.identifier, a.line) for a in record.annotations] == [
        (49, 57, "warfarin", "Chemical", "MESH:D014859", 3),
        (0, 8, "Warfarin", "Chemical", "MESH:D014859", 4),
        (13, 19, "CYP2C9", "Gene", "1559", 5),
    ]
    (rel,) = record.relations
    assert (rel.type, rel.arg1, rel.arg2, rel.line) == ("Association", "MESH:D014859", "1559", 6)
    assert counts == Counter(documents=1, annotations=3, relations=1)
    doc_counts: Counter[str] = Counter()
    doc = to_document(record, doc_counts)
    assert doc.text == "Warfarin and CYP2C9.\nCYP2C9*3 carriers need less warfarin."
    assert doc.origin == "pubtator" and doc.abstract_start == 21
    # unsorted input, sorted output; offsets document-relative
    assert [(a.fragments, a.text, a.source) for a in doc.annotations] == [
        (((0, 8),), "Warfarin", "pubtator"), (((13, 19),), "CYP2C9", "pubtator"),
        (((49, 57),), "warfarin", "pubtator")]
    assert all(doc.text[a.start : a.end] == a.text for a in doc.annotations)
    assert doc_counts == Counter(annotations_kept=3, concept_relations=1)
    # the relation line becomes a document-level concept pair for the relation stage
    assert [(c.type, c.concept1, c.concept2) for c in doc.concept_relations] == [
        ("Association", "MESH:D014859", "1559")]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("1\t0\t4\tAbcd\tGene\t 123", ("123", ())),  # leading space in the id (NCBI disease)
        ("1\t0\t4\tAbcd\tGene\t123 ", ("123", ())),  # trailing space
        ("1\t0\t4\tAbcd\tGene\t", (None, ())),  # empty identifier column (PubTator Central dump)
        ("1\t0\t4\tAbcd\tGene", (None, ())),  # no identifier column
        ("1\t0\t4\tAbcd\tDNAMutation\tc|SUB|G|860|C\tRSID:2234671", ("c|SUB|G|860|C", ("RSID:2234671",))),
        ("1\t0\t4\tAbcd\tGene\t123\r", ("123", ())),  # CRLF file
    ],
)
def test_annotation_columns(tmp_path: Path, line: str, expected: tuple[str | None, tuple[str, ...]]) -> None:
    (record,), _ = read(write(tmp_path, f"1|t|Abcd efg.\n1|a|Text.\n{line}\n"))
    (ann,) = record.annotations
    assert (ann.identifier, ann.extra) == expected
    assert to_document(record).annotations[0].text == "Abcd"


def test_trailing_spaces_in_text_and_mention(tmp_path: Path) -> None:
    text = "5|t|Title with space \n5|a|An abstract ending in spaces.  \n5\t20\t28\tabstract  \tX\t\n"
    (record,), _ = read(write(tmp_path, text))
    doc = to_document(record)
    assert doc.title == "Title with space" and doc.text == "Title with space\nAn abstract ending in spaces."
    assert [a.text for a in doc.annotations] == ["abstract"]


def test_trailing_space_title_counted_when_offsets_say_so(tmp_path: Path) -> None:
    # Offsets computed on title + " " + " " + abstract: the title's trailing space is counted.
    text = "6|t|Title \n6|a|Gene ABC here.\n6\t12\t15\tABC\tGene\t9\n"
    (record,), _ = read(write(tmp_path, text))
    counts: Counter[str] = Counter()
    doc = to_document(record, counts)
    assert doc.title == "Title " and doc.text[12:15] == "ABC"
    assert counts["documents_trailing_space_title"] == 1 and counts["annotations_kept"] == 1


def test_duplicate_documents_keep_the_first(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = BASIC + BASIC.replace("Warfarin and", "Other and") + "222|t|Next.\n222|a|Doc.\n"
    with caplog.at_level(logging.WARNING):
        records, counts = read(write(tmp_path, text))
    assert [r.pmid for r in records] == ["111", "222"]
    assert records[0].title == "Warfarin and CYP2C9."
    assert counts["duplicate_documents"] == 1 and counts["annotations"] == 3
    assert "in.pubtator:8: PMID 111 appears again" in caplog.text


def test_blocks_without_blank_lines_and_title_only(tmp_path: Path) -> None:
    text = "1|t|One.\n1|a|A.\n1\t0\t3\tOne\tX\tid\n2|t|Two.\n2\t0\t3\tTwo\tX\tid\n3|t|Three.\n3|a|C."
    records, counts = read(write(tmp_path, text))
    assert [(r.pmid, r.abstract, len(r.annotations)) for r in records] == [("1", "A.", 1), ("2", "", 1),
                                                                          ("3", "C.", 0)]
    assert to_document(records[1]).text == "Two."


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("1|t|T.\n1|a|A.\n1\tTranslation 7488T/C\tHis-to-Arg\n", 3, "got 3 column"),
        ("1|a|Abstract without title.\n", 1, "without its title line"),
        ("1|t|T.\n1|a|A.\n1|a|A again.\n", 3, "second abstract line"),
        ("1|t|T.\n1|a|A.\n2\t0\t1\tT\tGene\t1\n", 3, "outside that document"),
        ("1\t0\t1\tT\tGene\t1\n", 1, "outside that document"),
        ("1|t|T.\n1|a|A.\n1\t0\tx\tT\tGene\t1\n", 3, "bad offsets"),
        ("1|t|T.\n1|a|A.\n1\t0\t1\tT\n", 3, "at least 5 columns"),
        ("just some text\n", 1, "got 1 column"),
        ("1|t|T.\n1|a|A.\n1\t-5\t2\tT\tGene\t1\n", 3, "bad offsets"),
    ],
)
def test_malformed_lines(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PubtatorFormatError, match=rf"in.pubtator:{line}: .*{message}"):
        read(path)
    _, counts = read(path, skip_bad_lines=True)
    assert counts["bad_lines"] == 1


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(PubtatorFormatError, match="absent.txt: cannot read"):
        read(tmp_path / "absent.txt")
    path = tmp_path / "latin1.txt"
    path.write_bytes("1|t|Caf\xe9.\n".encode("latin-1"))
    with pytest.raises(PubtatorFormatError, match="latin1.txt: not UTF-8"):
        read(path)


@pytest.mark.parametrize(
    ("ann", "key"),
    [
        (PubtatorAnnotation(30, 40, "x", "Gene", None, 3), "annotations_out_of_range"),
        (PubtatorAnnotation(2, 2, "", "Gene", None, 3), "annotations_empty_span"),
        (PubtatorAnnotation(0, 3, "Xyz", "Gene", None, 3), "annotations_text_mismatch"),
    ],
)
def test_bad_annotations_are_dropped_and_counted(ann: PubtatorAnnotation, key: str) -> None:
    record = PubtatorRecord(pmid="9", title="Abc.", abstract="Defg.", annotations=(ann,))
    counts: Counter[str] = Counter()
    assert to_document(record, counts).annotations == ()
    assert counts[key] == 1 and counts["annotations_kept"] == 0


# --- real data ---------------------------------------------------------------------------------------------


def test_ncbi_disease_corpus() -> None:
    folder = shared_path("data", "ncbi-disease")
    total: Counter[str] = Counter()
    blocks = 0
    for name, n_docs in (("NCBItrainset_corpus.txt", 592), ("NCBIdevelopset_corpus.txt", 100),
                         ("NCBItestset_corpus.txt", 100)):
        records, counts = read(folder / name)
        assert len(records) == n_docs
        blocks += len(records) + counts["duplicate_documents"]
        for record in records:
            doc = to_document(record, total)
            assert doc.text.startswith(doc.title + "\n") and doc.title == record.title.rstrip()
        total += counts
    assert blocks == 793 and total["duplicate_documents"] == 1  # PMID 8528200 twice in the training set
    assert total["annotations"] == 6881
    assert total["annotations_kept"] == total["annotations"]  # every annotation checks out
    assert total["annotations_text_mismatch"] == total["annotations_out_of_range"] == 0


def test_pubtator3_export() -> None:
    path = shared_path("fixtures", "real", "pubtator3", "netmedex_22429397_abstract_pubtator_20240916.txt")
    (record,), counts = read(path)
    assert record.pmid == "22429397" and counts == Counter(documents=1, annotations=37, relations=10)
    assert {r.type for r in record.relations} >= {"Association", "Negative_Correlation"}
    doc_counts: Counter[str] = Counter()
    doc = to_document(record, doc_counts)
    assert doc_counts["annotations_kept"] == 37
    assert {a.type for a in doc.annotations} >= {"Gene", "Chemical", "Disease", "Species"}
    assert doc.sections == () and doc.text.split("\n")[1].startswith("INTRODUCTION:")


def test_tmvar_seven_columns_and_stray_line() -> None:
    path = shared_path("fixtures", "real", "pubtator_legacy", "bioc_pkg_tmVar_Normalization_pubtator_7col.txt")
    with pytest.raises(PubtatorFormatError, match=r"_7col.txt:691: "):
        read(path)
    records, counts = read(path, skip_bad_lines=True)
    assert counts["bad_lines"] == 1 and len(records) == counts["documents"]
    first = records[0]
    assert first.pmid == "22051099"
    assert [(a.text, a.type, a.identifier, a.extra) for a in first.annotations[:3]] == [
        ("rs2234671", "SNP", "rs2234671", ()),
        ("Ex2+860G>C", "DNAMutation", "c|SUB|G|Ex2+860|C", ("RSID:2234671",)),
        ("S276T", "ProteinMutation", "p|SUB|S|276|T", ("RSID:2234671",)),
    ]
    doc_counts: Counter[str] = Counter()
    for record in records:
        to_document(record, doc_counts)
    assert doc_counts["annotations_kept"] == counts["annotations"]


def test_pubtator_central_dump_sample() -> None:
    path = shared_path("fixtures", "real", "pubtator_legacy", "greenelab_bioconcepts2pubtator_offsets_sample.txt")
    records, counts = read(path)
    assert len(records) == 132 and counts["annotations"] == 9504
    empty_ids = sum(1 for r in records for a in r.annotations if a.identifier is None)
    assert empty_ids == 122
    abstract_only = full_text = 0
    for record in records:
        doc_counts: Counter[str] = Counter()
        doc = to_document(record, doc_counts)
        assert not doc.title.endswith(" ")  # offsets fit title.rstrip() + separator + abstract
        if doc_counts["annotations_out_of_range"]:
            full_text += 1  # PMC full-text offsets run past the abstract
        else:
            abstract_only += 1
            assert doc_counts["annotations_kept"] == len(record.annotations)
    assert (abstract_only, full_text) == (98, 34)


def test_standardized_mentions_do_not_match_and_are_counted() -> None:
    path = shared_path("fixtures", "real", "pubtator3",
                       "netmedex_variants_relations_pubtator_STANDARDIZED_col4_not_mention_text.txt")
    records, counts = read(path)
    assert counts["relations"] == 39
    doc_counts: Counter[str] = Counter()
    docs = [to_document(r, doc_counts) for r in records]
    assert doc_counts["annotations_text_mismatch"] > 0
    assert doc_counts["annotations_kept"] + doc_counts["annotations_text_mismatch"] == counts["annotations"]
    assert all(d.text[a.start : a.end] == a.text for d in docs for a in d.annotations)


def test_format_record_round_trip(tmp_path: Path) -> None:
    from pipeline.sources.pubtator_format import format_record

    source = shared_path("data", "ncbi-disease", "NCBIdevelopset_corpus.txt")
    records = list(read_pubtator(source))
    out = tmp_path / "again.pubtator"
    out.write_text("".join(format_record(r) for r in records), encoding="utf-8")
    again = list(read_pubtator(out))

    def strip_lines(r):  # type: ignore[no-untyped-def]
        anns = tuple((a.start, a.end, a.text, a.type, a.identifier, a.extra) for a in r.annotations)
        rels = tuple((x.type, x.arg1, x.arg2, x.extra) for x in r.relations)
        return (r.pmid, r.title, r.abstract, anns, rels)

    assert [strip_lines(r) for r in again] == [strip_lines(r) for r in records]
