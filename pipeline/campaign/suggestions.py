"""What the "Suggest relations" button of ``campaign serve`` suggested, and what became of it.

The ``.ann`` holds suggestions as plain relations, so keeping one costs the annotator nothing.  What
was suggested is recorded outside every served directory, one file per document::

    CAMPAIGN_DIR/suggestions/<collection>/<document>.jsonl    e.g. suggestions/phase1/alice/100_1.jsonl

One JSON object per line, appended (directories 0700, files 0600):

* a suggestion: ``press`` (the press's random id), ``sha256`` (of the ``.ann`` the press wrote, as
  the journal names it), ``person``, ``scorer`` (the scorer's version), ``id`` (the relation's id when
  suggested: brat reuses ids, so it identifies nothing later), ``type``, ``modality`` (a list), and
  ``arg1``/``arg2``, each ``{"offsets": [[start, end], ...], "type": entity type}``;
* a press taken back (brat's undo): ``{"undone": press}``; that press's suggestions no longer count.

An argument is known by its offsets and type.  [`outcome`][pipeline.campaign.suggestions.outcome] says
what became of a suggestion in the document as it is: ``kept`` (a relation of the same type, same
direction, between the same two entities), ``retyped`` (a relation of another type, same direction), or
``deleted`` (no such relation, also when one of its two entities was moved, retyped or deleted).
[`suggestion_counts`][pipeline.campaign.suggestions.suggestion_counts] counts them per collection for
``campaign status``.  ``campaign review``, ``finalize`` and ``release`` never read these files.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat.standoff import BratDocument, TextBound, read_document
from pipeline.campaign.layout import SUGGESTIONS_DIR

log = logging.getLogger(__name__)

OUTCOMES = ("kept", "retyped", "deleted")
"""What became of a suggestion (see the module docstring)."""

#: an argument: (sorted fragments, entity type)
Argument = tuple[tuple[tuple[int, int], ...], str]


def records_path(campaign_dir: Path, collection: str, document: str) -> Path:
    """Return the records file of one document.

    Args:
        campaign_dir: The campaign directory.
        collection: The campaign-relative collection name (``phase1/alice``).
        document: The document's name (file stem).

    Returns:
        ``CAMPAIGN_DIR/suggestions/<collection>/<document>.jsonl``.
    """
    return Path(campaign_dir) / SUGGESTIONS_DIR / collection / f"{document}.jsonl"


def argument(entity: TextBound) -> Argument:
    """Identify an entity as a suggestion's argument: its sorted fragments and its type.

    Args:
        entity: A text-bound.

    Returns:
        ``(fragments, type)``.
    """
    return tuple((int(s), int(e)) for s, e in entity.sorted_fragments), entity.type


def _arg_json(arg: Argument) -> dict[str, Any]:
    return {"offsets": [list(f) for f in arg[0]], "type": arg[1]}


def _arg_of(value: Any) -> Argument:
    return tuple((int(s), int(e)) for s, e in value["offsets"]), str(value["type"])


def append_records(path: Path, lines: Iterable[Mapping[str, Any]]) -> None:
    """Append lines to a records file (its directories made private), flushed to disk.

    Args:
        path: The records file.
        lines: The JSON objects to append.

    Raises:
        OSError: If the file cannot be written.
    """
    data = "".join(json.dumps(dict(line), sort_keys=True, ensure_ascii=True) + "\n" for line in lines).encode("ascii")
    if not data:
        return
    durable.ensure_private_dir(path.parent)
    durable.append_bytes(path, data, mode=0o600)


def suggestion_line(press: str, sha256: str, person: str, scorer: str, relation_id: str, type_: str,
                    modality: Iterable[str], arg1: Argument, arg2: Argument) -> dict[str, Any]:
    """Build the record of one suggestion.

    Args:
        press: The press's id.
        sha256: The sha256 of the ``.ann`` the press wrote.
        person: Who pressed.
        scorer: The scorer's version.
        relation_id: The relation's id when suggested.
        type_: The relation type.
        modality: Its modality.
        arg1: Its first argument.
        arg2: Its second argument.

    Returns:
        The line's object.
    """
    return {"press": press, "sha256": sha256, "person": person, "scorer": scorer, "id": relation_id, "type": type_,
            "modality": list(modality), "arg1": _arg_json(arg1), "arg2": _arg_json(arg2)}


def read_records(path: Path) -> list[dict[str, Any]]:
    """Read a document's suggestions, without those of presses taken back.

    An unreadable line is logged with its file and line and left out (the records only count; they
    never change a document).

    Args:
        path: The records file (missing: none).

    Returns:
        The suggestion lines, in file order, with ``arg1``/``arg2`` as ``(fragments, type)`` tuples.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    found: list[dict[str, Any]] = []
    undone: set[str] = set()
    for number, line in enumerate(raw.split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if "undone" in item:
                undone.add(str(item["undone"]))
                continue
            item["arg1"], item["arg2"] = _arg_of(item["arg1"]), _arg_of(item["arg2"])
            item["press"], item["type"] = str(item["press"]), str(item["type"])
            found.append(item)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("%s:%d: unreadable suggestion record left out: %s", path, number, exc)
    return [r for r in found if r["press"] not in undone]


def pair_key(arg1: Argument, arg2: Argument) -> frozenset[Argument]:
    """Return the unordered pair of two arguments (a suggestion is not repeated on it in either direction).

    Args:
        arg1: One argument.
        arg2: The other.

    Returns:
        The pair as a frozenset.
    """
    return frozenset((arg1, arg2))


def outcome(record: Mapping[str, Any], doc: BratDocument) -> str:
    """Say what became of a suggestion in a document as it is now.

    Args:
        record: A suggestion line as [`read_records`][pipeline.campaign.suggestions.read_records] gives it.
        doc: The document now.

    Returns:
        ``kept``, ``retyped`` or ``deleted`` (see the module docstring).
    """
    by_arg: dict[Argument, set[str]] = {}
    for t in doc.textbounds:
        by_arg.setdefault(argument(t), set()).add(t.id)
    first, second = by_arg.get(record["arg1"], set()), by_arg.get(record["arg2"], set())
    result = "deleted"
    for r in doc.relations:
        if r.arg("Arg1") in first and r.arg("Arg2") in second:
            if r.type == record["type"]:
                return "kept"
            result = "retyped"
    return result


def suggestion_counts(campaign_dir: Path, collection: str) -> dict[str, int]:
    """Count what became of the suggestions made in one collection (for ``campaign status``).

    Each suggestion is counted once, against its document as it is now; a document whose ``.txt`` is
    gone is skipped.

    Args:
        campaign_dir: The campaign directory.
        collection: The campaign-relative collection name (``phase1/alice``).

    Returns:
        ``{"kept": n, "retyped": n, "deleted": n}``.
    """
    counts: Counter[str] = Counter({k: 0 for k in OUTCOMES})
    base = Path(campaign_dir) / SUGGESTIONS_DIR / collection
    if not base.is_dir():
        return dict(counts)
    for path in sorted(base.glob("*.jsonl")):
        txt = Path(campaign_dir) / collection / f"{path.stem}.txt"
        if not txt.is_file():
            continue
        try:
            doc, _ = read_document(txt)
        except (OSError, ValueError) as exc:
            log.warning("%s: not read for the suggestion counts: %s", txt, exc)
            continue
        for record in read_records(path):
            counts[outcome(record, doc)] += 1
    return {k: counts[k] for k in OUTCOMES}


__all__ = ["OUTCOMES", "SUGGESTIONS_DIR", "Argument", "append_records", "argument", "outcome", "pair_key",
           "read_records", "records_path", "suggestion_counts", "suggestion_line"]
