"""The offline annotator against PubTator-style annotations OTHER than the dev subset (not a test).

Development data for the local annotator's rules, so that they are not fitted to the
300 dev sentences (whose PMIDs none of these files contain):

* ``greenelab``: ``../shared/fixtures/real/pubtator_legacy/greenelab_bioconcepts2pubtator_offsets_sample.txt``,
  132 abstracts with legacy PubTator (bioconcepts2pubtator) mentions: Chemical, Disease, Gene and
  Mutation (DNAMutation, ProteinMutation, SNP); Species and CellLine ignored;
* ``ncbi-train``, ``ncbi-develop``, ``ncbi-test``: the NCBI disease corpus (Disease only; the corpus
  PubTator's disease tagger learned from).  The test set is a held-out check, never used for tuning.

Scores exact span and type on whole documents (title + " " + abstract, PubTator offsets), per type
and micro-averaged.  ``--errors TYPE`` lists false positives/negatives of one type (or ``all``).

``--ncbi-gazetteer``: an experiment with a disease gazetteer learned from NCBI train + develop (every
mention surface of at least ``--min-count`` annotations whose annotation rate, annotated / occurrences of
its token sequence in those texts, is at least ``--min-rate``, added as Disease where the lexicon has no
entry); scores the dev subset (vs PubTator) and the NCBI test set with and without it.

Usage: ``python bench/preannotation_nondev.py [--lexicon FILE] [--sets greenelab,ncbi-train] [--errors TYPE]
[--ncbi-gazetteer [--min-rate R] [--min-count N]]``
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.nlp.local_annotator import LocalAnnotator  # noqa: E402

SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
SETS = {
    "greenelab": SHARED / "fixtures" / "real" / "pubtator_legacy" / "greenelab_bioconcepts2pubtator_offsets_sample.txt",
    "ncbi-train": SHARED / "data" / "ncbi-disease" / "NCBItrainset_corpus.txt",
    "ncbi-develop": SHARED / "data" / "ncbi-disease" / "NCBIdevelopset_corpus.txt",
    "ncbi-test": SHARED / "data" / "ncbi-disease" / "NCBItestset_corpus.txt",
}
TYPE_MAP = {
    "Chemical": "Chemical", "Disease": "Disease", "Gene": "Gene", "DNAMutation": "Mutation",
    "ProteinMutation": "Mutation", "SNP": "Mutation", "Mutation": "Mutation",
    # NCBI disease corpus classes
    "SpecificDisease": "Disease", "DiseaseClass": "Disease", "Modifier": "Disease", "CompositeMention": "Disease",
}

Item = tuple[str, int, int, str]


def read_pubtator(path: Path) -> tuple[dict[str, str], set[Item]]:
    """Texts (title + " " + abstract) by PMID and the mapped mentions of a PubTator file."""
    titles: dict[str, str] = {}
    abstracts: dict[str, str] = {}
    rows: list[list[str]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if "|t|" in line[:20]:
            pmid, _, text = line.partition("|t|")
            titles[pmid] = text
        elif "|a|" in line[:20]:
            pmid, _, text = line.partition("|a|")
            abstracts[pmid] = text
        elif line.count("\t") >= 4:
            rows.append(line.split("\t"))
    # Title + one space + abstract (a title's trailing space is not doubled).  The greenelab sample holds
    # truncated abstracts: mentions past the end of the text are dropped, and a document with a mention
    # whose offsets do not give its text is left out altogether.
    texts = {pmid: f"{titles[pmid].rstrip()} {abstracts.get(pmid, '')}" for pmid in titles}
    bad = {c[0] for c in rows if int(c[2]) <= len(texts[c[0]]) and texts[c[0]][int(c[1]):int(c[2])] != c[3]}
    texts = {pmid: text for pmid, text in texts.items() if pmid not in bad}
    items: set[Item] = set()
    for c in rows:
        type_ = TYPE_MAP.get(c[4])
        if type_ is not None and c[0] in texts and int(c[2]) <= len(texts[c[0]]):
            items.add((c[0], int(c[1]), int(c[2]), type_))
    return texts, items


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score(pred: set[Item], ref: set[Item], types: tuple[str, ...]) -> float:
    print(f"{'type':10} {'P':>6} {'R':>6} {'F1':>6} {'tp':>5} {'fp':>5} {'fn':>5}")
    total: collections.Counter[str] = collections.Counter()
    for t in types:
        p_t = {x for x in pred if x[3] == t}
        r_t = {x for x in ref if x[3] == t}
        tp, fp, fn = len(p_t & r_t), len(p_t - r_t), len(r_t - p_t)
        total.update(tp=tp, fp=fp, fn=fn)
        p, r, f = prf(tp, fp, fn)
        print(f"{t:10} {p:6.3f} {r:6.3f} {f:6.3f} {tp:5d} {fp:5d} {fn:5d}")
    p, r, f = prf(total["tp"], total["fp"], total["fn"])
    if len(types) > 1:
        print(f"{'micro':10} {p:6.3f} {r:6.3f} {f:6.3f} {total['tp']:5d} {total['fp']:5d} {total['fn']:5d}")
    return f


def classify(item: Item, others: set[Item]) -> str:
    """``boundary`` (an overlapping item of the same type), ``type`` (same span, other type) or ``missing``."""
    doc, s, e, t = item
    for d, s2, e2, t2 in others:
        if d == doc and s2 == s and e2 == e and t2 != t:
            return "type"
    for d, s2, e2, t2 in others:
        if d == doc and s2 < e and s < e2 and t2 == t:
            return "boundary"
    for d, s2, e2, _t2 in others:
        if d == doc and s2 < e and s < e2:
            return "overlap-other-type"
    return "missing"


def ncbi_gazetteer(base: LocalAnnotator, lexicon: Path | None, min_rate: float, min_count: int) -> LocalAnnotator:
    """The lexicon plus disease names learned from NCBI train + develop (see the module docstring)."""
    from pipeline.nlp import lexicon as lx

    texts: dict[str, str] = {}
    ref: set[Item] = set()
    for name in ("ncbi-train", "ncbi-develop"):
        t, r = read_pubtator(SETS[name])
        texts.update(t)
        ref |= r
    annotated: collections.Counter[tuple[str, ...]] = collections.Counter()
    surface: dict[tuple[str, ...], str] = {}
    for d, s, e, _t in sorted(ref):
        key = lx.folded_key(texts[d][s:e])
        annotated[key] += 1
        surface.setdefault(key, texts[d][s:e])
    longest = max(len(k) for k in annotated)
    occurrences: collections.Counter[tuple[str, ...]] = collections.Counter()
    for text in texts.values():
        toks = [lx.folded_token(t) for t, _, _ in lx.tokenize(text) if t[0] not in lx.HYPHENS]
        for i in range(len(toks)):
            for n in range(1, min(longest, len(toks) - i) + 1):
                if tuple(toks[i:i + n]) in annotated:
                    occurrences[tuple(toks[i:i + n])] += 1
    tables = lx.read_lexicon(lexicon or lx.DEFAULT_LEXICON)["tables"]
    added = 0
    for key, n in sorted(annotated.items()):
        text = surface[key]
        if n < min_count or n / max(occurrences[key], n) < min_rate or len(text) <= 3 or key in base.folded:
            continue
        if text.upper() == text:  # acronyms match in exact case only
            if lx.exact_key(text) not in base.exact:
                tables["exact"].append([text, "Disease", ""])
                added += 1
            continue
        tables["folded"].append([text, "Disease", ""])
        added += 1
    print(f"NCBI gazetteer: {added} disease names added (min rate {min_rate}, min count {min_count})")
    return LocalAnnotator(tables)


def dev_vs_pubtator(annotator: LocalAnnotator) -> tuple[float, float]:
    """(micro F1, Disease F1) of ``annotator`` against PubTator on the dev subset's sentences."""
    dev = SHARED / "data" / "pgxcorpus-dev"
    pred: set[Item] = set()
    ref: set[Item] = set()
    for txt in sorted((dev / "gold").glob("*.txt")):
        for a in annotator.annotate(txt.read_text(encoding="utf-8")):
            pred.add((txt.stem, a.start, a.end, a.type))
        for line in (dev / "pubtator" / f"{txt.stem}.ann").read_text(encoding="utf-8").splitlines():
            if line.startswith("T"):
                _tid, spec, _text = line.split("\t", 2)
                type_, _, frags = spec.partition(" ")
                if ";" not in frags:
                    s, e = (int(x) for x in frags.split())
                    ref.add((txt.stem, s, e, type_))
    micro = prf(len(pred & ref), len(pred - ref), len(ref - pred))[2]
    dp = {x for x in pred if x[3] == "Disease"}
    dr = {x for x in ref if x[3] == "Disease"}
    return micro, prf(len(dp & dr), len(dp - dr), len(dr - dp))[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexicon", type=Path, default=None)
    parser.add_argument("--sets", default="greenelab,ncbi-train,ncbi-develop")
    parser.add_argument("--errors", default=None, help="list FP/FN of this type (or 'all')")
    parser.add_argument("--ncbi-gazetteer", action="store_true", help="the NCBI disease gazetteer experiment")
    parser.add_argument("--min-rate", type=float, default=0.5)
    parser.add_argument("--min-count", type=int, default=2)
    args = parser.parse_args()
    annotator = LocalAnnotator.load(args.lexicon)
    if args.ncbi_gazetteer:
        with_gaz = ncbi_gazetteer(annotator, args.lexicon, args.min_rate, args.min_count)
        test_texts, test_ref = read_pubtator(SETS["ncbi-test"])
        for label, ann in (("lexicon", annotator), ("lexicon + NCBI gazetteer", with_gaz)):
            pred = {(d, a.start, a.end, a.type) for d, t in test_texts.items() for a in ann.annotate(t)
                    if a.type == "Disease"}
            test_f1 = prf(len(pred & test_ref), len(pred - test_ref), len(test_ref - pred))[2]
            micro, disease = dev_vs_pubtator(ann)
            print(f"{label:26}: dev vs PubTator micro F1 {micro:.3f} (Disease {disease:.3f}); "
                  f"NCBI test Disease F1 {test_f1:.3f}")
        return 0
    for name in args.sets.split(","):
        path = SETS[name]
        if not path.is_file():
            print(f"{path} not found: {name} skipped")
            continue
        texts, ref = read_pubtator(path)
        pred: set[Item] = set()
        for pmid, text in texts.items():
            for a in annotator.annotate(text):
                pred.add((pmid, a.start, a.end, a.type))
        types: tuple[str, ...] = ("Chemical", "Disease", "Gene", "Mutation") if name == "greenelab" else ("Disease",)
        pred = {x for x in pred if x[3] in types}
        print(f"\n{name}: {len(texts)} documents, {len(ref)} reference mentions")
        score(pred, ref, types)
        kinds: collections.Counter[tuple[str, str, str]] = collections.Counter()
        for label, items, others in (("FP", pred - ref, ref), ("FN", ref - pred, pred)):
            for it in items:
                kinds[(label, it[3], classify(it, others))] += 1
        print("errors by kind: " + ", ".join(f"{lab} {t} {k} {n}" for (lab, t, k), n in sorted(kinds.items())))
        if args.errors:
            wanted = types if args.errors == "all" else (args.errors,)
            for label, items, others in (("FP", pred - ref, ref), ("FN", ref - pred, pred)):
                for it in sorted(items):
                    if it[3] in wanted:
                        d, s, e, t = it
                        print(f"  {label} {t:9} {classify(it, others):9} {texts[d][s:e]!r:40} "
                              f"...{texts[d][max(0, s - 30):e + 30]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
