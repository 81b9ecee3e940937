r"""brat documents as spaCy training data (``DocBin`` files for ``spacy train``).

Input: brat documents (offsets half-open into each ``.txt``).  Each document becomes one ``Doc`` whose
tokens are the CoNLL tokens ([`tokenize`][pipeline.brat.export.tokenize]: ``\w+`` runs and single other
characters) further cut at every entity boundary, so every fragment is a whole number of tokens and no
entity is widened or dropped for alignment.

* ``doc.spans["sc"]`` (``SPANS_KEY``, the default key of spaCy's ``spancat``): every contiguous entity,
  nested ones included, label = entity type, ``span.id_`` = its brat id;
* ``doc.spans["discontiguous"]`` (``FRAGMENTS_KEY``): one span per fragment of each discontiguous entity,
  label = entity type, ``span.id_`` = the entity's brat id, which links the fragments of one entity (a spaCy
  span cannot have a gap);
* ``doc.ents``: a flat NER view (spaCy's ``ner`` needs non-overlapping spans): the contiguous entities chosen
  longest first, then by start, skipping any that overlaps one already chosen (as CoNLL ``outermost``);
* ``doc.user_data["name"]`` = the brat document name.

Relations, modality, notes, attributes and normalizations have no place in these files (declared by the
release's format table).  Train with, for example:

    python -m spacy init config config.cfg --lang en --pipeline spancat
    python -m spacy train config.cfg --paths.train spacy/train.spacy --paths.dev spacy/dev.spacy

(``--pipeline ner`` trains on ``doc.ents``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pipeline.brat.export import tokenize
from pipeline.brat.standoff import BratDocument, TextBound

SPANS_KEY = "sc"
FRAGMENTS_KEY = "discontiguous"


def _tokens(doc: BratDocument) -> list[tuple[int, int]]:
    """CoNLL tokens of ``doc.text`` cut at every entity fragment boundary (half-open character spans)."""
    cuts = {x for t in doc.textbounds for s, e in t.fragments for x in (s, e)}
    out = []
    for s, e in tokenize(doc.text):
        inner = sorted(c for c in cuts if s < c < e)
        bounds = [s, *inner, e]
        out += [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if doc.text[a:b].strip()]
    return out


def to_docs(docs: Iterable[BratDocument], vocab: Any, counts: Counter[str] | None = None) -> list[Any]:
    """Convert brat documents to spaCy ``Doc`` objects (see the module docstring).

    The ``Doc`` text is the brat text, so spaCy character offsets equal brat offsets (half-open, into
    the ``.txt``).  Empty or whitespace-only fragments are dropped; an entity left with none is not
    written.

    Args:
        docs: The brat documents.
        vocab: The spaCy ``Vocab`` of the ``Doc`` objects (e.g. ``spacy.blank("en").vocab``).
        counts: Updated in place when given: ``documents``, ``entities``, ``entities_discontiguous``,
            ``entities_empty_dropped``, ``entities_not_in_ents`` (every entity left out of the flat
            ``doc.ents`` view: the discontiguous ones, which a spaCy span cannot hold, and
            ``entities_overlapping_not_in_ents``, the contiguous ones that overlap a longer one).

    Returns:
        One ``Doc`` per brat document, in order.

    Raises:
        ValueError: If a ``Doc`` cannot reproduce its brat text exactly (naming the document).
    """
    from spacy.tokens import Doc, Span

    counts = counts if counts is not None else Counter()
    out = []
    for bdoc in docs:
        toks = _tokens(bdoc)
        # words and trailing spaces that give back the text exactly: a gap other than one space is a
        # whitespace token of its own, so character offsets of the Doc are those of the brat text
        words: list[str] = []
        spaces: list[bool] = []
        start_tok: dict[int, int] = {}
        end_tok: dict[int, int] = {}
        pos = 0
        for s, e in toks:
            gap = bdoc.text[pos:s]
            if gap == " " and words:
                spaces[-1] = True
            elif gap:
                words.append(gap)
                spaces.append(False)
            start_tok[s] = len(words)
            words.append(bdoc.text[s:e])
            spaces.append(False)
            end_tok[e] = len(words)
            pos = e
        if bdoc.text[pos:]:
            words.append(bdoc.text[pos:])
            spaces.append(False)
        sdoc = Doc(vocab, words=words, spaces=spaces)
        if sdoc.text != bdoc.text:
            raise ValueError(f"{bdoc.path or bdoc.name}: the spaCy Doc text differs from the brat text")

        def span(s: int, e: int, t: TextBound, sdoc: Any = sdoc, start_tok: dict[int, int] = start_tok,
                 end_tok: dict[int, int] = end_tok) -> Any:
            return Span(sdoc, start_tok[s], end_tok[e], label=t.type, span_id=t.id)

        nested: list[Any] = []
        fragments: list[Any] = []
        flat: list[tuple[tuple[int, int], TextBound]] = []
        for t in bdoc.textbounds:
            frags = sorted((s, e) for s, e in t.fragments if e > s and bdoc.text[s:e].strip())
            if not frags:
                counts["entities_empty_dropped"] += 1
                continue
            counts["entities"] += 1
            if len(frags) == 1:
                nested.append(span(*frags[0], t))
                flat.append((frags[0], t))
            else:
                counts["entities_discontiguous"] += 1
                counts["entities_not_in_ents"] += 1
                fragments += [span(s, e, t) for s, e in frags]
        sdoc.spans[SPANS_KEY] = sorted(nested, key=lambda x: (x.start, x.end, x.label_, x.id_))
        sdoc.spans[FRAGMENTS_KEY] = sorted(fragments, key=lambda x: (x.start, x.end, x.label_, x.id_))
        taken: list[tuple[int, int]] = []
        ents = []
        for (s, e), t in sorted(flat, key=lambda x: (-(x[0][1] - x[0][0]), x[0][0], x[1].type, x[1].id)):
            if any(s < te and e > ts for ts, te in taken):
                counts["entities_not_in_ents"] += 1
                counts["entities_overlapping_not_in_ents"] += 1
                continue
            taken.append((s, e))
            ents.append(span(s, e, t))
        sdoc.ents = sorted(ents, key=lambda x: x.start)
        sdoc.user_data["name"] = bdoc.name
        counts["documents"] += 1
        out.append(sdoc)
    return out


def write_docbin(docs: Sequence[BratDocument], path: str | Path, counts: Counter[str] | None = None) -> Path:
    """Write brat documents as a ``.spacy`` file (a ``DocBin`` with user data).

    The file is written in place (not atomically); the ``Doc`` objects are made with a blank English
    vocabulary ([`to_docs`][pipeline.brat.spacy_docbin.to_docs]).

    Args:
        docs: The brat documents.
        path: The file written; its directory is created if missing.
        counts: Updated in place when given: the counts of
            [`to_docs`][pipeline.brat.spacy_docbin.to_docs].

    Returns:
        The path written.

    Raises:
        ValueError: If a ``Doc`` cannot reproduce its brat text exactly.
    """
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    binary = DocBin(store_user_data=True)
    for sdoc in to_docs(docs, nlp.vocab, counts):
        binary.add(sdoc)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(binary.to_bytes())
    return p


def read_docbin(path: str | Path) -> list[BratDocument]:
    """Read brat documents (entities only) from a ``.spacy`` file.

    The file is one [`write_docbin`][pipeline.brat.spacy_docbin.write_docbin] wrote.  Entities come from
    ``doc.spans["sc"]`` and, joined by ``span.id_``, ``doc.spans["discontiguous"]`` (offsets are character
    offsets of the ``Doc`` text, which is the brat text).

    Args:
        path: The ``.spacy`` file.

    Returns:
        One document per ``Doc``, named by its ``user_data["name"]``, entities with their brat ids and
            half-open offsets into the text.
    """
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    out = []
    for sdoc in DocBin().from_disk(Path(path)).get_docs(nlp.vocab):
        bdoc = BratDocument(str(sdoc.user_data.get("name", "")), sdoc.text)
        for sp in sdoc.spans[SPANS_KEY]:
            bdoc.textbounds.append(TextBound(sp.id_, sp.label_, ((sp.start_char, sp.end_char),), sp.text))
        linked: dict[str, list[Any]] = {}
        for sp in sdoc.spans[FRAGMENTS_KEY]:
            linked.setdefault(sp.id_, []).append(sp)
        for tid, spans in linked.items():
            frags = tuple(sorted((sp.start_char, sp.end_char) for sp in spans))
            bdoc.textbounds.append(TextBound(tid, spans[0].label_, frags, " ".join(sp.text for sp in spans)))
        out.append(bdoc)
    return out
