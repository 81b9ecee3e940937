"""The per-document memo: reusing earlier results gives the bytes and counts of a fresh run.

Covers: pipeline.documents, pipeline.memo, pipeline.nlp.learned, pipeline.store, pipeline.tasks.stages
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from pipeline import memo, store
from pipeline.documents import Document, Sentence, SentenceRecord


def doc(pmid: int, text: str) -> Document:
    return Document(pmid=str(pmid), title=text.split(".")[0], text=text,
                    sentences=(Sentence(0, len(text)),))


def lazy(docs: Iterator[Document], counts: Counter[str]) -> Iterator[Document]:
    """One document at a time, counting before and after its output, zero increments included."""
    for d in docs:
        counts["documents"] += 1
        counts[f"len:{len(d.text) % 3}"] += 0
        yield d
        counts["after_yield"] += len(d.text)


def dropping(docs: Iterator[Document], counts: Counter[str]) -> Iterator[SentenceRecord]:
    """Filter-like: several or no outputs per document, counting between them."""
    for d in docs:
        counts["documents"] += 1
        for index in range(int(d.pmid) % 3):
            counts["sentences"] += 1
            yield SentenceRecord(pmid=d.pmid, index=index, text=d.text)
            counts["after"] += 1


def chunked(docs: Iterator[Document], counts: Counter[str]) -> Iterator[Document]:
    """Extension-like: reads chunks of 3, counts each document just after yielding it."""
    chunk: list[Document] = []

    def flush() -> Iterator[Document]:
        own = [Counter({"documents": 1, "chars": len(d.text)}) for d in chunk]
        for d, c in zip(chunk, own, strict=True):
            yield d
            counts.update(c)

    for d in docs:
        chunk.append(d)
        if len(chunk) == 3:
            yield from flush()
            chunk = []
    yield from flush()


def all_first(docs: Iterable[Document], counts: Counter[str]) -> Iterator[Document]:
    """Pre-annotation-like: reads every document first, counts later (needs per-document calls)."""
    documents = list(docs)
    for d in documents:
        counts["documents"] += 1
        yield d


def payload(docs: list[Document]) -> bytes:
    """A store file's bytes (one gzip member per line), as the memo's input."""
    return store.encode_lines(store.dumps_records(docs))


def fresh(transform: memo.Transform, docs: list[Document]) -> tuple[bytes, dict[str, int]]:
    counts: Counter[str] = Counter()
    return store.encode_lines(store.dumps_records(list(transform(iter(docs), counts)))), dict(counts)


def earlier_of(run: memo.ShardRun, lines: bytes) -> dict[str, memo.Result]:
    """The index :func:`memo.write_index` writes for ``run``, loaded back as :func:`memo.load_index` does."""
    assert run.docs is not None
    found, at = {}, 0
    for digest, size, counts in run.docs:
        found[digest] = memo.Result(run.payload[at : at + size], counts)
        at += size
    assert at == len(run.payload)
    return found


CASES = [(lazy, False), (dropping, False), (chunked, False), (all_first, True)]


@pytest.mark.parametrize(("transform", "per_document"), CASES, ids=[c[0].__name__ for c in CASES])
def test_memo_and_fresh_give_the_same_bytes_and_counts(transform: memo.Transform, per_document: bool) -> None:
    old = [doc(p, f"Sentence {p} about CYP2D6{'x' * (p % 5)}.") for p in range(10, 40, 2)]
    new = sorted([*old[:5], *old[6:], doc(11, "A new one."), doc(25, "Another one, longer."), doc(39, "Last.")],
                 key=lambda d: int(d.pmid))
    first = memo.run_shard(payload(old), transform, {}, per_document=per_document)
    assert (first.payload, dict(first.counts)) == fresh(transform, old)
    second = memo.run_shard(payload(new), transform, earlier_of(first, payload(old)), per_document=per_document)
    assert second.reused == len(old) - 1 and second.computed == 3
    assert (second.payload, dict(second.counts)) == fresh(transform, new)


def test_counts_before_the_first_document_disable_the_memo() -> None:
    def setup_count(docs: Iterator[Document], counts: Counter[str]) -> Iterator[Document]:
        counts["setup"] += 1
        yield from docs

    docs = [doc(1, "One."), doc(2, "Two.")]
    run = memo.run_shard(payload(docs), setup_count, {})
    assert run.docs is None
    assert (run.payload, dict(run.counts)) == fresh(setup_count, docs)


def test_touch_counter_notes_keys_set_by_update_of_an_empty_counter() -> None:
    counts = memo.TouchCounter()
    counts.update(Counter({"a": 0, "b": 2}))
    assert counts.take({}) == {"a": 0, "b": 2}


def test_memo_of_the_mapped_stage_with_a_learned_model(tmp_path: Path) -> None:
    """Type mapping then the learned model (``--learned``) keep the attribution contract."""
    from pipeline.nlp import learned
    from pipeline.tasks.stages import MapShard
    from tests.nlp.test_learned import CONFIG, EXAMPLES, example

    model = learned.save_model(learned.train(EXAMPLES, CONFIG), tmp_path / "model", {"seed": 13})
    docs = []
    for k in range(20, 32):
        ex = example(k)
        docs.append(Document(pmid=str(100 + k), title="", text=ex.text, sentences=(Sentence(0, len(ex.text)),),
                             annotations=ex.rules))
    transform = MapShard(out=str(tmp_path / "out"), shard=0, learned=str(model)).transform
    old = docs[:4] + docs[5:10]
    first = memo.run_shard(payload(old), transform, {})
    assert first.docs is not None and first.counts["learned_added"] >= 1
    second = memo.run_shard(payload(docs), transform, earlier_of(first, payload(old)))
    assert (second.reused, second.computed) == (9, 3)
    assert (second.payload, dict(second.counts)) == fresh(transform, docs)


def test_plain_gzip_input_gives_the_same_result() -> None:
    """Input written as one gzip member (an older or foreign writer) is decompressed and digested per line."""
    import gzip

    docs = [doc(p, f"Sentence {p}.") for p in (3, 5, 8)]
    members = memo.run_shard(payload(docs), lazy, {})
    plain = memo.run_shard(gzip.compress(store.dumps_records(docs)), lazy, {})
    assert (plain.payload, plain.counts, plain.docs) == (members.payload, members.counts, members.docs)


def test_index_round_trip_reads_members_without_decompressing(tmp_path: Path) -> None:
    docs = [doc(p, f"Sentence {p} here.") for p in (1, 2, 4)]
    first = memo.run_shard(payload(docs), dropping, {})
    assert first.docs is not None
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "out.jsonl.gz").write_bytes(first.payload)
    memo.write_index(tmp_path / "index.json", "out.jsonl.gz", first.docs)
    earlier = memo.load_index(tmp_path / "index.json", tmp_path / "cache")
    assert earlier == earlier_of(first, b"")
    again = memo.run_shard(payload(docs), dropping, earlier)
    assert (again.reused, again.computed, again.payload) == (3, 0, first.payload)
    (tmp_path / "cache" / "out.jsonl.gz").write_bytes(first.payload + b"x")  # not the indexed file
    assert memo.load_index(tmp_path / "index.json", tmp_path / "cache") == {}


# --- the reuse cache ---------------------------------------------------------------------------


def test_reuse_path_follows_input_content_and_stage_key(tmp_path: Path) -> None:
    shard = tmp_path / "shard-000001.jsonl.gz"
    shard.write_bytes(b"one")
    first = memo.reuse_path(tmp_path / "out", "02_sentences", "k1", [shard])
    assert first.parent == tmp_path / "out" / "cache" / "stages" / "02_sentences"
    assert first.name.endswith(".jsonl.gz")
    assert memo.reuse_path(tmp_path / "out", "02_sentences", "k1", [shard]) == first
    assert memo.reuse_path(tmp_path / "out", "02_sentences", "k2", [shard]) != first
    shard.write_bytes(b"two")
    assert memo.reuse_path(tmp_path / "out", "02_sentences", "k1", [shard]) != first


def test_index_path_names_the_shard_under_the_stage_digest(tmp_path: Path) -> None:
    path = memo.index_path(tmp_path, "05_mapped", "k", 90)
    assert path == tmp_path / "cache" / "memo" / "05_mapped" / memo.stage_digest("k") / "shard-000090.json"


def test_remembered_result_fills_another_output_with_reused_shards_counted(tmp_path: Path) -> None:
    output = tmp_path / "run1" / "shard-000001.jsonl.gz"
    output.parent.mkdir()
    store.write_records(output, [doc(1, "One.")])
    reuse = tmp_path / "cache" / "entry.jsonl.gz"
    assert not memo.fill_from_cache(tmp_path / "run2" / output.name, reuse)  # nothing cached yet
    memo.remember(output, reuse, Counter({"documents": 1}))
    assert store.read_json(store.shard_counts_path(reuse)) == {"documents": 1}
    again = tmp_path / "run2" / output.name
    assert memo.fill_from_cache(again, reuse)
    assert again.read_bytes() == output.read_bytes()
    assert store.read_json(store.shard_counts_path(again)) == {"documents": 1, "reused_shards": 1}
    assert sorted(p.name for p in again.parent.iterdir()) == ["shard-000001.counts.json", output.name]


def test_keep_in_cache_repairs_a_missing_entry_only_for_a_complete_output(tmp_path: Path) -> None:
    output = tmp_path / "shard-000001.jsonl.gz"
    store.write_records(output, [doc(1, "One.")])
    reuse = tmp_path / "cache" / "entry.jsonl.gz"
    memo.keep_in_cache(output, reuse)  # no counts beside the output: not known complete
    assert not reuse.exists()
    store.write_counts(store.shard_counts_path(output), {"documents": 1})
    memo.keep_in_cache(output, reuse)
    assert reuse.read_bytes() == output.read_bytes()
    assert store.read_json(store.shard_counts_path(reuse)) == {"documents": 1}


def test_computed_shard_written_then_reused_from_its_index(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl.gz"
    store.write_records(source, [doc(1, "One."), doc(2, "Two.")])
    index = tmp_path / "memo" / "shard-000000.json"
    reuse = tmp_path / "cache" / "entry.jsonl.gz"
    first = memo.compute_shard(source, lazy, index, reuse)
    assert (first.reused, first.computed) == (0, 2)
    output = tmp_path / "out.jsonl.gz"
    memo.write_shard(output, first, tmp_path / "out.counts.json", index, reuse)
    memo.remember(output, reuse, first.counts)
    assert store.read_json(tmp_path / "out.counts.json") == dict(first.counts)
    store.write_records(source, [doc(1, "One."), doc(2, "Two."), doc(3, "Three.")])
    second = memo.compute_shard(source, lazy, index, reuse)
    assert (second.reused, second.computed) == (2, 1)
    assert (second.payload, dict(second.counts)) == fresh(lazy, [doc(1, "One."), doc(2, "Two."), doc(3, "Three.")])
