"""Entity and relation agreement between brat collections, and pre-annotation scoring.

Inputs are annotations in one offset space per document (brat: offsets into
the document's ``.txt``, half-open; fragments of discontiguous entities are
compared as sorted fragment tuples).  One collection is the *reference*, the
other the *prediction*; F1 is symmetric, precision and recall swap when the
roles swap.

Span settings
  ``exact``   all fragments equal (same number, same offsets).
  ``partial`` the fragment sets share at least one character.  Pairs are made
              one-to-one by a maximum bipartite matching (Hopcroft-Karp,
              :mod:`pipeline.brat.matching`), so one long span overlapping two
              short ones scores one true positive, and a greedy choice can
              never cost a match.

Type settings
  ``strict``    types equal ("same type").
  ``any``       types ignored ("any type", Table 10 of the PGxCorpus paper).
  ``hierarchy`` every annotation also counts for all its ancestors in the
                schema hierarchy: it is expanded to one copy per type in
                ``[type] + ancestors(type)`` and the copies are matched per type.
                Reference Pharmacodynamic_phenotype vs predicted
                Pharmacokinetic_phenotype on the same span: Phenotype is a
                true positive (shared ancestor), Pharmacokinetic_phenotype a
                false positive, Pharmacodynamic_phenotype a false negative.
                Reference Phenotype vs predicted Pharmacodynamic_phenotype:
                Phenotype TP, Pharmacodynamic_phenotype FP (too specific).
                Reference Pharmacodynamic_phenotype vs predicted Phenotype:
                Phenotype TP, Pharmacodynamic_phenotype FN (missed specific type).

Per-type counting
  ``strict`` and ``hierarchy``: per (expanded) type, TP/FP/FN of that type.
  ``any``: a TP and an FN go to the reference annotation's type, an FP to the
  predicted annotation's type.  The micro total is the sum over all types; the
  macro average is the mean of per-type precision, recall and F1 over the
  types present on either side (in ``hierarchy`` the ancestor types count as
  types of their own).

Relations match when their types match under the type setting (relation
hierarchy for ``hierarchy``) and their arguments' entities match under the
span setting, entity types compared as for entities (``hierarchy``: the two
types share an ancestor-or-self); ``directed`` compares Arg1 with Arg1 and
Arg2 with Arg2, ``undirected`` also accepts the swapped pairing.  Relations
are paired one-to-one by maximum matching too.

Collections with different document sets are scored on their intersection;
the names present in only one collection are reported (see
:class:`CollectionPair`).  Undefined scores are ``None`` (JSON ``null``,
``n/a`` in Markdown), never 0.0: precision when nothing was predicted
(TP + FP = 0), recall when there is nothing to find (TP + FN = 0), F1 when
there is nothing to score at all (TP + FP + FN = 0); otherwise F1 =
2TP / (2TP + FP + FN) (0.0 when TP = 0).  Macro averages are means over the
types whose value is defined (``None`` when none is); the mean F1 over pairs
likewise.

Count keys (``counts``): ``documents_common``, ``documents_only_<label>``,
``parse_issues``, ``types_mapped``, ``types_dropped``.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pipeline.brat.matching import max_bipartite_matching, spans_overlap
from pipeline.brat.modality import MODALITIES, join_notes, modality_label
from pipeline.brat.provenance import entity_provenance, read_provenance
from pipeline.brat.standoff import BratDocument, ParseIssue, read_directory
from pipeline.documents import Annotation, Span
from pipeline.schema import Schema

log = logging.getLogger(__name__)

SPAN_SETTINGS = ("exact", "partial")
TYPE_SETTINGS = ("strict", "hierarchy", "any")
DIRECTION_SETTINGS = ("directed", "undirected")
#: Table 10 of the PGxCorpus paper: name -> (span setting, same type?)
TABLE10_SETTINGS: dict[str, tuple[str, bool]] = {
    "exact_same": ("exact", True),
    "exact_any": ("exact", False),
    "partial_same": ("partial", True),
    "partial_any": ("partial", False),
}


# --- scores ----------------------------------------------------------------

def prf(tp: int, fp: int, fn: int) -> dict[str, Any]:
    """``{"tp","fp","fn","precision","recall","f1"}``; an undefined ratio is None (see the module docstring).

    F1 = 2TP / (2TP + FP + FN) equals 2PR / (P + R) whenever P and R are defined and non-zero, and stays
    defined (0.0) when only one side is empty: a system that finds nothing of a non-empty gold scores 0.
    """
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {"tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall, "f1": f1}


def mean_defined(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not None; None when there are none."""
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


