"""Tests of pipeline.sources.bioc_io.

Covers: pipeline.sources.bioc_io
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline.sources.bioc_io import (
    UNKNOWN,
    BiocFormatError,
    document_from_json,
    infon_value,
    read_bioc,
    read_bioc_json,
    read_bioc_xml,
    sniff_format,
)
from tests.conftest import FIXTURES, shared_path

REAL_FILES = [
    ("bioc", "bioc_pkg_everything.json"),
    ("bioc", "bioc_pkg_everything.xml"),
    ("bioc", "ncbi_biocjson_abbr_annotations_relations.json"),
    ("bioc", "ncbi_biocjson_abbr_annotations_relations.xml"),
    ("bioc", "ncbi_biocjson_collection_10docs_text.json"),
    ("bioc", "ncbi_biocjson_collection_10docs_text.xml"),
    ("bioc", "teamtat_11773052_annotated.bioc.xml"),
    ("pubtator3", "netmedex_22429397_abstract_biocjson_20240916_reindented.json"),
    ("pubtator3", "factoid_37317646_biocjson_doc_edited_multi_id_species.json"),
    ("pubtator_legacy", "greenelab_ptc_api_export_biocxml_100pmcids_lxml_pretty.xml"),
]

# (file, documents, annotations) as counted by hand / grep in the real files.
EXPECTED_SIZES = {
    "bioc_pkg_everything.json": (2, 5),
    "bioc_pkg_everything.xml": (2, 5),
    "ncbi_biocjson_abbr_annotations_relations.json": (10, 18),
    "ncbi_biocjson_abbr_annotations_relations.xml": (10, 18),
    "ncbi_biocjson_collection_10docs_text.json": (10, 0),
    "ncbi_biocjson_collection_10docs_text.xml": (10, 0),
    "teamtat_11773052_annotated.bioc.xml": (1, 23),
    "netmedex_22429397_abstract_biocjson_20240916_reindented.json": (1, 37),
    "factoid_37317646_biocjson_doc_edited_multi_id_species.json": (1, 8),
    "greenelab_ptc_api_export_biocxml_100pmcids_lxml_pretty.xml": (100, 2493),
}


def real(folder: str, name: str) -> Path:
    return shared_path("fixtures", "real", folder, name)


@pytest.mark.parametrize(("folder", "name"), REAL_FILES)
def test_real_files_parse_and_offsets_check_out(folder: str, name: str) -> None:
    counts: Counter[str] = Counter()
    docs = list(read_bioc(real(folder, name), counts=counts))
    n_docs, n_anns = EXPECTED_SIZES[name]
    assert len(docs) == n_docs
    assert sum(len(d.annotations) for d in docs) == n_anns
    assert counts["bioc_documents"] == n_docs
    assert counts["bioc_annotations"] == n_anns
    checked = 0
    for doc in docs:
        source = doc.source_text()
        anns, _ = doc.selected_annotations()
        for ann in anns:
            covered = " ".join(source[s:e] for s, e in ann.spans) if source else ""
            if not source or any(UNKNOWN in source[s:e] for s, e in ann.spans):
                # annotation-only stand-off: no source text to check against
                assert ann.text
                continue
            assert covered == ann.text, (doc.id, ann.id)
            checked += 1
    if name.startswith(("teamtat", "netmedex", "factoid", "greenelab")):
        assert checked > 0


@pytest.mark.parametrize("stem", ["bioc_pkg_everything", "ncbi_biocjson_abbr_annotations_relations",
                                  "ncbi_biocjson_collection_10docs_text"])
def test_xml_and_json_twins_agree(stem: str) -> None:
    xml_docs = list(read_bioc_xml(real("bioc", stem + ".xml")))
    json_docs = list(read_bioc_json(real("bioc", stem + ".json")))
    assert [d.id for d in xml_docs] == [d.id for d in json_docs]
    for x, j in zip(xml_docs, json_docs, strict=True):
        assert [(p.offset, p.text, p.type) for p in x.passages] == [(p.offset, p.text, p.type) for p in j.passages]
        assert [(a.id, a.spans, a.text, a.type, a.passage) for a in x.annotations] == [
            (a.id, a.spans, a.text, a.type, a.passage) for a in j.annotations
        ]
        assert x.source_text() == j.source_text()


def test_pubtator3_response_document() -> None:
    (doc,) = read_bioc(real("pubtator3", "netmedex_22429397_abstract_biocjson_20240916_reindented.json"))
    assert doc.pmid == "22429397"
    title, abstract = doc.passages
    assert (title.type, abstract.type) == ("title", "abstract")
    assert abstract.offset == len(title.text) + 1
    first = doc.annotations[0]
    assert (first.type, first.identifier, first.text, first.spans) == ("Disease", "MESH:D001943", "breast cancer",
                                                                       ((111, 124),))
    source = doc.source_text()
    assert source[len(title.text)] == UNKNOWN  # the separator is not given by the source
    assert source[abstract.offset :] == abstract.text


def test_pubtator3_bare_document_pmid_and_multi_id() -> None:
    (doc,) = read_bioc(real("pubtator3", "factoid_37317646_biocjson_doc_edited_multi_id_species.json"))
    # the edited top-level id is a DOI; the PMID comes from "pmid"
    assert doc.id == "10.15252/embj.2023113616"
    assert doc.pmid == "37317646"
    elegans = next(a for a in doc.annotations if a.text == "C. elegans")
    assert elegans.identifier == "6239;252961;314391;316080"
    assert elegans.type == "Species"


def test_pmc_full_text_selects_title_and_abstract() -> None:
    docs = list(read_bioc(real("pubtator_legacy", "greenelab_ptc_api_export_biocxml_100pmcids_lxml_pretty.xml")))
    first = docs[0]
    assert (first.id, first.pmid) == ("2289422", "1560033")
    selected = [first.passages[i] for i in first.selected_passages()]
    assert [p.section_type for p in selected] == ["TITLE", "ABSTRACT"]
    kept, left_out = first.selected_annotations()
    assert len(kept) == len(first.annotations) and left_out == 0
    # the full texts: body annotations are left out, title/abstract ones kept
    totals = [d.selected_annotations() for d in docs]
    assert sum(len(k) for k, _ in totals) == 1403
    assert sum(n for _, n in totals) == 2493 - 1403
    assert first.source_text().startswith("Hypertrophic chondrocytes undergo further differentiation in culture")
    types = {a.type for d in docs for a in d.annotations}
    assert {"ProteinMutation", "DNAMutation", "CellLine", "Gene", "Chemical", "Disease", "Species"} <= types
    identifiers = {a.identifier for d in docs for a in d.annotations}
    assert "-" in identifiers  # unnormalized ids are kept as given


def test_sentence_level_annotations_and_text() -> None:
    docs = list(read_bioc(real("bioc", "bioc_pkg_everything.xml")))
    second = docs[1]
    assert [a.id for a in second.annotations] == ["3", "4"]
    source = second.source_text()
    assert source[28:30] == "bc"
    assert source[34:36] == "测试"
    # document-level annotation of the first document
    assert any(a.passage is None and a.id == "5" for a in docs[0].annotations)


def test_identifier_keys_discontiguous_and_stand_off() -> None:
    docs = list(read_bioc(FIXTURES / "pubtator" / "synthetic_ids_discontiguous.bioc.xml"))
    first, second = docs
    by_id = {a.id: a for a in first.annotations}
    assert by_id["T1"].spans == ((0, 6), (19, 25))
    assert by_id["T1"].identifier == "D001943"  # legacy "MESH" infon
    assert by_id["T2"].identifier == "MESH:D010051"  # "Identifier"
    assert by_id["T3"].identifier == "672"  # "NCBI Gene"
    assert by_id["T4"].identifier is None  # empty identifier
    assert second.annotations[0].identifier == "D014859"  # "normalized"
    assert first.source_text()[45:54] == "Tamoxifen"
    assert second.source_text() == ""  # annotation-only: no text known


def test_bad_offset_names_file_and_line(tmp_path: Path) -> None:
    path = FIXTURES / "pubtator" / "synthetic_bad_offset.bioc.xml"
    with pytest.raises(BiocFormatError, match=r"synthetic_bad_offset\.bioc\.xml:10: annotation 1.*offset"):
        list(read_bioc(path))
    counts: Counter[str] = Counter()
    (doc,) = read_bioc(path, counts=counts, skip_bad=True)
    assert [a.id for a in doc.annotations] == ["2"]
    assert counts["bioc_bad_records"] == 1


def test_malformed_xml_names_file_and_line() -> None:
    with pytest.raises(BiocFormatError, match=r"synthetic_malformed\.bioc\.xml:5: malformed XML"):
        list(read_bioc(FIXTURES / "pubtator" / "synthetic_malformed.bioc.xml"))


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"documents": [\n{"id": "1", "passages": [}\n]}')
    with pytest.raises(BiocFormatError, match=r"bad\.json:2: malformed JSON"):
        list(read_bioc(path))


def test_json_document_errors_name_the_document() -> None:
    with pytest.raises(BiocFormatError, match=r"document 7 passage 0 annotation a1: no location"):
        document_from_json({"id": "7", "passages": [{"offset": 0, "text": "x", "annotations": [{"id": "a1"}]}]})


def test_gzip_and_concatenated_json(tmp_path: Path) -> None:
    docs = [
        {"id": str(pmid), "passages": [{"offset": 0, "text": f"Doc {pmid}", "infons": {"type": "title"},
                                        "annotations": []}]}
        for pmid in (11, 12)
    ]
    path = tmp_path / "docs.json.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(json.dumps(d) for d in docs))
    assert sniff_format(path) == "bioc-json"
    assert [d.pmid for d in read_bioc(path)] == ["11", "12"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("  ", None), ("-", "-"), (7227, "7227"), ([6239], "6239"),
     (["D1", "D2"], "D1;D2"), ([], None), (True, "true")],
)
def test_infon_value(value: object, expected: str | None) -> None:
    assert infon_value(value) == expected


@pytest.mark.parametrize(
    ("content", "kind"),
    [("<?xml version='1.0'?><collection/>", "bioc-xml"), ('  {"documents": []}', "bioc-json"),
     ("[]", "bioc-json"), ("123|t|Title\n", "pubtator")],
)
def test_sniff_format(tmp_path: Path, content: str, kind: str) -> None:
    path = tmp_path / "f"
    path.write_text(content)
    assert sniff_format(path) == kind


@pytest.mark.parametrize(
    "data",
    [{"id": "../../x/PWNED", "pmid": "../../x/PWNED"}, {"id": "/tmp/PWNED", "_id": "/tmp/PWNED|PMC1"},
     {"id": "x", "pmid": "１２３"}, {"id": "x", "passages": [{"infons": {"article-id_pmid": "1/../2"}}]}],
)
def test_a_pmid_that_is_not_one_is_never_used(data: dict[str, object]) -> None:
    """Issue 23, defect 8: a BioC document (file or PubTator3 answer) whose PMID is a path has no PMID."""
    from pipeline.sources.bioc_io import document_from_json

    assert document_from_json({"passages": [], **data}).pmid is None
