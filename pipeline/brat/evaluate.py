"""Score a system's brat output against a gold brat collection (NER, concept indexing, entity linking).

Definitions follow the PharmaCoNER evaluation script (PlanTL-GOB-ES/PharmaCoNER-Evaluation-Script,
``classes.py``), generalised to discontiguous annotations:

* **NER** (PharmaCoNER subtrack 1): per document, the *set* of ``(type,
  fragments)`` of the gold and of the system annotations (duplicates
  collapse, as in the script's ``set((tag, start, end))``); TP = intersection,
  FP = system - gold, FN = gold - system; micro P/R/F1 over all documents.
  Fragments are the sorted half-open character offsets into the document's
  ``.txt``; a contiguous annotation is ``((start, end),)``, so on contiguous
  data the counts equal the script's (which cannot read ``start end;start end``).
* **Concept indexing** (PharmaCoNER subtrack 2): per document, the set of
  concept identifiers; from brat normalization lines (``N1 Reference T1
  DB:ID``; the identifier is ``DB:ID``) or from TSV files (``doc_id<TAB>concept``
  lines; a single file or a directory of ``.tsv`` files, keyed by the first
  column).  Same TP/FP/FN set arithmetic.
* **Mention-level linking** (MedMentions): per document the set of
  ``(fragments, concept)`` pairs, i.e. a system mention is correct when its
  span and one of its concepts match a gold mention; entities without a
  normalization take no part.  **Document-level linking** (MedMentions) is
  the concept-indexing measure over normalization lines.
* P = TP / (TP + FP), R = TP / (TP + FN), F1 = 2PR / (P + R) = 2TP / (2TP +
  FP + FN).  An undefined score is ``None`` (JSON ``null``, ``n/a`` in
  Markdown), not 0.0 as the PharmaCoNER script reports on
  ``ZeroDivisionError``: P when the system has nothing (TP + FP = 0), R when
  the gold has nothing (TP + FN = 0), F1 when there is nothing to score
  (TP + FP + FN = 0); with something on one side only, F1 is 0.0.

Document sets: by default every gold document is scored, and a gold
document missing from the system output counts all its annotations as false
negatives.  ``intersection=True`` reproduces PharmaCoNER, which scores only
the documents present in both.  System documents absent from the gold
standard are never scored (nothing to judge them against); they are listed.

Count keys: ``documents_gold``, ``documents_system``, ``documents_scored``,
``documents_missing_in_system``, ``documents_not_in_gold``, ``parse_issues``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pipeline.brat.agreement import Tally, compare_collections, prf
from pipeline.brat.standoff import BratDocument, ParseIssue, read_directory, read_text
from pipeline.documents import Span
from pipeline.paths import list_files
from pipeline.schema import Schema

log = logging.getLogger(__name__)

Mention = tuple[str, tuple[Span, ...]]


def ner_set(doc: BratDocument) -> set[Mention]:
    """Collect a document's mentions for NER scoring.

    Args:
        doc: The brat document.

    Returns:
        ``{(type, sorted fragments)}`` of its text-bound annotations, fragments half-open offsets into
            the ``.txt``, empty fragments dropped (an annotation left with none is left out); duplicates
            collapse.
    """
    out = set()
    for t in doc.textbounds:
        frags = tuple(sorted((s, e) for s, e in t.fragments if e > s))
        if frags:
            out.add((t.type, frags))
    return out


def concept_set(doc: BratDocument) -> set[str]:
    """Collect a document's concepts for concept indexing.

    Args:
        doc: The brat document.

    Returns:
        ``{DB:ID}`` over its normalization lines.
    """
    return {f"{n.db}:{n.db_id}" for n in doc.normalizations}


def linked_mentions(doc: BratDocument) -> set[tuple[tuple[Span, ...], str, str]]:
    """Collect a document's linked mentions: every normalization of a text-bound (one per concept).

    Args:
        doc: The brat document.

    Returns:
        ``{(fragments, DB:ID, type)}``, fragments sorted, half-open offsets into the ``.txt``, empty
            ones dropped; a normalization of an unknown id or of an annotation without fragments is left
            out.
    """
    spans = {t.id: (tuple(sorted((s, e) for s, e in t.fragments if e > s)), t.type) for t in doc.textbounds}
    return {(spans[n.target][0], f"{n.db}:{n.db_id}", spans[n.target][1]) for n in doc.normalizations
            if n.target in spans and spans[n.target][0]}


def read_concepts_tsv(path: str | Path, issues: list[ParseIssue] | None = None) -> dict[str, set[str]]:
    """Read concepts per document from a ``doc_id<TAB>concept`` TSV file or a directory of ``.tsv`` files.

    In a directory (searched recursively, symbolic links inside it reported and not followed), each
    file's stem is a document even when the file is empty.  Lines without a tab are reported as issues
    (file:line), not fatal.

    Args:
        path: A TSV file, or a directory of them.
        issues: Appended to when given: one issue per malformed line (each also logged at WARNING).

    Returns:
        Document id (the first column) -> its set of concepts (the second column).

    Raises:
        OSError: If a file cannot be read.
        BratTextError: If a file is not UTF-8 (``file:line``).
    """
    p = Path(path)
    files = [p]
    if p.is_dir():
        listing = list_files(p, (".tsv",), recursive=True)  # a link inside it is reported, never followed
        files = listing.files
        for link in listing.symlinks:
            issue = ParseIssue(str(link), 0, "symbolic link inside the directory, not followed")
            log.warning("%s", issue)
            if issues is not None:
                issues.append(issue)
    out: dict[str, set[str]] = {}
    for f in files:
        if p.is_dir():
            out.setdefault(f.stem, set())
        for lineno, line in enumerate(read_text(f).splitlines(), 1):
            if not line.strip():
                continue
            cols = line.rstrip("\r").split("\t")
            if len(cols) < 2 or not cols[0].strip() or not cols[1].strip():
                issue = ParseIssue(str(f), lineno, f"expected doc_id<TAB>concept, got {line!r}")
                log.warning("%s", issue)
                if issues is not None:
                    issues.append(issue)
                continue
            out.setdefault(cols[0].strip(), set()).add(cols[1].strip())
    return out


def _score_sets(
    gold: Mapping[str, Iterable[Any]],
    system: Mapping[str, Iterable[Any]],
    names: Iterable[str],
    type_of: Callable[[str, Any], str] | None = None,
) -> dict[str, Any]:
    """Set-based TP/FP/FN per document, summed (micro).

    ``type_of(document name, item)`` gives an item's type for the per-type table (None: no table).
    """
    tally = Tally()
    for name in names:
        g, s = set(gold.get(name, ())), set(system.get(name, ()))
        for counter, items in ((tally.tp, g & s), (tally.fp, s - g), (tally.fn, g - s)):
            for item in items:
                counter[type_of(name, item) if type_of else "all"] += 1
    out: dict[str, Any] = tally.micro()
    if type_of:
        out["per_type"] = tally.per_type()
    return out


def evaluate_collections(
    gold: Mapping[str, BratDocument],
    system: Mapping[str, BratDocument],
    *,
    intersection: bool = False,
    gold_concepts: Mapping[str, set[str]] | None = None,
    system_concepts: Mapping[str, set[str]] | None = None,
    counts: Counter[str] | None = None,
) -> dict[str, Any]:
    """Score a system's documents against gold documents (see the module docstring).

    Missing and extra documents are logged at WARNING.

    Args:
        gold: The gold documents by name.
        system: The system's documents by name (offsets in the same space as the gold's: the ``.txt``).
        intersection: Score only the documents in both (PharmaCoNER); by default every gold document is
            scored, one missing from the system counting as empty.
        gold_concepts: Gold concepts per document (from TSV, see
            [`read_concepts_tsv`][pipeline.brat.evaluate.read_concepts_tsv]); with ``system_concepts``
            they replace the normalization lines for ``concepts``.
        system_concepts: The system's concepts per document (TSV).
        counts: Updated in place when given: ``documents_gold``, ``documents_system``,
            ``documents_scored``, ``documents_missing_in_system``, ``documents_not_in_gold``.

    Returns:
        ``{"documents": {"scored", "missing_in_system": [...], "not_in_gold": [...], "mode"},
            "ner": {prf..., "per_type": {TYPE: prf}}, "concepts": {prf..., "source"},
            "linking_mention": {prf..., "per_type"}, "linking_document": {prf...}}``, where ``prf`` is
            [`prf`][pipeline.brat.agreement.prf]'s dict.
    """
    counts = counts if counts is not None else Counter()
    missing = sorted(set(gold) - set(system))
    extra = sorted(set(system) - set(gold))
    names = sorted(set(gold) & set(system)) if intersection else sorted(gold)
    counts["documents_gold"] += len(gold)
    counts["documents_system"] += len(system)
    counts["documents_scored"] += len(names)
    counts["documents_missing_in_system"] += len(missing)
    counts["documents_not_in_gold"] += len(extra)
    if missing:
        log.warning(
            "%d gold document(s) missing from the system output: %s", len(missing),
            "scored on the intersection (PharmaCoNER)" if intersection else "counted as false negatives",
        )
    if extra:
        log.warning("%d system document(s) not in the gold standard: not scored", len(extra))

    ner_gold = {n: ner_set(d) for n, d in gold.items()}
    ner_sys = {n: ner_set(d) for n, d in system.items()}
    result: dict[str, Any] = {
        "documents": {
            "mode": "intersection" if intersection else "gold",
            "scored": len(names),
            "missing_in_system": missing,
            "not_in_gold": extra,
        },
        "ner": _score_sets(ner_gold, ner_sys, names, type_of=lambda _, m: m[0]),
    }
    concepts_gold = {n: concept_set(d) for n, d in gold.items()}
    concepts_sys = {n: concept_set(d) for n, d in system.items()}
    result["linking_document"] = _score_sets(concepts_gold, concepts_sys, names)
    if gold_concepts is not None or system_concepts is not None:
        gc, sc = dict(gold_concepts or {}), dict(system_concepts or {})
        c_names = sorted(set(gc) & set(sc)) if intersection else sorted(gc)
        result["concepts"] = {**_score_sets(gc, sc, c_names), "source": "tsv", "documents": len(c_names),
                              "missing_in_system": sorted(set(gc) - set(sc))}
    else:
        result["concepts"] = {**result["linking_document"], "source": "normalizations", "documents": len(names),
                              "missing_in_system": missing}
    # a linked mention is keyed by (fragments, concept); its type (for the per-type table) is the gold
    # mention's for TP/FN and the system mention's for FP
    types: dict[tuple[str, tuple[Span, ...], str], str] = {}

    def linked(docs: Mapping[str, BratDocument]) -> dict[str, set[tuple[tuple[Span, ...], str]]]:
        out: dict[str, set[tuple[tuple[Span, ...], str]]] = {}
        for n, d in docs.items():
            out[n] = set()
            for f, c, t in linked_mentions(d):
                types[(n, f, c)] = t
                out[n].add((f, c))
        return out

    linked_sys = linked(system)
    linked_gold = linked(gold)  # read second, so a shared mention takes its gold type
    result["linking_mention"] = _score_sets(linked_gold, linked_sys, names, type_of=lambda n, x: types[(n, *x)])
    return result


def evaluate(
    gold_dir: str | Path,
    system_dir: str | Path,
    *,
    intersection: bool = False,
    concepts_tsv: tuple[str | Path, str | Path] | None = None,
    counts: Counter[str] | None = None,
    schema: Schema | None = None,
) -> dict[str, Any]:
    """Score a system's brat directory against a gold one.

    Runs [`evaluate_collections`][pipeline.brat.evaluate.evaluate_collections] on the two directories
    (read recursively; an ``.ann`` without ``.txt`` is allowed).  Parse issues are logged at WARNING.

    Args:
        gold_dir: The gold brat directory.
        system_dir: The system's brat directory.
        intersection: Score only the documents in both (PharmaCoNER).
        concepts_tsv: (gold TSV, system TSV), each a file or a directory: the concepts for concept
            indexing, instead of the normalization lines.
        counts: Updated in place when given: ``parse_issues`` and the counts of
            [`evaluate_collections`][pipeline.brat.evaluate.evaluate_collections].
        schema: When given, the entities and relations are also scored in the paper's settings.

    Returns:
        The result of [`evaluate_collections`][pipeline.brat.evaluate.evaluate_collections], plus
            ``"gold"``, ``"system"`` (the directories), ``"parse_issues": ["file:line: message", ...]``,
            and with ``schema`` ``"paper_settings"`` ([`paper_settings`][pipeline.brat.evaluate.paper_settings]).

    Raises:
        FileNotFoundError: If a directory is not a directory.
    """
    counts = counts if counts is not None else Counter()
    gold_docs, issues = read_directory(gold_dir)
    sys_docs, found = read_directory(system_dir)
    issues += found
    gc = sc = None
    if concepts_tsv is not None:
        gc = read_concepts_tsv(concepts_tsv[0], issues)
        sc = read_concepts_tsv(concepts_tsv[1], issues)
    for issue in issues:
        log.warning("%s", issue)
    counts["parse_issues"] += len(issues)
    result = evaluate_collections(
        {d.name: d for d in gold_docs}, {d.name: d for d in sys_docs},
        intersection=intersection, gold_concepts=gc, system_concepts=sc, counts=counts,
    )
    if schema is not None:
        result["paper_settings"] = paper_settings({d.name: d for d in gold_docs}, {d.name: d for d in sys_docs},
                                                  schema, intersection=intersection)
    result["gold"], result["system"] = str(gold_dir), str(system_dir)
    result["parse_issues"] = [str(i) for i in issues]
    return result


def paper_settings(gold: Mapping[str, BratDocument], system: Mapping[str, BratDocument], schema: Schema, *,
                   intersection: bool = False) -> dict[str, Any]:
    """Score entities and relations in the PGxCorpus paper's settings.

    The settings are those of [`pipeline.brat.agreement`][pipeline.brat.agreement]: exact or partial
    spans, strict, hierarchical or any type, directed or not; the relation modality agreement is measured
    on the matched relations.  The documents are those
    [`evaluate_collections`][pipeline.brat.evaluate.evaluate_collections] scores: every gold document (one
    missing from the system is empty there) or, with ``intersection``, both.

    Args:
        gold: The gold documents by name (the reference).
        system: The system's documents by name.
        schema: The corpus schema (type hierarchy).
        intersection: Score only the documents in both.

    Returns:
        ``{"entities": {setting: micro prf}, "relations": {setting: micro prf}, "relation_modality":
            {...}}`` ([`modality_report`][pipeline.brat.agreement.modality_report]).
    """
    names = sorted(set(gold) & set(system)) if intersection else sorted(gold)
    system_docs = {n: system[n] if n in system else BratDocument(n, gold[n].text) for n in names}
    report = compare_collections({n: gold[n] for n in names}, system_docs, schema, ref_label="gold",
                                 pred_label="system")
    return {"entities": {k: v["micro"] for k, v in report["entities"].items()},
            "relations": {k: v["micro"] for k, v in report["relations"].items()},
            "relation_modality": report["relation_modality"]}


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _row(name: str, m: Mapping[str, Any]) -> str:
    return (f"| {name} | {m['tp']} | {m['fp']} | {m['fn']} | {_score(m['precision'])} | {_score(m['recall'])} "
            f"| {_score(m['f1'])} |")


def format_report(result: Mapping[str, Any]) -> str:
    """Render an evaluation result as Markdown tables.

    Args:
        result: A result of [`evaluate`][pipeline.brat.evaluate.evaluate] (or
            [`evaluate_collections`][pipeline.brat.evaluate.evaluate_collections]).

    Returns:
        The documents scored, then tables (scores to 4 decimals, ``n/a`` when undefined): NER per type
            and total, concept indexing, mention- and document-level linking, the paper's settings when
            present; then the parse issues.
    """
    docs = result["documents"]
    head = ["| | TP | FP | FN | P | R | F1 |", "|---|---|---|---|---|---|---|"]
    lines = [
        f"Documents scored: {docs['scored']} ({docs['mode']}); missing in system: {len(docs['missing_in_system'])}; "
        f"not in gold: {len(docs['not_in_gold'])}",
        "",
        "## NER (exact type and offsets)",
        "",
        *head,
    ]
    lines += [_row(t, m) for t, m in result["ner"]["per_type"].items()]
    lines += [_row("**Total (micro)**", result["ner"]), ""]
    lines += [f"## Concept indexing (document level, from {result['concepts']['source']})", "", *head,
              _row("Total", result["concepts"]), ""]
    lines += ["## Linking (MedMentions)", "", *head, _row("mention level", result["linking_mention"]),
              _row("document level", result["linking_document"]), ""]
    paper = result.get("paper_settings")
    if paper:
        lines += ["## Entities and relations in the paper's settings (micro)", "", *head]
        lines += [_row(f"entities {k}", m) for k, m in paper["entities"].items()]
        lines += [_row(f"relations {k}", m) for k, m in paper["relations"].items()]
        mod = paper["relation_modality"]
        lines += ["", f"Relation modality: {mod['same_modality']} of {mod['matched']} relations matched "
                  f"({mod['setting']}) have the gold modality.", ""]
    for issue in result.get("parse_issues", []):
        lines.append(f"- parse issue: {issue}")
    return "\n".join(lines).rstrip() + "\n"


__all__ = ["concept_set", "evaluate", "evaluate_collections", "format_report", "linked_mentions", "ner_set",
           "paper_settings", "prf", "read_concepts_tsv"]
