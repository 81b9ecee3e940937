"""Probe (not a test): can composite extensions be learned as syntactic patterns from dev and more (650 sentences)?

Most entities the rules miss are composites around an annotation the rules did make ("reduced CYP2D6
activity" around "CYP2D6 activity", "mRNA levels of FLG" around "levels of FLG"). This probe asks
whether those extensions can be learned as dependency patterns, the most general form a learner
could find them in, instead of as words (the classifier in :mod:`pipeline.nlp.learned`).

Candidates: for every rule annotation (PubTator keys + extension + mapping, as ``build`` makes
them), its syntactic head in the spaCy parse of the sentence (the token whose governor is outside
the annotation), and that head's governor when the annotation modifies a word outside it. Each
candidate span widens the annotation by adding the head's contiguous left dependents, nearest
first, and then its contiguous right dependents (not across punctuation, a conjunction or a
clause). Spans equal to a rule annotation and spans of more than 13 tokens are left out. A
candidate's pattern is (anchor type, head or governor with dependency label and POS, the
outermost left and right dependency labels and POS added, how many were added on each side).

Prints:

* the ceiling of the learned classifier's own candidates (:mod:`pipeline.nlp.learned`: rule
  annotations, re-typed, re-bounded, gazetteer phrases learned on the training folds; and with
  ``--anchored``'s candidates): the out-of-fold F1 of keeping exactly those that are gold, i.e. of a
  perfect classifier;
* how many pattern candidates there are and how many are gold spans. Their union with the rules is
  the ceiling: the F1 that a perfect selection among these candidates would reach;
* the in-sample precision of the best patterns (support at least 3), which is the most a pattern
  could show with all 650 sentences as training data;
* 5-fold out-of-fold Table 10 F1 of the rules plus every candidate whose pattern reached a
  precision threshold with enough support on the training folds. The candidate gets the gold type
  most often given to that pattern. The whole grid of (support, threshold) is printed, because
  choosing one setting on the held-out folds would be optimistic.  Each row also gives the entity edits
  per 100 sentences (pipeline.brat.edits) on both sets together, and the rules' figures are printed per
  set (the per-final-type table and the edits).

Usage: ``python bench/learned_pattern_probe.py [--model NAME]``
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from preannotation_agreement import (  # noqa: E402
    SETS,
    entity_edits,
    f1s,
    fmt,
    load_sentences,
    missing_sets,
    run,
    summarize,
)

from pipeline.brat.agreement import table10_scores  # noqa: E402
from pipeline.documents import Annotation  # noqa: E402
from pipeline.nlp import learned  # noqa: E402
from pipeline.nlp.folds import DEFAULT_K, DEFAULT_SEED, kfold_groups, train_test  # noqa: E402
from pipeline.nlp.ontology import DEFAULT_ONTOLOGY  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser  # noqa: E402

Span = tuple[int, int]
Pattern = tuple[str, str, str, str, int, int]
MAX_TOKENS = 13
#: Right dependents never added: they start another phrase or clause.
STOP_RIGHT = frozenset({"punct", "cc", "conj", "relcl", "acl", "advcl", "appos"})


def _label(tok: Any) -> str:
    return f"{tok.dep_}/{tok.pos_}"


def candidates(doc: Any, ann: Annotation) -> list[tuple[Span, Pattern]]:
    """Wider spans around a contiguous annotation, built from its head's (or governor's) dependents."""
    start, end = ann.fragments[0]
    toks = [t for t in doc if t.idx < end and t.idx + len(t) > start]
    if not toks:
        return []
    inside = {t.i for t in toks}
    head = next(t for t in toks if t.head.i not in inside or t.head.i == t.i)
    anchors = [(head, "self")]
    if head.head.i != head.i and head.head.i not in inside:
        anchors.append((head.head, f"up:{head.dep_}:{head.head.pos_}"))
    out: list[tuple[Span, Pattern]] = []
    for tok, how in anchors:
        lo, hi = min(tok.i, toks[0].i), max(tok.i, toks[-1].i)
        lefts: list[tuple[int, tuple[str, ...]]] = [(lo, ())]
        edge, labels = lo, cast(tuple[str, ...], ())
        for child in reversed(list(tok.lefts)):
            if child.right_edge.i >= lo:
                continue
            if child.right_edge.i != edge - 1:
                break
            edge, labels = child.left_edge.i, (*labels, _label(child))
            lefts.append((edge, labels))
        rights: list[tuple[int, tuple[str, ...]]] = [(hi, ())]
        edge, labels = hi, cast(tuple[str, ...], ())
        for child in tok.rights:
            if child.left_edge.i <= hi:
                continue
            if child.left_edge.i != edge + 1 or child.dep_ in STOP_RIGHT:
                break
            edge, labels = child.right_edge.i, (*labels, _label(child))
            rights.append((edge, labels))
        for left, llabels in lefts:
            for right, rlabels in rights:
                if (left, right) == (toks[0].i, toks[-1].i) or right - left >= MAX_TOKENS:
                    continue
                span = (doc[left].idx, doc[right].idx + len(doc[right]))
                pattern = (ann.type, how, llabels[-1] if llabels else "", rlabels[-1] if rlabels else "",
                           len(llabels), len(rlabels))
                out.append((span, pattern))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--k", type=int, default=DEFAULT_K)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    if missing := missing_sets():
        print(f"{', '.join(map(str, missing))} not found: PGxCorpus dev and more are needed (../shared); "
              "nothing measured")
        return 0
    t0 = time.perf_counter()
    docs, gold = load_sentences("pubtator")
    mapped = run(docs, extend=True, model=args.model, ontology_path=DEFAULT_ONTOLOGY, counts=Counter())
    nlp = load_parser(args.model)
    by_name = {d.pmid: d for d in mapped}
    gold_spans: dict[str, dict[Span, set[str]]] = defaultdict(dict)
    for name, anns in gold.items():
        for g in anns:
            if len(g.fragments) == 1:
                gold_spans[name].setdefault(g.fragments[0], set()).add(g.type)
    cands: dict[str, dict[Span, tuple[Pattern, Annotation]]] = {}
    for name, doc in zip(by_name, nlp.pipe(d.text for d in by_name.values()), strict=True):
        made = {a.fragments[0] for a in by_name[name].annotations if len(a.fragments) == 1}
        found: dict[Span, tuple[Pattern, Annotation]] = {}
        for a in by_name[name].annotations:
            if len(a.fragments) == 1:
                for span, pattern in candidates(doc, a):
                    if span not in made:
                        found.setdefault(span, (pattern, a))
        cands[name] = found
    n_cands = sum(len(c) for c in cands.values())
    hits = {name: [(span, pattern, a) for span, (pattern, a) in c.items() if span in gold_spans[name]]
            for name, c in cands.items()}
    n_hits = sum(len(h) for h in hits.values())
    rules_pairs = {n: (gold[n], list(d.annotations)) for n, d in by_name.items()}
    rules_f1 = f1s(table10_scores(rules_pairs.values()))
    ceiling = {n: (gold[n], list(by_name[n].annotations)
                   + [dataclasses.replace(a, fragments=(span,), type=sorted(gold_spans[n][span])[0])
                      for span, _p, a in hits[n]]) for n in by_name}
    folds = kfold_groups(by_name, k=args.k, seed=args.seed)
    examples = {n: learned.Example(n, d.text, tuple(gold[n]), d.annotations) for n, d in by_name.items()}
    print(f"# ceiling of the learned classifier's candidates, {args.k}-fold out of fold (gazetteer and tables "
          f"from the training folds; a perfect classifier keeps exactly the gold ones)")
    for anchored in (False, True):
        perfect: dict[str, tuple[list[Annotation], list[Annotation]]] = {}
        for i in range(args.k):
            train_names, test_names = train_test(folds, i)
            training = [examples[n] for n in train_names]
            gaz = learned.build_gazetteer(training)
            retype = learned._retype_table(training)
            anchors = learned._anchor_table(training) if anchored else None
            for n in test_names:
                ex = examples[n]
                offered = {(c.span, c.type) for c in learned._candidates(ex.text, ex.rules, gaz, retype, anchors)}
                perfect[n] = (list(ex.gold), [a for a in ex.gold if (a.fragments, a.type) in offered])
        label = "with anchored candidates" if anchored else "default candidates"
        print(f"  {label}: {fmt(f1s(table10_scores(perfect.values())))}")
    print(f"\n# syntactic extension patterns, dev and more ({len(by_name)} sentences, "
          f"{SETS['dev']} + {SETS['more']})")
    print(f"candidates: {n_cands}, of which gold spans: {n_hits} ({100 * n_hits / max(n_cands, 1):.1f} %)")
    print(f"rules: {fmt(rules_f1)}; ceiling (rules + every candidate that is a gold span, gold type): "
          f"{fmt(f1s(table10_scores(ceiling.values())))}")

    def pattern_stats(names: Sequence[str]) -> dict[Pattern, Counter[str]]:
        stats: dict[Pattern, Counter[str]] = defaultdict(Counter)
        for n in names:
            for span, (pattern, _a) in cands[n].items():
                stats[pattern]["n"] += 1
                for t in gold_spans[n].get(span, ()):
                    stats[pattern][t] += 1
        return stats

    def best(counter: Counter[str]) -> tuple[str, int]:
        typed = [(v, t) for t, v in counter.items() if t != "n"]
        if not typed:
            return "", 0
        v, t = max(typed)
        return t, v

    stats = pattern_stats(list(by_name))
    rows = sorted(((right / c["n"], right, c["n"], type_, p) for p, c in stats.items()
                   for type_, right in (best(c),) if c["n"] >= 3 and right), reverse=True)
    print(f"\npatterns with support >= 3: {sum(1 for c in stats.values() if c['n'] >= 3)}; "
          f"with in-sample precision >= 0.5: {sum(1 for r in rows if r[0] >= 0.5)}")
    print("best in-sample patterns (precision, right/support, gold type, pattern):")
    for prec, right, support, type_, pattern in rows[:10]:
        print(f"  {prec:.2f} {right}/{support} {type_:26} {pattern}")

    print(f"\n{args.k}-fold out of fold (seed {args.seed}, grouped by PMID): rules + candidates of patterns that "
          f"reached the threshold on the training folds")
    texts = {n: d.text for n, d in by_name.items()}
    names = sorted(by_name)

    def edits(pred: dict[str, Sequence[Annotation]]) -> str:
        return f"{100 * entity_edits(pred, texts, names).entity_edits / len(names):.1f}"

    print("| support >= | precision >= | exact/same / exact/any / partial/same / partial/any | added (right) "
          "| entity edits / 100 |")
    print("|---|---|---|---|---|")
    print(f"| - | - (rules alone) | {fmt(rules_f1)} | 0 | {edits({n: d.annotations for n, d in by_name.items()})} |")
    # per fold: the held-out names and, per pattern seen in training, (support, best gold type, right)
    fold_stats = []
    for i in range(args.k):
        train_names, test_names = train_test(folds, i)
        fold_stats.append((test_names, {p: (c["n"], *best(c)) for p, c in pattern_stats(train_names).items()}))
    for min_support in (3, 5):
        for threshold in (0.3, 0.4, 0.5):
            out: dict[str, tuple[list[Annotation], list[Annotation]]] = {}
            added: Counter[bool] = Counter()
            for test_names, training_stats in fold_stats:
                keep = {pattern: type_ for pattern, (support, type_, right) in training_stats.items()
                        if support >= min_support and right and right / support >= threshold}
                for n in test_names:
                    preds = list(by_name[n].annotations)
                    for span, (pattern, a) in sorted(cands[n].items()):
                        if pattern in keep:
                            preds.append(dataclasses.replace(a, fragments=(span,), type=keep[pattern],
                                                             rule="learned:pattern"))
                            added[keep[pattern] in gold_spans[n].get(span, ())] += 1
                    out[n] = (gold[n], preds)
            row = f1s(table10_scores(out.values()))
            print(f"| {min_support} | {threshold} | {fmt(row)} | {added[True] + added[False]} ({added[True]}) "
                  f"| {edits({n: p for n, (_g, p) in out.items()})} |")
    print(f"({time.perf_counter() - t0:.1f} s)")
    summarize([("rules (PubTator keys + extension + mapping)", {n: d.annotations for n, d in by_name.items()})],
              gold, texts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
