"""Probe (not a test): why the learned pre-annotation misses phenotypes, looked at on training folds only.

Issue 37 asks for an exact recall of at least 50% of Phenotype and Pharmacodynamic_phenotype. Before
anything is changed to get there, this probe says where each missed final entity is lost, without
looking at a held-out fold: one outer fold of the 5-fold split by PMID (``--held-out``) is left out
entirely, and the sentences of the other folds are split again into ``--inner`` folds by PMID; each
inner fold is predicted by a model (:mod:`pipeline.nlp.learned`) trained on the other inner folds, so
every sentence looked at is scored by a model that never saw it.

Each final entity of the chosen types (``--types``) falls in exactly one class:

* ``exact``: the model proposes it (same fragments and type);
* ``candidate, not accepted``: it is one of the model's candidates (rule annotation as proposed or
  re-typed, re-bounded span, gazetteer phrase) but the decision drops it (probability below the
  threshold of its kind, or another candidate of the same rule annotation or span wins), split by kind
  and by probability;
* ``right span, other types only``: candidates have its fragments, but none its type;
* ``boundary: overlapping candidates only``: no candidate has its fragments, some overlap them;
  split by how the overlapping rule annotations relate to it, and how many ``train --anchored``'s
  candidates would add;
* ``no overlapping candidate``.

The first two are what a better classifier or threshold can reach (the ceiling of the candidates); the
others need new candidates (extension rules or learned spans). Models are trained with a fixed L2
strength (``--c``, default 3; the shipped model's inner F1 differs by less than 0.3 points across
``C_GRID``) to keep the probe to a few minutes; their thresholds are chosen by ``train`` as usual.

Usage: ``python bench/learned_miss_probe.py [--held-out 0] [--inner 4] [--c 3.0] [--examples 12]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from preannotation_agreement import RECALL_TYPES, load_sentences, missing_sets, run  # noqa: E402

from pipeline.documents import Annotation  # noqa: E402
from pipeline.nlp import learned  # noqa: E402
from pipeline.nlp.folds import DEFAULT_K, DEFAULT_SEED, kfold_groups, train_test  # noqa: E402
from pipeline.nlp.ontology import DEFAULT_ONTOLOGY  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL  # noqa: E402

Key = tuple[tuple[tuple[int, int], ...], str]


def _overlaps(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> bool:
    return any(s < e2 and s2 < e for s, e in a for s2, e2 in b)


def _boundary_kind(gold: Annotation, text: str, rules: Sequence[Annotation]) -> str:
    """How the rule annotations overlapping ``gold`` relate to it (gold has no candidate of its span)."""
    over = [a for a in rules if _overlaps(a.fragments, gold.fragments)]
    if not over:
        return "only re-bounded or gazetteer candidates overlap"
    g0, g1 = gold.fragments[0][0], gold.fragments[-1][1]
    same = [(a.fragments[0][0], a.fragments[-1][1]) for a in over if a.type == gold.type]
    if any(g0 <= s and e <= g1 for s, e in same):
        return "wider than a rule annotation of its type"
    if any(s <= g0 and g1 <= e for s, e in same):
        return "narrower than a rule annotation of its type"
    if same:
        return "crossing a rule annotation of its type"
    if all(g0 <= a.fragments[0][0] and a.fragments[-1][1] <= g1 for a in over):
        return "built around other types' annotations (key entity inside)"
    return "crossing other types' annotations"


def classify(model: learned.LearnedModel, example: learned.Example, anchors: dict[str, list[str]],
             types: Sequence[str]) -> list[tuple[Annotation, str, str, float | None]]:
    """``(gold entity, class, detail, probability of its exact candidate)`` for the gold entities of ``types``."""
    cands = learned._candidates(example.text, example.rules, model.gazetteer, model.retype, model.anchors)
    prob = {(c.span, c.type): (learned._score(model.weights, c.features), c.kind) for c in cands}
    spans = {c.span for c in cands}
    predicted = {(a.fragments, a.type) for a in learned.predict(model, example.text, example.rules)}
    anchored = {(c.span, c.type) for c in learned._candidates(example.text, example.rules, model.gazetteer,
                                                               model.retype, anchors) if c.kind == "anchored"}
    out: list[tuple[Annotation, str, str, float | None]] = []
    for g in example.gold:
        if g.type not in types:
            continue
        key: Key = (g.fragments, g.type)
        p = prob.get(key, (None, ""))[0]
        if key in predicted:
            out.append((g, "exact", "", p))
        elif key in prob:
            kind = prob[key][1]
            band = "p < 0.1" if p is not None and p < 0.1 else "p < 0.3" if p is not None and p < 0.3 else "p >= 0.3"
            out.append((g, "candidate, not accepted", f"{kind}, {band}", p))
        elif g.fragments in spans:
            out.append((g, "right span, other types only", "", None))
        elif any(_overlaps(span, g.fragments) for span in spans):
            detail = _boundary_kind(g, example.text, example.rules)
            if key in anchored:
                detail += "; an anchored candidate"
            out.append((g, "boundary: overlapping candidates only", detail, None))
        else:
            out.append((g, "no overlapping candidate", "; an anchored candidate" if key in anchored else "", None))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="outer folds (by PMID)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--held-out", type=int, default=0, help="outer fold left out entirely (0-based)")
    parser.add_argument("--inner", type=int, default=4, help="inner folds of the training sentences")
    parser.add_argument("--c", type=float, default=3.0, help="fixed L2 strength of the inner models")
    parser.add_argument("--types", nargs="+", default=list(RECALL_TYPES))
    parser.add_argument("--examples", type=int, default=12, help="examples printed per class and type")
    args = parser.parse_args(argv)
    if missing := missing_sets():
        print(f"{', '.join(map(str, missing))} not found: PGxCorpus dev and more are needed (../shared); "
              "nothing measured")
        return 0
    docs, gold = load_sentences("pubtator")
    mapped = run(docs, extend=True, model=args.model, ontology_path=DEFAULT_ONTOLOGY, counts=Counter())
    by_name = {d.pmid: learned.Example(d.pmid, d.text, tuple(gold[d.pmid]), d.annotations) for d in mapped}
    training, held_out = train_test(kfold_groups(by_name, k=args.k, seed=args.seed), args.held_out)
    inner = kfold_groups(sorted(training), k=args.inner, seed=args.seed + 1)
    print(f"# outer fold {args.held_out} ({len(held_out)} sentences) left out; {len(training)} training "
          f"sentences in {args.inner} inner folds {[len(f) for f in inner]}, inner models at C={args.c}")
    rows: list[tuple[str, Annotation, str, str, float | None]] = []
    for j in range(args.inner):
        train_names, test_names = train_test(inner, j)
        t0 = time.perf_counter()
        model = learned.train([by_name[n] for n in train_names], learned.TrainConfig(seed=args.seed, c=args.c))
        anchors = learned._anchor_table([by_name[n] for n in train_names])
        print(f"inner fold {j}: trained in {time.perf_counter() - t0:.0f} s, thresholds rule "
              f"{model.threshold_rule} new {model.threshold_new}")
        for n in test_names:
            rows += [(n, *r) for r in classify(model, by_name[n], anchors, args.types)]
    for t in args.types:
        mine = [r for r in rows if r[1].type == t]
        print(f"\n## {t}: {len(mine)} final entities of the training folds")
        print("| class | detail | entities | share |")
        print("|---|---|---|---|")
        for (cls, detail), count in sorted(Counter((r[2], r[3]) for r in mine).items()):
            print(f"| {cls} | {detail} | {count} | {100 * count / len(mine):.1f}% |")
        for cls, count in sorted(Counter(r[2] for r in mine).items()):
            print(f"| {cls} | all | {count} | {100 * count / len(mine):.1f}% |")
        reach = sum(1 for r in mine if r[2] in ("exact", "candidate, not accepted"))
        print(f"ceiling of the candidates (a perfect decision): {reach}/{len(mine)} = {100 * reach / len(mine):.1f}%")
        for cls in ("right span, other types only", "boundary: overlapping candidates only",
                    "no overlapping candidate"):
            texts = [by_name[r[0]].text[r[1].fragments[0][0]:r[1].fragments[-1][1]] for r in mine if r[2] == cls]
            print(f"  {cls}, e.g.: " + "; ".join(repr(x) for x in texts[:args.examples]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
