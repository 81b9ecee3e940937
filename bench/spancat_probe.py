"""Probe (not a test): spaCy ``spancat`` trained on the dev subset's training folds, alone and united with the rules.

The learned component shipped (:mod:`pipeline.nlp.learned`) is a candidate
classifier; this script measures the alternative the issue suggested, a
``spancat`` span classifier (blank English tokenizer, tok2vec from scratch,
n-gram suggester 1-8 tokens, seeded), on held-out folds of the same grouped
5-fold split.  For the union, spancat spans above a threshold are added to the
rules' annotations; the thresholds are all printed (none is chosen here).

    python bench/spancat_probe.py [--folds 0 1 2 3 4] [--epochs 12]

5-12 s per epoch on 240 sentences, depending on the load of this 2-core machine.
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
from preannotation_agreement import DATA, SETTINGS, load_sentences, run  # noqa: E402
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
    if not DATA.is_dir():
        print(f"shared data not available: {DATA}", file=sys.stderr)
        return 2
    docs, gold = load_sentences("pubtator")
    extended = {d.pmid: d for d in run(docs, extend=True, model=DEFAULT_MODEL, ontology_path=DEFAULT_ONTOLOGY,
                                         counts=Counter())}
    folds = kfold_groups(extended, k=DEFAULT_K, seed=DEFAULT_SEED)
    labels = sorted({a.type for anns in gold.values() for a in anns})
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

        def fmt(pairs: list[tuple[list[Annotation], list[Annotation]]]) -> str:
            scores = table10_scores(pairs)
            return " / ".join(f"{100 * scores[s]['f1']:.1f}" for s in SETTINGS)

        print("  rules alone    " + fmt([(gold[n], list(extended[n].annotations)) for n in test_names]))
        print("  spancat alone  " + fmt([(gold[n], [a for a, _p in predicted[n]]) for n in test_names]))
        for threshold in (0.5, 0.6, 0.7, 0.8, 0.9):
            pairs = []
            for n in test_names:
                have = {(a.fragments, a.type) for a in extended[n].annotations}
                extra = [a for a, p in predicted[n] if p >= threshold and (a.fragments, a.type) not in have]
                pairs.append((gold[n], list(extended[n].annotations) + extra))
            print(f"  rules + spancat >= {threshold}: " + fmt(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
