"""Harmonize several annotators' brat collections (centroid voting) and resolve type ambiguity.

Centroid algorithm (Lewin, Kafkas & Rebholz-Schuhmann 2012, used for the
chemical patent gold standard), per document and per entity type:

* every annotator votes for each character inside one of its annotations of
  that type and for each *pair of adjacent characters inside the same
  annotation* (the "join" between characters ``i`` and ``i + 1``); an
  annotator votes at most once per character and per pair, however many of
  its annotations cover them;
* the consensus spans are the maximal runs of characters that each have at
  least ``threshold`` votes and whose adjacent pairs each have at least
  ``threshold`` votes.  So ``[AB]`` by one annotator against ``[A][B]`` by two
  gives ``[A]`` and ``[B]`` with threshold 2 (the join A|B has only 1 vote),
  and spans differing by a boundary converge on the part most annotators share.

Nested and overlapping spans of one type: an annotator's own spans of a type
that overlap each other would merge into one run of characters (a
``Chemical`` "chemotherapy with carboplatin" swallowing the ``Chemical``
"carboplatin" inside it).  So each annotator's spans of a type are first dealt
into *layers* (by start, longest first; each span into the first layer where
it overlaps no span already there: the outermost spans in layer 1, the spans
nested in them in layer 2...), and the vote above runs layer by layer.  When
annotators put one span in different layers (one made the outer span too, the
other did not), the layers miss it; so a span that overlaps another span of
the same type by the same annotator is also kept when at least ``threshold``
annotators made exactly it.  Sets that agree on every span come back whole.

Offsets are half-open character offsets into each document's ``.txt``.
Discontiguous annotations cannot be voted character by character without
losing which fragments belong together, so they are voted as a whole: one is
kept when at least ``threshold`` annotators have exactly the same fragments
and type.  Documents are matched by name; an annotator without a document
casts no votes for it (listed in ``missing``).  Relations, notes and
normalizations are not harmonized (only entities are).

Ambiguity: a *term* is an entity's covered text lower-cased with whitespace
collapsed; a term annotated with more than one type across the collection is
ambiguous.  A decision file (TSV ``term<TAB>action[<TAB>TYPE]`` or YAML list
of ``{term, action, type}``) resolves it: ``remove`` deletes every entity with
that term, ``force TYPE`` gives them all ``TYPE``, ``drop TYPE`` deletes those
of type ``TYPE`` only.

Count keys: ``documents``, ``entities_in_<label>``, ``entities_kept``,
``discontiguous_kept``, ``nested_kept`` (contiguous spans kept that overlap
another kept span of their type: what voting on merged runs would lose), ``decisions_removed``, ``decisions_forced``,
``decisions_dropped``, ``decisions_unused``, ``parse_issues``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline import yamlfile
from pipeline.brat.standoff import BratDocument, ParseIssue, TextBound, read_directory, write_document
from pipeline.documents import Span
from pipeline.errors import InputError

log = logging.getLogger(__name__)

ACTIONS = ("remove", "force", "drop")


class DecisionError(InputError):
    """A bad decision file; the message names file and line."""


@dataclass(frozen=True)
class Decision:
    """One line of a decision file: what to do with the entities of an ambiguous term.

    Attributes:
        term: The term, normalized ([`normalize_term`][pipeline.brat.harmonize.normalize_term]).
        action: ``remove`` (every entity of the term), ``force`` (all of them get ``type``) or ``drop``
            (those of type ``type`` only).
        type: The type of ``force`` and ``drop``; None for ``remove``.
        line: The line of the TSV file, or the 1-based entry of the YAML list.
    """

    term: str
    action: str
    type: str | None = None
    line: int = 0


def centroid_spans(annotator_spans: Sequence[Iterable[Span]], threshold: int) -> list[Span]:
    """Compute the consensus spans of contiguous annotations of ONE type in ONE document.

    Args:
        annotator_spans: ``annotator_spans[k]`` are annotator k's spans, half-open character offsets
            into the document's ``.txt``.
        threshold: The number of annotators that must agree on a character and on a join, at least 1.

    Returns:
        The maximal runs of characters with ``>= threshold`` character votes whose adjacent pairs have
            ``>= threshold`` join votes, sorted, half-open.

    Raises:
        ValueError: If ``threshold`` is less than 1.
    """
    if threshold < 1:
        raise ValueError("threshold must be at least 1")
    char_votes: Counter[int] = Counter()
    join_votes: Counter[int] = Counter()  # join i = between characters i and i + 1
    for spans in annotator_spans:
        chars: set[int] = set()
        joins: set[int] = set()
        for s, e in spans:
            chars.update(range(s, e))
            joins.update(range(s, e - 1))
        char_votes.update(chars)
        join_votes.update(joins)
    kept = sorted(c for c, v in char_votes.items() if v >= threshold)
    out: list[Span] = []
    for c in kept:
        if out and out[-1][1] == c and join_votes[c - 1] >= threshold:
            out[-1] = (out[-1][0], c + 1)
        else:
            out.append((c, c + 1))
    return out


def nesting_layers(spans: Iterable[Span]) -> list[list[Span]]:
    """Deal one annotator's spans of one type into layers of spans that do not overlap.

    Args:
        spans: Half-open character offsets (duplicates count once).

    Returns:
        The layers, the first holding the outermost spans: the spans are taken by start, the longest
            first, each put into the first layer whose spans it does not overlap (a span touching
            another, ``end == start``, does not overlap it). Each layer is sorted.
    """
    layers: list[list[Span]] = []
    for s, e in sorted(set(spans), key=lambda span: (span[0], -span[1])):
        for layer in layers:
            if layer[-1][1] <= s:  # taken by start: the last span of a layer ends furthest
                layer.append((s, e))
                break
        else:
            layers.append([(s, e)])
    return layers


def _overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def harmonize_documents(
    versions: Sequence[BratDocument | None], threshold: int, counts: Counter[str] | None = None
) -> list[TextBound]:
    """Compute the consensus entities of one document from its annotators' versions.

    Contiguous entities are voted character by character per type
    ([`centroid_spans`][pipeline.brat.harmonize.centroid_spans]), layer by layer of nesting
    ([`nesting_layers`][pipeline.brat.harmonize.nesting_layers]), and a span overlapping another of its
    annotator's spans of the type is also kept when ``threshold`` annotators made exactly it (see the
    module docstring); discontiguous ones as a whole (same fragments and type).

    Args:
        versions: One version of the document per annotator; None when the annotator lacks it (no votes).
        threshold: The number of annotators that must agree, at least 1.
        counts: Updated in place when given: ``entities_kept``, ``discontiguous_kept``, ``nested_kept``.

    Returns:
        Text-bounds with ids ``T1..Tn`` in (start, end, type) order, offsets half-open into the
            document's ``.txt``; their text comes from the first version with a non-empty text (empty when
            none has one).

    Raises:
        ValueError: If ``threshold`` is less than 1.
    """
    counts = counts if counts is not None else Counter()
    text = next((v.text for v in versions if v is not None and v.text), "")
    types = sorted({t.type for v in versions if v is not None for t in v.textbounds})
    found: list[tuple[tuple[Span, ...], str]] = []
    for type_ in types:
        contiguous: list[list[Span]] = []
        disc: Counter[tuple[Span, ...]] = Counter()
        for v in versions:
            spans: list[Span] = []
            mine: set[tuple[Span, ...]] = set()
            if v is not None:
                for t in v.textbounds:
                    if t.type != type_:
                        continue
                    frags = tuple(sorted((s, e) for s, e in t.fragments if e > s))
                    if len(frags) == 1:
                        spans.append(frags[0])
                    elif frags:
                        mine.add(frags)
            contiguous.append(spans)
            disc.update(mine)
        kept: set[Span] = set()
        layered = [nesting_layers(spans) for spans in contiguous]
        for depth in range(max((len(layers) for layers in layered), default=0)):
            kept.update(centroid_spans([layers[depth] if depth < len(layers) else [] for layers in layered],
                                       threshold))
        exact: Counter[Span] = Counter()
        merged: set[Span] = set()  # spans that overlap another span of the same annotator and type
        for spans in contiguous:
            own = sorted(set(spans))
            exact.update(own)
            merged.update(a for a in own if any(b != a and _overlaps(a, b) for b in own))
        kept.update(span for span in merged if exact[span] >= threshold)
        counts["nested_kept"] += sum(1 for a in kept if any(b != a and _overlaps(a, b) for b in kept))
        for span in sorted(kept):
            found.append(((span,), type_))
        for frags, votes in disc.items():
            if votes >= threshold:
                found.append((frags, type_))
                counts["discontiguous_kept"] += 1
    found.sort(key=lambda x: (x[0][0][0], max(e for _, e in x[0]), x[1], x[0]))
    out = []
    for i, (frags, type_) in enumerate(found, 1):
        covered = " ".join(text[s:e] for s, e in frags) if text else ""
        out.append(TextBound(f"T{i}", type_, frags, covered))
    counts["entities_kept"] += len(out)
    return out


def harmonize(
    directories: Sequence[str | Path], threshold: int, counts: Counter[str] | None = None
) -> tuple[list[BratDocument], dict[str, Any]]:
    """Harmonize several brat directories by centroid voting (see the module docstring).

    Nothing is written (see [`write_collection`][pipeline.brat.harmonize.write_collection]); parse
    issues and missing documents are logged at WARNING.

    Args:
        directories: The annotators' brat directories, read recursively.
        threshold: The number of annotators that must agree, at least 1.
        counts: Updated in place when given: ``documents``, ``entities_in_<directory>``,
            ``entities_kept``, ``discontiguous_kept``, ``parse_issues``.

    Returns:
        The consensus documents (entities only), one per name found in any directory, sorted by name;
            and a report ``{"directories", "threshold", "documents", "missing": {dir: [names]},
            "parse_issues": [...], "entities": {dir: n}, "kept": n}``.

    Raises:
        FileNotFoundError: If a directory is not a directory.
        ValueError: If ``threshold`` is less than 1 (and some document has an entity to vote on).
    """
    counts = counts if counts is not None else Counter()
    collections: list[dict[str, BratDocument]] = []
    issues: list[ParseIssue] = []
    for d in directories:
        docs, found = read_directory(d)
        issues += found
        collections.append({doc.name: doc for doc in docs})
        counts[f"entities_in_{d}"] += sum(len(doc.textbounds) for doc in docs)
    for issue in issues:
        log.warning("%s", issue)
    counts["parse_issues"] += len(issues)
    names = sorted(set().union(*(set(c) for c in collections)))
    missing = {str(d): sorted(set(names) - set(c)) for d, c in zip(directories, collections, strict=True)}
    for d, lacking in missing.items():
        if lacking:
            log.warning("%s lacks %d document(s); it casts no votes for them", d, len(lacking))
    out = []
    for name in names:
        versions = [c.get(name) for c in collections]
        text = next((v.text for v in versions if v is not None and v.text), "")
        out.append(BratDocument(name=name, text=text, textbounds=harmonize_documents(versions, threshold, counts)))
        counts["documents"] += 1
    report = {
        "directories": [str(d) for d in directories],
        "threshold": threshold,
        "documents": len(names),
        "missing": missing,
        "parse_issues": [str(i) for i in issues],
        "entities": {str(d): sum(len(doc.textbounds) for doc in c.values()) for d, c in zip(directories, collections,
                                                                                            strict=True)},
        "kept": sum(len(d.textbounds) for d in out),
    }
    return out, report


# --- ambiguity -----------------------------------------------------------------

def normalize_term(text: str) -> str:
    """Normalize a term: lower-cased, whitespace runs collapsed to single spaces, stripped.

    Args:
        text: An entity's covered text, or a term of a decision file.

    Returns:
        The normalized term.
    """
    return " ".join(text.lower().split())


def _term(doc: BratDocument, t: TextBound) -> str:
    covered = " ".join(doc.text[s:e] for s, e in sorted(t.fragments)) if doc.text else t.text
    return normalize_term(covered)


def ambiguity_report(docs: Iterable[BratDocument]) -> dict[str, dict[str, int]]:
    """Find the ambiguous terms: terms annotated with more than one type across the documents.

    Args:
        docs: The documents; a term is an entity's covered text (its fragments in offset order, joined
            by spaces; the text column when the document has no text), normalized.

    Returns:
        ``{term: {type: n}}`` for the ambiguous terms, sorted by term, types sorted.
    """
    seen: dict[str, Counter[str]] = {}
    for doc in docs:
        for t in doc.textbounds:
            seen.setdefault(_term(doc, t), Counter())[t.type] += 1
    return {term: dict(sorted(c.items())) for term, c in sorted(seen.items()) if len(c) > 1}


def read_decisions(path: str | Path) -> list[Decision]:
    """Read a decision file.

    Args:
        path: A TSV file (``term<TAB>action[<TAB>TYPE]``, ``#`` comments, blank lines skipped), or a YAML
            file (``.yaml``/``.yml``) holding a list of ``{term, action, type}``.

    Returns:
        The decisions, in file order; terms normalized, actions lower-cased.

    Raises:
        DecisionError: If the file is not valid YAML, a line or entry lacks a term or action, an action
            is unknown, or ``force``/``drop`` has no type (naming the file and line or entry).
        OSError: If the file cannot be read.
    """
    p = Path(path)
    out: list[Decision] = []
    if p.suffix in (".yaml", ".yml"):
        try:
            data = yamlfile.safe_load(p.read_text(encoding="utf-8")) or []
        except yaml.YAMLError as exc:
            raise DecisionError(f"{p}: invalid YAML: {exc}") from exc
        if not isinstance(data, list):
            raise DecisionError(f"{p}: expected a list of {{term, action, type}}")
        rows = [(i, item) for i, item in enumerate(data, 1)]
        for i, item in rows:
            if not isinstance(item, Mapping) or "term" not in item or "action" not in item:
                raise DecisionError(f"{p}: entry {i}: expected term and action")
            for key in ("term", "action", "type"):
                value = item.get(key)
                if value is not None and (not isinstance(value, str | int | float) or isinstance(value, bool)):
                    raise DecisionError(f"{p}: entry {i}: {key} must be a string, got {type(value).__name__}")
            out.append(_decision(p, i, str(item["term"]), str(item["action"]), item.get("type")))
        return out
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = line.rstrip("\r").split("\t")
        if len(cols) < 2:
            raise DecisionError(f"{p}:{lineno}: expected term<TAB>action[<TAB>TYPE], got {line!r}")
        out.append(_decision(p, lineno, cols[0], cols[1], cols[2] if len(cols) > 2 else None))
    return out


def _decision(path: Path, line: int, term: str, action: str, type_: Any) -> Decision:
    action = action.strip().lower()
    if action not in ACTIONS:
        raise DecisionError(f"{path}:{line}: unknown action {action!r} (expected one of {', '.join(ACTIONS)})")
    if action in ("force", "drop") and not type_:
        raise DecisionError(f"{path}:{line}: action {action} needs a type")
    return Decision(normalize_term(term), action, str(type_).strip() if type_ else None, line)


def apply_decisions(
    docs: Iterable[BratDocument], decisions: Sequence[Decision], counts: Counter[str] | None = None
) -> list[BratDocument]:
    """Apply decisions to documents.

    Entities of the same fragments and type after the decisions are merged into one; entities are
    renumbered ``T1..Tn`` in (start, end, type) order.  Relations whose argument was removed are
    dropped, and notes whose target was; relations and notes are remapped to the new ids.  Only
    entities, relations and notes are kept (attributes, normalizations, events and equivalences are
    not carried over).  A decision that matched nothing is logged at INFO.

    Args:
        docs: The documents (e.g. from [`harmonize`][pipeline.brat.harmonize.harmonize]).
        decisions: The decisions ([`read_decisions`][pipeline.brat.harmonize.read_decisions]).
        counts: Updated in place when given: ``decisions_removed``, ``decisions_forced``,
            ``decisions_dropped`` (entities affected), ``decisions_unused`` (decisions).

    Returns:
        New documents, in the order given; the inputs are not modified.
    """
    counts = counts if counts is not None else Counter()
    by_term: dict[str, list[Decision]] = {}
    for d in decisions:
        by_term.setdefault(d.term, []).append(d)
    used: set[int] = set()
    out = []
    for doc in docs:
        kept: dict[tuple[tuple[Span, ...], str], TextBound] = {}
        old_to_new: dict[str, tuple[tuple[Span, ...], str]] = {}
        for t in doc.textbounds:
            type_: str | None = t.type
            for d in by_term.get(_term(doc, t), ()):
                if d.action == "remove":
                    type_ = None
                    counts["decisions_removed"] += 1
                elif d.action == "drop" and d.type == type_:
                    type_ = None
                    counts["decisions_dropped"] += 1
                elif d.action == "force" and type_ is not None and d.type != type_:
                    type_ = d.type
                    counts["decisions_forced"] += 1
                else:
                    continue
                used.add(id(d))
            if type_ is None:
                continue
            key = (tuple(sorted(t.fragments)), type_)
            kept.setdefault(key, TextBound(t.id, type_, t.fragments, t.text, t.line))
            old_to_new[t.id] = key
        ordered = sorted(kept, key=lambda k: (k[0][0][0], max(e for _, e in k[0]), k[1], k[0]))
        new_ids = {k: f"T{i}" for i, k in enumerate(ordered, 1)}
        textbounds = [TextBound(new_ids[k], k[1], kept[k].fragments, kept[k].text) for k in ordered]
        remap = {old: new_ids[k] for old, k in old_to_new.items()}
        relations = [
            type(r)(r.id, r.type, tuple((role, remap[ref]) for role, ref in r.args), r.line)
            for r in doc.relations
            if all(ref in remap for _, ref in r.args)
        ]
        rel_ids = {r.id for r in relations}
        notes = [type(n)(n.id, n.type, remap.get(n.target, n.target), n.text, n.line) for n in doc.notes
                 if n.target in remap or n.target in rel_ids]
        out.append(BratDocument(name=doc.name, text=doc.text, textbounds=textbounds, relations=relations,
                                notes=notes, path=doc.path))
    counts["decisions_unused"] += sum(1 for d in decisions if id(d) not in used)
    for d in decisions:
        if id(d) not in used:
            log.info("decision line %d (%s %s %s) matched nothing", d.line, d.term, d.action, d.type or "")
    return out


def write_collection(docs: Iterable[BratDocument], out_dir: str | Path) -> int:
    """Write documents as a brat collection.

    Each document is written with [`write_document`][pipeline.brat.standoff.write_document] (in place,
    not atomically).

    Args:
        docs: The documents.
        out_dir: The target directory, created if missing.

    Returns:
        The number of documents written.

    Raises:
        NameError_: If a document name is not a valid brat document name (the documents before it are
            written).
    """
    n = 0
    for doc in docs:
        write_document(out_dir, doc)
        n += 1
    return n
