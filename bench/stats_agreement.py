"""Run time of `stats` and `agreement` on the PGxCorpus dev subset (../shared/data/pgxcorpus-dev).

    python bench/stats_agreement.py [--repeat N]

Prints the best-of-N wall time of: corpus statistics of the gold collection;
pre-annotation (PubTator) vs gold in the four Table 10 settings, with the F1
figures (reference: 59.8 / 62.0 / 66.0 / 71.3); full pairwise agreement
(entities and relations in every setting) of gold vs PubTator and of gold vs
itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.brat.agreement import agreement, preannotation_scores  # noqa: E402
from pipeline.brat.stats import brat_stats  # noqa: E402
from pipeline.schema import load_schema  # noqa: E402

SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
DEV = SHARED / "data" / "pgxcorpus-dev"


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not (DEV / "gold").is_dir() or not (DEV / "pubtator").is_dir():
        print(f"bench: shared data not found at {DEV} (put shared/ beside the project or set PGX_SHARED)")
        return 1
    schema = load_schema()
    gold, pubtator = DEV / "gold", DEV / "pubtator"

    t, stats = best_of(args.repeat, lambda: brat_stats(gold, schema))
    print(f"stats gold ({stats['sentences']['total']} sentences, {stats['entity_totals']['total']} entities, "
          f"{stats['relation_total']} relations): {t * 1000:.1f} ms")

    t, pre = best_of(args.repeat, lambda: preannotation_scores(pubtator, [gold], schema))
    s = pre["results"][0]["scores"]
    f1 = " / ".join(f"{100 * s[k]['f1']:.1f}" for k in ("exact_same", "exact_any", "partial_same", "partial_any"))
    print(f"agreement --preannotation pubtator vs gold (Table 10 F1 {f1}): {t * 1000:.1f} ms")

    t, _ = best_of(args.repeat, lambda: agreement([gold, pubtator], schema))
    print(f"agreement gold vs pubtator (6 entity + 12 relation settings): {t * 1000:.1f} ms")

    t, same = best_of(args.repeat, lambda: agreement([gold, gold], schema))
    assert all(v == 1.0 for v in same["mean_f1"]["entities"].values())
    print(f"agreement gold vs gold (6 entity + 12 relation settings): {t * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
