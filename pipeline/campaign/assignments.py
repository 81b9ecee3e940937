"""Who has which document: ``campaign.json`` is the one source of truth, with a dated, append-only history.

* ``campaign.json`` ([`pipeline.campaign.phase1`][pipeline.campaign.phase1]) says who holds each document now: its
  ``documents`` entries (``phase1``: two annotators, ``phase2``: one senior), its ``people`` (with
  ``joined``/``left`` dates once the team changes) and its ``calibration`` entries
  ([`pipeline.campaign.calibration`][pipeline.campaign.calibration]).  Every command reads assignments from it.
* ``manifest.csv`` (``document,phase,annotator``) is derived from it
  ([`write_manifest_csv`][pipeline.campaign.assignments.write_manifest_csv]) after every change, for people and scripts
  that read CSV; nothing reads it back as a truth.
* ``assignments.jsonl``: one JSON object per change of one assignment, in the order of the changes,
  never rewritten: ``{"time", "action", "document", "phase", "person", "event", "note"}`` with
  ``event`` ``assigned`` or ``unassigned``, ``action`` what changed it (``batches``, ``append``,
  ``replace``, ``add-person``, ``reassign``, ``import``, ``calibration``) and ``time`` an ISO 8601 UTC
  date.  Replaying it gives the current assignments ([`replay`][pipeline.campaign.assignments.replay]), and
  [`person_history`][pipeline.campaign.assignments.person_history] reports per person over it.

"Started" ([`started`][pipeline.campaign.assignments.started]) is judged on the annotations, never on bytes or
modification times (brat rewrites files): a person's version of a document is started when its annotations, ids aside
([`canonical`][pipeline.campaign.documents.canonical]), differ from what was handed out, the pre-annotation in
phase 1 and the merged document (``review/merged/<senior>/``) in phase 2.  A version that cannot be
read counts as started: nobody can tell that it is not.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat.standoff import BratDocument, parse_ann
from pipeline.campaign.documents import canonical
from pipeline.campaign.layout import (
    ASSIGNMENTS_CSV,
    ASSIGNMENTS_HISTORY,
    CAMPAIGN_MANIFEST,
    PHASE1_DIR,
    PHASE2_DIR,
    PREANNOTATION_DIR,
    REVIEW_DIR,
    REVIEW_MERGED_DIR,
    CampaignError,
)

MANIFEST_FIELDS = ("document", "phase", "annotator")

Row = tuple[str, str, str]


def now() -> str:
    """Give the current time as the history writes it.

    Returns:
        The current UTC time, ISO 8601 to the second (``2026-01-31T09:00:00+00:00``).
    """
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def rows(campaign: Mapping[str, Any]) -> list[Row]:
    """List every current assignment of a campaign (calibration aside).

    Args:
        campaign: The parsed ``campaign.json``.

    Returns:
        ``(document, phase, person)`` rows in file order; phase is ``"1"`` (both annotators, sorted) or
        ``"2"`` (the senior, once assigned).
    """
    out: list[Row] = []
    for entry in campaign["documents"]:
        out += [(entry["document"], "1", p) for p in sorted(entry["phase1"])]
        if entry.get("phase2"):
            out.append((entry["document"], "2", entry["phase2"]))
    return out


def manifest_text(campaign: Mapping[str, Any]) -> str:
    """Render the ``manifest.csv`` of a campaign.

    Args:
        campaign: The parsed ``campaign.json``.

    Returns:
        The CSV text: a ``document,phase,annotator`` header, then [`rows`][pipeline.campaign.assignments.rows].
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(MANIFEST_FIELDS)
    writer.writerows(rows(campaign))
    return buf.getvalue()


def write_manifest_csv(root: Path, campaign: Mapping[str, Any]) -> None:
    """Write the ``manifest.csv`` derived from a campaign.

    Written atomically: beside the final file, fsynced, then renamed.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The parsed ``campaign.json``.
    """
    durable.replace_file(Path(root) / ASSIGNMENTS_CSV, manifest_text(campaign).encode("utf-8"), durable=True)


def save_campaign(root: Path, campaign: Mapping[str, Any]) -> None:
    """Write ``campaign.json``, then the ``manifest.csv`` derived from it.

    Each file is written atomically (beside, fsync, rename); the two are not one transaction.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The campaign manifest to write.
    """
    data = json.dumps(campaign, ensure_ascii=False, indent=1) + "\n"
    durable.replace_file(Path(root) / CAMPAIGN_MANIFEST, data.encode("utf-8"), durable=True)
    write_manifest_csv(root, campaign)