@dataclass
class Tally:
    """TP/FP/FN per type, summed over documents (micro)."""

    tp: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        self.tp.update(other.tp)
        self.fp.update(other.fp)
        self.fn.update(other.fn)

    def types(self) -> list[str]:
        return sorted(set(self.tp) | set(self.fp) | set(self.fn))

    def micro(self) -> dict[str, Any]:
        return prf(sum(self.tp.values()), sum(self.fp.values()), sum(self.fn.values()))

    def per_type(self) -> dict[str, dict[str, Any]]:
        return {t: prf(self.tp[t], self.fp[t], self.fn[t]) for t in self.types()}

    def macro(self) -> dict[str, float | None]:
        per = self.per_type()
        return {k: mean_defined(v[k] for v in per.values()) for k in ("precision", "recall", "f1")}

    def report(self) -> dict[str, Any]:
        return {"micro": self.micro(), "macro": self.macro(), "per_type": self.per_type()}


# --- entity matching ---------------------------------------------------------

def _key(a: Annotation) -> tuple[Span, ...]:
    return tuple(sorted(a.fragments))


def _preference(ref: Annotation, predicted: Sequence[Annotation], j: int) -> tuple[bool, bool]:
    """Sort key of a candidate: same fragments first, then same type."""
    return (_key(predicted[j]) != _key(ref), predicted[j].type != ref.type)


def match_entities(
    reference: Sequence[Annotation],
    predicted: Sequence[Annotation],
    *,
    span: str,
    compatible: Callable[[Annotation, Annotation], bool] | None = None,
) -> dict[int, int]:
    """One-to-one pairs ``{reference index: predicted index}`` (maximum matching).

    ``span`` is ``exact`` or ``partial``; ``compatible(ref, pred)`` is the type
    condition (None: any type).  Candidates are ordered exact-and-same-type
    first, so among maximum matchings the natural pairs are preferred.
    """
    if span not in SPAN_SETTINGS:
        raise ValueError(f"unknown span setting {span!r}")
    adjacency: dict[int, list[int]] = {}
    if span == "exact":
        by_key: dict[tuple[Span, ...], list[int]] = {}
        for j, p in enumerate(predicted):
            by_key.setdefault(_key(p), []).append(j)
        for i, r in enumerate(reference):
            cands = [j for j in by_key.get(_key(r), ()) if compatible is None or compatible(r, predicted[j])]
            if cands:
                adjacency[i] = sorted(cands, key=functools.partial(_preference, r, predicted))
    else:
        # Sort predictions by start so each reference only scans candidates that can overlap.
        order = sorted(range(len(predicted)), key=lambda j: predicted[j].start)
        for i, r in enumerate(reference):
            cands = []
            for j in order:
                p = predicted[j]
                if p.start >= r.end:
                    break
                if p.end <= r.start or not spans_overlap(r.fragments, p.fragments):
                    continue
                if compatible is None or compatible(r, p):
                    cands.append(j)
            if cands:
                adjacency[i] = sorted(cands, key=functools.partial(_preference, r, predicted))
    return max_bipartite_matching(list(range(len(reference))), adjacency)


def _same_type(a: Annotation, b: Annotation) -> bool:
    return a.type == b.type


class _Typed(Protocol):
    @property
    def type(self) -> str: ...


