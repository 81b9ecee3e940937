"""Guideline versions during a campaign: recorded with their date, shown in every guide, checked by status.

``campaign.json`` keeps ``guidelines``: ``[{"version", "date", "changes"}]`` in the order they were
recorded (the first one, from [`pipeline.campaign.origin`][pipeline.campaign.origin], when the campaign was written).
[`record_version`][pipeline.campaign.guidelines.record_version] appends a version, then stamps every collection's
``guide.md`` ([`stamp_guide`][pipeline.campaign.guidelines.stamp_guide]): a section between two HTML comment markers,
right after the title, saying which version is current, since when, what changed, and the earlier versions.  Stamping
replaces only that section, so it can be done again after anything rewrites a guide.

[`worked_since`][pipeline.campaign.guidelines.worked_since] tells, per person, whether they have worked since the
current version's date: from the journal of ``campaign serve`` (the time of each write) when there is one; without a
journal, from the annotations themselves, compared with their fingerprints taken when the version was recorded
(``guidelines/<version>.json``).  File modification times are never evidence: brat rewrites files.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.campaign import assignments as asg
from pipeline.campaign.documents import canonical
from pipeline.campaign.guide import GUIDE_FILE
from pipeline.campaign.layout import GUIDELINES_DIR, JOURNAL_DIR, PHASE1_DIR, PHASE2_DIR, CampaignError, read_campaign
from pipeline.campaign.origin import FIRST_GUIDELINE_VERSION

VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
BEGIN = "<!-- guideline-version -->"
END = "<!-- /guideline-version -->"


def versions(campaign: Mapping[str, Any]) -> list[dict[str, Any]]:
    """List the guideline versions recorded in a campaign, oldest first.

    Args:
        campaign: The parsed ``campaign.json``.

    Returns:
        Its ``guidelines`` entries (``version``, ``date``, ``changes``); when none was recorded, one
        undated entry for the campaign's first version (from its ``provenance``).
    """
    found = list(campaign.get("guidelines") or [])
    if not found:
        first = (campaign.get("provenance") or {}).get("guideline_version", FIRST_GUIDELINE_VERSION)
        found = [{"version": first, "date": "", "changes": "first version"}]
    return found


def section(campaign: Mapping[str, Any]) -> str:
    """Write the Markdown section every guide shows (see the module docstring).

    Args:
        campaign: The parsed ``campaign.json``.

    Returns:
        The section between its two HTML comment markers, ending in a newline: the current version and
        since when, and, once there are several, what changed and the earlier versions.
    """
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
    """Replace the guideline section of a guide's text, or add it after the title.

    Args:
        guide: The text of a ``guide.md``.
        campaign: The parsed ``campaign.json``.

    Returns:
        The stamped text; a guide without a ``#`` title gets the section at the top.
    """
    if BEGIN in guide and END in guide:
        head, rest = guide.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        guide = head.rstrip("\n") + "\n\n" + tail.lstrip("\n") if head else tail.lstrip("\n")
    title, sep, body = guide.partition("\n")
    if not title.startswith("#"):
        return section(campaign) + "\n" + guide
    return f"{title}\n\n{section(campaign)}\n{body.lstrip(chr(10))}" if sep else f"{title}\n\n{section(campaign)}"


def stamp_guide(root: Path, guide: Path, campaign: Mapping[str, Any] | None = None) -> None:
    """Stamp one ``guide.md`` with the campaign's current guideline version.

    The guide is rewritten atomically, and only when the stamp changes it (a killed stamp leaves the old
    guide); a missing guide is left missing.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        guide: The ``guide.md`` stamped.
        campaign: The parsed ``campaign.json``; read from ``root`` when ``None``.

    Raises:
        CampaignError: If ``campaign`` is ``None`` and ``campaign.json`` cannot be read.
    """
    campaign = campaign if campaign is not None else read_campaign(root)
    if guide.is_file():
        text = guide.read_text(encoding="utf-8")
        stamped = stamp_text(text, campaign)
        if stamped != text:
            durable.replace_file(guide, stamped.encode("utf-8"))  # a killed stamp leaves the old guide


def stamp_all(root: Path, campaign: Mapping[str, Any] | None = None) -> int:
    """Stamp the guide of every phase-1 and phase-2 collection.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The parsed ``campaign.json``; read from ``root`` when ``None``.

    Returns:
        How many guides there are (stamped or already up to date).

    Raises:
        CampaignError: If ``campaign`` is ``None`` and ``campaign.json`` cannot be read.
    """
    campaign = campaign if campaign is not None else read_campaign(root)
    guides = sorted(Path(root).glob(f"{PHASE1_DIR}/*/{GUIDE_FILE}")) + \
        sorted(Path(root).glob(f"{PHASE2_DIR}/*/{GUIDE_FILE}"))
    for guide in guides:
        stamp_guide(root, guide, campaign)
    return len(guides)


def fingerprints(root: Path) -> dict[str, str]:
    """Fingerprint the annotations of every document of the phase-1 and phase-2 collections.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        ``phase1/<person>/NAME`` (and ``phase2/<senior>/NAME``) -> the sha256 of the document's
        annotations, ids aside ([`canonical`][pipeline.campaign.documents.canonical]), or ``unreadable``.
    """
    out = {}
    for txt in sorted(Path(root).glob(f"{PHASE1_DIR}/*/*.txt")) + sorted(Path(root).glob(f"{PHASE2_DIR}/*/*.txt")):
        doc = asg._read(txt)
        key = f"{txt.parent.parent.name}/{txt.parent.name}/{txt.stem}"
        out[key] = hashlib.sha256(repr(canonical(doc)).encode("utf-8")).hexdigest() if doc else "unreadable"
    return out


def record_version(root: Path, version: str, changes: str, *, when: str = "") -> dict[str, Any]:
    """Record a guideline version as current and stamp every guide.

    The annotations as they are now are fingerprinted into ``guidelines/<version>.json`` (atomically),
    so that without a journal [`worked_since`][pipeline.campaign.guidelines.worked_since] can still tell
    whose annotations changed since; then ``campaign.json`` gets the version and every guide is stamped.
    Recording the same version with the same description again only stamps the guides a killed run
    left unstamped.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        version: The version's name (letters, digits, ``.``, ``_``, ``-``; at most 64 characters).
        changes: What changed in this version (stripped; must not be empty).
        when: Since when it is current, an ISO 8601 date; now (UTC) when empty.

    Returns:
        The version's entry: ``version``, ``date``, ``changes``.

    Raises:
        CampaignError: If the name or description is empty or unusable, the version is already recorded
            with another description, or ``campaign.json`` cannot be read; nothing is written then.
    """
    root = Path(root)
    campaign = copy.deepcopy(read_campaign(root))
    if not VERSION_RE.match(version) or not changes.strip():
        raise CampaignError(f"a guideline version needs a name (letters, digits, '.', '_', '-'; got {version!r}) "
                            "and a description of what changed")
    found = versions(campaign)
    same = [v for v in found if v["version"] == version]
    if same and same[-1].get("changes") == changes.strip():
        stamp_all(root, campaign)  # a rerun of a record killed while stamping the guides: finish them
        return dict(same[-1])
    if same:
        raise CampaignError(f"guideline version {version!r} is already recorded")
    entry = {"version": version, "date": when or asg.now(), "changes": changes.strip()}
    snapshots = root / GUIDELINES_DIR
    snapshots.mkdir(exist_ok=True)
    durable.replace_file(snapshots / f"{version}.json",
                       (json.dumps(fingerprints(root), indent=0, sort_keys=True) + "\n").encode("utf-8"))
    campaign["guidelines"] = [*found, entry]
    asg.save_campaign(root, campaign)
    stamp_all(root, campaign)
    return entry


def _epoch(date: str) -> float:
    when = dt.datetime.fromisoformat(date)
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def worked_since(root: Path, campaign: Mapping[str, Any]) -> dict[str, Any]:
    """Tell, per person, whether they have worked since the current guideline version's date.

    Managers and people who left are not listed.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The parsed ``campaign.json``.

    Returns:
        ``{"version", "date", "source", "people": [{"person", "writes", "documents", "last"}]}``.
        ``source`` is ``journal`` (writes counted from the journal of ``campaign serve``, after the
        version's date; ``last`` the time of the last one, ISO 8601 UTC), ``annotations`` (no journal, or
        an undated version: ``documents`` whose annotations differ from their fingerprint when the version
        was recorded, or were started since; ``writes`` and ``last`` are ``None``) or ``none`` (neither:
        nothing can be told, every count ``None``).
    """
    current = versions(campaign)[-1]
    people = [p["id"] for p in asg.active_people(campaign) if p["role"] != "manager"]
    from pipeline.campaign.journal import Journal

    snapshot = Path(root) / GUIDELINES_DIR / f"{current['version']}.json"
    if (not (Path(root) / JOURNAL_DIR).is_dir() or not current.get("date")) and snapshot.is_file():
        # no journal: whose annotations changed since the version was recorded (never file times)
        before = json.loads(snapshot.read_text(encoding="utf-8"))
        changed: dict[str, set[str]] = {p: set() for p in people}
        for key, digest in fingerprints(root).items():
            phase_dir, person, name = key.split("/")
            if person not in changed or before.get(key) == digest:
                continue
            if key in before or asg.file_started(root, "1" if phase_dir == PHASE1_DIR else "2", person, name):
                changed[person].add(name)
        return {"version": current["version"], "date": current.get("date", ""), "source": "annotations",
                "people": [{"person": p, "writes": None, "documents": len(changed[p]), "last": None}
                           for p in sorted(people)]}
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
