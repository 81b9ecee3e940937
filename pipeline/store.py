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
:func:`encode_member`): any gzip reader reads the file, and a rebuild copies
the compressed members of unchanged documents instead of recompressing the
shard.  That costs about 30% more disk than one member per file.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import os
import re
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any, TypeVar

from pipeline.documents import Document, SentenceRecord, from_dict, pmid_sort_key, record_sort_key, to_dict
from pipeline.paths import list_files

log = logging.getLogger(__name__)

R = TypeVar("R", Document, SentenceRecord)

DEFAULT_SHARD_SIZE = 1_000_000
SHARD_RE = re.compile(r"^shard-(-?\d+)\.jsonl\.gz$")


class StoreError(ValueError):
    """A store file that cannot be read; the message names file and line."""


def shard_of(pmid: str, shard_size: int = DEFAULT_SHARD_SIZE) -> int:
    """The block a PMID belongs to (``-1`` for non-numeric ids)."""
    return int(pmid) // shard_size if pmid.isdigit() else -1


def shard_name(shard: int) -> str:
    return f"shard-{shard:06d}.jsonl.gz" if shard >= 0 else "shard--00001.jsonl.gz"


def dumps_records(records: Iterable[Document | SentenceRecord]) -> bytes:
    """Sorted, compact JSON Lines of ``records`` (uncompressed bytes)."""
    ordered = sorted(records, key=record_sort_key)
    lines = [json.dumps(to_dict(r), ensure_ascii=False, sort_keys=True, separators=(",", ":")) for r in ordered]
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")

GZIP_LEVEL = 1

# One gzip member per line (RFC 1952 allows any number of members; every gzip
# reader concatenates them).  Each member's header carries, in an extra field
# (subfield "PG", as BGZF's "BC" does for BAM files), the member's total size
# and a digest of its line.  A later run finds every line's digest and
# compressed bytes by reading headers only: an unchanged document's output is
# copied compressed, never decompressed nor compressed again (pipeline/memo.py).
MEMBER_SUBFIELD = b"PG"
_DIGEST_SIZE = 16
_EXTRA_LEN = 4 + 4 + _DIGEST_SIZE  # subfield id and length, member size, digest
_HEADER_LEN = 10 + 2 + _EXTRA_LEN
_XFL_FASTEST = 4


def digest_line(line: bytes) -> bytes:
    """The digest of one line (with its newline) that its member's header carries."""
    return hashlib.blake2b(line, digest_size=_DIGEST_SIZE).digest()


def encode_member(line: bytes) -> bytes:
    """One gzip member holding ``line``, its size and digest in the header's extra field."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    data = compressor.compress(line) + compressor.flush()
    size = _HEADER_LEN + len(data) + 8
    extra = MEMBER_SUBFIELD + struct.pack("<HI", 4 + _DIGEST_SIZE, size) + digest_line(line)
    header = struct.pack("<BBBBIBBH", 0x1F, 0x8B, 8, 4, 0, _XFL_FASTEST, 255, len(extra))  # FLG=FEXTRA, mtime 0
    return header + extra + data + struct.pack("<II", zlib.crc32(line), len(line) & 0xFFFFFFFF)


def encode_lines(payload: bytes) -> bytes:
    """``payload`` (JSON Lines) as one member per line (empty lines dropped)."""
    return b"".join(encode_member(line + b"\n") for line in payload.split(b"\n") if line.strip())


@dataclass(frozen=True)
class Member:
    """One member of a store file: its line's digest and where its bytes are in the file."""

    digest: bytes
    start: int
    end: int


def scan_members(raw: bytes) -> list[Member] | None:
    """The members of a store file's bytes, from their headers only; None if it is not one member per line
    (a gzip file written otherwise: read it with :func:`gzip.decompress`)."""
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
    """The line a member holds (checked against the member's CRC)."""
    line = zlib.decompress(raw[member.start + _HEADER_LEN : member.end - 8], -zlib.MAX_WBITS)
    crc, size = struct.unpack_from("<II", raw, member.end - 8)
    if zlib.crc32(line) != crc or len(line) & 0xFFFFFFFF != size:
        raise OSError(f"corrupt gzip member at byte {member.start}")
    return line


@dataclass(frozen=True)
class MemberLine:
    """One line of a store file, decompressed only when :attr:`line` is read (its digest is in the header)."""

    raw: bytes
    member: Member

    @property
    def digest(self) -> str:
        return self.member.digest.hex()

    @property
    def line(self) -> bytes:
        return member_line(self.raw, self.member)

    @property
    def data(self) -> bytes:
        """The gzip member itself, as the file holds it (to be written out as it is)."""
        return self.raw[self.member.start : self.member.end]


def iter_member_lines(path: str | os.PathLike[str]) -> Iterator[MemberLine | bytes]:
    """The lines of a store file: as :class:`MemberLine` when it is one member per line, else as bytes."""
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
    """The uncompressed content of gzip bytes (one member per line, or any gzip file)."""
    members = scan_members(raw)
    if members is None:
        return gzip.decompress(raw)
    return b"".join(member_line(raw, m) for m in members)


