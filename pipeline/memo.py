"""Per-document memo of a shard stage: a changed shard recomputes only its new documents.

A rebuild that adds one record to a PMID block changes that block's shard,
and every per-document stage used to recompute the whole shard.  The memo
keeps, per (stage, stage key, shard), an index of the last result of that
shard: for each input record (one raw JSON line of the input shard) its
digest, how many output lines it gave and what it added to the stage counts.
When the shard is computed again, a record whose digest is in the index reuses
its earlier output lines and counts; only the other records are decoded and
go through the stage function.  The output is the same bytes a fresh run
writes, and so are the counts (see [`run_shard`][pipeline.memo.run_shard]).

Attribution contract of a streamed transform (``per_document=False``): it
reads its input documents in order and yields, in order, the output records of
each (records carrying the document's PMID, possibly none); every count of
document *i* is updated after document *i* was read or one of its outputs was
yielded, and before document *i+1* is read or another document's output is
yielded.  Lazy one-document-at-a-time transforms (sentence splitting, type
mapping, the learned model, the filter) satisfy it; extension parses chunks
and merges each document's counts just after yielding it.  A transform that
reads all its input first and counts afterwards (pre-annotation) is called once
per document instead (``per_document=True``), which needs no contract.

Counts touched before the first document is read cannot be attributed: such a
shard is written without a memo index (the next run recomputes it in full).
So is a shard with a repeated PMID or an output whose PMID is not an input's.

Layout: ``OUT/cache/memo/<stage>/<key>/<shard name>.json`` with ``output``
(the file name of the shard's result in ``OUT/cache/stages/<stage>/``, which is
never modified in place) and ``docs`` (``[digest, output bytes, counts]`` per
input record, in input order: store files hold one gzip member per line, so a
document's output is a run of whole members, copied compressed).  Safe to delete at any time.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import __version__, durable, store
from pipeline.documents import FORMAT, Document, from_dict, record_sort_key, to_dict

log = logging.getLogger(__name__)

Transform = Callable[[Iterator[Document], Counter[str]], Iterable[Any]]
MEMO_FORMAT = 3  # 2: outputs are kept as compressed gzip members (one per line); 3: records carry relations
"""Version of the memo index; an index of another version is not used."""


class TouchCounter(Counter[str]):
    """A Counter that remembers which keys were set since the last snapshot, zero increments too.

    [`take`][pipeline.memo.TouchCounter.take] returns the gains of those keys and starts afresh.

    Attributes:
        touched: The keys set or updated since the last ``take``.
    """

    def __init__(self) -> None:
        self.touched: set[str] = set()
        super().__init__()

    def __setitem__(self, key: str, value: int) -> None:
        self.touched.add(key)
        super().__setitem__(key, value)

    def update(self, iterable: Any = None, /, **kwds: int) -> None:  # type: ignore[override]
        """Add counts, as ``Counter.update`` does, and note the keys as touched.

        Args:
            iterable: A mapping of counts or an iterable of keys, or None.
            **kwds: Counts by key.
        """
        # Counter.update of an empty Counter bypasses __setitem__: note the keys here.
        super().update(iterable, **kwds)
        if iterable is not None:
            self.touched.update(iterable.keys() if hasattr(iterable, "keys") else iterable)
        self.touched.update(kwds)

    def take(self, since: dict[str, int]) -> dict[str, int]:
        """Return what the touched keys gained since a snapshot, and clear the touched set.

        Args:
            since: The snapshot of earlier values by key; updated in place to the current values.

        Returns:
            The gain of each touched key (zero gains included).
        """
        delta = {}
        for key in self.touched:
            value = self[key]
            delta[key] = value - since.get(key, 0)
            since[key] = value
        self.touched.clear()
        return delta


def digest_line(line: bytes) -> str:
    """Return a line's digest as hex text: the digest its gzip member's header carries.

    Args:
        line: One JSON line, with its newline.

    Returns:
        The hex form of [`store.digest_line`][pipeline.store.digest_line].
    """
    return store.digest_line(line).hex()


def serialize(record: Any) -> bytes:
    """Return one output line, exactly as [`pipeline.store.dumps_records`][pipeline.store.dumps_records] writes it.

    Args:
        record: A record of [`pipeline.documents`][pipeline.documents].

    Returns:
        Its compact, key-sorted JSON, UTF-8, ending in a newline.
    """
    return json.dumps(to_dict(record), ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def split_lines(payload: bytes) -> list[bytes]:
    """Split a JSON Lines payload into its non-empty lines.

    Args:
        payload: Uncompressed JSON Lines.

    Returns:
        The non-blank lines, each with its newline.
    """
    return [line + b"\n" for line in payload.split(b"\n") if line.strip()]


@dataclass
class Result:
    """One document's share of a shard result: its output lines as gzip members, and its counts.

    Attributes:
        data: The document's output lines, one gzip member per line, in output order.
        counts: What the document added to the stage counts.
    """

    data: bytes = b""
    counts: dict[str, int] = field(default_factory=dict)


class Unattributable(Exception):
    """The transform's outputs or counts cannot be attributed to single documents."""


