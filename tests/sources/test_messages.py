"""Issue 10 (8): messages that keep the place (file:line, record position, document id and offsets).

Covers: pipeline.documents, pipeline.nlp.align, pipeline.nlp.preannotate, pipeline.sources.pubmed_xml,
pipeline.sources.pubtator_format
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest

from pipeline.documents import Annotation, Document
from pipeline.nlp.align import realign
from pipeline.nlp.preannotate import _realigned
from pipeline.sources.pubmed_xml import iter_documents
from pipeline.sources.pubtator_format import (
    PubtatorAnnotation,
    PubtatorFormatError,
    PubtatorRecord,
    read_pubtator,
    to_document,
)
from tests.sources.test_pubmed_xml import article, article_set


@pytest.mark.parametrize("offset", ["1a", "1.5", "abc", "-"])
def test_non_integer_offset_is_an_error_not_a_relation(tmp_path: Path, offset: str) -> None:
    path = tmp_path / "in.pubtator"
    path.write_text(f"1|t|Warfarin.\n1|a|Dose.\n1\tCID\tD1\tD2\n1\t{offset}\t8\tWarfarin\tChemical\tMESH:D1\n")
    with pytest.raises(PubtatorFormatError, match=r"in\.pubtator:4: bad offsets"):
        list(read_pubtator(path))
    counts: Counter[str] = Counter()
    (record,) = read_pubtator(path, skip_bad_lines=True, counts=counts)
    assert counts["bad_lines"] == 1
    assert [r.type for r in record.relations] == ["CID"]  # the real relation line is still one


def test_dropped_pubtator_annotations_are_warnings_with_place(caplog: pytest.LogCaptureFixture) -> None:
    bad = tuple(PubtatorAnnotation(30 + i, 40 + i, "x", "Gene", None, 3 + i) for i in range(5))
    record = PubtatorRecord(pmid="9", title="Abc.", abstract="Defg.", annotations=bad, source="f.pubtator")
    with caplog.at_level(logging.WARNING):
        to_document(record, Counter())
    (message,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert message.startswith("PMID 9: 5 annotation(s) dropped: f.pubtator:3: offsets 30-40 beyond the text")
    assert message.endswith("and 2 more")  # aggregated: the first three, then a count


def test_pubmed_record_without_pmid_names_file_and_position(tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "batch.xml"
    path.write_bytes(article_set(article(pmid="1"), article().replace('<PMID Version="1">1</PMID>', "")))
    counts: Counter[str] = Counter()
    with caplog.at_level(logging.WARNING):
        docs = list(iter_documents(path, counts))
    assert [d.pmid for d in docs] == ["1"] and counts["no_pmid"] == 1
    assert f"{path}:" in caplog.text and "record 2" in caplog.text and "without PMID" in caplog.text


def test_dropped_bioc_annotations_name_the_document_and_offsets(caplog: pytest.LogCaptureFixture) -> None:
    source = "Warfarin and CYP2C9."
    doc = Document(pmid="77", title="Warfarin and CYP2C9.", text=source)
    anns = [Annotation(fragments=((0, 8),), type="Chemical", source="pubtator", text="Warfarin"),
            Annotation(fragments=((90, 95),), type="Gene", source="pubtator", text="CYP2C"),
            Annotation(fragments=((13, 19),), type="Gene", source="pubtator", text="XXXXXX")]
    dropped: list[tuple[str, Annotation]] = []
    kept = realign(anns, source, doc.text, Counter(), dropped=dropped)
    assert [a.text for a in kept] == ["Warfarin"]
    assert [reason for reason, _ in dropped] == ["offset_outside_text", "text_mismatch"]
    with caplog.at_level(logging.WARNING):
        _realigned(doc, [(source, anns)], Counter())
    assert "PMID 77: 2 PubTator/BioC annotation(s) dropped" in caplog.text
    assert "'CYP2C' at 90-95 (offset outside text)" in caplog.text and "13-19 (text mismatch)" in caplog.text
