"""``pgx-corpus build --annotator pubtator-file --annotations FILE``: annotation files in PubTator and BioC
formats, through the command line (which passes the build's configuration record to every task, so a
stage that does not read the annotation files must not refuse because they are in the record).

Covers: pipeline.cli, pipeline.cli.build_commands, pipeline.documents, pipeline.nlp.lexicon,
pipeline.sources.pubmed_xml, pipeline.store
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from pipeline import store
from pipeline.cli import main
from pipeline.documents import Document
from pipeline.nlp.lexicon import DEFAULT_LEXICON
from pipeline.sources.pubmed_xml import iter_documents
from tests.conftest import shared_path

PROJECT = Path(__file__).resolve().parents[2]
DEMO_XML = PROJECT / "data" / "demo" / "pubmed"


def _demo_docs() -> list[Document]:
    return list(iter_documents(DEMO_XML / "demo.xml", Counter()))


def _warfarin(doc: Document) -> int:
    return doc.text.lower().find("warfarin")


def _pubtator_dump(path: Path) -> set[str]:
    blocks, annotated = [], set()
    for doc in _demo_docs():
        lines = [f"{doc.pmid}|t|{doc.title}", f"{doc.pmid}|a|{doc.abstract}"]
        start = _warfarin(doc)
        if start >= 0:
            annotated.add(doc.pmid)
            lines.append(f"{doc.pmid}\t{start}\t{start + 8}\t{doc.text[start:start + 8]}\tChemical\tMESH:D014859")
        blocks.append("\n".join(lines) + "\n\n")
    path.write_text("".join(blocks), encoding="utf-8")
    return annotated


def _bioc_xml(path: Path) -> set[str]:
    parts, annotated = ["<?xml version='1.0' encoding='UTF-8'?>\n<collection><source>test</source>"], set()
    for doc in _demo_docs():
        start = _warfarin(doc)
        annotation = ""
        if start >= 0:
            annotated.add(doc.pmid)
            annotation = (f'<annotation id="1"><infon key="type">Chemical</infon>'
                          f'<infon key="identifier">MESH:D014859</infon>'
                          f'<location offset="{start}" length="8"/><text>{escape(doc.text[start:start + 8])}</text>'
                          "</annotation>")
        abstract_start = len(doc.title) + 1
        # one passage per part, the annotation in whichever holds it (offsets are document-relative)
        in_title = 0 <= start < len(doc.title)
        parts.append(
            f"<document><id>{doc.pmid}</id>"
            f'<passage><infon key="type">title</infon><offset>0</offset><text>{escape(doc.title)}</text>'
            f"{annotation if in_title else ''}</passage>"
            f'<passage><infon key="type">abstract</infon><offset>{abstract_start}</offset>'
            f"<text>{escape(doc.abstract)}</text>{'' if in_title else annotation}</passage></document>"
        )
    parts.append("</collection>\n")
    path.write_text("".join(parts), encoding="utf-8")
    return annotated


def _build(out: Path, *args: str) -> int:
    return main(["build", "--out", str(out), "--annotator", "pubtator-file", "--no-fallback-local",
                 "--until", "preannotated", *args])


def _pubtator_annotated(out: Path) -> dict[str, list[tuple[str, str]]]:
    (stage,) = (out / "work" / "03_preannotated").iterdir()
    return {
        d.pmid: [(d.text[a.start:a.end], a.type) for a in d.annotations if a.source == "pubtator"]
        for d in store.iter_directory(stage, Document)
    }


@pytest.mark.parametrize("writer", [_pubtator_dump, _bioc_xml], ids=["pubtator", "bioc-xml"])
def test_build_with_an_annotation_file(tmp_path: Path, writer: object, capsys: pytest.CaptureFixture[str]) -> None:
    suffix = ".pubtator" if writer is _pubtator_dump else ".bioc.xml"
    annotations = tmp_path / f"annotations{suffix}"
    expected = writer(annotations)  # type: ignore[operator]
    out = tmp_path / "out"
    code = _build(out, "--pubmed-xml", str(DEMO_XML), "--annotations", str(annotations))
    assert code == 0, capsys.readouterr().err
    found = {pmid for pmid, anns in _pubtator_annotated(out).items() if ("warfarin", "Chemical") in
             [(text.lower(), kind) for text, kind in anns]}
    assert expected and found == expected


@pytest.mark.parametrize(
    "annotations",
    ["pubtator3/netmedex_22429397_abstract_pubtator_20240916.txt",
     "pubtator3/netmedex_22429397_abstract_biocjson_20240916_reindented.json"],
    ids=["real-pubtator", "real-biocjson"],
)
def test_build_with_a_real_annotation_file(tmp_path: Path, annotations: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """PubTator's own export of PMID 22429397, as documents (PubTator file) and as annotations."""
    documents = shared_path("fixtures", "real", "pubtator3", "netmedex_22429397_abstract_pubtator_20240916.txt")
    annotation_file = shared_path("fixtures", "real", *annotations.split("/"))
    out = tmp_path / "out"
    code = _build(out, "--pubtator", str(documents), "--annotations", str(annotation_file))
    assert code == 0, capsys.readouterr().err
    annotated = _pubtator_annotated(out)
    assert list(annotated) == ["22429397"]
    kinds = {kind for _, kind in annotated["22429397"]}
    assert "Disease" in kinds and len(annotated["22429397"]) >= 10


pytestmark = pytest.mark.skipif(
    not DEFAULT_LEXICON.exists(), reason=f"local annotator lexicon missing ({DEFAULT_LEXICON}): run `make setup`"
)