def _tally_pairs(reference: Sequence[_Typed], predicted: Sequence[_Typed], matching: Mapping[int, int]) -> Tally:
    """TP/FN to the reference item's type, FP to the predicted item's type (entities or relations)."""
    tally = Tally()
    for i, r in enumerate(reference):
        (tally.tp if i in matching else tally.fn)[r.type] += 1
    used = set(matching.values())
    for j, p in enumerate(predicted):
        if j not in used:
            tally.fp[p.type] += 1
    return tally


def expand_hierarchy(annotations: Iterable[Annotation], schema: Schema) -> list[Annotation]:
    """One copy of each annotation per type in ``[type] + schema.ancestors(type)``."""
    out = []
    for a in annotations:
        for t in schema.ancestors(a.type, include_self=True):
            out.append(a if t == a.type else Annotation(a.fragments, t, a.source, a.identifier, a.text))
    return out


def entity_tally(
    reference: Sequence[Annotation],
    predicted: Sequence[Annotation],
    *,
    span: str,
    types: str,
    schema: Schema | None = None,
) -> Tally:
    """TP/FP/FN per type for one document under a span and a type setting (see the module docstring)."""
    if types == "hierarchy":
        if schema is None:
            raise ValueError("the hierarchy setting needs a schema")
        reference, predicted = expand_hierarchy(reference, schema), expand_hierarchy(predicted, schema)
        types = "strict"
    if types == "strict":
        matching = match_entities(reference, predicted, span=span, compatible=_same_type)
        return _tally_pairs(reference, predicted, matching)
    if types == "any":
        return _tally_pairs(reference, predicted, match_entities(reference, predicted, span=span))
    raise ValueError(f"unknown type setting {types!r}")


def table10_scores(pairs: Iterable[tuple[Sequence[Annotation], Sequence[Annotation]]]) -> dict[str, Any]:
    """Pre-annotation vs final annotation in the four settings of Table 10 (PGxCorpus paper).

    Each pair is ``(reference annotations, predicted annotations)`` of one
    document, both in the same offset space and both already in the schema's
    types (map pre-annotation types first).  Returns micro-averaged scores
    over all documents::

        {"exact_same": {"tp","fp","fn","precision","recall","f1"}, "exact_any": ...,
         "partial_same": ..., "partial_any": ..., "per_type": {setting: {type: {...}}}}

    exact = all fragments equal; partial = some character overlap, one-to-one
    by maximum bipartite matching; same = types equal; any = types ignored
    (per type: TP and FN under the reference type, FP under the predicted one).
    """
    tallies = {name: Tally() for name in TABLE10_SETTINGS}
    for reference, predicted in pairs:
        for name, (span, same) in TABLE10_SETTINGS.items():
            tallies[name].add(entity_tally(reference, predicted, span=span, types="strict" if same else "any"))
    out: dict[str, Any] = {name: t.micro() for name, t in tallies.items()}
    out["per_type"] = {name: t.per_type() for name, t in tallies.items()}
    return out


# --- relations -------------------------------------------------------------

@dataclass(frozen=True)
class RelationMention:
    """A binary relation between two entities of the same document."""

    type: str
    arg1: Annotation
    arg2: Annotation
    modality: str = field(default="none", compare=False)  # modality_label; never part of a match


def _entity_match(span: str, types: str, schema: Schema | None) -> Callable[[Annotation, Annotation], bool]:
    def spans(a: Annotation, b: Annotation) -> bool:
        if span == "exact":
            return _key(a) == _key(b)
        return spans_overlap(a.fragments, b.fragments)

    if types == "strict":
        return lambda a, b: a.type == b.type and spans(a, b)
    if types == "any":
        return spans
    if types == "hierarchy":
        assert schema is not None

        def shared(a: Annotation, b: Annotation) -> bool:
            return bool(set(schema.ancestors(a.type, True)) & set(schema.ancestors(b.type, True))) and spans(a, b)

        return shared
    raise ValueError(f"unknown type setting {types!r}")


