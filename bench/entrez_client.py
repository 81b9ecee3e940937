"""Benchmark (not a test): the project's E-utilities client vs Biopython's ``Bio.Entrez``, on the fake server.

Both clients talk to the loopback fake E-utilities server of the tests
(tests/fixtures/eutils/fake_eutils.py), which answers like PubMed and injects
the faults NCBI serves.  ``Bio.Entrez`` has its NCBI address written into each
function, so its ``urlopen`` is wrapped to send the same request to the fake
server instead (the request itself, method, URL query and body, is unchanged).
Each scenario prints what each client did:

* 429 with ``Retry-After: 1`` (twice, then a normal answer);
* HTTP 500 (once);
* where the api_key travels (method; key in the URL or in the body);
* HTTP 200 error bodies: NCBI's JSON ``API rate limit exceeded`` and ``<ERROR>`` XML;
* a truncated EFetch body (HTTP 200, half the XML) and a connection cut mid-body;
* a server that answers late (1 s; the project's timeout is 0.5 s here) and one that is down;
* a query with 25,000 hits (ESearch returns at most the first 9,999 ids);
* requests/s at NCBI's keyed rate (10/s) and client overhead per request
  without rate limiting (EFetch of 200 records).

The project's client runs with ``max_tries=5`` and ``backoff=0.05`` s (short, to
keep the run quick; production uses 1 s); ``Bio.Entrez`` with its defaults
(``max_tries=3``, ``sleep_between_tries=15``).  Usage: ``python bench/entrez_client.py``.
"""

from __future__ import annotations

import logging
import sys
import time
import types
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.sources.eutils import EutilsClient, RateLimiter  # noqa: E402
from pipeline.sources.pubmed_xml import count_records  # noqa: E402
from tests.fixtures.eutils import fake_eutils as fe  # noqa: E402

NCBI = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
KEY = "0123456789abcdef0123456789abcdef0123"
TERM = "warfarin"
BIG = "pharmacogenomics"
PMIDS = [str(30_000_000 + i) for i in range(300)]


def corpus() -> fe.Corpus:
    c = fe.big_corpus(BIG, 25_000, start_pmid=20_000_000)
    c.terms[TERM] = PMIDS
    return fe.with_records(c)


def entrez(server: fe.FakeEutils) -> Any:
    """``Bio.Entrez`` configured like the project (tool, email, api_key), its requests sent to ``server``."""
    from Bio import Entrez

    real = urllib.request.urlopen

    def urlopen(request: urllib.request.Request, *args: Any, **kwargs: Any) -> Any:
        request.full_url = request.full_url.replace(NCBI, server.base_url)
        return real(request, *args, **kwargs)

    Entrez.urlopen = urlopen
    Entrez.email, Entrez.tool, Entrez.api_key = "bench@example.org", "pgx-corpus-bench", KEY
    return Entrez


def project(server: fe.FakeEutils, **kw: Any) -> EutilsClient:
    options: dict[str, Any] = dict(tool="pgx-corpus-bench", email="bench@example.org", api_key=KEY, timeout=0.5,
                                   max_tries=5, backoff=0.05, seed=1, limiter=RateLimiter(1000.0))
    options.update(kw)
    return EutilsClient(server.base_url, **options)


def outcome(run: Callable[[], str], server: fe.FakeEutils, endpoint: str) -> str:
    """What a call did: its result or exception, the number of requests the server saw, the time taken."""
    before = len(server.calls(endpoint))
    started = time.perf_counter()
    try:
        result = run()
    except Exception as exc:  # noqa: BLE001 - the exception is the measurement
        result = f"raises {type(exc).__name__}: {str(exc).splitlines()[0][:70]}"
    tries = len(server.calls(endpoint)) - before
    return f"{result} [{tries} request(s), {time.perf_counter() - started:.2f}s]"


def row(label: str, ours: str, theirs: str) -> None:
    print(f"| {label} | {ours} | {theirs} |")


