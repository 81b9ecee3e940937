r"""The lexicon in its lookup form: pre-tokenized keys, stored so that loading is a few splits.

The lexicon file (``lexicon.json.gz``, [`pipeline.nlp.lexicon`][pipeline.nlp.lexicon])
lists ``[surface, type, identifier]`` entries; the annotator looks names up by
their *token key* ([`table_key`][pipeline.nlp.lexicon.table_key]).  Computing
770,000 keys takes about 16 s, so ``lexicon build`` also writes the keys, once,
into a sidecar file ([`lookup_path`][pipeline.nlp.lexicon_lookup.lookup_path]:
``lexicon.json.gz.lookup``) that [`load_lookup`][pipeline.nlp.lexicon_lookup.load_lookup] reads in well
under a second.

Lookup form, per table (``exact``, ``relaxed``, ``folded``):

* ``keys``: every entry's token key joined by ``\x1f`` (a character that is
  whitespace to ``pipeline.nlp.lexicon.TOKEN_RE``, so never inside a
  token), one per line, in lexicon order;
* ``info``: one byte per entry, ``type code * 2 + spaced`` (the surface holds
  a space);
* ``ids`` / ``id_ends``: the entries' identifiers concatenated (empty: none)
  and where each ends (unsigned 32-bit little-endian), read by slicing;
* ``long``: ``first token\tlongest key length`` for first tokens that start a
  key of two tokens or more (the bound of the longest-match loop);
* ``pairs``: the first two tokens of every longer key (joined key), sorted;
* ``lengths``: for each line of ``pairs``, the lengths (in tokens) of the keys
  that start with that pair, longest first, comma-separated: the longest-match
  search tries these lengths only.  A sidecar written before this section
  existed lacks it and is still read: the search then tries every length from
  the ``long`` bound down (the same matches, more lookups).

plus ``gene_folded``: case-folded exact gene keys -> exact entry index (the
``c-kit`` / ``H-ras`` rule).  The file is a JSON header line (format, SHA-256
of the lexicon file it was made from, the type names, section sizes) followed
by the UTF-8 sections; it is written deterministically, so the same lexicon
gives the same bytes.  A sidecar whose recorded SHA-256 differs from the
lexicon's is ignored (the lexicon is then keyed in memory, the slow way).
"""

from __future__ import annotations

import array
import hashlib
import json
import logging
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import durable
from pipeline.nlp import lexicon as lx

logger = logging.getLogger(__name__)

LOOKUP_FORMAT = 1
SEP = "\x1f"
TABLES = ("exact", "relaxed", "folded")
_SECTIONS = ("keys", "info", "ids", "id_ends", "long", "pairs", "lengths")


@dataclass(frozen=True)
class Entry:
    """What the lexicon says about a matched key.

    Attributes:
        type: The entity type (``Chemical``, ``Disease``, ``Gene``).
        identifier: The source identifier, ``None`` when the entry has none.
        spaced: True when the lexicon surface contains a space.
    """

    type: str
    identifier: str | None
    spaced: bool = False  # the lexicon surface contains a space


#: Entries kept made per table (a few MiB at most; a long-running worker's hits stay bounded).
_ENTRY_CACHE = 1 << 15