def relation_tally(
    reference: Sequence[RelationMention],
    predicted: Sequence[RelationMention],
    *,
    span: str,
    types: str,
    directed: bool,
    schema: Schema | None = None,
) -> Tally:
    """TP/FP/FN per relation type for one document (see the module docstring)."""
    if span not in SPAN_SETTINGS:
        raise ValueError(f"unknown span setting {span!r}")
    entity_ok = _entity_match(span, types, schema)

    def args_ok(r: RelationMention, p: RelationMention) -> bool:
        if entity_ok(r.arg1, p.arg1) and entity_ok(r.arg2, p.arg2):
            return True
        return not directed and entity_ok(r.arg1, p.arg2) and entity_ok(r.arg2, p.arg1)

    if types == "hierarchy":
        if schema is None:
            raise ValueError("the hierarchy setting needs a schema")
        reference = [RelationMention(t, r.arg1, r.arg2) for r in reference for t in schema.ancestors(r.type, True)]
        predicted = [RelationMention(t, p.arg1, p.arg2) for p in predicted for t in schema.ancestors(p.type, True)]
    same_type = types != "any"
    adjacency: dict[int, list[int]] = {}
    for i, r in enumerate(reference):
        cands = [j for j, p in enumerate(predicted) if (not same_type or p.type == r.type) and args_ok(r, p)]
        if cands:
            adjacency[i] = cands
    return _tally_pairs(reference, predicted, max_bipartite_matching(list(range(len(reference))), adjacency))


#: The setting in which modality agreement is measured: relations matched exactly, same type, same direction.
MODALITY_SETTING = "exact_strict_directed"


def modality_tally(reference: Sequence[RelationMention], predicted: Sequence[RelationMention]) -> Counter[str]:
    """Modality agreement on the relations matched in :data:`MODALITY_SETTING` (one document).

    Returns counts ``matched``, ``same_modality`` and ``REF_LABEL -> PRED_LABEL`` for each matched pair
    (labels from :func:`pipeline.brat.modality.modality_label`, ``none`` for a plain relation).  Modality is
    never part of the relation match itself, so this is its own figure.
    """
    entity_ok = _entity_match("exact", "strict", None)
    adjacency: dict[int, list[int]] = {}
    for i, r in enumerate(reference):
        cands = [j for j, p in enumerate(predicted)
                 if p.type == r.type and entity_ok(r.arg1, p.arg1) and entity_ok(r.arg2, p.arg2)]
        if cands:
            adjacency[i] = cands
    out: Counter[str] = Counter()
    for i, j in max_bipartite_matching(list(range(len(reference))), adjacency).items():
        out["matched"] += 1
        out["same_modality"] += reference[i].modality == predicted[j].modality
        out[f"{reference[i].modality} -> {predicted[j].modality}"] += 1
    return out


def modality_report(tally: Mapping[str, int]) -> dict[str, Any]:
    """``{"setting", "matched", "same_modality", "agreement" (None when nothing matched), "pairs": {...}}``."""
    matched = tally.get("matched", 0)
    same = tally.get("same_modality", 0)
    return {"setting": MODALITY_SETTING, "matched": matched, "same_modality": same,
            "agreement": same / matched if matched else None,
            "pairs": {k: v for k, v in sorted(tally.items()) if " -> " in k}}


def relation_modality_label(doc: BratDocument, relation_id: str) -> str:
    """The relation's modality: binary brat attributes named after a modality and the leading modality tokens
    of its AnnotatorNotes (:mod:`pipeline.brat.modality`)."""
    found = {a.type for a in doc.attributes if a.target == relation_id and a.type in MODALITIES}
    found |= join_notes(doc.notes_for(relation_id)).modality
    return modality_label(found)


# --- collections -------------------------------------------------------------

@dataclass
class CollectionPair:
    """Two collections aligned by document name (intersection) and what only one of them has."""

    reference: str
    predicted: str
    common: list[str]
    only_reference: list[str]
    only_predicted: list[str]
    text_mismatch: list[str]


