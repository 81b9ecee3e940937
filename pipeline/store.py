"""The document store: sharded, gzip-compressed JSON Lines, sorted by PMID.

Layout of one stage's output directory::

    <stage dir>/
        shard-000012.jsonl.gz   records whose PMID falls in block 12
        ...
        counts.json             what the stage kept, dropped and why

A shard holds the PMIDs ``[k * shard_size, (k + 1) * shard_size)``: blocks are
stable when a rebuild adds records, so an incremental run only changes the
shards new PMIDs fall into.  Non-numeric ids go to shard ``-1``.

Files are written deterministically (records sorted by PMID then sentence
index, ``sort_keys`` JSON, gzip headers without name or mtime), so rerunning a
stage on the same input gives byte-identical files.  Each line is its own gzip
member, with its digest and size in the member header (see
[`encode_member`][pipeline.store.encode_member]): any gzip reader reads the file, and a rebuild copies
the compressed members of unchanged documents instead of recompressing the
shard.  That costs about 30% more disk than one member per file.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any, TypeVar

from pipeline import durable
from pipeline.documents import Document, SentenceRecord, from_dict, pmid_sort_key, record_sort_key, to_dict
from pipeline.paths import list_files

R = TypeVar("R", Document, SentenceRecord)

DEFAULT_SHARD_SIZE = 1_000_000
"""PMIDs per shard: shard ``k`` holds ``[k * size, (k + 1) * size)``."""
SHARD_RE = re.compile(r"^shard-(-?\d+)\.jsonl\.gz$")
"""A shard file name; group 1 is the shard number."""


class StoreError(ValueError):
    """A store file that cannot be read; the message names file and line."""


def shard_of(pmid: str, shard_size: int = DEFAULT_SHARD_SIZE) -> int:
    """Return the block (shard number) a PMID belongs to.

    Args:
        pmid: The record's PMID (or other document id).
        shard_size: PMIDs per shard.

    Returns:
        ``int(pmid) // shard_size``; ``-1`` for a non-numeric id.
    """
    return int(pmid) // shard_size if pmid.isdigit() else -1


def shard_name(shard: int) -> str:
    """Return the file name of a shard.

    Args:
        shard: The shard number (``-1`` for non-numeric ids).

    Returns:
        ``shard-NNNNNN.jsonl.gz`` (six digits), ``shard--00001.jsonl.gz`` for ``-1``.
    """
    return f"shard-{shard:06d}.jsonl.gz" if shard >= 0 else "shard--00001.jsonl.gz"


def dumps_records(records: Iterable[Document | SentenceRecord]) -> bytes:
    """Serialize records as sorted, compact JSON Lines.

    Args:
        records: Documents or sentence records.

    Returns:
        Uncompressed UTF-8 JSON Lines, records sorted by
            [`record_sort_key`][pipeline.documents.record_sort_key], keys sorted, one newline after each
            line (empty bytes for no record).
    """
    ordered = sorted(records, key=record_sort_key)
    lines = [json.dumps(to_dict(r), ensure_ascii=False, sort_keys=True, separators=(",", ":")) for r in ordered]
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")

GZIP_LEVEL = 1
"""zlib compression level of every store file (see [`write_bytes_gz`][pipeline.store.write_bytes_gz])."""

# One gzip member per line (RFC 1952 allows any number of members; every gzip
# reader concatenates them).  Each member's header carries, in an extra field
# (subfield "PG", as BGZF's "BC" does for BAM files), the member's total size
# and a digest of its line.  A later run finds every line's digest and
# compressed bytes by reading headers only: an unchanged document's output is
# copied compressed, never decompressed nor compressed again (pipeline/memo.py).
MEMBER_SUBFIELD = b"PG"
"""The gzip extra-field subfield id that carries a member's size and line digest."""
_DIGEST_SIZE = 16
_EXTRA_LEN = 4 + 4 + _DIGEST_SIZE  # subfield id and length, member size, digest
_HEADER_LEN = 10 + 2 + _EXTRA_LEN
_XFL_FASTEST = 4


