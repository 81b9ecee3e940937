"""Training the learned scorer on finished annotations (``pgx-corpus train-relations``)."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.documents import Document, Sentence
from pipeline.nlp.logistic import fit_logistic as _logistic
from pipeline.nlp.logistic import rounded as _rounded
from pipeline.nlp.relations.documents import _sentence_entities
from pipeline.nlp.relations.features import _candidate_pairs, _PairRow, _type_features, _type_pair, context_features
from pipeline.nlp.relations.rules import DECISIONS, EQUIVALENT, TYPE_FEATURES, RelationRules, RelationScorer
from pipeline.nlp.relations.scorer import (
    _ancestors,
    _choose_type,
    _most_probable,
    _others,
    _pair_probabilities,
    _probability,
    _type_probabilities,
)
from pipeline.nlp.relations.tree import _align, _Entity, _outer, _Tree
from pipeline.schema import Schema

log = logging.getLogger(__name__)


#: a feature must occur in this many training pairs to get a weight
MIN_FEATURE_COUNT = 3


#: candidate inverse L2 strengths (scikit-learn's ``C``) of the pair, context and type models; each
#: training run chooses among them by inner cross-validation by PMID on its own training data
#: (``train_scorer``), never on the sentences it is evaluated on
PAIR_C_GRID = (0.1, 0.3, 1.0)


CONTEXT_C_GRID = (0.3, 1.0, 3.0)


TYPE_C_GRID = (0.3, 1.0, 3.0)


#: candidate type thresholds; the one chosen gives the most strictly right types among the inner-CV
#: proposals that are right (pair and direction) while losing at most TYPE_HIERARCHY_COST of them
#: under hierarchy credit (a lower threshold names a specific type more often: more strictly right
#: types, but more specific types that hierarchy credit does not accept either); TYPE_HIERARCHY_COST
#: is the default of ``train-relations --type-hierarchy-budget``
TYPE_THRESHOLD_GRID = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


TYPE_HIERARCHY_COST = 0.05


#: an entity type pair is scored when training annotators related at least this many of its pairs
#: and at least this share of them (Gene_or_protein with Limited_variation, Chemical with Chemical:
#: never related in PGxCorpus); the others are never proposed and cost nothing.  A fixed rule, not
#: selected per training run (each candidate would refit every pair model)
MIN_TYPE_PAIR_RELATED = 2


MIN_TYPE_PAIR_RATE = 0.01


@dataclass(frozen=True)
class TrainingSentence:
    """One training example: a document with parses and its gold relations.

    Attributes:
        doc: The document (one or more sentences, with ``parses``).
        gold: Gold relations as ``(arg1 index, arg2 index, type)`` into ``doc.annotations``.
        group: Its PMID (inner folds keep a PMID's sentences together).
    """

    doc: Document
    gold: tuple[tuple[int, int, str], ...]
    group: str


@dataclass(frozen=True)
class _Sentence:
    """A training sentence's candidate pairs and their labels (computed once, used by every fit)."""

    group: str
    rows: list[_PairRow]
    labels: list[tuple[str | None, str | None]]  # gold type a->b, b->a (None: not related that way)
    reachable: int  # gold relations (not isEquivalentTo) of the sentence
    # the type-only features of each row a->b, b->a (empty: TYPE_FEATURES is 0)
    type_rows: list[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)

    def type_feats(self, k: int, forward: bool) -> tuple[str, ...]:
        """The type model's features of row ``k`` in one direction: the pair's and the type-only ones."""
        row = self.rows[k]
        feats = row[2] if forward else row[3]
        if not self.type_rows:
            return feats
        return feats + self.type_rows[k][0 if forward else 1]


def _sentences(examples: Sequence[TrainingSentence], rules: RelationRules, schema: Schema) -> list[_Sentence]:
    out = []
    for ex in examples:
        doc = ex.doc
        gold = {(i, j): t for i, j, t in ex.gold if t != EQUIVALENT}
        parses = {(p.start, p.end): p for p in doc.parses}
        for sent in doc.sentences:
            parse = parses.get((sent.start, sent.end))
            in_sentence = {e[0] for e in _sentence_entities(doc, sent, schema)}
            reachable = sum(1 for i, j in gold if i in in_sentence and j in in_sentence)
            if parse is None or not parse.tokens:
                if reachable:
                    out.append(_Sentence(ex.group, [], [], reachable))
                continue
            tree = _Tree(parse)
            ents = []
            for index, ann, type_ in _sentence_entities(doc, sent, schema):
                tokens, head = _align(ann, tree)
                ents.append(_Entity(index, ann, type_, head, tokens, ann.start, ann.end))
            ents.sort(key=lambda e: (e.annotation.sort_key(), e.index))
            outer = _outer(ents)
            rows = _candidate_pairs(doc.text, tree, ents, outer, rules)
            labels = [(gold.get((a.index, b.index)), gold.get((b.index, a.index))) for a, b, _x, _y in rows]
            type_rows = [(_type_features(tree, a, b, rules), _type_features(tree, b, a, rules))
                         for a, b, _x, _y in rows] if TYPE_FEATURES else []
            out.append(_Sentence(ex.group, rows, labels, reachable, type_rows))
    return out


def _softmax_regression(rows: Sequence[tuple[tuple[str, ...], str]], c: float) -> dict[str, dict[str, float]]:
    """A multinomial L2 logistic regression over binary features: type -> feature -> weight."""
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    classes = sorted({y for _x, y in rows})
    if len(classes) < 2:
        return {t: {} for t in classes}
    names = sorted({f for x, _y in rows for f in x})
    if not names:
        # no feature to tell the types apart by (a tiny training set): the types' frequencies
        freq = Counter(y for _x, y in rows)
        return {t: {"bias": round(math.log(freq[t] / len(rows)), 4)} for t in classes}
    column = {f: j for j, f in enumerate(names)}
    indices: list[int] = []
    indptr = [0]
    for x, _y in rows:
        indices.extend(sorted({column[f] for f in x}))
        indptr.append(len(indices))
    matrix = csr_matrix(([1.0] * len(indices), indices, indptr), shape=(len(rows), len(names)))
    model = LogisticRegression(C=c, max_iter=5000, tol=1e-6).fit(matrix, [y for _x, y in rows])
    coef = model.coef_
    intercept = model.intercept_
    if len(classes) == 2:  # scikit-learn keeps one row: the second class against the first
        coef = [-0.5 * coef[0], 0.5 * coef[0]]
        intercept = [-0.5 * intercept[0], 0.5 * intercept[0]]
    out = {}
    for t, row, b in zip(model.classes_, coef, intercept, strict=True):
        weights = {f: float(w) for f, w in zip(names, row, strict=True)}
        weights["bias"] = weights.get("bias", 0.0) + float(b)
        out[str(t)] = _rounded(weights)
    return out


def _kept_features(sentences: Sequence[_Sentence]) -> set[str]:
    # features seen fewer than MIN_FEATURE_COUNT times in the training pairs are left out: they
    # memorise single sentences (and make the scorer file large)
    seen: Counter[str] = Counter(f for s in sentences for _a, _b, f_ab, f_ba in s.rows for f in {*f_ab, *f_ba})
    return {f for f, n in seen.items() if n >= MIN_FEATURE_COUNT}


def _fit_pair(sentences: Sequence[_Sentence], c: float) -> dict[str, float]:
    kept = _kept_features(sentences)
    rows: list[tuple[Mapping[str, float], int]] = []
    for s in sentences:
        for (_a, _b, f_ab, f_ba), (l_ab, l_ba) in zip(s.rows, s.labels, strict=True):
            rows.append(({f: 1.0 for f in f_ab if f in kept}, int(l_ab is not None)))
            rows.append(({f: 1.0 for f in f_ba if f in kept}, int(l_ba is not None)))
    return _logistic(rows, c)


def _learn_pair_types(sentences: Sequence[_Sentence]) -> frozenset[str]:
    total: Counter[str] = Counter()
    related: Counter[str] = Counter()
    for s in sentences:
        for (a, b, _x, _y), (l_ab, l_ba) in zip(s.rows, s.labels, strict=True):
            key = _type_pair(a.type, b.type)
            total[key] += 1
            related[key] += l_ab is not None or l_ba is not None
    return frozenset(t for t, n in related.items() if n >= MIN_TYPE_PAIR_RELATED and n / total[t] >= MIN_TYPE_PAIR_RATE)


def _restricted(s: _Sentence, pair_types: frozenset[str]) -> _Sentence:
    keep = [k for k, (a, b, _x, _y) in enumerate(s.rows) if _type_pair(a.type, b.type) in pair_types]
    return dataclasses.replace(s, rows=[s.rows[k] for k in keep], labels=[s.labels[k] for k in keep],
                               type_rows=[s.type_rows[k] for k in keep] if s.type_rows else [])


@dataclass(frozen=True)
class _Strengths:
    """The inverse L2 strengths (scikit-learn's ``C``) of the pair, context and type models."""

    pair: float
    context: float
    type: float


def _cross_fitted(sentences: Sequence[_Sentence], folds: Sequence[set[str]], c: float
                  ) -> dict[int, list[tuple[float, float]]]:
    """Pair-model probabilities (both directions) of each sentence, from a pair model fitted without its fold.

    ``folds``: sets of PMIDs; keys of the result are indices into ``sentences``.
    """
    first: dict[int, list[tuple[float, float]]] = {}
    for held in folds:
        inner = _fit_pair([s for s in sentences if s.group not in held], c)
        for n, s in enumerate(sentences):
            if s.group in held:
                first[n] = [(_probability(inner, f_ab), _probability(inner, f_ba)) for _a, _b, f_ab, f_ba in s.rows]
    return first


def _context_rows(s: _Sentence, first: Sequence[tuple[float, float]]) -> list[tuple[Mapping[str, float], int]]:
    """The context model's training rows of one sentence (both directions of each pair)."""
    rows: list[tuple[Mapping[str, float], int]] = []
    for (p_ab, p_ba), (top_a, n_a, top_b, n_b), (l_ab, l_ba) in zip(
            first, _others(s.rows, first), s.labels, strict=True):
        rows.append((context_features(p_ab, p_ba, top_a, n_a, top_b, n_b), int(l_ab is not None)))
        rows.append((context_features(p_ba, p_ab, top_b, n_b, top_a, n_a), int(l_ba is not None)))
    return rows


def _typed_rows(sentences: Sequence[_Sentence], kept: set[str]) -> list[tuple[tuple[str, ...], str]]:
    """The type model's training rows: the related ordered pairs' kept features and gold type.

    ``kept``: the pair features kept; type-only features are kept when seen in at least
    ``MIN_FEATURE_COUNT`` of these rows.
    """
    typed: list[tuple[tuple[str, ...], str]] = []
    for s in sentences:
        for k, (l_ab, l_ba) in enumerate(s.labels):
            for forward, label in ((True, l_ab), (False, l_ba)):
                if label is not None:
                    typed.append((s.type_feats(k, forward), label))
    seen: Counter[str] = Counter(f for feats, _label in typed for f in set(feats) if f.startswith("t_"))
    keep = kept | {f for f, n in seen.items() if n >= MIN_FEATURE_COUNT}
    return [(tuple(f for f in feats if f in keep), label) for feats, label in typed]


def _recall_at_precision(scored: Sequence[tuple[float, int]], target: float, reachable: int) -> float:
    """The highest recall of a threshold on ``(probability, right)`` proposals whose precision reaches ``target``."""
    best = right = 0
    for n, (_p, ok) in enumerate(sorted(scored, key=lambda x: -x[0]), 1):
        right += ok
        if right / n >= target:
            best = right
    return best / max(1, reachable)


def _select_strengths(sentences: Sequence[_Sentence], folds: Sequence[set[str]], target_precision: float
                      ) -> tuple[_Strengths, dict[str, Any], dict[int, list[tuple[float, float]]]]:
    """Choose the three models' L2 strengths by cross-validation over ``folds`` (sets of PMIDs) of ``sentences``.

    The pair and context strengths together: the highest recall (pair and direction right) at which the
    held-out two-stage probabilities reach ``target_precision`` (the operating point's own measure: the
    threshold is chosen on it); the pair model's probabilities the context model reads are cross-fitted
    over the same folds.  The type strength: the lowest log-loss of the type model on the held-out
    related pairs (the type threshold is chosen afterwards, so the whole probability counts).  Ties go
    to the stronger regularisation.  Only ``sentences`` are read.

    Returns the strengths, a report (grids, criterion per candidate) and the cross-fitted pair-model
    probabilities of the chosen pair strength (sentences restricted to the type pairs they relate),
    which the final fit reuses.
    """
    pair_types = _learn_pair_types(sentences)
    restricted = [_restricted(s, pair_types) for s in sentences]
    reachable = sum(s.reachable for s in restricted)
    recall: dict[tuple[float, float], float] = {}
    first_by_c: dict[float, dict[int, list[tuple[float, float]]]] = {}
    for pc in PAIR_C_GRID:
        first = first_by_c[pc] = _cross_fitted(restricted, folds, pc)
        rows = {n: _context_rows(s, first[n]) for n, s in enumerate(restricted)}
        for cc in CONTEXT_C_GRID:
            scored: list[tuple[float, int]] = []
            for held in folds:
                context = _logistic([r for n, s in enumerate(restricted) if s.group not in held for r in rows[n]], cc)
                for n, s in enumerate(restricted):
                    if s.group in held:
                        for (p_ab, p_ba), (l_ab, l_ba) in zip(_pair_probabilities({}, context, s.rows, first[n]),
                                                              s.labels, strict=True):
                            scored.append((p_ab, int(l_ab is not None)) if p_ab >= p_ba
                                          else (p_ba, int(l_ba is not None)))
            recall[(pc, cc)] = _recall_at_precision(scored, target_precision, reachable)
    pair_c, context_c = max(recall, key=lambda k: (recall[k], -k[0], -k[1]))
    log_loss: dict[float, float] = {}
    for tc in TYPE_C_GRID:
        total, count = 0.0, 0
        for held in folds:
            train = [s for s in restricted if s.group not in held]
            model = RelationScorer({}, _softmax_regression(_typed_rows(train, _kept_features(train)), tc), 0.0)
            for s in restricted:
                if s.group not in held:
                    continue
                for k, (l_ab, l_ba) in enumerate(s.labels):
                    for forward, label in ((True, l_ab), (False, l_ba)):
                        if label is not None:
                            probs = _type_probabilities(model, s.type_feats(k, forward))
                            total -= math.log(max(probs.get(label, 0.0), 1e-6))
                            count += 1
        log_loss[tc] = total / max(1, count)
    type_c = min(TYPE_C_GRID, key=lambda c: (round(log_loss[c], 6), c))
    report = {"criterion_pair_context": f"inner-CV recall (pair and direction) at precision {target_precision}",
              "criterion_type": "inner-CV log-loss of the type model on related pairs",
              "recall": {f"{pc}/{cc}": round(r, 4) for (pc, cc), r in sorted(recall.items())},
              "type_log_loss": {str(c): round(v, 4) for c, v in sorted(log_loss.items())}}
    return _Strengths(pair_c, context_c, type_c), report, first_by_c[pair_c]


def _fit_scorer(sentences: Sequence[_Sentence], *, inner_folds: int, seed: int, strengths: _Strengths,
                first: Mapping[int, list[tuple[float, float]]] | None = None
                ) -> tuple[dict[str, float], dict[str, float], dict[str, dict[str, float]], frozenset[str]]:
    """The pair, context and type models trained on ``sentences``, and the type pairs they score.

    The context model learns from pair-model probabilities cross-fitted over ``inner_folds`` folds
    by PMID (a pair model never scores the sentences it was trained on), as it meets them when
    applied to new sentences.  ``first``: those probabilities when already computed (by
    [`_select_strengths`][pipeline.nlp.relations.training._select_strengths], with the same folds and strength).
    """
    from pipeline.nlp.folds import kfold_groups

    pair_types = _learn_pair_types(sentences)
    sentences = [_restricted(s, pair_types) for s in sentences]
    pair = _fit_pair(sentences, strengths.pair)
    groups = sorted({s.group for s in sentences})
    k = min(inner_folds, len(groups))
    context: dict[str, float] = {}
    if k >= 2:
        if first is None:
            first = _cross_fitted(sentences, [set(f) for f in kfold_groups(groups, k=k, seed=seed)], strengths.pair)
        rows = [r for n, s in enumerate(sentences) for r in _context_rows(s, first[n])]
        context = _logistic(rows, strengths.context)
    typed = _typed_rows(sentences, _kept_features(sentences))
    return pair, context, _softmax_regression(typed, strengths.type), pair_types


def _inner_scored(sentences: Sequence[_Sentence], folds: Sequence[set[str]], *, inner_folds: int, seed: int,
                  strengths: _Strengths) -> tuple[list[tuple[float, int, str | None, dict[str, float]]], int]:
    """The held-out proposals of the whole scorer trained on the other folds, most probable first.

    Each item: (probability of the pair's more probable direction, right pair and direction, gold
    type when right, the type model's probabilities); and the reachable gold relations of the folds.
    """
    scored: list[tuple[float, int, str | None, dict[str, float]]] = []
    reachable = 0
    for held in folds:
        pair, context, types, pair_types = _fit_scorer([s for s in sentences if s.group not in held],
                                                       inner_folds=inner_folds, seed=seed, strengths=strengths)
        inner = RelationScorer(pair, types, 0.0, context=context)
        for s in sentences:
            if s.group not in held:
                continue
            s = _restricted(s, pair_types)
            reachable += s.reachable
            for k, ((l_ab, l_ba), (p_ab, p_ba)) in enumerate(zip(
                    s.labels, _pair_probabilities(pair, context, s.rows), strict=True)):
                label, prob, forward = (l_ab, p_ab, True) if p_ab >= p_ba else (l_ba, p_ba, False)
                scored.append((prob, int(label is not None), label,
                               _type_probabilities(inner, s.type_feats(k, forward))))
    scored.sort(key=lambda x: -x[0])
    return scored, reachable


class _TypeCounts:
    """The right inner proposals' type probabilities, to count what a choice of type thresholds gives.

    ``accepted``: inner held-out proposals (as [`_inner_scored`][pipeline.nlp.relations.training._inner_scored]
    gives them); only the right ones (pair and direction) count.
    """

    def __init__(self, accepted: Sequence[tuple[float, int, str | None, dict[str, float]]],
                 rules: RelationRules) -> None:
        self.rules = rules
        self.right = [(g, probs) for _p, ok, g, probs in accepted if ok and g is not None]
        self.credited = [frozenset(_ancestors(g, rules)) for g, _probs in self.right]

    def __call__(self, threshold: float, specific: float | None = None,
                 per_type: Mapping[str, float] | None = None) -> tuple[int, int]:
        """Return how many right proposals get the gold type, and how many get hierarchy credit."""
        chosen = [_choose_type(probs, self.rules, threshold, specific, per_type) for _g, probs in self.right]
        return (sum(1 for (g, _p), t in zip(self.right, chosen, strict=True) if t == g),
                sum(1 for ok, t in zip(self.credited, chosen, strict=True) if t in ok))


def _select_type_threshold(accepted: Sequence[tuple[float, int, str | None, dict[str, float]]],
                           rules: RelationRules, budget: float = TYPE_HIERARCHY_COST
                           ) -> tuple[float, float, dict[str, list[int]]]:
    """The two type thresholds serving strict typing within a bounded cost under hierarchy credit.

    ``accepted``: the inner held-out proposals at or above the pair threshold (as
    [`_inner_scored`][pipeline.nlp.relations.training._inner_scored] gives them).  Among the pairs of
    ``TYPE_THRESHOLD_GRID`` (for the root's children, for the types below them), those whose types
    keep hierarchy credit on at least ``1 - budget`` of the proposals right (pair and direction)
    qualify; the pair with the most strictly right types is chosen (ties: the higher
    thresholds).  None qualifying: the highest.  Two thresholds, since the two levels cost
    differently under hierarchy credit: ``influences`` is credited for any of its five children,
    ``increases`` only for itself.  Returns them and, per candidate ``"a/b"``, [strictly right,
    hierarchy-credited, right].
    """
    type_counts = _TypeCounts(accepted, rules)
    right = len(type_counts.right)
    counts = {candidate: type_counts(*candidate)
              for candidate in itertools.product(TYPE_THRESHOLD_GRID, TYPE_THRESHOLD_GRID)}
    qualifying = [c for c in counts if counts[c][1] >= (1 - budget) * right]
    top = TYPE_THRESHOLD_GRID[-1]
    best = max(qualifying, key=lambda c: (counts[c][0], c)) if qualifying else (top, top)
    return best[0], best[1], {f"{a}/{b}": [*counts[(a, b)], right] for a, b in counts}


def _select_per_type_thresholds(accepted: Sequence[tuple[float, int, str | None, dict[str, float]]],
                                rules: RelationRules, general: float, specific: float,
                                budget: float = TYPE_HIERARCHY_COST) -> tuple[dict[str, float], list[list[Any]]]:
    """A threshold per type, under the same criterion and budget as the two level thresholds.

    The types' probabilities are not calibrated alike: ``treats`` is rarely confused with
    another type, yet at the level threshold it falls back to the root as often as
    ``influences``, which annotators confuse with ``isAssociatedWith`` all the time.  Starting
    from the level thresholds (``general``, ``specific``, as
    [`_select_type_threshold`][pipeline.nlp.relations.training._select_type_threshold] chose them), each
    type below the root in turn (name order, two rounds) takes the value of
    ``TYPE_THRESHOLD_GRID`` giving the most strictly right types among ``accepted``'s right
    proposals while hierarchy credit still covers at least ``1 - budget`` of them
    (ties: the higher threshold); a type keeps its level's threshold (and no entry) when no
    candidate stays within that budget.  Returns the thresholds and the steps taken, ``[type, threshold, strictly right,
    hierarchy-credited]`` each.
    """
    type_counts = _TypeCounts(accepted, rules)
    floor = (1 - budget) * len(type_counts.right)
    below_root = sorted({t for _g, probs in type_counts.right for t in probs
                         if rules.relation_parent.get(t) is not None})
    # the start: no type of its own, each at its level's threshold (_choose_type falls back to it)
    thresholds: dict[str, float] = {}
    steps: list[list[Any]] = []
    for _round in range(2):
        for t in below_root:
            best: tuple[tuple[int, float], tuple[int, int]] | None = None
            for value in TYPE_THRESHOLD_GRID:
                strict, hier = type_counts(general, specific, {**thresholds, t: value})
                if hier >= floor and (best is None or (strict, value) > best[0]):
                    best = ((strict, value), (strict, hier))
            if best is not None:
                thresholds[t] = best[0][1]
                steps.append([t, best[0][1], *best[1]])
    return thresholds, steps


def train_scorer(examples: Sequence[TrainingSentence], rules: RelationRules, schema: Schema, *,
                 target_precision: float = 0.8, inner_folds: int = 3, seed: int = 13,
                 type_threshold: float | None = None, strengths: tuple[float, float, float] | None = None,
                 hierarchy_budget: float = TYPE_HIERARCHY_COST, decision: str = "thresholds"
                 ) -> tuple[RelationScorer, list[tuple[float, float, float]]]:
    """Train the scorer on ``examples`` and choose its settings on them by inner cross-validation.

    Everything is chosen on ``examples`` alone, over ``inner_folds`` folds by PMID.  First the L2
    strengths of the three models (unless given), among ``PAIR_C_GRID``, ``CONTEXT_C_GRID`` and
    ``TYPE_C_GRID``: the pair and context strengths with the highest inner cross-validated recall
    (pair and direction right) at ``target_precision``, the type strength with the lowest inner
    cross-validated log-loss of the type model on the related pairs (ties: the stronger
    regularisation).  Then, with those strengths, the whole two-stage scorer is trained on the
    inner training folds and applied to the inner held-out fold.  The threshold is the lowest
    probability at which those held-out proposals (best direction per pair) are right (pair and
    direction) at least ``target_precision`` of the time; the two type thresholds (unless
    ``type_threshold`` is given: then it applies to every level) the pair of
    ``TYPE_THRESHOLD_GRID`` giving the most strictly right types among those proposals while
    keeping hierarchy credit on all but ``hierarchy_budget`` of the right ones (the same inner
    predictions), and from there a threshold per type under the same criterion and budget (each
    type in turn, two rounds; ``type_thresholds``).  The type model reads the pair's features and
    type-only ones (words and trigger types around and between the arguments, the words governing
    them).  The chosen values and the criterion per candidate are in the scorer's ``meta``.
    With ``decision="actions"`` no threshold is chosen: the scorer proposes each pair whose
    proposal is expected to save an action (``RelationScorer.decision``); its ``threshold``, the
    least expected net actions saved, is 0.

    Args:
        examples: The training sentences (gold entities, parses, gold relations).
        rules: The rule resources the features use (trigger lexicon, argument order).
        schema: The schema (entity types, relation hierarchy).
        target_precision: Inner cross-validated precision the threshold must reach.
        inner_folds: Folds by PMID of the inner cross-validation (and of the context model's cross-fitting).
        seed: Seed of the fold assignment.
        type_threshold: A fixed type threshold (every level and type) instead of the chosen ones.
        strengths: Fixed ``(pair, context, type)`` L2 strengths (scikit-learn's ``C``) instead of
            the chosen ones.
        hierarchy_budget: The share of the right inner proposals whose hierarchy credit the type
            thresholds may lose (0: a specific type only where hierarchy credit never suffers;
            higher: more strictly right types, more specific types that are wrong).
        decision: One of ``DECISIONS``: ``thresholds`` (the thresholds above) or ``actions``.

    Returns:
        The scorer and the inner threshold curve ``[(threshold, precision, recall)]`` (recall
        over the gold relations other than ``isEquivalentTo``).

    Raises:
        ValueError: If ``hierarchy_budget`` is not in [0, 1), or ``decision`` not one of ``DECISIONS``.
    """
    from pipeline.nlp.folds import kfold_groups

    if not 0.0 <= hierarchy_budget < 1.0:
        raise ValueError(f"the type thresholds' hierarchy budget must be in [0, 1), not {hierarchy_budget}")
    if decision not in DECISIONS:
        raise ValueError(f"the scorer's decision must be one of {', '.join(DECISIONS)}, not {decision!r}")

    sentences = _sentences(examples, rules, schema)
    groups = sorted({s.group for s in sentences})
    k = min(inner_folds, len(groups))
    folds = [set(f) for f in kfold_groups(groups, k=k, seed=seed)] if k >= 2 else []
    first: dict[int, list[tuple[float, float]]] | None = None
    selection: dict[str, Any] = {}
    if strengths is not None:
        chosen = _Strengths(*strengths)
        selection = {"strengths": "given"}
    elif folds:
        chosen, selection, first = _select_strengths(sentences, folds, target_precision)
    else:  # too few PMIDs to cross-validate: the middle of each grid
        chosen = _Strengths(PAIR_C_GRID[1], CONTEXT_C_GRID[1], TYPE_C_GRID[1])
        selection = {"strengths": "grid middle (fewer than 2 PMIDs)"}
    scored, reachable = _inner_scored(sentences, folds, inner_folds=inner_folds, seed=seed, strengths=chosen)
    curve: list[tuple[float, float, float]] = []
    right = 0
    threshold = 0.5
    for n, (prob, ok, _gold_type, _probs) in enumerate(scored, 1):
        right += ok
        curve.append((prob, right / n, right / max(1, reachable)))
    qualifying = [t for t, prec, _ in curve if prec >= target_precision]
    if qualifying:
        threshold = min(qualifying)
    type_report: dict[str, list[int]] = {}
    specific: float | None = None
    per_type: dict[str, float] = {}
    per_type_steps: list[list[Any]] = []
    if decision == "actions":  # no threshold to choose; the type thresholds are not read
        threshold, type_threshold = 0.0, 0.5 if type_threshold is None else type_threshold
    elif type_threshold is None:
        accepted = [x for x in scored if x[0] >= threshold]
        type_threshold, specific, type_report = _select_type_threshold(accepted, rules, hierarchy_budget)
        per_type, per_type_steps = _select_per_type_thresholds(accepted, rules, type_threshold, specific,
                                                               hierarchy_budget)
    pair, context, types, pair_types = _fit_scorer(sentences, inner_folds=inner_folds, seed=seed, strengths=chosen,
                                                   first=first)
    meta = {"examples": len(examples), "groups": len(groups), "target_precision": target_precision,
            "inner_folds": k, "seed": seed, "pair_c": chosen.pair, "context_c": chosen.context,
            "type_c": chosen.type, "pair_c_grid": list(PAIR_C_GRID), "context_c_grid": list(CONTEXT_C_GRID),
            "type_c_grid": list(TYPE_C_GRID), "selection": selection,
            "min_feature_count": MIN_FEATURE_COUNT, "min_type_pair_related": MIN_TYPE_PAIR_RELATED,
            "min_type_pair_rate": MIN_TYPE_PAIR_RATE, "decision": decision}
    if decision == "actions":
        meta["decision_criterion"] = ("each pair in its more probable direction, with its most probable type, "
                                      "when p * (1 + q) - 1 >= 0 (expected net actions saved not negative); "
                                      "no threshold chosen")
    else:
        meta.update({"type_threshold_criterion": "inner-CV strictly right types among the proposals right (pair "
                                                 f"and direction), losing at most {hierarchy_budget} of them under "
                                                 "hierarchy credit; counts per (type_threshold/"
                                                 "specific_type_threshold): strictly right, hierarchy-credited, right",
                     "type_hierarchy_budget": hierarchy_budget, "type_threshold_counts": type_report,
                     "per_type_threshold_steps": per_type_steps})
    return RelationScorer(pair, types, threshold, type_threshold, meta, context, pair_types, TYPE_FEATURES,
                          specific, per_type, decision), curve


def type_decisions(examples: Sequence[TrainingSentence], rules: RelationRules, schema: Schema
                   ) -> list[tuple[str, str | None, str | None]]:
    """The scorer's type model on gold pairs: what it names when the pair and its direction are right.

    Separates the type model from the pair model: every gold relation of ``examples`` (not
    ``isEquivalentTo``, which the abbreviation rule proposes) between entities the scorer decides on
    is typed as if the pair model had proposed it alone in its gold direction, whatever the pair
    model's probability (no averaging with coordinated proposals).  Gold relations of a type pair
    the scorer does not score are left out.

    Args:
        examples: Sentences with gold entities, parses and gold relations.
        rules: Rules carrying the scorer (``rules.scorer``).
        schema: The schema (entity types).

    Returns:
        Per gold relation scored: (gold type, the type the scorer proposes (with its type
        thresholds; decision ``actions``: the most probable one), the type model's most probable
        type); the last two are None when the scorer has no type model.

    Raises:
        ValueError: When ``rules`` has no scorer.
    """
    scorer = rules.scorer
    if scorer is None:
        raise ValueError(f"{rules.path or 'the relation rules'}: no scorer to type the gold pairs with")
    out: list[tuple[str, str | None, str | None]] = []
    for s in _sentences(examples, rules, schema):
        s = _restricted(s, scorer.pair_types) if scorer.pair_types else s
        for k, labels in enumerate(s.labels):
            for forward, gold_type in zip((True, False), labels, strict=True):
                if gold_type is None:
                    continue
                row = s.rows[k]
                feats = s.type_feats(k, forward) if scorer.type_features else (row[2] if forward else row[3])
                probs = _type_probabilities(scorer, feats)
                top = _most_probable(probs)
                chosen = (top if scorer.decision == "actions"
                          else _choose_type(probs, rules, scorer.type_threshold, scorer.specific_type_threshold,
                                            scorer.type_thresholds))
                out.append((gold_type, chosen, top))
    return out


def brat_training(directories: Iterable[str | Path], nlp: Any, schema: Schema, counts: Counter[str]
                  ) -> list[TrainingSentence]:
    """Read training sentences from finished brat collections.

    The annotators' entities (schema types) and relations; each document is parsed once with
    ``nlp``.  Names ``{PMID}_{k}`` group by PMID.

    Args:
        directories: Finished brat collections.
        nlp: The spaCy pipeline that parses (the build's).
        schema: The schema (relation types known).
        counts: Counter of ``training_sentences``, ``training_relations`` and
            ``training_relations_skipped``.

    Returns:
        The training sentences, with their parses.
    """
    from pipeline.brat import standoff
    from pipeline.nlp.extend import sentence_parse

    docs: list[tuple[Document, tuple[tuple[int, int, str], ...]]] = []
    for directory in directories:
        found, issues = standoff.read_collection(directory)
        for issue in issues:
            log.warning("%s", issue)
        for bdoc in found:
            anns = standoff.to_annotations(bdoc, source="gold")
            index = {t.id: i for i, t in enumerate(t for t in bdoc.textbounds if any(e > s for s, e in t.fragments))}
            gold = []
            for r in bdoc.relations:
                a1, a2 = index.get(r.arg("Arg1") or ""), index.get(r.arg("Arg2") or "")
                if a1 is None or a2 is None or a1 == a2 or r.type not in schema.relation_parent:
                    counts["training_relations_skipped"] += 1
                    continue
                gold.append((a1, a2, r.type))
            text = bdoc.text
            docs.append((Document(bdoc.name, text, text, origin="brat", sentences=(Sentence(0, len(text)),),
                                  annotations=tuple(anns)), tuple(gold)))
    out = []
    for (doc, relations), sdoc in zip(docs, nlp.pipe(d.text for d, _ in docs), strict=True):
        counts["training_sentences"] += 1
        counts["training_relations"] += len(relations)
        parsed = dataclasses.replace(doc, parses=(sentence_parse(sdoc, 0, len(doc.text)),))
        out.append(TrainingSentence(parsed, relations, doc.pmid.split("_", 1)[0]))
    return out