def _add(target: dict[str, int], delta: dict[str, int]) -> None:
    for key, value in delta.items():
        target[key] = target.get(key, 0) + value


def _streamed(transform: Transform, docs: list[Document]) -> list[Result]:
    """Run ``transform`` once over ``docs``, attributing outputs by PMID and counts by the contract."""
    results = [Result() for _ in docs]
    records: list[list[Any]] = [[] for _ in docs]
    position = {doc.pmid: i for i, doc in enumerate(docs)}
    if len(position) != len(docs):
        raise Unattributable("repeated PMID in the shard")
    counts = TouchCounter()
    snapshot: dict[str, int] = {}
    current: list[int] = [-1]

    def settle() -> None:
        delta = counts.take(snapshot)
        if delta and current[0] < 0:
            raise Unattributable(f"counts updated before the first document: {sorted(delta)}")
        if delta:
            _add(results[current[0]].counts, delta)

    def feed() -> Iterator[Document]:
        for i, doc in enumerate(docs):
            settle()
            current[0] = i
            yield doc

    for record in transform(feed(), counts):
        settle()
        i = position.get(record.pmid)
        if i is None:
            raise Unattributable(f"output PMID {record.pmid} is not an input's")
        current[0] = i
        records[i].append(record)
    settle()
    for result, outs in zip(results, records, strict=True):
        result.data = _members(outs)
    return results


def _members(records: list[Any]) -> bytes:
    return b"".join(store.encode_member(serialize(r)) for r in sorted(records, key=record_sort_key))


def _per_document(transform: Transform, docs: list[Document]) -> list[Result]:
    results = []
    for doc in docs:
        counts: Counter[str] = Counter()
        outs = list(transform(iter([doc]), counts))
        if any(r.pmid != doc.pmid for r in outs):
            raise Unattributable(f"an output of PMID {doc.pmid} carries another PMID")
        results.append(Result(_members(outs), dict(counts)))
    return results