def change(action: str, document: str, phase: int | str, person: str, event: str, when: str,
           note: str = "") -> dict[str, Any]:
    """Make one history entry (see the module docstring).

    Args:
        action: What made the change, such as ``batches``, ``append``, ``replace``, ``add-person``, ``reassign``,
            ``import``, ``calibration`` or ``promote``.
        document: The campaign document.
        phase: ``1`` or ``2`` (stored as a string).
        person: The person assigned or unassigned.
        event: ``assigned`` or ``unassigned``.
        when: The time, as [`now`][pipeline.campaign.assignments.now] gives it (or ``""``: from the start).
        note: Free text, such as why the document moved.

    Returns:
        The entry, ready for [`record`][pipeline.campaign.assignments.record].

    Raises:
        ValueError: If ``event`` is neither ``assigned`` nor ``unassigned``.
    """
    if event not in ("assigned", "unassigned"):
        raise ValueError(f"history event must be assigned or unassigned, got {event!r}")
    return {"time": when, "action": action, "document": document, "phase": str(phase), "person": person,
            "event": event, "note": note}


def record(root: Path, changes: Sequence[Mapping[str, Any]]) -> None:
    """Append entries to the history, which is never rewritten.

    Appended with ``O_APPEND`` under an exclusive ``flock``, then fsynced; nothing is written for no
    entries.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        changes: The entries, as [`change`][pipeline.campaign.assignments.change] makes them, in order.
    """
    if not changes:
        return
    data = "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n" for c in changes).encode("utf-8")
    durable.append_bytes(Path(root) / ASSIGNMENTS_HISTORY, data, mode=0o644)


