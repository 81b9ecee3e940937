"""The learned scorer applied to one sentence: pair and context probabilities, the decision, the type.

The rules' trigger paths find many related pairs but cannot tell them from the unrelated ones
around them (a sentence of the dev set holds about eight entities, and 3% to 18% of its pairs
are related).  The scorer learns that from finished annotations, in two stages:

1. the pair model, a logistic regression over the ordered pair's features (entity types, the
   dependency path's labels and words, the trigger types on it, the words between and around,
   coordination, nesting, whether each argument is the other's nearest candidate of its kind),
   gives the probability that an annotator relates Arg1 to Arg2;
2. the context model, a logistic regression over what the pair model says about the pair's
   neighbours in the sentence (the best other pair of each argument, how many other pairs of
   each argument are likely), rescores it: annotators relate a variant to each phenotype of a
   sentence, a drug to the one effect it causes, so one pair's score depends on the others'.
   It is trained on pair-model probabilities cross-fitted on the training data (inner folds).

A softmax regression over the pair features gives the type.  Trained by train_scorer
(scikit-learn's L-BFGS logistic regression); the file holds the weights only, evaluated by this module.
What is proposed is the scorer's decision (DECISIONS): annotators review every proposal, so the
default proposes what is expected to save them an action rather than what clears thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pipeline.nlp.logistic import sigmoid
from pipeline.nlp.relations.features import _candidate_pairs, _PairRow, _prob_bucket, _type_features
from pipeline.nlp.relations.proposals import _modality, _Proposal, _trigger_type
from pipeline.nlp.relations.rules import RelationRules, RelationScorer
from pipeline.nlp.relations.tree import _Entity, _Tree

_ZEROS = (0.0,) * 512


def _logit(weights: Mapping[str, float], feats: Sequence[str]) -> float:
    if len(feats) <= len(_ZEROS):
        return sum(map(weights.get, feats, _ZEROS[: len(feats)]))
    return sum(weights.get(f, 0.0) for f in feats)


def _probability(weights: Mapping[str, float], feats: Sequence[str]) -> float:
    """The logistic regression's probability over binary features."""
    return sigmoid(_logit(weights, feats))


def _type_probabilities(scorer: RelationScorer, feats: Sequence[str]) -> dict[str, float]:
    """The type model's softmax over the relation types."""
    if not scorer.types:
        return {}
    logits = {t: _logit(w, feats) for t, w in scorer.types.items()}
    top = max(logits.values())
    exp = {t: math.exp(z - top) for t, z in logits.items()}
    total = sum(exp.values())
    return {t: v / total for t, v in exp.items()}


def _ancestors(type_: str, rules: RelationRules) -> list[str]:
    out: list[str] = []
    current: str | None = type_
    while current is not None:
        out.append(current)
        current = rules.relation_parent.get(current)
    return out


def _choose_type(probs: Mapping[str, float], rules: RelationRules, threshold: float,
                 specific: float | None = None, per_type: Mapping[str, float] | None = None) -> str | None:
    """The most specific type whose own and descendants' probability reaches its threshold.

    A type's threshold is its own in ``per_type`` when it has one; else ``threshold`` for the
    root's children (``influences``, ``treats``) and ``specific`` (None: the same) for the types
    below them (``increases``, ``causes``, ...).  The root always qualifies.
    """
    if not probs:
        return None
    cumulative: dict[str, float] = {}
    for t, v in probs.items():
        current: str | None = t
        while current is not None:
            cumulative[current] = cumulative.get(current, 0.0) + v
            current = rules.relation_parent.get(current)

    def depth(t: str) -> int:
        d, current = 0, rules.relation_parent.get(t)
        while current is not None:
            d, current = d + 1, rules.relation_parent.get(current)
        return d

    deep = threshold if specific is None else specific
    own = per_type or {}
    passing = [t for t, v in cumulative.items() if v >= own.get(t, deep if depth(t) >= 2 else threshold)]
    if not passing:
        return max(cumulative, key=lambda t: (cumulative[t], t))
    return max(passing, key=lambda t: (depth(t), cumulative[t], t))


