"""Benchmark: PubMed XML parsing throughput and peak memory on the 1,699 GENIA records.

Runs ``pipeline.pubmed_xml.iter_documents``

1. on each of the 1,699 GENIA files separately (one EFetch answer per PMID),
2. on all records concatenated into one ``PubmedArticleSet`` stream (plain and gzip),
3. on that stream repeated 10 times (16,990 records, like a baseline file) to show
   that memory stays flat while the input grows (streaming, elements cleared).

Prints records/s and peak memory: ``tracemalloc`` peak of Python allocations
(measured in a separate pass, since tracing slows parsing down) and the
process's maximum resident set size (``resource.getrusage``, Linux: KiB).

Usage: ``python bench/parse_pubmed.py [--repeat N]``; reads ../shared/data/genia/pubmed-xml.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import os
import re
import resource
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.pubmed_xml import iter_documents  # noqa: E402

SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
GENIA = SHARED / "data" / "genia" / "pubmed-xml"
HEAD = (b'<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st June 2018//EN" '
        b'"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_180601.dtd">\n<PubmedArticleSet>\n')
RECORD = re.compile(rb"<PubmedArticle>.*?</PubmedArticle>", re.DOTALL)


def maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(run: Callable[[], int], repeat: int) -> tuple[int, float]:
    """(records parsed, best wall time over ``repeat`` runs)."""
    best = float("inf")
    n = 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        n = run()
        best = min(best, time.perf_counter() - start)
    return n, best


def traced_peak(run: Callable[[], int]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def report(label: str, run: Callable[[], int], repeat: int) -> None:
    n, seconds = timed(run, repeat)
    peak = traced_peak(run)
    print(f"{label:<44} {n:>7,} records  {seconds:7.2f} s  {n / seconds:>9,.0f} records/s  "
          f"tracemalloc peak {peak:7.1f} MiB  maxrss so far {maxrss_mib():7.1f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (best is reported)")
    args = parser.parse_args()
    if not GENIA.is_dir():
        print(f"GENIA PubMed XML not found at {GENIA}; put the shared/ folder beside the project "
              "(or set PGX_SHARED).", file=sys.stderr)
        return 2
    files = sorted(GENIA.glob("*.xml"))
    print(f"{len(files)} GENIA files, {sum(f.stat().st_size for f in files) / 2**20:.1f} MiB; "
          f"Python {sys.version.split()[0]}; best of {args.repeat} runs")

    def per_file() -> int:
        counts: Counter[str] = Counter()
        return sum(1 for f in files for _ in iter_documents(f, counts))

    records = [m.group(0) for f in files for m in RECORD.finditer(f.read_bytes())]
    stream = HEAD + b"\n".join(records) + b"\n</PubmedArticleSet>\n"
    big = HEAD + b"\n".join(records * 10) + b"\n</PubmedArticleSet>\n"
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "genia.xml"
        one.write_bytes(stream)
        one_gz = Path(tmp) / "genia.xml.gz"
        one_gz.write_bytes(gzip.compress(stream))
        ten = Path(tmp) / "genia_x10.xml"
        ten.write_bytes(big)
        del big

        def from_path(path: Path) -> Callable[[], int]:
            def run() -> int:
                counts: Counter[str] = Counter()
                return sum(1 for _ in iter_documents(path, counts))

            return run

        report("each file separately (1,699 files)", per_file, args.repeat)
        report(f"one stream, plain ({one.stat().st_size / 2**20:.1f} MiB)", from_path(one), args.repeat)
        report(f"one stream, gzip ({one_gz.stat().st_size / 2**20:.1f} MiB)", from_path(one_gz), args.repeat)
        report(f"one stream x10, plain ({ten.stat().st_size / 2**20:.1f} MiB)", from_path(ten), 1)
    print(f"process max RSS: {maxrss_mib():.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
