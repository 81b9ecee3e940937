"""Parse only what can matter: sentences that cannot pass the pgx filter are not parsed, the output is the same.

Covers: pipeline.corpus.brat_export, pipeline.corpus.select, pipeline.documents, pipeline.nlp.extend,
pipeline.nlp.lexicon, pipeline.nlp.ontology, pipeline.nlp.parse_gate, pipeline.nlp.preannotate,
pipeline.nlp.sentences, pipeline.nlp.spacy_models, pipeline.nlp.typemap, pipeline.schema, pipeline.sources.retrieval
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline import schema as schema_mod
from pipeline.corpus import brat_export, select
from pipeline.documents import TITLE_SEPARATOR, Annotation, Document, SentenceRecord
from pipeline.nlp import extend, ontology, parse_gate, preannotate, sentences, spacy_models, typemap
from pipeline.nlp.lexicon import DEFAULT_LEXICON
from pipeline.sources import retrieval
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def nlp() -> object:
    try:
        return spacy_models.load_parser()
    except spacy_models.ModelNotAvailableError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def gate(nlp: object) -> parse_gate.ParseGate:
    return parse_gate.ParseGate(
        ontology.load_ontology(), schema_mod.load_schema(), select.load_filter_settings(), parse_gate.lemma_forms(nlp)
    )


def document(text: str, *annotations: tuple[str, str]) -> Document:
    """A one-sentence abstract under a short title; annotations given as (surface, type) found in the text."""
    title = "A title."
    full = title + TITLE_SEPARATOR + text
    anns = []
    for surface, type_ in annotations:
        start = full.index(surface, len(title))
        anns.append(Annotation(((start, start + len(surface)),), type_, "pubtator", text=surface))
    doc = Document("1", title, full, annotations=tuple(sorted(anns, key=Annotation.sort_key)))
    return next(sentences.split_documents([doc], collections.Counter()))


def abstract_sentence(doc: Document) -> object:
    return next(s for s in doc.sentences if s.start > len(doc.title))


@pytest.mark.parametrize(
    ("text", "annotations", "parse"),
    [
        # key entities of both kinds
        ("Warfarin dose requirements were associated with CYP2C9 genotype.",
         (("Warfarin", "Chemical"), ("CYP2C9", "Gene")), True),
        # a genomic key and a drug-class term that the ontology makes a Chemical on its own
        ("Patients carrying the SLCO1B1 variant had more myopathy on statins.", (("SLCO1B1", "Gene"),), True),
        # a chemical key and a composite that can give a genomic type ("X mRNA" is a Transcript)
        ("Dexamethasone lowered the amounts of transcripts in these cells.", (("Dexamethasone", "Chemical"),), True),
        # a chemical and a disease, and no word from which the ontology makes a genomic factor
        ("Aspirin reduced the risk of stroke in these patients.", (("Aspirin", "Chemical"), ("stroke", "Disease")),
         False),
        # nothing a chemical can come from
        ("The CYP2D6 poor metabolizer phenotype was frequent in this cohort.", (("CYP2D6", "Gene"),), False),
        # malformed: no verb
        ("Warfarin and CYP2C9 in the elderly.", (("Warfarin", "Chemical"), ("CYP2C9", "Gene")), False),
    ],
)
def test_gate_decisions(gate: parse_gate.ParseGate, text: str, annotations: tuple, parse: bool) -> None:
    doc = document(text, *annotations)
    assert gate.can_pass(doc, abstract_sentence(doc)) is parse


def test_stems_cover_lemma_rules(nlp: object) -> None:
    forms = parse_gate.lemma_forms(nlp)
    assert forms.enabled
    assert "antibod" in forms.stems("antibody")  # "antibodies" -> "antibody" by the rule ies -> y
    assert any(stem in "mice" for stem in forms.stems("mouse"))  # an exception form


def pipeline_records(docs: list[Document], nlp: object, should_parse: Callable | None,
                     counts: collections.Counter[str]) -> list[SentenceRecord]:
    onto = ontology.load_ontology()
    schema = schema_mod.load_schema()
    extended = extend.extend_documents(docs, onto, nlp, counts, should_parse=should_parse)  # type: ignore[arg-type]
    mapped = typemap.map_documents(extended, schema, collections.Counter(), ontology=onto)
    return list(select.filter_sentences(mapped, "pgx", schema, collections.Counter()))


def dev_documents() -> list[Document]:
    """The PGxCorpus development sentences with their PubTator annotations, one document each."""
    root = shared_path("data", "pgxcorpus-dev")
    docs = []
    for txt in sorted((root / "gold").glob("*.txt")):
        text = txt.read_text(encoding="utf-8").strip()
        title = f"PGxCorpus development sentence {txt.stem}."
        offset = len(title) + len(TITLE_SEPARATOR)
        anns = []
        for line in (root / "pubtator" / f"{txt.stem}.ann").read_text(encoding="utf-8").splitlines():
            if not line.startswith("T") or ";" in line.split("\t")[1]:
                continue
            _tid, spec, surface = line.split("\t")
            type_, start, end = spec.split()
            s, e = int(start) + offset, int(end) + offset
            anns.append(Annotation(((s, e),), type_, "pubtator", text=surface))
        doc = Document(txt.stem.replace("_", "0"), title, title + TITLE_SEPARATOR + text,
                       annotations=tuple(sorted(anns, key=Annotation.sort_key)))
        docs.append(doc)
    return list(sentences.split_documents(docs, collections.Counter()))


def genia_documents(n: int) -> list[Document]:
    if not DEFAULT_LEXICON.exists():
        pytest.skip(f"local annotator lexicon missing ({DEFAULT_LEXICON})")
    files = sorted(shared_path("data", "genia", "pubmed-xml").glob("*.xml"))[:n]
    docs = retrieval.documents_from_files(files, [], collections.Counter())
    split = sentences.split_documents(docs, collections.Counter())
    config = preannotate.PreannotationConfig(annotator="local")
    return list(preannotate.preannotate(split, config, collections.Counter()))


@pytest.mark.slow
def test_skipping_gives_the_same_brat_output_on_real_data(
    gate: parse_gate.ParseGate, nlp: object, tmp_path: Path
) -> None:
    docs = dev_documents() + genia_documents(150)
    counts: collections.Counter[str] = collections.Counter()
    everything = pipeline_records(docs, nlp, None, collections.Counter())
    gated = pipeline_records(docs, nlp, gate.can_pass, counts)
    assert len(everything) > 100
    assert counts["skipped_cannot_pass"] > 0.2 * counts["sentences_parsed"]
    assert gated == everything
    schema = schema_mod.load_schema()
    brat_export.export_collection(everything, tmp_path / "all", schema, collections.Counter())
    brat_export.export_collection(gated, tmp_path / "gated", schema, collections.Counter())
    tree = {p.relative_to(tmp_path / "all"): p.read_bytes() for p in (tmp_path / "all").rglob("*") if p.is_file()}
    assert tree == {
        p.relative_to(tmp_path / "gated"): p.read_bytes() for p in (tmp_path / "gated").rglob("*") if p.is_file()
    }