def _context_logit(weights: Mapping[str, float], p_xy: float, p_yx: float, top_x: float, n_x: int, top_y: float,
                   n_y: int) -> float:
    """The context model's log-odds, without building its features.

    The weighted sum of [`context_features`][pipeline.nlp.relations.features.context_features] (``top_*``: the best of
    the argument's other pairs, ``n_*``: how many of them reach 0.5).
    """
    g = weights.get
    best = max(p_xy, p_yx)
    flag_x, flag_y = int(best >= top_x), int(best >= top_y)
    bucket = _prob_bucket(p_xy)
    return (g("bias", 0.0) + g("p", 0.0) * p_xy + g("prev", 0.0) * p_yx
            + g("lp", 0.0) * (math.log(p_xy + 1e-6) - math.log(1.0 - p_xy + 1e-6))
            + g(f"p={bucket}", 0.0) + g(f"prev={_prob_bucket(p_yx)}", 0.0) + g(f"dirbest={int(p_xy >= p_yx)}", 0.0)
            + g("x_max_other", 0.0) * top_x + g(f"x_max_other={_prob_bucket(top_x)}", 0.0)
            + g(f"x_isbest={flag_x}", 0.0) + g(f"x_n_over={min(3, n_x)}", 0.0)
            + g("y_max_other", 0.0) * top_y + g(f"y_max_other={_prob_bucket(top_y)}", 0.0)
            + g(f"y_isbest={flag_y}", 0.0) + g(f"y_n_over={min(3, n_y)}", 0.0)
            + g(f"p|best={bucket}|{flag_x}{flag_y}", 0.0))


class _ContextTable:
    """A context model's weights by feature value: what ``_context_logit`` sums.

    The same weights added in the same order as ``_context_logit``'s general form (so the same
    float), looked up by bucket (0-9) and flag instead of by feature name: about 100,000 pairs of a
    3,000-record build ask for sixteen weights each.
    """

    def __init__(self, weights: Mapping[str, float]) -> None:
        g = weights.get
        self.weights = dict(weights)  # a copy: the table serves a mapping equal to it, never a changed one
        self.bias, self.p, self.prev, self.lp = g("bias", 0.0), g("p", 0.0), g("prev", 0.0), g("lp", 0.0)
        self.x_max, self.y_max = g("x_max_other", 0.0), g("y_max_other", 0.0)
        self.p_bucket = [g(f"p={b}", 0.0) for b in range(10)]
        self.prev_bucket = [g(f"prev={b}", 0.0) for b in range(10)]
        self.dirbest = [g(f"dirbest={f}", 0.0) for f in range(2)]
        self.x_bucket = [g(f"x_max_other={b}", 0.0) for b in range(10)]
        self.y_bucket = [g(f"y_max_other={b}", 0.0) for b in range(10)]
        self.x_best = [g(f"x_isbest={f}", 0.0) for f in range(2)]
        self.y_best = [g(f"y_isbest={f}", 0.0) for f in range(2)]
        self.x_over = [g(f"x_n_over={n}", 0.0) for n in range(4)]
        self.y_over = [g(f"y_n_over={n}", 0.0) for n in range(4)]
        self.p_best = [[[g(f"p|best={b}|{fx}{fy}", 0.0) for fy in range(2)] for fx in range(2)] for b in range(10)]

    def logit(self, p_xy: float, p_yx: float, top_x: float, n_x: int, top_y: float, n_y: int) -> float:
        """Return the context model's log-odds (probabilities in [0, 1], counts >= 0).

        Args:
            p_xy: The pair model's probability of the pair in this direction.
            p_yx: The same in the other direction.
            top_x: The best pair-model probability among Arg1's other pairs (0: none).
            n_x: How many of Arg1's other pairs reach 0.5.
            top_y: The same as ``top_x`` for Arg2.
            n_y: The same as ``n_x`` for Arg2.

        Returns:
            The same float as the general form of ``_context_logit``.
        """
        best = max(p_xy, p_yx)
        flag_x, flag_y = int(best >= top_x), int(best >= top_y)
        bucket = min(9, int(p_xy * 10))  # _prob_bucket's value, as an index
        return (self.bias + self.p * p_xy + self.prev * p_yx
                + self.lp * (math.log(p_xy + 1e-6) - math.log(1.0 - p_xy + 1e-6))
                + self.p_bucket[bucket] + self.prev_bucket[min(9, int(p_yx * 10))]
                + self.dirbest[int(p_xy >= p_yx)]
                + self.x_max * top_x + self.x_bucket[min(9, int(top_x * 10))]
                + self.x_best[flag_x] + self.x_over[min(3, n_x)]
                + self.y_max * top_y + self.y_bucket[min(9, int(top_y * 10))]
                + self.y_best[flag_y] + self.y_over[min(3, n_y)]
                + self.p_best[bucket][flag_x][flag_y])


