"""Where the relation suggestions on corrected entities lose their gold relations, on training data only.

With outer fold ``--outer`` of the 650 PGxCorpus dev and more sentences held out and never read (5 folds by
PMID, seed 13, as ``bench/effort.py``), the other folds' sentences are split into 4 inner folds by PMID; each
inner fold in ``--inner`` is scored by a scorer trained on the other three (``train-relations``' procedure,
decision ``actions``, the shipped scorer's L2 strengths unless ``--strengths`` is given), on its final
entities.  It prints, over the scored inner folds:

* each gold relation's fate, per type: never a candidate pair of the scorer (arguments overlapping, an entity
  type pair the scorer does not score, an ``isEquivalentTo`` the abbreviation rule misses), a candidate whose
  pair probability is below the decision's floor ``(1 + threshold) / 2``, a candidate above it whose expected
  gain ``p (1 + q) - 1`` is below the threshold, proposed in the wrong direction, with the wrong type, or
  changed by the rule file's argument-type narrowing (``argument_types``), or right;
* ``suggest-relations``' relation edits saved (``pipeline.brat.edits``) and strict precision and recall
  (exact arguments, directed) for each decision threshold of ``--thresholds``;
* the modality of the suggestions that match a final relation (same arguments, same direction) against
  the final one's.

    python bench/relation_ceiling.py [--outer 1] [--inner 1 2 3 4] [--thresholds -0.1 0 0.1]
        [--strengths 0.1 0.3 0.3]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

import effort  # noqa: E402

from pipeline.brat import standoff as brat  # noqa: E402
from pipeline.brat.edits import Edits, sentence_edits, without_relations  # noqa: E402
from pipeline.brat.modality import join_notes  # noqa: E402
from pipeline.nlp.folds import DEFAULT_K, DEFAULT_SEED, kfold_groups, train_test  # noqa: E402
from pipeline.nlp.relations.documents import _sentence_entities  # noqa: E402
from pipeline.nlp.relations.features import _candidate_pairs, _type_pair  # noqa: E402
from pipeline.nlp.relations.proposals import _abbreviation, _typed  # noqa: E402
from pipeline.nlp.relations.rules import DEFAULT_DECISION, EQUIVALENT, RelationRules  # noqa: E402
from pipeline.nlp.relations.scorer import _pair_probabilities, _scored_sentence  # noqa: E402
from pipeline.nlp.relations.suggest import schema_allowed, suggest_relations  # noqa: E402
from pipeline.nlp.relations.training import TrainingSentence, train_scorer  # noqa: E402
from pipeline.nlp.relations.tree import _align, _Entity, _outer, _overlap, _Tree  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser  # noqa: E402
from pipeline.schema import Schema  # noqa: E402

INNER_K = 4


def fates(ex: TrainingSentence, rules: RelationRules, schema: Schema) -> list[tuple[str, str]]:
    """(gold type, fate) of each gold relation of one sentence, given its final entities."""
    scorer = rules.scorer
    assert scorer is not None
    doc = ex.doc
    tree = _Tree(doc.parses[0])
    ents = []
    for index, ann, type_ in _sentence_entities(doc, doc.sentences[0], schema):
        tokens, head = _align(ann, tree)
        ents.append(_Entity(index, ann, type_, head, tokens, ann.start, ann.end))
    ents.sort(key=lambda e: (e.annotation.sort_key(), e.index))
    outer = _outer(ents)
    scored = _scored_sentence(doc.text, tree, ents, outer, rules)
    rows = _candidate_pairs(doc.text, tree, ents, outer, rules, scorer.pair_types)
    probs = {(a.index, b.index): p for (a, b, _x, _y), p in
             zip(rows, _pair_probabilities(scorer.pair, scorer.context, rows), strict=True)}
    raw, final = {}, {}
    for x, a in enumerate(ents):  # as relate_sentence: the abbreviation rule, else the scorer, then typed
        for b in ents[x + 1:]:
            if a.start < b.end and b.start < a.end and _overlap(a.annotation, b.annotation):
                continue
            found = _abbreviation(doc.text, a, b, rules, ents) or scored.get((a.index, b.index))
            if found is None:
                continue
            raw[frozenset((a.index, b.index))] = found
            typed = found if found.type == EQUIVALENT else _typed(found, rules, Counter())
            if typed is not None:
                final[frozenset((a.index, b.index))] = typed
    byidx = {e.index: e for e in ents}
    order = {e.index: k for k, e in enumerate(ents)}
    floor = (1.0 + scorer.threshold) / 2
    out = []
    for i, j, t in ex.gold:
        if i not in byidx or j not in byidx:
            out.append((t, "an argument is not a schema entity"))
            continue
        a, b = (byidx[i], byidx[j]) if order[i] < order[j] else (byidx[j], byidx[i])
        key = frozenset((i, j))
        r, f = raw.get(key), final.get(key)
        if a.start < b.end and b.start < a.end and _overlap(a.annotation, b.annotation):
            fate = "not a candidate: arguments overlap"
        elif f is not None and (f.arg1.index, f.arg2.index, f.type) == (i, j, t):
            fate = "right" if (r.arg1.index, r.arg2.index, r.type) == (i, j, t) else "right after narrowing"
        elif r is not None and (r.arg1.index, r.arg2.index, r.type) == (i, j, t):
            fate = "right, then changed by argument_types narrowing"
        elif r is not None:
            fate = "proposed, wrong direction" if (r.arg1.index, r.arg2.index) != (i, j) else "proposed, wrong type"
        elif t == EQUIVALENT:
            fate = "not proposed: isEquivalentTo (abbreviation rule)"
        elif scorer.pair_types and _type_pair(a.type, b.type) not in scorer.pair_types:
            fate = "not a candidate: entity type pair not scored"
        elif (a.index, b.index) not in probs:
            fate = "not a candidate: other (abbreviation pair)"
        elif max(probs[(a.index, b.index)]) < floor:
            fate = "candidate, pair probability below the floor"
        else:
            fate = "candidate, expected gain below the threshold"
        out.append((t, fate))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--outer", type=int, default=1, help="the outer fold held out (1-based), never read")
    ap.add_argument("--inner", type=int, nargs="+", default=list(range(1, INNER_K + 1)),
                    help="the inner folds scored (1-based)")
    ap.add_argument("--thresholds", type=float, nargs="+", default=[-0.1, 0.0, 0.1])
    ap.add_argument("--strengths", type=float, nargs=3, help="L2 strengths (pair, context, type)")
    args = ap.parse_args(argv)
    if effort.missing_data():
        print(effort.missing_data(), file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    schema, base, strengths = effort.scoring_setup(True)
    if args.strengths:
        strengths = tuple(args.strengths)
    nlp = load_parser(DEFAULT_MODEL)
    s = effort.load(None, nlp)
    allowed = schema_allowed(schema)
    train, test = train_test(kfold_groups(s.names, DEFAULT_K, DEFAULT_SEED), args.outer - 1)
    inner = kfold_groups(train, INNER_K, DEFAULT_SEED)
    fate_counts: Counter[tuple[str, str]] = Counter()
    modality: Counter[tuple[str, str]] = Counter()
    none = Edits()
    given = {th: (Edits(), Counter[str]()) for th in args.thresholds}
    scored_n = 0
    for k in args.inner:
        itrain, itest = train_test(inner, k - 1)
        if (set(itrain) | set(itest)) & set(test):
            raise SystemExit("a held-out sentence reached the inner folds")
        scorer, _ = train_scorer(effort.training_examples(s, itrain, schema), base, schema, target_precision=0.75,
                                 decision=DEFAULT_DECISION, strengths=strengths)
        scored_n += len(itest)
        for ex in effort.training_examples(s, itest, schema):
            fate_counts.update(fates(ex, dataclasses.replace(base, scorer=scorer), schema))
        for x in itest:
            none += sentence_edits(brat.BratDocument(x, s.gold[x].text), s.gold[x])
        for th in args.thresholds:
            rules = dataclasses.replace(base, scorer=dataclasses.replace(scorer, threshold=th))
            e, c = given[th]
            for x in itest:
                final = s.gold[x]
                doc, _ = suggest_relations(without_relations(final), rules, schema, nlp, allowed)
                e += sentence_edits(doc, final)
                c += effort.prf_counts(doc, final)
                if th == 0.0:
                    finals = {(r.arg("Arg1"), r.arg("Arg2")): r for r in final.relations}
                    for r in doc.relations:
                        f = finals.get((r.arg("Arg1"), r.arg("Arg2")))
                        if f is not None and f.type != EQUIVALENT:
                            got = join_notes(doc.notes_for(r.id)).modality
                            want = join_notes(final.notes_for(f.id)).modality
                            modality[("/".join(sorted(got)) or "-", "/".join(sorted(want)) or "-")] += 1
            given[th] = (e, c)
        print(f"inner fold {k}: {len(itrain)} training, {len(itest)} scored sentences", flush=True)
    print(f"\nouter fold {args.outer} held out and unread; {scored_n} inner held-out sentences, L2 strengths "
          f"{strengths}; {time.perf_counter() - t0:.0f} s\n\ngold relations by fate (all types / isEquivalentTo "
          "excluded):")
    types = sorted({t for t, _f in fate_counts})
    other = sum(v for (t, _f), v in fate_counts.items() if t != EQUIVALENT)
    for fate in sorted({f for _t, f in fate_counts}):
        n_all = sum(v for (_t, f), v in fate_counts.items() if f == fate)
        n_other = sum(v for (t, f), v in fate_counts.items() if f == fate and t != EQUIVALENT)
        per = ", ".join(f"{t} {fate_counts[(t, fate)]}" for t in types if fate_counts[(t, fate)])
        print(f"  {fate}: {n_all}; without isEquivalentTo {n_other} ({100 * n_other / max(1, other):.1f}%) [{per}]")
    print(f"\nrelation edits per 100 sentences without suggestions: {effort.per100(none, scored_n)}")
    for th, (e, c) in given.items():
        print(f"threshold {th:+.2f}: {effort.saved(e, none).split(', ')[-1]}; {effort.prf(c)}\n  "
              f"{effort.per100(e, scored_n)}")
    right = sum(v for (g, w), v in modality.items() if g == w)
    print(f"\nmodality of the matched suggestions (not isEquivalentTo), threshold 0: right {right} of "
          f"{sum(modality.values())}; (suggested, final): "
          + ", ".join(f"{g} {w} {v}" for (g, w), v in modality.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
