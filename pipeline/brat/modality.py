"""The project's one grammar for relation modality and notes in brat files.

brat's web client cannot show or edit attributes on relations (nlplab/brat#791), but its relation
dialog shows and edits one ``AnnotatorNotes`` per relation.  So modality lives in that note, in the
form the released PGxCorpus uses (``hyp``, ``neg``), and every command reads and writes it through
this module: the campaign's collections, ``merge`` and agreement (a modality difference is a
disagreement), ``stats``, ``find``, the exports and the release.

Grammar of a relation's note text (whitespace-separated tokens):

    note     := modality* ( "|" )? free-text?
    modality := a whole token of MODALITY_TOKENS, case-insensitive

* The **leading** whole tokens found in [`MODALITY_TOKENS`][pipeline.brat.modality.MODALITY_TOKENS] are
  the modality (``hyp``, ``hypo``, ``htp`` -> Hypothetical; ``neg``, ``not`` -> Negated).  Tokens are
  never matched by prefix, so ``hypertension`` is free text.
* The first other token ends the modality; a ``|`` token there is a separator and is dropped.
  What follows, as written, is the person's free note.
* Written back ([`format_note`][pipeline.brat.modality.format_note]), modality comes first in canonical
  form (``hyp`` before ``neg``) and free text that could be read as modality is protected by `` | ``:
  a free note "not sure" is written ``| not sure``.  Parsing the written form gives back the same
  modality and free text.
* A relation has **at most one** note: brat edits only the first ``AnnotatorNotes`` of an
  annotation but shows the last one.  [`join_notes`][pipeline.brat.modality.join_notes] folds several
  into one.
* Machine provenance (rule, trigger, source) never goes into a brat note: it lives in sidecar files
  outside the collection, so a person's notes, the modality and the machine's provenance stay apart.

Entity notes are free text: this grammar applies to relations only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

NEGATED = "Negated"
HYPOTHETICAL = "Hypothetical"
MODALITIES: tuple[str, ...] = (HYPOTHETICAL, NEGATED)
"""The modalities, in canonical order (the order of [`modality_label`][pipeline.brat.modality.modality_label] and
[`format_note`][pipeline.brat.modality.format_note])."""

MODALITY_TOKENS: dict[str, str] = {
    "hyp": HYPOTHETICAL,
    "hypo": HYPOTHETICAL,
    "htp": HYPOTHETICAL,
    "neg": NEGATED,
    "not": NEGATED,
}
"""Whole note tokens (lower-cased) that state a modality.  ``htp`` and ``not`` occur in PGxCorpus."""

CANONICAL_TOKEN: dict[str, str] = {HYPOTHETICAL: "hyp", NEGATED: "neg"}
SEPARATOR = "|"


@dataclass(frozen=True)
class RelationNote:
    """A relation note read with the grammar.

    Attributes:
        modality: The modalities stated, a subset of [`MODALITIES`][pipeline.brat.modality.MODALITIES].
        free: The person's free text, stripped (``""`` when none).
        tokens: The modality tokens as written, lower-cased, in order.
    """

    modality: frozenset[str]
    free: str = ""
    tokens: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``none`` or the modalities joined by ``+`` in canonical order (``Hypothetical+Negated``)."""
        return modality_label(self.modality)


def parse_note(text: str) -> RelationNote:
    """Read one relation note: leading modality tokens, an optional ``|``, then free text.

    Args:
        text: The note text of one ``AnnotatorNotes`` line of a relation.

    Returns:
        The modality and free text it states (an empty modality when the note has no leading
            modality token).
    """
    rest = text.strip()
    modality: set[str] = set()
    tokens: list[str] = []
    while rest:
        parts = rest.split(None, 1)
        head = parts[0]
        tail = parts[1] if len(parts) > 1 else ""
        name = MODALITY_TOKENS.get(head.lower())
        if name is not None:
            modality.add(name)
            tokens.append(head.lower())
            rest = tail.strip()
            continue
        if head == SEPARATOR:
            rest = tail.strip()
        break
    return RelationNote(frozenset(modality), rest, tuple(tokens))


def modality_label(modality: Iterable[str]) -> str:
    """Name a set of modalities.

    Args:
        modality: Modality names, each one of [`MODALITIES`][pipeline.brat.modality.MODALITIES].

    Returns:
        ``none``, or the modalities joined by ``+`` in canonical order (``Hypothetical+Negated``).

    Raises:
        ValueError: If a name is not a known modality.
    """
    present = set(modality)
    unknown = present.difference(MODALITIES)
    if unknown:
        raise ValueError(f"unknown modality {sorted(unknown)}; expected {list(MODALITIES)}")
    names = [m for m in MODALITIES if m in present]
    return "+".join(names) if names else "none"


def format_note(modality: Iterable[str], free: str = "") -> str:
    """Write the canonical note text for a modality and a free text.

    ``parse_note(format_note(m, f))`` gives back ``m`` and ``f.strip()`` (inner whitespace of ``f`` kept
    except newlines and tabs, which a brat note line cannot hold and which become spaces).

    Args:
        modality: Modality names, each one of [`MODALITIES`][pipeline.brat.modality.MODALITIES].
        free: The person's free text; protected by a leading `` | `` when it could be read as modality.

    Returns:
        The note text, canonical modality tokens first; ``""`` when both are empty.

    Raises:
        ValueError: If a modality name is not a known modality.
    """
    present = set(modality)
    modality_label(present)  # validates
    head = [CANONICAL_TOKEN[m] for m in MODALITIES if m in present]
    free = " ".join(free.replace("\t", " ").replace("\r", " ").replace("\n", " ").split(" ")).strip()
    if free:
        first = free.split(None, 1)[0]
        if first.lower() in MODALITY_TOKENS or first == SEPARATOR:
            head.append(SEPARATOR)
        head.append(free)
    return " ".join(head)


def join_notes(texts: Iterable[str]) -> RelationNote:
    """Fold several notes of one relation into one.

    Args:
        texts: The note texts of one relation, in file order.

    Returns:
        The union of their modalities, their modality tokens in order, and their free texts joined
            by ``; `` in the order given, each distinct one once.
    """
    modality: set[str] = set()
    tokens: list[str] = []
    free: list[str] = []
    for text in texts:
        note = parse_note(text)
        modality |= note.modality
        tokens.extend(note.tokens)
        if note.free and note.free not in free:
            free.append(note.free)
    return RelationNote(frozenset(modality), "; ".join(free), tuple(tokens))