def digest_line(line: bytes) -> bytes:
    """Return the digest of one line that its member's header carries.

    Args:
        line: One JSON line, with its newline.

    Returns:
        Its 16-byte BLAKE2b digest.
    """
    return hashlib.blake2b(line, digest_size=_DIGEST_SIZE).digest()


def encode_member(line: bytes) -> bytes:
    """Compress one line as a gzip member carrying its size and digest in the header's extra field.

    Args:
        line: One JSON line, with its newline.

    Returns:
        The gzip member (reproducible: no name, mtime 0).
    """
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    data = compressor.compress(line) + compressor.flush()
    size = _HEADER_LEN + len(data) + 8
    extra = MEMBER_SUBFIELD + struct.pack("<HI", 4 + _DIGEST_SIZE, size) + digest_line(line)
    header = struct.pack("<BBBBIBBH", 0x1F, 0x8B, 8, 4, 0, _XFL_FASTEST, 255, len(extra))  # FLG=FEXTRA, mtime 0
    return header + extra + data + struct.pack("<II", zlib.crc32(line), len(line) & 0xFFFFFFFF)


def encode_lines(payload: bytes) -> bytes:
    """Compress JSON Lines as a store file's bytes, one gzip member per line.

    Args:
        payload: Uncompressed JSON Lines.

    Returns:
        The concatenated members; blank lines are dropped.
    """
    return b"".join(encode_member(line + b"\n") for line in payload.split(b"\n") if line.strip())


@dataclass(frozen=True)
class Member:
    """One member of a store file: its line's digest and where its bytes are in the file.

    Attributes:
        digest: The line's digest ([`digest_line`][pipeline.store.digest_line]), from the header.
        start: Offset of the member's first byte in the file (half-open byte range).
        end: Offset just past the member's last byte.
    """

    digest: bytes
    start: int
    end: int


def scan_members(raw: bytes) -> list[Member] | None:
    """Locate the members of a store file's bytes, from their headers only.

    Args:
        raw: The whole file's bytes.

    Returns:
        The members in file order; None if the file is not one member per line as
            [`encode_member`][pipeline.store.encode_member] writes them (a gzip file written otherwise:
            read it with ``gzip.decompress``).
    """
    members: list[Member] = []
    at, total = 0, len(raw)
    while at < total:
        if total - at < _HEADER_LEN + 8 or raw[at : at + 4] != b"\x1f\x8b\x08\x04":
            return None
        xlen, sub, sublen, size = struct.unpack_from("<H2sHI", raw, at + 10)
        if xlen != _EXTRA_LEN or sub != MEMBER_SUBFIELD or sublen != 4 + _DIGEST_SIZE or at + size > total:
            return None
        members.append(Member(raw[at + 20 : at + 20 + _DIGEST_SIZE], at, at + size))
        at += size
    return members


def member_line(raw: bytes, member: Member) -> bytes:
    """Decompress the line a member holds, checked against the member's CRC and size.

    Args:
        raw: The whole file's bytes.
        member: The member, from [`scan_members`][pipeline.store.scan_members].

    Returns:
        The line, with its newline.

    Raises:
        OSError: If the member is corrupt (CRC or size mismatch); the message gives its byte offset.
    """
    line = zlib.decompress(raw[member.start + _HEADER_LEN : member.end - 8], -zlib.MAX_WBITS)
    crc, size = struct.unpack_from("<II", raw, member.end - 8)
    if zlib.crc32(line) != crc or len(line) & 0xFFFFFFFF != size:
        raise OSError(f"corrupt gzip member at byte {member.start}")
    return line


@dataclass(frozen=True)
class MemberLine:
    """One line of a store file, decompressed only when ``line`` is read (its digest is in the header).

    Attributes:
        raw: The whole file's bytes.
        member: Where the line's member is in ``raw``.
    """

    raw: bytes
    member: Member

    @property
    def digest(self) -> str:
        """The line's digest as hex text, read from the header."""
        return self.member.digest.hex()

    @property
    def line(self) -> bytes:
        """The line, with its newline (decompressed now; ``OSError`` if the member is corrupt)."""
        return member_line(self.raw, self.member)

    @property
    def data(self) -> bytes:
        """The gzip member itself, as the file holds it (to be written out as it is)."""
        return self.raw[self.member.start : self.member.end]


