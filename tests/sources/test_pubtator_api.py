"""The PubTator3 client against a fake PubTator3 server on 127.0.0.1.

The server serves the real response shape (the NetMedEx PubTator3 response
for 22429397 from ../shared, plus synthetic documents built in the same shape)
and injects, on request, HTTP 429 (with Retry-After), 500/503, malformed JSON,
HTTP 200 error bodies, empty collections, slow answers (client timeout),
dropped connections, connection resets, bodies cut off under their
``Content-Length`` or longer than it, 404, and PMIDs it does not know.

Covers: pipeline.sources.httputil, pipeline.sources.pubtator_api
"""

from __future__ import annotations

import copy
import gzip
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from pipeline.sources.httputil import HostRateLimiter
from pipeline.sources.pubtator_api import (
    EXPORT_PATH,
    PubtatorApiError,
    PubtatorClient,
    PubtatorResponseError,
    cache_key,
    parse_response,
    parse_retry_after,
)
from tests.conftest import shared_path

API_ROOT = "/research/pubtator3-api/"

# Keys of a real PubTator3 annotation's infons (see the NetMedEx response).
def pubtator3_doc(pmid: str, title: str, abstract: str, mentions: list[tuple[str, int, str, str | None]]
                  ) -> dict[str, Any]:
    """A document in the PubTator3 ``export/biocjson`` shape.

    ``mentions`` are ``(text, occurrence, type, identifier)``: the occurrence-th
    ``text`` in ``title + " " + abstract`` (PubTator offsets).
    """
    full = title + " " + abstract
    passages = [
        {"infons": {"journal": "Synthetic J. 2024", "year": "2024", "type": "title", "authors": "Doe J"},
         "offset": 0, "text": title, "sentences": [], "annotations": [], "relations": []},
        {"infons": {"type": "abstract"}, "offset": len(title) + 1, "text": abstract, "sentences": [],
         "annotations": [], "relations": []},
    ]
    for n, (text, occurrence, kind, identifier) in enumerate(mentions, 1):
        start = -1
        for _ in range(occurrence + 1):
            start = full.index(text, start + 1)
        passage = passages[0] if start < len(title) else passages[1]
        passage["annotations"].append({  # type: ignore[attr-defined]
            "id": str(n),
            "infons": {"identifier": identifier, "type": kind, "valid": identifier is not None,
                       "normalized": [identifier] if identifier else [], "database": "synthetic",
                       "normalized_id": identifier, "biotype": kind.lower(), "name": text, "accession": None},
            "text": text,
            "locations": [{"offset": start, "length": len(text)}],
        })
    return {"_id": f"{pmid}|None", "id": pmid, "infons": {}, "passages": passages, "relations": [],
            "pmid": int(pmid), "pmcid": None, "meta": {}, "date": "2024-01-01T00:00:00Z",
            "journal": "Synthetic J", "authors": ["Doe J"], "relations_display": []}


def simple_doc(pmid: str) -> dict[str, Any]:
    return pubtator3_doc(pmid, f"Warfarin and CYP2C9 in study {pmid}.", "Bleeding was rare.",
                         [("Warfarin", 0, "Chemical", "MESH:D014859"), ("CYP2C9", 0, "Gene", "1559"),
                          ("Bleeding", 0, "Disease", "MESH:D006470")])


def real_response() -> dict[str, Any]:
    path = shared_path("fixtures", "real", "pubtator3", "netmedex_22429397_abstract_biocjson_20240916_reindented.json")
    return json.loads(path.read_text())


