"""Soak benchmark (issue 10): 2,000 records through E-utilities and PubTator3 stand-ins, a fault every 3rd request.

Records: the 1,699 GENIA PubMed records (../shared/data/genia/pubmed-xml),
replicated with new PMIDs (70000001...) up to ``--records`` (default 2,000).
PubTator3 answers come from a fake built from the same texts (a handful of
GENIA terms annotated); 5% of the PMIDs are unknown to it, so some answers are
empty collections.  Two loopback servers (tests/fixtures/faults.py) stand in
for both services: one fault-free, one injecting a fault on every 3rd request
of each service, cycling through 429, 500, 502, 503, short body, lying
Content-Length (cut), Content-Length shorter than the body, connection reset,
slow reply past the timeout, HTTP-200 error body and malformed JSON.

Two builds run *at the same time*, as separate processes sharing one
host-wide rate-limit directory at the real rates (3 requests/s per service,
the NCBI limit without a key): the fault-free build against the clean server,
the other against the faulty one.  The faulty build is rerun until it exits 0
(each rerun counted).  The benchmark prints the requests made, the faults met,
the reruns needed, the maximum number of requests of each service in any
sliding second (both builds together, measured where the requests arrive),
and whether the faulty build's ``OUT/brat`` and pre-annotated shards are
byte-identical to the fault-free build's.

Batches are small (50 PMIDs per EFetch, 25 per PubTator3 request) so that
there are many requests.  Builds use
``--annotator pubtator-api --no-fallback-local --no-extend --filter none --per-abstract 2 --sample all``
(so the brat collection has two sentences of every abstract):
the faults are in retrieval and pre-annotation; the spaCy parse of extension
and the lexicon load would only add CPU time.

Usage: ``python bench/faults.py [--records N] [--every K] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import configparser
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.sources.httputil import max_in_window  # noqa: E402
from pipeline.sources.pubmed_xml import iter_documents  # noqa: E402
from tests.fixtures import faults  # noqa: E402
from tests.fixtures.eutils.fake_eutils import Corpus  # noqa: E402

SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
GENIA = SHARED / "data" / "genia" / "pubmed-xml"
TERM = "genia soak"
DATE = "2026-01-01"
TERMS = {"NF-kappa B": ("Gene", "4790"), "IL-2": ("Gene", "3558"), "interleukin-2": ("Gene", "3558"),
         "glucocorticoid": ("Chemical", "MESH:D005938"), "cyclosporin A": ("Chemical", "MESH:D016572"),
         "HIV-1": ("Species", "11676"), "leukemia": ("Disease", "MESH:D007938")}
_OWN_PMID = re.compile(rb"(<MedlineCitation[^>]*>\s*<PMID[^>]*>)(\d+)(</PMID>)")


def genia_records(n: int) -> dict[str, bytes]:
    """``n`` records: the GENIA records in file order, then again, each with a new PMID."""
    originals = []
    for path in sorted(GENIA.glob("*.xml")):
        raw = path.read_bytes()
        begin = raw.index(b"<PubmedArticle>")
        end = raw.rindex(b"</PubmedArticle>") + len(b"</PubmedArticle>")
        originals.append(raw[begin:end])
    if not originals:
        raise SystemExit(f"no GENIA records under {GENIA}")
    records = {}
    for i in range(n):
        record = originals[i % len(originals)]
        old = _OWN_PMID.search(record)
        assert old is not None
        new = str(70000001 + i)
        record = _OWN_PMID.sub(rb"\g<1>" + new.encode() + rb"\g<3>", record, count=1)
        record = record.replace(b'IdType="pubmed">' + old.group(2) + b"<", b'IdType="pubmed">' + new.encode() + b"<")
        records[new] = record + b"\n"
    return records


def pubtator_docs(records: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    payload = b'<?xml version="1.0" ?>\n<PubmedArticleSet>' + b"".join(records.values()) + b"</PubmedArticleSet>\n"
    docs = {}
    for n, doc in enumerate(iter_documents(payload, Counter())):
        if n % 20 == 19:
            continue  # 5% unknown to PubTator
        docs[doc.pmid] = faults.pubtator_document(doc.pmid, doc.title, doc.abstract, TERMS)
    return docs


def write_config(path: Path, server: faults.FaultServer) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(PROJECT / "luigi.cfg")
    values = {
        "ncbi": {"base_url": server.eutils_url, "batch_size": "50", "timeout": "2", "max_tries": "3",
                 "backoff": "0.2", "requests_per_second": "3"},
        "pubtator": {"base_url": server.pubtator_url, "batch_size": "25", "timeout": "2", "max_tries": "3",
                     "backoff": "0.2", "requests_per_second": "3"},
    }
    for section, keys in values.items():
        for key, value in keys.items():
            parser.set(section, key, value)
    with path.open("w") as fh:
        parser.write(fh)


def start_build(out: Path, config: Path, rate_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "LUIGI_CONFIG_PATH": str(config),
           "PGX_RATELIMIT_DIR": str(rate_dir)}
    args = [sys.executable, "-m", "pipeline", "--log-level", "WARNING", "build", "--out", str(out), "--query", TERM,
            "--date", DATE, "--annotator", "pubtator-api", "--no-fallback-local", "--no-extend", "--filter", "none",
            "--per-abstract", "2", "--sample", "all", "--email", "bench@example.org"]
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=log.open("ab"))


def digest(directory: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(directory)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def stage_digest(out: Path, stage: str) -> str:
    """Digest of a stage's shards (params.json names the output directory, so it is left out)."""
    h = hashlib.sha256()
    for path in sorted((out / "work" / stage).glob("*/shard-*.jsonl.gz")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--every", type=int, default=3, help="a fault on every K-th request of each service")
    parser.add_argument("--keep", type=Path, help="keep the outputs here (default: a temporary directory)")
    args = parser.parse_args()

    records = genia_records(args.records)
    pmids = sorted(records)
    docs = pubtator_docs(records)
    clean = faults.start(Corpus(terms={TERM: pmids}, records=records), docs, slow_seconds=3.0)
    faulty = faults.start(Corpus(terms={TERM: pmids}, records=records), docs, slow_seconds=3.0)
    faulty.plan = faults.FaultPlan(every=args.every)
    work = args.keep or Path(tempfile.mkdtemp(prefix="pgx-bench-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    rate_dir = work / "ratelimit"
    write_config(work / "clean.cfg", clean)
    write_config(work / "faulty.cfg", faulty)
    print(f"{len(records)} records ({len(docs)} known to the fake PubTator3); outputs under {work}", flush=True)

    t0 = time.monotonic()
    reference = start_build(work / "clean", work / "clean.cfg", rate_dir, work / "clean.log")
    runs = [start_build(work / "faulty", work / "faulty.cfg", rate_dir, work / "faulty.log")]
    codes = [runs[0].wait()]
    while codes[-1] != 0 and len(codes) < 4:
        runs.append(start_build(work / "faulty", work / "faulty.cfg", rate_dir, work / "faulty.log"))
        codes.append(runs[-1].wait())
    reference_code = reference.wait()
    elapsed = time.monotonic() - t0
    faults.stop(clean)
    faults.stop(faulty)

    seen = clean.requests() + faulty.requests()
    print(f"builds: fault-free exit {reference_code}; faulty exit codes {codes} "
          f"(reruns needed: {len(codes) - 1}); wall time {elapsed:.0f} s")
    for service in faults.SERVICES:
        mine = faulty.requests(service)
        both = [s.at for s in seen if s.service == service]
        kinds = Counter(s.fault for s in mine if s.fault)
        listed = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        print(f"{service}: requests made {len(mine)} by the faulty build, {len(clean.requests(service))} by the "
              f"fault-free one; faults met {sum(kinds.values())} ({listed}); "
              f"max requests in any sliding second (both builds): {max_in_window(both, 1.0)}")
    published = work / "faulty" / "brat"
    same_brat = published.is_dir() and digest(published) == digest(work / "clean" / "brat")
    same_pre = stage_digest(work / "faulty", "03_preannotated") == stage_digest(work / "clean", "03_preannotated")
    print(f"brat output identical to the fault-free build: {same_brat}; pre-annotated shards identical: {same_pre}")
    print(f"sentences in brat: {len(list((work / 'clean' / 'brat').glob('*.txt')))}")
    return 0 if same_brat and same_pre and reference_code == 0 and codes[-1] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
