"""What ``train`` and ``train-relations`` check before they train: the input's size and the output's path.

Training takes from seconds to minutes: a bad ``--out`` is refused first, not after, and so is a
document over one of the limits of [`pipeline.brat.limits`][pipeline.brat.limits] (each raised by its
option).  Both refusals exit 2 with nothing written.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pipeline.brat import limits as limits_mod


def positive_int(text: str) -> int:
    """Parse a limit option: a whole number of at least 1 (``_`` and ``,`` separators allowed).

    Args:
        text: The option's value.

    Returns:
        The number.

    Raises:
        argparse.ArgumentTypeError: If it is not one.
    """
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not at least 1")
    return value


def add_limit_options(p: argparse.ArgumentParser, *, entities: bool = False) -> None:
    """Add ``--max-text-chars`` and ``--max-annotations`` (and ``--max-entities``) to a training command.

    Args:
        p: The command's parser.
        entities: Add ``--max-entities`` too (``train-relations``, whose cost grows with their square).
    """
    p.add_argument("--max-text-chars", type=positive_int, default=limits_mod.DEFAULT_MAX_TEXT_CHARS, metavar="N",
                   help="refuse a document whose text is longer than N characters (default "
                   f"{limits_mod.DEFAULT_MAX_TEXT_CHARS:,}; a document is read as one sentence)")
    p.add_argument("--max-annotations", type=positive_int, default=limits_mod.DEFAULT_MAX_ANNOTATIONS, metavar="N",
                   help="refuse a document with more than N annotations, of any kind (default "
                   f"{limits_mod.DEFAULT_MAX_ANNOTATIONS:,})")
    if entities:
        p.add_argument("--max-entities", type=positive_int, default=limits_mod.DEFAULT_MAX_ENTITIES, metavar="N",
                       help="refuse a document with more than N entities (text-bound annotations; every ordered pair "
                       f"of them is scored) (default {limits_mod.DEFAULT_MAX_ENTITIES:,})")


def limits_of(args: argparse.Namespace) -> limits_mod.Limits:
    """The limits the options give.

    Args:
        args: The parsed arguments (``max_text_chars``, ``max_annotations``, ``max_entities`` if any).

    Returns:
        The limits.
    """
    return limits_mod.Limits(max_text_chars=args.max_text_chars, max_annotations=args.max_annotations,
                             max_entities=getattr(args, "max_entities", None))


def out_problem(out: Path, *, directory: bool) -> str | None:
    """Tell why an output path cannot be written, before any work is done.

    Args:
        out: The ``--out`` path.
        directory: The output is a directory (``train``'s model directory), else a file.

    Returns:
        ``None`` when it can be written (as far as can be told), else a message naming the path.
    """
    if out.exists() or out.is_symlink():
        if directory and not out.is_dir():
            return f"{out}: exists and is not a directory"
        if not directory and out.is_dir():
            return f"{out}: is a directory"
        if not directory and not out.is_file():
            return f"{out}: exists and is not a regular file"
    ancestor = out.parent
    while not ancestor.exists():
        if ancestor.is_symlink():
            return f"{ancestor}: a dangling symbolic link"
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor}: not a directory (the parent of {out})"
    for writable in (ancestor, out) if directory and out.is_dir() else (ancestor,):
        if not os.access(writable, os.W_OK | os.X_OK):
            return f"{writable}: not writable"
    return None


def preflight(command: str, dirs: list[Path], args: argparse.Namespace, *, directory: bool) -> str | None:
    """Check a training command's input and output before it trains.

    Args:
        command: The command's name, the start of the message (``train-relations``).
        dirs: The brat directories it reads.
        args: The parsed arguments (``out`` and the limit options of
            [`add_limit_options`][pipeline.cli.training_input.add_limit_options]).
        directory: The output is a directory (``train``'s model directory), else a file.

    Returns:
        ``None`` when training may start, else the refusal line to print (exit 2, nothing written): a
            missing directory, an ``--out`` that cannot be written, or a document over a limit.
    """
    for d in dirs:
        if not Path(d).is_dir():
            return f"pgx-corpus {command}: {d}: not a directory"
    problem = out_problem(args.out, directory=directory)
    if problem is not None:
        return f"pgx-corpus {command}: --out {problem}"
    try:
        limits_mod.check_collections(dirs, limits_of(args))
    except limits_mod.LimitError as exc:
        return f"pgx-corpus {command}: refused: {exc}"
    return None
