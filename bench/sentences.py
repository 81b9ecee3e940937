"""Benchmark of pipeline.nlp.sentences on real data from ../shared.

Prints:

1. Sentence-boundary precision / recall / F1 against GENIA's gold splits
   (../shared/data/genia/sentences/<pmid>.txt, one sentence per line, title first)
   for the documents built from ../shared/data/genia/pubmed-xml.
2. How many of the 300 PGxCorpus sentences (../shared/data/pgxcorpus-dev/gold/*.txt),
   each given alone to ``split_text``, stay one sentence.
3. Throughput of ``split_documents`` (sentences/s, one core).

Boundary definition.  Both the document text and the gold sentences are
normalized by deleting every white-space character (GENIA's text differs from
PubMed's only in spacing, a few characters, and notes: "[see comments]",
"Copyright ...", "(ABSTRACT TRUNCATED ...)").  A boundary is the position, in
that normalized text, of a sentence end (number of non-space characters before
it).  The gold normalized text is aligned to the document's with difflib; a
boundary is *scored* only where the characters on both sides of it are aligned
and adjacent on both sides (positions inside notes that only one side has are
counted as unscorable and reported).  The end of the document and the end of
the title (both forced by construction) are excluded, so the figures measure
only the decisions the splitter makes; ``--all-ends`` includes them.
P = |pred & gold| / |pred|, R = |pred & gold| / |gold|, F1 = 2PR/(P+R), micro
averaged over all documents.

Usage: python bench/sentences.py [--errors N] [--limit N] [--all-ends] [--repeat N]
(``PGX_SHARED`` overrides the location of ../shared, as in the tests.)
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

from pipeline.documents import Document
from pipeline.nlp.sentences import split_documents, split_text
from pipeline.sources.pubmed_xml import iter_documents

PROJECT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
GENIA = SHARED / "data" / "genia"
PGX = SHARED / "data" / "pgxcorpus-dev" / "gold"
_WS = re.compile(r"\s+")


def load_documents(paths: list[Path]) -> tuple[list[Document], Counter[str]]:
    """Documents of the GENIA PubMed XML files, read with the pipeline's own parser."""
    counts: Counter[str] = Counter()
    docs: list[Document] = []
    for path in paths:
        docs.extend(iter_documents(path, counts))
    return docs, counts


def _nonspace_ends(text: str, spans: list[tuple[int, int]]) -> list[int]:
    """Sentence ends as counts of non-space characters before them."""
    prefix = [0]
    total = 0
    for char in text:
        total += not char.isspace()
        prefix.append(total)
    return [prefix[end] for _, end in spans]


def _aligned(doc_ns: str, gold_ns: str) -> tuple[dict[int, int], dict[int, int]]:
    """Character alignment of the normalized texts: gold -> document and document -> gold positions."""
    matcher = difflib.SequenceMatcher(None, doc_ns, gold_ns, autojunk=False)
    gold_to_doc: dict[int, int] = {}
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            gold_to_doc[b + k] = a + k
    # The texts' ends are aligned with each other, so a boundary at the very end can be scored.
    gold_to_doc[len(gold_ns)] = len(doc_ns)
    return gold_to_doc, {d: g for g, d in gold_to_doc.items()}


def _scorable(end: int, mapping: dict[int, int]) -> int | None:
    """Image of boundary ``end`` when the characters on both sides are aligned and adjacent, else None."""
    left, right = mapping.get(end - 1), mapping.get(end)
    if left is None or right is None or right != left + 1:
        return None
    return right


