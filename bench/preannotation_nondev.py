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

``--ncbi-boundaries``: an experiment with Disease boundary edits learned from NCBI train + develop. An
edit is one token added or removed at one edge of a local Disease mention, keyed by that token (``L+
acute``: add the word "acute" before the mention). It is kept when it gives the reference span in at least a
given share of the at least a given number of local mentions it applies to (mentions already right count
against it). Scores the NCBI test set and the dev subset against PubTator without the edits and with those
of four (number, share) settings: (2, 0.5), (3, 0.5), (3, 0.6), (5, 0.5).

Usage: ``python bench/preannotation_nondev.py [--lexicon FILE] [--sets greenelab,ncbi-train] [--errors TYPE]
[--ncbi-gazetteer [--min-rate R] [--min-count N]] [--ncbi-boundaries]``
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
DEV = SHARED / "data" / "pgxcorpus-dev"


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


Edit = tuple[str, str]  # ("L+" / "R+" / "L-" / "R-", lower-cased token)


def boundary_edits(toks: list[tuple[str, int, int]], start: int, end: int) -> list[tuple[Edit, tuple[int, int]]]:
    """The one-token edits of the mention ``[start, end)`` over its text's tokens, and the span each gives."""
    inside = [i for i, (_t, s, e) in enumerate(toks) if s < end and e > start]
    if not inside:
        return []
    i0, i1 = inside[0], inside[-1]
    out: list[tuple[Edit, tuple[int, int]]] = []
    if i0 > 0 and toks[i0 - 1][0].isalpha():
        out.append((("L+", toks[i0 - 1][0].lower()), (toks[i0 - 1][1], end)))
    if i1 + 1 < len(toks) and toks[i1 + 1][0].isalpha():
        out.append((("R+", toks[i1 + 1][0].lower()), (start, toks[i1 + 1][2])))
    if i1 > i0:
        out.append((("R-", toks[i1][0].lower()), (start, toks[i1 - 1][2])))
        out.append((("L-", toks[i0][0].lower()), (toks[i0 + 1][1], end)))
    return out


def boundary_edit_counts(annotator: LocalAnnotator) -> tuple[collections.Counter[Edit], collections.Counter[Edit]]:
    """How often each Disease boundary edit applies on NCBI train + develop, and how often it gives the
    reference span of a local mention that is not already right."""
    from pipeline.nlp import lexicon as lx

    seen: collections.Counter[Edit] = collections.Counter()
    right: collections.Counter[Edit] = collections.Counter()
    for name in ("ncbi-train", "ncbi-develop"):
        texts, ref = read_pubtator(SETS[name])
        for pmid, text in texts.items():
            toks = list(lx.tokenize(text))
            for a in annotator.annotate(text):
                if a.type != "Disease":
                    continue
                correct = (pmid, a.start, a.end, "Disease") in ref
                for edit, (s, e) in boundary_edits(toks, a.start, a.end):
                    seen[edit] += 1
                    right[edit] += not correct and (pmid, s, e, "Disease") in ref
    return seen, right


def annotate_with_edits(annotator: LocalAnnotator, text: str, edits: set[Edit]) -> list[tuple[int, int, str]]:
    """The annotator's mentions, each Disease mention moved by the first learned edit that applies."""
    from pipeline.nlp import lexicon as lx

    toks = list(lx.tokenize(text)) if edits else []
    out = []
    for a in annotator.annotate(text):
        span = (a.start, a.end)
        if a.type == "Disease" and edits:
            span = next((s for edit, s in boundary_edits(toks, a.start, a.end) if edit in edits), span)
        out.append((span[0], span[1], a.type))
    return out


def dev_vs_pubtator(annotator: LocalAnnotator, edits: set[Edit] | None = None) -> tuple[float, float]:
    """(micro F1, Disease F1) of ``annotator`` against PubTator on the dev subset's sentences."""
    pred: set[Item] = set()
    ref: set[Item] = set()
    for txt in sorted((DEV / "gold").glob("*.txt")):
        for s, e, t in annotate_with_edits(annotator, txt.read_text(encoding="utf-8"), edits or set()):
            pred.add((txt.stem, s, e, t))
        for line in (DEV / "pubtator" / f"{txt.stem}.ann").read_text(encoding="utf-8").splitlines():
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
    parser.add_argument("--ncbi-boundaries", action="store_true", help="the NCBI Disease boundary experiment")
    parser.add_argument("--min-rate", type=float, default=0.5)
    parser.add_argument("--min-count", type=int, default=2)
    args = parser.parse_args()
    annotator = LocalAnnotator.load(args.lexicon)
    if args.ncbi_boundaries or args.ncbi_gazetteer:
        needed = [SETS[n] for n in ("ncbi-train", "ncbi-develop", "ncbi-test")] + [DEV / "gold", DEV / "pubtator"]
        missing = [str(path) for path in needed if not path.exists()]
        if missing:
            print(f"not found: {', '.join(missing)} (put the shared/ folder beside the project); nothing measured")
            return 0
    if args.ncbi_boundaries:
        test_texts, test_ref = read_pubtator(SETS["ncbi-test"])
        micro0, disease0 = dev_vs_pubtator(annotator)
        pred0 = {(d, a.start, a.end, a.type) for d, t in test_texts.items() for a in annotator.annotate(t)
                 if a.type == "Disease"}
        test0 = prf(len(pred0 & test_ref), len(pred0 - test_ref), len(test_ref - pred0))[2]
        print(f"no edits: NCBI test Disease F1 {test0:.3f}; dev vs PubTator micro F1 {micro0:.4f} "
              f"(Disease {disease0:.3f})")
        seen, right = boundary_edit_counts(annotator)
        for min_count, min_rate in ((2, 0.5), (3, 0.5), (3, 0.6), (5, 0.5)):
            edits = {edit for edit, n in seen.items() if n >= min_count and right[edit] / n >= min_rate}
            edited = {(d, s, e, t) for d, text in test_texts.items()
                      for s, e, t in annotate_with_edits(annotator, text, edits) if t == "Disease"}
            test_f1 = prf(len(edited & test_ref), len(edited - test_ref), len(test_ref - edited))[2]
            micro, disease = dev_vs_pubtator(annotator, edits)
            print(f"edits learned with count >= {min_count}, rate >= {min_rate}: {len(edits)} edits; "
                  f"NCBI test Disease F1 {test_f1:.3f}; dev vs PubTator micro F1 {micro:.4f} (Disease {disease:.3f})")
        return 0
    if args.ncbi_gazetteer:
        with_gaz = ncbi_gazetteer(annotator, args.lexicon, args.min_rate, args.min_count)
        test_texts, test_ref = read_pubtator(SETS["ncbi-test"])
        for label, ann in (("lexicon", annotator), ("lexicon + NCBI gazetteer", with_gaz)):
            found = {(d, a.start, a.end, a.type) for d, t in test_texts.items() for a in ann.annotate(t)
                     if a.type == "Disease"}
            test_f1 = prf(len(found & test_ref), len(found - test_ref), len(test_ref - found))[2]
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
