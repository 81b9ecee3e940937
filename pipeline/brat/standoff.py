"""brat standoff format: data structures, reader and writer.

A brat document is a ``NAME.txt`` (UTF-8 text) and a ``NAME.ann`` beside it.
Offsets in ``.ann`` are half-open character offsets into the ``.txt`` text;
a discontiguous text-bound annotation lists its fragments as
``start end;start end`` and its text as the fragment texts joined by single
spaces.  This module only parses and serialises; checking a document against
an ``annotation.conf`` is [`pipeline.brat.validate`][pipeline.brat.validate]'s job.

Parsing never raises on a bad line: the line is skipped and reported as a
[`ParseIssue`][pipeline.brat.standoff.ParseIssue] naming file and line, so one bad line never sinks a run
and is never silently lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.documents import Annotation, Span
from pipeline.errors import InputError
from pipeline.names import check_brat_text, check_brat_token, check_document_name
from pipeline.paths import list_files


@dataclass(frozen=True)
class TextBound:
    """A text-bound annotation, a ``T`` line: ``T1<TAB>Type start end;start end<TAB>text``.

    Attributes:
        id: The brat id (``T1``).
        type: The entity type.
        fragments: The ``(start, end)`` spans, half-open character offsets into the document's
            ``.txt``, in the order of the file (brat allows any order; see ``sorted_fragments``).
        text: The text column as written: the fragment texts joined by single spaces (not
            checked here against the ``.txt``).
        line: The 1-based line of the ``.ann`` it was read from (0 when built in code).
    """

    id: str
    type: str
    fragments: tuple[Span, ...]
    text: str
    line: int = 0

    @property
    def sorted_fragments(self) -> tuple[Span, ...]:
        """The fragments sorted by offset (half-open, into the ``.txt``)."""
        return tuple(sorted(self.fragments))

    @property
    def start(self) -> int:
        """The smallest fragment start (a character offset into the ``.txt``)."""
        return min(s for s, _ in self.fragments)

    @property
    def end(self) -> int:
        """The largest fragment end (exclusive, a character offset into the ``.txt``)."""
        return max(e for _, e in self.fragments)


@dataclass(frozen=True)
class Relation:
    """A binary relation, an ``R`` line: ``R1<TAB>Type Arg1:T1 Arg2:T2``.

    Attributes:
        id: The brat id (``R1``).
        type: The relation type.
        args: The ``(role, annotation id)`` pairs in the order of the file (``("Arg1", "T1")``).
        line: The 1-based line of the ``.ann`` it was read from (0 when built in code).
    """

    id: str
    type: str
    args: tuple[tuple[str, str], ...]
    line: int = 0

    def arg(self, role: str) -> str | None:
        """Return the annotation id filling a role.

        Args:
            role: The argument role, e.g. ``Arg1``.

        Returns:
            The id of the first argument with that role, or None when the relation has none.
        """
        return next((ref for r, ref in self.args if r == role), None)


@dataclass(frozen=True)
class Event:
    """An event, an ``E`` line: ``E1<TAB>Type:T1 Role:T2 ...``.

    Attributes:
        id: The brat id (``E1``).
        type: The event type.
        trigger: The id of the trigger text-bound (``T1``).
        args: The ``(role, annotation id)`` pairs in the order of the file.
        line: The 1-based line of the ``.ann`` it was read from (0 when built in code).
    """

    id: str
    type: str
    trigger: str
    args: tuple[tuple[str, str], ...]
    line: int = 0


@dataclass(frozen=True)
class Attribute:
    """An attribute, an ``A`` (or legacy ``M``) line: ``A1<TAB>Type T1 [value]``.

    Attributes:
        id: The brat id (``A1``).
        type: The attribute name.
        target: The id of the annotation it qualifies.
        value: The value of a multi-valued attribute; None for a binary attribute.
        line: The 1-based line of the ``.ann`` it was read from (0 when built in code).
    """

    id: str
    type: str
    target: str
    value: str | None = None
    line: int = 0


@dataclass(frozen=True)
class Normalization:
    """A normalization, an ``N`` line: ``N1<TAB>Reference T1 DB:ID<TAB>text``.

    Attributes:
        id: The brat id (``N1``).
        type: The normalization type (``Reference``).
        target: The id of the annotation normalized.
        db: The database part of ``DB:ID``.
        db_id: The identifier part of ``DB:ID``.
        text: The free text column (the leading tabs brat adds on each save are removed).
        line: The 1-based line of the ``.ann`` it was read from (0 when built in code).
    """

    id: str
    type: str
    target: str
    db: str
    db_id: str
    text: str = ""
    line: int = 0


@dataclass(frozen=True)
class Note:
    """A note, a ``#`` line: ``#1<TAB>AnnotatorNotes T1<TAB>note``.

    A relation's note carries its modality: see [`pipeline.brat.modality`][pipeline.brat.modality].

    Attributes:
        id: The brat id (``#1``).
        type: The note type (``AnnotatorNotes``).
        target: The id of the annotation the note is attached to.
        text: The note text (``""`` when the line has none).
        line: The 1-based line of the ``.ann`` it was read from (0 when built in code).
    """

    id: str
    type: str
    target: str
    text: str
    line: int = 0


@dataclass(frozen=True)
class Equiv:
    """An equivalence, a ``*`` line: ``*<TAB>Equiv T1 T2 ...``.

    Attributes:
        type: The equivalence type (``Equiv``).
        ids: The ids of the equivalent annotations, at least two, in the order of the file.
        line: The 1-based line of the ``.ann`` it was read from (0 when built in code).
    """

    type: str
    ids: tuple[str, ...]
    line: int = 0


@dataclass(frozen=True)
class ParseIssue:
    """A line of a brat file that could not be read, reported instead of raised.

    Printed as ``file:line: message``.

    Attributes:
        file: The path of the file (or ``NAME.ann`` when parsed from a string without a path).
        line: The 1-based line; 0 for the file as a whole.
        message: What is wrong, quoting the line.
    """

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class BratDocument:
    """One brat document: its text and the annotations of its ``.ann``, by kind, in file order.

    Attributes:
        name: The file stem (``{PMID}_{k}`` for PGxCorpus).
        text: The text of the ``.txt``, read as brat reads it (no newline translation); every
            offset of the annotations is a half-open character offset into it.
        textbounds: The ``T`` lines.
        relations: The ``R`` lines.
        events: The ``E`` lines.
        attributes: The ``A``/``M`` lines.
        normalizations: The ``N`` lines.
        notes: The ``#`` lines.
        equivs: The ``*`` lines.
        path: The path of the ``.ann`` it was read from (``""`` when built in code).
    """

    name: str
    text: str
    textbounds: list[TextBound] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)
    normalizations: list[Normalization] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    equivs: list[Equiv] = field(default_factory=list)
    path: str = ""

    @property
    def pmid(self) -> str:
        """The PMID part of a ``{PMID}_{k}`` name (the whole name otherwise)."""
        return self.name.split("_", 1)[0]

    def textbound(self, tid: str) -> TextBound | None:
        """Look up a text-bound annotation by id.

        Args:
            tid: The brat id (``T1``).

        Returns:
            The first text-bound with that id, or None.
        """
        return next((t for t in self.textbounds if t.id == tid), None)

    def notes_for(self, target: str) -> list[str]:
        """List the note texts attached to an annotation.

        Args:
            target: The id of the annotation (``T1``, ``R1``...).

        Returns:
            The texts of its ``#`` lines, in file order (empty when none).
        """
        return [n.text for n in self.notes if n.target == target]

    def ids(self) -> Iterator[str]:
        """Iterate over the ids of the document's annotations (equivalences have none).

        Yields:
            The ids of the text-bounds, relations, events, attributes, normalizations and notes, in
                that order.
        """
        for group in (self.textbounds, self.relations, self.events, self.attributes, self.normalizations, self.notes):
            for item in group:
                yield item.id


_FRAG_RE = re.compile(r"^(\d+) (\d+)$")


def _parse_fragments(spec: str) -> tuple[Span, ...]:
    frags = []
    for part in spec.split(";"):
        m = _FRAG_RE.match(part.strip())
        if not m:
            raise ValueError(f"bad offsets {spec!r}")
        start, end = int(m.group(1)), int(m.group(2))
        if start > end:
            raise ValueError(f"fragment end before start in {spec!r}")
        frags.append((start, end))
    return tuple(frags)


def _parse_args(parts: Iterable[str]) -> tuple[tuple[str, str], ...]:
    args = []
    for part in parts:
        role, sep, ref = part.partition(":")
        if not sep or not role or not ref:
            raise ValueError(f"bad argument {part!r}")
        args.append((role, ref))
    return tuple(args)


def parse_ann(name: str, text: str, ann: str, path: str = "") -> tuple[BratDocument, list[ParseIssue]]:
    r"""Parse the content of an ``.ann`` file.

    A bad line is skipped and reported, never raised.  Offsets are kept as written (half-open,
    into ``text``); they are not checked against it here.

    Args:
        name: The document name (the file stem).
        text: The document text, that of the ``.txt``.
        ann: The ``.ann`` content (``\n`` or ``\r\n`` line ends).
        path: The path of the ``.ann``, named by the issues (``NAME.ann`` when empty).

    Returns:
        The document and the issues found, one per unparsable line.
    """
    doc = BratDocument(name=name, text=text, path=path)
    issues: list[ParseIssue] = []
    where = path or f"{name}.ann"
    for lineno, raw in enumerate(ann.split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        try:
            _parse_line(doc, line, lineno)
        except (ValueError, IndexError) as exc:
            issues.append(ParseIssue(where, lineno, f"cannot parse line {line!r}: {exc}"))
    return doc, issues


def _parse_line(doc: BratDocument, line: str, lineno: int) -> None:
    cols = line.split("\t")
    ident = cols[0]
    if not ident:
        raise ValueError("no id")
    head = cols[1].split() if len(cols) > 1 else []
    tag = ident[0]
    if tag == "T":
        if len(cols) < 3 or not head:
            raise ValueError("text-bound needs id, type and offsets, and text")
        type_, offsets = head[0], " ".join(head[1:])
        doc.textbounds.append(TextBound(ident, type_, _parse_fragments(offsets), cols[2], lineno))
    elif tag == "R":
        if len(head) != 3:
            raise ValueError("relation needs a type and two arguments")
        doc.relations.append(Relation(ident, head[0], _parse_args(head[1:]), lineno))
    elif tag == "E":
        if not head:
            raise ValueError("event needs a trigger")
        type_, sep, trigger = head[0].partition(":")
        if not sep:
            raise ValueError("event needs Type:Trigger")
        doc.events.append(Event(ident, type_, trigger, _parse_args(head[1:]), lineno))
    elif tag in "AM":
        if len(head) not in (2, 3):
            raise ValueError("attribute needs a type, a target and an optional value")
        doc.attributes.append(Attribute(ident, head[0], head[1], head[2] if len(head) == 3 else None, lineno))
    elif tag == "N":
        if len(head) != 3 or ":" not in head[2]:
            raise ValueError("normalization needs a type, a target and DB:ID")
        db, _, db_id = head[2].partition(":")
        # brat (44ecd825) adds a tab before the text of every N line each time it saves a document: the text
        # is what follows the tabs, however many
        doc.normalizations.append(
            Normalization(ident, head[0], head[1], db, db_id, "\t".join(cols[2:]).lstrip("\t"), lineno)
        )
    elif tag == "#":
        if len(head) != 2:
            raise ValueError("note needs a type and a target")
        doc.notes.append(Note(ident, head[0], head[1], cols[2] if len(cols) > 2 else "", lineno))
    elif tag == "*":
        if len(head) < 3:
            raise ValueError("equivalence needs a type and at least two ids")
        doc.equivs.append(Equiv(head[0], tuple(head[1:]), lineno))
    else:
        raise ValueError(f"unknown annotation kind {tag!r}")


class BratTextError(InputError):
    """A brat file that is not valid UTF-8.

    The message is ``file:line: ...``, naming the line of the first bad byte.
    """


def _undecodable(path: Path, raw: bytes, exc: UnicodeDecodeError) -> BratTextError:
    line = raw[: exc.start].count(b"\n") + 1
    return BratTextError(f"{path}:{line}: not valid UTF-8 ({exc.reason} at byte {exc.start})")


def read_text(path: str | Path) -> str:
    r"""Read a brat ``.txt`` (or ``.ann``) file exactly as brat's server reads it.

    brat opens text files with ``codecs.open(path, 'rU', encoding='utf8', errors='strict')``
    (``server/src/annotation.py`` ``open_textfile``), and ``codecs.open`` always opens the file in
    binary mode, so no newline is translated: a ``\r\n`` counts as two characters in brat's offsets,
    and here too (``Path.read_text`` would turn it into one ``\n`` and shift every later offset).

    Args:
        path: The file.

    Returns:
        The decoded text, newlines untouched, so that offsets into it are brat's offsets.

    Raises:
        BratTextError: If the file holds bytes that are not UTF-8 (``file:line``).
        OSError: If the file cannot be read (as it comes).
    """
    p = Path(path)
    raw = p.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _undecodable(p, raw, exc) from None


def read_document(txt_path: str | Path) -> tuple[BratDocument, list[ParseIssue]]:
    """Read ``NAME.txt`` and its ``NAME.ann`` as brat reads them.

    A missing ``.ann`` is read as an empty one.

    Args:
        txt_path: The ``NAME.txt`` file; the ``.ann`` is the file beside it with that suffix.

    Returns:
        The document (named by the ``.txt`` stem, offsets into its text) and the issues of the lines
            that could not be parsed.

    Raises:
        BratTextError: If the ``.txt`` or the ``.ann`` holds bytes that are not UTF-8 (naming the file
            and line).
    """
    txt = Path(txt_path)
    ann = txt.with_suffix(".ann")
    text = read_text(txt)
    content = read_text(ann) if ann.exists() else ""
    return parse_ann(txt.stem, text, content, str(ann))


def read_collection(directory: str | Path) -> tuple[list[BratDocument], list[ParseIssue]]:
    """Read every document under a directory, starting from the ``.txt`` files.

    Symbolic links inside the collection are not followed: each is reported as an issue (line 0)
    and the document skipped.  An ``.ann`` without its ``.txt`` is ignored (see
    [`read_directory`][pipeline.brat.standoff.read_directory], which reads it).

    Args:
        directory: The collection, searched recursively.

    Returns:
        The documents, sorted by path, and the issues found (links, unparsable lines).

    Raises:
        FileNotFoundError: If ``directory`` is not a directory.
        BratTextError: If a file holds bytes that are not UTF-8.
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    docs: list[BratDocument] = []
    listing = list_files(root, (".txt",), recursive=True)
    issues: list[ParseIssue] = [ParseIssue(str(p), 0, "symbolic link inside the collection, not followed")
                                for p in listing.symlinks]
    for txt in listing.files:
        if txt.with_suffix(".ann").is_symlink():
            issues.append(ParseIssue(str(txt.with_suffix(".ann")), 0, "symbolic link inside the collection, "
                                     "not followed"))
            continue
        doc, found = read_document(txt)
        docs.append(doc)
        issues.extend(found)
    return docs, issues


def fragments_spec(fragments: Iterable[Span]) -> str:
    """Write fragments as the offsets column of a ``T`` line.

    Args:
        fragments: Half-open ``(start, end)`` character offsets into the ``.txt``, in the order wanted.

    Returns:
        ``start end;start end...``, in the order given.
    """
    return ";".join(f"{s} {e}" for s, e in fragments)


def dumps(doc: BratDocument, where: str = "") -> str:
    r"""Serialise the annotations of a document as ``.ann`` content.

    Ids, offsets and texts are written as they are (nothing is renumbered), by kind: text-bounds,
    relations, events, attributes, normalizations, notes, equivalences.  Whatever the caller, no field may
    split its line or shift its columns: each is checked with the rules of
    [`pipeline.names`][pipeline.names] (ids, types, roles, references, attribute names and values,
    databases and identifiers are brat tokens; text columns are brat texts).

    Args:
        doc: The document.
        where: The place named by an error (default: the document's path, else ``NAME.ann``).

    Returns:
        The ``.ann`` content, one ``\n``-terminated line per annotation (``""`` when there is none).

    Raises:
        NameError_: If a field cannot be written as it is (a tab or a line break in it, whitespace in a
            token...); the message names ``where`` and the annotation.  Nothing is returned then.
    """
    where = where or doc.path or f"{doc.name}.ann"

    def tok(value: object, what: str, colon: bool = False) -> str:
        return check_brat_token(value, what, where, colon=colon)

    def txt(value: object, what: str) -> str:
        return check_brat_text(value, what, where)

    lines: list[str] = []
    for t in doc.textbounds:
        tok(t.id, "text-bound id")
        lines.append(f"{t.id}\t{tok(t.type, f'type of {t.id}')} {fragments_spec(t.fragments)}\t"
                     f"{txt(t.text, f'text of {t.id}')}")
    for r in doc.relations:
        tok(r.id, "relation id")
        args = " ".join(f"{tok(role, f'role of {r.id}')}:{tok(ref, f'argument of {r.id}')}" for role, ref in r.args)
        lines.append(f"{r.id}\t{tok(r.type, f'type of {r.id}')} {args}\t")
    for e in doc.events:
        tok(e.id, "event id")
        lines.append(f"{e.id}\t{tok(e.type, f'type of {e.id}')}:{tok(e.trigger, f'trigger of {e.id}')}"
                     + "".join(f" {tok(role, f'role of {e.id}')}:{tok(ref, f'argument of {e.id}')}"
                               for role, ref in e.args))
    for a in doc.attributes:
        tok(a.id, "attribute id")
        value = f" {tok(a.value, f'value of {a.id}', colon=True)}" if a.value is not None else ""
        lines.append(f"{a.id}\t{tok(a.type, f'name of {a.id}')} {tok(a.target, f'target of {a.id}')}{value}")
    for n in doc.normalizations:
        tok(n.id, "normalization id")
        lines.append(f"{n.id}\t{tok(n.type, f'type of {n.id}')} {tok(n.target, f'target of {n.id}')} "
                     f"{tok(n.db, f'database of {n.id}')}:{tok(n.db_id, f'identifier of {n.id}', colon=True)}\t"
                     f"{txt(n.text, f'text of {n.id}')}")
    for q in doc.notes:
        tok(q.id, "note id")
        lines.append(f"{q.id}\t{tok(q.type, f'type of {q.id}')} {tok(q.target, f'target of {q.id}')}\t"
                     f"{txt(q.text, f'text of {q.id}')}")
    for eq in doc.equivs:
        lines.append(f"*\t{tok(eq.type, 'equivalence type')} "
                     + " ".join(tok(i, "equivalence member") for i in eq.ids))
    return "".join(line + "\n" for line in lines)


def write_document(directory: str | Path, doc: BratDocument) -> None:
    r"""Write ``NAME.txt`` and ``NAME.ann`` under a directory (UTF-8, ``\n`` line ends).

    The files are written in place, ``.txt`` first: not atomically, and no lock is taken here.
    ``NAME`` must be a valid document name
    ([`check_document_name`][pipeline.names.check_document_name]): whatever the callers checked, no
    name reaches outside ``directory`` here.

    Args:
        directory: The target directory, created if missing.
        doc: The document; ``doc.name`` names the files.

    Raises:
        NameError_: If ``doc.name`` is not a valid document name, or a field cannot be written as it is
            ([`dumps`][pipeline.brat.standoff.dumps]); nothing is written then.
    """
    check_document_name(doc.name, str(directory))
    ann = dumps(doc)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{doc.name}.txt").write_text(doc.text, encoding="utf-8", newline="\n")
    (out / f"{doc.name}.ann").write_text(ann, encoding="utf-8", newline="\n")


def to_annotations(doc: BratDocument, source: str = "gold") -> list[Annotation]:
    """Convert the text-bound annotations of a brat document to model annotations.

    Empty fragments are dropped from an annotation; an annotation left with
    none is skipped.  Normalization lines fill ``identifier`` (``DB:ID``).

    Args:
        doc: The brat document.
        source: The ``source`` of the annotations made (``gold`` for manual annotation).

    Returns:
        One [`Annotation`][pipeline.documents.Annotation] per text-bound kept, in file order, its
            fragments sorted, half-open and document-relative (offsets into the ``.txt``), its ``text``
            taken from the document text.
    """
    ids = {n.target: f"{n.db}:{n.db_id}" for n in doc.normalizations}
    out = []
    for t in doc.textbounds:
        frags = tuple(sorted((s, e) for s, e in t.fragments if e > s))
        if not frags:
            continue
        out.append(Annotation(frags, t.type, source, ids.get(t.id), " ".join(doc.text[s:e] for s, e in frags)))
    return out


def read_directory(directory: str | Path) -> tuple[list[BratDocument], list[ParseIssue]]:
    """Read every document under a directory, ``.ann`` files without ``.txt`` included.

    Unlike [`read_collection`][pipeline.brat.standoff.read_collection] (which starts from the ``.txt`` files), a
    ``NAME.ann`` whose ``NAME.txt`` is missing is read with an empty text, so
    annotation-only directories (pre-annotations, system outputs) can be
    scored against a collection that has the texts.  Two files with the same
    stem in different subdirectories: the first (by path) is kept and the
    other reported as a [`ParseIssue`][pipeline.brat.standoff.ParseIssue].  A file that is not valid UTF-8
    is read with the invalid bytes replaced and reported (file and line).  Symbolic links inside the
    directory are reported and not followed.

    Args:
        directory: The directory, searched recursively.

    Returns:
        The documents, sorted by name (offsets into their text; empty text for an orphan ``.ann``),
            and the issues found.

    Raises:
        FileNotFoundError: If ``directory`` is not a directory.
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    listing = list_files(root, (".txt", ".ann"), recursive=True)
    issues: list[ParseIssue] = [ParseIssue(str(p), 0, "symbolic link inside the collection, not followed")
                                for p in listing.symlinks]
    found_files = set(listing.files)
    stems: dict[str, Path] = {}
    for path in listing.files:
        # ``a..b_1.txt`` -> ``a..b_1`` (not ``Path.with_suffix``, which reads ``.b_1`` as a suffix later on)
        base = path.with_name(path.name[: -len(path.suffix)])
        if base.name in stems and stems[base.name] != base:
            if path.suffix == ".ann" or base.with_name(base.name + ".ann") not in found_files:
                kept = stems[base.name]
                issues.append(ParseIssue(str(path), 0, f"duplicate document name {base.name!r} (kept {kept})"))
            continue
        stems[base.name] = base
    docs: list[BratDocument] = []
    for name in sorted(stems):
        base = stems[name]
        txt, ann = base.with_name(name + ".txt"), base.with_name(name + ".ann")
        text = _read_lenient(txt, issues) if txt in found_files else ""
        content = _read_lenient(ann, issues) if ann in found_files else ""
        doc, found = parse_ann(name, text, content, str(ann))
        docs.append(doc)
        issues.extend(found)
    return docs, issues


def _read_lenient(path: Path, issues: list[ParseIssue]) -> str:
    """UTF-8 text of ``path``; invalid bytes are replaced (U+FFFD) and reported with their line."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        issues.append(ParseIssue(str(path), line, f"not valid UTF-8 ({exc.reason} at byte {exc.start}); "
                                 "invalid bytes replaced"))
        return raw.decode("utf-8", errors="replace")