def load_index(index_path: Path, stage_cache: Path) -> dict[str, Result]:
    """Load a shard's earlier results by input digest.

    The earlier output file is read, not decompressed: each document's share
    is a run of whole gzip members, located by the sizes the index keeps.

    Args:
        index_path: The shard's memo index (``OUT/cache/memo/<stage>/<key>/<shard name>.json``).
        stage_cache: The stage's cache directory (``OUT/cache/stages/<stage>/``) holding the output
            file the index names.

    Returns:
        The earlier [`Result`][pipeline.memo.Result] of each input record, by its digest; empty
            when the index or its output is missing, unreadable, of another
            [`MEMO_FORMAT`][pipeline.memo.MEMO_FORMAT], or does not match (logged as a warning).
    """
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
        if index.get("format") != MEMO_FORMAT:
            return {}
        raw = (stage_cache / index["output"]).read_bytes()
        entries = index["docs"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if sum(size for _, size, _ in entries) != len(raw):
        log.warning("memo %s does not match its output file; not used", index_path)
        return {}
    found: dict[str, Result] = {}
    at = 0
    for digest, size, counts in entries:
        found[digest] = Result(raw[at : at + size], counts)
        at += size
    return found


@dataclass
class ShardRun:
    """What [`run_shard`][pipeline.memo.run_shard] computed: output bytes, counts and new memo entries.

    Attributes:
        payload: The output file as it is written: gzip members, one per output line.
        counts: The stage counts of the whole shard.
        docs: The new memo index entries, ``(digest, output bytes, counts)`` per input record in
            input order; None when the outputs cannot be attributed (no index is written).
        reused: How many input records reused an earlier result.
        computed: How many input records went through the transform.
    """

    payload: bytes
    counts: Counter[str]
    docs: list[tuple[str, int, dict[str, int]]] | None
    reused: int
    computed: int


def run_shard(
    input_raw: bytes,
    transform: Transform,
    earlier: dict[str, Result],
    *,
    per_document: bool = False,
) -> ShardRun:
    """Compute the stage's result for one input store file, reusing earlier results by digest.

    Byte-identical to running ``transform`` over the whole shard and writing it
    with [`pipeline.store.write_records`][pipeline.store.write_records], counts included, for
    transforms that keep the attribution contract (module docstring).  Input written one
    member per line is not decompressed for its digests (they are in the member
    headers), and only the documents to compute are decompressed.  When outputs or counts cannot
    be attributed to single documents the shard is computed in full, without memo entries (logged
    at INFO).

    Args:
        input_raw: The input store file's bytes (gzip, one member per line or not).
        transform: The stage function: takes an iterator of documents and a counter, yields output
            records carrying their document's PMID.
        earlier: Earlier results by input digest, from [`load_index`][pipeline.memo.load_index].
        per_document: Call ``transform`` once per document (for transforms that read all their
            input before counting) instead of once over the documents to compute.

    Returns:
        The output bytes, counts, memo entries (None if not attributable) and how many documents
            were reused and computed.
    """
    members = store.scan_members(input_raw)
    if members is None:  # a gzip file written otherwise
        plain_lines = split_lines(store.decompress(input_raw))
        digests = [digest_line(line) for line in plain_lines]

        def line_of(i: int) -> bytes:
            return plain_lines[i]
    else:
        digests = [m.digest.hex() for m in members]

        def line_of(i: int) -> bytes:
            return store.member_line(input_raw, members[i])

    missing = [i for i, d in enumerate(digests) if d not in earlier]
    docs = [from_dict(Document, json.loads(line_of(i))) for i in missing]
    fresh: dict[int, Result] = {}
    attributable = True
    if docs:
        try:
            computed = _per_document(transform, docs) if per_document else _streamed(transform, docs)
            fresh = dict(zip(missing, computed, strict=True))
        except Unattributable as exc:
            if missing != list(range(len(digests))):
                # some documents were reused: recompute the whole shard, the plain way
                log.info("memo not usable for this shard (%s): recomputing it", exc)
                return run_shard(input_raw, transform, {}, per_document=per_document)
            log.info("no memo for this shard: %s", exc)
            attributable = False
    if not attributable:
        return _plain([line_of(i) for i in range(len(digests))], transform)
    counts: Counter[str] = Counter()
    out: list[bytes] = []
    entries: list[tuple[str, int, dict[str, int]]] = []
    for i, digest in enumerate(digests):
        result = fresh.get(i) or earlier[digest]
        out.append(result.data)
        for key, value in result.counts.items():
            counts[key] += value
        entries.append((digest, len(result.data), result.counts))
    return ShardRun(b"".join(out), counts, entries, len(digests) - len(missing), len(missing))


def _plain(lines: list[bytes], transform: Transform) -> ShardRun:
    counts: Counter[str] = Counter()
    docs = (from_dict(Document, json.loads(line)) for line in lines)
    records = sorted(transform(docs, counts), key=record_sort_key)
    return ShardRun(_members(records), counts, None, 0, len(lines))


def write_index(index_path: Path, output_name: str, entries: list[tuple[str, int, dict[str, int]]]) -> None:
    """Write a shard's memo index atomically (after its output file is in the stage cache).

    Args:
        index_path: Where the index goes; its parent directories are created.
        output_name: The file name of the shard's output in the stage cache.
        entries: ``(digest, output bytes, counts)`` per input record, in input order
            ([`ShardRun.docs`][pipeline.memo.ShardRun]).
    """
    index_path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": MEMO_FORMAT, "output": output_name, "docs": [list(e) for e in entries]}
    durable.replace_file(index_path, json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8"))


# --- the reuse cache: a shard's result by input content, across runs ------------------------------


def stage_digest(key: str) -> str:
    """Return the digest naming a stage's results for a key of its parameters and this code's formats.

    Args:
        key: The stage's parameter hash, its source parameters left out (a shard's result depends on its
            input's content, not on where the documents came from).

    Returns:
        A hexadecimal digest of ``key``, the package version and the record format.
    """
    return hashlib.sha256(f"{key}:pgx-corpus {__version__}:records {FORMAT}".encode()).hexdigest()[:24]


def reuse_path(out: Path, stage: str, key: str, input_files: Iterable[Path]) -> Path:
    """Return where a shard's result for this input content and these stage parameters is kept across runs.

    A scheduled rebuild is a new run (new search date, new output directories), but most PMID blocks
    are unchanged: their shards are byte-identical, so every later stage finds its result here instead
    of computing it again.  Layout: ``OUT/cache/stages/<stage>/<digest>.jsonl.gz``, beside its
    ``.counts.json``.  Safe to delete at any time.

    Args:
        out: The build's output directory (``--out``).
        stage: The stage's directory name, e.g. ``04_extended``.
        key: The stage's parameter hash without the source parameters (see
            [`stage_digest`][pipeline.memo.stage_digest]).
        input_files: The files whose content decides the shard's result; their names and contents go
            into the digest.

    Returns:
        The cache file's path (whether or not it exists).
    """
    digest = hashlib.sha256(f"{key}:pgx-corpus {__version__}:records {FORMAT}".encode())
    for path in input_files:
        digest.update(f"{path.name}:{store.content_digest(path)};".encode())
    return out / "cache" / "stages" / stage / f"{digest.hexdigest()[:24]}.jsonl.gz"


def index_path(out: Path, stage: str, key: str, shard: int) -> Path:
    """Return where the per-document memo index of one shard of a stage is kept.

    Args:
        out: The build's output directory (``--out``).
        stage: The stage's directory name.
        key: The stage's parameter hash without the source parameters.
        shard: The shard's PMID block number.

    Returns:
        ``OUT/cache/memo/<stage>/<digest>/shard-NNNNNN.json`` (whether or not it exists).
    """
    name = store.shard_name(shard).replace(".jsonl.gz", ".json")
    return out / "cache" / "memo" / stage / stage_digest(key) / name


def remember(result: Path, reuse: Path, counts: Mapping[str, int]) -> None:
    """Keep a shard's result and counts in the reuse cache, the counts last (they mark the entry complete).

    Args:
        result: The shard's output file, hard-linked (or copied) into the cache.
        reuse: The cache entry, from [`reuse_path`][pipeline.memo.reuse_path].
        counts: The shard's counts, written beside the entry.
    """
    reuse.parent.mkdir(parents=True, exist_ok=True)
    tmp = durable.temporary_name(reuse)
    store.link_or_copy(result, tmp)
    durable.rename(tmp, reuse)
    tmp.unlink(missing_ok=True)  # rename() does nothing when both names link the same file (a repaired entry)
    store.write_counts(store.shard_counts_path(reuse), counts)  # atomic: beside it, then renamed


def keep_in_cache(output: Path, reuse: Path) -> None:
    """Put a complete shard output that is missing from the reuse cache there, from the output and its counts.

    Repairs what a run killed between its output and [`remember`][pipeline.memo.remember] left, or a
    deleted cache.  A cache: a failure is logged, never raised.

    Args:
        output: The shard's output file; nothing is done unless its ``.counts.json`` is beside it.
        reuse: The cache entry, from [`reuse_path`][pipeline.memo.reuse_path]; nothing is done when it is
            complete already.
    """
    counts_path = store.shard_counts_path(output)
    if not counts_path.is_file() or store.shard_counts_path(reuse).exists():
        return
    try:
        remember(output, reuse, Counter(store.read_json(counts_path)))
    except (OSError, ValueError) as exc:
        log.warning("%s: not kept in the reuse cache (%s)", output, exc)


def fill_from_cache(output: Path, reuse: Path) -> bool:
    """Write a shard's output from the reuse cache, if the entry is there, its counts first.

    The counts gain ``reused_shards: 1``; the output is a hard link to the entry (a copy across file
    systems), renamed into place last, so that it appears complete.

    Args:
        output: The shard's output file.
        reuse: The cache entry, from [`reuse_path`][pipeline.memo.reuse_path].

    Returns:
        True when the output was written, False when the cache has no complete entry.
    """
    reuse_counts = store.shard_counts_path(reuse)
    if not (reuse.exists() and reuse_counts.exists()):
        return False
    counts = Counter(store.read_json(reuse_counts))
    counts["reused_shards"] = 1
    output.parent.mkdir(parents=True, exist_ok=True)
    store.write_counts(store.shard_counts_path(output), counts)  # atomic: beside it, then renamed
    tmp = durable.temporary_name(output)
    store.link_or_copy(reuse, tmp)
    durable.rename(tmp, output)  # the output appears last, complete
    return True


def compute_shard(input_path: Path, transform: Transform, index: Path, reuse: Path, *,
                  per_document: bool = False) -> ShardRun:
    """Compute one shard of a per-document stage, reusing the documents its memo index knows.

    Args:
        input_path: The upstream shard (a store file).
        transform: The stage function, called on the documents to compute (see the module docstring for
            its attribution contract).
        index: The shard's memo index, from [`index_path`][pipeline.memo.index_path] (absent: nothing to
            reuse).
        reuse: The shard's reuse cache entry, from [`reuse_path`][pipeline.memo.reuse_path]: the index names
            an output file in its directory.
        per_document: Call ``transform`` once per document instead of streaming the shard through it.

    Returns:
        The result, as [`run_shard`][pipeline.memo.run_shard] returns it.
    """
    earlier = load_index(index, reuse.parent)
    # the input's compressed bytes: the memo reads digests from the member headers
    return run_shard(input_path.read_bytes(), transform, earlier, per_document=per_document)


def write_shard(output: Path, result: ShardRun, counts_path: Path, index: Path, reuse: Path) -> None:
    """Write a computed shard: its output file, its counts and its memo index.

    The index is written before the output appears (callers write ``output`` as a temporary renamed into
    place), and is unusable until the reuse cache entry it names exists: callers then
    [`remember`][pipeline.memo.remember] the output.

    Args:
        output: Where the shard's bytes go (already gzip members).
        result: The shard, from [`compute_shard`][pipeline.memo.compute_shard].
        counts_path: Where its counts go.
        index: Where its memo index goes, if it has one.
        reuse: The reuse cache entry the index names.
    """
    output.write_bytes(result.payload)
    store.write_counts(counts_path, result.counts)
    if result.docs is not None:
        write_index(index, reuse.name, result.docs)
