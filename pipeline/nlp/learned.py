"""Learned pre-annotation: a candidate classifier trained on finished annotations, next to the rules.

The rules (key entities + composite extension + type mapping) propose
annotations; this module learns, from brat collections whose annotation is
finished (the gold dev subset, a campaign's final collection), which of them
annotators keep, and adds the phrases annotators marked that the rules miss.

Candidates of one sentence (all spans half-open, sentence-relative)

* ``rule``: every mapped rule annotation (span, type), plus the same span with
  another type where the training data showed that re-typing at least
  [`MIN_RETYPE`][pipeline.nlp.learned.MIN_RETYPE] times (rule ``Phenotype`` -> gold
  ``Pharmacodynamic_phenotype``);
* ``rebound``: the span of a contiguous rule annotation one or two tokens
  wider, or one token narrower, at either edge (never taking in clause
  punctuation or a conjunction), with the rule's type;
* ``gazetteer``: every occurrence of a token sequence that the training
  annotators marked (as a contiguous entity), with each type they gave it;
* ``anchored``: new, longer entities anchored on a rule annotation: the spans
  that end where it ends and start one to [`MAX_ANCHOR_TOKENS`][pipeline.nlp.learned.MAX_ANCHOR_TOKENS] tokens
  before it (``effects of statins`` on the Chemical ``statins``), or start
  where it starts and end after it (``warfarin response``, ``ABCB1 C3435T
  polymorphism``), never across clause punctuation or a conjunction, with
  the types that training annotators gave such extensions of that rule type
  at least [`MIN_ANCHOR`][pipeline.nlp.learned.MIN_ANCHOR] times (the ``anchors`` table).  The anchor stays;
  the classifier decides, from the words added (first word, the connecting
  word next to the anchor) rather than from whole phrases, whether the longer
  span is an entity too.  Only with ``TrainConfig(anchored=True)`` (``train
  --anchored``): on the dev subset they do not pay (see the README).

Each candidate gets sparse binary features (type, rule name, source, words,
first/last word, context words, shape, length, the gazetteer's annotation
rate of the phrase, nesting with rule annotations) and an L2 logistic
regression (scikit-learn, fitted as the relation scorer is:
[`fit_logistic`][pipeline.nlp.logistic.fit_logistic]) gives the probability
that an annotator marks exactly that span with that type.  Training candidates get
their gazetteer features *cross-fitted* (from the other inner folds of the
training data), so the classifier learns how far a phrase seen elsewhere can
be trusted, not that a phrase seen in the very sentence is always right.

Decision (``_decide``): per rule annotation, the most probable of its
own forms (as proposed or re-typed, at least ``threshold_rule``) and its
re-bounded forms (at least ``threshold_new``) replaces it, or it is dropped
when none passes; gazetteer candidates are added at ``threshold_new``, and
per anchor and direction the most probable anchored candidate at
``threshold_new``; of
several accepted types on one span the most probable is kept.  Both
thresholds, and the L2 strength among [`C_GRID`][pipeline.nlp.learned.C_GRID], are
chosen on the training data only (inner cross-validated probabilities,
maximising exact-span same-type F1).

A model directory holds ``model.json`` (weights, gazetteer, thresholds) and
``meta.json`` (format, training-data SHA-256, seed, spaCy and pgx-corpus
versions, training configuration and sizes).  Both are written
deterministically (sorted keys, rounded weights): the same data and seed give
the same bytes.

Count keys of [`apply_documents`][pipeline.nlp.learned.apply_documents]: ``learned_candidates``,
``learned_kept_rule``, ``learned_dropped_rule``, ``learned_added``,
``learned_retyped``, ``learned_rebound``, ``learned_anchored``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipeline import durable, resources
from pipeline.documents import Annotation, Document, Span
from pipeline.nlp.folds import kfold_groups
from pipeline.nlp.logistic import fit_logistic, sigmoid

logger = logging.getLogger(__name__)

FORMAT = "pgx-corpus-learned/1"
MODEL_FILE = "model.json"
META_FILE = "meta.json"
MIN_RETYPE = 2
"""Re-typing candidates need this many training observations of (rule type -> gold type) on an exact span."""
MAX_GAZ_TOKENS = 8
"""Longest gazetteer phrase, in tokens."""
MAX_ANCHOR_TOKENS = 5
"""Most tokens an anchored candidate adds to its anchor."""
MIN_ANCHOR = 2
"""Anchored candidates of a (direction, rule type, gold type) need this many training observations."""
SOURCE = "learned"
C_GRID = (0.3, 1.0, 3.0, 10.0)
"""Candidate inverse L2 strengths (scikit-learn's ``C``); each training run chooses one by inner cross-validation."""

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Example:
    """One finished sentence, with what annotators marked and what the rules propose.

    Attributes:
        name: The brat document name (``PMID_k``).
        text: The sentence text.
        gold: The annotators' annotations: half-open offsets relative to ``text``.
        rules: The rules' annotations (key entities, composites, type-mapped),
            offsets relative to ``text`` too.
    """

    name: str
    text: str
    gold: tuple[Annotation, ...]
    rules: tuple[Annotation, ...]


@dataclass(frozen=True)
class TrainConfig:
    """Training settings (all recorded in ``meta.json``).

    Attributes:
        seed: Seed of the inner folds.
        c: A fixed inverse L2 strength (scikit-learn's ``C``); ``None``: the one of
            [`C_GRID`][pipeline.nlp.learned.C_GRID] with the best inner cross-validated F1.
        inner_folds: Inner folds (grouped by PMID) for the cross-fitted
            gazetteer features and the thresholds; fewer when the training data
            has fewer PMIDs.
        anchored: Propose anchored candidates (longer entities sharing an edge
            with a rule annotation).  Off by default: on the 300 dev sentences
            they lower the out-of-fold F1 (README, "Learned pre-annotation").
    """

    seed: int = 13
    c: float | None = None
    inner_folds: int = 4
    anchored: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Return the settings as a plain dict (for ``meta.json``).

        Returns:
            Field name -> value, for every field.
        """
        return {"seed": self.seed, "c": self.c, "inner_folds": self.inner_folds, "anchored": self.anchored}


@dataclass
class Gazetteer:
    """Phrases annotators marked, with per-type annotation and occurrence counts.

    Attributes:
        annotated: Phrase (tuple of lower-cased tokens) -> type -> times
            annotators marked it with that type (contiguous entities only).
        occurrences: Phrase -> times it occurs in the training texts, marked or not.
    """

    annotated: dict[tuple[str, ...], Counter[str]] = field(default_factory=dict)
    occurrences: Counter[tuple[str, ...]] = field(default_factory=Counter)

    def rate(self, phrase: tuple[str, ...], type_: str) -> tuple[int, int]:
        """Return how often a phrase was annotated with a type, and how often it occurred.

        Args:
            phrase: A tuple of lower-cased tokens (see [`tokens`][pipeline.nlp.learned.tokens]).
            type_: An entity type.

        Returns:
            ``(times annotated with type_, times the phrase occurred)`` in the
                training texts; ``(0, 0)`` for an unknown phrase.
        """
        ann = self.annotated.get(phrase)
        return (ann[type_] if ann else 0), self.occurrences.get(phrase, 0)


@dataclass
class LearnedModel:
    """Weights of the candidate classifier, the gazetteer, re-typing table and thresholds.

    Made by [`train`][pipeline.nlp.learned.train]; stored by [`save_model`][pipeline.nlp.learned.save_model] and
    read back by [`load_model`][pipeline.nlp.learned.load_model].

    Attributes:
        weights: Feature name -> logistic regression weight.
        gazetteer: The phrases of the training annotations.
        retype: Rule type -> the gold types it is also proposed as (seen at
            least [`MIN_RETYPE`][pipeline.nlp.learned.MIN_RETYPE] times).
        threshold_rule: Least probability for a rule annotation's own forms
            (as proposed or re-typed).
        threshold_new: Least probability for re-bounded, gazetteer and
            anchored candidates.
        meta: Training configuration and sizes; after
            [`load_model`][pipeline.nlp.learned.load_model], the whole ``meta.json``.
        anchors: ``"L|<rule type>"`` / ``"R|<rule type>"`` -> types of anchored
            candidates (see the module docstring); empty unless trained with
            ``anchored``.
    """

    weights: dict[str, float]
    gazetteer: Gazetteer
    retype: dict[str, list[str]]
    threshold_rule: float
    threshold_new: float
    meta: dict[str, Any] = field(default_factory=dict)
    anchors: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Candidate:
    span: tuple[Span, ...]
    type: str
    kind: str  # "rule" (as proposed or re-typed), "rebound" (a rule span moved by a token or two), "gazetteer",
    # "anchored" (a longer span sharing an edge with a rule annotation)
    group: int  # index of the rule annotation it comes from (anchored: 2 * index + direction); -1 for gazetteer
    rule: Annotation | None
    features: tuple[str, ...]


# --- tokens and gazetteer -----------------------------------------------------------------


def tokens(text: str) -> list[tuple[str, int, int]]:
    """Split a text into the classifier's tokens.

    Args:
        text: A sentence text.

    Returns:
        ``(lower-cased token, start, end)`` triples for word runs and single
            punctuation characters; ``start``/``end`` are half-open offsets into ``text``.
    """
    return [(m.group().lower(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _inside(toks: Sequence[tuple[str, int, int]], start: int, end: int) -> tuple[int, int]:
    """The index range ``[lo, hi)`` of the tokens lying within [start, end) (empty when ``lo >= hi``).

    Tokens are sorted and do not overlap, so both their starts and their ends increase: two binary
    searches find them (a scan of every token per span made a long text quadratic).
    """
    return bisect_left(toks, start, key=lambda t: t[1]), bisect_right(toks, end, key=lambda t: t[2])


def _phrase(toks: Sequence[tuple[str, int, int]], start: int, end: int) -> tuple[str, ...] | None:
    """The token tuple exactly covering [start, end), or None when the span does not fall on token bounds."""
    lo, hi = _inside(toks, start, end)
    if lo >= hi or toks[lo][1] != start or toks[hi - 1][2] != end:
        return None
    return tuple(t[0] for t in toks[lo:hi])


def _contiguous(a: Annotation) -> Span | None:
    return a.fragments[0] if len(a.fragments) == 1 else None


def build_gazetteer(examples: Iterable[Example]) -> Gazetteer:
    """Build the gazetteer of the contiguous gold entities of examples.

    Args:
        examples: Training examples.

    Returns:
        The phrases (at most [`MAX_GAZ_TOKENS`][pipeline.nlp.learned.MAX_GAZ_TOKENS]
            tokens, on token bounds, with a word) of their contiguous gold
            entities, per type, and how often each phrase occurs in their texts.
    """
    examples = list(examples)
    gaz = Gazetteer()
    for ex in examples:
        toks = tokens(ex.text)
        for a in ex.gold:
            span = _contiguous(a)
            phrase = _phrase(toks, *span) if span else None
            if phrase and len(phrase) <= MAX_GAZ_TOKENS and any(w[0].isalnum() for w in phrase):
                gaz.annotated.setdefault(phrase, Counter())[a.type] += 1
    for ex in examples:
        for phrase, _s, _e in _matches(gaz, tokens(ex.text)):
            gaz.occurrences[phrase] += 1
    return gaz


def _matches(gaz: Gazetteer, toks: Sequence[tuple[str, int, int]]) -> Iterator[tuple[tuple[str, ...], int, int]]:
    words = [t[0] for t in toks]
    for i in range(len(toks)):
        for n in range(1, min(MAX_GAZ_TOKENS, len(toks) - i) + 1):
            phrase = tuple(words[i:i + n])
            if phrase in gaz.annotated:
                yield phrase, toks[i][1], toks[i + n - 1][2]


# --- candidates and features --------------------------------------------------------------


def _bucket(n: int, edges: Sequence[int]) -> str:
    for e in edges:
        if n <= e:
            return f"<={e}"
    return f">{edges[-1]}"


def _shape(text: str) -> str:
    s = re.sub(r"[A-Z]+", "A", text)
    s = re.sub(r"[a-z]+", "a", s)
    s = re.sub(r"[0-9]+", "0", s)
    return s[:12]


#: Tokens a re-bounded span never takes in at its edge (clause and list punctuation).
_EDGE_STOP = frozenset({",", ";", ":", ".", "and", "or", "but", "which", "that", "was", "were", "is", "are"})


def _rebounds(toks: Sequence[tuple[str, int, int]], start: int, end: int) -> list[tuple[Span, str, str]]:
    """Spans one or two tokens wider or one token narrower at either edge: (span, edit, words changed)."""
    bounds = _token_range(toks, start, end)
    if bounds is None:
        return []
    a, b = bounds
    out: list[tuple[Span, str, str]] = []
    for n in (1, 2):
        if a - n >= 0 and not {t[0] for t in toks[a - n:a]} & _EDGE_STOP:
            out.append(((toks[a - n][1], end), f"L+{n}", " ".join(t[0] for t in toks[a - n:a])))
        if b + n < len(toks) and not {t[0] for t in toks[b + 1:b + n + 1]} & _EDGE_STOP:
            out.append(((start, toks[b + n][2]), f"R+{n}", " ".join(t[0] for t in toks[b + 1:b + n + 1])))
    if b > a:
        out.append(((toks[a + 1][1], end), "L-1", toks[a][0]))
        out.append(((start, toks[b - 1][2]), "R-1", toks[b][0]))
    return out


#: Tokens an anchored candidate never takes in (clause punctuation, conjunctions, finite verbs of "to be").
_ANCHOR_STOP = frozenset({",", ";", ":", ".", "and", "or", "but", "which", "that", "was", "were", "is", "are",
                          "whereas", "while", "than"})


def _token_range(toks: Sequence[tuple[str, int, int]], start: int, end: int) -> tuple[int, int] | None:
    lo, hi = _inside(toks, start, end)
    if lo >= hi or toks[lo][1] != start or toks[hi - 1][2] != end:
        return None
    return lo, hi - 1


def _anchored(toks: Sequence[tuple[str, int, int]], start: int, end: int
              ) -> Iterator[tuple[str, int, Span, str]]:
    """(direction, tokens added, span, connecting word) of the anchored spans of [start, end)."""
    bounds = _token_range(toks, start, end)
    if bounds is None:
        return
    a, b = bounds
    for n in range(1, MAX_ANCHOR_TOKENS + 1):
        if a - n < 0 or toks[a - n][0] in _ANCHOR_STOP:
            break
        if toks[a - n][0][0].isalnum():
            yield "L", n, (toks[a - n][1], end), toks[a - 1][0]
    for n in range(1, MAX_ANCHOR_TOKENS + 1):
        if b + n >= len(toks) or toks[b + n][0] in _ANCHOR_STOP:
            break
        if toks[b + n][0][0].isalnum() or toks[b + n][0] == ")":
            yield "R", n, (start, toks[b + n][2]), toks[b + 1][0]


def _anchor_table(examples: Iterable[Example]) -> dict[str, list[str]]:
    """``"L|<rule type>"``/``"R|<rule type>"`` -> gold types of anchored spans seen at least MIN_ANCHOR times."""
    seen: Counter[tuple[str, str]] = Counter()
    for ex in examples:
        toks = tokens(ex.text)
        gold = {(_contiguous(a), a.type) for a in ex.gold if _contiguous(a)}
        for r in ex.rules:
            span = _contiguous(r)
            if span is None:
                continue
            for direction, _n, cand, _w in _anchored(toks, *span):
                for g_span, g_type in gold:
                    if g_span == cand:
                        seen[(f"{direction}|{r.type}", g_type)] += 1
    table: dict[str, list[str]] = defaultdict(list)
    for (key, type_), n in sorted(seen.items()):
        if n >= MIN_ANCHOR:
            table[key].append(type_)
    return dict(table)


class _RuleSpans:
    """The rule annotations' outer spans ``(start, end, type)``, sorted by start for binary searches.

    A candidate asks which of them it lies inside and which it covers; a scan of every rule span per
    candidate made a long text with many annotations quadratic.
    """

    def __init__(self, spans: Sequence[tuple[int, int, str]]) -> None:
        self.spans = sorted(spans)
        self.starts = [s for s, _e, _t in self.spans]
        # reach[i]: the furthest end among the first i spans (the ones starting before self.starts[i])
        self.reach = [-1]
        for _s, e, _t in self.spans:
            self.reach.append(max(self.reach[-1], e))

    def inside(self, start: int, end: int) -> bool:
        """Whether some rule span other than [start, end) itself contains [start, end)."""
        before = bisect_left(self.starts, start)
        if self.reach[before] >= end:  # one starting strictly before start reaches end
            return True
        same = range(before, bisect_right(self.starts, start))
        return any(self.spans[i][1] > end for i in same)

    def covered(self, start: int, end: int) -> list[str]:
        """The types of the rule spans other than [start, end) itself that lie within [start, end)."""
        lo, hi = bisect_left(self.starts, start), bisect_right(self.starts, end)
        return [t for s, e, t in self.spans[lo:hi] if e <= end and (s, e) != (start, end)]


def _candidates(
    text: str, rules: Sequence[Annotation], gaz: Gazetteer, retype: dict[str, list[str]],
    anchors: dict[str, list[str]] | None = None,
) -> list[_Candidate]:
    """Candidates of one text (see the module docstring) with their features."""
    toks = tokens(text)
    # (fragments, type) -> (rule annotation, kind, group, edit features)
    pool: dict[tuple[tuple[Span, ...], str], tuple[Annotation | None, str, int, tuple[str, ...]]] = {}
    for g, a in enumerate(rules):
        pool.setdefault((a.fragments, a.type), (a, "rule", g, ()))
        for t in retype.get(a.type, []):
            pool.setdefault((a.fragments, t), (a, "rule", g, ()))
    for g, a in enumerate(rules):
        if len(a.fragments) == 1:
            for span, edit, changed in _rebounds(toks, *a.fragments[0]):
                edit_f: tuple[str, ...] = (f"edit={edit}|{a.type}", f"editw={edit}:{changed}|{a.type}",
                          f"editshape={edit}:{_shape(changed)}|{a.type}")
                pool.setdefault(((span,), a.type), (a, "rebound", g, edit_f))
    for g, a in enumerate(rules):
        if len(a.fragments) != 1 or not anchors:
            continue
        for direction, n, span, word in _anchored(toks, *a.fragments[0]):
            for t in anchors.get(f"{direction}|{a.type}", []):
                anc_f = (f"anc={direction}|{a.type}>{t}", f"ancn={direction}{_bucket(n, (1, 2, 3))}|{t}",
                         f"ancw={direction}:{word}|{t}", f"ancwt={direction}:{word}|{a.type}>{t}")
                pool.setdefault(((span,), t), (a, "anchored", 2 * g + (direction == "R"), anc_f))
    gaz_spans: set[tuple[Span, ...]] = set()
    for phrase, s, e in _matches(gaz, toks):
        gaz_spans.add(((s, e),))
        for t in gaz.annotated[phrase]:
            pool.setdefault((((s, e),), t), (None, "gazetteer", -1, ()))
    rule_spans = _RuleSpans([(a.fragments[0][0], a.fragments[-1][1], a.type) for a in rules])
    out = []
    for (frags, type_), (rule, kind, group, edit_f) in sorted(pool.items()):
        start, end = frags[0][0], frags[-1][1]
        f: list[str] = ["bias", f"t={type_}", f"src={kind}|{type_}", *edit_f]
        if rule is not None:
            f += [f"rule={(rule.rule or rule.source).split(':')[0]}|{kind}|{type_}",
                  f"rulefull={rule.rule}|{kind}|{type_}", f"ruletype={rule.type}>{type_}",
                  f"orig={rule.original_type}|{kind}|{type_}"]
            if len(frags) > 1:
                f.append(f"discontiguous|{type_}")
        if ((start, end),) in gaz_spans:
            f.append(f"ingaz|{type_}")
        lo, hi = _inside(toks, start, end)
        words = [t[0] for t in toks[lo:hi]] or [text[start:end].lower()]
        f += [f"w={w}|{type_}" for w in sorted(set(words))]
        f += [f"first={words[0]}|{type_}", f"last={words[-1]}|{type_}", f"len={_bucket(len(words), (1, 2, 3, 5, 8))}"
              f"|{type_}", f"shape={_shape(text[start:end])}|{type_}"]
        last_before, first_after = bisect_right(toks, start, key=lambda t: t[2]) - 1, \
            bisect_left(toks, end, key=lambda t: t[1])
        before = [toks[last_before][0]] if last_before >= 0 else ["<s>"]
        after = [toks[first_after][0]] if first_after < len(toks) else ["</s>"]
        f += [f"prev={before[0]}|{type_}", f"next={after[0]}|{type_}"]
        phrase = tuple(words)
        ann, occ = gaz.rate(phrase, type_)
        other = sum(gaz.annotated.get(phrase, Counter()).values()) - ann
        if occ:
            f += [f"gazrate={_bucket(round(10 * ann / occ), (0, 2, 4, 6, 8, 10))}|{type_}",
                  f"gazocc={_bucket(occ, (1, 2, 4, 8))}|{type_}"]
        else:
            f.append(f"gaznone|{type_}")
        if other:
            f.append(f"gazother|{type_}")
        inside = rule_spans.inside(start, end)
        covers = rule_spans.covered(start, end)
        if inside:
            f.append(f"inside_rule|{type_}")
        f += [f"covers={t}|{type_}" for t in sorted(set(covers))]
        out.append(_Candidate(frags, type_, kind, group, rule, tuple(f)))
    return out


def _decide(scored: Sequence[tuple[_Candidate, float]], threshold_rule: float, threshold_new: float
            ) -> list[tuple[_Candidate, float]]:
    """Accepted candidates: per rule annotation the best of its own (re-typed) and re-bounded forms.

    Then gazetteer candidates; one type per span (the most probable).
    """
    best_rule: dict[int, tuple[float, int]] = {}
    best_move: dict[int, tuple[float, int]] = {}
    best_anchored: dict[int, tuple[float, int]] = {}
    accepted: list[tuple[_Candidate, float]] = []
    for i, (c, p) in enumerate(scored):
        if c.kind == "rule" and p >= threshold_rule and (c.group not in best_rule or p > best_rule[c.group][0]):
            best_rule[c.group] = (p, i)
        elif c.kind == "rebound" and p >= threshold_new and (c.group not in best_move or p > best_move[c.group][0]):
            best_move[c.group] = (p, i)
        elif c.kind == "gazetteer" and p >= threshold_new:
            accepted.append((c, p))
        elif c.kind == "anchored" and p >= threshold_new and (
            c.group not in best_anchored or p > best_anchored[c.group][0]
        ):
            best_anchored[c.group] = (p, i)
    accepted += [scored[i] for _g, (_p, i) in sorted(best_anchored.items())]
    for g in sorted(set(best_rule) | set(best_move)):
        options = [x for x in (best_rule.get(g), best_move.get(g)) if x is not None]
        _p, i = max(options)
        accepted.append(scored[i])
    by_span: dict[tuple[Span, ...], tuple[_Candidate, float]] = {}
    for c, p in accepted:
        if c.span not in by_span or p > by_span[c.span][1]:
            by_span[c.span] = (c, p)
    return [by_span[k] for k in sorted(by_span)]


# --- logistic regression ------------------------------------------------------------------


def _score(weights: dict[str, float], features: Sequence[str]) -> float:
    return sigmoid(sum(weights.get(f, 0.0) for f in features))


def _fit(rows: Sequence[tuple[tuple[str, ...], int]], c: float) -> dict[str, float]:
    """The shared L2 logistic regression; a feature repeated in a row counts as often as ``_score`` adds it."""
    return fit_logistic([(Counter(feats), y) for feats, y in rows], c)


def _labelled(ex: Example, gaz: Gazetteer, retype: dict[str, list[str]], anchors: dict[str, list[str]] | None = None
              ) -> list[tuple[_Candidate, int]]:
    gold = {(a.fragments, a.type) for a in ex.gold}
    return [(c, int((c.span, c.type) in gold)) for c in _candidates(ex.text, ex.rules, gaz, retype, anchors)]


def _retype_table(examples: Iterable[Example]) -> dict[str, list[str]]:
    seen: Counter[tuple[str, str]] = Counter()
    for ex in examples:
        gold: dict[tuple[Span, ...], set[str]] = defaultdict(set)
        for a in ex.gold:
            gold[a.fragments].add(a.type)
        for a in ex.rules:
            for t in gold.get(a.fragments, set()) - {a.type}:
                seen[(a.type, t)] += 1
    table: dict[str, list[str]] = defaultdict(list)
    for (src, dst), n in sorted(seen.items()):
        if n >= MIN_RETYPE:
            table[src].append(dst)
    return dict(table)


def _cross_fitted(examples: Sequence[Example], retype: dict[str, list[str]], config: TrainConfig,
                  anchors: dict[str, list[str]] | None = None) -> list[list[tuple[_Candidate, int]]]:
    """Labelled candidates of every example, gazetteer features from the other inner folds only."""
    names = [ex.name for ex in examples]
    by_name = {ex.name: ex for ex in examples}
    k = min(config.inner_folds, len({n.split("_", 1)[0] for n in names}))
    if k < 2:  # too little data for cross-fitting: no gazetteer knowledge at all
        return [_labelled(ex, Gazetteer(), retype, anchors) for ex in examples]
    folds = kfold_groups(names, k=k, seed=config.seed)
    labelled: dict[str, list[tuple[_Candidate, int]]] = {}
    for fold in folds:
        held = set(fold)
        gaz = build_gazetteer(by_name[n] for n in names if n not in held)
        for n in fold:
            labelled[n] = _labelled(by_name[n], gaz, retype, anchors)
    return [labelled[n] for n in names]


def _best_thresholds(docs: Sequence[Sequence[tuple[_Candidate, float, int]]], n_gold: int
                     ) -> tuple[float, float, float]:
    """Thresholds (rule, new) maximising exact/same F1 over ``n_gold`` gold entities (per-document candidates).

    Returns ``(threshold_rule, threshold_new, F1)``.
    """
    grid = [x / 10 for x in range(1, 10)]
    best = (-1.0, 0.5, 0.5)
    for tr in grid:
        for tn in grid:
            tp = fp = 0
            for doc in docs:
                labels = {(c.span, c.type): y for c, _p, y in doc}
                for c, _p in _decide([(c, p) for c, p, _y in doc], tr, tn):
                    y = labels[(c.span, c.type)]
                    tp += y
                    fp += 1 - y
            f1 = 2 * tp / (2 * tp + fp + (n_gold - tp)) if n_gold + fp else 0.0
            if f1 > best[0] + 1e-12:  # ties go to the lower thresholds (keep more of what the rules propose)
                best = (f1, tr, tn)
    return best[1], best[2], best[0]


def train(examples: Sequence[Example], config: TrainConfig | None = None) -> LearnedModel:
    """Fit the candidate classifier, its L2 strength and its thresholds on ``examples`` (training data only).

    The L2 strength (unless ``config.c`` fixes it) and the thresholds come from inner cross-validated
    probabilities (models trained on the other inner folds, by PMID), so no threshold ever sees its own
    training sentence: for each strength of [`C_GRID`][pipeline.nlp.learned.C_GRID], the thresholds with
    the best exact/same F1 of the held-out inner folds; the strength with the best such F1 wins (ties: the
    stronger regularisation).  With fewer than two PMIDs both thresholds stay 0.5 and the strength is the
    grid's middle.  The final weights are fitted on all of ``examples``.

    Args:
        examples: The training sentences (any order: they are sorted by name).
        config: Training settings; ``None`` for the defaults.

    Returns:
        The model, with the training configuration, the strength chosen, the inner F1 of each candidate
            strength and sizes in ``meta``.

    Raises:
        ValueError: If ``examples`` is empty.
    """
    config = config or TrainConfig()
    if not examples:
        raise ValueError("no training sentences")
    examples = sorted(examples, key=lambda ex: ex.name)
    retype = _retype_table(examples)
    anchors = _anchor_table(examples) if config.anchored else {}
    labelled = _cross_fitted(examples, retype, config, anchors)
    rows = [(c.features, y) for doc in labelled for c, y in doc]
    names = [ex.name for ex in examples]
    k = min(config.inner_folds, len({n.split("_", 1)[0] for n in names}))
    grid = (config.c,) if config.c is not None else C_GRID
    chosen = (-1.0, grid[len(grid) // 2], 0.5, 0.5)  # (inner F1, C, threshold_rule, threshold_new)
    inner_f1: dict[str, float] = {}
    if k >= 2:
        folds = kfold_groups(names, k=k, seed=config.seed + 1)
        index = {n: i for i, n in enumerate(names)}
        n_gold = sum(len(ex.gold) for ex in examples)
        for c in sorted(grid):
            scored: list[list[tuple[_Candidate, float, int]]] = []
            for fold in folds:
                held = set(fold)
                inner = _fit([(cand.features, y) for n in names if n not in held for cand, y in labelled[index[n]]],
                             c)
                scored += [[(cand, _score(inner, cand.features), y) for cand, y in labelled[index[n]]] for n in fold]
            threshold_rule, threshold_new, f1 = _best_thresholds(scored, n_gold)
            inner_f1[str(c)] = round(100 * f1, 2)
            if f1 > chosen[0] + 1e-12:  # ascending C: ties go to the stronger regularisation
                chosen = (f1, c, threshold_rule, threshold_new)
    _f1, c_chosen, threshold_rule, threshold_new = chosen
    weights = _fit(rows, c_chosen)
    gaz = build_gazetteer(examples)
    return LearnedModel(weights, gaz, retype, threshold_rule, threshold_new,
                        meta={"train_config": config.as_dict(), "c": c_chosen, "c_grid": list(grid),
                              "inner_f1_by_c": inner_f1, "sentences": len(examples),
                              "candidates": len(rows), "positives": sum(y for _f, y in rows),
                              "features": len(weights)}, anchors=anchors)


def predict(model: LearnedModel, text: str, rules: Sequence[Annotation], counts: Counter[str] | None = None
            ) -> list[Annotation]:
    """Annotate one text: accepted rule candidates (as they were, re-typed or re-bounded) and added ones.

    Args:
        model: The trained model.
        text: A sentence text.
        rules: The rules' annotations of ``text``: half-open offsets relative to ``text``.
        counts: Counter incremented with the module's ``learned_*`` count
            keys; ``None``: not counted.

    Returns:
        The accepted annotations, offsets relative to ``text``, sorted by
            (fragments, type).  Kept rule annotations are the same objects;
            re-typed and re-bounded ones are copies whose ``rule`` ends in
            ``+learned`` / ``+learned:rebound``; added ones have source
            ``learned``.
    """
    counts = counts if counts is not None else Counter()
    cands = _candidates(text, rules, model.gazetteer, model.retype, model.anchors)
    counts["learned_candidates"] += len(cands)
    chosen = _decide([(c, _score(model.weights, c.features)) for c in cands], model.threshold_rule,
                     model.threshold_new)
    out: list[Annotation] = []
    kept_rules: set[int] = set()
    for c, _p in chosen:
        if c.kind == "anchored":
            s, e = c.span[0]
            out.append(Annotation(c.span, c.type, SOURCE, text=text[s:e], rule="learned:anchored"))
            counts["learned_anchored"] += 1
        elif c.kind == "rule" and c.rule is not None and c.type == c.rule.type:
            out.append(c.rule)
            kept_rules.add(id(c.rule))
            counts["learned_kept_rule"] += 1
        elif c.kind == "rule" and c.rule is not None:
            out.append(replace(c.rule, type=c.type, rule=f"{c.rule.rule or c.rule.source}+learned"))
            kept_rules.add(id(c.rule))
            counts["learned_retyped"] += 1
        elif c.rule is not None:
            (s, e), = c.span
            out.append(replace(c.rule, fragments=c.span, text=text[s:e], rule=f"{c.rule.rule or c.rule.source}"
                               "+learned:rebound"))
            kept_rules.add(id(c.rule))
            counts["learned_rebound"] += 1
        else:
            s, e = c.span[0]
            out.append(Annotation(c.span, c.type, SOURCE, text=text[s:e], rule="learned:gazetteer"))
            counts["learned_added"] += 1
    counts["learned_dropped_rule"] += sum(1 for a in rules if id(a) not in kept_rules)
    return sorted(out, key=lambda a: (a.fragments, a.type))


def apply_documents(docs: Iterable[Document], model: LearnedModel, counts: Counter[str]) -> Iterator[Document]:
    """Pass the type-mapped annotations of documents through the model, sentence by sentence.

    Each sentence is handled on its own text: its annotations are shifted to
    sentence-relative offsets for [`predict`][pipeline.nlp.learned.predict] and back to
    document-relative ones.  Annotations crossing a sentence boundary, and
    those of a document without sentences, are left as they are.

    Args:
        docs: Documents with sentences and document-relative, type-mapped annotations.
        model: The trained model.
        counts: Counter incremented with the module's ``learned_*`` count keys.

    Yields:
        Each document, in input order, with its annotations replaced by the
            model's (document-relative, sorted by fragments and type); its other
            fields, relations included, are left as they are.
    """
    for doc in docs:
        if not doc.sentences:
            yield doc
            continue
        rest = list(doc.annotations)
        out: list[Annotation] = []
        for sent in doc.sentences:
            inside = [a for a in rest if a.fragments[0][0] >= sent.start and a.fragments[-1][1] <= sent.end]
            ids = {id(a) for a in inside}
            rest = [a for a in rest if id(a) not in ids]
            shifted = [_shift(a, -sent.start) for a in inside]
            out += [_shift(a, sent.start) for a in predict(model, doc.text[sent.start:sent.end], shifted, counts)]
        yield replace(doc, annotations=tuple(sorted(out + rest, key=lambda a: (a.fragments, a.type))))


def _shift(a: Annotation, delta: int) -> Annotation:
    frags = tuple((s + delta, e + delta) for s, e in a.fragments)
    key = tuple((s + delta, e + delta) for s, e in a.key) if a.key else a.key
    return replace(a, fragments=frags, key=key)


# --- model directory ----------------------------------------------------------------------


def training_hash(examples: Iterable[Example]) -> str:
    """Hash the training sentences.

    Args:
        examples: The training examples (any order).

    Returns:
        Hex SHA-256 over each example's name, text and sorted gold (fragments,
            type), in name order; rule annotations are not included.
    """
    digest = hashlib.sha256()
    for ex in sorted(examples, key=lambda e: e.name):
        gold = sorted((a.fragments, a.type) for a in ex.gold)
        digest.update(json.dumps([ex.name, ex.text, gold]).encode())
    return digest.hexdigest()


def save_model(model: LearnedModel, directory: str | Path, meta: dict[str, Any]) -> Path:
    """Write ``model.json`` and ``meta.json`` under ``directory``.

    Both are written into a staging directory beside it that replaces ``directory`` in one step
    ([`publish_directory`][pipeline.durable.publish_directory]): a reader sees the previous model or the
    new one, never a model without its meta; the staging copies of killed runs are removed.  A directory
    that holds other files too is never replaced: its two files are each written beside themselves and
    renamed, meta last.  Same model and meta, same bytes.

    Args:
        model: The model to write.
        directory: The model directory (created or replaced).
        meta: Extra entries of ``meta.json`` (training-data SHA-256, versions...),
            merged over ``model.meta``; ``model_sha256`` is added.

    Returns:
        ``directory``, as a path.
    """
    final = Path(directory)
    ours = {MODEL_FILE, META_FILE}
    swap = not final.exists() or (final.is_dir() and not final.is_symlink()
                                  and {p.name for p in final.iterdir()} <= ours)
    out = durable.staging_directory(final) if swap else final
    for name in sorted(ours) if not swap else ():
        durable.clean_leftovers(out, name)  # what a killed save left beside the files it writes in place
    payload = {
        "format": FORMAT,
        "threshold_rule": model.threshold_rule,
        "threshold_new": model.threshold_new,
        "retype": model.retype,
        "anchors": model.anchors,
        "weights": model.weights,
        "gazetteer": sorted(
            [" ".join(p), dict(sorted(c.items())), model.gazetteer.occurrences.get(p, 0)]
            for p, c in model.gazetteer.annotated.items()
        ),
    }
    durable.replace_file(out / MODEL_FILE, (json.dumps(payload, sort_keys=True, indent=0) + "\n").encode("utf-8"))
    full_meta = {"format": FORMAT, **model.meta, **meta,
                 "model_sha256": hashlib.sha256((out / MODEL_FILE).read_bytes()).hexdigest()}
    durable.replace_file(out / META_FILE, (json.dumps(full_meta, sort_keys=True, indent=2) + "\n").encode("utf-8"))
    if swap:
        durable.publish_directory(out, final)
    return final


def load_model(directory: str | Path) -> LearnedModel:
    """Read a model directory written by [`save_model`][pipeline.nlp.learned.save_model].

    Args:
        directory: The model directory.

    Returns:
        The model; its ``meta`` is the whole ``meta.json``.

    Raises:
        ValueError: If ``model.json`` or ``meta.json`` is missing or not JSON,
            or the format is another; the message names the directory or file.
    """
    path = Path(directory) / MODEL_FILE
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        meta = json.loads((Path(directory) / META_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{directory}: not a learned model directory ({exc})") from exc
    if payload.get("format") != FORMAT:
        raise ValueError(f"{path}: format {payload.get('format')!r}, expected {FORMAT!r}")
    gaz = Gazetteer()
    for phrase, types, occ in payload["gazetteer"]:
        key = tuple(phrase.split(" "))
        gaz.annotated[key] = Counter(types)
        gaz.occurrences[key] = occ
    return LearnedModel(payload["weights"], gaz, payload["retype"], payload["threshold_rule"],
                        payload["threshold_new"], meta, anchors=payload.get("anchors", {}))


def model_files(directory: str | Path) -> list[str]:
    """List the files of a model directory whose content decides its predictions (for output hashes).

    Args:
        directory: The model directory.

    Returns:
        The paths of ``model.json`` and ``meta.json`` (whether or not they exist).
    """
    return [str(Path(directory) / MODEL_FILE), str(Path(directory) / META_FILE)]


# --- the shipped model and what a model was trained with --------------------------------------

SHIPPED_DIR = resources.config_file("learned")
"""The shipped models: ``SHIPPED_DIR/<key source>/``, trained on PGxCorpus dev and more (see the retrain how-to)."""
SHIPPED = ""
"""``build --learned``'s default (no value): the shipped model of the build's key-entity source, when there is one."""
NONE = "none"
"""``build --learned none``: no learned model."""
KEY_SOURCES = {"local": "local", "pubtator-api": "pubtator", "pubtator-file": "pubtator"}
"""Build annotator -> the key-entity source a model records (``meta.json``'s ``key_source``)."""


def key_source(annotator: str) -> str:
    """Name the key-entity source of a build's annotator, as a model's meta records it.

    Args:
        annotator: ``build --annotator``'s value (``local``, ``pubtator-api``, ``pubtator-file``).

    Returns:
        ``local`` or ``pubtator``.

    Raises:
        ValueError: For another annotator.
    """
    try:
        return KEY_SOURCES[annotator]
    except KeyError:
        raise ValueError(f"unknown annotator {annotator!r}: one of {', '.join(sorted(KEY_SOURCES))}") from None


def schema_digest(schema_path: str | Path) -> str:
    """Hash a schema file (what a model's meta records as ``schema_sha256``).

    Args:
        schema_path: The schema file.

    Returns:
        The hex SHA-256 of its bytes.

    Raises:
        OSError: If it cannot be read.
    """
    return hashlib.sha256(Path(schema_path).read_bytes()).hexdigest()


def resolve(learned: str, annotator: str, schema_path: str | Path | None = None) -> str:
    """Turn ``build --learned``'s value into the model directory the build applies, or ``""`` for none.

    Args:
        learned: [`SHIPPED`][pipeline.nlp.learned.SHIPPED] (``""``), [`NONE`][pipeline.nlp.learned.NONE],
            or a model directory.
        annotator: The build's annotator.
        schema_path: The build's schema file; a shipped model trained with another schema is not the
            default of such a build (None: not checked).

    Returns:
        For ``""``, ``SHIPPED_DIR/<key source>`` when it holds a model for the annotator's key-entity
            source trained with the build's schema, else ``""`` (the rules alone, as with ``none``); ``""``
            for ``none``; any other value as given (a model named explicitly is checked by
            [`check_trained_with`][pipeline.nlp.learned.check_trained_with] and refused on a mismatch).
            No side effect.
    """
    if learned == NONE:
        return ""
    if learned == SHIPPED:
        directory = SHIPPED_DIR / KEY_SOURCES.get(annotator, annotator)
        if not (directory / MODEL_FILE).is_file():
            return ""
        if schema_path is not None:
            try:
                trained = json.loads((directory / META_FILE).read_text(encoding="utf-8")).get("schema_sha256")
                if trained != schema_digest(schema_path):
                    return ""  # a custom schema: the shipped model does not apply (its types may not exist)
            except (OSError, ValueError, AttributeError):
                return str(directory)  # unreadable: the build's check names the file
        return str(directory)
    return learned


def check_trained_with(model: LearnedModel, directory: str | Path, schema_path: str | Path, annotator: str
                       ) -> str | None:
    """Say why a model must not be applied to a build, or None when it may.

    Args:
        model: The loaded model (its ``meta`` is its ``meta.json``).
        directory: Its directory (named in the message).
        schema_path: The build's schema file.
        annotator: The build's annotator.

    Returns:
        ``None`` when the model's ``meta.json`` records the build's schema digest and key-entity source;
            else a message naming ``meta.json``: the two differ, or the meta does not record them (a model
            trained before they were recorded: retrain it).

    Raises:
        OSError: If the schema file cannot be read.
    """
    meta_file = Path(directory) / META_FILE
    want_schema, want_keys = schema_digest(schema_path), key_source(annotator)
    have_schema, have_keys = model.meta.get("schema_sha256"), model.meta.get("key_source")
    if have_schema is None or have_keys is None:
        return (f"{meta_file}: records no schema_sha256 or key_source (trained before they were recorded): "
                "retrain it with `pgx-corpus train`")
    if have_schema != want_schema:
        return (f"{meta_file}: trained with another schema (sha256 {have_schema[:12]}...) than the build's "
                f"{schema_path} ({want_schema[:12]}...)")
    if have_keys != want_keys:
        return (f"{meta_file}: trained with {have_keys} key entities; the build's annotator {annotator} gives "
                f"{want_keys} ones")
    return None