def fault_rows(server: fe.FakeEutils) -> None:
    Entrez = entrez(server)
    client = project(server)

    def ours_search() -> str:
        return f"ok, Count {client.esearch(TERM).count}"

    def theirs_search() -> str:
        with Entrez.esearch(db="pubmed", term=TERM) as handle:
            return f"ok, Count {Entrez.read(handle)['Count']}"

    def ours_fetch() -> str:
        return f"ok, {count_records(client.efetch(PMIDS[:10]))[1]} records"

    def theirs_fetch() -> str:
        with Entrez.efetch(db="pubmed", id=PMIDS[:10], retmode="xml") as handle:
            body = handle.read()
        try:
            records = count_records(body)[1]
        except Exception as exc:  # noqa: BLE001
            return f"returns the bad body as a success ({len(body)} bytes; {type(exc).__name__} only when parsed)"
        return f"ok, {records} records"

    server.retry_after = "1"
    scenarios: list[tuple[str, str, tuple[str, ...], Callable[[], str], Callable[[], str]]] = [
        ("429 + Retry-After: 1, twice (ESearch)", "esearch", ("429", "429"), ours_search, theirs_search),
        ("HTTP 500 once (ESearch)", "esearch", ("500",), ours_search, theirs_search),
        ("HTTP 200 JSON 'API rate limit exceeded' (ESearch)", "esearch", ("json_rate",), ours_search,
         theirs_search),
        ("HTTP 200 <ERROR> body (ESearch)", "esearch", ("error_xml",), ours_search, theirs_search),
        ("HTTP 200 <ERROR> body (EFetch)", "efetch", ("error_xml",), ours_fetch, theirs_fetch),
        ("HTTP 200 truncated XML (EFetch)", "efetch", ("truncated",), ours_fetch, theirs_fetch),
        ("connection cut mid-body (EFetch)", "efetch", ("cut",), ours_fetch, theirs_fetch),
        ("answer after 1 s (ESearch)", "esearch", ("timeout",), ours_search, theirs_search),
    ]
    for label, endpoint, faults, ours, theirs in scenarios:
        server.queue(endpoint, *faults)
        mine = outcome(ours, server, endpoint)
        server.faults[endpoint].clear()
        server.queue(endpoint, *faults)
        other = outcome(theirs, server, endpoint)
        server.faults[endpoint].clear()
        row(label, mine, other)

    # Where the api_key goes: the last request each client made for ESearch and a 10-id EFetch.
    for endpoint, ours, theirs in (("esearch", ours_search, theirs_search), ("efetch", ours_fetch, theirs_fetch)):
        seen = []
        for run in (ours, theirs):
            run()
            call = server.calls(endpoint)[-1]
            seen.append(f"{call.method}, key sent: {call.params.get('api_key') == KEY}")
        row(f"api_key transport ({endpoint})", seen[0] + " (form body, never in a URL)",
            seen[1] + (" (in the URL query string)" if seen[1].startswith("GET") else ""))


