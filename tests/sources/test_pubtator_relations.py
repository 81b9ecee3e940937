"""PubTator3 relations in the annotation inputs: BioC XML and JSON, PubTator-format dumps (``--annotations``).

Read from the recorded real responses in ../shared/fixtures/real/ (PMID 22429397 in the PubTator3
biocjson and pubtator exports); the BioC XML form of the same response is written from the recorded
JSON in ``tmp_path`` the way PubTator3's biocxml export writes relations (document-level
``<relation>`` elements whose ``role1``/``role2`` infons read ``Type|identifier``).

Covers: pipeline.documents, pipeline.nlp.preannotate, pipeline.nlp.relations.documents, pipeline.nlp.relations.rules,
pipeline.nlp.sentences, pipeline.nlp.typemap, pipeline.schema, pipeline.sources.bioc_io,
pipeline.sources.pubtator_format
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from pipeline.documents import ConceptRelation, Document, Sentence
from pipeline.nlp import sentences, typemap
from pipeline.nlp.preannotate import PreannotationConfig, load_file_sources, preannotate
from pipeline.nlp.relations.documents import relate_documents
from pipeline.nlp.relations.rules import DEFAULT_RULES, load_rules
from pipeline.schema import load_schema
from pipeline.sources import bioc_io
from pipeline.sources.pubtator_format import read_pubtator, to_document
from tests.conftest import shared_path

JSON_NAME = "netmedex_22429397_abstract_biocjson_20240916_reindented.json"
PUBTATOR_NAME = "netmedex_22429397_abstract_pubtator_20240916.txt"


def _real(name: str) -> Path:
    return shared_path("fixtures", "real", "pubtator3", name)


def _pairs(relations: list[ConceptRelation] | tuple[tuple[str, str, str], ...]) -> set[frozenset[str]]:
    out = set()
    for r in relations:
        kind, c1, c2 = (r.type, r.concept1, r.concept2) if isinstance(r, ConceptRelation) else r
        out.add(frozenset((c1, c2)) | {kind})
    return out


def _as_biocxml(doc: dict, path: Path) -> None:
    """The recorded biocjson document as PubTator3's biocxml writes it (text, annotations, relations)."""
    parts = ["<?xml version='1.0' encoding='UTF-8'?><collection><source>PubTator</source><document>",
             f"<id>{doc['pmid']}</id>"]
    for p in doc["passages"]:
        parts.append(f"<passage><infon key=\"type\">{escape(p['infons']['type'])}</infon>"
                     f"<offset>{p['offset']}</offset><text>{escape(p['text'])}</text>")
        for a in p["annotations"]:
            loc = a["locations"][0]
            parts.append(f"<annotation id=\"{a['id']}\"><infon key=\"identifier\">"
                         f"{escape(str(a['infons'].get('identifier')))}</infon><infon key=\"type\">"
                         f"{escape(a['infons']['type'])}</infon><location offset=\"{loc['offset']}\" "
                         f"length=\"{loc['length']}\"/><text>{escape(a['text'])}</text></annotation>")
        parts.append("</passage>")
    for r in doc["relations"]:
        i = r["infons"]
        parts.append(f"<relation id=\"{r['id']}\"><infon key=\"score\">{i.get('score', '')}</infon>"
                     f"<infon key=\"role1\">{escape(i['role1']['type'] + '|' + i['role1']['identifier'])}</infon>"
                     f"<infon key=\"role2\">{escape(i['role2']['type'] + '|' + i['role2']['identifier'])}</infon>"
                     f"<infon key=\"type\">{i['type']}</infon></relation>")
    parts.append("</document></collection>")
    path.write_text("".join(parts), encoding="utf-8")


def _response_doc() -> dict:
    return json.loads(_real(JSON_NAME).read_text(encoding="utf-8"))["PubTator3"][0]


def test_biocxml_relations_are_the_same_concept_pairs_as_the_pubtator_export(tmp_path: Path) -> None:
    xml = tmp_path / "22429397.xml"
    _as_biocxml(_response_doc(), xml)
    counts: Counter[str] = Counter()
    (bdoc,) = list(bioc_io.read_bioc_xml(xml, counts=counts))
    (record,) = list(read_pubtator(_real(PUBTATOR_NAME)))
    assert len(bdoc.concept_relations) == len(record.relations) == counts["bioc_concept_relations"] > 0
    assert _pairs(bdoc.concept_relations) == {frozenset((r.arg1, r.arg2)) | {r.type} for r in record.relations}


@pytest.mark.parametrize(
    ("role", "identifier"),
    [
        ("Chemical|MESH:C004918", "MESH:C004918"),
        ("Gene|6611", "6611"),
        ("6611", "6611"),
        ("Variant|tmVar:p|SUB|L|858|R;HGVS:p.L858R", "tmVar:p|SUB|L|858|R;HGVS:p.L858R"),
        ("tmVar:p|SUB|L|858|R", "tmVar:p|SUB|L|858|R"),  # bars of a variant id are not a type prefix
        ({"identifier": "MESH:D014859", "type": "Chemical"}, "MESH:D014859"),
        ("", None),
    ],
)
def test_role_identifier(role: object, identifier: str | None) -> None:
    assert bioc_io._role_identifier(role) == identifier


