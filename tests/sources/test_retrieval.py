"""Retrieval: search records, the incremental EFetch cache, offline sources (fake NCBI on 127.0.0.1).

Covers: pipeline.documents, pipeline.sources.eutils, pipeline.sources.pubmed_xml, pipeline.sources.pubtator_format,
pipeline.sources.retrieval, pipeline.store
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator

import pytest

from pipeline.documents import Document
from pipeline.sources.eutils import EutilsClient, RateLimiter
from pipeline.sources.pubmed_xml import PubmedXmlError
from pipeline.sources.pubtator_format import PubtatorFormatError
from pipeline.sources.retrieval import (
    SearchRecord,
    build_documents,
    check_search,
    document_lines_from_files,
    documents_from_files,
    expand_pubmed_paths,
    fetch_to_cache,
    load_documents,
    previous_search_date,
    query_hash,
    revised_pmids,
    search,
)
from tests.conftest import PROJECT, shared_path
from tests.fixtures.eutils import fake_eutils as fake

TERM = '"Pharmacogenetics"[MeSH Terms]'
DEMO = PROJECT / "data" / "demo" / "pubmed"


def make_client(server) -> EutilsClient:  # type: ignore[no-untyped-def]
    return EutilsClient(server.base_url, tool="pgx-corpus-tests", email="tests@example.org", api_key="KEY-abc-123",
                        sleep=lambda s: None, limiter=RateLimiter(10_000), timeout=5, max_tries=3, backoff=0.01)


def genia_records(limit: int) -> dict[str, bytes]:
    """The PubmedArticle elements of the first ``limit`` GENIA records (real EFetch XML)."""
    folder = shared_path("data", "genia", "pubmed-xml")
    out: dict[str, bytes] = {}
    for path in sorted(folder.glob("*.xml"))[:limit]:
        raw = path.read_bytes()
        match = re.search(rb"<PubmedArticle>.*</PubmedArticle>", raw, re.DOTALL)
        assert match, path
        pmid = re.search(rb"<PMID[^>]*>(\d+)</PMID>", match.group(0))
        assert pmid
        out[pmid.group(1).decode()] = match.group(0) + b"\n"
    return out


@pytest.fixture
def server() -> Iterator:  # type: ignore[type-arg]
    """A fake PubMed: 60 synthetic records (2 without abstract) matching TERM, dated 2001-2002."""
    corpus = fake.big_corpus(TERM, 60, start_pmid=20_000_000, first_day=dt.date(2001, 1, 1), days=700)
    fake.with_records(corpus)
    for pmid in ("20000007", "20000042"):
        corpus.records[pmid] = fake.synthetic_record(pmid, abstract=None)
    srv = fake.start(corpus)
    yield srv
    fake.stop(srv)


def pmids_of(server) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(server.corpus.terms[TERM], key=int)


# --- search records ----------------------------------------------------------------------------------


def test_search_record(server) -> None:  # type: ignore[no-untyped-def]
    record = search(make_client(server), TERM, dt.date(2026, 11, 22))
    assert record.count == 60 and list(record.pmids) == pmids_of(server)
    data = record.to_json()
    assert {"query", "search_date", "count", "pmids"} <= set(data)
    assert data["search_date"] == "2026-11-22" and data["query"] == TERM
    assert json.loads(json.dumps(data)) == data
    assert SearchRecord.from_json(data) == record
    assert "KEY-abc-123" not in json.dumps(data)


def test_search_zero_hits(server) -> None:  # type: ignore[no-untyped-def]
    record = search(make_client(server), "nothing matches this", dt.date(2026, 1, 1))
    assert record.count == 0 and record.pmids == ()
    assert record.to_json()["errors"] == {"PhraseNotFound": ["nothing matches this"]}


def test_revised_pmids_uses_mdat(server) -> None:  # type: ignore[no-untyped-def]
    since = dt.date(2002, 1, 1)
    revised = revised_pmids(make_client(server), TERM, since)
    expected = sorted((p for p, d in server.corpus.mdat.items() if d >= since), key=int)
    assert revised == expected and 0 < len(revised) < 60
    last = server.calls("esearch")[-1]
    assert last.params["datetype"] == "mdat" and last.params["mindate"] == "2002/01/01"


# --- the cache ---------------------------------------------------------------------------------------


def test_fetch_then_load(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pmids = pmids_of(server)
    report = fetch_to_cache(make_client(server), pmids, tmp_path, batch_size=25)
    assert report.ok and report.batches == 3 and report.downloaded == 60 and report.already_cached == 0
    assert [len(r.ids) for r in server.calls("efetch")] == [25, 25, 10]
    files = sorted((tmp_path / "batches").glob("*.xml.gz"))
    assert [f.name.split("-")[:2] for f in files] == [["20000000", "20000024"], ["20000025", "20000049"],
                                                      ["20000050", "20000059"]]
    assert gzip.decompress(files[0].read_bytes()).startswith(b'<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet')
    index = json.loads((tmp_path / "index.json").read_text())
    assert set(index["pmids"]) == set(pmids)
    assert index["pmids"]["20000030"]["batch"] == files[1].name
    counts: Counter[str] = Counter()
    docs = list(load_documents(tmp_path, list(reversed(pmids)) + ["99999999"], counts))
    assert [d.pmid for d in docs] == [p for p in pmids if p not in ("20000007", "20000042")]
    assert all(isinstance(d, Document) and d.text.startswith(d.title + "\n") for d in docs)
    assert counts == Counter(requested=61, kept=58, no_abstract=2, missing_from_cache=1)


def test_rerun_downloads_nothing_and_new_pmids_only_are_fetched(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pmids = pmids_of(server)
    client = make_client(server)
    fetch_to_cache(client, pmids[:40], tmp_path, batch_size=15)
    first_calls = len(server.calls("efetch"))
    again = fetch_to_cache(client, pmids[:40], tmp_path, batch_size=15)
    assert len(server.calls("efetch")) == first_calls  # nothing downloaded
    assert again.downloaded == 0 and again.batches == 0 and again.already_cached == 40
    more = fetch_to_cache(client, pmids, tmp_path, batch_size=15)
    new_calls = server.calls("efetch")[first_calls:]
    assert sorted(i for r in new_calls for i in r.ids) == pmids[40:]
    assert more.downloaded == 20 and more.already_cached == 40
    counts: Counter[str] = Counter()
    assert len(list(load_documents(tmp_path, pmids, counts))) == 58


def test_refetch_downloads_again_and_newest_copy_wins(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pmids = pmids_of(server)
    client = make_client(server)
    fetch_to_cache(client, pmids, tmp_path, batch_size=30)
    server.corpus.records["20000003"] = fake.synthetic_record("20000003", title="Revised title of 20000003.")
    calls = len(server.calls("efetch"))
    report = fetch_to_cache(client, pmids, tmp_path, batch_size=30, refetch=["20000003", "20000010", "555"])
    assert [r.ids for r in server.calls("efetch")[calls:]] == [["20000003", "20000010"]]
    assert report.refetched == 2 and report.downloaded == 2
    counts: Counter[str] = Counter()
    docs = {d.pmid: d for d in load_documents(tmp_path, pmids, counts)}
    assert docs["20000003"].title == "Revised title of 20000003."
    assert counts["superseded_copies"] == 2 and counts["kept"] == 58


def test_failed_batch_is_reported_and_others_kept(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pmids = pmids_of(server)
    server.fail_batches_with["20000033"] = "truncated"
    report = fetch_to_cache(make_client(server), pmids, tmp_path, batch_size=20)
    assert not report.ok and report.batches == 2 and report.downloaded == 40
    (failed,) = report.failed
    assert failed["batch"] == "20000020..20000039" and failed["pmids"] == pmids[20:40]
    assert "efetch batch of 20 PMID(s) 20000020..20000039" in failed["error"]
    assert "truncated or unparseable" in failed["error"]
    data = report.to_json()
    assert data["failed_pmids"] == 20 and json.loads(json.dumps(data)) == data
    assert "KEY-abc-123" not in json.dumps(data)
    counts: Counter[str] = Counter()
    assert len(list(load_documents(tmp_path, pmids, counts))) == 38  # 40 fetched, 2 without abstract
    assert counts["missing_from_cache"] == 20
    # The next run only asks for the failed batch.
    del server.fail_batches_with["20000033"]
    calls = len(server.calls("efetch"))
    retry = fetch_to_cache(make_client(server), pmids, tmp_path, batch_size=20)
    assert retry.ok and [r.ids for r in server.calls("efetch")[calls:]] == [pmids[20:40]]


def test_pmids_not_returned_are_remembered(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pmids = pmids_of(server)[:10] + ["20999999"]  # unknown to PubMed (deleted record)
    report = fetch_to_cache(make_client(server), pmids, tmp_path)
    assert report.not_returned == ["20999999"] and report.downloaded == 10
    calls = len(server.calls("efetch"))
    assert fetch_to_cache(make_client(server), pmids, tmp_path).batches == 0
    assert len(server.calls("efetch")) == calls
    counts: Counter[str] = Counter()
    list(load_documents(tmp_path, pmids, counts))
    assert counts["not_returned"] == 1


def test_interrupted_batch_is_not_trusted(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pmids = pmids_of(server)[:20]
    fetch_to_cache(make_client(server), pmids, tmp_path, batch_size=10)
    sidecar = sorted((tmp_path / "batches").glob("*.json"))[1]
    sidecar.unlink()  # as if the run died between the XML file and its sidecar
    calls = len(server.calls("efetch"))
    report = fetch_to_cache(make_client(server), pmids, tmp_path, batch_size=10)
    assert [r.ids for r in server.calls("efetch")[calls:]] == [pmids[10:]]
    assert report.downloaded == 10


def test_batch_names_are_deterministic(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pmids = pmids_of(server)[:12]
    fetch_to_cache(make_client(server), pmids, tmp_path / "a", batch_size=5)
    fetch_to_cache(make_client(server), pmids, tmp_path / "b", batch_size=5)
    names_a = sorted(p.name for p in (tmp_path / "a" / "batches").iterdir())
    names_b = sorted(p.name for p in (tmp_path / "b" / "batches").iterdir())
    assert names_a == names_b
    for name in names_a:
        if name.endswith(".xml.gz"):
            assert (tmp_path / "a" / "batches" / name).read_bytes() == (tmp_path / "b" / "batches" / name).read_bytes()


def test_genia_records_round_trip(tmp_path) -> None:
    """Real EFetch records (GENIA) served by the fake server, cached, and parsed back."""
    records = genia_records(40)
    corpus = fake.Corpus(terms={TERM: list(records)}, records=records)
    srv = fake.start(corpus)
    try:
        client = make_client(srv)
        record = search(client, TERM, dt.date(2026, 11, 22))
        report = fetch_to_cache(client, record.pmids, tmp_path, batch_size=16)
    finally:
        fake.stop(srv)
    assert report.ok and report.downloaded == 40
    counts: Counter[str] = Counter()
    docs = list(load_documents(tmp_path, record.pmids, counts))
    assert len(docs) == 40 and counts["kept"] == 40
    assert [d.pmid for d in docs] == sorted(records, key=int)
    assert all(d.mesh and d.year and d.journal for d in docs)


# --- offline sources ------------------------------------------------------------------------------------


def test_demo_directory(tmp_path) -> None:
    counts: Counter[str] = Counter()
    docs = list(documents_from_files([DEMO], [], counts))
    assert [d.pmid for d in docs] == [str(p) for p in range(90000001, 90000021)]
    assert counts["files_pubmed_xml"] == 2 and counts["kept"] == 20
    assert expand_pubmed_paths([DEMO]) == [DEMO / "demo.xml", DEMO / "demo_update.xml.gz"]


def test_directories_are_recursive_sorted_and_deduplicated(tmp_path) -> None:
    (tmp_path / "b" / "deeper").mkdir(parents=True)
    (tmp_path / "a").mkdir()
    shutil.copy(DEMO / "demo.xml", tmp_path / "b" / "deeper" / "x.xml")
    shutil.copy(DEMO / "demo_update.xml.gz", tmp_path / "a" / "y.xml.gz")
    shutil.copy(DEMO / "demo.xml", tmp_path / "a" / "copy.xml")
    (tmp_path / "a" / "notes.txt").write_text("not xml")
    assert expand_pubmed_paths([tmp_path]) == [tmp_path / "a" / "copy.xml", tmp_path / "a" / "y.xml.gz",
                                               tmp_path / "b" / "deeper" / "x.xml"]
    counts: Counter[str] = Counter()
    docs = list(documents_from_files([tmp_path], [], counts))
    assert len(docs) == 20 and counts["duplicate_documents"] == 17 and counts["kept"] == 20
    assert counts["records"] == 37


def test_pubtator_files_keep_annotations(tmp_path) -> None:
    path = tmp_path / "a.pubtator"
    path.write_text(
        "90000001|t|Duplicate of a demo record.\n90000001|a|Ignored because the XML came first.\n\n"
        "123|t|CYP2C9 and warfarin.\n123|a|Warfarin dose depends on CYP2C9.\n"
        "123\t0\t6\tCYP2C9\tGene\t1559\n123\t11\t19\twarfarin\tChemical\tMESH:D014859\n"
        "123\t21\t29\tWarfarin\tChemical\tMESH:D014859\n123\t5\tx\tfoo\tGene\n\n"
        "124|t|Title only\n124|a|\n",
        encoding="utf-8",
    )
    counts: Counter[str] = Counter()
    docs = list(documents_from_files([DEMO / "demo.xml"], [path], counts, skip_bad_lines=True))
    pubtator = [d for d in docs if d.origin == "pubtator"]
    assert [d.pmid for d in pubtator] == ["123"]
    doc = pubtator[0]
    assert doc.text == "CYP2C9 and warfarin.\nWarfarin dose depends on CYP2C9."
    assert [(a.text, a.type, a.source) for a in doc.annotations] == [
        ("CYP2C9", "Gene", "pubtator"), ("warfarin", "Chemical", "pubtator"), ("Warfarin", "Chemical", "pubtator")]
    assert counts["duplicate_documents"] == 1 and counts["no_abstract"] == 1
    assert counts["pubtator_bad_lines"] == 1 and counts["pubtator_annotations_kept"] == 3
    with pytest.raises(PubtatorFormatError, match=r"a.pubtator:9:"):
        list(documents_from_files([], [path], Counter()))


def test_ncbi_disease_as_offline_source() -> None:
    folder = shared_path("data", "ncbi-disease")
    counts: Counter[str] = Counter()
    docs = list(documents_from_files([], sorted(folder.glob("*.txt")), counts))
    assert len(docs) == 792 and counts["pubtator_duplicate_documents"] == 1
    assert counts["pubtator_annotations_text_mismatch"] == 0


@pytest.mark.parametrize(
    ("xml", "pubtator", "error", "pattern"),
    [
        (["missing.xml"], [], PubmedXmlError, r"missing.xml: no such file"),
        (["wrong.xml"], [], PubmedXmlError, r"wrong.xml:1: .*"),
        (["notpubmed.xml"], [], PubmedXmlError, r"notpubmed.xml:1: not PubMed XML"),
        ([], ["demo.xml"], PubtatorFormatError, r"demo.xml:1: "),
        ([], ["missing.txt"], PubtatorFormatError, r"missing.txt: cannot read"),
    ],
)
def test_wrong_or_unreadable_input_names_the_file(tmp_path, xml, pubtator, error, pattern) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "wrong.xml").write_text("123|t|A PubTator file named .xml\n123|a|Text.\n")
    (tmp_path / "notpubmed.xml").write_text('<?xml version="1.0"?><collection><document/></collection>')
    shutil.copy(DEMO / "demo.xml", tmp_path / "demo.xml")
    with pytest.raises(error, match=pattern):
        list(documents_from_files([tmp_path / p for p in xml], [tmp_path / p for p in pubtator], Counter()))


def test_document_lines_are_the_documents_as_the_store_writes_them(tmp_path) -> None:
    """Parsed, then read back from the parse cache without decoding: same documents, order and counts."""
    from pipeline.store import StoredDocument

    path = tmp_path / "a.pubtator"
    path.write_text("90000001|t|Duplicate.\n90000001|a|Skipped.\n\n123|t|CYP2C9.\n123|a|Warfarin dose.\n",
                    encoding="utf-8")
    sources = [DEMO / "demo.xml", DEMO / "demo_update.xml.gz", DEMO / "demo.xml"]
    expected_counts: Counter[str] = Counter()
    expected = [StoredDocument.of(d) for d in documents_from_files(sources, [path], expected_counts)]
    for _ in ("parsed", "from the cache"):
        counts: Counter[str] = Counter()
        lines = list(document_lines_from_files(sources, [path], counts, cache_dir=tmp_path / "cache"))
        assert lines == expected and counts == expected_counts
    assert len(expected) == 21 and expected_counts["duplicate_documents"] == 18


# --- a build's documents -------------------------------------------------------------------------


def test_build_documents_merges_the_search_and_the_files_which_win(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pmids = pmids_of(server)[:10]
    fetch_to_cache(make_client(server), pmids, tmp_path / "efetch", batch_size=25)
    path = tmp_path / "a.pubtator"
    path.write_text(f"{pmids[0]}|t|From the file.\n{pmids[0]}|a|Its abstract.\n\n", encoding="utf-8")
    counts: Counter[str] = Counter()
    failed = {"failed": [{"pmids": ["1", "2"]}]}
    docs = list(build_documents(counts, efetch_cache=tmp_path / "efetch", search={"pmids": pmids}, fetch=failed,
                                pubtator=[path], cache_dir=tmp_path / "sources"))
    assert [d.pmid for d in docs] == [p for p in pmids if p != "20000007"]  # 20000007 has no abstract
    assert docs[0].pmid == pmids[0]  # first seen in the search, replaced by the file's
    assert b"From the file." in gzip.decompress(docs[0].member)
    assert (counts["searched"], counts["duplicate_pmid"], counts["documents"]) == (10, 1, 9)
    assert (counts["fetch_failed_batches"], counts["fetch_failed_pmids"]) == (1, 2)


def test_build_documents_offline_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    counts: Counter[str] = Counter()
    docs = list(build_documents(counts, pubmed_xml=[DEMO / "demo.xml"], cache_dir=tmp_path / "sources"))
    assert len(docs) == counts["documents"] == 17 and "searched" not in counts
    with pytest.raises(ValueError, match="efetch cache"):
        build_documents(Counter(), search={"pmids": []}, cache_dir=tmp_path / "sources")


@pytest.mark.parametrize(("dates", "today", "expected"), [
    (["2026-01-01", "2026-02-01", "2026-03-01"], "2026-02-15", dt.date(2026, 2, 1)),
    (["2026-02-15"], "2026-02-15", None),  # today's own record is not an earlier search
    ([], "2026-02-15", None),
])
def test_previous_search_date(tmp_path, dates, today, expected) -> None:  # type: ignore[no-untyped-def]
    for date in dates:
        (tmp_path / f"{date}.json").write_text("{}", encoding="utf-8")
    assert previous_search_date(tmp_path, today) == expected


def test_query_hash_ignores_white_space_differences() -> None:
    assert query_hash("warfarin  AND\nCYP2C9") == query_hash("warfarin AND CYP2C9") != query_hash("warfarin")
    assert len(query_hash("q")) == 12


def test_an_empty_search_is_refused_unless_allowed() -> None:
    empty = SearchRecord(query="nothing", search_date=dt.date(2026, 1, 1), count=0, pmids=())
    with pytest.raises(RuntimeError, match="--allow-empty"):
        check_search(empty)
    assert check_search(empty, allow_empty=True) is empty
