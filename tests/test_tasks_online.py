"""The online build through the command line, against a fake E-utilities server on 127.0.0.1.

Search -> fetch (incremental cache) -> documents; failed batches make the run
end non-zero with a summary and are retried by the next run; zero hits fail
unless --allow-empty; the API key never reaches an output file or a log line.

Covers: pipeline.cli, pipeline.cli.build_commands, pipeline.documents, pipeline.sources.pubmed_xml, pipeline.store
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import luigi
import pytest
from luigi.task_register import Register

from pipeline import cli, store
from pipeline.documents import Document
from pipeline.sources.pubmed_xml import iter_documents
from tests.conftest import PROJECT
from tests.fixtures.eutils import fake_eutils as fake
from tests.sources.test_pubtator_api import FakePubtator, fake_pubtator, pubtator3_doc  # noqa: F401 (fixture)

TERM = "warfarin[MeSH Terms] AND pharmacogenetics[MeSH Terms]"
SECRET = "SECRET-key-0042"


def demo_records() -> dict[str, bytes]:
    raw = (PROJECT / "data" / "demo" / "pubmed" / "demo.xml").read_bytes()
    records = {}
    for match in re.finditer(rb"<PubmedArticle>.*?</PubmedArticle>", raw, re.DOTALL):
        pmid = re.search(rb"<PMID[^>]*>(\d+)</PMID>", match.group(0))
        assert pmid
        records[pmid.group(1).decode()] = match.group(0) + b"\n"
    return records


@pytest.fixture
def server() -> Iterator[fake.FakeEutils]:
    records = demo_records()
    pmids = sorted(records)
    corpus = fake.big_corpus(TERM, 0)
    corpus.terms[TERM] = pmids[:12]
    for i, pmid in enumerate(pmids):
        corpus.pdat[pmid] = (fake.dt.date(2014, 1, 1) + fake.dt.timedelta(days=i),)
        corpus.mdat[pmid] = fake.dt.date(2015, 1, 1)
    corpus.records.update(records)
    srv = fake.start(corpus)
    config = luigi.configuration.get_config()
    saved = {key: config.get("ncbi", key, None) for key in ("base_url", "batch_size", "backoff", "max_tries")}
    config.set("ncbi", "base_url", srv.base_url)
    config.set("ncbi", "batch_size", "4")
    config.set("ncbi", "backoff", "0.01")
    config.set("ncbi", "max_tries", "2")
    Register.clear_instance_cache()
    yield srv
    for key, value in saved.items():
        if value is None:
            config.remove_option("ncbi", key)
        else:
            config.set("ncbi", key, value)
    Register.clear_instance_cache()
    fake.stop(srv)


def build(out: Path, *extra: str) -> int:
    Register.clear_instance_cache()
    return cli.main(["build", "--out", str(out), "--query", TERM, "--until", "documents",
                     "--annotator", "local", "--api-key", SECRET, "--email", "t@example.org", *extra])


def documents(out: Path) -> list[Document]:
    (manifest,) = sorted((out / "runs").glob("*/manifest.json"), key=lambda p: p.stat().st_mtime)[-1:]
    return list(store.iter_directory(store.read_json(manifest)["outputs"]["documents"], Document))


def test_online_build_then_incremental_rebuild(server: fake.FakeEutils, tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    assert build(tmp_path, "--date", "2026-01-01") == 0
    first = server.corpus.terms[TERM]
    assert sorted(server.fetched_ids()) == first
    assert [d.pmid for d in documents(tmp_path)] == first
    search = store.read_json(next((tmp_path / "searches").rglob("2026-01-01.json")))
    assert search["count"] == 12 and search["pmids"] == first and search["query"] == TERM

    # A later rebuild of the same query: only the new PMIDs are downloaded.
    server.corpus.terms[TERM] = sorted(server.corpus.records)
    server.requests.clear()
    assert build(tmp_path, "--date", "2026-01-02") == 0
    assert sorted(server.fetched_ids()) == sorted(set(server.corpus.records) - set(first))
    assert len(documents(tmp_path)) == len(server.corpus.records)

    # The same build again does nothing, not even a search.
    server.requests.clear()
    assert build(tmp_path, "--date", "2026-01-02") == 0
    assert server.requests == []

    # The API key was sent, but is nowhere in the outputs or the logs.
    assert all(r.params.get("api_key") == SECRET for r in server.calls("efetch"))
    for path in tmp_path.rglob("*"):
        if path.is_file():
            payload = store.gunzip_text(path.read_bytes()) if path.suffix == ".gz" else path.read_text("utf-8")
            assert SECRET not in payload, path
    assert SECRET not in caplog.text


def test_failed_batch_ends_nonzero_and_is_retried(server: fake.FakeEutils, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = server.corpus.terms[TERM][5]
    server.fail_batches_with[bad] = "500"
    assert build(tmp_path, "--date", "2026-01-01") == 3  # WORK_LEFT: batches to retry
    err = capsys.readouterr().err
    assert "efetch batch(es) failed" in err and "retry" in err
    (manifest,) = (tmp_path / "runs").glob("*/manifest.json")
    failures = store.read_json(manifest)["failures"]
    assert len(failures) == 1 and bad in failures[0]["pmids"]
    kept = [d.pmid for d in documents(tmp_path)]
    assert bad not in kept and len(kept) == 12 - len(failures[0]["pmids"])

    # NCBI recovers: the same command retries only what is missing.
    del server.fail_batches_with[bad]
    server.requests.clear()
    assert build(tmp_path, "--date", "2026-01-01") == 0
    assert sorted(server.fetched_ids()) == sorted(failures[0]["pmids"])
    assert [d.pmid for d in documents(tmp_path)] == server.corpus.terms[TERM]


def test_zero_hits_fail_unless_allowed(server: fake.FakeEutils, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    server.corpus.terms[TERM] = []
    assert build(tmp_path, "--date", "2026-01-01") == 1
    assert "Search failed: the query returned no PubMed record (use --allow-empty" in capsys.readouterr().err
    assert build(tmp_path / "allowed", "--date", "2026-01-01", "--allow-empty") == 0
    assert documents(tmp_path / "allowed") == []


# --- pre-annotation by the PubTator3 API inside the build ------------------------------------


def test_pubtator_api_annotator_in_the_build(fake_pubtator: FakePubtator, tmp_path: Path) -> None:  # noqa: F811
    demo = sorted(iter_documents(PROJECT / "data" / "demo" / "pubmed" / "demo.xml", Counter()), key=lambda d: d.pmid)
    known = demo[:5]
    for doc in known:
        # PubTator's text joins title and abstract with a space; the build re-aligns to "\n".
        mentions = [("warfarin", 0, "Chemical", "MESH:D014859")] if "warfarin" in doc.text else []
        fake_pubtator.add(pubtator3_doc(doc.pmid, doc.title, doc.abstract, mentions))
    config = luigi.configuration.get_config()
    config.set("pubtator", "base_url", fake_pubtator.url)
    Register.clear_instance_cache()
    try:
        argv = ["build", "--out", str(tmp_path), "--pubmed-xml", str(PROJECT / "data" / "demo" / "pubmed" / "demo.xml"),
                "--annotator", "pubtator-api", "--until", "preannotated"]
        assert cli.main(argv) == 0
        (manifest,) = (tmp_path / "runs").glob("*/manifest.json")
        counts = store.read_json(manifest)["stages"]["preannotated"]
        assert counts["missing_pmids"] == len(demo) - len(known)
        assert counts["fallback_local"] == len(demo) - len(known)
        assert counts["source:pubtator"] >= 1 and counts["source:local"] >= 1
        requests = len(fake_pubtator.requests)
        assert requests >= 1
        # a build with other downstream options reuses the cached responses: no request
        Register.clear_instance_cache()
        assert cli.main([*argv[:-1], "sentences"]) == 0
        shutil.rmtree(tmp_path / "work" / "03_preannotated")
        Register.clear_instance_cache()
        assert cli.main(argv) == 0
        assert len(fake_pubtator.requests) == requests
    finally:
        config.remove_option("pubtator", "base_url")
        Register.clear_instance_cache()


def test_refetch_revised_downloads_records_revised_since_the_last_search(server: fake.FakeEutils,
                                                                         tmp_path: Path) -> None:
    assert build(tmp_path, "--date", "2025-12-30") == 0
    revised = server.corpus.terms[TERM][3]
    server.corpus.mdat[revised] = fake.dt.date(2026, 1, 2)
    server.requests.clear()
    assert build(tmp_path, "--date", "2026-01-05", "--refetch-revised") == 0
    assert server.fetched_ids() == [revised]
    mdat_searches = [r for r in server.calls("esearch") if r.params.get("datetype") == "mdat"]
    assert mdat_searches and mdat_searches[0].params.get("mindate", "").startswith("2025")


@pytest.mark.slow
def test_a_full_build_with_a_failed_batch_publishes_nothing_and_exits_3(
    server: fake.FakeEutils, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What docs/how-to/online-build.md and the exit-code table say of a failed EFetch batch: the build
    goes on, exits 3 (work left), and OUT/brat is not published (an incomplete collection never is); the
    same command, once NCBI recovers, publishes it."""
    bad = server.corpus.terms[TERM][5]
    server.fail_batches_with[bad] = "500"
    full = ["build", "--out", str(tmp_path), "--query", TERM, "--date", "2026-01-01", "--sample", "all",
            "--annotator", "local", "--email", "t@example.org"]
    Register.clear_instance_cache()
    assert cli.main(full) == 3
    assert "efetch batch(es) failed" in capsys.readouterr().err
    assert not (tmp_path / "brat").exists()
    del server.fail_batches_with[bad]
    Register.clear_instance_cache()
    assert cli.main(full) == 0
    assert any(p.name.startswith(f"{bad}_") for p in (tmp_path / "brat").glob("*.txt"))