@pytest.mark.parametrize("name", ["teamtat_11773052_annotated.bioc.xml", "ncbi_biocjson_abbr_annotations_relations.xml",
                                  "bioc_pkg_everything.xml"])
def test_real_bioc_relations_between_annotations_are_not_concept_relations(name: str) -> None:
    """BioC relations whose nodes refer to annotations (TeamTat, NCBI abbreviations) are left alone."""
    counts: Counter[str] = Counter()
    docs = list(bioc_io.read_bioc_xml(shared_path("fixtures", "real", "bioc", name), counts=counts))
    assert docs and all(d.concept_relations == () for d in docs)
    assert counts["bioc_concept_relations"] == counts["bioc_concept_relations_incomplete"] == 0


def test_incomplete_biocxml_relation_is_counted_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    xml = tmp_path / "one.xml"
    xml.write_text("<collection><document><id>123</id><passage><offset>0</offset><text>A B.</text></passage>"
                   "<relation id=\"R9\"><infon key=\"role1\">Gene|1</infon><infon key=\"type\">Association</infon>"
                   "</relation></document></collection>", encoding="utf-8")
    counts: Counter[str] = Counter()
    with caplog.at_level(logging.WARNING):
        (bdoc,) = list(bioc_io.read_bioc_xml(xml, counts=counts))
    assert bdoc.concept_relations == () and counts["bioc_concept_relations_incomplete"] == 1
    assert "R9" in caplog.text and str(xml) in caplog.text


@pytest.mark.parametrize("form", ["pubtator", "biocjson", "biocxml"])
def test_annotation_files_carry_relations_to_the_documents(form: str, tmp_path: Path) -> None:
    """``--annotations`` in each form: the document built from the PubTator export gets the relations."""
    (record,) = list(read_pubtator(_real(PUBTATOR_NAME)))
    source = to_document(record)
    if form == "pubtator":
        path = _real(PUBTATOR_NAME)
    elif form == "biocjson":
        path = _real(JSON_NAME)
    else:
        path = tmp_path / "22429397.xml"
        _as_biocxml(_response_doc(), path)
    relations: dict[str, list[ConceptRelation]] = {}
    counts: Counter[str] = Counter()
    groups = load_file_sources([path], ["22429397"], counts, relations=relations)
    assert groups["22429397"] and _pairs(relations["22429397"]) == _pairs(source.concept_relations)
    # through the pre-annotation stage, onto a PubMed document of the same text (no relations of its own)
    plain = Document(pmid="22429397", title=source.title, text=source.text, origin="pubmed",
                     sentences=(Sentence(0, len(source.text)),))
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(path,))
    (out,) = list(preannotate([plain], config, Counter()))
    assert _pairs(list(out.concept_relations)) == _pairs(source.concept_relations)
    assert len(out.concept_relations) == len(record.relations)


def test_annotation_file_relations_become_proposals_or_are_counted_with_the_pmid(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """From a BioC XML dump through sentences, type mapping and relations; an unknown concept is never written."""
    schema = load_schema()
    rules = load_rules(DEFAULT_RULES, schema)
    (record,) = list(read_pubtator(_real(PUBTATOR_NAME)))
    source = to_document(record)
    doc = _response_doc()
    doc["relations"].append({"id": "R99", "infons": {"type": "Association", "role1": {"identifier": "MESH:D000001",
                             "type": "Chemical"}, "role2": {"identifier": "6611", "type": "Gene"}}})
    xml = tmp_path / "22429397.xml"
    _as_biocxml(doc, xml)
    plain = Document(pmid="22429397", title=source.title, text=source.text, origin="pubmed")
    counts: Counter[str] = Counter()
    (plain,) = list(sentences.split_documents([plain], counts))
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(xml,))
    (pre,) = list(preannotate([plain], config, counts))
    (mapped,) = list(typemap.map_documents([pre], schema, counts))
    with caplog.at_level(logging.INFO, logger="pipeline.nlp.relations"):
        (out,) = list(relate_documents([mapped], rules, schema, counts, use_rules=False))
    assert out.relations and all(r.rule and r.rule.startswith("pubtator:") for r in out.relations)
    assert counts["concept_relations"] == len(record.relations) + 1
    assert counts["concept_relations_no_mentions"] >= 1
    assert "22429397" in caplog.text and "D000001" in caplog.text
    written = {frozenset((out.annotations[r.arg1].identifier or "", out.annotations[r.arg2].identifier or ""))
               for r in out.relations}
    assert not any("MESH:D000001" in pair for pair in written)