class FakePubtator:
    """State of the fake server: known documents, injected failures, requests seen."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}
        self.failures: list[str] = []  # consumed one per request, in order
        self.always: str | None = None  # a failure injected on every request
        self.shape = "pubtator3"
        self.requests: list[list[str]] = []
        self.url = ""
        self.lock = threading.Lock()

    def add(self, *docs: dict[str, Any]) -> None:
        for doc in docs:
            self.docs[str(doc["pmid"])] = doc

    def body(self, docs: list[dict[str, Any]]) -> bytes:
        if self.shape == "pubtator3":
            payload: Any = {"PubTator3": docs}
        elif self.shape == "collection":
            payload = {"source": "PubTator", "date": "", "key": "BioC.key", "infons": {}, "documents": docs}
        elif self.shape == "list":
            payload = docs
        elif self.shape == "bare":
            payload = docs[0]
        elif self.shape == "concatenated":
            return "".join(json.dumps(d) for d in docs).encode()
        elif self.shape == "lines":
            return "\n".join(json.dumps(d) for d in docs).encode() + b"\n"
        else:
            raise AssertionError(self.shape)
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def _handler(state: FakePubtator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def send(self, status: int, body: bytes, ctype: str = "application/json", headers: dict[str, str] | None = None
                 ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlparse(self.path)
            if url.path != API_ROOT + EXPORT_PATH:
                self.send(404, b'{"detail":"Not Found"}')
                return
            pmids = [p for p in parse_qs(url.query).get("pmids", [""])[0].split(",") if p]
            with state.lock:
                state.requests.append(pmids)
                failure = state.always or (state.failures.pop(0) if state.failures else None)
            if failure == "429":
                self.send(429, b"Too Many Requests", "text/plain", {"Retry-After": "2"})
            elif failure in ("500", "503"):
                self.send(int(failure), b"<html><body>Internal Server Error</body></html>", "text/html")
            elif failure == "404":
                self.send(404, b'{"detail":"Not Found"}')
            elif failure == "malformed":
                self.send(200, b'{"PubTator3": [{"_id": "1|None", "passages": [')  # truncated
            elif failure == "error200":
                self.send(200, b'{"error": "Internal error: the export service is busy"}')
            elif failure == "html200":
                self.send(200, b"<html><body>Service temporarily unavailable</body></html>", "text/html")
            elif failure == "empty":
                self.send(200, b'{"PubTator3": []}')
            elif failure == "slow":
                time.sleep(0.6)
                self.send(200, state.body([state.docs[p] for p in pmids if p in state.docs]))
            elif failure == "disconnect":
                self.close_connection = True  # no response at all: the client sees a dropped connection
            elif failure in ("cut", "long"):
                # "cut": the full Content-Length announced, half the body sent, connection closed;
                # "long": a Content-Length shorter than the body (the client reads a truncated body)
                body = state.body([state.docs[p] for p in pmids if p in state.docs])
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body) if failure == "cut" else len(body) // 2))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if failure == "cut" else body)
                self.wfile.flush()
                self.close_connection = True
            elif failure == "reset":
                # RST instead of FIN: the client sees "connection reset by peer"
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
            else:
                docs = [copy.deepcopy(state.docs[p]) for p in pmids if p in state.docs]
                self.send(200, state.body(docs) if docs else b'{"PubTator3": []}')

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The client gave up on a deliberately slow answer: expected, not an error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@pytest.fixture
def fake_pubtator() -> Iterator[FakePubtator]:
    state = FakePubtator()
    server = _Server(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}{API_ROOT}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class FakeClock:
    """An injected clock: ``sleep`` (backoff) and ``rate_sleep`` (rate limit) only advance time and are recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.rate_sleeps: list[float] = []

    def rate_sleep(self, seconds: float) -> None:
        self.rate_sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def make_client(server: FakePubtator, clock: FakeClock, **kwargs: Any) -> PubtatorClient:
    # A generous timeout: a loaded machine can take longer than 0.3 s on loopback, and a spurious retry would
    # change the request log the tests compare. The "slow" failure tests pass slow_timeout() themselves.
    options: dict[str, Any] = {"timeout": 5.0, "max_tries": 3, "backoff": 0.5, "sleep": clock.sleep, "clock": clock}
    options.update(kwargs)
    # the host-wide limiter (in this test's own directory, see conftest), waiting on the fake clock
    options.setdefault("limiter", HostRateLimiter("pubtator", options.get("requests_per_second", 3.0),
                                                  directory=options.pop("rate_limit_dir", None),
                                                  clock=clock, sleep=clock.rate_sleep))
    return PubtatorClient(server.url, **options)