def iter_member_lines(path: str | os.PathLike[str]) -> Iterator[MemberLine | bytes]:
    """Iterate over the lines of a store file without decompressing them when possible.

    Args:
        path: A gzip store file.

    Yields:
        Each line as a [`MemberLine`][pipeline.store.MemberLine] when the file is one member per line,
            else as decompressed bytes with its newline (blank lines skipped).
    """
    raw = Path(path).read_bytes()
    members = scan_members(raw)
    if members is None:
        for line in decompress(raw).split(b"\n"):
            if line.strip():
                yield line + b"\n"
        return
    for member in members:
        yield MemberLine(raw, member)


def decompress(raw: bytes) -> bytes:
    """Decompress gzip bytes (one member per line, or any gzip file).

    Args:
        raw: The gzip bytes.

    Returns:
        The uncompressed content.

    Raises:
        OSError: If a member is corrupt or the bytes are not gzip.
    """
    members = scan_members(raw)
    if members is None:
        return gzip.decompress(raw)
    return b"".join(member_line(raw, m) for m in members)


def write_bytes_gz(path: str | os.PathLike[str], payload: bytes) -> None:
    """Write ``payload`` gzip-compressed as one member with a reproducible header (no name, mtime 0).

    Level 1: every stage writes its whole output, and level 9 cost several times
    more CPU for files about a third smaller; the bytes stay reproducible.  For
    store shards use [`write_lines_gz`][pipeline.store.write_lines_gz].  Not atomic: write to a
    temporary path and rename.

    Args:
        path: The file written (replaced if it exists).
        payload: The uncompressed bytes.
    """
    with open(path, "wb") as raw, gzip.GzipFile(
        filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL
    ) as gz:
        gz.write(payload)


def write_lines_gz(path: str | os.PathLike[str], payload: bytes) -> None:
    """Write JSON Lines as a store file: one gzip member per line (see [`encode_member`][pipeline.store.encode_member]).

    Not atomic: write to a temporary path and rename.

    Args:
        path: The file written (replaced if it exists).
        payload: Uncompressed JSON Lines; blank lines are dropped.
    """
    Path(path).write_bytes(encode_lines(payload))


def write_records(path: str | os.PathLike[str], records: Iterable[Document | SentenceRecord]) -> int:
    """Write records to one store file (gzip JSON Lines, one member per line), sorted.

    Not atomic: write to a temporary path and rename.

    Args:
        path: The file written (replaced if it exists).
        records: Documents or sentence records, in any order.

    Returns:
        How many records were written.
    """
    payload = dumps_records(records)
    write_lines_gz(path, payload)
    return payload.count(b"\n")


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """Read the uncompressed content of a gzip (or plain) store file.

    Args:
        path: The file; decompressed when its name ends in ``.gz``.

    Returns:
        The uncompressed bytes.
    """
    data = Path(path).read_bytes()
    return decompress(data) if str(path).endswith(".gz") else data


