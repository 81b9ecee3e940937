"""The relation step's own time with two scorers, on the same documents, in one process, interleaved.

``bench/scale.py`` measures the step inside a whole build (task-seconds at 3,000 records), which needs a
quiet machine.  This bench compares two scorer files on a loaded machine: the PubTator key entities of
PGxCorpus dev and more (../shared/data), extended (parses kept) and mapped once, then
``relate_documents`` with each scorer in turn, ``--repeat`` times alternately; it prints each scorer's
least and median CPU seconds (``time.process_time``, so other processes' load counts less) and the ratio.

    python bench/relation_step_time.py OLD.json NEW.json [--repeat 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.brat import standoff as brat  # noqa: E402
from pipeline.documents import Document, Sentence  # noqa: E402
from pipeline.nlp.extend import extend_documents  # noqa: E402
from pipeline.nlp.ontology import DEFAULT_ONTOLOGY, load_ontology  # noqa: E402
from pipeline.nlp.relations.documents import relate_documents  # noqa: E402
from pipeline.nlp.relations.rules import DEFAULT_RULES, RelationScorer, load_rules  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser  # noqa: E402
from pipeline.nlp.typemap import map_documents  # noqa: E402
from pipeline.schema import load_schema  # noqa: E402

SETS = ("pgxcorpus-dev", "pgxcorpus-more")


def main(argv: Sequence[str] | None = None) -> int:
    import json
    import os

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("scorers", nargs=2, type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    shared = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared")) / "data"
    schema = load_schema()
    base = load_rules(DEFAULT_RULES, schema, with_scorer=False)
    rules = [dataclasses.replace(base, scorer=RelationScorer.from_json(json.loads(p.read_text(encoding="utf-8")),
                                                                       str(p))) for p in args.scorers]
    keys = []
    for name in SETS:
        for txt in sorted((shared / name / "gold").glob("*.txt")):
            text = txt.read_text(encoding="utf-8")
            pt = shared / name / "pubtator" / f"{txt.stem}.ann"
            pdoc, _ = brat.parse_ann(txt.stem, text, pt.read_text(encoding="utf-8") if pt.exists() else "", str(pt))
            keys.append(Document(txt.stem, text, text, origin="brat", sentences=(Sentence(0, len(text)),),
                                 annotations=tuple(brat.to_annotations(pdoc, source="pubtator"))))
    counts: Counter[str] = Counter()
    ontology = load_ontology(DEFAULT_ONTOLOGY)
    docs = list(map_documents(extend_documents(keys, ontology, load_parser(DEFAULT_MODEL), counts, keep_parses=True),
                              schema, counts, ontology=ontology))
    times: list[list[float]] = [[], []]
    for _ in range(args.repeat):
        for i, r in enumerate(rules):
            t = time.process_time()
            related = list(relate_documents(docs, r, schema, Counter()))
            times[i].append(time.process_time() - t)
            assert len(related) == len(docs)
    for path, ts in zip(args.scorers, times, strict=True):
        print(f"{path}: least {min(ts):.3f} s, median {statistics.median(ts):.3f} s CPU over {len(docs)} documents "
              f"({', '.join(f'{t:.3f}' for t in ts)})")
    print(f"ratio (second / first), least: {min(times[1]) / min(times[0]):.3f}, median: "
          f"{statistics.median(times[1]) / statistics.median(times[0]):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
