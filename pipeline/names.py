"""The patterns every identifier that becomes a file or directory name must match.

Identifiers come from files and services the project does not control (PubTator files, PubMed XML, BioC,
API responses, rosters, brat collections) and end up as path components: ``{PMID}_{k}.txt`` in a brat
collection, ``phase1/<person>/`` in a campaign.  Each is checked where it enters, against one of the
strict patterns below, and refused with a message naming the file and line; nothing downstream has to
wonder whether a name could climb out of its directory.

* **PMID** ([`PMID_RE`][pipeline.names.PMID_RE]): ASCII digits, as PubMed assigns them (PubMed XML,
  E-utilities and PubTator API responses, BioC ``pmid`` fields).
* **Document id** ([`DOCUMENT_ID_RE`][pipeline.names.DOCUMENT_ID_RE]): the id of a document in a
  PubTator or BioC *file*, which the project's own brat -> PubTator export fills with brat names
  (``1559_1``): an ASCII letter or digit, then letters, digits, ``_``, ``-`` or ``.``, at most 64
  characters.
* **Document name** ([`DOCUMENT_NAME_RE`][pipeline.names.DOCUMENT_NAME_RE]): the stem of a brat
  document (``{PMID}_{k}``, or any name a collection holds).  Same alphabet as document ids plus ``+``,
  at most 200 characters, so a name never holds a separator, a NUL or a whitespace, never starts with a
  dot (no hidden file, no ``.``/``..``) and is never absolute; nor is it one of
  [`DEVICE_NAMES`][pipeline.names.DEVICE_NAMES].  A name that merely contains ``..`` (``a..b_1``) is a
  valid name.
* **Person id** ([`PERSON_ID_RE`][pipeline.names.PERSON_ID_RE]): a roster id, which names
  ``phase1/<id>/`` beside brat's own configuration files: the document-id alphabet, at most 64
  characters, and none of [`RESERVED_NAMES`][pipeline.names.RESERVED_NAMES] (brat's configuration file
  names, the campaign's own directory names), nor any name ending in ``.conf``.  Ids are compared
  case-insensitively (two people whose ids differ only in case would share a directory on a
  case-insensitive file system).

The same goes for the fields written into a line of a brat ``.ann`` file (one annotation per line, its
columns separated by tabs and spaces): a tab or a line break in a field would add annotations the input
never had.  Two rules, applied where such a field enters (``pgx-corpus import``) and again by the writer
([`pipeline.brat.standoff.dumps`][pipeline.brat.standoff.dumps]), whatever its caller:

* **brat token** ([`brat_token_problem`][pipeline.names.brat_token_problem]): an id, a type, a role, an
  annotation reference, an attribute name or value, a normalization's database or identifier: a non-empty
  string without whitespace (line breaks included), ASCII control character or lone surrogate, and (for
  types, roles and databases) without ``:``.
* **brat text** ([`brat_text_problem`][pipeline.names.brat_text_problem]): the free text of a text-bound,
  note or normalization: a string without tab, line break ([`LINE_BREAKS`][pipeline.names.LINE_BREAKS]:
  every character Python's ``str.splitlines`` splits at, as brat's reader does) or lone surrogate (which
  UTF-8 cannot encode).

What ``import`` writes is also held to brat's own id form ([`ANNOTATION_ID_RE`][pipeline.names.ANNOTATION_ID_RE]):
brat tells an annotation's kind by the first letter of its id.

Every check raises [`NameError_`][pipeline.names.NameError_] (a ``ValueError``) whose message starts with ``where``
(``file:line``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pipeline.errors import InputError

PMID_RE = re.compile(r"[0-9]{1,12}\Z")
"""A PMID: 1 to 12 ASCII digits (use with ``match``)."""
DOCUMENT_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
"""A document id of a PubTator or BioC file: an ASCII letter or digit, then letters, digits, ``_-.``; 64 at most."""
DOCUMENT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]{0,199}\Z")
"""A brat document name (a file stem): the document-id alphabet plus ``+``, 200 characters at most."""
PERSON_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
"""A roster person id: the document-id alphabet, 64 characters at most."""

ANNOTATION_ID_RE = re.compile(r"(?:[A-Za-z]|#)[0-9]{1,9}\Z")
"""A brat annotation id as ``import`` writes it: its kind's letter (``T``, ``R``, ``E``, ``A``, ``N``) or ``#``,
then 1 to 9 digits."""
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""The characters Python's ``str.splitlines`` ends a line at, as brat's reader (``codecs`` lines) does."""
_BRAT_TEXT_BAD = re.compile(r"[\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\ud800-\udfff]")
_BRAT_TOKEN_BAD = re.compile(r"[\s\x00-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")