def brat_entities(
    doc: BratDocument,
    *,
    schema: Schema | None = None,
    source: str | None = None,
    counts: Counter[str] | None = None,
) -> dict[str, Annotation]:
    """Text-bound annotations of ``doc`` by id (offsets into ``doc.text``).

    With ``schema`` and ``source``, types are mapped with
    ``schema.map_type(source, type)`` (schema types map to themselves, types
    mapped to null are dropped, unknown types are kept unchanged).
    """
    out: dict[str, Annotation] = {}
    for t in doc.textbounds:
        frags = tuple(sorted((s, e) for s, e in t.fragments if e > s))
        if not frags:
            continue
        type_: str | None = t.type
        if schema is not None and source is not None and t.type not in schema.entity_parent:
            try:
                type_ = schema.map_type(source, t.type)
            except KeyError:
                type_ = t.type
            if counts is not None:
                counts["types_mapped" if type_ is not None else "types_dropped"] += 1
        if type_ is None:
            continue
        out[t.id] = Annotation(frags, type_, "gold", None, t.text, None if type_ == t.type else t.type)
    return out


def brat_relations(doc: BratDocument, entities: Mapping[str, Annotation]) -> list[RelationMention]:
    """Binary relations of ``doc`` whose two arguments are known entities (Arg1/Arg2, else file order)."""
    out = []
    for r in doc.relations:
        a1 = r.arg("Arg1") or (r.args[0][1] if r.args else None)
        a2 = r.arg("Arg2") or (r.args[1][1] if len(r.args) > 1 else None)
        if a1 is not None and a2 is not None and a1 in entities and a2 in entities:
            out.append(RelationMention(r.type, entities[a1], entities[a2], relation_modality_label(doc, r.id)))
        else:
            log.warning("%s:%d: relation %s refers to an unknown entity", doc.path or doc.name, r.line, r.id)
    return out


def load_collection(directory: str | Path) -> tuple[dict[str, BratDocument], list[ParseIssue]]:
    """Documents of a brat directory by name (``.ann`` without ``.txt`` allowed); bad lines as issues."""
    docs, issues = read_directory(directory)
    for issue in issues:
        log.warning("%s", issue)
    return {d.name: d for d in docs}, issues


def align(
    reference: Mapping[str, BratDocument], predicted: Mapping[str, BratDocument], ref_label: str, pred_label: str
) -> CollectionPair:
    """Pair documents by name; names in only one collection are reported and left out of scoring.

    A document whose two texts differ (both non-empty) is still scored but
    listed in ``text_mismatch``, as its offsets may not be comparable.
    """
    common = sorted(set(reference) & set(predicted))
    only_r = sorted(set(reference) - set(predicted))
    only_p = sorted(set(predicted) - set(reference))
    mismatch = [n for n in common if reference[n].text and predicted[n].text and reference[n].text != predicted[n].text]
    if only_r or only_p:
        log.warning(
            "%s vs %s: %d document(s) only in the first, %d only in the second; scoring the %d in both",
            ref_label, pred_label, len(only_r), len(only_p), len(common),
        )
    for name in mismatch:
        log.warning("%s: text differs between %s and %s", name, ref_label, pred_label)
    return CollectionPair(ref_label, pred_label, common, only_r, only_p, mismatch)


def _setting_name(*parts: str) -> str:
    return "_".join(parts)