def write_bytes_gz(path: str | os.PathLike[str], payload: bytes) -> None:
    """Write ``payload`` gzip-compressed as one member with a reproducible header (no name, mtime 0).

    Level 1: every stage writes its whole output, and level 9 cost several times
    more CPU for files about a third smaller; the bytes stay reproducible.  For
    store shards use :func:`write_lines_gz`.
    """
    with open(path, "wb") as raw, gzip.GzipFile(
        filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL
    ) as gz:
        gz.write(payload)


def write_lines_gz(path: str | os.PathLike[str], payload: bytes) -> None:
    """Write JSON Lines as a store file: one gzip member per line (see :func:`encode_member`)."""
    Path(path).write_bytes(encode_lines(payload))


def write_records(path: str | os.PathLike[str], records: Iterable[Document | SentenceRecord]) -> int:
    """Write records to one store file (gzip JSONL, one member per line), sorted; returns how many were written."""
    payload = dumps_records(records)
    write_lines_gz(path, payload)
    return payload.count(b"\n")


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The uncompressed content of a gzip (or plain) store file."""
    data = Path(path).read_bytes()
    return decompress(data) if str(path).endswith(".gz") else data


def read_records(path: str | os.PathLike[str], cls: type[R]) -> Iterator[R]:
    """Stream the records of one gzip (or plain) JSONL file.

    Raises :class:`StoreError` naming the file and line for a malformed line.
    """
    for lineno, line in enumerate(read_bytes(path).decode("utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield from_dict(cls, json.loads(line))
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(f"{path}:{lineno}: cannot read {cls.__name__}: {exc}") from exc


def read_documents(path: str | os.PathLike[str]) -> Iterator[Document]:
    return read_records(path, Document)


def read_sentences(path: str | os.PathLike[str]) -> Iterator[SentenceRecord]:
    return read_records(path, SentenceRecord)


def list_shards(directory: str | os.PathLike[str]) -> list[Path]:
    """The shard files of a stage directory, in shard order.

    The directory itself may be a symbolic link; a shard that is one is never followed
    (:class:`pipeline.paths.SymlinkError`): a stage directory holds only the files the build wrote.
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
    return [int(SHARD_RE.match(p.name).group(1)) for p in list_shards(directory)]  # type: ignore[union-attr]


def write_shards(
    directory: str | os.PathLike[str],
    records: Iterable[Document | SentenceRecord],
    shard_size: int = DEFAULT_SHARD_SIZE,
) -> dict[int, int]:
    """Split records into PMID-block shards under ``directory``; returns records per shard.

    The directory is created; callers make it appear atomically (write into a
    temporary directory, then rename).
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


def write_atomic(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` through ``.NAME.tmpPID`` beside it and one rename: a reader sees the old
    file or the new one, never a part (a killed writer's temporary is cleaned at the next start).
    ``fsync``: flush it to disk first (what cannot be made again, e.g. downloaded records)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, target)


#: Temporary names of our writers: ``.NAME.tmpPID`` (:func:`write_atomic`), ``.NAME.tmp-PID`` and
#: ``.NAME.old-PID`` (staged and replaced directories, :func:`publish_directory`).  None ends in ``.txt``.
TEMPORARY_RE = re.compile(r"^\..+\.(?:tmp-?|old-)(\d+)$")


def _pid_alive(pid: int) -> bool:
    """Whether another live process has this pid (this process's own pid: a dead writer's, reused)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_temporaries(directory: str | os.PathLike[str], prefix: str = "") -> list[Path]:
    """Remove what killed writers left in ``directory`` (not recursive): files and directories named as
    :data:`TEMPORARY_RE` says (optionally starting with ``.PREFIX``) whose process is gone; returns them."""
    d = Path(directory)
    removed: list[Path] = []
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return removed
    import shutil

    for entry in entries:
        m = TEMPORARY_RE.match(entry.name)
        if m is None or (prefix and not re.match(rf"^\.{re.escape(prefix)}\.(?:tmp-|old-)\d+$", entry.name)):
            continue
        if _pid_alive(int(m.group(1))):
            continue
        path = d / entry.name
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    if removed:
        log.warning("%s: removed %d leftover(s) of an interrupted writer: %s", d, len(removed),
                    ", ".join(p.name for p in removed[:10]) + (" ..." if len(removed) > 10 else ""))
    return removed