DEVICE_NAMES = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                          *(f"lpt{i}" for i in range(1, 10))})
"""Device names some file systems reserve (a document or person of that name cannot be copied there)."""
RESERVED_NAMES = frozenset({
    "acl.conf", "annotation.conf", "visual.conf", "tools.conf", "kb_shortcuts.conf", "config.py",
    "campaign.json", "manifest.csv", "phase1", "phase2", "review", "final", "locks", "users.json",
    *DEVICE_NAMES,
})
"""Names a person id may not take (compared in lower case).

The names brat gives its own files in a collection, and the campaign's fixed names: a person directory
of that name would overwrite or shadow them.
"""


class NameError_(InputError):  # noqa: N801 - NameError is a builtin
    """An identifier that cannot be used as a path component (message: ``where: ...``)."""


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""


def is_pmid(value: object) -> bool:
    """Tell whether a value is a PMID as PubMed assigns them.

    ASCII digits only (``str.isdigit`` also takes ``'²'``), see [`PMID_RE`][pipeline.names.PMID_RE].

    Args:
        value: Anything read from an input.

    Returns:
        True for a string of 1 to 12 ASCII digits.
    """
    return isinstance(value, str) and PMID_RE.match(value) is not None


def check_pmid(value: object, where: str = "") -> str:
    """Check that a value is a PMID (see [`PMID_RE`][pipeline.names.PMID_RE]).

    Args:
        value: Anything read from an input.
        where: The place it was read from (``file:line``), the start of the error message.

    Returns:
        ``value``, a string.

    Raises:
        NameError_: If ``value`` is not a PMID; the message names ``where``.
    """
    if not is_pmid(value):
        raise NameError_(f"{_prefix(where)}PMID {_describe(value)} refused: a PMID is 1 to 12 ASCII digits")
    return str(value)


def is_document_id(value: object) -> bool:
    """Tell whether a value is a document id of a PubTator or BioC file.

    Args:
        value: Anything read from an input.

    Returns:
        True when it matches [`DOCUMENT_ID_RE`][pipeline.names.DOCUMENT_ID_RE].
    """
    return isinstance(value, str) and DOCUMENT_ID_RE.match(value) is not None


def document_id_problem(value: object) -> str:
    """Say why a value is refused as a document id.

    Args:
        value: The refused value.

    Returns:
        The error message, without its place.
    """
    return (f"document id (PMID) {_describe(value)} refused: an id is an ASCII letter or digit, then letters, "
            "digits, '_', '-' or '.', at most 64 characters (no path separator, no '..' component)")


def check_document_id(value: object, where: str = "") -> str:
    """Check that a value is a document id of a PubTator or BioC file.

    Args:
        value: Anything read from an input.
        where: The place it was read from (``file:line``), the start of the error message.

    Returns:
        ``value``, a string.

    Raises:
        NameError_: If ``value`` does not match [`DOCUMENT_ID_RE`][pipeline.names.DOCUMENT_ID_RE].
    """
    if not is_document_id(value):
        raise NameError_(f"{_prefix(where)}{document_id_problem(value)}")
    return str(value)


def is_document_name(value: object) -> bool:
    """Tell whether a value is a valid brat document name.

    Args:
        value: Anything read from an input.

    Returns:
        True when it matches [`DOCUMENT_NAME_RE`][pipeline.names.DOCUMENT_NAME_RE] and is not one
            of [`DEVICE_NAMES`][pipeline.names.DEVICE_NAMES] (in any case).
    """
    return (isinstance(value, str) and DOCUMENT_NAME_RE.match(value) is not None
            and value.lower() not in DEVICE_NAMES)


