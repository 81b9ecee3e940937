"""``pgx-corpus import``: BioC, PubTator (with the key column) and Hugging Face Parquet back into brat.

Thin handler over :func:`pipeline.brat.formats.read_back` (the readers of :mod:`pipeline.brat.export`,
:mod:`pipeline.brat.pubtator` and :mod:`pipeline.brat.bigbio`).  The output directory must not exist or be
empty (a refused command writes nothing); it gets the documents and the configuration files of the schema.
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


def detect(path: Path) -> str:
    """The format of ``path`` from its name (and, for Parquet, its columns); ValueError when unknown."""
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
    """The brat documents of ``src`` in ``fmt`` (``auto``: :func:`detect`); OSError/ValueError on bad input."""
    fmt = detect(src) if fmt == "auto" else fmt
    if fmt in ("bigbio_kb", "source") and src.is_file():
        return read_parquet_docs([src], fmt)  # one split file
    return read_back(fmt, src, schema, [])


def is_brat_dir(path: Path) -> bool:
    return path.is_dir() and any(path.rglob("*.ann"))


@contextlib.contextmanager
def as_brat_dir(src: Path, docs: Sequence[BratDocument] | None) -> Iterator[Path]:
    """``src`` itself when ``docs`` is None (a brat directory), else a scratch brat directory of ``docs``,
    removed afterwards."""
    if docs is None:
        yield src
        return
    with tempfile.TemporaryDirectory(prefix="pgx-import-") as scratch:
        for doc in docs:
            write_document(scratch, doc)
        yield Path(scratch)


#: what reading an unreadable input raises (lxml's XMLSyntaxError is a SyntaxError)
READ_ERRORS = (OSError, ValueError, KeyError, SyntaxError, pa.ArrowException)


def input_format(src: Path, fmt: str) -> str:
    """The format ``src`` will be read in (``brat`` for a brat directory under ``auto``); ValueError when unknown."""
    if fmt == "auto":
        return "brat" if is_brat_dir(src) else detect(src)
    return fmt


def existing_path(value: str) -> Path:
    """argparse type: an existing file or directory."""
    path = Path(value)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{value}: no such file or directory")
    return path


def run_import(args: argparse.Namespace) -> int:
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
    """Add ``import``."""
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
