"""Size limits on the brat collections a training command reads, checked before anything is parsed.

``train`` and ``train-relations`` read each document as one sentence: ``train`` scores candidates over
its whole text, ``train-relations`` every ordered pair of its entities.  A document far larger than a
sentence (a 240 kB ``.txt``, a 124 kB ``.ann`` of entities) made them run for minutes or take
gigabytes.  [`check_collections`][pipeline.brat.limits.check_collections] streams every ``NAME.txt``
and ``NAME.ann`` (in bounded pieces, whatever their size) and refuses the first document over a limit,
naming the limit, the file and the line, before the commands parse anything:

* **text**: characters of one ``NAME.txt`` (a PGxCorpus sentence has at most about 600);
* **annotations**: annotation lines (not blank) of one ``NAME.ann``, of any kind; and no line longer
  than the text limit allows (4 bytes a character);
* **entities**: text-bound (``T``) annotations of one ``NAME.ann`` (a PGxCorpus sentence has at most
  32); ``None`` for no limit of its own;
* **offsets**: a text-bound annotation's offsets must lie within its ``NAME.txt`` (not a limit one
  raises: such an annotation is wrong).

Each limit has a command-line option that raises it (named in the message).  Symbolic links are not
followed (the readers report them).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError
from pipeline.paths import list_files

DEFAULT_MAX_TEXT_CHARS = 50_000
"""Characters of one document's text: a PubMed abstract has a few thousand, a sentence a few hundred."""
DEFAULT_MAX_ANNOTATIONS = 2_000
"""Annotation lines of one ``.ann``: a PGxCorpus sentence has at most about 120."""
DEFAULT_MAX_ENTITIES = 200
"""Text-bound annotations of one document for ``train-relations``: its scorer enumerates every ordered pair
of a sentence's entities (200 entities are 39,800 pairs, about half a gigabyte of features)."""

_PIECE = 1 << 16  # bytes read at a time: a file of one 300 MB line is never held whole


class LimitError(InputError):
    """A document over a limit, or with offsets outside its text (message: ``file:line: ...``)."""


@dataclass(frozen=True)
class Limits:
    """The limits checked, and the options that raise them (named in the messages).

    Attributes:
        max_text_chars: Most characters of one ``NAME.txt``.
        max_annotations: Most annotation lines of one ``NAME.ann``.
        max_entities: Most text-bound annotations of one ``NAME.ann``; ``None`` for no limit of its own.
        text_option: The option that raises ``max_text_chars``.
        annotations_option: The option that raises ``max_annotations``.
        entities_option: The option that raises ``max_entities``.
    """

    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    max_annotations: int = DEFAULT_MAX_ANNOTATIONS
    max_entities: int | None = None
    text_option: str = "--max-text-chars"
    annotations_option: str = "--max-annotations"
    entities_option: str = "--max-entities"


def _text_length(path: Path, limits: Limits) -> int:
    """Characters of a text file, read in pieces; raises at the line where the limit is crossed."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # bad bytes: the reader's to report
    chars, line = 0, 1
    with open(path, "rb") as fh:
        while True:
            raw = fh.read(_PIECE)
            piece = decoder.decode(raw, final=not raw)
            if chars + len(piece) > limits.max_text_chars:
                line += piece.count("\n", 0, limits.max_text_chars - chars)
                raise LimitError(f"{path}:{line}: the text is longer than {limits.max_text_chars:,} characters, "
                                 f"the limit per document ({limits.text_option} raises it)")
            chars += len(piece)
            line += piece.count("\n")
            if not raw:
                return chars


def _lines(path: Path, limits: Limits) -> Iterator[tuple[int, bytes]]:
    """``(line number, first piece of the line)`` of an ``.ann``, reading at most a piece at a time.

    Raises:
        LimitError: For a line of more bytes than a document's text may take (4 per character).
    """
    longest = 4 * limits.max_text_chars + 1_000  # a text-bound's text, or a note, is no longer than a text
    number, fresh, length = 0, True, 0
    with open(path, "rb") as fh:
        while piece := fh.readline(_PIECE):
            if fresh:
                number, length = number + 1, 0
                yield number, piece
            length += len(piece)
            if length > longest:
                raise LimitError(f"{path}:{number}: a line of more than {longest:,} bytes, longer than the limit on a "
                                 f"document's text allows ({limits.text_option} raises it)")
            fresh = piece.endswith(b"\n")


def _offsets(line: bytes) -> list[int]:
    """The offsets of a ``T`` line's fragments; those that are not integers are the parser's to report."""
    fields = line.split(b"\t")
    if len(fields) < 2:
        return []
    out = []
    for fragment in fields[1].split(b" ", 1)[-1].split(b";"):
        for value in fragment.split():
            if value.isdigit():
                out.append(int(value))
    return out


def _check_ann(path: Path, text_length: int | None, text_path: Path, limits: Limits) -> None:
    annotations = entities = 0
    for number, line in _lines(path, limits):
        if not line.strip():
            continue
        annotations += 1
        if annotations > limits.max_annotations:
            raise LimitError(f"{path}:{number}: more than {limits.max_annotations:,} annotations in one document, "
                             f"the limit ({limits.annotations_option} raises it)")
        if not line.startswith(b"T"):
            continue
        entities += 1
        if limits.max_entities is not None and entities > limits.max_entities:
            raise LimitError(f"{path}:{number}: more than {limits.max_entities:,} text-bound annotations in one "
                             f"document, the limit ({limits.entities_option} raises it)")
        if text_length is not None:
            beyond = [o for o in _offsets(line) if o > text_length]
            if beyond:
                raise LimitError(f"{path}:{number}: offset {beyond[0]} lies beyond the {text_length:,} characters "
                                 f"of {text_path}")


def check_collections(directories: Sequence[str | os.PathLike[str]], limits: Limits) -> int:
    """Check every document of brat collections against the limits, reading no file whole.

    Args:
        directories: The collections, searched recursively (symbolic links inside are not followed).
        limits: The limits.

    Returns:
        The number of ``.txt`` and ``.ann`` files checked.

    Raises:
        LimitError: For the first document over a limit or with an offset beyond its text (in directory
            order; in a directory its texts first, then its ``.ann`` files, each by path):
            ``file:line: ...``, naming the limit and the option that raises it.
        NotADirectoryError: If a directory is not one.
        OSError: If a file cannot be read.
    """
    checked = 0
    for directory in directories:
        files = list_files(directory, (".txt", ".ann"), recursive=True).files
        lengths = {p: _text_length(p, limits) for p in files if p.suffix == ".txt"}  # texts first, each read once
        for path in files:
            checked += 1
            if path.suffix == ".ann":
                # ``a..b_1.ann`` -> ``a..b_1.txt`` (``with_suffix`` would read ``.b_1`` as a suffix later on)
                text_path = path.with_name(path.name[: -len(".ann")] + ".txt")
                _check_ann(path, lengths.get(text_path), text_path, limits)
    return checked
