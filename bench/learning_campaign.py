"""A simulated campaign: does the relation scorer learn from the sentences a campaign finishes?

The shipped data is PGxCorpus dev (../shared/data/pgxcorpus-dev/gold, 300 sentences); the campaign is
PGxCorpus more (pgxcorpus-more/gold, 350 sentences), annotated in batches of ``--batch`` sentences (60; the
last batch holds what is left, 50).  Batches are made of whole PMIDs: the PMIDs of ``more`` are taken in the
order of ``sha256(f"{seed}:{pmid}")`` and each goes to the first batch with room for all its sentences, so
every batch but the last holds exactly ``--batch`` sentences when the PMIDs fit (they do here: 332 PMIDs of
one sentence, 9 of two).

Before batch k the scorer is trained (``train_scorer``, the procedure and options of ``train-relations`` that
built the shipped scorer: inner CV by PMID on the training data, ``--target-precision``, decision
``actions``) on dev plus batches 1..k-1, leaving out every dev sentence that shares a PMID with batch k
(14 PMIDs have sentences in both sets).  Batch k is then measured as an annotator meets it once its
entities are corrected: its final (gold) entities with the relations removed, ``suggest-relations``
(pipeline.nlp.relations.suggest) with that scorer, and the relation edits of the edit model
(pipeline.brat.edits) to reach the final annotation.  The share saved is against no suggestion (every final
relation added, plus its modality).

The no-learning baseline scores the same batches with the dev-only scorer: trained on dev alone, also without
the dev sentences that share a PMID with the batch (so neither side has seen a sentence of the batch's
abstracts; for batch 1 the two scorers are the same).

    python bench/learning_campaign.py [--batch 60] [--seed 13] [--target-precision 0.75] [--quick] [--only K ...]

``--only K ...`` measures only those batches (1-based; the scorers are trained as in the whole campaign, the
earlier batches counting as annotated): the last batch alone costs two trainings instead of eleven.

``--quick`` fits every scorer with the shipped scorer's L2 strengths (its meta's ``pair_c``, ``context_c``,
``type_c``) instead of choosing them by inner cross-validation; say so when quoting its figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import sys
import time
from collections.abc import Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.brat import standoff as brat  # noqa: E402
from pipeline.brat.edits import Edits, sentence_edits, without_relations  # noqa: E402
from pipeline.nlp.folds import DEFAULT_SEED, group_of  # noqa: E402
from pipeline.nlp.relations.rules import DEFAULT_DECISION  # noqa: E402
from pipeline.nlp.relations.suggest import schema_allowed, suggest_relations  # noqa: E402
from pipeline.nlp.relations.training import train_scorer  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser  # noqa: E402


def _effort():  # type: ignore[no-untyped-def]
    """bench/effort.py as a module (its loading and training-example code; bench is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_effort", PROJECT / "bench" / "effort.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_effort"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


effort = _effort()


def batches(names: Sequence[str], size: int, seed: int) -> list[list[str]]:
    """Whole PMIDs in seeded order, each to the first batch with room for all its sentences."""
    groups: dict[str, list[str]] = {}
    for n in sorted(set(names)):
        groups.setdefault(group_of(n), []).append(n)
    order = sorted(groups, key=lambda g: hashlib.sha256(f"{seed}:{g}".encode()).hexdigest())
    out: list[list[str]] = []
    for g in order:
        members = groups[g]
        for batch in out:
            if len(batch) + len(members) <= size:
                batch.extend(members)
                break
        else:
            out.append(list(members))
    return [sorted(b) for b in out]


def relation_only(e: Edits) -> Edits:
    """The relation part of an edit count (the entities are given, final)."""
    return Edits(**{k: v for k, v in dataclasses.asdict(e).items() if k.startswith("relation") or k == "modality"})


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--batch", type=int, default=60)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--target-precision", type=float, default=0.75)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--quick", action="store_true",
                    help="the shipped scorer's L2 strengths for every scorer (no inner selection)")
    ap.add_argument("--only", type=int, nargs="+", metavar="K", help="measure only these batches (1-based)")
    args = ap.parse_args(argv)
    if effort.missing_data():
        print(effort.missing_data(), file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    schema, base, strengths = effort.scoring_setup(args.quick)
    nlp = load_parser(args.model)
    s = effort.load(None, nlp)
    dev = sorted(p.stem for p in (effort.SHARED / "pgxcorpus-dev" / "gold").glob("*.txt"))
    more = sorted(p.stem for p in (effort.SHARED / "pgxcorpus-more" / "gold").glob("*.txt"))
    plan = batches(more, args.batch, args.seed)
    allowed = schema_allowed(schema)
    print(f"shipped data: {len(dev)} dev sentences; campaign: {len(more)} sentences in {len(plan)} batches "
          f"({', '.join(str(len(b)) for b in plan)}) of whole PMIDs, seed {args.seed}; scorers: train-relations' "
          f"procedure, target precision {args.target_precision}, decision {DEFAULT_DECISION}"
          f"{f' (--quick: fixed L2 strengths {strengths})' if strengths else ''}", flush=True)

    def train(names: Sequence[str]):  # type: ignore[no-untyped-def]
        scorer, _ = train_scorer(effort.training_examples(s, names, schema), base, schema,
                                 target_precision=args.target_precision, decision=DEFAULT_DECISION,
                                 **({"strengths": strengths} if strengths else {}))
        return dataclasses.replace(base, scorer=scorer)

    def measure(rules, names: Sequence[str]) -> Edits:  # type: ignore[no-untyped-def]
        total = Edits()
        for n in names:
            final = s.gold[n]
            given, _ = suggest_relations(without_relations(final), rules, schema, nlp, allowed)
            total += relation_only(sentence_edits(given, final))
        return total

    def pct(e: Edits, none: Edits) -> float:
        return 100 * (none.relation_edits - e.relation_edits) / max(1, none.relation_edits)

    rows = []
    for k, batch in enumerate(plan):
        if args.only and k + 1 not in args.only:
            continue
        t1 = time.perf_counter()
        pmids = {group_of(n) for n in batch}
        dev_kept = [n for n in dev if group_of(n) not in pmids]
        seen = [n for b in plan[:k] for n in b]
        learning = train(dev_kept + seen)
        baseline = learning if not seen else train(dev_kept)
        none = Edits()
        for n in batch:
            final = s.gold[n]
            none += relation_only(sentence_edits(brat.BratDocument(n, final.text), final))
        learned = measure(learning, batch)
        base_edits = learned if baseline is learning else measure(baseline, batch)
        rows.append((k + 1, len(batch), len(dev_kept) + len(seen), none, learned, base_edits))
        print(f"batch {k + 1}: {len(batch)} sentences; trained on {len(dev_kept)} dev + {len(seen)} campaign "
              f"sentences ({len(dev) - len(dev_kept)} dev left out); relation edits {learned.relation_edits} "
              f"(saved {pct(learned, none):.1f}%) vs dev-only {base_edits.relation_edits} "
              f"(saved {pct(base_edits, none):.1f}%) of {none.relation_edits} without suggestions; "
              f"{time.perf_counter() - t1:.0f} s", flush=True)
    print("\nrelation edits saved given the final entities, per batch (the learning curve):\n")
    print(f"{'batch':>5} {'sents':>5} {'trained on':>10} {'no sugg.':>8} {'learning':>16} {'dev-only':>16} "
          f"{'gain':>6}")
    for k, size, trained, none, learned, base_edits in rows:
        gain = pct(learned, none) - pct(base_edits, none)
        print(f"{k:>5} {size:>5} {trained:>10} {none.relation_edits:>8} "
              f"{learned.relation_edits:>6} ({pct(learned, none):5.1f}%) "
              f"{base_edits.relation_edits:>6} ({pct(base_edits, none):5.1f}%) {gain:+6.1f}")
    last = rows[-1]
    gain = pct(last[4], last[3]) - pct(last[5], last[3])
    print(f"\nbatch {last[0]} (the last measured): {gain:+.1f} points of relation edits saved "
          f"over the dev-only scorer; {time.perf_counter() - t0:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