def compare_collections(
    reference: Mapping[str, BratDocument],
    predicted: Mapping[str, BratDocument],
    schema: Schema,
    *,
    ref_label: str = "A",
    pred_label: str = "B",
    pred_source: str | None = None,
    counts: Counter[str] | None = None,
) -> dict[str, Any]:
    """Entity and relation agreement of two collections in every setting.

    Returns ``{"reference", "predicted", "documents": {...}, "entities": {SPAN_TYPES: report},
    "relations": {SPAN_TYPES_DIRECTION: report}}`` where a report is
    ``{"micro": prf, "macro": {...}, "per_type": {type: prf}}``, and ``"relation_modality"``: modality
    agreement on the relations matched exactly (:func:`modality_report`), a figure of its own.
    ``pred_source`` maps the predicted collection's types (see :func:`brat_entities`).
    """
    counts = counts if counts is not None else Counter()
    pair = align(reference, predicted, ref_label, pred_label)
    counts["documents_common"] += len(pair.common)
    ent = {_setting_name(s, t): Tally() for s in SPAN_SETTINGS for t in TYPE_SETTINGS}
    rel = {_setting_name(s, t, d): Tally() for s in SPAN_SETTINGS for t in TYPE_SETTINGS for d in DIRECTION_SETTINGS}
    modality: Counter[str] = Counter()
    for name in pair.common:
        ents_r = brat_entities(reference[name])
        ents_p = brat_entities(predicted[name], schema=schema, source=pred_source, counts=counts)
        rels_r = brat_relations(reference[name], ents_r)
        rels_p = brat_relations(predicted[name], ents_p)
        list_r, list_p = list(ents_r.values()), list(ents_p.values())
        modality.update(modality_tally(rels_r, rels_p))
        for s in SPAN_SETTINGS:
            for t in TYPE_SETTINGS:
                ent[_setting_name(s, t)].add(entity_tally(list_r, list_p, span=s, types=t, schema=schema))
                for d in DIRECTION_SETTINGS:
                    rel[_setting_name(s, t, d)].add(
                        relation_tally(rels_r, rels_p, span=s, types=t, directed=d == "directed", schema=schema)
                    )
    return {
        "reference": ref_label,
        "predicted": pred_label,
        "documents": {
            "common": len(pair.common),
            "only_reference": pair.only_reference,
            "only_predicted": pair.only_predicted,
            "text_mismatch": pair.text_mismatch,
        },
        "entities": {k: v.report() for k, v in ent.items()},
        "relations": {k: v.report() for k, v in rel.items()},
        "relation_modality": modality_report(modality),
    }


def agreement(
    directories: Sequence[str | Path], schema: Schema, counts: Counter[str] | None = None
) -> dict[str, Any]:
    """Pairwise agreement over all pairs of annotator directories (first of a pair = reference).

    Returns ``{"directories": [...], "parse_issues": [str], "pairs": [compare_collections(...)],
    "mean_f1": {"entities": {setting: mean micro F1 over pairs}, "relations": {...}}}``.
    """
    if len(directories) < 2:
        raise ValueError("agreement needs at least two directories")
    counts = counts if counts is not None else Counter()
    labels = [str(d) for d in directories]
    collections = []
    issues: list[ParseIssue] = []
    for d in directories:
        docs, found = load_collection(d)
        collections.append(docs)
        issues.extend(found)
    counts["parse_issues"] += len(issues)
    pairs = [
        compare_collections(collections[i], collections[j], schema, ref_label=labels[i], pred_label=labels[j],
                            counts=counts)
        for i, j in itertools.combinations(range(len(directories)), 2)
    ]
    mean: dict[str, dict[str, float | None]] = {}
    for kind in ("entities", "relations"):
        mean[kind] = {k: mean_defined(p[kind][k]["micro"]["f1"] for p in pairs) for k in pairs[0][kind]}
    return {"directories": labels, "parse_issues": [str(i) for i in issues], "pairs": pairs, "mean_f1": mean}


