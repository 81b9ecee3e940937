"""The E-utilities client against a fake NCBI server on 127.0.0.1 (real response formats).

Covers: pipeline.sources.eutils, pipeline.sources.pubmed_xml
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator

import pytest
import requests

from pipeline.sources.eutils import (
    ESEARCH_CAP,
    EutilsClient,
    EutilsError,
    RateLimiter,
    SearchIncompleteError,
    shared_limiter,
)
from pipeline.sources.pubmed_xml import parse_bytes
from tests.conftest import shared_path
from tests.fixtures.eutils import fake_eutils as fake

SECRET = "SECRETKEY0123456789abcdef"
TERM = "pharmacogenetics[MeSH Terms]"


class Sleeps(list[float]):
    """A recording no-op ``sleep``."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_client(server, **kw) -> EutilsClient:  # type: ignore[no-untyped-def]
    kw.setdefault("sleep", Sleeps())
    kw.setdefault("limiter", RateLimiter(10_000))
    kw.setdefault("timeout", 5.0)
    kw.setdefault("max_tries", 4)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("seed", 1)
    return EutilsClient(server.base_url, tool="pgx-corpus-tests", email="tests@example.org", **kw)


@pytest.fixture
def small_server() -> Iterator:  # type: ignore[type-arg]
    corpus = fake.with_records(fake.big_corpus(TERM, 120, start_pmid=30_000_000, days=400))
    server = fake.start(corpus)
    yield server
    fake.stop(server)


@pytest.fixture(scope="module")
def big_server() -> Iterator:  # type: ignore[type-arg]
    # 25,000 hits (> 2 x the 9,999 cap), 40 of them with a second publication date.
    corpus = fake.big_corpus(TERM, 25_000, days=9000, double_dated=range(0, 25_000, 625))
    server = fake.start(corpus)
    yield server
    fake.stop(server)


# --- ESearch on the real response files ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "count", "n_ids", "query_key", "errors", "warnings"),
    [
        ("biopython_esearch1_pubmed_simple_20ids.xml", 63, 20, None, {}, {}),
        ("biopython_esearch2_pubmed_usehistory_webenv_querykey_retmax100.xml", 42249, 100, "1", {}, {}),
        ("biopython_esearch3_pubmed_retstart6_translationset.xml", 2651, 6, None, {}, {}),
        ("biopython_esearch5_pubmed_mesh_translationstack.xml", 5, 5, None, {}, {}),
        ("biopython_esearch8_pubmed_zero_hits_errorlist_warninglist.xml", 0, 0, None,
         {"PhraseNotFound": ("abcXYZ",)}, {"OutputMessage": ("No items found.",)}),
        ("ncbi_eutilsjson_esearch_pubmed_usehistory_2012_old_http_dtd.xml", 15169, 100, "1", {}, {}),
    ],
)
def test_esearch_parses_real_responses(name, count, n_ids, query_key, errors, warnings) -> None:  # type: ignore[no-untyped-def]
    server = fake.start(fake.Corpus())
    try:
        server.static["esearch"] = shared_path("fixtures", "real", "esearch", name).read_bytes()
        result = make_client(server).esearch("anything", retmax=100)
    finally:
        fake.stop(server)
    assert result.count == count
    assert len(result.ids) == n_ids
    assert result.query_key == query_key
    assert result.errors == errors
    assert result.warnings == warnings
    if query_key:
        assert result.webenv and result.webenv[:4] in ("MCID", "NCID")


def test_esearch_error_body_is_retried_then_raised() -> None:
    server = fake.start(fake.Corpus())
    try:
        server.static["esearch"] = shared_path("fixtures", "real", "esearch",
                                               "ncbi_eutilsjson_esearch_invalid_db_ERROR.xml").read_bytes()
        with pytest.raises(EutilsError, match="Invalid db name specified: fleegle"):
            make_client(server, max_tries=3).esearch("x")
        assert len(server.calls("esearch")) == 3
    finally:
        fake.stop(server)


