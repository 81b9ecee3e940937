"""Benchmark of the local annotator (not a test).

Scores ``LocalAnnotator`` on ../shared/data/pgxcorpus-dev (300 pre-tokenized
sentences, ``gold/*.txt``) against

* the PubTator pre-annotations (``pubtator/*.ann``; types Chemical, Disease,
  Gene, Mutation), and
* the final manual annotations (``gold/*.ann``; Chemical -> Chemical,
  Disease -> Disease, Gene_or_protein -> Gene, Limited_variation -> Mutation;
  other types ignored),

with exact span and type: P/R/F1 per type and micro-averaged.  Then prints the
throughput (sentences/s) on the GENIA abstracts (../shared/data/genia):
sentence by sentence on the gold sentence split, and whole documents (title +
abstract from ``pubmed-xml/``, counted in gold sentences).

Usage: ``python bench/preannotation.py [--lexicon FILE] [--errors TYPE] [--limit-genia N]``
(``--errors`` lists false positives/negatives vs PubTator for one type, or ``all``).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.nlp import learned, learned_data  # noqa: E402
from pipeline.nlp.folds import DEFAULT_K, DEFAULT_SEED, kfold_groups  # noqa: E402
from pipeline.nlp.local_annotator import LocalAnnotator  # noqa: E402

SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
DEV = SHARED / "data" / "pgxcorpus-dev"
GENIA = SHARED / "data" / "genia"
TYPES = ("Chemical", "Disease", "Gene", "Mutation")
GOLD_MAP = {"Chemical": "Chemical", "Disease": "Disease", "Gene_or_protein": "Gene", "Limited_variation": "Mutation"}

Item = tuple[str, int, int, str]  # (doc, start, end, type)


def read_ann(path: Path, type_map: dict[str, str]) -> set[Item]:
    """Contiguous text-bound annotations of a brat .ann file, types mapped (others skipped)."""
    items: set[Item] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("T"):
            continue
        _tid, spec, _text = line.split("\t", 2)
        type_, _, frags = spec.partition(" ")
        if type_ not in type_map:
            continue
        spans = [tuple(int(x) for x in f.split()) for f in frags.split(";")]
        if len(spans) == 1:
            items.add((path.stem, spans[0][0], spans[0][1], type_map[type_]))
        else:  # discontiguous: cannot be matched exactly by a contiguous prediction; kept as a miss
            items.add((path.stem, spans[0][0], -spans[-1][1], type_map[type_]))
    return items


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def score(pred: set[Item], ref: set[Item], title: str) -> float:
    print(f"\n{title}")
    print(f"{'type':10} {'P':>6} {'R':>6} {'F1':>6} {'tp':>5} {'fp':>5} {'fn':>5}")
    total = collections.Counter[str]()
    for t in TYPES:
        p_t = {x for x in pred if x[3] == t}
        r_t = {x for x in ref if x[3] == t}
        tp, fp, fn = len(p_t & r_t), len(p_t - r_t), len(r_t - p_t)
        total.update(tp=tp, fp=fp, fn=fn)
        p, r, f = prf(tp, fp, fn)
        print(f"{t:10} {p:6.3f} {r:6.3f} {f:6.3f} {tp:5d} {fp:5d} {fn:5d}")
    p, r, f = prf(total["tp"], total["fp"], total["fn"])
    print(f"{'micro':10} {p:6.3f} {r:6.3f} {f:6.3f} {total['tp']:5d} {total['fp']:5d} {total['fn']:5d}")
    return f


def error_kind(item: Item, others: set[Item]) -> str:
    """``type`` (same span, other type), ``boundary`` (overlaps one of the same type), ``overlap``
    (overlaps one of another type) or ``missing`` (nothing overlapping) among ``others``."""
    doc, s, e, t = item
    near = [o for o in others if o[0] == doc and o[1] < abs(e) and s < abs(o[2])]
    if any(o[1] == s and o[2] == e and o[3] != t for o in near):
        return "type"
    if any(o[3] == t for o in near):
        return "boundary"
    return "overlap" if near else "missing"


def micro_f1(pred: set[Item], ref: set[Item]) -> float:
    return prf(len(pred & ref), len(pred - ref), len(ref - pred))[2]


def kfold_report(
    texts: dict[str, str], local: dict[str, list[Any]], pred: set[Item], pubtator: set[Item], k: int, seed: int,
    learned_filter: bool = True,
) -> None:
    """Out-of-fold micro F1 vs PubTator: the local annotator alone and with a learned filter.

    The local annotator has no parameter fitted to this data (its lexicon comes
    from the pinned wheels), so its out-of-fold figure is its in-sample figure,
    printed per fold for the spread.  The learned candidate classifier
    (:mod:`pipeline.nlp.learned`, trained to reproduce PubTator's mentions from
    the local annotator's) is fitted on the k-1 training folds only.
    """
    from pipeline.documents import Annotation

    folds = kfold_groups(texts, k=k, seed=seed)
    print(f"\n{k}-fold out-of-fold vs PubTator (seed {seed}, grouped by PMID), micro F1")
    in_fold = [micro_f1({x for x in pred if x[0] in set(f)}, {x for x in pubtator if x[0] in set(f)}) for f in folds]
    print("  local annotator, per fold: " + " ".join(f"{x:.3f}" for x in in_fold)
          + f"; pooled (= in-sample, nothing fitted) {micro_f1(pred, pubtator):.3f}")
    if not learned_filter:
        return
    examples = [
        learned.Example(name, text, tuple(Annotation(((s, e),), t, "pubtator") for d, s, e, t in pubtator
                                          if d == name and e > 0), tuple(local[name]))
        for name, text in texts.items()
    ]
    full = learned.train(examples)
    in_sample = {(n, *a.fragments[0], a.type) for ex in examples
                 for a in learned.predict(full, ex.text, list(ex.rules)) for n in (ex.name,)}
    oof = learned_data.out_of_fold(examples, k=k, seed=seed)
    oof_items = {(n, *a.fragments[0], a.type) for n, anns in oof.items() for a in anns}
    print(f"  local + learned filter: in-sample {micro_f1(in_sample, pubtator):.3f}, "
          f"out-of-fold {micro_f1(oof_items, pubtator):.3f}")


def genia_throughput(annotator: LocalAnnotator, limit: int | None) -> None:
    sent_dir, xml_dir = GENIA / "sentences", GENIA / "pubmed-xml"
    if not sent_dir.is_dir():
        print(f"\nGENIA data not found under {GENIA}: throughput skipped")
        return
    files = sorted(sent_dir.glob("*.txt"))[:limit]
    sentences = [s for f in files for s in f.read_text(encoding="utf-8").splitlines() if s.strip()]
    started = time.perf_counter()
    mentions = sum(len(annotator.annotate(s)) for s in sentences)
    elapsed = time.perf_counter() - started
    print(f"\nthroughput on GENIA ({len(files)} abstracts, {len(sentences)} gold sentences)")
    print(f"  sentence by sentence: {len(sentences) / elapsed:,.0f} sentences/s ({mentions} mentions, {elapsed:.2f}s)")
    try:
        from pipeline.sources.pubmed_xml import iter_documents
    except ImportError:
        return
    texts: list[str] = []
    counts: collections.Counter[str] = collections.Counter()
    for f in files:
        xml = xml_dir / f"{int(f.stem):08d}.xml"
        if xml.is_file():
            texts.extend(doc.text for doc in iter_documents(xml, counts))
    started = time.perf_counter()
    mentions = sum(len(annotator.annotate(t)) for t in texts)
    elapsed = time.perf_counter() - started
    print(
        f"  whole documents: {len(texts) / elapsed:,.1f} abstracts/s = "
        f"{len(sentences) / elapsed:,.0f} sentences/s ({mentions} mentions, {elapsed:.2f}s)"
    )


def stage_throughput(annotator: LocalAnnotator, limit: int | None) -> None:
    """Sentences/s of the whole pre-annotation stage (``preannotate``) per offline annotator.

    ``local`` runs the dictionary annotator; ``pubtator-file`` reads a PubTator
    file (written here from the local annotator's mentions, with PubTator's
    "title abstract" text) and re-aligns and projects its annotations.  The
    ``pubtator-api`` annotator is bound by the service's rate limit (3 requests/s
    of 100 PMIDs), printed as a ceiling.
    """
    import tempfile

    from pipeline.nlp.preannotate import PreannotationConfig, preannotate
    from pipeline.nlp.sentences import split_documents
    from pipeline.sources.pubmed_xml import iter_documents

    files = sorted((GENIA / "pubmed-xml").glob("*.xml"))[:limit]
    counts: collections.Counter[str] = collections.Counter()
    docs = list(split_documents((d for f in files for d in iter_documents(f, counts)), counts))
    n_sent = sum(len(d.sentences) for d in docs)
    print(f"\npre-annotation stage on GENIA ({len(docs)} abstracts, {n_sent} sentences, split by the sentence stage)")
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "genia.pubtator"
        with open(dump, "w", encoding="utf-8") as fh:
            for d in docs:
                fh.write(f"{d.pmid}|t|{d.title}\n{d.pmid}|a|{d.abstract}\n")
                for a in annotator.annotate(d.text):
                    fh.write(f"{d.pmid}\t{a.start}\t{a.end}\t{d.text[a.start:a.end]}\t{a.type}\t{a.identifier or ''}\n")
                fh.write("\n")
        for name, config in (
            ("local", PreannotationConfig(annotator="local")),
            ("pubtator-file", PreannotationConfig(annotator="pubtator-file", pubtator_files=(dump,),
                                                  fallback_local=False)),
        ):
            stage_counts: collections.Counter[str] = collections.Counter()
            started = time.perf_counter()
            out = list(preannotate(docs, config, stage_counts, local_annotator=annotator))
            elapsed = time.perf_counter() - started
            kept = sum(len(d.annotations) for d in out)
            print(f"  {name:13}: {n_sent / elapsed:,.0f} sentences/s ({kept} annotations, {elapsed:.2f}s)")
    print("  pubtator-api : at most 3 requests/s x 100 PMIDs = 300 abstracts/s "
          f"(~{300 * n_sent / max(len(docs), 1):,.0f} sentences/s), before network time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexicon", type=Path, default=None)
    parser.add_argument("--errors", default=None, help="print FP/FN vs PubTator for this type (or 'all')")
    parser.add_argument("--limit-genia", type=int, default=None, help="only the first N GENIA abstracts")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--no-learned", action="store_true", help="skip the learned filter (k-fold training)")
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="folds of the out-of-fold figures")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="fold seed")
    args = parser.parse_args()
    if not DEV.is_dir():
        print(f"shared data not found: {DEV} (put the shared/ folder beside the project)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    annotator = LocalAnnotator.load(args.lexicon)
    print(f"lexicon loaded in {time.perf_counter() - started:.1f}s")

    pred: set[Item] = set()
    pubtator: set[Item] = set()
    gold: set[Item] = set()
    texts: dict[str, str] = {}
    local: dict[str, list[Any]] = {}
    for txt in sorted((DEV / "gold").glob("*.txt")):
        text = txt.read_text(encoding="utf-8")
        texts[txt.stem] = text
        local[txt.stem] = annotator.annotate(text)
        for a in local[txt.stem]:
            pred.add((txt.stem, a.start, a.end, a.type))
        pubtator |= read_ann(DEV / "pubtator" / f"{txt.stem}.ann", {t: t for t in TYPES})
        gold |= read_ann(txt.with_suffix(".ann"), GOLD_MAP)
    print(f"{len(texts)} sentences")
    score(pred, pubtator, "vs PubTator (exact span + type)")
    score(pred, gold, "vs gold final annotations (exact span + mapped type)")
    kfold_report(texts, local, pred, pubtator, args.k, args.seed, learned_filter=not args.no_learned)

    kinds: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for label, items, others in (("FP", pred - pubtator, pubtator), ("FN", pubtator - pred, pred)):
        for it in items:
            kinds[(label, it[3], error_kind(it, others))] += 1
    confirmed = collections.Counter(x[3] for x in pred - pubtator if x in gold)
    missed = collections.Counter(x[3] for x in pubtator - pred if x in gold)
    print(f"\nfalse positives vs PubTator that the gold has (same span, mapped type): {sum(confirmed.values())} of "
          f"{len(pred - pubtator)} ({dict(sorted(confirmed.items()))}); false negatives the gold has too: "
          f"{sum(missed.values())} of {len(pubtator - pred)} ({dict(sorted(missed.items()))})")
    # PubTator annotated whole abstracts and resolves a short form from its definition anywhere in the
    # abstract; the dev subset holds single sentences, so a short form defined elsewhere cannot be found here.
    undefined = [
        (doc, s, e, t) for doc, s, e, t in pubtator - pred
        if error_kind((doc, s, e, t), pred) == "missing" and re.fullmatch(r"[A-Z][A-Za-z0-9-]{0,5}", texts[doc][s:e])
        and sum(c.isupper() for c in texts[doc][s:e]) >= 2
        and not re.search(r"\(\s*" + re.escape(texts[doc][s:e]) + r"\s*\)", texts[doc])
    ]
    tp, fp, fn = len(pred & pubtator), len(pred - pubtator), len(pubtator - pred)
    found_f1 = prf(tp + len(undefined), fp, fn - len(undefined))[2]
    print(f"missed short forms (2+ capitals, at most 6 characters) not defined in their sentence: {len(undefined)} of "
          f"{fn} false negatives ({dict(sorted(collections.Counter(x[3] for x in undefined).items()))}); micro F1 "
          f"if they were found: {found_f1:.3f} (now {prf(tp, fp, fn)[2]:.3f})")
    print("\nerrors vs PubTator by type and kind (boundary: overlaps one of the same type; type: same span,"
          " other type; overlap: overlaps one of another type; missing: nothing overlapping)")
    for t in TYPES:
        print(f"  {t:9} " + "  ".join(f"{lab} {k} {kinds[(lab, t, k)]}" for lab in ("FP", "FN")
                                      for k in ("boundary", "type", "overlap", "missing")))
    if args.errors:
        wanted = TYPES if args.errors == "all" else (args.errors,)
        for label, listed in (("FP", sorted(pred - pubtator)), ("FN", sorted(pubtator - pred))):
            print(f"\n{label} vs PubTator")
            for doc, s, e, t in listed:
                if t in wanted:
                    kind = error_kind((doc, s, e, t), pubtator if label == "FP" else pred)
                    print(f"  {t:9} {kind:8} {texts[doc][s:e]!r:40} {doc}  ...{texts[doc][max(0, s - 30):e + 30]!r}")
    if not args.no_throughput:
        genia_throughput(annotator, args.limit_genia)
        stage_throughput(annotator, args.limit_genia)
    return 0


if __name__ == "__main__":
    sys.exit(main())