def score(docs: list[Document], gold_dir: Path, all_ends: bool, errors: int) -> tuple[dict[str, float], list[str]]:
    """Micro-averaged boundary P/R/F1 (see the module docstring) and the first ``errors`` errors."""
    tp = fp = fn = unscorable_gold = unscorable_pred = 0
    shown: list[str] = []
    for doc in docs:
        gold_path = gold_dir / f"{int(doc.pmid)}.txt"
        gold = [line.strip() for line in gold_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        spans = [(s.start, s.end) for s in doc.sentences]
        doc_ns = _WS.sub("", doc.text)
        gold_ns = "".join(_WS.sub("", line) for line in gold)
        pred_ends = _nonspace_ends(doc.text, spans)
        gold_ends: list[int] = []
        total = 0
        for line in gold:
            total += len(_WS.sub("", line))
            gold_ends.append(total)
        excluded = set() if all_ends else {len(doc_ns), _nonspace_ends(doc.text, [(0, len(doc.title))])[0]}
        if doc_ns == gold_ns:
            gold_set, pred_set = set(gold_ends), set(pred_ends)
        else:
            gold_to_doc, doc_to_gold = _aligned(doc_ns, gold_ns)
            gold_set, pred_set = set(), set()
            for end in gold_ends:
                image = _scorable(end, gold_to_doc)
                if image is None:
                    unscorable_gold += 1
                else:
                    gold_set.add(image)
            for end in pred_ends:
                if end in excluded or _scorable(end, doc_to_gold) is not None:
                    pred_set.add(end)
                else:
                    unscorable_pred += 1
        gold_set -= excluded
        pred_set -= excluded
        tp += len(gold_set & pred_set)
        fp += len(pred_set - gold_set)
        fn += len(gold_set - pred_set)
        if len(shown) < errors and gold_set != pred_set:
            positions = [i for i, char in enumerate(doc.text) if not char.isspace()]
            for kind, missing in (("FN (missed)", gold_set - pred_set), ("FP (spurious)", pred_set - gold_set)):
                for ns_end in sorted(missing)[: errors - len(shown)]:
                    at = positions[ns_end - 1] + 1
                    context = doc.text[max(0, at - 60) : at] + " || " + doc.text[at : at + 40]
                    shown.append(f"  {kind} PMID {doc.pmid}: ...{context.replace(chr(10), ' / ')}...")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall, "f1": f1,
        "unscorable_gold": unscorable_gold, "unscorable_pred": unscorable_pred,
    }, shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", type=int, default=0, help="list the first N boundary errors (GENIA) and "
                        "the PGx sentences that were split")
    parser.add_argument("--limit", type=int, default=0, help="only the first N GENIA documents")
    parser.add_argument("--all-ends", action="store_true", help="also score title ends and document ends")
    parser.add_argument("--repeat", type=int, default=3, help="timing repetitions (best is reported)")
    args = parser.parse_args(argv)
    if not (GENIA / "pubmed-xml").is_dir() or not (GENIA / "sentences").is_dir() or not PGX.is_dir():
        print(f"shared data not available under {SHARED} (put the shared/ folder beside the project)",
              file=sys.stderr)
        return 2

    paths = sorted((GENIA / "pubmed-xml").glob("*.xml"))
    if args.limit:
        paths = paths[: args.limit]
    docs, read_counts = load_documents(paths)
    counts: Counter[str] = Counter()
    split = list(split_documents(docs, counts))
    result, error_lines = score(split, GENIA / "sentences", args.all_ends, args.errors)
    print(f"GENIA: {len(split)} documents from {len(paths)} PubMed XML files (pipeline.sources.pubmed_xml: "
          f"{dict(sorted(read_counts.items()))}); {counts['sentences']} sentences ({counts['title_sentences']} in "
          f"titles)")
    print(f"  boundaries ({'all ends' if args.all_ends else 'internal, excluding title and document ends'}): "
          f"tp={result['tp']} fp={result['fp']} fn={result['fn']} "
          f"(unscorable: gold {result['unscorable_gold']}, predicted {result['unscorable_pred']})")
    print(f"  P={result['precision']:.4f} R={result['recall']:.4f} F1={result['f1']:.4f}")
    print("\n".join(error_lines) if error_lines else "", end="\n" if error_lines else "")

    pgx = sorted(PGX.glob("*.txt"))
    kept = 0
    broken: list[tuple[str, list[str]]] = []
    for path in pgx:
        text = path.read_text(encoding="utf-8")
        spans = split_text(text)
        if len(spans) == 1:
            kept += 1
        else:
            broken.append((path.name, [text[s:e] for s, e in spans]))
    print(f"PGxCorpus: {kept}/{len(pgx)} sentences kept as one sentence ({100 * kept / max(1, len(pgx)):.2f}%)")
    if args.errors:
        for name, parts in broken[: args.errors]:
            print(f"  split {name}: " + " || ".join(parts))
    # Extra check on pre-tokenized text: the same sentences joined by single spaces must come
    # back as the same sentences (internal boundaries, exact offsets).
    sentences = [path.read_text(encoding="utf-8").strip() for path in pgx]
    joined = " ".join(sentences)
    gold_ends = set()
    position = 0
    for sentence in sentences[:-1]:
        position += len(sentence)
        gold_ends.add(position)
        position += 1
    pred_ends = {end for _, end in split_text(joined)} - {len(joined)}
    hits = len(gold_ends & pred_ends)
    print(f"PGxCorpus joined by spaces (pre-tokenized text): {hits}/{len(gold_ends)} boundaries found, "
          f"{len(pred_ends - gold_ends)} spurious")

    best = float("inf")
    for _ in range(args.repeat):
        timing: Counter[str] = Counter()
        began = time.perf_counter()
        for _doc in split_documents(docs, timing):
            pass
        best = min(best, time.perf_counter() - began)
    n_chars = sum(len(d.text) for d in docs)
    print(f"Throughput: {timing['sentences'] / best:,.0f} sentences/s, {len(docs) / best:,.0f} documents/s, "
          f"{n_chars / best / 1e6:.2f} M chars/s (best of {args.repeat}, one core, split_documents only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