def test_zero_hits_is_not_an_error(small_server) -> None:  # type: ignore[no-untyped-def]
    result = make_client(small_server).search_pmids("no such phrase qqq")
    assert result.count == 0 and result.pmids == ()
    assert result.errors == {"PhraseNotFound": ("no such phrase qqq",)}
    assert result.warnings == {"OutputMessage": ("No items found.",)}


# --- searching: paging and the 9,999 cap -------------------------------------------------------


def test_small_search_pages_with_retstart(small_server) -> None:  # type: ignore[no-untyped-def]
    client = make_client(small_server, page_size=50)
    result = client.search_pmids(TERM)
    assert result.count == 120
    assert list(result.pmids) == sorted(small_server.corpus.terms[TERM], key=int)
    pages = [r for r in small_server.calls("esearch") if r.params["retmax"] != "0"]
    assert [int(r.params["retstart"]) for r in pages] == [0, 50, 100]
    for req in small_server.calls("esearch"):
        assert req.method == "POST"
        assert req.params["usehistory"] == "y"
        assert req.params["tool"] == "pgx-corpus-tests" and req.params["email"] == "tests@example.org"
        assert "api_key" not in req.params


def test_big_search_is_split_by_date_and_union_equals_count(big_server) -> None:  # type: ignore[no-untyped-def]
    before = len(big_server.requests)
    result = make_client(big_server).search_pmids(TERM)
    assert result.count == 25_000
    assert len(result.pmids) == 25_000
    assert set(result.pmids) == set(big_server.corpus.terms[TERM])
    assert list(result.pmids) == sorted(result.pmids, key=int)
    assert len(result.pieces) >= 3
    assert all(0 < p.count <= ESEARCH_CAP for p in result.pieces)
    # Double-dated records fall into two pieces: the pieces over-count, the union does not.
    assert sum(p.count for p in result.pieces) > 25_000
    requests_made = big_server.requests[before:]
    for req in requests_made:
        retstart, retmax = int(req.params["retstart"]), int(req.params["retmax"])
        assert retstart <= ESEARCH_CAP - 1 and retstart + retmax <= ESEARCH_CAP
        if "mindate" in req.params:
            assert req.params["datetype"] == "pdat"


def test_search_within_date_bounds(big_server) -> None:  # type: ignore[no-untyped-def]
    result = make_client(big_server).search_pmids(TERM, mindate="2000", maxdate="2003/06")
    lo, hi = dt.date(2000, 1, 1), dt.date(2003, 6, 30)
    expected = {p for p, ds in big_server.corpus.pdat.items() if any(lo <= d <= hi for d in ds)}
    assert set(result.pmids) == expected and result.count == len(expected)


def test_union_mismatch_raises_or_warns(caplog) -> None:  # type: ignore[no-untyped-def]
    corpus = fake.big_corpus(TERM, 12_000, days=3000)
    server = fake.start(corpus)
    server.count_bonus[TERM] = 3  # PubMed's Count changes between requests
    try:
        with pytest.raises(SearchIncompleteError, match="12000 PMIDs but the unsplit Count is 12003"):
            make_client(server).search_pmids(TERM)
        with caplog.at_level(logging.WARNING, logger="pipeline.sources.eutils"):
            result = make_client(server).search_pmids(TERM, on_mismatch="warn")
        assert len(result.pmids) == 12_000 and result.count == 12_003
        assert "continuing with the union" in caplog.text
    finally:
        fake.stop(server)


def test_single_day_above_cap_is_a_clear_error() -> None:
    corpus = fake.big_corpus(TERM, 10_050, days=1)
    server = fake.start(corpus)
    try:
        with pytest.raises(EutilsError, match=r"10050 hits on the single day 1995/01/01"):
            make_client(server).search_pmids(TERM)
    finally:
        fake.stop(server)


