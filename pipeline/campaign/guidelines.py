"""Guideline versions during a campaign: recorded with their date, shown in every guide, checked by status.

``campaign.json`` keeps ``guidelines``: ``[{"version", "date", "changes"}]`` in the order they were
recorded (the first one, from :mod:`pipeline.campaign.origin`, when the campaign was written).
:func:`record_version` appends a version, then stamps every collection's ``guide.md``
(:func:`stamp_guide`): a section between two HTML comment markers, right after the title, saying which
version is current, since when, what changed, and the earlier versions.  Stamping replaces only that
section, so it can be done again after anything rewrites a guide.

:func:`worked_since` tells, per person, whether they have worked since the current version's date: from
the journal of ``campaign serve`` (the time of each write) when there is one; without a journal it
cannot be told, and says so (file modification times are not evidence: brat rewrites files).
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.campaign import assignments as asg
from pipeline.campaign.guide import GUIDE_FILE
from pipeline.campaign.layout import PHASE1_DIR, PHASE2_DIR
from pipeline.campaign.origin import FIRST_GUIDELINE_VERSION
from pipeline.campaign.phase1 import CampaignError, read_campaign

BEGIN = "<!-- guideline-version -->"
END = "<!-- /guideline-version -->"


def versions(campaign: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The recorded versions, oldest first (the campaign's first version when none was recorded)."""
    found = list(campaign.get("guidelines") or [])
    if not found:
        first = (campaign.get("provenance") or {}).get("guideline_version", FIRST_GUIDELINE_VERSION)
        found = [{"version": first, "date": "", "changes": "first version"}]
    return found


def section(campaign: Mapping[str, Any]) -> str:
    """The markdown section every guide shows (see the module docstring)."""
    found = versions(campaign)
    current = found[-1]
    since = current["date"] if current.get("date") else "the campaign started"
    lines = [BEGIN, f"**Guidelines version {current['version']}**, current since {since}.", ""]
    if len(found) > 1:
        lines += [f"What changed in version {current['version']}: {current['changes']}", ""]
        lines += ["Earlier versions: " + "; ".join(f"{v['version']} ({v.get('date') or 'undated'})"
                                                   for v in found[:-1]) + ".", ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def stamp_text(guide: str, campaign: Mapping[str, Any]) -> str:
    """``guide`` with its guideline section replaced (or added after the title)."""
    if BEGIN in guide and END in guide:
        head, rest = guide.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        guide = head.rstrip("\n") + "\n\n" + tail.lstrip("\n") if head else tail.lstrip("\n")
    title, sep, body = guide.partition("\n")
    if not title.startswith("#"):
        return section(campaign) + "\n" + guide
    return f"{title}\n\n{section(campaign)}\n{body.lstrip(chr(10))}" if sep else f"{title}\n\n{section(campaign)}"


def stamp_guide(root: Path, guide: Path, campaign: Mapping[str, Any] | None = None) -> None:
    """Stamp one ``guide.md`` with the campaign's current guideline version."""
    campaign = campaign if campaign is not None else read_campaign(root)
    if guide.is_file():
        text = guide.read_text(encoding="utf-8")
        stamped = stamp_text(text, campaign)
        if stamped != text:
            guide.write_text(stamped, encoding="utf-8")


def stamp_all(root: Path, campaign: Mapping[str, Any] | None = None) -> int:
    """Stamp the guide of every phase-1 and phase-2 collection; returns how many guides there are."""
    campaign = campaign if campaign is not None else read_campaign(root)
    guides = sorted(Path(root).glob(f"{PHASE1_DIR}/*/{GUIDE_FILE}")) + \
        sorted(Path(root).glob(f"{PHASE2_DIR}/*/{GUIDE_FILE}"))
    for guide in guides:
        stamp_guide(root, guide, campaign)
    return len(guides)


def record_version(root: Path, version: str, changes: str, *, when: str = "") -> dict[str, Any]:
    """Record guideline ``version`` (what ``changes``) as current from ``when`` and stamp every guide.

    CampaignError (nothing written) for an empty version or description, or a version already recorded.
    """
    root = Path(root)
    campaign = copy.deepcopy(read_campaign(root))
    if not version.strip() or not changes.strip():
        raise CampaignError("a guideline version needs a name and a description of what changed")
    found = versions(campaign)
    if any(v["version"] == version for v in found):
        raise CampaignError(f"guideline version {version!r} is already recorded")
    entry = {"version": version, "date": when or asg.now(), "changes": changes.strip()}
    campaign["guidelines"] = [*found, entry]
    asg.save_campaign(root, campaign)
    stamp_all(root, campaign)
    return entry


def _epoch(date: str) -> float:
    when = dt.datetime.fromisoformat(date)
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def worked_since(root: Path, campaign: Mapping[str, Any]) -> dict[str, Any]:
    """``{"version", "date", "source", "people": [{"person", "writes", "documents", "last"}]}``.

    ``source`` is ``journal`` (writes counted from it) or ``none`` (no journal: ``writes`` is None for
    everyone).  Only writes after the current version's date count.
    """
    current = versions(campaign)[-1]
    people = [p["id"] for p in asg.active_people(campaign) if p["role"] != "manager"]
    from pipeline.serve.journal import JOURNAL_DIR, Journal

    if not (Path(root) / JOURNAL_DIR).is_dir() or not current.get("date"):
        return {"version": current["version"], "date": current.get("date", ""), "source": "none",
                "people": [{"person": p, "writes": None, "documents": None, "last": None} for p in sorted(people)]}
    since = _epoch(current["date"])
    writes: dict[str, list[tuple[float, str]]] = {p: [] for p in people}
    for v in Journal(Path(root)).entries():
        if v.time >= since and v.person in writes:
            writes[v.person].append((v.time, v.document))
    rows = []
    for p in sorted(people):
        found = writes[p]
        last = max((t for t, _ in found), default=None)
        rows.append({"person": p, "writes": len(found), "documents": len({d for _, d in found}),
                     "last": dt.datetime.fromtimestamp(last, dt.UTC).isoformat() if last is not None else None})
    return {"version": current["version"], "date": current["date"], "source": "journal", "people": rows}