def preannotation_scores(
    preannotation: str | Path,
    final: Sequence[str | Path],
    schema: Schema,
    *,
    source: str = "pubtator",
    counts: Counter[str] | None = None,
) -> dict[str, Any]:
    """Pre-annotation (first directory) against each final annotation directory, Table 10 settings.

    Pre-annotation types are mapped with the schema mapping of ``source``
    (PubTator: Gene -> Gene_or_protein, Mutation -> Limited_variation, ...).
    Returns ``{"preannotation", "parse_issues", "results": [{"final", "documents": {...},
    "scores": table10_scores(...), "relations": {SPAN_TYPES_DIRECTION: micro prf}}]}`` (``relations``
    empty when the pre-annotation has no relation, as before relations were pre-annotated).  When the
    pre-annotation collection has a ``provenance.jsonl`` (:mod:`pipeline.brat.provenance`), each result also has
    ``"by_source": {SOURCE: table10_scores(...)}``: the same scores with only the pre-annotated
    entities of that source (``pubtator``, ``local``, ``ontology`` = composites) as predictions,
    against all final entities (so precision is the source's, recall its share of the final annotation).
    """
    counts = counts if counts is not None else Counter()
    pre_docs, issues = load_collection(preannotation)
    provenance = read_provenance(preannotation)
    results = []
    for directory in final:
        fin_docs, found = load_collection(directory)
        issues.extend(found)
        pair = align(fin_docs, pre_docs, str(directory), str(preannotation))
        counts["documents_common"] += len(pair.common)
        final_ents = {n: list(brat_entities(fin_docs[n]).values()) for n in pair.common}
        pre_ents = {n: brat_entities(pre_docs[n], schema=schema, source=source, counts=counts) for n in pair.common}
        pairs = [(final_ents[n], list(pre_ents[n].values())) for n in pair.common]
        # pre-annotated relations against the final ones, in the relation settings of the agreement
        # (the paper's Table 9), so the saving can be read next to human agreement
        rel = {_setting_name(sp, t, d): Tally() for sp in SPAN_SETTINGS for t in TYPE_SETTINGS
               for d in DIRECTION_SETTINGS}
        pre_relations = 0
        for n in pair.common:
            fin_rels = brat_relations(fin_docs[n], brat_entities(fin_docs[n]))
            pre_rels = brat_relations(pre_docs[n], pre_ents[n])
            pre_relations += len(pre_rels)
            for sp in SPAN_SETTINGS:
                for t in TYPE_SETTINGS:
                    for d in DIRECTION_SETTINGS:
                        rel[_setting_name(sp, t, d)].add(relation_tally(
                            fin_rels, pre_rels, span=sp, types=t, directed=d == "directed", schema=schema))
        by_source: dict[str, Any] = {}
        if provenance is not None:
            origin: dict[str, dict[str, list[str]]] = {
                n: {tid: list(row.get("sources", ())) for tid, (status, row) in
                    entity_provenance(pre_docs[n], provenance).items() if status == "preannotated" and row}
                for n in pair.common
            }
            for src in sorted({s for per_doc in origin.values() for ss in per_doc.values() for s in ss}):
                by_source[src] = table10_scores(
                    (final_ents[n], [a for tid, a in pre_ents[n].items() if src in origin[n].get(tid, ())])
                    for n in pair.common
                )
        results.append(
            {
                "final": str(directory),
                "documents": {
                    "common": len(pair.common),
                    "only_final": pair.only_reference,
                    "only_preannotation": pair.only_predicted,
                    "text_mismatch": pair.text_mismatch,
                },
                "scores": table10_scores(pairs),
                "relations": {k: v.micro() for k, v in rel.items()} if pre_relations else {},
                **({"by_source": by_source} if provenance is not None else {}),
            }
        )
    counts["parse_issues"] += len(issues)
    return {"preannotation": str(preannotation), "parse_issues": [str(i) for i in issues], "results": results}


# --- text rendering ----------------------------------------------------------