def initial_changes(campaign: Mapping[str, Any], action: str, when: str,
                    documents: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Make ``assigned`` entries for the current assignments of a campaign.

    Args:
        campaign: The parsed ``campaign.json``.
        action: The action recorded in each entry.
        when: The time recorded in each entry (``""``: from the start).
        documents: Only the assignments of these documents; all when ``None``.

    Returns:
        One entry per assignment, in the order of [`rows`][pipeline.campaign.assignments.rows].
    """
    wanted = set(documents) if documents is not None else None
    return [change(action, doc, phase, person, "assigned", when) for doc, phase, person in rows(campaign)
            if wanted is None or doc in wanted]


def start_history(root: Path, campaign: Mapping[str, Any], action: str = "batches", when: str = "") -> None:
    """Write a new history holding the assignments of a campaign written from scratch.

    Replaces any old history (atomically: beside, fsync, rename): ``batches`` rewrites only a campaign
    nobody has started.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The parsed ``campaign.json``.
        action: The action recorded in each entry.
        when: The time recorded; may be empty: ``batches`` dates nothing (the same inputs give the same
            campaign), so its entries mean "from the start".
    """
    data = "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n"
                   for c in initial_changes(campaign, action, when))
    durable.replace_file(Path(root) / ASSIGNMENTS_HISTORY, data.encode("utf-8"), durable=True)


def ensure_history(root: Path, campaign: Mapping[str, Any]) -> None:
    """Start the history from a campaign when there is none.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The campaign as it is before a first change.
    """
    if not (Path(root) / ASSIGNMENTS_HISTORY).exists():
        start_history(root, campaign, "batches", "")


def read_history(root: Path) -> list[dict[str, Any]]:
    """Read the history's entries.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        The entries in file order (blank lines skipped); empty when there is no history.

    Raises:
        CampaignError: If a line is not a history entry, naming ``file:line``.
    """
    path = Path(root) / ASSIGNMENTS_HISTORY
    if not path.is_file():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CampaignError(f"{path}:{n}: not a history entry: {exc}") from exc
        if not isinstance(entry, dict) or entry.get("event") not in ("assigned", "unassigned"):
            raise CampaignError(f"{path}:{n}: not a history entry")
        out.append(entry)
    return out


def replay(history: Iterable[Mapping[str, Any]]) -> set[Row]:
    """Replay a history into the assignments it leads to (calibration entries aside).

    Args:
        history: The entries, in order.

    Returns:
        The ``(document, phase, person)`` assignments held after the last entry.
    """
    current: set[Row] = set()
    for entry in history:
        if entry["action"] == "calibration":
            continue
        key = (entry["document"], str(entry["phase"]), entry["person"])
        if entry["event"] == "assigned":
            current.add(key)
        else:
            current.discard(key)
    return current


def person_history(root: Path, campaign: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Report per person and phase over the history: documents ever assigned, moved away, held now.

    A campaign nobody has changed yet has no history: its assignments are taken as those of ``batches``.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The parsed ``campaign.json``.

    Returns:
        One row per (person, phase), phase 1 first then by person, with ``person``, ``phase`` (an int),
        ``ever``, ``moved_away`` and ``now`` (document counts), ``reconciles`` (False when the replayed
        history and ``campaign.json`` disagree on ``now``), ``first`` and ``last_change`` (history times),
        and ``joined``/``left`` (from ``people``, ``""`` when unset).

    Raises:
        CampaignError: If the history does not parse.
    """
    # a campaign nobody has changed yet has no history: its assignments are those of batches
    history = read_history(root) or initial_changes(campaign, "batches", "")
    ever: dict[tuple[str, str], set[str]] = {}
    away: dict[tuple[str, str], set[str]] = {}
    first: dict[tuple[str, str], str] = {}
    last: dict[tuple[str, str], str] = {}
    for entry in history:
        if entry["action"] == "calibration":
            continue
        key = (entry["person"], str(entry["phase"]))
        first.setdefault(key, entry["time"])
        last[key] = entry["time"]
        if entry["event"] == "assigned":
            ever.setdefault(key, set()).add(entry["document"])
            away.get(key, set()).discard(entry["document"])
        else:
            away.setdefault(key, set()).add(entry["document"])
    current = Counter((p, ph) for _, ph, p in rows(campaign))
    replayed = Counter((p, ph) for _, ph, p in replay(history))
    people = {p["id"]: p for p in campaign["people"]}
    out = []
    for key in sorted(set(ever) | set(current), key=lambda k: (k[1], k[0])):
        person, phase = key
        info = people.get(person, {})
        out.append({"person": person, "phase": int(phase), "ever": len(ever.get(key, ())),
                    "moved_away": len(away.get(key, ())), "now": current[key],
                    "reconciles": not history or replayed[key] == current[key],
                    "first": first.get(key, ""), "last_change": last.get(key, ""),
                    "joined": info.get("joined", ""), "left": info.get("left", "")})
    return out


# --- started -----------------------------------------------------------------------------------

def _read(path: Path) -> BratDocument | None:
    """The document at ``path`` (``.txt``), None when it cannot be read or parsed cleanly."""
    try:
        text = path.read_text(encoding="utf-8")
        ann = path.with_suffix(".ann")
        if not ann.is_file():
            return None
        doc, issues = parse_ann(path.stem, text, ann.read_text(encoding="utf-8"), str(ann))
    except (OSError, UnicodeDecodeError):
        return None
    return None if issues else doc


def reference_dir(root: Path, phase: str, person: str) -> Path:
    """Give the directory a person's version is compared with to tell whether it is started.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        phase: ``"1"`` or ``"2"``.
        person: The person (only used in phase 2: the senior).

    Returns:
        ``CAMPAIGN_DIR/preannotation/`` in phase 1, ``CAMPAIGN_DIR/review/merged/<person>/`` in phase 2.
    """
    return root / PREANNOTATION_DIR if phase == "1" else root / REVIEW_DIR / REVIEW_MERGED_DIR / person


def collection_dir(root: Path, phase: str, person: str) -> Path:
    """Give a person's brat collection in a phase.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        phase: ``"1"`` or ``"2"``.
        person: The annotator (phase 1) or senior (phase 2).

    Returns:
        ``CAMPAIGN_DIR/phase1/<person>/`` or ``CAMPAIGN_DIR/phase2/<person>/`` (it may not exist).
    """
    return root / (PHASE1_DIR if phase == "1" else PHASE2_DIR) / person


def file_started(root: Path, phase: str, person: str, name: str) -> bool:
    """Tell whether a person's version of a brat document differs from what was handed out.

    Compared with [`canonical`][pipeline.campaign.documents.canonical] (ids aside).  A version not written
    yet is not started; one that cannot be read, or has no reference to compare with, is (see the module
    docstring).

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        phase: ``"1"`` or ``"2"``.
        person: The annotator (phase 1) or senior (phase 2).
        name: The brat document name (``100_1``), without extension.

    Returns:
        True when the version is started.
    """
    txt = collection_dir(root, phase, person) / f"{name}.txt"
    if not txt.exists() and not txt.with_suffix(".ann").exists():
        return False
    mine = _read(txt)
    base = _read(reference_dir(root, phase, person) / f"{name}.txt")
    if mine is None or base is None:
        return True
    return canonical(mine) != canonical(base)


def started(root: Path, entry: Mapping[str, Any], phase: str, person: str) -> bool:
    """Tell whether a person has started any file of a campaign document in a phase.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        entry: The document's entry in ``campaign.json`` (its ``files`` are the brat documents).
        phase: ``"1"`` or ``"2"``.
        person: The annotator (phase 1) or senior (phase 2).

    Returns:
        True when [`file_started`][pipeline.campaign.assignments.file_started] holds for any of its files.
    """
    return any(file_started(root, phase, person, name) for name in entry["files"])


def active_people(campaign: Mapping[str, Any]) -> list[dict[str, Any]]:
    """List the people of a campaign who have not left.

    Args:
        campaign: The parsed ``campaign.json``.

    Returns:
        Their ``people`` entries, in file order.
    """
    return [p for p in campaign["people"] if not p.get("left")]


def rule_violations(campaign: Mapping[str, Any]) -> list[str]:
    """List each broken campaign rule, naming the rule and the document.

    The rules: two distinct phase-1 annotators per document, and a senior who annotated none of their
    documents.

    Args:
        campaign: The campaign (as it is, or as a change plans it).

    Returns:
        One message per violation; empty when all hold.
    """
    problems = []
    for entry in campaign["documents"]:
        doc, annotators, senior = entry["document"], entry["phase1"], entry.get("phase2")
        if len(annotators) != 2 or len(set(annotators)) != 2:
            problems.append(f"two distinct phase-1 annotators per document: {doc} would have {annotators}")
        if senior and senior in annotators:
            problems.append(f"a senior who annotated none of their documents: {senior} annotated {doc}")
    return problems