def check_document_name(value: object, where: str = "") -> str:
    """Check that a value is a valid brat document name (see [`is_document_name`][pipeline.names.is_document_name]).

    Args:
        value: Anything read from an input.
        where: The place it was read from (``file:line``), the start of the error message.

    Returns:
        ``value``, a string.

    Raises:
        NameError_: If ``value`` is not a valid document name; the message names ``where``.
    """
    if not is_document_name(value):
        raise NameError_(
            f"{_prefix(where)}document name {_describe(value)} refused: a name is an ASCII letter or digit, "
            "then letters, digits, '_', '-', '+' or '.', at most 200 characters, and not a device name"
        )
    return str(value)


def check_person_id(value: object, where: str = "") -> str:
    """Check that a value can name a person's collection directory.

    Args:
        value: A roster id.
        where: The place it was read from (``file:line``), the start of the error message.

    Returns:
        ``value``, unchanged (case kept).

    Raises:
        NameError_: If ``value`` does not match [`PERSON_ID_RE`][pipeline.names.PERSON_ID_RE], is one
            of [`RESERVED_NAMES`][pipeline.names.RESERVED_NAMES] (in any case) or ends in ``.conf``.
    """
    if not isinstance(value, str) or PERSON_ID_RE.match(value) is None:
        raise NameError_(
            f"{_prefix(where)}id {_describe(value)} refused as a directory name: an id is an ASCII letter or "
            "digit, then letters, digits, '_', '-' or '.', at most 64 characters"
        )
    lower = value.lower()
    if lower in RESERVED_NAMES or lower.endswith(".conf"):
        raise NameError_(f"{_prefix(where)}id {value!r} refused as a directory name: it is a reserved name "
                         "(brat or campaign file)")
    return value


def check_distinct_ids(ids: Iterable[tuple[str, str]]) -> None:
    """Check that no two ids differ only in case.

    Args:
        ids: ``(id, where)`` pairs, ``where`` being the place the id was read from.

    Raises:
        NameError_: If two ids differ only in case (they would share a directory on a
            case-insensitive file system); the message names both places.
    """
    seen: dict[str, tuple[str, str]] = {}
    for value, where in ids:
        key = value.casefold()
        if key in seen and seen[key][0] != value:
            other, other_where = seen[key]
            raise NameError_(
                f"{_prefix(where)}id {value!r} differs only in case from {other!r} ({other_where}): "
                "they would share a directory on a case-insensitive file system"
            )
        seen.setdefault(key, (value, where))


def check_collection_path(value: object, where: str = "") -> tuple[str, ...]:
    """Split a collection path inside brat's data directory into checked components.

    Each component must match [`DOCUMENT_NAME_RE`][pipeline.names.DOCUMENT_NAME_RE], so no
    ``.``/``..``, no whitespace or line break (the path is written into ``acl.conf``, one rule per
    line), no NUL.

    Args:
        value: A collection path such as ``/`` or ``/a/b/`` (leading, trailing and repeated slashes
            are ignored).
        where: The place it was read from, the start of the error message.

    Returns:
        The components, in order; empty for the root ``/``.

    Raises:
        NameError_: If ``value`` is not a string or a component is not document-name-like.
    """
    if not isinstance(value, str):
        raise NameError_(f"{_prefix(where)}collection path {_describe(value)} refused: not a string")
    parts = tuple(p for p in value.strip().split("/") if p)
    for part in parts:
        if DOCUMENT_NAME_RE.match(part) is None:
            raise NameError_(f"{_prefix(where)}collection path {_describe(value)} refused: component "
                             f"{_describe(part)} is not letters, digits, '_', '-', '+' or '.' (not starting with '.')")
    return parts