@dataclass
class LookupTable:
    """One table of the lookup form: joined token key -> entry, with the bounds of the longest-match search.

    Entries are made on demand from the packed sections (and a bounded number
    kept), so loading costs a few splits.

    Attributes:
        index: Token key joined by ``SEP`` -> entry number (lexicon order).
        info: One byte per entry: ``type code * 2 + spaced``.
        ids: Every identifier, concatenated.
        id_ends: Per entry, where its identifier ends in ``ids``.
        types: The type names; a type code indexes this tuple.
        long: First token -> length (in tokens) of the longest key it starts,
            for first tokens that start a key of two tokens or more.
        pairs: The first two tokens (joined) of every key of two tokens or more.
        lengths: The first two tokens (joined) of every key of two tokens or more -> the lengths of
            the keys that start with them, longest first, as ``"5,3,2"`` (empty when the sidecar has
            no such section: ``longest`` then tries every length up to the ``long`` bound).
    """

    index: dict[str, int] = field(default_factory=dict)
    info: bytes = b""
    ids: str = ""  # every identifier, concatenated
    id_ends: array.array[int] = field(default_factory=lambda: array.array("I"))  # where each one ends
    types: tuple[str, ...] = ()
    long: dict[str, int] = field(default_factory=dict)
    pairs: set[str] = field(default_factory=set)
    lengths: dict[str, str] = field(default_factory=dict)
    #: Entries made so far (they are immutable; a text hits the same few thousand again and again).
    _entries: dict[int, Entry] = field(default_factory=dict, repr=False, compare=False)

    def entry(self, i: int) -> Entry:
        """Return the entry number ``i`` (made on first use, then cached).

        Args:
            i: An entry number, a value of ``index``.

        Returns:
            The entry.
        """
        found = self._entries.get(i)
        if found is None:
            if len(self._entries) >= _ENTRY_CACHE:
                self._entries.clear()  # bounded: memory must not grow with the input
            code = self.info[i]
            ident = self.ids[self.id_ends[i - 1] if i else 0 : self.id_ends[i]]
            found = self._entries[i] = Entry(self.types[code >> 1], ident or None, bool(code & 1))
        return found

    def get(self, key: tuple[str, ...]) -> Entry | None:
        """Look a token key up.

        Args:
            key: A token key (see [`table_key`][pipeline.nlp.lexicon.table_key]).

        Returns:
            Its entry, or ``None`` when the table has no such key.
        """
        i = self.index.get(SEP.join(key))
        return None if i is None else self.entry(i)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and SEP.join(key) in self.index

    def __len__(self) -> int:
        return len(self.index)

    def longest(self, keys: list[str], i: int) -> tuple[int, Entry] | None:
        """Find the longest entry whose key starts at a token.

        Args:
            keys: The token forms of a text, in this table's normal form.
            i: Index of the first token (into ``keys``).

        Returns:
            ``(n, entry)`` for the longest key equal to ``keys[i:i+n]``, or
                ``None`` when no key matches at ``i``.
        """
        first = keys[i]
        bound = self.long.get(first)
        # Longer keys only where one starts with these two tokens (most tokens start none).
        if bound is not None and i + 1 < len(keys) and (pair := f"{first}{SEP}{keys[i + 1]}") in self.pairs:
            lengths = self.lengths.get(pair)
            tried: Iterable[int] = (
                range(min(bound, len(keys) - i), 1, -1) if lengths is None else map(int, lengths.split(","))
            )
            for n in tried:
                if i + n <= len(keys):
                    j = self.index.get(SEP.join(keys[i : i + n]))
                    if j is not None:
                        return n, self.entry(j)
        j = self.index.get(first)
        return None if j is None else (1, self.entry(j))


class FoldedGenes:
    """Case-folded gene keys -> their entry of the exact table, made when asked for.

    Making the 118,000 entries at load time took longer than everything else
    of loading; a text asks for a handful.
    """

    def __init__(self, table: LookupTable, index: dict[str, str]) -> None:
        self._table = table
        self._index = index  # joined key -> entry number (as text: converted when asked for)

    def get(self, key: tuple[str, ...]) -> Entry | None:
        """Look a case-folded gene key up.

        Args:
            key: A token key whose tokens are case-folded.

        Returns:
            The exact table's gene entry of that key, or ``None``.
        """
        i = self._index.get(SEP.join(key))
        return None if i is None else self._table.entry(int(i))

    def __len__(self) -> int:
        return len(self._index)


@dataclass
class Lookup:
    """The lookup form of a lexicon, as [`load_lookup`][pipeline.nlp.lexicon_lookup.load_lookup] reads it.

    Attributes:
        exact: The ``exact`` table (case-sensitive keys).
        relaxed: The ``relaxed`` table (gene symbols, folded keys).
        folded: The ``folded`` table (folded keys).
        gene_folded: Case-folded exact gene keys -> their exact entry.
    """

    exact: LookupTable
    relaxed: LookupTable
    folded: LookupTable
    gene_folded: FoldedGenes


def lookup_path(lexicon: Path) -> Path:
    """Return where the lookup form of a lexicon file lives.

    Args:
        lexicon: The lexicon file.

    Returns:
        The sidecar's path, next to it: ``<lexicon>.lookup``.
    """
    return lexicon.with_name(lexicon.name + ".lookup")


