"""``campaign status``: progress per person and phase.

For every person and phase, over the brat documents assigned to them (``campaign.json``):

* ``assigned``; ``in_collection`` (phase 2: written by ``campaign review`` so far);
* ``untouched`` (annotations equal to the reference, ids aside), ``edited`` (the others), ``done``
  (marked ``Done``), ``discarded`` and ``discarded_by_reason``;
* ``held_back``: documents that do not parse or validate, or whose text was changed (with their
  ``file:line`` problems in ``problems``);
* against the reference, over the documents read and not discarded: ``entities_kept``,
  ``entities_deleted``, ``entities_added``, ``entities_retyped`` (see
  :func:`pipeline.campaign.documents.entity_changes`) and ``relations_added`` (also
  ``relations_deleted``);
* phase 2 only: ``disagreements_left`` (``Disagreement`` marks still in the documents).

The reference is the pre-annotation as handed out (``preannotation/``) in phase 1 and the merged
document as ``campaign review`` wrote it (``review/merged/<senior>/``) in phase 2.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.brat.standoff import BratTextError, read_document, read_text
from pipeline.campaign import deploy
from pipeline.campaign.documents import (
    canonical,
    discard_reasons,
    entity_changes,
    is_done,
    load_conf,
    read_checked,
    relation_changes,
)
from pipeline.campaign.layout import PHASE1_DIR, PHASE2_DIR, REVIEW_DIR
from pipeline.campaign.merge import count_marks
from pipeline.campaign.phase1 import read_campaign
from pipeline.campaign.review import MERGED_DIR

COLUMNS = ("assigned", "in_collection", "untouched", "edited", "done", "discarded", "held_back",
           "entities_kept", "entities_deleted", "entities_added", "entities_retyped", "relations_added",
           "relations_deleted")
PROGRESS = ("untouched", "edited", "done", "discarded", "held_back")


def _person_status(
    collection: Path, reference_dir: Path, text_dir: Path, files: list[str], phase: int
) -> dict[str, Any]:
    row: dict[str, Any] = {k: 0 for k in COLUMNS}
    reasons: Counter[str] = Counter()
    problems: list[str] = []
    row["assigned"] = len(files)
    conf = load_conf(collection / "annotation.conf") if (collection / "annotation.conf").is_file() else None
    marks = 0
    for name in files:
        txt = collection / f"{name}.txt"
        if not txt.is_file():
            continue
        row["in_collection"] += 1
        try:
            original = read_text(text_dir / f"{name}.txt") if (text_dir / f"{name}.txt").is_file() else None
        except BratTextError as exc:  # the text handed out is unreadable: held back, the others go on
            problems.append(str(exc))
            row["held_back"] += 1
            continue
        if conf is None:
            problems.append(f"{collection}:0: no annotation.conf")
            row["held_back"] += 1
            continue
        checked = read_checked(txt, original, conf)
        if checked.doc is None:
            row["held_back"] += 1
            problems += checked.problems
            continue
        doc = checked.doc
        reference_txt = reference_dir / f"{name}.txt"
        try:
            base = read_document(reference_txt)[0] if reference_txt.is_file() else None
        except BratTextError as exc:
            problems.append(str(exc))
            base = None
        if base is not None and canonical(base) == canonical(doc):
            row["untouched"] += 1
        else:
            row["edited"] += 1
        found = discard_reasons(doc)
        if found:
            row["discarded"] += 1
            reasons.update(found)
            continue
        if is_done(doc):
            row["done"] += 1
        marks += count_marks(doc)
        if base is not None:
            for key, n in (entity_changes(base, doc) + relation_changes(base, doc)).items():
                if key in row:
                    row[key] += n
    row["discarded_by_reason"] = dict(sorted(reasons.items()))
    row["problems"] = problems
    if phase == 2:
        row["disagreements_left"] = marks
    return row


def campaign_status(campaign_dir: str | Path) -> dict[str, Any]:
    """``{"campaign": path, "rows": [{"person", "phase", **counts}]}`` (see the module docstring)."""
    root = Path(campaign_dir)
    campaign = read_campaign(root)
    files: dict[tuple[str, int], list[str]] = {}
    for entry in campaign["documents"]:
        for person in entry["phase1"]:
            files.setdefault((person, 1), []).extend(entry["files"])
        if entry["phase2"]:
            files.setdefault((entry["phase2"], 2), []).extend(entry["files"])
    rows = []
    pre = root / deploy.PREANNOTATION_DIR
    for (person, phase), names in sorted(files.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if phase == 1:
            row = _person_status(root / PHASE1_DIR / person, pre, pre, names, 1)
        else:
            row = _person_status(root / PHASE2_DIR / person, root / REVIEW_DIR / MERGED_DIR / person, pre, names, 2)
        rows.append({"person": person, "phase": phase, **row})
    return {"campaign": str(root), "rows": rows}


def format_markdown(status: Mapping[str, Any]) -> str:
    """Markdown tables: progress and edits per person and phase, discards by reason, held-back problems."""
    lines = [f"# Campaign status: {status['campaign']}", "",
             "| person | phase | " + " | ".join(c.replace("_", " ") for c in COLUMNS) + " | disagreements left |",
             "|---|---|" + "---|" * (len(COLUMNS) + 1)]
    for r in status["rows"]:
        left = str(r["disagreements_left"]) if "disagreements_left" in r else ""
        lines.append(f"| {r['person']} | {r['phase']} | " + " | ".join(str(r[c]) for c in COLUMNS) + f" | {left} |")
    lines += ["", "## Discarded, by reason", "", "| person | phase | reason | documents |", "|---|---|---|---|"]
    for r in status["rows"]:
        for reason, n in r["discarded_by_reason"].items():
            lines.append(f"| {r['person']} | {r['phase']} | {reason} | {n} |")
    problems = [p for r in status["rows"] for p in r["problems"]]
    lines += ["", "## Held back", ""]
    lines += [f"- {p}" for p in problems] or ["none"]
    return "\n".join(lines) + "\n"


def write_png(status: Mapping[str, Any], path: str | Path) -> Path:
    """A horizontal stacked bar per person and phase: untouched, edited, done, discarded, held back.

    A ``Done`` or ``Discard`` marker is itself an edit, so "edited, in progress" (edited, neither done
    nor discarded) and the other parts add up to the documents in the person's collection; the
    remainder of ``assigned`` is drawn as "not yet in collection" (phase 2 before ``campaign review``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(status["rows"])
    labels = [f"{r['person']} (phase {r['phase']})" for r in rows]
    series: dict[str, list[int]] = {
        "untouched": [r["untouched"] for r in rows],
        "edited, in progress": [r["edited"] - r["done"] - r["discarded"] for r in rows],
        "done": [r["done"] for r in rows],
        "discarded": [r["discarded"] for r in rows],
        "held back": [r["held_back"] for r in rows],
        "not yet in collection": [r["assigned"] - r["in_collection"] for r in rows],
    }
    colours = ["#d9d9d9", "#9ecae1", "#31a354", "#636363", "#de2d26", "#ffffff"]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.5))
    left = [0] * len(rows)
    for (name, values), colour in zip(series.items(), colours, strict=True):
        ax.barh(labels, values, left=left, label=name, color=colour, edgecolor="#444444", linewidth=0.5)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("documents")
    ax.set_title("Annotation campaign progress")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return out