def read_records(path: str | os.PathLike[str], cls: type[R]) -> Iterator[R]:
    """Stream the records of one gzip (or plain) JSON Lines file.

    Args:
        path: The file; decompressed when its name ends in ``.gz``.
        cls: The record class of its lines ([`Document`][pipeline.documents.Document] or
            [`SentenceRecord`][pipeline.documents.SentenceRecord]).

    Yields:
        The records, in file order (blank lines skipped).

    Raises:
        StoreError: If a line is malformed; the message names the file and line.
    """
    for lineno, line in enumerate(read_bytes(path).decode("utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield from_dict(cls, json.loads(line))
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(f"{path}:{lineno}: cannot read {cls.__name__}: {exc}") from exc


def read_documents(path: str | os.PathLike[str]) -> Iterator[Document]:
    """Stream the documents of one store file ([`read_records`][pipeline.store.read_records]).

    Args:
        path: A gzip (or plain) JSON Lines file of documents.

    Returns:
        An iterator over its documents, in file order.

    Raises:
        StoreError: If a line is malformed (when iterated).
    """
    return read_records(path, Document)


def read_sentences(path: str | os.PathLike[str]) -> Iterator[SentenceRecord]:
    """Stream the sentence records of one store file ([`read_records`][pipeline.store.read_records]).

    Args:
        path: A gzip (or plain) JSON Lines file of sentence records.

    Returns:
        An iterator over its sentence records, in file order.

    Raises:
        StoreError: If a line is malformed (when iterated).
    """
    return read_records(path, SentenceRecord)


def list_shards(directory: str | os.PathLike[str]) -> list[Path]:
    """List the shard files of a stage directory, in shard order.

    The directory itself may be a symbolic link; a shard that is one is never followed: a stage
    directory holds only the files the build wrote.

    Args:
        directory: The stage directory.

    Returns:
        The shard files, by shard number; empty when the directory does not exist.

    Raises:
        pipeline.paths.SymlinkError: If a shard is a symbolic link.
    """
    d = Path(directory)
    if not d.is_dir():
        return []
    listing = list_files(d)
    listing.symlinks = [p for p in listing.symlinks if SHARD_RE.match(p.name)]
    listing.refuse_symlinks(f"reading {d}")
    found = [(int(m.group(1)), p) for p in listing.files if (m := SHARD_RE.match(p.name))]
    return [p for _, p in sorted(found)]


def shard_ids(directory: str | os.PathLike[str]) -> list[int]:
    """Return the shard numbers present in a stage directory.

    Args:
        directory: The stage directory.

    Returns:
        The shard numbers, sorted (see [`list_shards`][pipeline.store.list_shards]).
    """
    return [int(SHARD_RE.match(p.name).group(1)) for p in list_shards(directory)]  # type: ignore[union-attr]


def write_shards(
    directory: str | os.PathLike[str],
    records: Iterable[Document | SentenceRecord],
    shard_size: int = DEFAULT_SHARD_SIZE,
) -> dict[int, int]:
    """Split records into PMID-block shards under a directory.

    The directory is created; callers make it appear atomically (write into a
    temporary directory, then rename).

    Args:
        directory: The stage directory written into.
        records: Documents or sentence records, in any order.
        shard_size: PMIDs per shard.

    Returns:
        Records written per shard number.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict[int, list[Document | SentenceRecord]] = {}
    for record in records:
        groups.setdefault(shard_of(record.pmid, shard_size), []).append(record)
    sizes: dict[int, int] = {}
    for shard, group in sorted(groups.items()):
        sizes[shard] = write_records(out / shard_name(shard), group)
    return sizes


def link_or_copy(source: Path, dest: Path) -> None:
    """Make ``dest`` a hard link to ``source``, or a copy across file systems.

    A hard link is safe because store files are never modified in place, only replaced.

    Args:
        source: The existing file.
        dest: The new path; an existing file there is removed first.
    """
    import shutil

    if dest.exists():
        dest.unlink()
    try:
        os.link(source, dest)
    except OSError:
        shutil.copyfile(source, dest)


def iter_directory(directory: str | os.PathLike[str], cls: type[R]) -> Iterator[R]:
    """Stream all records of every shard in a stage directory, in shard (hence PMID) order.

    Args:
        directory: The stage directory.
        cls: The record class of its lines.

    Yields:
        The records.

    Raises:
        StoreError: If a line is malformed.
        pipeline.paths.SymlinkError: If a shard is a symbolic link.
    """
    for path in list_shards(directory):
        yield from read_records(path, cls)


@dataclass(frozen=True)
class StoredDocument:
    """One document as the gzip member a store file holds for its line, and its PMID.

    Never decoded: the documents stage reads members from the parse cache and writes them into the
    shards as they are, and holds a compressed member per document (about a quarter of the line).

    Attributes:
        pmid: The document's PMID.
        member: Its JSON line as a gzip member ([`encode_member`][pipeline.store.encode_member]).
    """

    pmid: str
    member: bytes

    @classmethod
    def of(cls, doc: Document) -> StoredDocument:
        """Encode a document as it would be stored.

        Args:
            doc: The document.

        Returns:
            Its PMID and its line as a gzip member.
        """
        return cls(doc.pmid, encode_member(dumps_records([doc])))

    @property
    def line(self) -> bytes:
        """The document's JSON line (with its newline)."""
        return decompress(self.member)


def document_members(docs: Iterable[StoredDocument], shard_size: int) -> Iterator[tuple[int, list[bytes]]]:
    """Group stored documents into shards, as [`write_shards`][pipeline.store.write_shards] would.

    A block's documents are let go once yielded.

    Args:
        docs: The stored documents, in any order.
        shard_size: PMIDs per shard.

    Yields:
        ``(shard, members)`` in shard order, each block's members sorted by PMID.
    """
    groups: dict[int, list[StoredDocument]] = {}
    for doc in docs:
        groups.setdefault(shard_of(doc.pmid, shard_size), []).append(doc)
    for k in sorted(groups):
        group = groups.pop(k)
        yield k, [d.member for d in sorted(group, key=lambda d: pmid_sort_key(d.pmid))]


@dataclass(frozen=True)
class StoredMember:
    """One record of a store file as its compressed gzip member, with the fields that order and name it.

    Attributes:
        pmid: The record's PMID.
        index: The sentence index (0-based) of a sentence record.
        digest: The line's digest as hex text.
        data: The gzip member: written out as it is, never decompressed nor compressed again.
    """

    pmid: str
    index: int
    digest: str
    data: bytes

    @property
    def name(self) -> str:
        """The brat document name, ``{pmid}_{index + 1}``."""
        return f"{self.pmid}_{self.index + 1}"


def iter_members(directory: str | os.PathLike[str], known: Mapping[str, Any]) -> Iterator[StoredMember]:
    """Stream the sentence records of a stage directory as compressed members.

    Args:
        directory: A stage directory of sentence records.
        known: ``[pmid, index]`` by line digest (from an earlier call); a line found there is not
            decompressed, the others are decoded as JSON.

    Yields:
        One [`StoredMember`][pipeline.store.StoredMember] per line, in shard and file order.
    """
    for path in list_shards(directory):
        for item in iter_member_lines(path):
            if isinstance(item, MemberLine):
                digest, data = item.digest, item.data
                found = known.get(digest)
                if found is None:
                    record = json.loads(item.line)
                    found = (record["pmid"], record["index"])
            else:
                record = json.loads(item)
                digest, data, found = digest_line(item).hex(), encode_member(item), (record["pmid"], record["index"])
            yield StoredMember(str(found[0]), int(found[1]), digest, data)


def write_members_cached(
    directory: str | os.PathLike[str], members: Iterable[tuple[int, list[bytes]]], cache: str | os.PathLike[str]
) -> dict[int, int]:
    """Write shard files made of gzip members, reusing identical shards from a content-addressed cache.

    Members are one per line, as [`write_lines_gz`][pipeline.store.write_lines_gz] makes them.  Files
    are content-addressed in ``cache`` (never modified in place): a shard whose bytes were written
    before is a hard link to the cached file.  The cache is safe to delete at any time.  Shard files
    are not written atomically: write into a staging directory.

    Args:
        directory: The stage directory written into (created).
        members: ``(shard, members)`` pairs, taken one at a time.
        cache: The cache directory (created).

    Returns:
        Lines written per shard number.
    """
    out, kept = Path(directory), Path(cache)
    out.mkdir(parents=True, exist_ok=True)
    kept.mkdir(parents=True, exist_ok=True)
    sizes: dict[int, int] = {}
    for shard, parts in members:
        data = b"".join(parts)
        target = out / shard_name(shard)
        known = kept / f"c{hashlib.sha256(data).hexdigest()[:32]}.jsonl.gz"  # c: keyed by compressed bytes
        if known.exists():
            link_or_copy(known, target)
        else:
            target.write_bytes(data)
            tmp = durable.temporary_name(known)
            try:
                os.link(target, tmp)
                durable.rename(tmp, known)
            except OSError:
                pass  # another file system: no cache
        sizes[shard] = len(parts)
    return sizes


def dumps_json(data: Any) -> str:
    """Serialize to deterministic, human-readable JSON (sorted keys, 2-space indent, trailing newline).

    Args:
        data: A JSON-serializable value.

    Returns:
        The JSON text (non-ASCII kept as is).
    """
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write deterministic JSON atomically ([`replace_file`][pipeline.durable.replace_file]).

    Args:
        path: The file written (replaced if it exists).
        data: A JSON-serializable value, written as [`dumps_json`][pipeline.store.dumps_json] makes it.
    """
    durable.replace_file(path, dumps_json(data).encode("utf-8"))


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file.

    Args:
        path: The file (UTF-8).

    Returns:
        The decoded value.

    Raises:
        OSError: If the file cannot be read.
        ValueError: If it is not valid JSON (``json.JSONDecodeError``).
    """
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_counts(path: str | os.PathLike[str], counts: Mapping[str, Any]) -> None:
    """Write a stage's counts file (kept, dropped by reason, misaligned...) atomically.

    Args:
        path: The counts file (``counts.json`` beside the stage's output).
        counts: The counts by name.
    """
    write_json(path, dict(counts))


def shard_counts_path(shard: str | os.PathLike[str]) -> Path:
    """Return the counts file kept beside a shard file.

    Args:
        shard: A shard file, ``shard-NNNNNN.jsonl.gz``.

    Returns:
        ``shard-NNNNNN.counts.json`` in the same directory.
    """
    path = Path(shard)
    return path.with_name(path.name.replace(".jsonl.gz", ".counts.json"))


def write_json_once(path: str | os.PathLike[str], data: Any) -> None:
    """Write deterministic JSON to ``path`` unless the file is already there.

    For records that are a function of the path they are written to (a stage's ``params.json``):
    a second writer has nothing to add.

    Args:
        path: The file to write.
        data: What to write, as [`dumps_json`][pipeline.store.dumps_json] renders it.
    """
    if not os.path.exists(path):
        write_json(path, data)


def sum_counts(paths: Iterable[str | os.PathLike[str]]) -> dict[str, Any]:
    """Add up the numeric values of several counts files (a stage's shards) into one.

    Args:
        paths: Counts files, as [`write_counts`][pipeline.store.write_counts] writes them; absent ones are
            skipped.

    Returns:
        Every numeric key's total over the files, keys sorted; booleans and other values are left out.
    """
    total: dict[str, float] = {}
    for p in paths:
        if os.path.exists(p):
            for key, value in read_json(p).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
    return dict(sorted(total.items()))


_DIGESTS: dict[tuple[str, int, int], str | None] = {}


def content_digest(path: str | os.PathLike[str]) -> str | None:
    """Return the SHA-256 of a file's content, remembered per (path, mtime, size) for the process.

    Output paths ask for these digests thousands of times per build: one ``stat`` call answers
    all but the first.

    Args:
        path: The file.

    Returns:
        The hexadecimal digest, or None when ``path`` is absent or not a regular file.
    """
    try:
        stat = os.stat(path)
    except OSError:
        return None
    if not S_ISREG(stat.st_mode):
        return None
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def file_fingerprint(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, int, int]]:
    """Return the (path, size, mtime) of every file under some files and directories.

    Size and mtime rather than content, so that a multi-gigabyte PubMed baseline directory is not
    read just to name an output: new or updated files give another fingerprint.

    Args:
        paths: Files, and directories walked recursively (their files in sorted order).

    Returns:
        One ``(path, size in bytes, mtime in nanoseconds)`` per existing file, in the order of
        ``paths``; absent paths are left out.
    """
    files: list[Path] = []
    for value in paths:
        p = Path(value)
        files.extend(sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p])
    return [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.exists()]


def gunzip_text(payload: bytes) -> str:
    """Decompress gzip bytes into UTF-8 text.

    Args:
        payload: The gzip bytes.

    Returns:
        The text.
    """
    with gzip.GzipFile(fileobj=io.BytesIO(payload)) as gz:
        return gz.read().decode("utf-8")