def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def format_agreement(result: Mapping[str, Any]) -> str:
    """Markdown tables of :func:`agreement`'s result (F1 in %, per pair; per type for each pair)."""
    lines = []
    for p in result["pairs"]:
        docs = p["documents"]
        lines.append(f"## {p['reference']} vs {p['predicted']} ({docs['common']} documents in both)")
        if docs["only_reference"] or docs["only_predicted"]:
            lines.append(
                f"Not scored: {len(docs['only_reference'])} only in {p['reference']}, "
                f"{len(docs['only_predicted'])} only in {p['predicted']}"
            )
        for kind in ("entities", "relations"):
            lines += ["", f"### {kind}", "", "| setting | TP | FP | FN | P | R | F1 | macro F1 |",
                      "|---|---|---|---|---|---|---|---|"]
            for setting, rep in p[kind].items():
                m = rep["micro"]
                lines.append(
                    f"| {setting} | {m['tp']} | {m['fp']} | {m['fn']} | {_pct(m['precision'])} | {_pct(m['recall'])} "
                    f"| {_pct(m['f1'])} | {_pct(rep['macro']['f1'])} |"
                )
        for kind, setting in (("entities", "exact_strict"), ("entities", "partial_hierarchy"),
                              ("relations", "partial_strict_directed")):
            lines += ["", f"### {kind} per type ({setting})", "", "| type | TP | FP | FN | P | R | F1 |",
                      "|---|---|---|---|---|---|---|"]
            for t, m in p[kind][setting]["per_type"].items():
                lines.append(
                    f"| {t} | {m['tp']} | {m['fp']} | {m['fn']} | {_pct(m['precision'])} | {_pct(m['recall'])} "
                    f"| {_pct(m['f1'])} |"
                )
        mod = p.get("relation_modality")
        if mod:
            lines += ["", f"### relation modality on matched relations ({mod['setting']})", "",
                      f"{mod['same_modality']} of {mod['matched']} matched relations have the same modality "
                      f"({_pct(mod['agreement'])}%)" + ("; " + ", ".join(f"{k} {v}" for k, v in mod["pairs"].items())
                                                         if mod["pairs"] else "") + "."]
        lines.append("")
    if len(result["pairs"]) > 1:
        lines += ["## mean F1 over pairs", "", "| kind | setting | F1 |", "|---|---|---|"]
        for kind, settings in result["mean_f1"].items():
            for setting, f1 in settings.items():
                lines.append(f"| {kind} | {setting} | {_pct(f1)} |")
    return "\n".join(lines) + "\n"


def format_table10(result: Mapping[str, Any]) -> str:
    """Markdown table of :func:`preannotation_scores`'s result."""
    lines = []
    for r in result["results"]:
        lines += [
            f"## pre-annotation {result['preannotation']} vs {r['final']} ({r['documents']['common']} documents)",
            "",
            "| setting | TP | FP | FN | P | R | F1 |",
            "|---|---|---|---|---|---|---|",
        ]
        for name in TABLE10_SETTINGS:
            m = r["scores"][name]
            lines.append(
                f"| {name} | {m['tp']} | {m['fp']} | {m['fn']} | {_pct(m['precision'])} | {_pct(m['recall'])} "
                f"| {_pct(m['f1'])} |"
            )
        lines.append("")
        if r.get("relations"):
            lines += ["### relations (pre-annotated relations against the final ones)", "",
                      "| setting | TP | FP | FN | P | R | F1 |", "|---|---|---|---|---|---|---|"]
            for name, m in r["relations"].items():
                lines.append(
                    f"| {name} | {m['tp']} | {m['fp']} | {m['fn']} | {_pct(m['precision'])} | {_pct(m['recall'])} "
                    f"| {_pct(m['f1'])} |"
                )
            lines.append("")
        if r.get("by_source"):
            lines += ["### by pre-annotation source (provenance.jsonl)", "",
                      "| source | setting | TP | FP | FN | P | R | F1 |", "|---|---|---|---|---|---|---|---|"]
            for src, scores in r["by_source"].items():
                for name in TABLE10_SETTINGS:
                    m = scores[name]
                    lines.append(
                        f"| {src} | {name} | {m['tp']} | {m['fp']} | {m['fn']} | {_pct(m['precision'])} "
                        f"| {_pct(m['recall'])} | {_pct(m['f1'])} |"
                    )
            lines.append("")
    return "\n".join(lines)