def test_server_enforces_the_cap_and_client_refuses_beyond_it(small_server) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EutilsError, match="beyond PubMed's cap"):
        make_client(small_server).esearch(TERM, retstart=9999)
    # A client ignoring the cap would get NCBI's error body from the fake server.
    answer = requests.post(small_server.base_url + "esearch.fcgi", data={"term": TERM, "retstart": "10000"},
                           timeout=5)
    assert b"cannot be larger than 9998" in answer.content


# --- EFetch, retries, give-up -------------------------------------------------------------------


def test_efetch_posts_ids_and_returns_xml(small_server) -> None:  # type: ignore[no-untyped-def]
    ids = small_server.corpus.terms[TERM][:5]
    body = make_client(small_server).efetch(ids)
    docs = parse_bytes(body)
    assert [d.pmid for d in docs] == ids
    (req,) = small_server.calls("efetch")
    assert req.method == "POST" and req.params["retmode"] == "xml" and req.ids == ids


@pytest.mark.parametrize("fault", ["429", "500", "timeout", "json_rate", "error_xml", "truncated", "cut"])
def test_efetch_retries_transient_faults(small_server, fault) -> None:  # type: ignore[no-untyped-def]
    small_server.timeout_sleep = 1.0
    ids = small_server.corpus.terms[TERM][:3]
    small_server.queue("efetch", fault)
    sleeps = Sleeps()
    # a short timeout only where the fault is a slow answer: elsewhere a loaded machine's delay must not retry
    body = make_client(small_server, sleep=sleeps, timeout=0.3 if fault == "timeout" else 5.0).efetch(ids)
    assert [d.pmid for d in parse_bytes(body)] == ids
    assert len(small_server.calls("efetch")) == 2
    assert len(sleeps) == 1 and 0 < sleeps[0] < 1  # one backoff sleep (short in tests)


@pytest.mark.parametrize("fault", ["429", "500", "timeout", "json_rate", "error_xml", "truncated", "cut"])
def test_esearch_retries_transient_faults(small_server, fault) -> None:  # type: ignore[no-untyped-def]
    small_server.queue("esearch", fault, fault)
    result = make_client(small_server, timeout=0.3 if fault == "timeout" else 5.0).esearch(TERM, retmax=10)
    assert result.count == 120 and len(result.ids) == 10
    assert len(small_server.calls("esearch")) == 3


def test_retry_after_is_honoured(small_server) -> None:  # type: ignore[no-untyped-def]
    small_server.retry_after = "7"
    small_server.queue("efetch", "429")
    sleeps = Sleeps()
    make_client(small_server, sleep=sleeps).efetch(small_server.corpus.terms[TERM][:2])
    assert sleeps == [7.0]


def test_backoff_grows_exponentially_with_jitter(small_server) -> None:  # type: ignore[no-untyped-def]
    small_server.queue("efetch", "500", "500", "500")
    sleeps = Sleeps()
    make_client(small_server, sleep=sleeps, backoff=1.0, max_tries=4).efetch(small_server.corpus.terms[TERM][:1])
    assert len(sleeps) == 3
    for attempt, seconds in enumerate(sleeps, 1):
        assert 0.5 * 2 ** (attempt - 1) <= seconds < 1.5 * 2 ** (attempt - 1)


def test_give_up_names_the_batch(small_server) -> None:  # type: ignore[no-untyped-def]
    ids = small_server.corpus.terms[TERM][10:17]
    small_server.fail_batches_with[ids[3]] = "500"
    with pytest.raises(EutilsError) as info:
        make_client(small_server, max_tries=3).efetch(ids)
    message = str(info.value)
    assert f"batch of 7 PMID(s) {ids[0]}..{ids[-1]}" in message
    assert "failed after 3 tries" in message and "HTTP 500" in message
    assert len(small_server.calls("efetch")) == 3


def test_client_errors_are_not_retried(small_server) -> None:  # type: ignore[no-untyped-def]
    client = make_client(small_server)
    client.base_url = client.base_url.replace("/entrez/eutils/", "/nowhere/")
    with pytest.raises(EutilsError, match="HTTP 404"):
        client.esearch(TERM)
    assert len(small_server.requests) == 1


