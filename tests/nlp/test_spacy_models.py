"""spaCy model loading: scispaCy models as --model choices, components told apart by factory.

Tiny pipelines written to tmp_path stand in for the model families (components named and arranged as
scispaCy's, an NER-only pipeline, a transformer pipeline without its package, a model built for spaCy 3.7);
the real scispaCy models are tested when installed and skipped with a message otherwise (they are not on
PyPI and cannot be downloaded here).

Covers: pipeline.documents, pipeline.nlp.extend, pipeline.nlp.ontology, pipeline.nlp.spacy_models
"""

from __future__ import annotations

import json
import logging
import shutil
from collections import Counter
from pathlib import Path

import pytest
import spacy
from spacy.language import Language
from spacy.training import Example

from pipeline.documents import Annotation, Document, Sentence
from pipeline.nlp import spacy_models as sm

WORDS = ["CYP2C9", "variants", "reduce", "warfarin", "clearance", "."]
TAGS = ["NNP", "NNS", "VBP", "NN", "NN", "."]
HEADS = [1, 2, 2, 4, 2, 2]
DEPS = ["compound", "nsubj", "ROOT", "compound", "dobj", "punct"]


def _examples(nlp: Language) -> list[Example]:
    doc = nlp.make_doc(" ".join(WORDS))
    return [Example.from_dict(doc, {"words": WORDS, "tags": TAGS, "heads": HEADS, "deps": DEPS,
                                    "entities": ["U-GENE", "O", "O", "U-CHEMICAL", "O", "O"]})]


def _save(nlp: Language, path: Path) -> str:
    nlp.initialize(lambda: _examples(nlp))
    nlp.to_disk(path)
    return str(path)


@pytest.fixture(scope="module")
def sci_like(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A pipeline laid out like scispaCy's en_core_sci_* (plus an entity ruler), its parser named "dep"."""
    nlp = spacy.blank("en")
    for name, factory in (("tok2vec", "tok2vec"), ("tagger", "tagger"), ("dep", "parser"), ("ner", "ner"),
                          ("abbreviation_ruler", "entity_ruler")):
        nlp.add_pipe(factory, name=name)
    return _save(nlp, tmp_path_factory.mktemp("models") / "en_core_sci_like")


def test_only_parsing_components_are_kept_whatever_their_names(sci_like: str) -> None:
    nlp = sm.load_parser(sci_like)
    assert nlp.pipe_names == ["tok2vec", "tagger", "dep"]  # "ner" and the ruler removed, the parser kept by factory
    assert sm.load_parser(sci_like) is nlp  # cached per name
    doc = nlp(" ".join(WORDS))
    assert len(doc) == len(WORDS) and doc.has_annotation("DEP") and doc.has_annotation("TAG")
    assert not doc.ents


def test_ner_only_pipeline_is_refused(tmp_path: Path) -> None:
    nlp = spacy.blank("en")
    nlp.add_pipe("ner").add_label("CHEMICAL")
    nlp.initialize()
    path = str(tmp_path / "en_ner_like")
    nlp.to_disk(path)
    with pytest.raises(sm.ModelNotAvailableError, match=r"has no dependency parser \(pipeline: \['ner'\]\)"):
        sm.load_parser(path)


def test_missing_factory_package_is_named(tmp_path: Path) -> None:
    # en_core_sci_scibert runs a "transformer" component, whose factory comes from spacy-transformers.
    path = tmp_path / "en_core_sci_scibert_like"
    spacy.blank("en").to_disk(path)
    config = (path / "config.cfg").read_text(encoding="utf-8")
    config = config.replace("pipeline = []", 'pipeline = ["transformer"]')
    config = config.replace("[components]", '[components]\n\n[components.transformer]\nfactory = "transformer"')
    (path / "config.cfg").write_text(config, encoding="utf-8")
    if "transformer" in spacy.registry.factories:
        pytest.skip("spacy-transformers is installed: the transformer factory exists")
    with pytest.raises(sm.ModelNotAvailableError, match="spacy-transformers"):
        sm.load_parser(str(path))


def test_model_built_for_another_spacy_version_loads_with_a_warning(
    sci_like: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # scispaCy 0.5.4's models declare spaCy 3.7; under spaCy 3.8 they load and spaCy warns (W095).
    path = tmp_path / "en_core_sci_old"
    shutil.copytree(sci_like, path)
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    meta["spacy_version"] = ">=3.7.4,<3.8.0"
    (path / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="pipeline.nlp.spacy_models"):
        loaded = sm.load_parser(str(path))
    assert loaded.pipe_names == ["tok2vec", "tagger", "dep"]
    assert any("W095" in r.getMessage() for r in caplog.records)


def test_install_hints() -> None:
    assert sm.install_hint("en_core_sci_sm") == (
        "pip install --no-deps https://s3-us-west-2.amazonaws.com/ai2-s2-scispacy/releases/v0.5.4/"
        "en_core_sci_sm-0.5.4.tar.gz"
    )
    assert sm.install_hint("en_ner_bc5cdr_md").endswith("en_ner_bc5cdr_md-0.5.4.tar.gz")
    assert "en_core_sci_md" in sm.install_hint("my_model")
    missing = [name for name in sm.SCISPACY_MODELS if name not in sm.installed_scispacy_models()]
    if missing:
        with pytest.raises(sm.ModelNotAvailableError, match=rf"not installed: pip install --no-deps .*{missing[0]}"):
            sm.load_parser(missing[0])


# slow only where the model is installed (loading it takes seconds); elsewhere the test skips at once
@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.slow] if spacy.util.is_package(name) else [])
                                  for name in sm.SCISPACY_MODELS])
def test_installed_scispacy_model(name: str) -> None:
    if not spacy.util.is_package(name):
        pytest.skip(f"scispaCy model {name} is not installed (it is not on PyPI; install: {sm.install_hint(name)})")
    if name == "en_core_sci_scibert" and "transformer" not in spacy.registry.factories:
        pytest.skip("en_core_sci_scibert needs spacy-transformers, which is not installed")
    from pipeline.nlp.extend import extend_documents
    from pipeline.nlp.ontology import load_ontology

    nlp = sm.load_parser(name)
    assert "ner" not in nlp.pipe_names
    assert any(nlp.get_pipe_meta(c).factory in sm.PARSER_FACTORIES for c in nlp.pipe_names)
    text = "Warfarin sensitivity was higher in CYP2C9*3 carriers."
    doc = nlp(text)
    assert doc.has_annotation("DEP") and doc.has_annotation("LEMMA")
    keys = tuple(Annotation(((text.index(s), text.index(s) + len(s)),), t, "pubtator", text=s)
                 for s, t in (("Warfarin", "Chemical"), ("CYP2C9", "Gene")))
    counts: Counter[str] = Counter()
    (out,) = list(extend_documents([Document("1", text, text, sentences=(Sentence(0, len(text)),),
                                             annotations=keys)], load_ontology(), nlp, counts))
    assert {a.covered(text) for a in out.annotations} >= {"Warfarin", "CYP2C9"}