# the table of the context model last used (a build uses one scorer; a check of the weights' equality
# costs far less than the lookups the table saves in a sentence)
_CONTEXT_TABLE: list[_ContextTable] = []


def _context_table(weights: Mapping[str, float]) -> _ContextTable:
    # called once per sentence with the loaded scorer's own dict: identity settles it without comparing
    # every weight; another dict with the same weights still reuses the table
    if not _CONTEXT_TABLE or (_CONTEXT_TABLE[0].weights is not weights and _CONTEXT_TABLE[0].weights != weights):
        _CONTEXT_TABLE[:] = [_ContextTable(weights)]
    return _CONTEXT_TABLE[0]


def _others(rows: Sequence[_PairRow], first: Sequence[tuple[float, float]]) -> list[tuple[float, int, float, int]]:
    """Per pair: the best score among each argument's other pairs and how many of those reach 0.5.

    Returns ``(top_a, n_a, top_b, n_b)`` per pair, ``a`` and ``b`` as in the row.
    """
    # per entity: its pairs' scores (best direction), the two best (pair excluded: the other one)
    scores: dict[int, list[tuple[float, int]]] = {}
    for k, ((a, b, _fab, _fba), (p_ab, p_ba)) in enumerate(zip(rows, first, strict=True)):
        q = max(p_ab, p_ba)
        scores.setdefault(a.index, []).append((q, k))
        scores.setdefault(b.index, []).append((q, k))
    summary: dict[int, tuple[list[tuple[float, int]], int]] = {}
    for index, qs in scores.items():
        qs.sort(key=lambda x: (-x[0], x[1]))
        summary[index] = (qs[:2], sum(1 for q, _k in qs if q >= 0.5))
    out = []
    for k, ((a, b, _fab, _fba), (p_ab, p_ba)) in enumerate(zip(rows, first, strict=True)):
        q = max(p_ab, p_ba)
        row: list[float | int] = []
        for e in (a, b):
            top2, over = summary[e.index]
            rest = [x for x, j in top2 if j != k]
            row += [rest[0] if rest else 0.0, over - (q >= 0.5)]
        out.append((float(row[0]), int(row[1]), float(row[2]), int(row[3])))
    return out


def _pair_probabilities(pair: Mapping[str, float], context: Mapping[str, float], rows: Sequence[_PairRow],
                        first: Sequence[tuple[float, float]] | None = None) -> list[tuple[float, float]]:
    """Both directions' final probabilities of a sentence's pairs (the context model over the pair model's).

    ``first``: the pair model's probabilities when already known (training: cross-fitted ones).
    """
    if first is None:
        first = [(_probability(pair, f_ab), _probability(pair, f_ba)) for _a, _b, f_ab, f_ba in rows]
    if not context:
        return list(first)
    table = _context_table(context)
    out = []
    for (p_ab, p_ba), (top_a, n_a, top_b, n_b) in zip(first, _others(rows, first), strict=True):
        if 0.0 <= min(p_ab, p_ba, top_a, top_b) and max(p_ab, p_ba, top_a, top_b) <= 1.0 and min(n_a, n_b) >= 0:
            out.append((sigmoid(table.logit(p_ab, p_ba, top_a, n_a, top_b, n_b)),
                        sigmoid(table.logit(p_ba, p_ab, top_b, n_b, top_a, n_a))))
        else:  # outside what the table covers (not a probability): the general form
            out.append((sigmoid(_context_logit(context, p_ab, p_ba, top_a, n_a, top_b, n_b)),
                        sigmoid(_context_logit(context, p_ba, p_ab, top_b, n_b, top_a, n_a))))
    return out


