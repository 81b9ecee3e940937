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
              [`pipeline.brat.matching`][pipeline.brat.matching]), so one long span overlapping two
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
[`CollectionPair`][pipeline.brat.agreement.CollectionPair]).  Undefined scores are ``None`` (JSON ``null``,
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
    """Compute precision, recall and F1 from counts; an undefined ratio is None (see the module docstring).

    F1 = 2TP / (2TP + FP + FN) equals 2PR / (P + R) whenever P and R are defined and non-zero, and stays
    defined (0.0) when only one side is empty: a system that finds nothing of a non-empty gold scores 0.

    Args:
        tp: True positives.
        fp: False positives.
        fn: False negatives.

    Returns:
        ``{"tp", "fp", "fn", "precision", "recall", "f1"}``, the ratios as fractions (0 to 1) or None.
    """
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {"tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall, "f1": f1}


def mean_defined(values: Iterable[float | None]) -> float | None:
    """Average the values that are defined.

    Args:
        values: Scores, None where undefined.

    Returns:
        The mean of the values that are not None; None when there are none.
    """
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


@dataclass
class Tally:
    """TP/FP/FN per type, summed over documents (micro).

    Attributes:
        tp: True positives by type.
        fp: False positives by type.
        fn: False negatives by type.
    """

    tp: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        """Add another tally's counts to this one, in place.

        Args:
            other: The tally added (e.g. that of one more document).
        """
        self.tp.update(other.tp)
        self.fp.update(other.fp)
        self.fn.update(other.fn)

    def types(self) -> list[str]:
        """List the types counted.

        Returns:
            The types with a TP, FP or FN, sorted.
        """
        return sorted(set(self.tp) | set(self.fp) | set(self.fn))

    def micro(self) -> dict[str, Any]:
        """Score all types together.

        Returns:
            [`prf`][pipeline.brat.agreement.prf] of the counts summed over types.
        """
        return prf(sum(self.tp.values()), sum(self.fp.values()), sum(self.fn.values()))

    def per_type(self) -> dict[str, dict[str, Any]]:
        """Score each type.

        Returns:
            Type -> [`prf`][pipeline.brat.agreement.prf] of its counts, types sorted.
        """
        return {t: prf(self.tp[t], self.fp[t], self.fn[t]) for t in self.types()}

    def macro(self) -> dict[str, float | None]:
        """Average the per-type scores.

        Returns:
            ``{"precision", "recall", "f1"}``: each the mean over the types where it is defined
                (None when it is defined for none).
        """
        per = self.per_type()
        return {k: mean_defined(v[k] for v in per.values()) for k in ("precision", "recall", "f1")}

    def report(self) -> dict[str, Any]:
        """Report every score of the tally.

        Returns:
            ``{"micro": prf, "macro": {...}, "per_type": {type: prf}}``.
        """
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
    """Pair the entities of one document one-to-one (maximum matching).

    Candidates are ordered exact-and-same-type first, so among maximum matchings the natural pairs
    are preferred.

    Args:
        reference: The reference entities, fragments half-open in the document's offset space (the
            ``.txt``).
        predicted: The predicted entities, in the same offset space.
        span: ``exact`` (all fragments equal) or ``partial`` (some character shared).
        compatible: The type condition ``compatible(ref, pred)``; None for any type.

    Returns:
        ``{reference index: predicted index}``, each predicted entity used at most once.

    Raises:
        ValueError: If ``span`` is not a span setting.
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
    """Copy each annotation once per type of its ancestry, for the ``hierarchy`` setting.

    Args:
        annotations: The annotations.
        schema: The schema whose entity hierarchy gives the ancestors.

    Returns:
        One copy of each annotation per type in ``[type] + schema.ancestors(type)`` (the original for
            its own type; the copies keep fragments, source, identifier and text), in input order.
    """
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
    """Count TP/FP/FN per type for the entities of one document (see the module docstring).

    Args:
        reference: The reference entities, fragments half-open in the document's offset space.
        predicted: The predicted entities, in the same offset space.
        span: The span setting, ``exact`` or ``partial``.
        types: The type setting, ``strict``, ``hierarchy`` or ``any``.
        schema: The schema, needed for ``hierarchy``.

    Returns:
        The document's tally.

    Raises:
        ValueError: If a setting is unknown, or ``hierarchy`` is asked without a schema.
    """
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
    """Score pre-annotation against final annotation in the four settings of Table 10 (PGxCorpus paper).

    exact = all fragments equal; partial = some character overlap, one-to-one
    by maximum bipartite matching; same = types equal; any = types ignored
    (per type: TP and FN under the reference type, FP under the predicted one).

    Args:
        pairs: One ``(reference annotations, predicted annotations)`` pair per
            document, both in the same offset space (half-open, into the document's ``.txt``) and
            both already in the schema's types (map pre-annotation types first).

    Returns:
        Micro-averaged scores over all documents, ``{"exact_same": {"tp", "fp", "fn", "precision",
            "recall", "f1"}, "exact_any": ..., "partial_same": ..., "partial_any": ..., "per_type":
            {setting: {type: {...}}}}``.
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
    """A binary relation between two entities of the same document.

    Attributes:
        type: The relation type.
        arg1: The ``Arg1`` entity (offsets half-open into the document's ``.txt``).
        arg2: The ``Arg2`` entity.
        modality: The modality label ([`modality_label`][pipeline.brat.modality.modality_label],
            ``none`` for a plain relation); never part of a match or of equality.
    """

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
    """Count TP/FP/FN per relation type for the relations of one document (see the module docstring).

    Relations match when their types match under ``types`` and their arguments match under ``span``
    and ``types``; modality is ignored.

    Args:
        reference: The reference relations.
        predicted: The predicted relations, their entities in the same offset space.
        span: The span setting of the arguments, ``exact`` or ``partial``.
        types: The type setting, ``strict``, ``hierarchy`` or ``any``.
        directed: Compare Arg1 with Arg1 and Arg2 with Arg2 only; when False, the swapped pairing is
            accepted too.
        schema: The schema, required for ``hierarchy``.

    Returns:
        The document's tally, TP/FN under the reference relation's type, FP under the predicted one's.

    Raises:
        ValueError: If ``span`` or ``types`` is not a known setting.
    """
    if span not in SPAN_SETTINGS:
        raise ValueError(f"unknown span setting {span!r}")
    if types == "hierarchy" and schema is None:
        raise ValueError("the hierarchy setting needs a schema")
    entity_ok = _entity_match(span, types, schema)

    def args_ok(r: RelationMention, p: RelationMention) -> bool:
        if entity_ok(r.arg1, p.arg1) and entity_ok(r.arg2, p.arg2):
            return True
        return not directed and entity_ok(r.arg1, p.arg2) and entity_ok(r.arg2, p.arg1)

    if types == "hierarchy":
        assert schema is not None
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
    """Count modality agreement on the relations of one document matched in ``MODALITY_SETTING``.

    Relations are matched exactly, same type, same direction (``exact_strict_directed``).  Modality is
    never part of the relation match itself, so this is its own figure.

    Args:
        reference: The reference relations, with their modality labels.
        predicted: The predicted relations.

    Returns:
        Counts ``matched``, ``same_modality`` and ``REF_LABEL -> PRED_LABEL`` for each matched pair
            (labels from [`modality_label`][pipeline.brat.modality.modality_label], ``none`` for a plain
            relation).
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
    """Report modality agreement from the counts of [`modality_tally`][pipeline.brat.agreement.modality_tally].

    Args:
        tally: The counts, summed over documents.

    Returns:
        ``{"setting", "matched", "same_modality", "agreement" (a fraction; None when nothing matched),
            "pairs": {"REF -> PRED": n}}``.
    """
    matched = tally.get("matched", 0)
    same = tally.get("same_modality", 0)
    return {"setting": MODALITY_SETTING, "matched": matched, "same_modality": same,
            "agreement": same / matched if matched else None,
            "pairs": {k: v for k, v in sorted(tally.items()) if " -> " in k}}


def relation_modality_label(doc: BratDocument, relation_id: str) -> str:
    """Read a relation's modality label.

    The modality is the binary brat attributes named after a modality and the leading modality tokens
    of its AnnotatorNotes ([`pipeline.brat.modality`][pipeline.brat.modality]).

    Args:
        doc: The document holding the relation.
        relation_id: The relation's brat id (``R1``).

    Returns:
        ``none`` or the modalities joined by ``+`` in canonical order.
    """
    found = {a.type for a in doc.attributes if a.target == relation_id and a.type in MODALITIES}
    found |= join_notes(doc.notes_for(relation_id)).modality
    return modality_label(found)


# --- collections -------------------------------------------------------------

@dataclass
class CollectionPair:
    """Two collections aligned by document name (intersection) and what only one of them has.

    Attributes:
        reference: The reference collection's label.
        predicted: The predicted collection's label.
        common: The names in both, sorted (the documents scored).
        only_reference: The names only in the reference, sorted (not scored).
        only_predicted: The names only in the prediction, sorted (not scored).
        text_mismatch: The common names whose two texts differ (both non-empty): scored, but their
            offsets may not be comparable.
    """

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
    """Convert the text-bound annotations of a brat document to entities, by id.

    With ``schema`` and ``source``, types are mapped with
    ``schema.map_type(source, type)`` (schema types map to themselves, types
    mapped to null are dropped, unknown types are kept unchanged).  Empty fragments are dropped; an
    annotation left with none is skipped.

    Args:
        doc: The brat document.
        schema: The schema whose type mapping is applied (with ``source``).
        source: The mapping's source (``pubtator``...); None keeps the types as they are.
        counts: Updated in place when given: ``types_mapped``, ``types_dropped``.

    Returns:
        Brat id -> entity (source ``gold``), fragments sorted, half-open offsets into ``doc.text``
            (the ``.txt``); ``original_type`` holds the type before mapping when it changed.
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
    """List the binary relations of a brat document between known entities.

    The arguments are ``Arg1`` and ``Arg2``, else the first two in file order.  A relation whose
    argument is not among ``entities`` is logged at WARNING (``file:line``) and left out.

    Args:
        doc: The brat document.
        entities: Its entities by id ([`brat_entities`][pipeline.brat.agreement.brat_entities]).

    Returns:
        The relations, in file order, with their modality labels.
    """
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
    """Read a brat directory's documents by name (an ``.ann`` without ``.txt`` is read with an empty text).

    Args:
        directory: The brat directory, read recursively
            ([`read_directory`][pipeline.brat.standoff.read_directory]).

    Returns:
        Document name -> document, and the issues (unparsable lines...), each also logged at WARNING.

    Raises:
        FileNotFoundError: If ``directory`` is not a directory.
    """
    docs, issues = read_directory(directory)
    for issue in issues:
        log.warning("%s", issue)
    return {d.name: d for d in docs}, issues


def align(
    reference: Mapping[str, BratDocument], predicted: Mapping[str, BratDocument], ref_label: str, pred_label: str
) -> CollectionPair:
    """Pair documents by name; names in only one collection are reported and left out of scoring.

    A document whose two texts differ (both non-empty) is still scored but
    listed in ``text_mismatch``, as its offsets may not be comparable.  Both cases are logged at
    WARNING.

    Args:
        reference: The reference documents by name.
        predicted: The predicted documents by name.
        ref_label: The reference collection's label (its directory), for messages and the result.
        pred_label: The predicted collection's label.

    Returns:
        The aligned pair of collections.
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
    """Compute the entity and relation agreement of two collections in every setting.

    Only the documents in both collections are scored.

    Args:
        reference: The reference documents by name.
        predicted: The predicted documents by name.
        schema: The schema (type hierarchy; type mapping with ``pred_source``).
        ref_label: The reference collection's label.
        pred_label: The predicted collection's label.
        pred_source: Maps the predicted collection's types from that source
            (see [`brat_entities`][pipeline.brat.agreement.brat_entities]); None keeps them.
        counts: Updated in place when given: ``documents_common``, ``types_mapped``, ``types_dropped``.

    Returns:
        ``{"reference", "predicted", "documents": {...}, "entities": {SPAN_TYPES: report},
            "relations": {SPAN_TYPES_DIRECTION: report}}`` where a report is
            ``{"micro": prf, "macro": {...}, "per_type": {type: prf}}``, and ``"relation_modality"``: modality
            agreement on the relations matched exactly
            ([`modality_report`][pipeline.brat.agreement.modality_report]), a figure of its own.
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
    """Compute pairwise agreement over all pairs of annotator directories.

    Args:
        directories: The annotators' brat directories; in each pair, the one listed first is the
            reference.
        schema: The corpus schema.
        counts: Updated in place when given: ``parse_issues`` and the counts of
            [`compare_collections`][pipeline.brat.agreement.compare_collections].

    Returns:
        ``{"directories": [...], "parse_issues": [str], "pairs": [compare_collections(...)],
            "mean_f1": {"entities": {setting: mean micro F1 over pairs}, "relations": {...}}}``.

    Raises:
        ValueError: If fewer than two directories are given.
        FileNotFoundError: If one of them is not a directory.
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
    """Score a pre-annotation against each final annotation directory, in the Table 10 settings.

    Pre-annotation types are mapped with the schema mapping of ``source``
    (PubTator: Gene -> Gene_or_protein, Mutation -> Limited_variation, ...).  The final annotation is
    the reference; only the documents in both are scored.

    Args:
        preannotation: The pre-annotation brat directory.
        final: The final annotation directories.
        schema: The corpus schema (type mapping, hierarchy).
        source: The source whose type mapping applies to the pre-annotation.
        counts: Updated in place when given: ``documents_common``, ``parse_issues``, ``types_mapped``,
            ``types_dropped``.

    Returns:
        ``{"preannotation", "parse_issues", "results": [{"final", "documents": {...},
            "scores": table10_scores(...), "relations": {SPAN_TYPES_DIRECTION: micro prf}}]}`` (``relations``
            empty when the pre-annotation has no relation, as before relations were pre-annotated).  When the
            pre-annotation collection has a ``provenance.jsonl``
            ([`pipeline.brat.provenance`][pipeline.brat.provenance]), each result also has
            ``"by_source": {SOURCE: table10_scores(...)}``: the same scores with only the pre-annotated
            entities of that source (``pubtator``, ``local``, ``ontology`` = composites) as predictions,
            against all final entities (so precision is the source's, recall its share of the final
            annotation).

    Raises:
        FileNotFoundError: If a directory is not a directory.
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
    """Render an agreement result as Markdown tables.

    Args:
        result: A result of [`agreement`][pipeline.brat.agreement.agreement].

    Returns:
        Per pair: every setting (TP, FP, FN, P, R, F1 and macro F1, in %), per type for three
            settings, and the modality agreement; then the mean F1 over pairs when there are several.
            Undefined scores read ``n/a``.
    """
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
    """Render a pre-annotation score as Markdown tables.

    Args:
        result: A result of [`preannotation_scores`][pipeline.brat.agreement.preannotation_scores].

    Returns:
        Per final directory: the four Table 10 settings (P, R, F1 in %), then the relation
            settings and the scores by pre-annotation source when the result has them.
    """
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