def slow_timeout(failure: str) -> dict[str, float]:
    """The client timeout for a failure: shorter than the fake's 0.6 s delay for "slow", else the default."""
    return {"timeout": 0.3} if failure == "slow" else {}


# --- the real response shape -------------------------------------------------

def test_real_response_through_the_client(fake_pubtator: FakePubtator) -> None:
    fake_pubtator.add(*real_response()["PubTator3"])
    clock = FakeClock()
    result = make_client(fake_pubtator, clock).fetch(["22429397"])
    assert result.missing == []
    assert result.requests == 1
    doc = result.documents["22429397"]
    title, abstract = doc.passages
    assert (title.type, abstract.type, abstract.offset) == ("title", "abstract", len(title.text) + 1)
    assert abstract.text.startswith("INTRODUCTION: Acquisition of mesenchymal")
    assert len(doc.annotations) == 37
    first = doc.annotations[0]
    assert (first.text, first.type, first.identifier, first.locations) == ("breast cancer", "Disease",
                                                                           "MESH:D001943", ((111, 13),))
    assert fake_pubtator.requests == [["22429397"]]


@pytest.mark.parametrize("shape", ["pubtator3", "collection", "list", "bare", "concatenated", "lines"])
def test_every_response_shape(fake_pubtator: FakePubtator, shape: str) -> None:
    fake_pubtator.shape = shape
    pmids = ["101"] if shape == "bare" else ["101", "102", "103"]
    fake_pubtator.add(*(simple_doc(p) for p in pmids))
    result = make_client(fake_pubtator, FakeClock()).fetch(pmids)
    assert sorted(result.documents) == pmids
    for pmid in pmids:
        doc = result.documents[pmid]
        assert [a.text for a in doc.annotations] == ["Warfarin", "CYP2C9", "Bleeding"]
        assert doc.source_text()[doc.annotations[2].spans[0][0]:].startswith("Bleeding")


# --- batching and rate limit ----------------------------------------------

def test_batches_of_at_most_100_and_three_requests_per_second(fake_pubtator: FakePubtator) -> None:
    pmids = [str(1000 + i) for i in range(250)]
    fake_pubtator.add(*(simple_doc(p) for p in pmids))
    clock = FakeClock()
    session = requests.Session()
    starts: list[float] = []
    original_get = session.get

    def timed_get(*args: Any, **kwargs: Any) -> requests.Response:
        starts.append(clock())
        assert kwargs.get("timeout") == 5.0  # every request has a timeout
        return original_get(*args, **kwargs)

    session.get = timed_get  # type: ignore[method-assign]
    # shuffled, duplicated input: batches are still the sorted unique PMIDs
    result = make_client(fake_pubtator, clock, session=session).fetch(list(reversed(pmids)) + pmids[:10])
    assert [len(b) for b in fake_pubtator.requests] == [100, 100, 50]
    assert [b[0] for b in fake_pubtator.requests] == ["1000", "1100", "1200"]
    assert all(b == sorted(b, key=int) for b in fake_pubtator.requests)
    assert len(result.documents) == 250 and result.missing == []
    assert result.batches == 3 and result.requests == 3
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert all(gap >= 1 / 3 - 1e-9 for gap in gaps)


def test_batch_size_limits() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        PubtatorClient("http://127.0.0.1:9/", batch_size=101)
    client = PubtatorClient("http://127.0.0.1:9/", batch_size=2)
    assert client.batches(["3", "1", "2", "1", " "]) == [["1", "2"], ["3"]]


# --- failures, retries -------------------------------------------------------

