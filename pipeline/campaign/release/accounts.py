"""Where every document a campaign assigned went: released, discarded, held back or pending."""

from __future__ import annotations

import csv
import io
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.brat.standoff import read_directory
from pipeline.campaign.documents import UNSPECIFIED_REASON
from pipeline.campaign.finalize import (
    REPORT_JSON,
    doc_key,
)
from pipeline.campaign.layout import (
    ASSIGNMENTS_CSV,
    DISCARD_REASON,
    DISCARD_TYPE,
    PHASE1_DIR,
)
from pipeline.campaign.release.read import NAMES_SHOWN, ReleaseError, phase1_assignments

log = logging.getLogger(__name__)

def accounting(assigned: Sequence[str], released: Sequence[str], final: Path,
               phase1_discard_reasons: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Put every assigned document in exactly one place.

    Released, discarded in phase 1 or by a senior (by reason), held back, pending (a senior's sign-off,
    or not in phase 2 yet), or not accounted for (FINAL's ``finalize.json`` missing or older than the
    campaign).  The place counts add up to ``assigned``.

    Args:
        assigned: The brat documents the campaign assigns.
        released: The documents released.
        final: The final collection, whose ``finalize.json`` is read if present.
        phase1_discard_reasons: Document -> the reasons its phase-1 annotators gave, for the documents
            discarded in phase 1.

    Returns:
        ``assigned``, the count per place (``released``, ``discarded_phase2``, ``held_back``,
        ``pending_signoff``, ``discarded_phase1``, ``pending_phase2``, ``not_accounted_for``),
        ``discard_reasons_phase1`` and ``discard_reasons_phase2`` (documents per reason, a document counted
        once per distinct reason), ``finalize_report`` (whether ``finalize.json`` was there) and the first
        ``not_accounted_for_documents``.

    Raises:
        ReleaseError: If ``finalize.json`` exists but cannot be read.
    """
    report: dict[str, Any] = {}
    path = final / REPORT_JSON
    if path.is_file():
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ReleaseError(f"{path}: cannot read the finalize report: {exc}") from exc

    def listed(key: str) -> list[str]:
        return [e["document"] if isinstance(e, Mapping) else str(e) for e in report.get(key) or []]

    left = set(assigned)
    places: dict[str, list[str]] = {}
    for place, names in (("released", list(released)), ("discarded_phase2", listed("discarded")),
                         ("held_back", listed("held_back")), ("pending_signoff", listed("pending")),
                         ("discarded_phase1", listed("discarded_in_phase1")),
                         ("pending_phase2", listed("not_in_phase2"))):
        places[place] = sorted((n for n in set(names) if n in left), key=doc_key)
        left -= set(places[place])
    places["not_accounted_for"] = sorted(left, key=doc_key)
    reasons2 = {e["document"]: e.get("reasons") or [] for e in report.get("discarded") or []
                if isinstance(e, Mapping)}

    def by_reason(names: Sequence[str], reasons: Mapping[str, Sequence[str]]) -> dict[str, int]:
        # a document counted once per distinct reason given for it; a discard without reason is unspecified
        c: Counter[str] = Counter(r or UNSPECIFIED_REASON for n in names
                                  for r in sorted(set(reasons.get(n) or [UNSPECIFIED_REASON])))
        return dict(sorted(c.items()))

    out: dict[str, Any] = {"assigned": len(assigned), **{k: len(v) for k, v in places.items()},
                           "discard_reasons_phase1": by_reason(places["discarded_phase1"], phase1_discard_reasons),
                           "discard_reasons_phase2": by_reason(places["discarded_phase2"], reasons2),
                           "finalize_report": path.is_file()}
    out["not_accounted_for_documents"] = places["not_accounted_for"][:NAMES_SHOWN]
    return out



def campaign_info(campaign: Path | None, final: Path, assigned: Sequence[str],
                   released: Sequence[str]) -> dict[str, Any] | None:
    """Gather the datasheet's figures about the campaign.

    Args:
        campaign: The campaign directory ``CAMPAIGN_DIR``; ``None`` when none is given.
        final: The final collection, whose ``finalize.json`` is read if present.
        assigned: The brat documents the campaign assigns.
        released: The documents released.

    Returns:
        ``annotators``, ``seniors``, the documents assigned, discarded in phase 1 (and the reasons given),
        held back, pending or discarded in phase 2, and the
        [`accounting`][pipeline.campaign.release.accounts.accounting] of every assigned document; ``None``
        without a campaign.

    Raises:
        ValueError: If ``finalize.json`` exists but cannot be read.
    """
    if campaign is None:
        return None
    info: dict[str, Any] = {"annotators": 0, "seniors": 0, "held_back": None}
    manifest = campaign / ASSIGNMENTS_CSV
    if manifest.is_file():
        rows = list(csv.DictReader(io.StringIO(manifest.read_text(encoding="utf-8"))))
        info["annotators"] = len({r["annotator"] for r in rows if r.get("phase") in ("1", "phase1")})
        info["seniors"] = len({r["annotator"] for r in rows if r.get("phase") in ("2", "phase2")})
        info["documents_assigned"] = len({r["document"] for r in rows})
    else:
        info["annotators"] = len([p for p in (campaign / PHASE1_DIR).iterdir() if p.is_dir()])
    # phase-1 discards: a sentence discarded by at least one of its annotators (a calibration copy is not
    # campaign work), counted once per reason given
    reasons: dict[str, set[str]] = {}
    mine = phase1_assignments(campaign)
    for person_dir in sorted(p for p in (campaign / PHASE1_DIR).glob("*") if p.is_dir()):
        docs, _issues = read_directory(person_dir)  # issues were logged with the agreement tables
        for d in docs:
            if d.name not in mine.get(person_dir.name, set()):
                continue
            for t in d.textbounds:
                if t.type == DISCARD_TYPE:
                    given = [a.value for a in d.attributes if a.target == t.id and a.type == DISCARD_REASON]
                    reasons.setdefault(d.name, set()).update(v or UNSPECIFIED_REASON for v in given or [None])
    info["discarded_phase1"] = len(reasons)
    info["discard_reasons"] = dict(sorted(Counter(r for rs in reasons.values() for r in rs).items()))
    report = final / REPORT_JSON
    if report.is_file():
        done = json.loads(report.read_text(encoding="utf-8"))
        info["held_back"] = len(done.get("held_back", []))
        info["pending_phase2"] = len(done.get("pending", []))
        info["discarded_phase2"] = len(done.get("discarded", []))
    info["accounting"] = accounting(assigned, released, final, {k: sorted(v) for k, v in reasons.items()})
    return info
