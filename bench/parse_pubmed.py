"""Benchmark: PubMed XML parsing throughput and peak memory on the 1,699 GENIA records.

Runs ``pipeline.sources.pubmed_xml.iter_documents``

1. on each of the 1,699 GENIA files separately (one EFetch answer per PMID),
2. on all records concatenated into one ``PubmedArticleSet`` stream (plain and gzip),
3. on that stream repeated 10 times (16,990 records, like a baseline file) to show
   that memory stays flat while the input grows (streaming, elements cleared).

Each case runs in a fresh process and prints records/s (best of ``--repeat``
runs) and peak memory: the process's peak resident set size while parsing
(``VmHWM`` after resetting it through ``/proc/self/clear_refs`` on Linux,
else ``resource.getrusage`` max RSS; lxml allocates in C, so this is the
figure that matters) next to the RSS before parsing, and the ``tracemalloc`` peak
of Python-level allocations (a separate pass, since tracing slows parsing).

Usage: ``python bench/parse_pubmed.py [--repeat N]``; reads ../shared/data/genia/pubmed-xml.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from lxml import etree  # noqa: E402

from pipeline.sources.pubmed_xml import iter_documents  # noqa: E402

SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
GENIA = SHARED / "data" / "genia" / "pubmed-xml"
HEAD = (b'<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st June 2018//EN" '
        b'"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_180601.dtd">\n<PubmedArticleSet>\n')
RECORD = re.compile(rb"<PubmedArticle>.*?</PubmedArticle>", re.DOTALL)


def maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def vm_kib(field: str) -> float | None:
    """A ``/proc/self/status`` memory figure in MiB (Linux), None elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) of this process (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def parse_all(paths: list[Path]) -> int:
    counts: Counter[str] = Counter()
    return sum(1 for path in paths for _ in iter_documents(path, counts))


def child(paths: list[Path], repeat: int) -> None:
    """Measure in a fresh process so max RSS belongs to this case only; prints one JSON line."""
    baseline = vm_kib("VmRSS") or maxrss_mib()
    resettable = reset_peak_rss()
    best = float("inf")
    n = 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        n = parse_all(paths)
        best = min(best, time.perf_counter() - start)
    rss = (vm_kib("VmHWM") if resettable else None) or maxrss_mib()
    tracemalloc.start()
    parse_all(paths)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(json.dumps({"records": n, "seconds": best, "maxrss": rss, "baseline": baseline, "traced": peak}))


def run_case(label: str, paths: list[Path], repeat: int, listing: Path) -> None:
    listing.write_text("\n".join(str(p) for p in paths), encoding="utf-8")
    out = subprocess.run([sys.executable, __file__, "--child", str(listing), "--repeat", str(repeat)],
                         check=True, capture_output=True, text=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{label:<40} {r['records']:>7,} records {r['seconds']:7.2f} s {r['records'] / r['seconds']:>8,.0f} records/s"
          f"   peak RSS {r['maxrss']:6.1f} MiB (before parsing {r['baseline']:5.1f})"
          f"   tracemalloc peak {r['traced']:5.2f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (the best is reported)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child([Path(p) for p in args.child.read_text(encoding="utf-8").splitlines()], args.repeat)
        return 0
    if not GENIA.is_dir():
        print(f"GENIA PubMed XML not found at {GENIA}; put the shared/ folder beside the project "
              "(or set PGX_SHARED).", file=sys.stderr)
        return 2
    files = sorted(GENIA.glob("*.xml"))
    print(f"{len(files)} GENIA files, {sum(f.stat().st_size for f in files) / 2**20:.1f} MiB; "
          f"Python {sys.version.split()[0]}, lxml {etree.__version__}; {os.cpu_count()} CPU(s); "
          f"best of {args.repeat} runs; each case in a fresh process")
    records = [m.group(0) for f in files for m in RECORD.finditer(f.read_bytes())]
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "genia.xml"
        one.write_bytes(HEAD + b"\n".join(records) + b"\n</PubmedArticleSet>\n")
        one_gz = Path(tmp) / "genia.xml.gz"
        one_gz.write_bytes(gzip.compress(one.read_bytes()))
        ten = Path(tmp) / "genia_x10.xml"
        with open(ten, "wb") as fh:
            fh.write(HEAD)
            for _ in range(10):
                fh.write(b"\n".join(records) + b"\n")
            fh.write(b"</PubmedArticleSet>\n")
        del records
        listing = Path(tmp) / "paths.txt"
        run_case("each file separately (1,699 files)", files, args.repeat, listing)
        run_case(f"one stream, plain ({one.stat().st_size / 2**20:.1f} MiB)", [one], args.repeat, listing)
        run_case(f"one stream, gzip ({one_gz.stat().st_size / 2**20:.1f} MiB)", [one_gz], args.repeat, listing)
        run_case(f"one stream x10, plain ({ten.stat().st_size / 2**20:.1f} MiB)", [ten], 1, listing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
