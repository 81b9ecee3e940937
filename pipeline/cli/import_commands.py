"""``pgx-corpus import``: BioC, PubTator (with the key column) and Hugging Face Parquet back into brat.

Thin handler over [`pipeline.brat.intake`][pipeline.brat.intake], which reads the input one document at a
time with the readers of [`pipeline.brat.export`][pipeline.brat.export],
[`pipeline.brat.pubtator`][pipeline.brat.pubtator] and [`pipeline.brat.bigbio`][pipeline.brat.bigbio], and
checks each record and document before it is written (structure, limits, names, every brat field, validity
against the schema's ``annotation.conf``).  The output directory must not exist or be empty; it gets the
documents and the configuration files of the schema, or, on a refusal, nothing.  What a format cannot hold
comes back absent, as the release's format table declares.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from pipeline import durable
from pipeline.brat.conf import annotation_conf, write_conf_files
from pipeline.brat.intake import IntakeError, Limits, Names, check_document, iter_documents
from pipeline.brat.standoff import BratDocument, dumps, write_document
from pipeline.brat.validate import parse_annotation_conf
from pipeline.cli.exitcodes import ExitCode
from pipeline.schema import DEFAULT_SCHEMA, Schema, SchemaError, load_schema

FORMATS = ("auto", "bioc", "pubtator", "bigbio_kb", "source")
"""The input formats ``import --format`` accepts (``auto``: from the name)."""


def detect(path: Path) -> str:
    """Tell the format of an input from its name (and, for Parquet, its columns).

    Args:
        path: A file, or a directory of ``.parquet`` files.

    Returns:
        ``bioc`` (``.xml``/``.json``), ``pubtator`` (``.pubtator``/``.txt``/``.pubtator.gz``), or for Parquet
            ``bigbio_kb`` (a ``passages`` column) or ``source``.

    Raises:
        ValueError: If the name tells no format, or a directory holds no ``.parquet`` file.
    """
    if path.is_dir():
        files = sorted(path.glob("*.parquet"))
        if not files:
            raise ValueError(f"{path}: a directory without .parquet files")
        probe = files[0]
    elif path.suffix in (".xml", ".json"):
        return "bioc"
    elif path.suffix in (".pubtator", ".txt") or path.name.endswith(".pubtator.gz"):
        return "pubtator"
    elif path.suffix == ".parquet":
        probe = path
    else:
        raise ValueError(f"{path}: cannot tell the format from the name (BioC .xml/.json, PubTator "
                         ".pubtator/.txt/.pubtator.gz, Parquet); give the format")
    import pyarrow.parquet as pq  # here, not at start-up: pyarrow and numpy take a second to import

    names = set(pq.read_schema(probe).names)
    return "bigbio_kb" if "passages" in names else "source"


def read_input(src: Path, fmt: str, schema: Schema, limits: Limits | None = None) -> list[BratDocument]:
    """Read an input file or directory as brat documents, each checked as ``import`` checks it before writing.

    The structure, the limits, the names (no two documents of one name) and every field written into a
    brat line are checked ([`pipeline.brat.intake`][pipeline.brat.intake]); the documents are not validated
    against a schema (predictions may be scored whatever their types).  A PubTator entity line without the
    key column is read as one entity (as ``import --no-key-column`` does).

    Args:
        src: The input.
        fmt: One of [`FORMATS`][pipeline.cli.import_commands.FORMATS] (``auto``:
            [`detect`][pipeline.cli.import_commands.detect]).
        schema: The schema the readers map types with.
        limits: The bounds of the input (the defaults of [`Limits`][pipeline.brat.intake.Limits] when None).

    Returns:
        The brat documents (offsets into each document's ``.txt`` text).

    Raises:
        OSError: If the input cannot be read; see
            [`read_errors`][pipeline.cli.import_commands.read_errors] for every error of an unreadable input.
        ValueError: If the input is malformed, refused (file and record named) or its format unknown.
    """
    fmt = detect(src) if fmt == "auto" else fmt
    names = Names()
    docs = []
    try:
        # a system's PubTator output usually has six columns: each line is one predicted entity
        for item in iter_documents(src, fmt, schema, limits, require_key=False):
            names.add(item)
            dumps(item.doc, item.where)  # every field of every line checked (names.py's rules)
            docs.append(item.doc)
    except (RecursionError, MemoryError) as exc:
        raise IntakeError(f"{src}: {_resource_message(exc)}") from None
    return docs


def _resource_message(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply to be read (RecursionError): refused"
    return "the input does not fit in memory (MemoryError): refused; lower the limits (--max-input-mb)"


def is_brat_dir(path: Path) -> bool:
    """Tell whether a path is a brat directory.

    Args:
        path: Any path.

    Returns:
        True for a directory with a ``.ann`` file somewhere under it.
    """
    return path.is_dir() and any(path.rglob("*.ann"))


@contextlib.contextmanager
def as_brat_dir(src: Path, docs: Sequence[BratDocument] | None) -> Iterator[Path]:
    """Give a brat directory for an input: ``src`` itself, or a scratch directory of ``docs``.

    Args:
        src: The input path.
        docs: None when ``src`` is a brat directory; else its documents, written into a scratch
            directory that is removed afterwards.

    Yields:
        The brat directory to read.
    """
    if docs is None:
        yield src
        return
    with tempfile.TemporaryDirectory(prefix="pgx-import-") as scratch:
        for doc in docs:
            write_document(scratch, doc)
        yield Path(scratch)


def read_errors() -> tuple[type[BaseException], ...]:
    """Return what reading an unreadable input raises.

    lxml's ``XMLSyntaxError`` is a ``SyntaxError``; an [`IntakeError`][pipeline.brat.intake.IntakeError]
    and a ``UnicodeError`` are ``ValueError``s; pyarrow's errors are ``ArrowException``s.  pyarrow is
    imported here, when an error is caught, not when the command line starts.  The module attribute
    ``READ_ERRORS`` is the same tuple.

    Returns:
        The exception classes.
    """
    import pyarrow as pa

    return (OSError, ValueError, KeyError, SyntaxError, pa.ArrowException)


def refusals() -> tuple[type[BaseException], ...]:
    """Return what refuses an input: [`read_errors`][pipeline.cli.import_commands.read_errors] and more.

    The module attribute ``REFUSALS`` is the same tuple.

    Returns:
        The exception classes.
    """
    return (*read_errors(), SchemaError, RecursionError, MemoryError)


def __getattr__(name: str) -> tuple[type[BaseException], ...]:
    # READ_ERRORS and REFUSALS, made when first asked for (they need pyarrow)
    if name == "READ_ERRORS":
        return read_errors()
    if name == "REFUSALS":
        return refusals()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def input_format(src: Path, fmt: str) -> str:
    """Return the format an input will be read in.

    Args:
        src: The input path.
        fmt: The format asked for; ``auto`` gives ``brat`` for a brat directory, else
            [`detect`][pipeline.cli.import_commands.detect]'s answer.

    Returns:
        The format.

    Raises:
        ValueError: If ``auto`` cannot tell the format.
    """
    if fmt == "auto":
        return "brat" if is_brat_dir(src) else detect(src)
    return fmt


def existing_path(value: str) -> Path:
    """Check an argument names an existing file or directory (an argparse ``type``).

    Args:
        value: The argument.

    Returns:
        It as a path.

    Raises:
        argparse.ArgumentTypeError: If nothing exists there.
    """
    path = Path(value)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{value}: no such file or directory")
    return path


def _refused(src: Path, message: str) -> int:
    # the readers' own messages mostly name the file already; a message always starts with the input
    print(f"pgx-corpus import: {message if message.startswith(str(src)) else f'{src}: {message}'}", file=sys.stderr)
    return int(ExitCode.REFUSED)


"""What refuses an input (exit 2): unreadable, malformed, hostile, beyond a limit, or too deep or big to read."""


def run_import(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus import``: read BioC, PubTator or Parquet and write a new brat collection.

    Each document is read, checked ([`pipeline.brat.intake`][pipeline.brat.intake]: structure, limits,
    names, fields, and its ``.ann`` validated against the schema's ``annotation.conf``) and written into
    ``.OUT.tmp-PID-RANDOM`` beside ``--out`` ([`temporary_name`][pipeline.durable.temporary_name]), one at a
    time (PubTator is streamed); with the schema's configuration files, that directory is renamed to
    ``--out`` once complete: the collection appears whole or not at all.  What an interrupted import left
    beside ``--out`` (that directory, or the ``.OUT.import-tmp`` of earlier versions) is removed first, and
    stderr says so.  A one-line summary goes to stdout.

    A PubTator entity line without the key column (six columns) is refused, since nothing links the
    fragments of a discontiguous entity there; with ``--no-key-column`` each such line is one entity, and
    stderr says how many lines were read so.

    Args:
        args: The parsed arguments (``input``, ``out``, ``format``, ``schema``, ``max_text_chars``,
            ``max_annotations``, ``max_input_mb``, ``no_key_column``).

    Returns:
        ``ExitCode.OK`` the collection written; ``ExitCode.REFUSED`` an unreadable, malformed or unknown
            input, a record refused (named on stderr with its file), a limit passed, a bad schema, or
            ``--out`` exists and is not an empty directory (nothing left written); ``ExitCode.ERROR`` an
            I/O error while writing (the temporary is removed).
    """
    src, out = Path(args.input), Path(args.out)
    limits = Limits(max_text=args.max_text_chars, max_annotations=args.max_annotations,
                    max_input=args.max_input_mb * 2**20)
    try:
        schema = load_schema(args.schema)
        if not src.exists():
            raise FileNotFoundError(f"{src}: no such file or directory")
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise FileExistsError(f"{out}: exists and is not an empty directory; nothing written")
        fmt = detect(src) if args.format == "auto" else args.format
        conf, _ = parse_annotation_conf(annotation_conf(schema), "annotation.conf")
    except refusals() as exc:
        return _refused(src, str(exc))
    tmp = durable.temporary_name(out)
    counts: Counter[str] = Counter()
    names = Names()
    documents = entities = relations = 0
    made = [p for p in reversed(tmp.parents) if not p.exists()]  # the parents this command creates
    try:
        # the import is the one writer of --out: what an interrupted import left beside it goes, live or not
        for left in durable.clean_leftovers(out.parent, out.name, owned=True):
            print(f"pgx-corpus import: removing {left}, left by an interrupted import", file=sys.stderr)
        tmp.mkdir(parents=True)
    except OSError as exc:
        print(f"pgx-corpus import: {exc}", file=sys.stderr)
        return int(ExitCode.ERROR)

    def clean() -> None:
        shutil.rmtree(tmp, ignore_errors=True)
        for parent in reversed(made):  # deepest first; only the ones this command made, if still empty
            with contextlib.suppress(OSError):
                parent.rmdir()

    items = iter_documents(src, fmt, schema, limits, counts, require_key=not args.no_key_column)
    while True:
        try:
            item = next(items, None)
            if item is None:
                break
            names.add(item)
            ann = check_document(item, conf, limits)
        except refusals() as exc:
            clean()
            message = _resource_message(exc) if isinstance(exc, RecursionError | MemoryError) else str(exc)
            return _refused(src, message)
        try:
            (tmp / f"{item.doc.name}.txt").write_text(item.doc.text, encoding="utf-8", newline="\n")
            (tmp / f"{item.doc.name}.ann").write_text(ann, encoding="utf-8", newline="\n")
        except OSError as exc:
            clean()
            print(f"pgx-corpus import: {exc}", file=sys.stderr)
            return int(ExitCode.ERROR)
        documents += 1
        entities += len(item.doc.textbounds)
        relations += len(item.doc.relations)
    try:
        write_conf_files(tmp, schema)
        if out.exists():
            out.rmdir()
        durable.rename(tmp, out)
    except OSError as exc:
        clean()
        print(f"pgx-corpus import: {exc}", file=sys.stderr)
        return int(ExitCode.ERROR)
    dropped = ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in SKIPPED if counts[k])
    print(f"import {src} ({fmt}) -> {out}: {documents} documents, {entities} entities, {relations} relations"
          + (f"; not imported: {dropped}" if dropped else ""))
    if counts["entity_lines_without_key"]:
        print(f"pgx-corpus import: {counts['entity_lines_without_key']} entity lines without a key column "
              "(--no-key-column), each imported as one entity: a discontiguous entity comes back as one entity "
              "per line (per fragment), not as one entity", file=sys.stderr)
    return int(ExitCode.OK)


