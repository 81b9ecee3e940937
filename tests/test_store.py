"""The sharded gzip JSONL store: determinism, sharding, error reporting.

Covers: pipeline.documents, pipeline.store
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from pipeline import store
from pipeline.documents import Document, SentenceRecord


def docs(*pmids: str) -> list[Document]:
    return [Document(p, f"Title {p}", f"Title {p}\nAbstract {p}.") for p in pmids]


def test_records_sorted_by_pmid_and_bytes_reproducible(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    store.write_records(a, docs("30", "4", "100"))
    store.write_records(b, docs("100", "30", "4"))
    assert a.read_bytes() == b.read_bytes()
    assert [d.pmid for d in store.read_documents(a)] == ["4", "30", "100"]


def test_shards_are_pmid_blocks(tmp_path: Path) -> None:
    sizes = store.write_shards(tmp_path / "s", docs("5", "15", "12", "x9"), shard_size=10)
    assert sizes == {-1: 1, 0: 1, 1: 2}
    assert store.shard_ids(tmp_path / "s") == [-1, 0, 1]
    assert [d.pmid for d in store.iter_directory(tmp_path / "s", Document)] == ["x9", "5", "12", "15"]


def test_sentence_records_sorted_by_pmid_then_index(tmp_path: Path) -> None:
    recs = [SentenceRecord("2", 1, "b"), SentenceRecord("2", 0, "a"), SentenceRecord("1", 3, "c")]
    path = tmp_path / "s.jsonl.gz"
    store.write_records(path, recs)
    assert [(r.pmid, r.index) for r in store.read_sentences(path)] == [("1", 3), ("2", 0), ("2", 1)]


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write('{"pmid": "1", "title": "t", "text": "t"}\n{"pmid": \n')
    with pytest.raises(store.StoreError, match=r"bad\.jsonl\.gz:2"):
        list(store.read_documents(path))


def test_temporary_files_are_not_shards(tmp_path: Path) -> None:
    store.write_shards(tmp_path, docs("1"))
    (tmp_path / "shard-000000.jsonl.gz-luigi-tmp-0000000001").write_bytes(b"")
    assert len(store.list_shards(tmp_path)) == 1


def test_one_gzip_member_per_line_readable_by_any_gzip_reader(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    store.write_records(path, docs("7", "3", "9"))
    raw = path.read_bytes()
    payload = store.dumps_records(docs("7", "3", "9"))
    assert gzip.decompress(raw) == payload  # the standard reader concatenates the members
    with gzip.open(path, "rb") as fh:
        assert fh.read() == payload
    members = store.scan_members(raw)
    assert members is not None and len(members) == 3
    lines = payload.splitlines(keepends=True)
    assert [store.member_line(raw, m) for m in members] == lines
    assert [m.digest for m in members] == [store.digest_line(line) for line in lines]
    assert (members[0].start, members[-1].end) == (0, len(raw))
    assert store.read_bytes(path) == payload


def test_plain_gzip_is_not_taken_for_members_and_still_read(tmp_path: Path) -> None:
    payload = store.dumps_records(docs("1", "2"))
    assert store.scan_members(gzip.compress(payload)) is None
    assert store.decompress(gzip.compress(payload)) == payload
    assert store.scan_members(b"") == []


def test_corrupt_member_is_an_error(tmp_path: Path) -> None:
    raw = bytearray(store.encode_lines(store.dumps_records(docs("1"))))
    raw[-6] ^= 0xFF  # the CRC
    members = store.scan_members(bytes(raw))
    assert members is not None
    with pytest.raises(OSError, match="corrupt gzip member at byte 0"):
        store.member_line(bytes(raw), members[0])


def test_document_members_make_the_shards_write_records_makes(tmp_path: Path) -> None:
    """Stored documents are gzip members: grouped by block and sorted by PMID they are the store's shard
    files byte for byte, and a block written before is a hard link to the cached file."""

    cache = tmp_path / "cache"
    stored = [store.StoredDocument.of(d) for d in docs("3", "12", "1", "2")]
    assert stored[0].line == store.dumps_records(docs("3"))
    sizes = store.write_members_cached(tmp_path / "a", store.document_members(stored, 10), cache)
    assert sizes == {0: 3, 1: 1}
    fresh = tmp_path / "fresh.jsonl.gz"
    store.write_records(fresh, docs("1", "2", "3"))
    assert (tmp_path / "a" / store.shard_name(0)).read_bytes() == fresh.read_bytes()
    store.write_members_cached(tmp_path / "b", store.document_members(stored, 10), cache)
    assert os.stat(tmp_path / "b" / store.shard_name(0)).st_ino == os.stat(tmp_path / "a" / store.shard_name(0)).st_ino


def test_members_copied_into_a_sample_shard_equal_a_written_shard(tmp_path: Path) -> None:
    recs = [SentenceRecord("12", 0, "a"), SentenceRecord("12", 1, "b"), SentenceRecord("15", 0, "c")]
    store.write_shards(tmp_path / "pool", recs, shard_size=10)
    pool = list(store.iter_members(tmp_path / "pool", {}))
    assert [(m.pmid, m.index, m.name) for m in pool] == [("12", 0, "12_1"), ("12", 1, "12_2"), ("15", 0, "15_1")]
    known = {m.digest: ["x", 9] for m in pool}  # a memo is believed: the lines are not decoded
    assert {(m.pmid, m.index) for m in store.iter_members(tmp_path / "pool", known)} == {("x", 9)}
    sizes = store.write_members_cached(tmp_path / "out", [(1, [m.data for m in pool])], tmp_path / "cache")
    assert sizes == {1: 3}
    assert (tmp_path / "out" / store.shard_name(1)).read_bytes() == (
        tmp_path / "pool" / store.shard_name(1)).read_bytes()
    store.write_members_cached(tmp_path / "again", [(1, [m.data for m in pool])], tmp_path / "cache")
    assert (tmp_path / "again" / store.shard_name(1)).stat().st_ino == (
        tmp_path / "out" / store.shard_name(1)).stat().st_ino  # known content: a hard link


@pytest.mark.parametrize(("files", "expected"), [
    ([{"kept": 2, "dropped": 1}, {"kept": 3}], {"dropped": 1, "kept": 5}),
    ([{"kept": 1.5, "ok": True, "name": "x"}, None], {"kept": 1.5}),  # booleans and text left out; absent file
    ([], {}),
])
def test_sum_counts_adds_numeric_values_of_the_files_present(
    tmp_path: Path, files: list[dict[str, object] | None], expected: dict[str, float]
) -> None:
    paths = []
    for k, counts in enumerate(files):
        path = tmp_path / f"shard-{k}.counts.json"
        if counts is not None:
            store.write_counts(path, counts)
        paths.append(path)
    total = store.sum_counts(paths)
    assert total == expected and list(total) == sorted(total)


def test_content_digest_follows_the_content_and_is_none_for_no_file(tmp_path: Path) -> None:
    import hashlib

    path = tmp_path / "config.yaml"
    assert store.content_digest(path) is None
    assert store.content_digest(tmp_path) is None  # a directory
    path.write_bytes(b"a: 1\n")
    assert store.content_digest(path) == hashlib.sha256(b"a: 1\n").hexdigest()
    path.write_bytes(b"a: 22\n")  # another size: another cache key
    assert store.content_digest(path) == hashlib.sha256(b"a: 22\n").hexdigest()


def test_file_fingerprint_walks_directories_in_order_and_skips_absent_paths(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    for name, data in (("d/b.xml", b"bb"), ("d/a.xml", b"a"), ("d/sub/c.xml", b"ccc"), ("f.txt", b"ffff")):
        (tmp_path / name).write_bytes(data)
    found = store.file_fingerprint([str(tmp_path / "f.txt"), tmp_path / "d", tmp_path / "absent"])
    assert [(Path(p).relative_to(tmp_path).as_posix(), size) for p, size, _ in found] == [
        ("f.txt", 4), ("d/a.xml", 1), ("d/b.xml", 2), ("d/sub/c.xml", 3)]
    assert all(mtime == (tmp_path / p).stat().st_mtime_ns for p, _, mtime in found)


def test_write_json_once_keeps_the_first_content(tmp_path: Path) -> None:
    path = tmp_path / "params.json"
    store.write_json_once(path, {"a": 1})
    store.write_json_once(path, {"a": 2})
    assert store.read_json(path) == {"a": 1}


def test_shard_counts_path_is_beside_the_shard() -> None:
    assert store.shard_counts_path("/o/work/s/shard-000012.jsonl.gz") == Path("/o/work/s/shard-000012.counts.json")
