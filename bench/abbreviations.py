"""Benchmark (not a test): scispaCy's Schwartz-Hearst abbreviation detector vs the built-in rule.

Runs the local annotator twice, once per detector of
:mod:`pipeline.nlp.abbreviations` (``LocalAnnotator.abbreviations``), and prints

1. on ../shared/data/pgxcorpus-dev (300 pre-tokenized sentences): exact span +
   type P/R/F1 (micro over Chemical, Disease, Gene, Mutation) against the PubTator
   pre-annotations and against the gold annotations (mapped as in
   bench/preannotation.py), the definitions each detector gave the annotator,
   and the mentions that differ;
2. on the NCBI disease corpus (../shared/data/ncbi-disease, develop + test sets,
   200 abstracts): exact span P/R/F1 of the annotator's Disease mentions
   against the corpus' disease mentions (all four classes);
3. on the GENIA abstracts (../shared/data/genia/pubmed-xml, title + abstract):
   the Schwartz-Hearst definitions scispaCy finds in the raw text, the
   definitions each detector gives the annotator (long form = a tagged
   entity), how many both find, the mentions that differ, examples, and
   abstracts/s.

Nothing is tuned on these data: the detectors run as they are, so the dev
figures are not fitted to the dev set.

Usage: ``python bench/abbreviations.py [--lexicon FILE] [--limit-genia N] [--examples N]``
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.brat.standoff import parse_ann, to_annotations  # noqa: E402
from pipeline.nlp import abbreviations as abbr  # noqa: E402
from pipeline.nlp.local_annotator import LocalAnnotator  # noqa: E402

SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))  # as in the tests
DEV = SHARED / "data" / "pgxcorpus-dev"
GENIA = SHARED / "data" / "genia"
TYPES = {"Chemical", "Disease", "Gene", "Mutation"}
GOLD_MAP = {"Chemical": "Chemical", "Disease": "Disease", "Gene_or_protein": "Gene", "Limited_variation": "Mutation"}

Item = tuple[str, int, int, str]  # (document, start, end, type)
Pair = tuple[str, str, str]  # (document, short form, long form)


def read_ann(name: str, text: str, path: Path, type_map: dict[str, str]) -> set[Item]:
    """Text-bound annotations of a brat file with a mapped type (discontiguous ones kept as unmatched misses)."""
    doc, _issues = parse_ann(name, text, path.read_text(encoding="utf-8"), str(path))
    items: set[Item] = set()
    for ann in to_annotations(doc):
        if ann.type in type_map:
            end = ann.fragments[0][1] if len(ann.fragments) == 1 else -ann.fragments[-1][1]
            items.add((name, ann.fragments[0][0], end, type_map[ann.type]))
    return items


def prf(pred: set[Item], ref: set[Item]) -> str:
    tp, fp, fn = len(pred & ref), len(pred - ref), len(ref - pred)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return f"P {p:.4f} R {r:.4f} F1 {f:.4f} (tp {tp}, fp {fp}, fn {fn})"


class Recorder:
    """Wraps :func:`abbr.entity_definitions` to record the definitions the annotator receives."""

    def __init__(self) -> None:
        self.pairs: set[Pair] = set()
        self.document = ""
        self._inner: Callable[..., list[abbr.Abbreviation]] = abbr.entity_definitions

    def __call__(self, text: str, entities: Sequence[abbr.Span], method: str = abbr.DEFAULT_METHOD) -> list:
        found = self._inner(text, entities, method)
        for a in found:
            short, long = a.texts(text)
            self.pairs.add((self.document, short, long))
        return found


def annotate_all(
    annotator: LocalAnnotator | DiseaseOnly, method: str, texts: dict[str, str]
) -> tuple[set[Item], set[Pair], float]:
    """Mentions, definitions given to the annotator, and seconds, for one detector."""
    annotator.abbreviations = method
    recorder = Recorder()
    abbr.entity_definitions = recorder  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        items: set[Item] = set()
        for name, text in texts.items():
            recorder.document = name
            items |= {(name, a.start, a.end, a.type) for a in annotator.annotate(text)}
        elapsed = time.perf_counter() - started
    finally:
        abbr.entity_definitions = recorder._inner  # type: ignore[assignment]
    return items, recorder.pairs, elapsed


def compare(
    label: str,
    annotator: LocalAnnotator | DiseaseOnly,
    texts: dict[str, str],
    refs: dict[str, set[Item]],
    examples: int,
) -> None:
    results = {m: annotate_all(annotator, m, texts) for m in abbr.METHODS}
    print(f"\n== {label}: {len(texts)} texts ==")
    print(f"{'detector':9} {'definitions':>11} {'mentions':>8} {'texts/s':>8}  " + "  ".join(refs))
    for method, (items, pairs, elapsed) in results.items():
        scores = "  |  ".join(f"vs {name}: {prf(items, ref)}" for name, ref in refs.items())
        print(f"{method:9} {len(pairs):11d} {len(items):8d} {len(texts) / elapsed:8.1f}  {scores}")
    b_items, b_pairs, _ = results["builtin"]
    for method in abbr.METHODS:
        if method == "builtin":
            continue
        s_items, s_pairs, _ = results[method]
        print(f"{method} vs builtin: definitions found by both {len(s_pairs & b_pairs)}, {method} only "
              f"{len(s_pairs - b_pairs)}, builtin only {len(b_pairs - s_pairs)}; mentions {method} only "
              f"{len(s_items - b_items)}, builtin only {len(b_items - s_items)}")
        for name, ref in refs.items():
            gained = len((s_items - b_items) & ref) - len((b_items - s_items) & ref)
            print(f"  of the differing mentions, net correct for {method} vs {name}: {gained:+d}")
        for title, pairs in ((f"{method} only", s_pairs - b_pairs), ("builtin only", b_pairs - s_pairs)):
            if pairs and examples:
                print(f"  {title} (first {min(examples, len(pairs))}):")
                for doc, short, long in sorted(pairs)[:examples]:
                    print(f"    {doc}: {short!r} <- {long!r}")


def raw_scispacy(texts: dict[str, str]) -> None:
    """Schwartz-Hearst definitions in the raw texts, entity or not (what the detector itself finds)."""
    started = time.perf_counter()
    total = sum(len(abbr.find_abbreviations(t)) for t in texts.values())
    elapsed = time.perf_counter() - started
    print(f"scispaCy AbbreviationDetector alone: {total} definitions in {len(texts)} texts "
          f"({len(texts) / elapsed:,.0f} texts/s)")


def read_ncbi_disease(folder: Path) -> tuple[dict[str, str], set[Item]]:
    """Texts (PubTator "title abstract" joined as documents) and disease mentions of the develop and test sets."""
    from pipeline.sources.pubtator_format import read_pubtator, to_document

    texts: dict[str, str] = {}
    ref: set[Item] = set()
    for name in ("NCBIdevelopset_corpus.txt", "NCBItestset_corpus.txt"):
        for record in read_pubtator(folder / name):
            doc = to_document(record)
            texts[doc.pmid] = doc.text
            ref |= {(doc.pmid, a.start, a.end, "Disease") for a in doc.annotations}
    return texts, ref


class DiseaseOnly:
    """The annotator restricted to Disease mentions (the NCBI disease corpus annotates nothing else)."""

    def __init__(self, annotator: LocalAnnotator) -> None:
        self.annotator = annotator

    @property
    def abbreviations(self) -> str:
        return self.annotator.abbreviations

    @abbreviations.setter
    def abbreviations(self, method: str) -> None:
        self.annotator.abbreviations = method

    def annotate(self, text: str) -> list:
        return [a for a in self.annotator.annotate(text) if a.type == "Disease"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexicon", type=Path, default=None)
    parser.add_argument("--limit-genia", type=int, default=None, help="only the first N GENIA abstracts")
    parser.add_argument("--examples", type=int, default=10, help="differing definitions to print per side")
    args = parser.parse_args()
    if not DEV.is_dir():
        print(f"shared data not found: {DEV} (put shared/ beside the project or set PGX_SHARED)", file=sys.stderr)
        return 2
    annotator = LocalAnnotator.load(args.lexicon)
    abbr.detector_pipeline()  # load outside the timings

    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted((DEV / "gold").glob("*.txt"))}
    pubtator: set[Item] = set()
    gold: set[Item] = set()
    for name in texts:
        pubtator |= read_ann(name, texts[name], DEV / "pubtator" / f"{name}.ann", {t: t for t in TYPES})
        gold |= read_ann(name, texts[name], DEV / "gold" / f"{name}.ann", GOLD_MAP)
    raw_scispacy(texts)
    compare("pgxcorpus-dev sentences", annotator, texts, {"PubTator": pubtator, "gold": gold}, args.examples)

    ncbi = SHARED / "data" / "ncbi-disease"
    if ncbi.is_dir():
        ncbi_texts, ncbi_ref = read_ncbi_disease(ncbi)
        compare("NCBI disease corpus, develop + test (Disease mentions only)", DiseaseOnly(annotator), ncbi_texts,
                {"NCBI disease": ncbi_ref}, args.examples)
    else:
        print(f"\nNCBI disease corpus not found under {ncbi}: skipped")

    xml_dir = GENIA / "pubmed-xml"
    if not xml_dir.is_dir():
        print(f"\nGENIA data not found under {GENIA}: skipped")
        return 0
    from pipeline.sources.pubmed_xml import iter_documents

    counts: collections.Counter[str] = collections.Counter()
    files = sorted(xml_dir.glob("*.xml"))[: args.limit_genia]
    genia = {doc.pmid: doc.text for f in files for doc in iter_documents(f, counts)}
    raw_scispacy(genia)
    compare("GENIA abstracts (title + abstract)", annotator, genia, {}, args.examples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