def server_down_row() -> None:
    """Connection refused on every try (a port nothing listens on)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = types.SimpleNamespace(base_url=f"http://127.0.0.1:{port}/entrez/eutils/")
    Entrez = entrez(dead)  # type: ignore[arg-type]
    client = EutilsClient(dead.base_url, tool="t", email="e@example.org", api_key=KEY, max_tries=5, backoff=0.05,
                          seed=1, limiter=RateLimiter(1000.0))
    results = []
    for run in (lambda: client.esearch(TERM), lambda: Entrez.esearch(db="pubmed", term=TERM)):
        started = time.perf_counter()
        try:
            run()
            results.append("ok?")
        except Exception as exc:  # noqa: BLE001
            results.append(f"raises {type(exc).__name__} after {time.perf_counter() - started:.2f}s")
    row("server down (connection refused)", results[0] + " (5 tries, backoff 0.05 s doubling, jitter)",
        results[1] + f" (max_tries {Entrez.max_tries}, fixed sleep {Entrez.sleep_between_tries} s)")


def bisection_row(server: fe.FakeEutils) -> None:
    Entrez = entrez(server)
    client = project(server)
    n0 = len(server.calls("esearch"))
    started = time.perf_counter()
    result = client.search_pmids(BIG)
    ours = (f"all {len(result.pmids):,} PMIDs (Count {result.count:,}) in {len(result.pieces)} date pieces "
            f"[{len(server.calls('esearch')) - n0} requests, {time.perf_counter() - started:.2f}s]")
    n0 = len(server.calls("esearch"))
    started = time.perf_counter()
    ids: list[str] = []
    with Entrez.esearch(db="pubmed", term=BIG, retmax=9999) as handle:
        record = Entrez.read(handle)
    ids.extend(record["IdList"])
    try:
        with Entrez.esearch(db="pubmed", term=BIG, retstart=9999, retmax=9999) as handle:
            Entrez.read(handle)
        more = "next page ok"
    except Exception as exc:  # noqa: BLE001
        more = f"retstart=9999 raises {type(exc).__name__}"
    theirs = (f"{len(ids):,} of {int(record['Count']):,} PMIDs; {more}; no date splitting "
              f"[{len(server.calls('esearch')) - n0} requests, {time.perf_counter() - started:.2f}s]")
    row("25,000 hits (ESearch cap 9,999)", ours, theirs)


def throughput_rows(server: fe.FakeEutils) -> None:
    import Bio.Entrez as entrez_module

    Entrez = entrez(server)
    n = 30
    # At NCBI's keyed rate: the project's limiter at 10/s, Bio.Entrez's own (0.1 s spacing with a key).
    client = project(server, limiter=RateLimiter(10.0))
    started = time.perf_counter()
    for _ in range(n):
        client.esearch(TERM)
    ours = n / (time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(n):
        with Entrez.esearch(db="pubmed", term=TERM) as handle:
            Entrez.read(handle)
    theirs = n / (time.perf_counter() - started)
    row(f"ESearch requests/s at the keyed rate (10/s), {n} requests", f"{ours:.2f}/s", f"{theirs:.2f}/s")

    # Overhead without rate limiting: EFetch of 200 records, body checked (ours) or read (theirs).
    client = project(server, limiter=RateLimiter(1e9))
    real_time = entrez_module.time
    entrez_module.time = types.SimpleNamespace(time=time.time, sleep=lambda s: None)  # type: ignore[assignment]
    try:
        timings = {}
        for name, fetch in (
            ("ours", lambda: client.efetch(PMIDS[:200])),
            ("theirs", lambda: Entrez.efetch(db="pubmed", id=PMIDS[:200], retmode="xml").read()),
            ("theirs+check", lambda: count_records(Entrez.efetch(db="pubmed", id=PMIDS[:200], retmode="xml").read())),
        ):
            fetch()  # warm-up
            started = time.perf_counter()
            for _ in range(n):
                fetch()
            timings[name] = (time.perf_counter() - started) / n * 1000
    finally:
        entrez_module.time = real_time
    row("EFetch of 200 records, no rate limit: ms per request", f"{timings['ours']:.1f} ms (incl. XML check)",
        f"{timings['theirs']:.1f} ms without a check, {timings['theirs+check']:.1f} ms with the same XML check")


def main() -> int:
    logging.getLogger("pipeline").setLevel(logging.ERROR)  # the retries' warnings would interleave with the table
    try:
        import Bio
    except ImportError:
        print("Biopython is not installed (pip install biopython); nothing to compare", file=sys.stderr)
        return 2
    server = fe.start(corpus())
    try:
        print(f"Project EutilsClient vs Bio.Entrez (Biopython {Bio.__version__}) on the loopback fake E-utilities\n")
        print("| scenario | project EutilsClient | Bio.Entrez |")
        print("| --- | --- | --- |")
        fault_rows(server)
        server_down_row()
        bisection_row(server)
        throughput_rows(server)
    finally:
        fe.stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
