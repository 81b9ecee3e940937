"""Probe (not a test): spaCy ``spancat`` trained on training folds of dev and more, alone and united with the rules.

The learned component shipped (:mod:`pipeline.nlp.learned`) is a candidate
classifier; this script measures the alternative the issue suggested, a
``spancat`` span classifier (blank English tokenizer, tok2vec from scratch,
n-gram suggester 1-8 tokens, seeded), on held-out folds of the same grouped
5-fold split.  For the union, spancat spans above a threshold are added to the
rules' annotations; the thresholds are all printed (none is chosen here).  Folds are grouped by PMID
across both sets (650 sentences); each row gives its Table 10 F1 and entity edits per 100 sentences
(pipeline.brat.edits) on the held-out folds, and, when every fold is run, the per-final-type table and
the edits per set of the union at 0.5.

    python bench/spancat_probe.py [--folds 0 1 2 3 4] [--epochs 12]

10-25 s per epoch on 520 sentences, depending on the load of this 2-core machine.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

import spacy  # noqa: E402
from preannotation_agreement import SETTINGS, entity_edits, load_sentences, missing_sets, run, summarize  # noqa: E402
from spacy.training import Example as SpacyExample  # noqa: E402
from spacy.util import minibatch  # noqa: E402

from pipeline.brat.agreement import table10_scores  # noqa: E402
from pipeline.documents import Annotation  # noqa: E402
from pipeline.nlp.folds import DEFAULT_K, DEFAULT_SEED, kfold_groups, train_test  # noqa: E402
from pipeline.nlp.ontology import DEFAULT_ONTOLOGY  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=12)
    args = parser.parse_args()
    if missing := missing_sets():
        print(f"shared data not available: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    docs, gold = load_sentences("pubtator")
    extended = {d.pmid: d for d in run(docs, extend=True, model=DEFAULT_MODEL, ontology_path=DEFAULT_ONTOLOGY,
                                         counts=Counter())}
    folds = kfold_groups(extended, k=DEFAULT_K, seed=DEFAULT_SEED)
    labels = sorted({a.type for anns in gold.values() for a in anns})
    texts = {n: d.text for n, d in extended.items()}
    union: dict[str, list[Annotation]] = {}  # rules + spancat >= 0.5, held-out folds only
    for fold in args.folds:
        train_names, test_names = train_test(folds, fold)
        spacy.util.fix_random_seed(DEFAULT_SEED)
        nlp = spacy.blank("en")
        spancat = nlp.add_pipe("spancat", config={
            "spans_key": "sc", "threshold": 0.5,
            "suggester": {"@misc": "spacy.ngram_suggester.v1", "sizes": list(range(1, 9))}})
        for label in labels:
            spancat.add_label(label)  # type: ignore[attr-defined]
        train = []
        for name in train_names:
            ref = nlp.make_doc(extended[name].text)
            spans = [ref.char_span(*a.fragments[0], label=a.type, alignment_mode="expand")
                     for a in gold[name] if len(a.fragments) == 1]
            ref.spans["sc"] = [s for s in spans if s is not None]
            train.append(SpacyExample(nlp.make_doc(ref.text), ref))
        optimizer = nlp.initialize(lambda: train)  # noqa: B023 (called here, at once)
        started = time.perf_counter()
        for epoch in range(args.epochs):
            random.Random(epoch).shuffle(train)
            losses: dict[str, float] = {}
            for batch in minibatch(train, 16):
                nlp.update(batch, sgd=optimizer, losses=losses)
        print(f"fold {fold}: {len(train)} training sentences, {args.epochs} epochs in "
              f"{time.perf_counter() - started:.0f} s")
        predicted = {}
        for name in test_names:
            d = nlp(extended[name].text)
            predicted[name] = [(Annotation(((s.start_char, s.end_char),), s.label_, "spancat"), float(p))
                               for s, p in zip(d.spans["sc"], d.spans["sc"].attrs["scores"], strict=True)]

        def fmt(pred: dict[str, list[Annotation]]) -> str:
            scores = table10_scores((gold[n], pred[n]) for n in test_names)  # noqa: B023 (called at once)
            edits = entity_edits(pred, texts, test_names).entity_edits  # noqa: B023
            return (" / ".join(f"{100 * scores[s]['f1']:.1f}" for s in SETTINGS)
                    + f"; entity edits / 100 {100 * edits / len(test_names):.1f}")  # noqa: B023

        print("  rules alone    " + fmt({n: list(extended[n].annotations) for n in test_names}))
        print("  spancat alone  " + fmt({n: [a for a, _p in predicted[n]] for n in test_names}))
        for threshold in (0.5, 0.6, 0.7, 0.8, 0.9):
            pred = {}
            for n in test_names:
                have = {(a.fragments, a.type) for a in extended[n].annotations}
                extra = [a for a, p in predicted[n] if p >= threshold and (a.fragments, a.type) not in have]
                pred[n] = list(extended[n].annotations) + extra
                if threshold == 0.5:
                    union[n] = pred[n]
            print(f"  rules + spancat >= {threshold}: " + fmt(pred))
    if len(union) == len(extended):
        summarize([("rules (PubTator keys + extension + mapping)",
                    {n: list(d.annotations) for n, d in extended.items()}),
                   ("rules + spancat >= 0.5 (out of fold)", dict(union))], gold, texts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