@pytest.mark.parametrize("failure", ["429", "500", "503", "malformed", "error200", "html200", "slow",
                                     "disconnect", "cut", "long", "reset"])
def test_one_failure_is_retried(fake_pubtator: FakePubtator, failure: str) -> None:
    fake_pubtator.add(simple_doc("201"), simple_doc("202"))
    fake_pubtator.failures = [failure]
    clock = FakeClock()
    result = make_client(fake_pubtator, clock, **slow_timeout(failure)).fetch(["201", "202"])
    assert sorted(result.documents) == ["201", "202"]
    assert result.requests == 2 and result.retries == 1
    assert fake_pubtator.requests == [["201", "202"], ["201", "202"]]
    backoff_sleeps = [s for s in clock.sleeps if s > 1 / 3]
    if failure == "429":
        assert backoff_sleeps == [2.0]  # Retry-After honoured
    else:
        assert len(backoff_sleeps) == 1 and 0.25 <= backoff_sleeps[0] <= 0.5


def test_gives_up_with_an_error_naming_the_batch(fake_pubtator: FakePubtator) -> None:
    fake_pubtator.add(simple_doc("301"), simple_doc("302"), simple_doc("303"))
    fake_pubtator.always = "500"
    clock = FakeClock()
    client = make_client(fake_pubtator, clock, max_tries=4, backoff=1.0, seed=3)
    with pytest.raises(PubtatorApiError, match=r"batch 3 PMIDs 301\.\.303 failed after 4 tries: HTTP 500"):
        client.fetch(["303", "301", "302"])
    assert len(fake_pubtator.requests) == 4
    delays = [s for s in clock.sleeps if s > 1 / 3]
    # exponential backoff with jitter: within [base/2, base] for base 1, 2, 4
    assert len(delays) == 3
    for delay, base in zip(delays, [1.0, 2.0, 4.0], strict=True):
        assert base / 2 <= delay <= base
    # the jitter is seeded: the same seed gives the same waits
    clock2 = FakeClock()
    with pytest.raises(PubtatorApiError):
        make_client(fake_pubtator, clock2, max_tries=4, backoff=1.0, seed=3).fetch(["301", "302", "303"])
    assert [s for s in clock2.sleeps if s > 1 / 3] == delays


@pytest.mark.parametrize(("failure", "reason"), [("malformed", "malformed JSON"), ("error200", "error body"),
                                                 ("429", "HTTP 429"), ("slow", "timeout"),
                                                 ("disconnect", "connection error"),
                                                 ("cut", "incomplete body"), ("reset", "connection error")])
def test_persistent_failures_are_errors(fake_pubtator: FakePubtator, failure: str, reason: str) -> None:
    fake_pubtator.add(simple_doc("401"))
    fake_pubtator.always = failure
    with pytest.raises(PubtatorApiError, match=rf"PMID 401 failed after 2 tries: .*{reason}"):
        make_client(fake_pubtator, FakeClock(), max_tries=2, **slow_timeout(failure)).fetch(["401"])


def test_client_error_is_not_retried(fake_pubtator: FakePubtator) -> None:
    fake_pubtator.always = "404"
    with pytest.raises(PubtatorApiError, match=r"PMID 501: 404"):
        make_client(fake_pubtator, FakeClock()).fetch(["501"])
    assert len(fake_pubtator.requests) == 1