def exchange(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Swap two paths atomically with ``renameat2(RENAME_EXCHANGE)``; False where the kernel or file
    system cannot.  Raises the audit event ``pgx.exchange`` first (a kill point of the crash tests)."""
    import ctypes
    import ctypes.util
    import errno
    import sys

    sys.audit("pgx.exchange", os.fspath(a), os.fspath(b))
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), os.fspath(a))


def staging_directory(target: str | os.PathLike[str]) -> Path:
    """A fresh empty directory ``.NAME.tmp-PID`` beside ``target`` to build its next version in; the
    staging and replaced copies of killed writers beside it are removed first."""
    out = Path(target)
    out.parent.mkdir(parents=True, exist_ok=True)
    restore_directory(out)
    clean_temporaries(out.parent, out.name)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    tmp.mkdir()
    return tmp


def publish_directory(staging: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Make the complete directory ``staging`` (a sibling of ``target``) the directory ``target`` in one
    step: a reader sees the previous directory or the new one, never none.  The previous one is removed.

    ``renameat2(RENAME_EXCHANGE)`` swaps them; with no previous directory (or only an empty one) one rename
    does.  Where the file system cannot exchange, two renames (``target`` -> ``.NAME.old-PID``, staging ->
    ``target``): a kill between them leaves the previous version as ``.NAME.old-PID``, which
    :func:`restore_directory` puts back.
    """
    import shutil

    new, out = Path(staging), Path(target)
    if not out.exists() and not out.is_symlink():
        os.replace(new, out)
        return
    if out.is_dir() and not out.is_symlink() and exchange(new, out):
        shutil.rmtree(new)  # the previous version, now under the staging name
        return
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    os.replace(out, old)
    os.replace(new, out)
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old)
    else:
        old.unlink()


def restore_directory(target: str | os.PathLike[str]) -> bool:
    """Put back ``target`` from its ``.NAME.old-PID`` when a two-rename publication was killed between its
    renames (``target`` missing); True when restored."""
    out = Path(target)
    if out.exists() or out.is_symlink() or not out.parent.is_dir():
        return False
    olds = sorted(p for p in out.parent.glob(f".{out.name}.old-*") if TEMPORARY_RE.match(p.name))
    if not olds:
        return False
    olds[-1].rename(out)
    log.warning("%s: restored the previous version of an interrupted publication", out)
    return True


def link_or_copy(source: Path, dest: Path) -> None:
    """A hard link (files are never modified in place, only replaced), or a copy across filesystems."""
    import shutil

    if dest.exists():
        dest.unlink()
    try:
        os.link(source, dest)
    except OSError:
        shutil.copyfile(source, dest)


def iter_directory(directory: str | os.PathLike[str], cls: type[R]) -> Iterator[R]:
    """All records of every shard in a stage directory, in shard (hence PMID) order."""
    for path in list_shards(directory):
        yield from read_records(path, cls)


@dataclass(frozen=True)
class StoredDocument:
    """One document as the gzip member a store file holds for its line (:func:`encode_member`), and its PMID.

    Never decoded: the documents stage reads members from the parse cache and writes them into the
    shards as they are, and holds a compressed member per document (about a quarter of the line).
    """

    pmid: str
    member: bytes

    @classmethod
    def of(cls, doc: Document) -> StoredDocument:
        return cls(doc.pmid, encode_member(dumps_records([doc])))

    @property
    def line(self) -> bytes:
        """The document's JSON line (with its newline)."""
        return decompress(self.member)


def document_members(docs: Iterable[StoredDocument], shard_size: int) -> Iterator[tuple[int, list[bytes]]]:
    """``(shard, members)`` of stored documents in shard order, each block's members sorted by PMID: the
    shard files :func:`write_shards` would write.  A block's documents are let go once yielded."""
    groups: dict[int, list[StoredDocument]] = {}
    for doc in docs:
        groups.setdefault(shard_of(doc.pmid, shard_size), []).append(doc)
    for k in sorted(groups):
        group = groups.pop(k)
        yield k, [d.member for d in sorted(group, key=lambda d: pmid_sort_key(d.pmid))]


@dataclass(frozen=True)
class StoredMember:
    """One record of a store file as its compressed gzip member, with the fields that order and name it."""

    pmid: str
    index: int
    digest: str
    data: bytes  # the gzip member: written out as it is, never decompressed nor compressed again

    @property
    def name(self) -> str:
        return f"{self.pmid}_{self.index + 1}"


def iter_members(directory: str | os.PathLike[str], known: Mapping[str, Any]) -> Iterator[StoredMember]:
    """The sentence records of a stage directory as :class:`StoredMember`.

    ``known``: ``[pmid, index]`` by line digest (from an earlier call); a line
    found there is not decompressed, the others are decoded as JSON.
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
    """Write shard files made of gzip members (one per line, as :func:`write_lines_gz` makes them) from
    ``(shard, members)``, taken one at a time; returns lines per shard.

    Content-addressed in ``cache`` (files are never modified in place): a shard whose bytes were
    written before is a hard link to the cached file.  Safe to delete at any time.
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
            tmp = known.with_name(f".{known.name}.tmp{os.getpid()}")
            try:
                os.link(target, tmp)
                tmp.replace(known)
            except OSError:
                pass  # another file system: no cache
        sizes[shard] = len(parts)
    return sizes


def dumps_json(data: Any) -> str:
    """Deterministic, human-readable JSON (sorted keys, 2-space indent, trailing newline)."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write deterministic JSON through a temporary beside ``path`` and a rename (:func:`write_atomic`)."""
    write_atomic(path, dumps_json(data).encode("utf-8"))


def read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_counts(path: str | os.PathLike[str], counts: Mapping[str, Any]) -> None:
    """Write a stage's counts file (kept, dropped by reason, misaligned...)."""
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
    with gzip.GzipFile(fileobj=io.BytesIO(payload)) as gz:
        return gz.read().decode("utf-8")
