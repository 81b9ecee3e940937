"""Throughput and memory of the extension stage over the real GENIA abstracts.

Reads ../shared/data/genia/pubmed-xml (1,699 PubMed records) with
pipeline.sources.pubmed_xml.iter_documents, splits sentences with
pipeline.nlp.sentences.split_documents, puts key entities on them (the local
annotator when its lexicon is built, else a gene-symbol regular expression),
then times

* spaCy's own ``nlp.pipe`` over the sentence texts, and
* ``pipeline.nlp.extend.extend_documents`` (parsing + alignment + ontology search)

with the same model, components and batch size, and prints sentences/s and
their ratio (target: extension / nlp.pipe time <= 1.25).  Peak memory: child
processes stream 1/4, 1/2 and all of the input from disk through the stage and
report their peak RSS, which should stay flat as the input grows.

    python bench/extend_throughput.py [--model NAME] [--batch-size N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.documents import Annotation, Document  # noqa: E402
from pipeline.nlp.extend import extend_documents  # noqa: E402
from pipeline.nlp.ontology import load_ontology  # noqa: E402
from pipeline.nlp.sentences import split_documents  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser  # noqa: E402
from pipeline.sources.pubmed_xml import iter_documents  # noqa: E402

GENIA = PROJECT.parent / "shared" / "data" / "genia" / "pubmed-xml"
_GENE_RE = re.compile(r"\b[A-Z][A-Za-z]{0,5}[0-9][A-Z0-9]{0,4}\b")


def _regex_keys(text: str) -> list[Annotation]:
    return [Annotation(((m.start(), m.end()),), "Gene", "local", text=m.group()) for m in _GENE_RE.finditer(text)]


def key_annotator() -> tuple[Callable[[str], list[Annotation]], str]:
    """The local annotator when available, else a crude gene-symbol matcher (same for both timings)."""
    try:
        from pipeline.nlp.local_annotator import LocalAnnotator

        annotator = LocalAnnotator.load()
        return annotator.annotate, "local annotator"
    except Exception as exc:  # lexicon not built on this machine
        print(f"(local annotator unavailable: {type(exc).__name__}; using a gene-symbol regex for key entities)")
    return _regex_keys, "gene-symbol regex"


def documents(
    files: list[Path], annotate: Callable[[str], list[Annotation]], counts: Counter[str]
) -> Iterator[Document]:
    """Stream documents with sentences and key entities from the XML files."""

    def read() -> Iterator[Document]:
        for f in files:
            yield from iter_documents(f, counts)

    for doc in split_documents(read(), counts):
        yield doc.with_annotations(annotate(doc.text))


def memory_child(fraction: float, model: str, batch_size: int) -> None:
    files = sorted(GENIA.glob("*.xml"))
    files = files[: max(1, int(len(files) * fraction))]
    # Key entities from the gene-symbol regex: the peak then measures this stage, not the annotator's lexicon.

    counts: Counter[str] = Counter()
    nlp = load_parser(model)
    onto = load_ontology()
    n = 0
    for _doc in extend_documents(documents(files, _regex_keys, counts), onto, nlp, counts, batch_size=batch_size):
        n += 1
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"files": len(files), "documents": n, "sentences": counts["sentences_parsed"],
                      "peak_rss_mb": peak_kb / 1024}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1, help="timing repetitions (best is reported)")
    parser.add_argument("--memory-child", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args(argv)
    if not GENIA.is_dir():
        print(f"shared data not available: {GENIA} (put the shared/ folder beside the project)", file=sys.stderr)
        return 2
    if args.memory_child is not None:
        memory_child(args.memory_child, args.model, args.batch_size)
        return 0

    print(f"# extension throughput on {GENIA} (cpu cores: {os.cpu_count()}, model {args.model})")
    annotate, how = key_annotator()
    counts: Counter[str] = Counter()
    docs = list(documents(sorted(GENIA.glob("*.xml")), annotate, counts))
    texts = [d.text[s.start : s.end] for d in docs for s in d.sentences]
    n_keys = sum(len(d.annotations) for d in docs)
    print(f"{len(docs)} documents, {len(texts)} sentences, {n_keys} key entities ({how})")
    nlp = load_parser(args.model)
    onto = load_ontology()
    print(f"components: {nlp.pipe_names}, batch size {args.batch_size}")
    list(nlp.pipe(texts[:200], batch_size=args.batch_size))  # warm-up

    best_pipe = best_ext = float("inf")
    ext_counts: Counter[str] = Counter()
    for rep in range(args.repeat):
        # Alternate the order so neither side profits from running second (warm caches, CPU frequency).
        for which in (("pipe", "ext") if rep % 2 == 0 else ("ext", "pipe")):
            t0 = time.perf_counter()
            if which == "pipe":
                for _sdoc in nlp.pipe(texts, batch_size=args.batch_size):
                    pass
                best_pipe = min(best_pipe, time.perf_counter() - t0)
            else:
                ext_counts = Counter()
                for _doc in extend_documents(docs, onto, nlp, ext_counts, batch_size=args.batch_size):
                    pass
                best_ext = min(best_ext, time.perf_counter() - t0)
    n = ext_counts["sentences_parsed"]
    print(f"spaCy nlp.pipe:    {len(texts) / best_pipe:8.1f} sentences/s ({best_pipe:.2f} s)")
    print(f"extend_documents:  {n / best_ext:8.1f} sentences/s ({best_ext:.2f} s; "
          f"{ext_counts['composites']} composites, {ext_counts['skipped_too_long']} too long, "
          f"{ext_counts['misaligned']} misaligned keys)")
    ratio = best_ext / best_pipe
    print(f"time ratio extension / nlp.pipe: {ratio:.3f} (target <= 1.25: {'OK' if ratio <= 1.25 else 'NOT MET'})")

    if not args.skip_memory:
        print("\npeak RSS of a child process streaming part of the input through the stage (regex keys):")
        for fraction in (0.25, 0.5, 1.0):
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", str(fraction), "--model", args.model,
                 "--batch-size", str(args.batch_size)],
                capture_output=True, text=True, check=True,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"  {fraction:>4}: {result['files']:5d} files, {result['sentences']:6d} sentences, "
                  f"peak RSS {result['peak_rss_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