def test_empty_collection_is_a_valid_answer(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    """PubTator knows none of the PMIDs: one request, reported missing, cached (a rerun does not ask again)."""
    cache = tmp_path / "cache"
    result = make_client(fake_pubtator, FakeClock(), cache_dir=cache).fetch(["601", "602"])
    assert result.documents == {} and result.missing == ["601", "602"]
    assert len(fake_pubtator.requests) == 1 and result.retries == 0
    sidecar = cache / cache_key(["601", "602"]).replace(".json.gz", ".pmids")
    assert sidecar.read_text() == "-601\n-602\n"  # both unknown to PubTator
    fake_pubtator.always = "500"
    again = make_client(fake_pubtator, FakeClock(), cache_dir=cache).fetch(["602", "601"])
    assert again.requests == 0 and again.missing == ["601", "602"]
    assert len(fake_pubtator.requests) == 1


def test_transient_error_then_empty_collection(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    """Issue 10: one error among the tries of an empty batch used to turn it into a hard error."""
    fake_pubtator.failures = ["500", "cut"]
    result = make_client(fake_pubtator, FakeClock(), cache_dir=tmp_path).fetch(["611"])
    assert result.missing == ["611"] and result.retries == 2 and result.requests == 3


def test_pmids_not_returned_are_reported(fake_pubtator: FakePubtator, caplog: pytest.LogCaptureFixture) -> None:
    fake_pubtator.add(simple_doc("701"), simple_doc("703"))
    result = make_client(fake_pubtator, FakeClock()).fetch(["701", "702", "703", "PMC123"])
    assert sorted(result.documents) == ["701", "703"]
    assert result.missing == ["702", "PMC123"]
    assert fake_pubtator.requests == [["701", "702", "703"]]  # the non-numeric id is not sent
    assert "702" in caplog.text


# --- cache -------------------------------------------------------------------

def test_rerun_makes_no_request(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    pmids = [str(800 + i) for i in range(150)]
    fake_pubtator.add(*(simple_doc(p) for p in pmids[:-1]))  # the last one is unknown to PubTator
    cache = tmp_path / "cache" / "pubtator"
    first = make_client(fake_pubtator, FakeClock(), cache_dir=cache).fetch(pmids)
    assert len(fake_pubtator.requests) == 2
    files = sorted(cache.glob("*.json.gz"))
    assert [f.name for f in files] == sorted([cache_key(pmids[:100]), cache_key(pmids[100:])])
    assert sorted(p.name for p in cache.glob("*.pmids")) == sorted(f.name.replace(".json.gz", ".pmids") for f in files)
    # raw response, gzip
    with gzip.open(files[0], "rb") as fh:
        assert json.loads(fh.read())["PubTator3"][0]["passages"][0]["text"].startswith("Warfarin and CYP2C9")

    fake_pubtator.requests.clear()
    fake_pubtator.always = "500"  # a request would now fail: the rerun must not make any
    second = make_client(fake_pubtator, FakeClock(), cache_dir=cache).fetch(list(reversed(pmids)))
    assert fake_pubtator.requests == []
    assert second.requests == 0 and second.cache_hits == 2
    assert second.documents == first.documents
    assert second.missing == first.missing == ["949"]


def test_corrupt_cache_entry_is_fetched_again(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    fake_pubtator.add(simple_doc("901"))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / cache_key(["901"])).write_bytes(b"not gzip")
    result = make_client(fake_pubtator, FakeClock(), cache_dir=cache).fetch(["901"])
    assert list(result.documents) == ["901"]
    assert len(fake_pubtator.requests) == 1
    with gzip.open(cache / cache_key(["901"]), "rb") as fh:
        assert b"PubTator3" in fh.read()


# --- parsing -------------------------------------------------------------------

def test_parse_response_shapes() -> None:
    real = real_response()
    doc = real["PubTator3"][0]
    compact = json.dumps(real, separators=(",", ":"))
    for body in [compact, json.dumps(doc), json.dumps([doc]), json.dumps({"documents": [doc]}),
                 json.dumps(doc) + json.dumps(doc), json.dumps(doc) + "\n" + json.dumps(doc) + "\n"]:
        docs = parse_response(body.encode())
        assert {d.pmid for d in docs} == {"22429397"}
        assert len(docs[0].annotations) == 37
    assert parse_response(b'{"PubTator3": []}') == []
    assert parse_response(b'{"source": "PubTator", "documents": []}') == []


@pytest.mark.parametrize(
    ("body", "message"),
    [(b"", "empty body"), (b"<html>oops</html>", "malformed JSON"), (b'{"PubTator3": [', "malformed JSON"),
     (b'{"error": "busy"}', "error body"), (b'{"detail": "Not Found"}', "error body"),
     (b'{"something": 1}', "not a PubTator/BioC JSON shape"), (b"\xff\xfe", "not UTF-8"),
     (b'{"PubTator3": [{"id": "1", "passages": [{"offset": "x"}]}]}', "offset is not an integer")],
)
def test_parse_response_errors(body: bytes, message: str) -> None:
    with pytest.raises(PubtatorResponseError, match=message):
        parse_response(body, where="test body")


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)


def test_malformed_annotation_is_skipped_and_counted(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    doc = simple_doc("1001")
    doc["passages"][0]["annotations"][1]["locations"] = []  # "CYP2C9" without location
    fake_pubtator.add(doc)
    result = make_client(fake_pubtator, FakeClock(), cache_dir=tmp_path).fetch(["1001"])
    assert [a.text for a in result.documents["1001"].annotations] == ["Warfarin", "Bleeding"]
    assert result.bad_annotations == 1 and result.requests == 1
    # the cached answer is parsed the same way
    again = make_client(fake_pubtator, FakeClock(), cache_dir=tmp_path).fetch(["1001"])
    assert again.requests == 0 and again.bad_annotations == 1


def test_rate_limit_shared_by_clients_through_a_directory(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    """Parallel workers and builds (one client each) share 3 requests/s through a locked log, with a margin."""
    fake_pubtator.add(*(simple_doc(str(p)) for p in (1101, 1102, 1103, 1104)))
    clock = FakeClock()
    shared = tmp_path / "ratelimit"
    for pmid in ("1101", "1102", "1103", "1104"):
        client = make_client(fake_pubtator, clock, rate_limit_dir=shared)  # a fresh client each time
        client.fetch([pmid])
    # the later clients waited for their turn: 1/3 s plus 10%
    assert clock.rate_sleeps == pytest.approx([1.1 / 3] * 3)
    logged = [float(t) for t in (shared / "pubtator.log").read_text().split()]
    assert logged == pytest.approx([1000 + 1.1 / 3 * i for i in (1, 2, 3)])  # the last 3 request starts
    # clients logging elsewhere do not wait for each other
    clock2 = FakeClock()
    for n, pmid in enumerate(("1101", "1102")):
        make_client(fake_pubtator, clock2, rate_limit_dir=tmp_path / f"other{n}").fetch([pmid])
    assert clock2.rate_sleeps == []


def test_stale_shared_rate_log_is_ignored(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    fake_pubtator.add(simple_doc("1201"))
    (tmp_path / "pubtator.log").write_text("99999999.0\n")  # from before a reboot: far ahead of the clock
    clock = FakeClock()
    make_client(fake_pubtator, clock, rate_limit_dir=tmp_path).fetch(["1201"])
    assert clock.rate_sleeps == []


def test_grown_pmid_set_asks_only_for_new_pmids(fake_pubtator: FakePubtator, tmp_path: Path) -> None:
    """A scheduled rebuild: the shard's PMIDs grew, so its batches differ; cached PMIDs are not asked again."""
    first = [str(5000 + i) for i in range(150)]
    grown = sorted(first + [str(5150 + i) for i in range(30)] + ["4999"], key=int)
    fake_pubtator.add(*(simple_doc(p) for p in grown))
    cache = tmp_path / "cache"
    make_client(fake_pubtator, FakeClock(), cache_dir=cache).fetch(first)
    fake_pubtator.requests.clear()
    result = make_client(fake_pubtator, FakeClock(), cache_dir=cache).fetch(grown)
    assert sorted(result.documents) == sorted(grown) and result.missing == []
    assert [sorted(r, key=int) for r in fake_pubtator.requests] == [sorted(set(grown) - set(first), key=int)]
    assert result.cache_hits == 2