def file_sha256(path: Path) -> str:
    """Hash a file, reading it by blocks.

    Args:
        path: The file.

    Returns:
        Its SHA-256, in hexadecimal.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- building the lookup form from the entry tables (the slow way) -----------------------------


def _sections(tables: Mapping[str, Iterable[Iterable[str]]]) -> tuple[list[str], dict[str, bytes]]:
    """Type names and the text of every section, computed from the entry tables."""
    keyed: dict[str, dict[tuple[str, ...], tuple[str, str, bool]]] = {}
    type_names: set[str] = set()
    for name in TABLES:
        entries: dict[tuple[str, ...], tuple[str, str, bool]] = {}
        for surface, type_, ident in tables.get(name, ()):
            key = lx.table_key(name, surface)
            if key:
                entries.setdefault(key, (type_, ident or "", " " in surface))
                type_names.add(type_)
        keyed[name] = entries
    types = sorted(type_names)
    code = {t: i for i, t in enumerate(types)}
    out: dict[str, bytes] = {}
    for name, entries in keyed.items():
        longest: dict[str, int] = {}
        pairs: dict[str, set[int]] = {}
        for key in entries:
            if len(key) > 1:
                longest[key[0]] = max(longest.get(key[0], 0), len(key))
                pairs.setdefault(key[0] + SEP + key[1], set()).add(len(key))
        for key in entries:
            if any("\n" in t for t in key):
                raise ValueError(f"lexicon entry {key!r} holds a line break")
        ends = array.array("I")
        total = 0
        for _t, ident, _s in entries.values():
            total += len(ident)
            ends.append(total)
        if sys.byteorder != "little":
            ends.byteswap()
        out[f"{name}.keys"] = "\n".join(SEP.join(k) for k in entries).encode("utf-8")
        out[f"{name}.info"] = bytes(code[t] * 2 + int(s) for t, _i, s in entries.values())
        out[f"{name}.ids"] = "".join(i for _t, i, _s in entries.values()).encode("utf-8")
        out[f"{name}.id_ends"] = ends.tobytes()
        out[f"{name}.long"] = "\n".join(f"{k}\t{n}" for k, n in sorted(longest.items())).encode("utf-8")
        out[f"{name}.pairs"] = "\n".join(sorted(pairs)).encode("utf-8")
        out[f"{name}.lengths"] = "\n".join(
            ",".join(map(str, sorted(pairs[p], reverse=True))) for p in sorted(pairs)
        ).encode("utf-8")
    # Case-folded gene symbols, for "c-kit" / "H-ras" (prefix + symbol written in lower case).
    exact = keyed["exact"]
    position = {key: i for i, key in enumerate(exact)}
    gene: dict[tuple[str, ...], int] = {}
    for key, (type_, _i, _s) in sorted(exact.items()):
        if type_ == "Gene" and len("".join(key)) >= 3:
            gene.setdefault(tuple(t.casefold() for t in key), position[key])
    out["gene_folded"] = "\n".join(f"{SEP.join(k)}\t{i}" for k, i in gene.items()).encode("utf-8")
    return types, out


def _from_sections(types: list[str], sections: dict[str, bytes]) -> Lookup:
    made: dict[str, LookupTable] = {}
    for name in TABLES:
        keys = sections[f"{name}.keys"].decode("utf-8")
        key_list = keys.split("\n") if keys else []
        long = sections[f"{name}.long"].decode("utf-8")
        pairs = sections[f"{name}.pairs"].decode("utf-8")
        pair_list = pairs.split("\n") if pairs else []
        # absent from a sidecar written before the section existed: every length is tried then
        lengths = sections.get(f"{name}.lengths", b"").decode("utf-8")
        ends = array.array("I")
        ends.frombytes(sections[f"{name}.id_ends"])
        if sys.byteorder != "little":
            ends.byteswap()
        made[name] = LookupTable(
            index=dict(zip(key_list, range(len(key_list)), strict=True)),
            info=sections[f"{name}.info"],
            ids=sections[f"{name}.ids"].decode("utf-8"),
            id_ends=ends,
            types=tuple(types),
            long={k: int(n) for k, n in (line.split("\t") for line in long.split("\n"))} if long else {},
            pairs=set(pair_list),
            lengths=dict(zip(pair_list, lengths.split("\n"), strict=True)) if lengths else {},
        )
    gene_lines = sections["gene_folded"].decode("utf-8")
    genes = dict(line.rsplit("\t", 1) for line in gene_lines.split("\n")) if gene_lines else {}
    return Lookup(made["exact"], made["relaxed"], made["folded"], FoldedGenes(made["exact"], genes))


def lookup_from_tables(tables: Mapping[str, Iterable[Iterable[str]]]) -> Lookup:
    """Build the lookup form of entry tables in memory (the slow way).

    Tokenizes every surface: seconds for the full lexicon.

    Args:
        tables: ``{"exact"|"relaxed"|"folded": [[surface, type, identifier], ...]}``;
            a missing table is empty, an entry with an empty key is left out,
            and the first entry of a key wins.

    Returns:
        The lookup form.

    Raises:
        ValueError: If a key holds a line break.
    """
    types, sections = _sections(tables)
    return _from_sections(types, sections)


# --- the sidecar file --------------------------------------------------------------------------


def dumps_lookup(tables: Mapping[str, Iterable[Iterable[str]]], source_sha256: str) -> bytes:
    """Serialise the lookup form of entry tables as sidecar bytes.

    Args:
        tables: The entry tables, as for
            [`lookup_from_tables`][pipeline.nlp.lexicon_lookup.lookup_from_tables].
        source_sha256: SHA-256 of the lexicon file they come from, recorded in
            the header so that a stale sidecar is recognised.

    Returns:
        A JSON header line followed by the sections (see the module docstring);
            the same tables give the same bytes.

    Raises:
        ValueError: If a key holds a line break.
    """
    types, sections = _sections(tables)
    names = [f"{t}.{s}" for t in TABLES for s in _SECTIONS] + ["gene_folded"]
    blobs = [sections[n] for n in names]
    header = {
        "format": LOOKUP_FORMAT,
        "source_sha256": source_sha256,
        "types": types,
        "sections": [[n, len(b)] for n, b in zip(names, blobs, strict=True)],
    }
    return json.dumps(header, sort_keys=True).encode("utf-8") + b"\n" + b"".join(blobs)


def write_lookup(lexicon: Path, tables: Mapping[str, Iterable[Iterable[str]]] | None = None) -> Path:
    """Write the lookup sidecar of a lexicon file.

    Written to a temporary file beside it, then renamed to the path
    [`lookup_path`][pipeline.nlp.lexicon_lookup.lookup_path] gives.

    Args:
        lexicon: The lexicon file (it must exist: its SHA-256 is recorded).
        tables: Its entry tables when already in memory; ``None`` reads them
            from ``lexicon``.

    Returns:
        The sidecar's path.

    Raises:
        ValueError: If ``lexicon`` is not a lexicon file (when ``tables`` is
            ``None``) or a key holds a line break.
    """
    if tables is None:
        tables = lx.read_lexicon(lexicon)["tables"]
    out = lookup_path(lexicon)
    durable.replace_file(out, dumps_lookup(tables, file_sha256(lexicon)))
    return out


def load_lookup(lexicon: Path, source_sha256: str | None = None) -> Lookup | None:
    """Read the lookup form stored next to a lexicon file.

    Args:
        lexicon: The lexicon file.
        source_sha256: Its SHA-256 when already known; ``None`` hashes the file.

    Returns:
        The lookup form, or ``None`` (with a logged warning, except when the
            sidecar is absent) when the sidecar is absent, has no readable header,
            was made from another lexicon file or another format, or is truncated.
    """
    path = lookup_path(lexicon)
    if not path.is_file():
        return None
    with open(path, "rb") as fh:
        try:
            header = json.loads(fh.readline())
        except ValueError:
            logger.warning("%s: not a lexicon lookup file; ignored", path)
            return None
        sha = source_sha256 or file_sha256(lexicon)
        if header.get("format") != LOOKUP_FORMAT or header.get("source_sha256") != sha:
            logger.warning("%s was made from another lexicon file (rebuild with `pgx-corpus lexicon build`)", path)
            return None
        sections: dict[str, bytes] = {}
        for name, size in header["sections"]:
            blob = fh.read(size)
            if len(blob) != size:
                logger.warning("%s: truncated; ignored", path)
                return None
            sections[name] = blob
    return _from_sections(header["types"], sections)


__all__ = [
    "Entry",
    "FoldedGenes",
    "Lookup",
    "LookupTable",
    "dumps_lookup",
    "file_sha256",
    "load_lookup",
    "lookup_from_tables",
    "lookup_path",
    "write_lookup",
]
