"""Probe (not a test): does the learned classifier gain from the spaCy model's dense context features?

Adds to every candidate of :mod:`pipeline.nlp.learned` features from the parse of its sentence by the
project's spaCy pipeline: which of the 96 tok2vec dimensions (``doc.tensor``) are above 0.5, averaged
over the span and at its syntactic head, and the head's lemma, dependency label and governor lemma
(binarised so that the pure-Python logistic regression takes them).  Prints the 5-fold out-of-fold
Table 10 F1 on dev and more together (650 sentences; PubTator keys + extension + mapping as rules;
folds grouped by PMID across both sets), with the per-final-type table and the entity edits per 100
sentences of each variant, on both sets and on each, without and with
anchored candidates, next to the rules.  Everything fitted is fitted on the training folds only.

Usage: ``flock /tmp/bench.lock python bench/learned_dense_probe.py [--anchored]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from preannotation_agreement import f1s, fmt, load_sentences, missing_sets, run, summarize  # noqa: E402

from pipeline.brat.agreement import table10_scores  # noqa: E402
from pipeline.documents import Annotation  # noqa: E402
from pipeline.nlp import learned, learned_data  # noqa: E402
from pipeline.nlp.ontology import DEFAULT_ONTOLOGY  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser  # noqa: E402


def with_dense_features(parsed: dict[str, Any]) -> Any:
    """A replacement of ``learned._candidates`` adding the parse features of ``parsed[text]``."""
    plain = learned._candidates

    def candidates(text: str, rules: Sequence[Annotation], gaz: learned.Gazetteer,
                   retype: dict[str, list[str]], anchors: dict[str, list[str]] | None = None
                   ) -> list[learned._Candidate]:
        out = plain(text, rules, gaz, retype, anchors)
        doc = parsed.get(text)
        if doc is None:
            return out
        result = []
        for c in out:
            span = doc.char_span(c.span[0][0], c.span[-1][1], alignment_mode="expand")
            if span is None or len(span) == 0:
                result.append(c)
                continue
            head = span.root
            mean = doc.tensor[span.start:span.end].mean(axis=0)
            extra = [f"d{i}|{c.type}" for i, x in enumerate(mean) if x > 0.5]
            extra += [f"h{i}|{c.type}" for i, x in enumerate(doc.tensor[head.i]) if x > 0.5]
            extra += [f"hl={head.lemma_.lower()}|{c.type}", f"hd={head.dep_}|{c.type}",
                      f"hp={head.head.lemma_.lower()}|{c.type}"]
            result.append(learned._Candidate(c.span, c.type, c.kind, c.group, c.rule, c.features + tuple(extra)))
        return result

    return candidates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--anchored", action="store_true", help="also with anchored candidates")
    args = parser.parse_args()
    if missing := missing_sets():
        print(f"shared data not available: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    docs, gold = load_sentences("pubtator")
    rules = run(docs, extend=True, model=DEFAULT_MODEL, ontology_path=DEFAULT_ONTOLOGY, counts=Counter())
    examples = [learned.Example(d.pmid, d.text, tuple(gold[d.pmid]), d.annotations) for d in rules]
    by_name = {ex.name: ex for ex in examples}
    print(f"rules: {fmt(f1s(table10_scores((list(ex.gold), list(ex.rules)) for ex in examples)))}")
    nlp = load_parser(DEFAULT_MODEL)
    parsed = {ex.text: nlp(ex.text) for ex in examples}
    plain = learned._candidates
    rows: list[tuple[str, dict[str, Sequence[Annotation]]]] = [
        ("rules (PubTator keys + extension + mapping)", {ex.name: list(ex.rules) for ex in examples})]
    for anchored in (False, True) if args.anchored else (False,):
        config = learned.TrainConfig(anchored=anchored)
        for label, candidates in (("sparse features", plain), ("sparse + dense parse features", None)):
            learned._candidates = candidates or with_dense_features(parsed)  # type: ignore[assignment]
            try:
                started = time.perf_counter()
                oof = learned_data.out_of_fold(examples, k=5, seed=13, config=config)
                elapsed = time.perf_counter() - started
            finally:
                learned._candidates = plain  # type: ignore[assignment]
            row = f1s(table10_scores((list(by_name[n].gold), p) for n, p in oof.items()))
            print(f"rules + learned ({label}{', anchored' if anchored else ''}), 5-fold out of fold: {fmt(row)} "
                  f"({elapsed:.0f} s)")
            rows.append((f"rules + learned ({label}{', anchored' if anchored else ''}), out of fold", dict(oof)))
    for i in range(1, len(rows)):
        summarize([rows[0], rows[i]], gold, {ex.name: ex.text for ex in examples})
    return 0


if __name__ == "__main__":
    sys.exit(main())
