"""Who has which document: ``campaign.json`` is the one source of truth, with a dated, append-only history.

* ``campaign.json`` (:mod:`pipeline.campaign.phase1`) says who holds each document now: its
  ``documents`` entries (``phase1``: two annotators, ``phase2``: one senior), its ``people`` (with
  ``joined``/``left`` dates once the team changes) and its ``calibration`` entries
  (:mod:`pipeline.campaign.calibration`).  Every command reads assignments from it.
* ``manifest.csv`` (``document,phase,annotator``) is derived from it (:func:`write_manifest_csv`) after
  every change, for people and scripts that read CSV; nothing reads it back as a truth.
* ``assignments.jsonl``: one JSON object per change of one assignment, in the order of the changes,
  never rewritten: ``{"time", "action", "document", "phase", "person", "event", "note"}`` with
  ``event`` ``assigned`` or ``unassigned``, ``action`` what changed it (``batches``, ``append``,
  ``replace``, ``add-person``, ``reassign``, ``import``, ``calibration``) and ``time`` an ISO 8601 UTC
  date.  Replaying it gives the current assignments (:func:`replay`), and :func:`person_history`
  reports per person over it.

"Started" (:func:`started`) is judged on the annotations, never on bytes or modification times (brat
rewrites files): a person's version of a document is started when its annotations, ids aside
(:func:`pipeline.campaign.documents.canonical`), differ from what was handed out, the pre-annotation in
phase 1 and the merged document (``review/merged/<senior>/``) in phase 2.  A version that cannot be
read counts as started: nobody can tell that it is not.
"""

from __future__ import annotations

import csv
import datetime as dt
import fcntl
import io
import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline import store
from pipeline.brat.standoff import BratDocument, parse_ann
from pipeline.campaign import deploy
from pipeline.campaign.documents import canonical
from pipeline.campaign.layout import ASSIGNMENTS_CSV, CAMPAIGN_MANIFEST, PHASE1_DIR, PHASE2_DIR, REVIEW_DIR
from pipeline.campaign.phase1 import CampaignError

HISTORY_FILE = "assignments.jsonl"
MERGED_DIR = "merged"  # review/merged/<senior>/: the merged documents as review wrote them
MANIFEST_FIELDS = ("document", "phase", "annotator")

Row = tuple[str, str, str]


def now() -> str:
    """The current time as the history writes it (ISO 8601, UTC, seconds)."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def rows(campaign: Mapping[str, Any]) -> list[Row]:
    """``(document, phase, person)`` of every current assignment (calibration aside), in file order."""
    out: list[Row] = []
    for entry in campaign["documents"]:
        out += [(entry["document"], "1", p) for p in sorted(entry["phase1"])]
        if entry.get("phase2"):
            out.append((entry["document"], "2", entry["phase2"]))
    return out


def manifest_text(campaign: Mapping[str, Any]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(MANIFEST_FIELDS)
    writer.writerows(rows(campaign))
    return buf.getvalue()


def write_manifest_csv(root: Path, campaign: Mapping[str, Any]) -> None:
    """``manifest.csv`` derived from ``campaign`` (written beside and renamed)."""
    store.write_atomic(Path(root) / ASSIGNMENTS_CSV, manifest_text(campaign).encode("utf-8"), fsync=True)


def save_campaign(root: Path, campaign: Mapping[str, Any]) -> None:
    """Write ``campaign.json`` (beside, fsync, rename), then the ``manifest.csv`` derived from it."""
    data = json.dumps(campaign, ensure_ascii=False, indent=1) + "\n"
    store.write_atomic(Path(root) / CAMPAIGN_MANIFEST, data.encode("utf-8"), fsync=True)
    write_manifest_csv(root, campaign)


def change(action: str, document: str, phase: int | str, person: str, event: str, when: str,
           note: str = "") -> dict[str, Any]:
    """One history entry (see the module docstring)."""
    if event not in ("assigned", "unassigned"):
        raise ValueError(f"history event must be assigned or unassigned, got {event!r}")
    return {"time": when, "action": action, "document": document, "phase": str(phase), "person": person,
            "event": event, "note": note}


def record(root: Path, changes: Sequence[Mapping[str, Any]]) -> None:
    """Append ``changes`` to the history (O_APPEND under an exclusive flock, fsynced): never rewritten."""
    if not changes:
        return
    data = "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n" for c in changes).encode("utf-8")
    fd = os.open(Path(root) / HISTORY_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def initial_changes(campaign: Mapping[str, Any], action: str, when: str,
                    documents: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """``assigned`` entries for the current assignments (of ``documents`` only, when given)."""
    wanted = set(documents) if documents is not None else None
    return [change(action, doc, phase, person, "assigned", when) for doc, phase, person in rows(campaign)
            if wanted is None or doc in wanted]


def start_history(root: Path, campaign: Mapping[str, Any], action: str = "batches", when: str = "") -> None:
    """A new history holding the assignments of a campaign written from scratch (replaces any old one:
    ``batches`` rewrites only a campaign nobody has started).  ``when`` may be empty: ``batches``
    dates nothing (the same inputs give the same campaign), so its entries mean "from the start"."""
    data = "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n"
                   for c in initial_changes(campaign, action, when))
    store.write_atomic(Path(root) / HISTORY_FILE, data.encode("utf-8"), fsync=True)


def ensure_history(root: Path, campaign: Mapping[str, Any]) -> None:
    """Start the history from ``campaign`` (the state before a first change) when there is none."""
    if not (Path(root) / HISTORY_FILE).exists():
        start_history(root, campaign, "batches", "")


def read_history(root: Path) -> list[dict[str, Any]]:
    """The history's entries in order; CampaignError naming ``file:line`` for a line that does not parse."""
    path = Path(root) / HISTORY_FILE
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
    """The assignments ``(document, phase, person)`` the history leads to (calibration entries aside)."""
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
    """Per person and phase over the history: documents ever assigned, moved away, held now; dates.

    ``{"person", "phase", "ever", "moved_away", "now", "first", "last_change", "joined", "left"}``;
    ``now`` is also checked against ``campaign.json``: ``reconciles`` is False when they disagree.
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
    """What a person's version is compared with: the pre-annotation (1), the merged document (2)."""
    return root / deploy.PREANNOTATION_DIR if phase == "1" else root / REVIEW_DIR / MERGED_DIR / person


def collection_dir(root: Path, phase: str, person: str) -> Path:
    return root / (PHASE1_DIR if phase == "1" else PHASE2_DIR) / person


def file_started(root: Path, phase: str, person: str, name: str) -> bool:
    """True when ``person``'s version of brat document ``name`` differs from what was handed out.

    A version not written yet is not started; one that cannot be read, or has no reference to compare
    with, is (see the module docstring).
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
    """Whether ``person`` has started any file of the document ``entry`` in ``phase``."""
    return any(file_started(root, phase, person, name) for name in entry["files"])


def active_people(campaign: Mapping[str, Any]) -> list[dict[str, Any]]:
    """People of the campaign who have not left."""
    return [p for p in campaign["people"] if not p.get("left")]


def rule_violations(campaign: Mapping[str, Any]) -> list[str]:
    """Each broken campaign rule, naming the rule and the document (empty when all hold)."""
    problems = []
    for entry in campaign["documents"]:
        doc, annotators, senior = entry["document"], entry["phase1"], entry.get("phase2")
        if len(annotators) != 2 or len(set(annotators)) != 2:
            problems.append(f"two distinct phase-1 annotators per document: {doc} would have {annotators}")
        if senior and senior in annotators:
            problems.append(f"a senior who annotated none of their documents: {senior} annotated {doc}")
    return problems
