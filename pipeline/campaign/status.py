"""``campaign status``: progress per person and phase.

For every person and phase, over the brat documents assigned to them (``campaign.json``):

* ``assigned``; ``in_collection`` (phase 2: written by ``campaign review`` so far);
* ``untouched`` (annotations equal to the reference, ids aside), ``edited`` (the others), ``done``
  (marked ``Done``), ``discarded`` and ``discarded_by_reason``;
* ``held_back``: documents that do not parse or validate, or whose text was changed (with their
  ``file:line`` problems in ``problems``);
* against the reference, over the documents read and not discarded: ``entities_kept``,
  ``entities_deleted``, ``entities_added``, ``entities_retyped`` (see
  [`entity_changes`][pipeline.campaign.documents.entity_changes]) and ``relations_added`` (also
  ``relations_deleted``);
* phase 2 only: ``disagreements_left`` (``Disagreement`` marks and disputed ``Disputed_<type>`` relations
  still in the documents) and ``agreed`` (documents whose merged version had nothing to adjudicate: the
  ones ``campaign finalize --accept-agreed`` lets through without a sign-off);
* phase 1 only: ``suggestions``, what became of the relations the "Suggest relations" button of
  ``campaign serve`` suggested in the person's collection (``kept``, ``retyped``, ``deleted``; see
  [`pipeline.campaign.suggestions`][pipeline.campaign.suggestions]).

A document is ``done`` when it holds the ``Done`` marker: an annotator's finished document in phase 1, a
senior's signed-off one in phase 2 (what ``campaign finalize`` takes).  Any edit makes a document
``edited``, a ``Disagreement`` mark removed (an accepted entity) included.

The reference is the pre-annotation as handed out (``preannotation/``) in phase 1 and the merged
document as ``campaign review`` wrote it (``review/merged/<senior>/``) in phase 2.

Once ``campaign finalize`` has written the campaign's finalize record
([`pipeline.campaign.finalized`][pipeline.campaign.finalized]), the status also lists the finalized documents
whose phase-2 ``.ann`` changed (or went missing) since: ``FINAL`` no longer holds what the senior has now.

It also names the relation scorer ``campaign serve`` uses (``models/relations/IN_USE``) and the newest
versions ``campaign retrain`` wrote ([`pipeline.campaign.models`][pipeline.campaign.models]).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pipeline.brat.standoff import BratTextError, parse_ann, read_document, read_text
from pipeline.campaign import assignments as asg
from pipeline.campaign import finalized as finalized_mod
from pipeline.campaign import guidelines as guidelines_mod
from pipeline.campaign import models as models_mod
from pipeline.campaign.documents import (
    canonical,
    discard_reasons,
    entity_changes,
    is_done,
    load_conf,
    read_checked,
    relation_changes,
)
from pipeline.campaign.layout import (
    PHASE1_DIR,
    PHASE2_DIR,
    PREANNOTATION_DIR,
    REVIEW_DIR,
    REVIEW_LEDGER,
    REVIEW_MERGED_DIR,
    read_campaign,
)
from pipeline.campaign.merge import count_marks
from pipeline.campaign.publish import Ledger
from pipeline.campaign.suggestions import suggestion_counts

COLUMNS = ("assigned", "in_collection", "untouched", "edited", "done", "discarded", "held_back",
           "entities_kept", "entities_deleted", "entities_added", "entities_retyped", "relations_added",
           "relations_deleted")
PROGRESS = ("untouched", "edited", "done", "discarded", "held_back")


def _person_status(
    collection: Path, reference_dir: Path, text_dir: Path, files: list[str], phase: int,
    published: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    row: dict[str, Any] = {k: 0 for k in COLUMNS}
    reasons: Counter[str] = Counter()
    problems: list[str] = []
    row["assigned"] = len(files)
    conf = load_conf(collection / "annotation.conf") if (collection / "annotation.conf").is_file() else None
    marks = agreed = 0
    for name in files:
        txt = collection / f"{name}.txt"
        if not txt.is_file():
            if name in published:  # review wrote it (its ledger says so) and it has gone since
                problems.append(f"{txt}:0: published by campaign review but no longer in the collection "
                                "(deleted?); restore it with campaign history (review never re-creates it)")
                row["held_back"] += 1
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
        if phase == 2 and base is not None and count_marks(base) == 0:
            agreed += 1
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
        row["agreed"] = agreed
    return row


def campaign_status(campaign_dir: str | Path) -> dict[str, Any]:
    """Count the progress of every person in every phase (see the module docstring).

    Reads the collections only; nothing is written.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        ``{"campaign": path, "rows": [...], "finalized": {...}}``: one row per person and phase (phase 1
        first, then by person): ``person``, ``phase``, the counts of the module docstring,
        ``discarded_by_reason``, ``problems`` (``file:line: message`` of the documents held back), in
        phase 1 ``suggestions`` and, in phase 2, ``disagreements_left`` and ``agreed``; ``finalized`` from
        the finalize record: ``final`` (FINAL's path, None when the campaign has no record), ``documents``
        (how many it names), ``changed_since`` (``document``, ``senior``, ``what``: ``changed`` or
        ``missing``) and ``error`` (why the record cannot be read, else None); ``models``: the relation
        scorer ``campaign serve`` uses and the newest versions
        ([`models_status`][pipeline.campaign.models.models_status]).

    Raises:
        CampaignError: If ``campaign.json`` cannot be read.
    """
    root = Path(campaign_dir)
    campaign = read_campaign(root)
    files: dict[tuple[str, int], list[str]] = {}
    for entry in campaign["documents"]:
        for person in entry["phase1"]:
            files.setdefault((person, 1), []).extend(entry["files"])
        if entry["phase2"]:
            files.setdefault((entry["phase2"], 2), []).extend(entry["files"])
    rows = []
    pre = root / PREANNOTATION_DIR
    ledger = Ledger.read(root / REVIEW_DIR / REVIEW_LEDGER)  # the phase-2 documents review has published
    for (person, phase), names in sorted(files.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if phase == 1:
            row = _person_status(root / PHASE1_DIR / person, pre, pre, names, 1)
            row["suggestions"] = suggestion_counts(root, f"{PHASE1_DIR}/{person}")
        else:
            merged = root / REVIEW_DIR / REVIEW_MERGED_DIR / person
            row = _person_status(root / PHASE2_DIR / person, merged, pre, names, 2,
                                 frozenset(f for s, f in ledger.entries if s == person))
        rows.append({"person": person, "phase": phase, **row})
    return {"campaign": str(root), "rows": rows, "finalized": _finalized_status(root),
            "models": models_mod.models_status(root)}


def _finalized_status(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"final": None, "documents": 0, "changed_since": [], "error": None}
    try:
        record = finalized_mod.read_record(root)
    except finalized_mod.RecordError as exc:
        out["error"] = str(exc)
        return out
    if record is not None:
        out["final"], out["documents"] = str(record.final), len(record.documents)
        out["changed_since"] = [{"document": d, "senior": senior, "what": what}
                                for d, senior, what in finalized_mod.changed_since(root, record)]
    return out


def format_markdown(status: Mapping[str, Any]) -> str:
    """Render a status as Markdown tables.

    Progress and edits per person and phase, discards by reason, relation suggestions per phase-1
    person, and the problems of the documents held back.

    Args:
        status: What [`campaign_status`][pipeline.campaign.status.campaign_status] returned.

    Returns:
        The Markdown text.
    """
    lines = [f"# Campaign status: {status['campaign']}", "",
             "| person | phase | " + " | ".join(c.replace("_", " ") for c in COLUMNS)
             + " | disagreements left | agreed |",
             "|---|---|" + "---|" * (len(COLUMNS) + 2)]
    for r in status["rows"]:
        left = str(r["disagreements_left"]) if "disagreements_left" in r else ""
        agreed = str(r["agreed"]) if "agreed" in r else ""
        lines.append(f"| {r['person']} | {r['phase']} | " + " | ".join(str(r[c]) for c in COLUMNS)
                     + f" | {left} | {agreed} |")
    lines += ["", "## Discarded, by reason", "", "| person | phase | reason | documents |", "|---|---|---|---|"]
    for r in status["rows"]:
        for reason, n in r["discarded_by_reason"].items():
            lines.append(f"| {r['person']} | {r['phase']} | {reason} | {n} |")
    lines += ["", "## Relation suggestions (phase 1)", "", "| person | kept | retyped | deleted |", "|---|---|---|---|"]
    for r in status["rows"]:
        if "suggestions" in r:
            lines.append(f"| {r['person']} | " + " | ".join(str(r["suggestions"][k]) for k in ("kept", "retyped",
                                                                                              "deleted")) + " |")
    problems = [p for r in status["rows"] for p in r["problems"]]
    lines += ["", "## Held back", ""]
    lines += [f"- {p}" for p in problems] or ["none"]
    fin = status.get("finalized")
    if fin is not None and (fin["final"] is not None or fin["error"] is not None):
        lines += ["", "## Finalized, changed since", ""]
        if fin["error"] is not None:
            lines.append(f"the finalize record cannot be read: {fin['error']}")
        else:
            lines.append(f"{fin['documents']} document(s) finalized to {fin['final']}; changed since:")
            lines.append("")
            lines += [f"- phase2/{c['senior']}/{c['document']}.ann: {c['what']} since finalize"
                      for c in fin["changed_since"]] or ["none"]
    mod = status.get("models")
    if mod is not None:
        lines += ["", "## Models (campaign retrain)", "",
                  f"relation scorer in use (serve, models/relations/IN_USE): {mod['in_use'] or 'not recorded'}; "
                  f"newest: {mod['newest'] or 'none (the shipped scorer)'}; newest entity model: "
                  f"{mod['newest_entities'] or 'none'}"]
    return "\n".join(lines) + "\n"


def done_over_time(entries: Iterable[tuple[float, str, bytes]]) -> dict[str, list[tuple[float, int]]]:
    """Count the documents done per collection over time, from journaled versions.

    A document counts as done from the time its latest version carries the ``Done`` marker
    ([`is_done`][pipeline.campaign.documents.is_done]) until a later version drops it.  Writes outside
    ``phase1/``/``phase2/`` collections are ignored.

    Args:
        entries: ``(time, document, .ann bytes)`` of every journaled write: ``time`` in seconds since the
            epoch, ``document`` as [`document_key`][pipeline.campaign.locks.document_key] names it
            (``phase1/<person>/NAME``); in any order.

    Returns:
        ``{"<person> (phase N)": [(time, documents done), ...]}``, sorted by label: a point at the first
        write into that collection and one at every change of the count.
    """
    state: dict[str, dict[str, bool]] = {}
    series: dict[str, list[tuple[float, int]]] = {}
    for when, document, content in sorted(entries, key=lambda e: e[0]):
        parts = document.split("/")
        if len(parts) != 3 or parts[0] not in (PHASE1_DIR, PHASE2_DIR):
            continue
        label = f"{parts[1]} (phase {1 if parts[0] == PHASE1_DIR else 2})"
        doc, _ = parse_ann(parts[2], "", content.decode("utf-8", errors="replace"))
        done = state.setdefault(label, {})
        done[document] = is_done(doc)
        count = sum(done.values())
        points = series.setdefault(label, [])
        if not points or points[-1][1] != count:
            points.append((when, count))
    return dict(sorted(series.items()))


def write_png(status: Mapping[str, Any], path: str | Path,
              progress: Mapping[str, list[tuple[float, int]]] | None = None) -> Path:
    """Draw a status as a PNG chart: a horizontal stacked bar per person and phase.

    The parts are untouched, edited (in progress), done, discarded, held back.  A ``Done`` or
    ``Discard`` marker is itself an edit, so "edited, in progress" (edited, neither done nor discarded)
    and the other parts add up to the documents in the person's collection; the remainder of
    ``assigned`` is drawn as "not yet in collection" (phase 2 before ``campaign review``).

    Args:
        status: What [`campaign_status`][pipeline.campaign.status.campaign_status] returned.
        path: The PNG file written (its directory is created); written in place, without the
            ``Software`` text chunk.
        progress: Documents done over time
            ([`done_over_time`][pipeline.campaign.status.done_over_time], from the journal), drawn in a
            second chart below (UTC); ``None`` or empty for none.

    Returns:
        The path written.
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
    bars_height = 0.5 * len(rows) + 1.5
    if progress:
        fig, (ax, over_time) = plt.subplots(2, 1, figsize=(8, bars_height + 4.5), layout="constrained",
                                            gridspec_kw={"height_ratios": [bars_height, 4]})
        _draw_over_time(over_time, progress)
    else:
        fig, ax = plt.subplots(figsize=(8, bars_height))
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


def _draw_over_time(ax: Any, progress: Mapping[str, list[tuple[float, int]]]) -> None:
    import datetime as dt

    import matplotlib.dates as mdates

    last = max(t for points in progress.values() for t, _ in points)
    for label, points in progress.items():
        times = [dt.datetime.fromtimestamp(t, dt.UTC) for t, _ in points] + [dt.datetime.fromtimestamp(last, dt.UTC)]
        counts = [n for _, n in points] + [points[-1][1]]
        ax.step(times, counts, where="post", label=label)
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("documents done")
    ax.set_xlabel("time (UTC), from the journal")
    ax.set_title("Documents done over time")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")


def team_status(root: Path) -> dict[str, object]:
    """Compute the team part of ``campaign status``.

    Args:
        root: The campaign directory.

    Returns:
        ``people`` (per person and phase over the assignment history), ``calibration`` (calibration
            documents per annotator, counted apart) and ``guidelines`` (who has worked since the current
            guideline version).

    Raises:
        CampaignError: If ``campaign.json`` cannot be read.
    """
    campaign = read_campaign(root)
    calibration: Counter[str] = Counter(p for e in campaign.get("calibration", []) for p in e["annotators"])
    return {"people": asg.person_history(root, campaign), "calibration": dict(sorted(calibration.items())),
            "guidelines": guidelines_mod.worked_since(root, campaign)}


def format_team_status(team: dict[str, object]) -> str:
    """Format the team part of ``campaign status`` as Markdown.

    Args:
        team: What [`team_status`][pipeline.campaign.status.team_status] returned.

    Returns:
        The Markdown sections (starting with a blank line), ending with a newline.
    """
    people = team["people"]
    assert isinstance(people, list)
    lines = ["", "## Team over the assignment history", "",
             "| person | phase | assigned ever | moved away | assigned now | joined | left |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['person']} | {r['phase']} | {r['ever']} | {r['moved_away']} | {r['now']} | "
              f"{r['joined'] or ''} | {r['left'] or ''} |" for r in people]
    calibration = team["calibration"]
    assert isinstance(calibration, dict)
    if calibration:
        lines += ["", "Calibration documents (not in the counts above): "
                  + ", ".join(f"{p} {n}" for p, n in calibration.items())]
    g = team["guidelines"]
    assert isinstance(g, dict)
    lines += ["", f"## Since guidelines version {g['version']} ({g['date'] or 'from the start'})", ""]
    if g["source"] == "none":
        lines.append("No journal (campaign serve keeps one): who has worked since cannot be told.")
    elif g["source"] == "annotations":
        lines += ["No journal: documents whose annotations changed since the version was recorded.", "",
                  "| person | documents changed |", "|---|---|"]
        lines += [f"| {r['person']} | {r['documents']} |" for r in g["people"]]
    else:
        lines += ["| person | writes | documents | last write |", "|---|---|---|---|"]
        lines += [f"| {r['person']} | {r['writes']} | {r['documents']} | {r['last'] or 'none'} |" for r in g["people"]]
    return "\n".join(lines) + "\n"