SKIPPED = ("entities_unplaced", "relations_unplaced", "identifiers_unreadable", "events_not_imported",
           "coreferences_not_imported")
"""Counts of what an input held and the import could not place or has no brat form for (in the summary)."""


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: expected a positive whole number")
    return number


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``import`` subcommand to the ``pgx-corpus`` parser.

    Handler: [`run_import`][pipeline.cli.import_commands.run_import].

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "import", help="bring BioC, PubTator or Hugging Face Parquet (bigbio_kb, source) back into brat",
        description="Read INPUT (a BioC .xml/.json collection; a PubTator file with its key column and, beside "
        "it, its .sentences.tsv, a six-column PubTator file being refused unless --no-key-column is given; or a "
        "Parquet file or directory of the release's hf/ configs) and write the "
        "brat documents and configuration files to --out (which must not exist or be empty). What the format "
        "cannot hold (see the release's format table) is not there: notes in PubTator; modality, notes, "
        "attributes, events and coreferences in bigbio_kb. Every record is checked before anything is written "
        "(structure, limits, names, brat fields, validation against the schema): a refusal names the file and "
        "record, and leaves nothing.")
    p.add_argument("input", metavar="INPUT", help="file or directory to import")
    p.add_argument("--out", type=Path, required=True, metavar="BRAT_DIR", help="brat directory to create")
    p.add_argument("--format", choices=FORMATS, default="auto", help="input format (default: from the name)")
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="schema file (default config/schema.yaml)")
    p.add_argument("--no-key-column", action="store_true",
                   help="read a PubTator file without the key column (six columns, e.g. the release's "
                   ".bconv.pubtator): each entity line becomes one entity, so a discontiguous entity comes back "
                   "as one entity per fragment (stderr counts the lines); without this option such a file is "
                   "refused")
    defaults = Limits()
    p.add_argument("--max-text-chars", type=_positive, default=defaults.max_text, metavar="N",
                   help=f"refuse a document whose text (or an offset into it) passes N characters (default "
                   f"{defaults.max_text:,})")
    p.add_argument("--max-annotations", type=_positive, default=defaults.max_annotations, metavar="N",
                   help=f"refuse a document of more than N annotations (.ann lines; default "
                   f"{defaults.max_annotations:,})")
    p.add_argument("--max-input-mb", type=_positive, default=defaults.max_input // 2**20, metavar="MB",
                   help=f"refuse an input of more than MB mebibytes once decompressed (default "
                   f"{defaults.max_input // 2**20})")
    p.set_defaults(func=run_import)