def check_component(value: object, where: str = "", what: str = "path component") -> str:
    """Check that a value is one safe path component: not empty, no separator or NUL, not ``.`` or ``..``.

    Args:
        value: The would-be component.
        where: The place it was read from, the start of the error message.
        what: What the value is, for the error message (e.g. ``"collection name"``).

    Returns:
        ``value``, a string.

    Raises:
        NameError_: If ``value`` is not a single safe path component.
    """
    if (not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\\" in value
            or "\0" in value):
        raise NameError_(f"{_prefix(where)}{what} {_describe(value)} refused: not a single path component")
    return value


def brat_text_problem(value: object) -> str | None:
    """Say why a value cannot be written as the free text of a brat line (see the module docstring).

    Args:
        value: A text-bound's text, a note, a normalization's text.

    Returns:
        None when it can be written as it is; else what is wrong with it.
    """
    if not isinstance(value, str):
        return f"{_describe(value)} is not a string"
    bad = _BRAT_TEXT_BAD.search(value)
    if bad is not None:
        return (f"{_describe(value)} holds {bad.group()!r}, which would split or corrupt the brat line "
                "(no tab, line break or lone surrogate)")
    return None


def brat_token_problem(value: object, *, colon: bool = False) -> str | None:
    """Say why a value cannot be written as one token of a brat line (see the module docstring).

    Args:
        value: An id, a type, a role, a reference, an attribute name or value, a database or identifier.
        colon: Whether a ``:`` is allowed (an identifier, an attribute value); brat splits a role from its
            reference, an event type from its trigger and a database from its identifier at the first ``:``.

    Returns:
        None when it can be written as it is; else what is wrong with it.
    """
    if not isinstance(value, str) or not value:
        return f"{_describe(value)} is not a non-empty string"
    bad = _BRAT_TOKEN_BAD.search(value)
    if bad is not None:
        return (f"{_describe(value)} holds {bad.group()!r}, which would split or corrupt the brat line "
                "(no whitespace, ASCII control character or lone surrogate)")
    if not colon and ":" in value:
        return f"{_describe(value)} holds ':', which brat reads as a separator here"
    return None


def check_brat_text(value: object, what: str, where: str = "") -> str:
    """Check that a value can be written as the free text of a brat line.

    Args:
        value: The text.
        what: What it is, for the message (``"note of R1"``).
        where: The place it was read from, the start of the error message.

    Returns:
        ``value``, a string.

    Raises:
        NameError_: If it cannot be written as it is (see [`brat_text_problem`][pipeline.names.brat_text_problem]).
    """
    problem = brat_text_problem(value)
    if problem is not None:
        raise NameError_(f"{_prefix(where)}{what} refused: {problem}")
    return str(value)


def check_brat_token(value: object, what: str, where: str = "", *, colon: bool = False) -> str:
    """Check that a value can be written as one token of a brat line.

    Args:
        value: The token.
        what: What it is, for the message (``"type of T3"``).
        where: The place it was read from, the start of the error message.
        colon: Whether a ``:`` is allowed (see [`brat_token_problem`][pipeline.names.brat_token_problem]).

    Returns:
        ``value``, a string.

    Raises:
        NameError_: If it cannot be written as it is.
    """
    problem = brat_token_problem(value, colon=colon)
    if problem is not None:
        raise NameError_(f"{_prefix(where)}{what} refused: {problem}")
    return str(value)


def check_annotation_id(value: object, kind: str, where: str = "") -> str:
    """Check that a value is a brat annotation id of a given kind, as ``import`` writes them.

    Args:
        value: The id.
        kind: Its kind's first letter (``T``, ``R``, ``E``, ``A``, ``N``) or ``#`` (a note).
        where: The place it was read from, the start of the error message.

    Returns:
        ``value``, a string.

    Raises:
        NameError_: If ``value`` does not match [`ANNOTATION_ID_RE`][pipeline.names.ANNOTATION_ID_RE] or does
            not start with ``kind`` (brat would read another kind of annotation).
    """
    if not isinstance(value, str) or ANNOTATION_ID_RE.match(value) is None or not value.startswith(kind):
        raise NameError_(f"{_prefix(where)}annotation id {_describe(value)} refused: a brat {kind} id is "
                         f"{kind!r} followed by 1 to 9 digits")
    return value
