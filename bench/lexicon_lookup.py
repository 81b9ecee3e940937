"""Lexicon lookup: the local annotator's longest match over real text, now and as it was, side by side.

Times ``LocalAnnotator._lexicon_matches`` over the titles and abstracts of the 1,699 GENIA records
(``../shared/data/genia/pubmed-xml``) against the former loop (every table at every token, every key
length up to the first token's bound: ``tests/nlp/lexicon_matches_reference.py``, on the same tables
without their ``lengths``), alternating the two over ``--repeat`` rounds in one process, checks that
they find the same matches, and prints each round's seconds, the ratio and the load average.

    python bench/lexicon_lookup.py [--lexicon PATH] [--repeat 3]

A sidecar written before the ``lengths`` sections existed gets them computed here, from its keys.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.nlp import lexicon_lookup as lk  # noqa: E402
from pipeline.nlp.lexicon import DEFAULT_LEXICON  # noqa: E402
from pipeline.nlp.local_annotator import LocalAnnotator  # noqa: E402
from tests.nlp.lexicon_matches_reference import lexicon_matches, pair_lengths, pubmed_texts  # noqa: E402

GENIA = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared")) / "data" / "genia" / "pubmed-xml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexicon", type=Path, default=DEFAULT_LEXICON)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not GENIA.is_dir():
        sys.exit(f"GENIA records not found: {GENIA} (put the shared/ folder beside the project)")
    lookup = lk.load_lookup(args.lexicon)
    if lookup is None:
        sys.exit(f"{args.lexicon}: no lookup sidecar (run `pgx-corpus lexicon build`)")
    if not lookup.folded.lengths:  # an older sidecar: the lengths from its keys
        tables = {name: dataclasses.replace(getattr(lookup, name), lengths=pair_lengths(getattr(lookup, name)))
                  for name in lk.TABLES}
        lookup = lk.Lookup(**tables, gene_folded=lookup.gene_folded)
    texts = pubmed_texts(sorted(GENIA.glob("*.xml")))
    new = LocalAnnotator(lookup=lookup)
    former = {name: dataclasses.replace(getattr(lookup, name), lengths={}) for name in lk.TABLES}
    old = LocalAnnotator(lookup=lk.Lookup(**former, gene_folded=lookup.gene_folded))
    old.stop = dataclasses.replace(old.stop, lengths={})
    print(f"{len(texts):,} GENIA titles and abstracts; load average {os.getloadavg()[0]:.2f} at start")
    for round_ in range(1, args.repeat + 1):
        began = time.monotonic()
        before = [lexicon_matches(old, text) for text in texts]
        former_s = time.monotonic() - began
        began = time.monotonic()
        now = [new._lexicon_matches(text) for text in texts]
        now_s = time.monotonic() - began
        print(f"round {round_}: former {former_s:.2f} s, now {now_s:.2f} s, former/now {former_s / now_s:.2f}; "
              f"same matches: {before == now} ({sum(map(len, now)):,}); load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
