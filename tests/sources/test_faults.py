"""Fault injection at the client level: each fault kind, for E-utilities and PubTator3 (issue 10).

A loopback server (tests/fixtures/faults.py) injects the fault on the first
two tries of a request; the third try must give exactly the fault-free answer.
A fault on every try ends in an error naming the request, never in a wrong
answer.  Timeouts and backoffs are short so the file runs in seconds.

Covers: pipeline.sources.eutils, pipeline.sources.pubtator_api
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipeline.sources.eutils import EutilsClient, EutilsError, RateLimiter
from pipeline.sources.pubtator_api import PubtatorApiError, PubtatorClient
from tests.fixtures import faults
from tests.fixtures.eutils.fake_eutils import Corpus, synthetic_record

TERM = "warfarin"
PMIDS = [str(3000 + i) for i in range(6)]
UNKNOWN_TO_PUBTATOR = ["3004", "3005"]


@pytest.fixture(scope="module")
def server() -> Iterator[faults.FaultServer]:
    corpus = Corpus(terms={TERM: PMIDS}, records={p: synthetic_record(p) for p in PMIDS})
    docs = {p: faults.pubtator_document(p, f"Warfarin study {p}.", "CYP2C9 carriers bled.",
                                        {"Warfarin": ("Chemical", "MESH:D014859"), "CYP2C9": ("Gene", "1559")})
            for p in PMIDS if p not in UNKNOWN_TO_PUBTATOR}
    srv = faults.start(corpus, docs, slow_seconds=0.6)
    yield srv
    faults.stop(srv)


def eutils(srv: faults.FaultServer, tries: int = 3) -> EutilsClient:
    return EutilsClient(srv.eutils_url, tool="t", email="e@example.org", timeout=0.3, max_tries=tries, backoff=0.01,
                        sleep=lambda s: None, limiter=RateLimiter(1000), seed=1)


def pubtator(srv: faults.FaultServer, tries: int = 3) -> PubtatorClient:
    return PubtatorClient(srv.pubtator_url, timeout=0.3, max_tries=tries, backoff=0.01, batch_size=2,
                          requests_per_second=1000, sleep=lambda s: None)


def fetch_all(srv: faults.FaultServer, tries: int = 3) -> tuple[bytes, tuple[str, ...], dict[str, object],
                                                                  list[str]]:
    client = eutils(srv, tries)
    found = client.search_pmids(TERM)
    xml = client.efetch(PMIDS)
    result = pubtator(srv, tries).fetch(PMIDS)
    return xml, found.pmids, result.documents, result.missing  # type: ignore[return-value]


@pytest.mark.parametrize("fault", faults.FAULTS)
@pytest.mark.parametrize("service", faults.SERVICES)
def test_each_fault_is_survived_with_the_same_answer(server: faults.FaultServer, service: str, fault: str) -> None:
    server.plan = faults.FaultPlan()
    reference = fetch_all(server)
    server.plan = faults.FaultPlan(first={service: [fault, fault]})
    before = len(server.requests(service))
    assert fetch_all(server) == reference
    met = [s.fault for s in server.requests(service)[before:] if s.fault]
    assert met == [fault, fault]
    # the batch PubTator does not know is an empty collection: missing, not an error
    assert reference[3] == UNKNOWN_TO_PUBTATOR


@pytest.mark.parametrize("fault", ["500", "lying", "reset", "malformed"])
def test_a_fault_on_every_try_is_an_error_naming_the_request(server: faults.FaultServer, fault: str) -> None:
    server.plan = faults.FaultPlan(first={"eutils": [fault] * 2, "pubtator": [fault] * 2})
    with pytest.raises(EutilsError, match=r"efetch batch of 6 PMID\(s\) 3000\.\.3005: failed after 2 tries"):
        eutils(server, tries=2).efetch(PMIDS)
    with pytest.raises(PubtatorApiError, match=r"batch 2 PMIDs 3000\.\.3001 failed after 2 tries"):
        pubtator(server, tries=2).fetch(PMIDS)
