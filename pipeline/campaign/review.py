"""``campaign review``: phase 2 from the two phase-1 annotations of every finished document.

Input: a campaign directory written by ``pgx-corpus batches`` ([`pipeline.campaign.phase1`][pipeline.campaign.phase1])
in which the phase-1 annotators have worked.  For every brat document (a document or one of its pages)
the two phase-1 versions are read back ([`read_checked`][pipeline.campaign.documents.read_checked]) and the
document is

* **held back** when a version does not parse or validate against its collection's
  ``annotation.conf``, or its text was changed (each problem reported ``file:line``; the files are left
  as they are, so nothing is lost; the document goes on once they are mended);
* **discarded** when either annotator annotated a ``Discard`` entity (reasons listed per annotator);
* **pending** while an annotator has not finished it (no ``Done`` marker, see
  [`pipeline.campaign.documents`][pipeline.campaign.documents]);
* **ready** otherwise: both finished, neither discarded.

A ready document is merged ([`pipeline.campaign.merge`][pipeline.campaign.merge]; the ``Done`` markers are dropped) into
``phase2/<senior>/`` (the senior chosen at batch time) unless that collection already holds it: the
senior's documents are never overwritten, so rerunning adds only newly finished documents and a second
run with nothing new changes nothing.  The merged document as written is also kept in
``review/merged/<senior>/`` (the reference of ``campaign status`` for phase 2).  Each senior's
collection gets the campaign configuration with the ``Disagreement`` values of its annotators and the
generated ``Disputed_<type>`` relation types
([`campaign_annotation_conf`][pipeline.campaign.conf.campaign_annotation_conf]), and the senior's ``guide.md``
([`senior_guide`][pipeline.campaign.guide.senior_guide]).

Reports in ``review/`` (rewritten each run, a function of the campaign's state only):
``report.md``/``report.json`` (documents per state, discarded documents with reasons, held-back
documents with their problems, pending documents, each phase-2 document with its agreed and marked
annotation counts, and documents whose phase-1 annotation changed after they were merged), and
``agreement.md``/``agreement.json``: for every pair of annotators, over their ready documents, entity
agreement in exact/partial spans x strict/hierarchy/any type (Table 8 of the PGxCorpus paper) and
relation agreement in the same settings, directed and undirected (Table 9), computed by
[`compare_collections`][pipeline.brat.agreement.compare_collections], and modality agreement on the relations both drew
([`modality_agreement`][pipeline.campaign.review.modality_agreement]; modality read from the relation notes).

Checks before anything is written ([`CampaignError`][pipeline.campaign.layout.CampaignError]): the manifest
reads, every phase-1 annotator has a collection, every document has two distinct phase-1 annotators
and a senior who is not one of them.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.brat import agreement as agreement_mod
from pipeline.brat.standoff import BratDocument, BratTextError, dumps, read_text
from pipeline.campaign import publish
from pipeline.campaign.conf import write_campaign_conf_files
from pipeline.campaign.documents import (
    Checked,
    discard_reasons,
    is_finished,
    load_conf,
    read_checked,
    relation_keys,
    without_markers,
)
from pipeline.campaign.guide import GUIDE_FILE, senior_guide
from pipeline.campaign.guidelines import stamp_all
from pipeline.campaign.layout import (
    CAMPAIGN_MANIFEST,
    DISCARD_TYPE,
    PHASE1_DIR,
    PHASE2_DIR,
    PREANNOTATION_DIR,
    REVIEW_AGREEMENT_JSON,
    REVIEW_AGREEMENT_MD,
    REVIEW_DIR,
    REVIEW_LEDGER,
    REVIEW_MERGED_DIR,
    REVIEW_REPORT_JSON,
    REVIEW_REPORT_MD,
    CampaignError,
    read_campaign,
)
from pipeline.campaign.merge import merge_versions
from pipeline.schema import Schema

log = logging.getLogger(__name__)

STATES = ("ready", "discarded", "held_back", "pending")


@dataclass
class FileState:
    """One brat document of the campaign after phase 1.

    Attributes:
        file: The brat document name (the document itself, or one of its pages).
        document: The campaign document it belongs to.
        annotators: Its two phase-1 annotators.
        senior: Its phase-2 senior.
        versions: Annotator -> their version, as [`read_checked`][pipeline.campaign.documents.read_checked]
            read it.
        state: ``ready``, ``discarded``, ``held_back`` or ``pending`` (see the module docstring).
        problems: The document's own problems (its pre-annotation copy cannot be read), ``file:line``.
    """

    file: str
    document: str
    annotators: tuple[str, str]
    senior: str
    versions: dict[str, Checked] = field(default_factory=dict)
    state: str = "pending"
    problems: list[str] = field(default_factory=list)  # the document's own (its pre-annotation copy), file:line


def check_campaign(root: Path, campaign: Mapping[str, Any]) -> None:
    """Check that a campaign can be reviewed, before anything is written.

    Documents without files (missing from the collection) are not checked.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The parsed ``campaign.json``.

    Raises:
        CampaignError: If there is no ``preannotation/``, a document does not have two distinct phase-1
            annotators or has no senior or one of its annotators as senior, or a phase-1 annotator's
            collection is missing; the message names the file or directory and the document.
    """
    where = root / CAMPAIGN_MANIFEST
    if not (root / PREANNOTATION_DIR).is_dir():
        raise CampaignError(f"{root}: no {PREANNOTATION_DIR}/ directory (write the campaign with batches)")
    for entry in campaign["documents"]:
        doc, annotators, senior = entry["document"], entry["phase1"], entry["phase2"]
        if not entry["files"]:
            continue
        if len(annotators) != 2 or len(set(annotators)) != 2:
            raise CampaignError(f"{where}: document {doc} needs two distinct phase-1 annotators, has {annotators}")
        if not senior or senior in annotators:
            raise CampaignError(f"{where}: the roster cannot give document {doc} a senior who did not annotate it "
                                f"(phase 1: {', '.join(annotators)}; phase 2: {senior or 'nobody'})")
        for person in annotators:
            if not (root / PHASE1_DIR / person).is_dir():
                raise CampaignError(f"{root / PHASE1_DIR / person}: {person} (phase-1 annotator of {doc}) is missing "
                                    "from the campaign directory")


def phase1_states(root: Path, campaign: Mapping[str, Any]) -> list[FileState]:
    """Read, check and classify both phase-1 versions of every brat document of a campaign.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The parsed ``campaign.json``.

    Returns:
        One state per brat document, in the order of ``campaign.json``.

    Raises:
        OSError: If a phase-1 collection's ``annotation.conf`` cannot be read.
    """
    pre = root / PREANNOTATION_DIR
    confs = {}
    out = []
    for entry in campaign["documents"]:
        for name in entry["files"]:
            a, b = entry["phase1"]
            state = FileState(name, entry["document"], (a, b), entry["phase2"])
            try:
                original = read_text(pre / f"{name}.txt") if (pre / f"{name}.txt").is_file() else None
            except BratTextError as exc:
                # the text handed out cannot be read: this document is held back, the others go on
                state.problems.append(str(exc))
                state.state = "held_back"
                out.append(state)
                continue
            for person in (a, b):
                collection = root / PHASE1_DIR / person
                if person not in confs:
                    confs[person] = load_conf(collection / "annotation.conf")
                state.versions[person] = read_checked(collection / f"{name}.txt", original, confs[person])
            docs = [v.doc for v in state.versions.values()]
            if any(d is None for d in docs):
                state.state = "held_back"
            elif any(discard_reasons(d) for d in docs if d is not None):
                state.state = "discarded"
            elif all(is_finished(d) for d in docs if d is not None):
                state.state = "ready"
            out.append(state)
    return out


def _senior_annotators(campaign: Mapping[str, Any]) -> dict[str, list[str]]:
    seniors: dict[str, set[str]] = {}
    for entry in campaign["documents"]:
        if entry["files"] and entry["phase2"]:
            seniors.setdefault(entry["phase2"], set()).update(entry["phase1"])
    return {s: sorted(people) for s, people in sorted(seniors.items())}


def _pairwise_agreement(states: list[FileState], schema: Schema) -> dict[str, Any]:
    by_pair: dict[tuple[str, str], tuple[dict[str, BratDocument], dict[str, BratDocument]]] = {}
    for s in states:
        if s.state != "ready":
            continue
        a, b = sorted(s.annotators)
        ref, pred = by_pair.setdefault((a, b), ({}, {}))
        doc_a, doc_b = s.versions[a].doc, s.versions[b].doc
        assert doc_a is not None and doc_b is not None
        ref[s.file], pred[s.file] = without_markers(doc_a), without_markers(doc_b)
    pairs = []
    for (a, b), (ref, pred) in sorted(by_pair.items()):
        pair = agreement_mod.compare_collections(ref, pred, schema, ref_label=a, pred_label=b)
        pair["modality"] = modality_agreement([(ref[name], pred[name]) for name in sorted(ref)])
        pairs.append(pair)
    mean: dict[str, dict[str, float | None]] = {}
    if pairs:
        for kind in ("entities", "relations"):
            mean[kind] = {k: _mean([p[kind][k]["micro"]["f1"] for p in pairs]) for k in pairs[0][kind]}
    return {"pairs": pairs, "mean_f1": mean, "parse_issues": []}


def modality_agreement(pairs: list[tuple[BratDocument, BratDocument]]) -> dict[str, Any]:
    """Score modality agreement on the relations both versions drew.

    Relations match on type and argument entities by role (their keys without the modality, see
    [`relation_keys`][pipeline.campaign.documents.relation_keys]); modality is read from the relations'
    notes with the project's grammar ([`relation_note`][pipeline.campaign.documents.relation_note]).

    Args:
        pairs: ``(version a, version b)`` of each document, campaign markers removed.

    Returns:
        ``matched`` (relations both drew), ``same_modality`` (of those, with the same modality) and their
        ratio ``agreement`` (``None`` when nothing matched).
    """
    matched = same = 0
    for a, b in pairs:
        by_a: dict[tuple[Any, ...], Counter[str]] = {}
        by_b: dict[tuple[Any, ...], Counter[str]] = {}
        for doc, into in ((a, by_a), (b, by_b)):
            for type_, args, modality in relation_keys(doc).values():
                into.setdefault((type_, args), Counter())[modality] += 1
        for key, mods_a in by_a.items():
            mods_b = by_b.get(key)
            if mods_b:
                matched += min(sum(mods_a.values()), sum(mods_b.values()))
                same += sum((mods_a & mods_b).values())
    return {"matched": matched, "same_modality": same, "agreement": same / matched if matched else None}


def _mean(scores: list[float | None]) -> float | None:
    """Mean of the defined scores; None (undefined) when no pair had anything to score."""
    defined = [s for s in scores if s is not None]
    return sum(defined) / len(defined) if defined else None


def _pct_cell(score: float | None) -> str:
    return "n/a" if score is None else f"{100 * score:.1f}"


def format_agreement_summary(result: Mapping[str, Any]) -> str:
    """Render the phase-1 agreement as Markdown: micro F1 in %, one row per pair of annotators.

    Entities in the Table 8 settings, relations in the Table 9 settings, then relation modality, then
    the details of [`format_agreement`][pipeline.brat.agreement.format_agreement].

    Args:
        result: The agreement: ``pairs`` (each as
            [`compare_collections`][pipeline.brat.agreement.compare_collections] returns it, with
            ``modality`` added) and ``mean_f1``.

    Returns:
        The text of ``review/agreement.md``.
    """
    lines = ["# Inter-annotator agreement after phase 1", "",
             "Micro F1 (%) over the documents both annotators finished and neither discarded.", ""]
    if not result["pairs"]:
        return "\n".join([*lines, "No document is ready yet.", ""])
    ent = [f"{s}_{t}" for s in agreement_mod.SPAN_SETTINGS for t in agreement_mod.TYPE_SETTINGS]
    rel = [f"{s}_{t}_{d}" for s in agreement_mod.SPAN_SETTINGS for t in agreement_mod.TYPE_SETTINGS
           for d in agreement_mod.DIRECTION_SETTINGS]
    for title, kind, settings in (("Entities (Table 8 settings)", "entities", ent),
                                  ("Relations (Table 9 settings)", "relations", rel)):
        lines += [f"## {title}", "", "| pair | documents | " + " | ".join(settings) + " |",
                  "|---|---|" + "---|" * len(settings)]
        for p in result["pairs"]:
            cells = " | ".join(_pct_cell(p[kind][k]["micro"]["f1"]) for k in settings)
            lines.append(f"| {p['reference']} / {p['predicted']} | {p['documents']['common']} | {cells} |")
        lines.append("")
    lines += ["## Relation modality", "",
              "Over the relations both annotators drew (same type and argument entities): how many have the same "
              "modality (hyp, neg, none; read from the relation notes).", "",
              "| pair | relations drawn by both | same modality | agreement (%) |", "|---|---|---|---|"]
    for p in result["pairs"]:
        m = p["modality"]
        lines.append(f"| {p['reference']} / {p['predicted']} | {m['matched']} | {m['same_modality']} | "
                     f"{_pct_cell(m['agreement'])} |")
    lines += ["", "# Details", "", agreement_mod.format_agreement(result)]
    return "\n".join(lines)


def _write_senior_collections(root: Path, campaign: Mapping[str, Any]) -> None:
    seniors = _senior_annotators(campaign)
    for senior, annotators in seniors.items():
        dest = root / PHASE2_DIR / senior
        write_campaign_conf_files(root / PREANNOTATION_DIR, dest, annotators)
        publish.write_text(dest / GUIDE_FILE, senior_guide(dest, senior))


def review(campaign_dir: str | Path, schema: Schema, counts: Counter[str] | None = None) -> dict[str, Any]:
    """Run the review (see the module docstring).

    Writes the ready documents not published yet into the seniors' collections (each under its lock,
    ``.ann`` first, ``.txt`` last, atomically), then their references in ``review/merged/<senior>/``,
    then the ledger line; the seniors' configuration and guides; the stamped guides; and the reports in
    ``review/`` (atomically).  Temporaries a killed run left are removed first.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        schema: The schema the agreement is computed with.
        counts: Counters updated in place: ``added`` (documents written to a senior's collection by this
            run), ``already_in_phase2`` and one count per state; a new one when ``None``.

    Returns:
        The report as written to ``review/report.json`` (``documents`` per state, ``phase2``,
        ``discarded``, ``held_back``, ``pending``, ``changed_after_merge``, ``discard_reasons`` and, when
        a published document has gone, ``published_missing``), plus ``agreement``.

    Raises:
        CampaignError: If ``campaign.json`` cannot be read or the campaign fails
            [`check_campaign`][pipeline.campaign.review.check_campaign]; nothing is written then.
    """
    counts = counts if counts is not None else Counter()
    root = Path(campaign_dir)
    campaign = read_campaign(root)
    check_campaign(root, campaign)
    states = phase1_states(root, campaign)
    # temporaries of a killed run (review also stamps the phase-1 guides); a live writer's are kept
    for leftover in (root / PHASE1_DIR, root / PHASE2_DIR, root / REVIEW_DIR):
        publish.clean_tree(leftover)
    _write_senior_collections(root, campaign)
    stamp_all(root, campaign)  # every guide says which guideline version is current
    with publish.ledger(root / REVIEW_DIR / REVIEW_LEDGER) as book:
        if not book.existed:
            _seed_ledger(book, root, states)
        report = _review_states(root, states, book, counts)
    _write_reports(root, report, _pairwise_agreement(states, schema))
    return report


def _seed_ledger(book: publish.Ledger, root: Path, states: list[FileState]) -> None:
    """Seed the ledger of a campaign reviewed before the ledger existed.

    Its documents whose four files are there (written in that order by earlier versions: phase-2
    ``.txt`` and ``.ann``, then the merged reference) are published.
    """
    for s in states:
        dest, kept = root / PHASE2_DIR / s.senior, root / REVIEW_DIR / REVIEW_MERGED_DIR / s.senior
        if all((d / f"{s.file}{x}").is_file() for d in (dest, kept) for x in (".txt", ".ann")):
            book.entries.add((s.senior, s.file))


def _review_states(root: Path, states: list[FileState], book: publish.Ledger, counts: Counter[str]) -> dict[str, Any]:
    """The report of the states; ready documents not in the ledger written to phase 2 (and recorded)."""
    report: dict[str, Any] = {"documents": {k: 0 for k in ("assigned", *STATES)}, "phase2": [], "discarded": [],
                              "held_back": [], "pending": [], "changed_after_merge": [],
                              "discard_reasons": {}}
    reasons: Counter[str] = Counter()
    for s in states:
        report["documents"]["assigned"] += 1
        report["documents"][s.state] += 1
        counts[s.state] += 1
        if s.state == "held_back":
            if s.problems:
                report["held_back"].append({"file": s.file, "document": s.document, "person": None,
                                            "problems": s.problems})
                for problem in s.problems:
                    log.warning("held back: %s", problem)
            for person, v in s.versions.items():
                if v.problems:
                    report["held_back"].append({"file": s.file, "document": s.document, "person": person,
                                                "problems": v.problems})
                    for problem in v.problems:
                        log.debug("held back: %s", problem)  # the command line prints them, once
        elif s.state == "discarded":
            by = {p: discard_reasons(v.doc) for p, v in s.versions.items() if v.doc is not None}
            by = {p: r for p, r in by.items() if r}
            for r in by.values():
                reasons.update(r)
            item: dict[str, Any] = {"file": s.file, "document": s.document, "by": by}
            notes = discard_notes(s.versions)
            if notes:
                item["notes"] = notes
            report["discarded"].append(item)
        elif s.state == "pending":
            waiting = [p for p, v in s.versions.items() if v.doc is not None and not is_finished(v.doc)]
            report["pending"].append({"file": s.file, "document": s.document, "waiting_for": waiting})
        else:
            a, b = s.annotators
            doc_a, doc_b = s.versions[a].doc, s.versions[b].doc
            assert doc_a is not None and doc_b is not None
            merged, merge_counts = merge_versions([(a, without_markers(doc_a)), (b, without_markers(doc_b))])
            dest = root / PHASE2_DIR / s.senior
            kept = root / REVIEW_DIR / REVIEW_MERGED_DIR / s.senior
            published = (s.senior, s.file) in book
            if not published and _whole_on_disk(dest, kept, s.file):
                # published by a run killed before its ledger line, or moved here with its reference by a
                # team command: never written over (the senior may have started it)
                book.add(s.senior, s.file)
                published = True
            if published:
                counts["already_in_phase2"] += 1
                if not (dest / f"{s.file}.txt").exists():
                    report.setdefault("published_missing", []).append({"file": s.file, "senior": s.senior})
                    log.warning("%s: published to %s by an earlier review but no longer there (not re-created)",
                                s.file, dest)
                reference = kept / f"{s.file}.ann"
                if reference.is_file() and reference.read_text(encoding="utf-8") != dumps(merged):
                    report["changed_after_merge"].append({"file": s.file, "senior": s.senior})
                    log.warning("%s: phase-1 annotation changed after it was merged for %s (not re-merged)",
                                s.file, s.senior)
            else:
                # the document (.ann first, .txt last, under its lock), then its reference, then the ledger
                txt, ann = merged.text.encode("utf-8"), dumps(merged).encode("utf-8")
                publish.write_document(dest, merged.name, txt, ann, campaign_dir=root)
                publish.write_document(kept, merged.name, txt, ann)
                book.add(s.senior, s.file)
                counts["added"] += 1
            report["phase2"].append({"file": s.file, "document": s.document, "senior": s.senior,
                                     "annotators": [a, b], **merge_counts})
    report["discard_reasons"] = dict(sorted(reasons.items()))
    return report


def _whole_on_disk(dest: Path, kept: Path, name: str) -> bool:
    """Whether the phase-2 document ``name`` is whole although the ledger does not list it.

    Whole: its ``.txt`` (written last) and its merged reference exist, and its ``.ann`` is the reference
    or holds annotations.  An empty or missing ``.ann`` beside a non-empty reference is what an older, non-atomic review
    left when it was killed: that document is written again.
    """
    ann, reference = dest / f"{name}.ann", kept / f"{name}.ann"
    if not ((dest / f"{name}.txt").is_file() and (kept / f"{name}.txt").is_file() and reference.is_file()
            and ann.is_file()):
        return False
    data = ann.read_bytes()
    return data == reference.read_bytes() or bool(data.strip())


def discard_notes(versions: Mapping[str, Checked]) -> dict[str, list[str]]:
    """Collect the notes written on each annotator's ``Discard`` entities: why they discarded.

    Args:
        versions: Annotator -> their version; versions held back are skipped.

    Returns:
        Annotator -> their non-empty notes (stripped), only for annotators who wrote one.
    """
    out: dict[str, list[str]] = {}
    for person, v in versions.items():
        if v.doc is None:
            continue
        ids = {t.id for t in v.doc.textbounds if t.type == DISCARD_TYPE}
        found = [q.text.strip() for q in v.doc.notes if q.target in ids and q.text.strip()]
        if found:
            out[person] = found
    return out


def _write_reports(root: Path, report: dict[str, Any], agreement: dict[str, Any]) -> None:
    """``review/report.*`` and ``review/agreement.*``, each written beside itself and renamed."""
    out = root / REVIEW_DIR
    publish.write_text(out / REVIEW_REPORT_JSON, json.dumps(report, indent=1, sort_keys=True) + "\n")
    publish.write_text(out / REVIEW_REPORT_MD, format_report(report))
    publish.write_text(out / REVIEW_AGREEMENT_JSON, json.dumps(agreement, indent=1, sort_keys=True) + "\n")
    publish.write_text(out / REVIEW_AGREEMENT_MD, format_agreement_summary(agreement))
    report["agreement"] = agreement


def format_report(report: Mapping[str, Any]) -> str:
    """Render the review report as Markdown, without the agreement (see ``agreement.md``).

    Args:
        report: The report, as [`review`][pipeline.campaign.review.review] returns it.

    Returns:
        The text of ``review/report.md``.
    """
    d = report["documents"]
    lines = ["# Campaign review", "",
             f"{d['assigned']} documents: {d['ready']} in phase 2, {d['discarded']} discarded, "
             f"{d['held_back']} held back, {d['pending']} pending.", ""]
    lines += ["## Discarded documents", "", "| document | discarded by (reasons) |", "|---|---|"]
    for item in report["discarded"]:
        notes = item.get("notes", {})
        by = "; ".join(f"{p}: {', '.join(r)}" + (f" ({' / '.join(notes[p])})" if notes.get(p) else "")
                       for p, r in sorted(item["by"].items()))
        lines.append(f"| {item['file']} | {by.replace('|', '/')} |")
    if report["discard_reasons"]:
        lines += ["", "| reason | discards |", "|---|---|"]
        lines += [f"| {r} | {n} |" for r, n in report["discard_reasons"].items()]
    lines += ["", "## Held back (mend the files, then rerun)", ""]
    lines += [f"- {problem}" for item in report["held_back"] for problem in item["problems"]] or ["none"]
    lines += ["", "## Pending", "", "| document | waiting for |", "|---|---|"]
    lines += [f"| {item['file']} | {', '.join(item['waiting_for'])} |" for item in report["pending"]]
    lines += ["", "## In phase 2", "",
              "| document | senior | annotators | entities agreed | entities marked | relations agreed | "
              "relations disputed | of which modality differs |", "|---|---|---|---|---|---|---|---|"]
    for item in report["phase2"]:
        lines.append(f"| {item['file']} | {item['senior']} | {', '.join(item['annotators'])} | "
                     f"{item['entities_agreed']} | {item['entities_marked']} | {item['relations_agreed']} | "
                     f"{item['relations_marked']} | {item.get('relations_modality_differs', 0)} |")
    if report["changed_after_merge"]:
        lines += ["", "## Changed in phase 1 after the merge (the senior's copy was not touched)", ""]
        lines += [f"- {item['file']} ({item['senior']})" for item in report["changed_after_merge"]]
    return "\n".join(lines) + "\n"