def test_connection_errors_are_retried_then_raised() -> None:
    server = fake.start(fake.Corpus())
    base = server.base_url
    fake.stop(server)  # nothing listens on that port any more
    sleeps = Sleeps()
    client = EutilsClient(base, tool="t", email="e@example.org", api_key=SECRET, max_tries=3, sleep=sleeps,
                          limiter=RateLimiter(10_000), timeout=2)
    with pytest.raises(EutilsError, match="connection error") as info:
        client.efetch(["1", "2"])
    assert len(sleeps) == 2 and SECRET not in str(info.value)


# --- the api_key ----------------------------------------------------------------------------------


def test_api_key_is_sent_but_never_logged_or_raised(small_server, caplog) -> None:  # type: ignore[no-untyped-def]
    ids = small_server.corpus.terms[TERM][:4]
    small_server.fail_batches_with[ids[0]] = "json_rate"  # NCBI echoes the key in this body
    small_server.queue("esearch", "429", "json_rate")
    client = make_client(small_server, api_key=SECRET, max_tries=3)
    with caplog.at_level(logging.DEBUG):
        client.esearch(TERM, retmax=5)
        with pytest.raises(EutilsError) as info:
            client.efetch(ids)
    assert all(r.params.get("api_key") == SECRET for r in small_server.requests)
    assert all(r.method == "POST" for r in small_server.requests)  # the key is never in a URL
    assert SECRET not in caplog.text and "API rate limit exceeded" in caplog.text
    assert SECRET not in str(info.value) and "***" in str(info.value)
    assert SECRET not in repr(client)


def test_redact() -> None:
    client = EutilsClient("http://127.0.0.1:9/", tool="t", email="e", api_key=SECRET)
    text = f"GET /efetch.fcgi?db=pubmed&api_key={SECRET}&id=1 failed; body {{\"api-key\":\"{SECRET}\"}}"
    assert SECRET not in client.redact(text)
    assert client.redact("api_key=other123&x=1") == "api_key=***&x=1"


# --- rate limiting --------------------------------------------------------------------------------


def test_rate_limiter_spaces_calls() -> None:
    now = [100.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(3)
    for _ in range(7):
        limiter.wait(sleep, clock=lambda: now[0])
    assert now[0] == pytest.approx(100.0 + 6 / 3)  # 7 calls at 3/s take 2 s


def test_default_rates_and_shared_limiter() -> None:
    plain = EutilsClient("http://127.0.0.1:9/", tool="t", email="e")
    keyed = EutilsClient("http://127.0.0.1:9/", tool="t", email="e", api_key=SECRET)
    assert plain.limiter.interval == pytest.approx(1 / 3)
    assert keyed.limiter.interval == pytest.approx(1 / 10)
    other = EutilsClient("http://127.0.0.1:9/", tool="u", email="f")
    assert other.limiter is plain.limiter is shared_limiter(3.0)


@pytest.mark.parametrize("bad", ["../../x/PWNED", "/tmp/PWNED", "12a"])
def test_an_esearch_id_that_is_not_a_pmid_is_refused_not_retried(bad: str) -> None:
    """Issue 23, defect 8: every PMID names files downstream; an answer that is not PubMed's is refused."""
    server = fake.start(fake.Corpus())
    try:
        server.static["esearch"] = (
            "<?xml version='1.0'?><eSearchResult><Count>2</Count><RetMax>2</RetMax><RetStart>0</RetStart>"
            f"<IdList><Id>123</Id><Id>{bad}</Id></IdList></eSearchResult>").encode()
        with pytest.raises(EutilsError, match=r"ESearch response: PMID .* refused"):
            make_client(server, max_tries=3).esearch("x")
        assert len(server.calls("esearch")) == 1
    finally:
        fake.stop(server)
