"""``pgx-corpus import``: BioC, PubTator (with the key column) and Hugging Face Parquet back into brat.

Thin handler over [`read_back`][pipeline.brat.formats.read_back] (the readers of
[`pipeline.brat.export`][pipeline.brat.export], [`pipeline.brat.pubtator`][pipeline.brat.pubtator] and
[`pipeline.brat.bigbio`][pipeline.brat.bigbio]).  The output directory must not exist or be empty (a
refused command writes nothing); it gets the documents and the configuration files of the schema.
What a format cannot hold comes back absent, as the release's format table declares.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.brat.conf import write_conf_files
from pipeline.brat.formats import read_back, read_parquet_docs
from pipeline.brat.standoff import BratDocument, write_document
from pipeline.cli.exitcodes import ExitCode
from pipeline.schema import DEFAULT_SCHEMA, Schema, SchemaError, load_schema

FORMATS = ("auto", "bioc", "pubtator", "bigbio_kb", "source")
"""The input formats ``import --format`` accepts (``auto``: from the name)."""


def detect(path: Path) -> str:
    """Tell the format of an input from its name (and, for Parquet, its columns).

    Args:
        path: A file, or a directory of ``.parquet`` files.

    Returns:
        ``bioc`` (``.xml``/``.json``), ``pubtator`` (``.pubtator``/``.txt``), or for Parquet
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
    elif path.suffix in (".pubtator", ".txt"):
        return "pubtator"
    elif path.suffix == ".parquet":
        probe = path
    else:
        raise ValueError(f"{path}: cannot tell the format from the name (BioC .xml/.json, PubTator "
                         ".pubtator/.txt, Parquet); give the format")
    names = set(pq.read_schema(probe).names)
    return "bigbio_kb" if "passages" in names else "source"


def read_input(src: Path, fmt: str, schema: Schema) -> list[BratDocument]:
    """Read an input file or directory as brat documents.

    Args:
        src: The input.
        fmt: One of [`FORMATS`][pipeline.cli.import_commands.FORMATS] (``auto``:
            [`detect`][pipeline.cli.import_commands.detect]).
        schema: The schema the readers map types with.

    Returns:
        The brat documents (offsets into each document's ``.txt`` text).

    Raises:
        OSError: If the input cannot be read; see
            [`READ_ERRORS`][pipeline.cli.import_commands.READ_ERRORS] for every error of an unreadable input.
        ValueError: If the input is malformed or its format unknown.
    """
    fmt = detect(src) if fmt == "auto" else fmt
    if fmt in ("bigbio_kb", "source") and src.is_file():
        return read_parquet_docs([src], fmt)  # one split file
    return read_back(fmt, src, schema, [])


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


READ_ERRORS = (OSError, ValueError, KeyError, SyntaxError, pa.ArrowException)
"""What reading an unreadable input raises (lxml's ``XMLSyntaxError`` is a ``SyntaxError``)."""


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


def run_import(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus import``: read BioC, PubTator or Parquet and write a new brat collection.

    The documents and the schema's configuration files are written into ``.OUT.import-tmp`` beside
    ``--out``, which is renamed to ``--out`` once complete: the collection appears whole or not at all.
    A one-line summary goes to stdout.

    Args:
        args: The parsed arguments (``input``, ``out``, ``format``, ``schema``).

    Returns:
        ``ExitCode.OK`` the collection written; ``ExitCode.REFUSED`` an unreadable or unknown input, a
            bad schema, or ``--out`` exists and is not an empty directory (nothing written);
            ``ExitCode.ERROR`` an I/O error while writing (the temporary is removed).
    """
    src, out = Path(args.input), Path(args.out)
    try:
        schema = load_schema(args.schema)
        if not src.exists():
            raise FileNotFoundError(f"{src}: no such file or directory")
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise FileExistsError(f"{out}: exists and is not an empty directory; nothing written")
        fmt = detect(src) if args.format == "auto" else args.format
        docs = read_input(src, fmt, schema)
    except (*READ_ERRORS, SchemaError) as exc:
        # unreadable input: refused, nothing written
        message = str(exc)  # the readers' own messages mostly name the file already
        print(f"pgx-corpus import: {message if message.startswith(str(src)) else f'{src}: {message}'}",
              file=sys.stderr)
        return int(ExitCode.REFUSED)
    tmp = out.with_name(f".{out.name}.import-tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        for doc in docs:
            write_document(tmp, doc)
        write_conf_files(tmp, schema)
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"pgx-corpus import: {exc}", file=sys.stderr)
        return int(ExitCode.ERROR)
    entities = sum(len(d.textbounds) for d in docs)
    relations = sum(len(d.relations) for d in docs)
    print(f"import {src} ({fmt}) -> {out}: {len(docs)} documents, {entities} entities, {relations} relations")
    return int(ExitCode.OK)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``import`` subcommand to the ``pgx-corpus`` parser.

    Handler: [`run_import`][pipeline.cli.import_commands.run_import].

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "import", help="bring BioC, PubTator or Hugging Face Parquet (bigbio_kb, source) back into brat",
        description="Read INPUT (a BioC .xml/.json collection, a PubTator file with its key column and, beside "
        "it, its .sentences.tsv, or a Parquet file or directory of the release's hf/ configs) and write the "
        "brat documents and configuration files to --out (which must not exist or be empty). What the format "
        "cannot hold (see the release's format table) is not there: notes in PubTator; modality, notes, "
        "attributes, events and coreferences in bigbio_kb.")
    p.add_argument("input", metavar="INPUT", help="file or directory to import")
    p.add_argument("--out", type=Path, required=True, metavar="BRAT_DIR", help="brat directory to create")
    p.add_argument("--format", choices=FORMATS, default="auto", help="input format (default: from the name)")
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="schema file (default config/schema.yaml)")
    p.set_defaults(func=run_import)
