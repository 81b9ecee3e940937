"""Calibration rounds: a few extra documents every annotator annotates, to check agreement during phase 1.

[`add_round`][pipeline.campaign.calibration.add_round] hands a small set of documents of a brat collection to every
active phase-1 annotator (in their own blind collection, like any document), outside the two-annotators rule.  They
are recorded apart, in ``campaign.json``'s ``calibration`` list
(``{"document", "files", "annotators", "round", "date", "reference"}``), never in ``documents``:
``review``, ``finalize``, ``release`` and the phase-1 counts of ``status`` do not see them.  The
manager may add one to the campaign later ([`promote`][pipeline.campaign.calibration.promote]: two of its annotators and
a senior who is neither, as any document; the entry gets ``"promoted": true`` and the other annotators' copies stay
calibration copies).  A reference annotation (e.g. a gold standard) may come with the round; it is
kept in ``calibration/reference/``, outside every served collection.

[`report`][pipeline.campaign.calibration.report] scores, over the documents each person finished (``Done``, not
discarded), every pair of annotators against each other and each annotator against the reference, with
[`compare_collections`][pipeline.brat.agreement.compare_collections] (Table 8/9 settings), and sums up per person: the
mean micro F1 against the others and the F1 against the reference (exact spans, strict types).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.brat import agreement as agreement_mod
from pipeline.brat.standoff import BratDocument, read_document
from pipeline.campaign import assignments as asg
from pipeline.campaign.documents import discard_reasons, is_finished, load_conf, read_checked, without_markers
from pipeline.campaign.layout import (
    CALIBRATION_DIR,
    CALIBRATION_REFERENCE_DIR,
    PHASE1_DIR,
    PREANNOTATION_DIR,
    CampaignError,
    read_campaign,
)
from pipeline.schema import Schema

SETTING = "exact_strict"


def add_round(root: Path, collection: Path, documents: Sequence[str], *, reference: Path | None = None,
              when: str = "") -> dict[str, Any]:
    """Hand documents of a collection to every active annotator as a calibration round.

    Writes each document (and its pre-annotation) into ``preannotation/``, the reference into
    ``calibration/reference/`` when given, hands the documents out into every active phase-1
    annotator's collection, then records the round in ``campaign.json`` and its ``calibration`` entries
    in the history (through the team commands' pending file, so a kill in between is finished by the
    next command).

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        collection: The brat collection the documents come from (``NAME.txt`` and, if any, ``NAME.ann``
            as pre-annotation).
        documents: The brat document names, without extension.
        reference: A brat collection holding a reference annotation of each document (e.g. a gold
            standard); ``None`` for no reference.
        when: The round's date, ISO 8601; now (UTC) when empty.

    Returns:
        ``{"round", "documents", "annotators"}``: the round's number (one more than the last), the
        documents and the annotators they were handed to.

    Raises:
        CampaignError: Before anything is written, if a document is missing from ``collection`` (or
            from ``reference``), is already a document or calibration document of the campaign, no
            document is given, or the campaign has fewer than two active annotators.
    """
    from pipeline.campaign.team import _prepare_collection, finish_pending, hand_out, write_pending

    root, src = Path(root), Path(collection)
    campaign = copy.deepcopy(read_campaign(root))
    when = when or asg.now()
    known = {e["document"] for e in campaign["documents"]} | {e["document"] for e in campaign.get("calibration", [])}
    problems = [f"{src / d}.txt: no such document" for d in documents if not (src / f"{d}.txt").is_file()]
    problems += [f"{d}: already in the campaign" for d in documents if d in known]
    if reference is not None:
        problems += [f"{Path(reference) / d}.txt: no reference for this document" for d in documents
                     if not (Path(reference) / f"{d}.txt").is_file()]
    annotators = sorted(p["id"] for p in asg.active_people(campaign) if p.get("phase1", p["role"] == "annotator"))
    if len(annotators) < 2:
        problems.append(f"a calibration round needs two annotators or more, the campaign has {annotators}")
    if not documents:
        problems.append("no document given")
    if problems:
        raise CampaignError("calibration refused: " + "; ".join(problems))
    pre = root / PREANNOTATION_DIR
    for d in documents:
        for suffix in (".ann", ".txt"):
            source = src / f"{d}{suffix}"
            (pre / f"{d}{suffix}").write_bytes(source.read_bytes() if source.exists() else b"")
        if reference is not None:
            ref = root / CALIBRATION_DIR / CALIBRATION_REFERENCE_DIR
            ref.mkdir(parents=True, exist_ok=True)
            for suffix in (".ann", ".txt"):
                source = Path(reference) / f"{d}{suffix}"
                (ref / f"{d}{suffix}").write_bytes(source.read_bytes() if source.exists() else b"")
    number = 1 + max((e["round"] for e in campaign.get("calibration", [])), default=0)
    entries = [{"document": d, "files": [d], "annotators": annotators, "round": number, "date": when,
                "reference": reference is not None} for d in documents]
    for person in annotators:
        _prepare_collection(root, "1", person, campaign)
        for d in documents:
            hand_out(root, pre, root / PHASE1_DIR / person, d)
    asg.ensure_history(root, read_campaign(root))
    campaign["calibration"] = [*campaign.get("calibration", []), *entries]
    # the history lines go in once campaign.json has the round, even after a kill in between
    write_pending(root, campaign, [asg.change("calibration", d, 1, p, "assigned", when, f"round {number}")
                                   for d in documents for p in annotators], [], when)
    asg.save_campaign(root, campaign)
    finish_pending(root)
    return {"round": number, "documents": list(documents), "annotators": annotators}


def _finished_versions(root: Path, entries: list[dict[str, Any]]) -> dict[str, dict[str, BratDocument]]:
    pre = root / PREANNOTATION_DIR
    out: dict[str, dict[str, BratDocument]] = {}
    for entry in entries:
        for person in entry["annotators"]:
            collection = root / PHASE1_DIR / person
            if not (collection / "annotation.conf").is_file():
                continue
            for name in entry["files"]:
                original = pre / f"{name}.txt"
                checked = read_checked(collection / f"{name}.txt",
                                       original.read_text(encoding="utf-8") if original.is_file() else None,
                                       load_conf(collection / "annotation.conf"))
                doc = checked.doc
                if doc is not None and is_finished(doc) and not discard_reasons(doc):
                    out.setdefault(person, {})[name] = without_markers(doc)
    return out


def report(root: Path, schema: Schema, round_number: int | None = None) -> dict[str, Any]:
    """Score the agreement of a calibration round (see the module docstring).

    Only the versions each person finished (``Done``, not discarded) and that pass
    [`read_checked`][pipeline.campaign.documents.read_checked] are scored.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        schema: The schema the agreement is computed with.
        round_number: The round; every round when ``None``.

    Returns:
        ``{"rounds", "documents", "pairs", "people"}``: the rounds and documents scored; per pair of
        annotators with documents in common, ``a``, ``b``, ``documents``, ``entities_f1`` and
        ``relations_f1`` (micro F1 as a fraction, exact spans and strict types, directed relations); per
        person, ``assigned``, ``finished``, ``mean_entities_f1_vs_others`` and the entity and relation F1
        against the reference (``None`` when there is nothing to score).

    Raises:
        CampaignError: If the campaign has no such calibration round, or ``campaign.json`` cannot be read.
    """
    root = Path(root)
    campaign = read_campaign(root)
    entries = [e for e in campaign.get("calibration", []) if round_number is None or e["round"] == round_number]
    if not entries:
        raise CampaignError(f"{root}: no calibration round" + (f" {round_number}" if round_number else ""))
    versions = _finished_versions(root, entries)
    people = sorted({p for e in entries for p in e["annotators"]})
    pairs = []
    for a, b in itertools.combinations(people, 2):
        common = sorted(set(versions.get(a, {})) & set(versions.get(b, {})))
        if not common:
            continue
        result = agreement_mod.compare_collections({n: versions[a][n] for n in common},
                                                   {n: versions[b][n] for n in common}, schema,
                                                   ref_label=a, pred_label=b)
        pairs.append({"a": a, "b": b, "documents": len(common),
                      "entities_f1": result["entities"][SETTING]["micro"]["f1"],
                      "relations_f1": result["relations"][f"{SETTING}_directed"]["micro"]["f1"]})
    reference: dict[str, BratDocument] = {}
    ref_dir = root / CALIBRATION_DIR / CALIBRATION_REFERENCE_DIR
    for e in entries:
        for name in e["files"]:
            if e.get("reference") and (ref_dir / f"{name}.txt").is_file():
                reference[name] = without_markers(read_document(ref_dir / f"{name}.txt")[0])
    rows = []
    for person in people:
        mine = [p for p in pairs if person in (p["a"], p["b"])]
        scores = [p["entities_f1"] for p in mine if p["entities_f1"] is not None]
        assigned = sum(len(e["files"]) for e in entries if person in e["annotators"])
        row: dict[str, Any] = {"person": person, "assigned": assigned,
                               "finished": len(versions.get(person, {})),
                               "mean_entities_f1_vs_others": sum(scores) / len(scores) if scores else None,
                               "entities_f1_vs_reference": None, "relations_f1_vs_reference": None}
        common = sorted(set(reference) & set(versions.get(person, {})))
        if common:
            result = agreement_mod.compare_collections({n: reference[n] for n in common},
                                                       {n: versions[person][n] for n in common}, schema,
                                                       ref_label="reference", pred_label=person)
            row["entities_f1_vs_reference"] = result["entities"][SETTING]["micro"]["f1"]
            row["relations_f1_vs_reference"] = result["relations"][f"{SETTING}_directed"]["micro"]["f1"]
        rows.append(row)
    return {"rounds": sorted({e["round"] for e in entries}),
            "documents": sorted({n for e in entries for n in e["files"]}), "pairs": pairs, "people": rows}


def format_report(result: dict[str, Any]) -> str:
    """Render a calibration report as Markdown tables.

    Args:
        result: What [`report`][pipeline.campaign.calibration.report] returned.

    Returns:
        The Markdown text: a table per person, then a table per pair; F1 as percentages, ``n/a`` for
        ``None``.
    """
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}"

    lines = [f"# Calibration (rounds {', '.join(map(str, result['rounds']))}: {len(result['documents'])} documents)",
             "", "Micro F1 (%), exact spans and strict types, over the documents both finished.", "",
             "| person | assigned | finished | entities F1 vs others (mean) | entities F1 vs reference | "
             "relations F1 vs reference |", "|---|---|---|---|---|---|"]
    for r in result["people"]:
        lines.append(f"| {r['person']} | {r['assigned']} | {r['finished']} | {pct(r['mean_entities_f1_vs_others'])} | "
                     f"{pct(r['entities_f1_vs_reference'])} | {pct(r['relations_f1_vs_reference'])} |")
    lines += ["", "| pair | documents | entities F1 | relations F1 |", "|---|---|---|---|"]
    lines += [f"| {p['a']} / {p['b']} | {p['documents']} | {pct(p['entities_f1'])} | {pct(p['relations_f1'])} |"
              for p in result["pairs"]]
    return "\n".join(lines) + "\n"


def promote(root: Path, document: str, annotators: Sequence[str], senior: str, *, when: str = "") -> None:
    """Add a calibration document to the campaign, reviewed, finalized and released like the others.

    The calibration entry is marked ``"promoted": true`` (the other annotators' copies stay calibration
    copies); ``campaign.json`` gets the document with its two annotators and senior, and the history
    the three assignments (action ``promote``).

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        document: The calibration document.
        annotators: Two distinct annotators of its round, who become its phase-1 annotators.
        senior: An active senior who is neither of them.
        when: The date recorded in the history, ISO 8601; now (UTC) when empty.

    Raises:
        CampaignError: If ``document`` is not a calibration document or is already in the campaign, the
            annotators are not two distinct annotators of it, or the senior is not an active senior or is
            one of them; nothing is written then.
    """
    root = Path(root)
    campaign = copy.deepcopy(read_campaign(root))
    entry = next((e for e in campaign.get("calibration", []) if e["document"] == document), None)
    if entry is None:
        raise CampaignError(f"{document}: not a calibration document")
    if len(set(annotators)) != 2 or not set(annotators) <= set(entry["annotators"]):
        raise CampaignError(f"{document}: give two distinct annotators of it ({', '.join(entry['annotators'])})")
    seniors = {p["id"] for p in asg.active_people(campaign) if p["role"] == "senior"}
    if senior not in seniors or senior in annotators:
        raise CampaignError(f"{document}: refused, it would break the rule 'a senior who annotated none of their "
                            f"documents' ({senior})")
    if any(e["document"] == document for e in campaign["documents"]):
        raise CampaignError(f"{document}: already added to the campaign")
    entry["promoted"] = True  # still a calibration document of the round (its other copies stay apart)
    campaign["documents"].append({"document": document, "files": entry["files"], "phase1": sorted(annotators),
                                  "phase2": senior})
    when = when or asg.now()
    asg.ensure_history(root, read_campaign(root))
    asg.save_campaign(root, campaign)
    asg.record(root, [asg.change("promote", document, ph, p, "assigned", when, "from calibration")
                      for ph, p in [("1", annotators[0]), ("1", annotators[1]), ("2", senior)]])