def _scored_sentence(text: str, tree: _Tree, ents: Sequence[_Entity], outer: set[int], rules: RelationRules
                     ) -> dict[tuple[int, int], _Proposal | None]:
    """The scorer's decision on each candidate pair of one sentence, keyed by (index, index) as ordered in ``ents``.

    Proposals are typed together with their coordinated ones
    ([`_coordinated_probabilities`][pipeline.nlp.relations.scorer._coordinated_probabilities]).
    """
    scorer = rules.scorer
    assert scorer is not None
    rows = _candidate_pairs(text, tree, ents, outer, rules, scorer.pair_types)
    out: dict[tuple[int, int], _Proposal | None] = {}
    proposed: list[tuple[tuple[int, int], _Entity, _Entity, dict[str, float]]] = []
    pair_probs: list[float] = []
    actions = scorer.decision == "actions"
    # p * (1 + q) - 1 >= threshold needs p >= (1 + threshold) / 2: no pair below it is ever proposed, nor typed
    floor = (1.0 + scorer.threshold) / 2 if actions else scorer.threshold
    for (a, b, f_ab, f_ba), (p_ab, p_ba) in zip(rows, _pair_probabilities(scorer.pair, scorer.context, rows),
                                                strict=True):
        first, second, feats, prob = (a, b, f_ab, p_ab) if p_ab >= p_ba else (b, a, f_ba, p_ba)
        if prob < floor:
            out[(a.index, b.index)] = None
            continue
        if scorer.type_features:
            feats = feats + _type_features(tree, first, second, rules)
        proposed.append(((a.index, b.index), first, second, _type_probabilities(scorer, feats)))
        pair_probs.append(prob)
    for (key, first, second, _own), probs, prob in zip(proposed, _coordinated_probabilities(tree, proposed),
                                                       pair_probs, strict=True):
        if actions:
            type_: str | None = _most_probable(probs)
            if type_ is not None and prob * (1.0 + probs[type_]) - 1.0 < scorer.threshold:
                type_ = None
        else:
            type_ = _choose_type(probs, rules, scorer.type_threshold, scorer.specific_type_threshold,
                                 scorer.type_thresholds)
        out[key] = (None if type_ is None
                    else _Proposal(type_, first, second, "scorer", *_evidence(tree, first, second, rules)))
    return out


def _most_probable(probs: Mapping[str, float]) -> str | None:
    # ties (never seen with real weights) go to the first name, so that the choice is reproducible
    return max(sorted(probs), key=lambda t: probs[t]) if probs else None


def _coordinated_probabilities(tree: _Tree, proposed: Sequence[tuple[tuple[int, int], _Entity, _Entity,
                                                                    dict[str, float]]]) -> list[dict[str, float]]:
    """Each proposal's type probabilities, averaged over the proposals coordinated with it.

    Two proposals are coordinated when they share one argument, in the same role, and their other
    arguments are of one entity type and stand in one coordination ("levels of estrone ,
    estradiol and testosterone": their heads collapse to one, see ``_Tree.collapsed``).
    Annotators type such relations alike: in the 300 PGxCorpus dev sentences, every one of the 147
    groups of two or more gold relations so coordinated has a single type.  Averaging over the
    group makes the decisions agree and pools the evidence of its members; a proposal without
    coordinated ones keeps its own probabilities.  ``proposed``: (key, Arg1, Arg2, type
    probabilities) per proposal.
    """
    groups: dict[tuple[str, int, int, str], list[int]] = {}
    for n, (_key, first, second, _probs) in enumerate(proposed):
        for role, shared, member in (("arg2", first, second), ("arg1", second, first)):
            if member.head is not None:
                groups.setdefault((role, shared.index, tree.collapsed(member.head), member.type), []).append(n)
    with_group: dict[int, set[int]] = {}
    for group in groups.values():
        if len(group) > 1:
            for n in group:
                with_group.setdefault(n, set()).update(group)
    out = []
    for n, (_key, _first, _second, probs) in enumerate(proposed):
        members = sorted(with_group.get(n, ()))
        if not members:
            out.append(probs)
            continue
        out.append({t: sum(proposed[m][3].get(t, 0.0) for m in members) / len(members) for t in probs})
    return out


def _evidence(tree: _Tree, first: _Entity, second: _Entity, rules: RelationRules
              ) -> tuple[str | None, tuple[str, ...]]:
    """The trigger on the pair's path (provenance) and the modality stated around it."""
    if first.head is None or second.head is None:
        return None, ()
    path = tree.path(tree.collapsed(first.head), tree.collapsed(second.head)) or []
    inner = [i for i in path[1:-1] if i not in first.tokens and i not in second.tokens]
    words = sorted(inner, key=lambda i: (tree.depth[i], i))
    trigger = next((tree.parse.lemmas[i] for i in words if _trigger_type(tree, i, rules)), None)
    if not words:
        words = sorted({first.head, second.head}, key=lambda i: (tree.depth[i], i))
    return trigger, _modality(tree, words, rules)
