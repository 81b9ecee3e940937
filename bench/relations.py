"""Relation pre-annotation quality on ../shared/data/pgxcorpus-dev (300 sentences, 920 gold relations).

Two settings:

* **given gold entities**: the relation step alone (pipeline.nlp.relations) on the gold entities,
  each sentence parsed once with the build's parser;
* **end to end**: the PubTator files as key-entity source (``pubtator/*.ann``), then extension
  (which keeps its parses), type mapping and relations, as the composite figures
  (bench/preannotation_agreement.py) are made.

Scores (one-to-one maximum matching per sentence, so one credit per gold relation):
arguments ``exact`` (same fragments) or ``partial`` (each argument overlaps the gold one);
direction considered (``dir``) or not (``undir``); types ``strict`` (same type), ``hier``
(hierarchy credit: the proposed type is the gold type or one of its ancestors in
config/schema.yaml's relation hierarchy) or ``untyped``.  Micro and per gold type, modality
accuracy on matched relations (exact, directed, hierarchy credit), and annotator actions saved
per 100 sentences (a proposal matching a gold relation with exact arguments, direction and type
is kept: +1; one matching a gold relation only when retyped or reversed: 0; any other is deleted: -1).

Out of fold: 5 folds by PMID (pipeline.nlp.folds).  On the training folds only, each rule key
(``<rule>:<trigger type>``) gets the type it is most often right with (itself or an ancestor) and
only keys with at least 5 training proposals and a training precision (exact arguments,
direction, hierarchy credit) of at least ``--min-precision`` stay on; the held-out fold is scored with those rules.
In-sample: the same tuning on all 300 sentences, scored on them.  The learned scorer likewise: each
fold's scorer is trained by ``pipeline.nlp.relations.training.train_scorer`` on the training folds' sentences
only, which chooses its models' L2 strengths and its thresholds there by inner cross-validation by
PMID (the chosen values are printed per fold).

Also the baseline: every ordered pair of the pipeline's entities as ``isAssociatedWith``, end to
end, partial arguments, hierarchy credit.  And the scorer's proposals in the settings of Table 9 of
the PGxCorpus paper (relation agreement between annotators): written as the build's brat documents
and compared with the gold ``.ann`` files by the scoring of ``pgx-corpus agreement``
(``pipeline.brat.agreement.compare_collections``: exact/partial x strict/hierarchy/any x
directed/undirected, micro and macro F1; there hierarchy credit counts each relation once per level
of its type, and the arguments' entity types are compared too).

``--shipped`` trains nothing: the rule file's own scorer (``config/relations.yaml``'s, trained on
the 650 sentences of dev and more) is applied to every sentence of the data, in both settings; with
``PGX_SHARED`` pointing at another set laid out as ``data/pgxcorpus-dev/`` (``gold/``,
``pubtator/``), it scores the shipped system on sentences it never saw.  Actions saved are also
given per fold of the same 5-fold split.

``--learning-curve`` trains each fold's scorer on a half, three quarters and all of its
training PMIDs (given gold entities), to show how the figures grow with annotated data.

    python bench/relations.py [--model NAME] [--min-precision 0.6] [--target-precision 0.75] [--rules-detail] [--curve]
    python bench/relations.py --method scorer --skip-end-to-end --target-precision 0.75 --learning-curve
    PGX_SHARED=/path/to/heldout python bench/relations.py --shipped
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.brat import standoff as brat  # noqa: E402
from pipeline.brat.agreement import DIRECTION_SETTINGS, SPAN_SETTINGS, TYPE_SETTINGS, compare_collections  # noqa: E402,E501
from pipeline.brat.modality import parse_note  # noqa: E402
from pipeline.corpus.brat_export import sentence_document  # noqa: E402
from pipeline.documents import Document, Sentence  # noqa: E402
from pipeline.nlp.extend import extend_documents, sentence_parse  # noqa: E402
from pipeline.nlp.folds import DEFAULT_K, DEFAULT_SEED, kfold_groups, train_test  # noqa: E402
from pipeline.nlp.ontology import DEFAULT_ONTOLOGY, load_ontology  # noqa: E402
from pipeline.nlp.relations.documents import relate_documents  # noqa: E402
from pipeline.nlp.relations.rules import DECISIONS, DEFAULT_DECISION, DEFAULT_RULES, RelationRules, load_rules  # noqa: E402
from pipeline.nlp.relations.training import TYPE_HIERARCHY_COST, TrainingSentence, train_scorer, type_decisions  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser  # noqa: E402
from pipeline.nlp.typemap import map_documents  # noqa: E402
from pipeline.schema import Schema, load_schema  # noqa: E402

DATA = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared")) / "data" / "pgxcorpus-dev"

# (arg1 fragments, arg2 fragments, type, modality)
Item = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...], str, frozenset[str]]
ARGS = ("exact", "partial")
DIRS = ("dir", "undir")
TYPINGS = ("strict", "hier", "untyped")
# the in-sample scorer's rules, and each fold's scorer's rules with its held-out names
Trained = tuple[RelationRules, list[tuple[RelationRules, list[str]]]]


@dataclasses.dataclass
class Gold:
    docs: list[Document]  # gold entities, no relations
    relations: dict[str, list[Item]]
    brat: dict[str, brat.BratDocument] = dataclasses.field(default_factory=dict)  # the .ann files as read


def load_gold() -> Gold:
    docs: list[Document] = []
    relations: dict[str, list[Item]] = {}
    read: dict[str, brat.BratDocument] = {}
    for txt in sorted((DATA / "gold").glob("*.txt")):
        gdoc, issues = brat.read_document(txt)
        read[txt.stem] = gdoc
        for issue in issues:
            print(f"warning: {issue}", file=sys.stderr)
        text = gdoc.text
        tb = {t.id: t for t in gdoc.textbounds}
        items: list[Item] = []
        for r in gdoc.relations:
            a1, a2 = tb[r.arg("Arg1") or ""], tb[r.arg("Arg2") or ""]
            note = parse_note(" ".join(gdoc.notes_for(r.id)))
            items.append((a1.sorted_fragments, a2.sorted_fragments, r.type, note.modality))
        relations[txt.stem] = items
        docs.append(Document(pmid=txt.stem, title=text, text=text, origin="brat",
                             sentences=(Sentence(0, len(text)),),
                             annotations=tuple(brat.to_annotations(gdoc, source="gold"))))
    return Gold(docs, relations, read)


def pubtator_docs(gold: Gold) -> list[Document]:
    out = []
    for doc in gold.docs:
        pt = DATA / "pubtator" / f"{doc.pmid}.ann"
        pdoc, _ = brat.parse_ann(doc.pmid, doc.text, pt.read_text(encoding="utf-8") if pt.exists() else "", str(pt))
        out.append(dataclasses.replace(doc, annotations=tuple(brat.to_annotations(pdoc, source="pubtator"))))
    return out


def end_to_end_docs(gold: Gold, nlp: Any, schema: Schema) -> list[Document]:
    """The PubTator files' key entities, extended (parses kept) and mapped: the relation step's end-to-end input."""
    counts: Counter[str] = Counter()
    ontology = load_ontology(DEFAULT_ONTOLOGY)
    return list(map_documents(extend_documents(pubtator_docs(gold), ontology, nlp, counts, keep_parses=True),
                              schema, counts, ontology=ontology))


def items_of(doc: Document) -> list[Item]:
    return [(doc.annotations[r.arg1].fragments, doc.annotations[r.arg2].fragments, r.type, frozenset(r.modality))
            for r in doc.relations]


def rule_of(doc: Document) -> list[str]:
    return [r.rule or "" for r in doc.relations]


# --- matching ------------------------------------------------------------------------------------


def _overlaps(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in b)


def compatible(p: Item, g: Item, args: str, direction: str, typing: str, schema: Schema) -> bool:
    same: Callable[[Sequence[tuple[int, int]], Sequence[tuple[int, int]]], bool] = (
        (lambda x, y: tuple(x) == tuple(y)) if args == "exact" else _overlaps)
    forward = same(p[0], g[0]) and same(p[1], g[1])
    backward = direction == "undir" and same(p[0], g[1]) and same(p[1], g[0])
    if not (forward or backward):
        return False
    if typing == "strict":
        return p[2] == g[2]
    if typing == "hier":
        return p[2] in schema.ancestors(g[2], include_self=True)
    return True


def match(preds: Sequence[Item], golds: Sequence[Item], ok: Callable[[Item, Item], bool]) -> dict[int, int]:
    """Maximum one-to-one matching (Kuhn's augmenting paths): {pred index: gold index}."""
    edges = [[j for j, g in enumerate(golds) if ok(p, g)] for p in preds]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(preds)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


@dataclasses.dataclass
class Tally:
    tp_pred: int = 0
    n_pred: int = 0
    tp_gold: int = 0
    n_gold: int = 0

    def add(self, other: Tally) -> None:
        self.tp_pred += other.tp_pred
        self.n_pred += other.n_pred
        self.tp_gold += other.tp_gold
        self.n_gold += other.n_gold

    def prf(self) -> tuple[float, float, float]:
        p = self.tp_pred / self.n_pred if self.n_pred else 0.0
        r = self.tp_gold / self.n_gold if self.n_gold else 0.0
        return 100 * p, 100 * r, (200 * p * r / (p + r) if p + r else 0.0)


def score(pred: dict[str, list[Item]], gold: dict[str, list[Item]], names: Iterable[str], schema: Schema,
          args: str, direction: str, typing: str, gold_type: str | None = None,
          pred_type: str | None = None) -> Tally:
    t = Tally()
    for name in names:
        ps, gs = pred.get(name, []), gold.get(name, [])
        m = match(ps, gs, lambda p, g: compatible(p, g, args, direction, typing, schema))
        for i, j in m.items():
            t.tp_pred += pred_type is None or ps[i][2] == pred_type
            t.tp_gold += gold_type is None or gs[j][2] == gold_type
        t.n_pred += sum(pred_type is None or p[2] == pred_type for p in ps)
        t.n_gold += sum(gold_type is None or g[2] == gold_type for g in gs)
    if gold_type is not None and pred_type is None:
        t.tp_pred, t.n_pred = 0, 0
    return t


def modality_accuracy(pred: dict[str, list[Item]], gold: dict[str, list[Item]], names: Iterable[str],
                      schema: Schema, args: str = "exact") -> tuple[int, int]:
    right = total = 0
    for name in names:
        ps, gs = pred.get(name, []), gold.get(name, [])
        for i, j in match(ps, gs, lambda p, g: compatible(p, g, args, "dir", "hier", schema)).items():
            total += 1
            right += ps[i][3] == gs[j][3]
    return right, total


def actions_saved(pred: dict[str, list[Item]], gold: dict[str, list[Item]], names: Sequence[str], schema: Schema,
                  args: str = "exact") -> tuple[float, int, int, int]:
    """(net per 100 sentences, kept, neutral (retype/reverse), deleted)."""
    kept = neutral = deleted = 0
    for name in names:
        ps, gs = pred.get(name, []), gold.get(name, [])
        strict = match(ps, gs, lambda p, g: compatible(p, g, args, "dir", "strict", schema))
        rest = [i for i in range(len(ps)) if i not in strict]
        free = [j for j in range(len(gs)) if j not in set(strict.values())]
        loose = match([ps[i] for i in rest], [gs[j] for j in free],
                      lambda p, g: compatible(p, g, args, "undir", "untyped", schema))
        kept += len(strict)
        neutral += len(loose)
        deleted += len(rest) - len(loose)
    return 100 * (kept - deleted) / max(1, len(names)), kept, neutral, deleted


# --- tuning on training folds --------------------------------------------------------------------


def tune(base: RelationRules, docs: dict[str, Document], gold: dict[str, list[Item]], names: Sequence[str],
         schema: Schema, min_precision: float, args: str, min_support: int = 5) -> RelationRules:
    """Rules tuned on ``names`` only: per rule key, the type most often strictly right (itself or an
    ancestor), and keys below ``min_precision`` (exact or partial args, directed, hierarchy credit) off."""
    counts: Counter[str] = Counter()
    pred_docs = {n: d for n, d in zip(names, relate_documents([docs[n] for n in names], base, schema, counts),
                                      strict=True)}
    hits: dict[str, Counter[str]] = defaultdict(Counter)
    total: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    for name in names:
        doc = pred_docs[name]
        ps, keys, gs = items_of(doc), rule_of(doc), gold.get(name, [])
        m = match(ps, gs, lambda p, g: compatible(p, g, args, "dir", "hier", schema))
        for i, key in enumerate(keys):
            total[key] += 1
            if i in m:
                correct[key] += 1
                hits[key][gs[m[i]][2]] += 1
    enabled = {k for k in total if total[k] >= min_support and correct[k] / total[k] >= min_precision}
    retype: dict[str, str] = {}
    for key, by_type in hits.items():
        proposed = key.split(":", 1)[1]
        if key.startswith("abbreviation") or key.startswith("pubtator"):
            continue
        candidates = schema.ancestors(proposed, include_self=True)
        # strict credit of proposing c: the gold relations matched whose type is c
        best = max(candidates, key=lambda c: (by_type[c], -candidates.index(c)))
        if best != proposed:
            retype[key] = best
    return dataclasses.replace(base, enabled=frozenset(enabled), retype=retype)


def training_examples(docs: Sequence[Document], gold: dict[str, list[Item]]) -> list[TrainingSentence]:
    """Gold-entity documents (with parses) and their gold relations as annotation indices."""
    out = []
    for doc in docs:
        index: dict[tuple[tuple[int, int], ...], int] = {}
        for i, a in enumerate(doc.annotations):
            index.setdefault(a.fragments, i)
        triples = tuple((index[g[0]], index[g[1]], g[2]) for g in gold.get(doc.pmid, [])
                        if g[0] in index and g[1] in index and index[g[0]] != index[g[1]])
        out.append(TrainingSentence(doc, triples, doc.pmid.split("_", 1)[0]))
    return out


def projected_examples(docs: Sequence[Document], gold: dict[str, list[Item]]) -> list[TrainingSentence]:
    """Pipeline-entity documents (with extension's parses) and the gold relations projected onto their
    entities: each gold argument becomes the pipeline entity that overlaps it most (ties: the earlier)."""
    out = []
    for doc in docs:
        def best(frags: tuple[tuple[int, int], ...], doc: Document = doc) -> int | None:
            scores = [(sum(max(0, min(e, ge) - max(s, gs)) for s, e in a.fragments for gs, ge in frags), -i)
                      for i, a in enumerate(doc.annotations)]
            top = max(scores, default=(0, 0))
            return -top[1] if top[0] > 0 else None

        triples = []
        for g in gold.get(doc.pmid, []):
            i, j = best(g[0]), best(g[1])
            if i is not None and j is not None and i != j:
                triples.append((i, j, g[2]))
        out.append(TrainingSentence(doc, tuple(dict.fromkeys(triples)), doc.pmid.split("_", 1)[0]))
    return out


def scorer_rules(base: RelationRules, train_docs: Sequence[Document], gold: dict[str, list[Item]],
                 schema: Schema, target: float, projected: bool = False, budget: float = TYPE_HIERARCHY_COST,
                 decision: str = DEFAULT_DECISION) -> tuple[RelationRules, list[tuple[float, float, float]]]:
    examples = projected_examples(train_docs, gold) if projected else training_examples(train_docs, gold)
    scorer, curve = train_scorer(examples, base, schema, target_precision=target, hierarchy_budget=budget,
                                     decision=decision)
    return dataclasses.replace(base, scorer=scorer), curve


def predict(rules: RelationRules, docs: Sequence[Document], schema: Schema) -> dict[str, Document]:
    counts: Counter[str] = Counter()
    return {d.pmid: d for d in relate_documents(docs, rules, schema, counts)}


# --- reporting -----------------------------------------------------------------------------------


def fmt(t: Tally) -> str:
    p, r, f = t.prf()
    return f"P {p:5.1f} R {r:5.1f} F {f:5.1f}"


def report(title: str, sides: dict[str, dict[str, list[Item]]], gold: dict[str, list[Item]], names: list[str],
           schema: Schema, folds: list[list[str]] | None, fold_args: str = "exact") -> None:
    print(f"\n== {title} ==")
    head = "  ".join(f"{side:^26}" for side in sides)
    print(f"{'setting':26} {head}")
    for args in ARGS:
        for direction in DIRS:
            for typing in TYPINGS:
                cells = "  ".join(fmt(score(pred, gold, names, schema, args, direction, typing))
                                  for pred in sides.values())
                print(f"{args + ' ' + direction + ' ' + typing:26} {cells}")
    print("per gold type (exact, dir, strict: R; P over proposals of the type):")
    for type_ in schema.relation_types():
        cells = []
        for pred in sides.values():
            t_r = score(pred, gold, names, schema, "exact", "dir", "strict", gold_type=type_)
            t_p = score(pred, gold, names, schema, "exact", "dir", "strict", pred_type=type_)
            if t_r.n_gold == 0 and t_p.n_pred == 0:
                cells.append(f"{'-':^26}")
                continue
            cells.append(f"P {t_p.prf()[0]:5.1f} R {t_r.prf()[1]:5.1f} n {t_p.n_pred:4d}/{t_r.n_gold:<4d}")
        print(f"  {type_:24} " + "  ".join(cells))
    for args in ARGS:
        cells = []
        for pred in sides.values():
            right, total = modality_accuracy(pred, gold, names, schema, args)
            cells.append(f"{100 * right / max(1, total):5.1f}% of {total:4d}".center(26))
        print(f"{'modality acc. (' + args + ')':26} " + "  ".join(cells))
    for args in ARGS:
        cells = []
        for pred in sides.values():
            net, kept, neutral, deleted = actions_saved(pred, gold, names, schema, args)
            cells.append(f"{net:+6.1f}/100 (k{kept} n{neutral} d{deleted})".center(26))
        print(f"{'actions saved (' + args + ')':26} " + "  ".join(cells))
    if folds is not None:
        for label, pred in sides.items():
            per = [actions_saved(pred, gold, f, schema, fold_args)[0] for f in folds]
            print(f"  actions saved per fold ({label}, {fold_args} arguments): " + ", ".join(f"{x:+.1f}" for x in per))


#: The PGxCorpus paper's Table 9: relation agreement between annotators, macro F1 in its strictest setting
#: (exact arguments, same type, direction considered).
HUMAN_TABLE9_STRICTEST_MACRO = 47.3


def table9(title: str, sides: dict[str, dict[str, Document]], gold: Gold, names: Sequence[str],
           schema: Schema) -> None:
    """Score proposals against the gold as ``pgx-corpus agreement GOLD PROPOSALS`` does (Table 9 settings).

    Each side's documents are written as the brat documents the build exports
    (``sentence_document``) and compared with the gold ``.ann`` files by
    ``compare_collections``, the agreement command's own function: relations matched one to
    one, their arguments' entities matched under the span and type settings too, modality
    ignored; micro and macro F1 (the macro over the relation types present on either side).
    """
    if not all(name in gold.brat for name in names):
        print(f"  {title}: not scored (the gold .ann files were not read)")
        return
    gold_docs = {name: gold.brat[name] for name in names}
    results = {}
    for label, docs in sides.items():
        counts: Counter[str] = Counter()
        predicted = {}
        for name in names:
            (record,), _crossing = docs[name].sentence_records()
            predicted[name] = dataclasses.replace(sentence_document(record, schema, counts), name=name)
        results[label] = compare_collections(gold_docs, predicted, schema, ref_label="gold", pred_label=label)
    print(f"  {title}: relation F1 through pgx-corpus agreement's scoring (micro / macro; the paper's Table 9, "
          f"human agreement, strictest setting: macro {HUMAN_TABLE9_STRICTEST_MACRO})")
    print("    " + f"{'setting':28}" + "".join(f"{label:^22}" for label in sides))
    for span in SPAN_SETTINGS:
        for typing in TYPE_SETTINGS:
            for direction in DIRECTION_SETTINGS:
                key = f"{span}_{typing}_{direction}"
                cells = []
                for label in sides:
                    rep = results[label]["relations"][key]
                    micro, macro = rep["micro"]["f1"], rep["macro"]["f1"]
                    cells.append(f"{_pct(micro)} / {_pct(macro)}".center(22))
                print(f"    {key:28}" + "".join(cells))


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{100 * x:5.1f}"


def run_scorer_setting(title: str, docs: list[Document], train_docs: list[Document], gold: Gold,
                       base: RelationRules, schema: Schema, target: float, k: int, seed: int,
                       fold_args: str = "exact", projected: bool = False, trained: Trained | None = None,
                       budget: float = TYPE_HIERARCHY_COST, decision: str = DEFAULT_DECISION) -> Trained:
    """The learned scorer: trained on the gold-entity training sentences, applied to ``docs``.

    Each fold's scorer is trained (its L2 strengths and thresholds chosen by inner cross-validation)
    on the training folds' sentences only.  ``trained``: scorers already trained on the same training
    sentences and folds (the end-to-end setting applies the gold-entity setting's ones).  Returns the
    in-sample rules and each fold's rules and held-out names.
    """
    names = [d.pmid for d in docs]
    by_name = {d.pmid: d for d in docs}
    train_by_name = {d.pmid: d for d in train_docs}
    folds = kfold_groups(names, k, seed)
    base = dataclasses.replace(base, enabled=None, retype={}, scorer=None)
    t0 = time.perf_counter()
    if trained is None:
        insample_rules, _ = scorer_rules(base, train_docs, gold.relations, schema, target, projected, budget,
                                         decision)
    else:
        insample_rules = trained[0]
    insample = predict(insample_rules, docs, schema)
    oof: dict[str, Document] = {}
    models: list[tuple[RelationRules, list[str]]] = []
    for f in range(k):
        train, test = train_test(folds, f)
        # the training function sees the training folds' sentences only
        assert not {n.split("_", 1)[0] for n in train} & {n.split("_", 1)[0] for n in test}
        if trained is None:
            rules, _curve = scorer_rules(base, [train_by_name[n] for n in train], gold.relations, schema, target,
                                         projected, budget, decision)
        else:
            rules, held = trained[1][f]
            assert held == test
        models.append((rules, test))
        oof.update(predict(rules, [by_name[n] for n in test], schema))
    sides = {
        "in-sample": {n: items_of(d) for n, d in insample.items()},
        "out of fold": {n: items_of(d) for n, d in oof.items()},
    }
    report(title, sides, gold.relations, names, schema, folds, fold_args)
    if fold_args == "exact":
        type_confusion(sides["out of fold"], gold.relations, names, schema)
    table9("Table 9 settings", {"in-sample": insample, "out of fold": oof}, gold, names, schema)
    assert insample_rules.scorer is not None
    chosen = [r.scorer for r, _test in models if r.scorer is not None] + [insample_rules.scorer]
    labels = [f"fold {f + 1}" for f in range(k)] + ["in sample"]
    print(f"  chosen on the training folds (inner CV, target precision {target}): "
          "(pair threshold, type thresholds (root's children/below them); L2 C of the pair, context, type models; "
          "threshold per type)")
    for label, sc in zip(labels, chosen, strict=True):
        if sc.decision == "actions":
            print(f"    {label:9} (decision actions: no threshold; C {sc.meta['pair_c']:g}, {sc.meta['context_c']:g}, "
                  f"{sc.meta['type_c']:g})")
            continue
        specific = sc.type_threshold if sc.specific_type_threshold is None else sc.specific_type_threshold
        per_type = " ".join(f"{t} {v:.2f}" for t, v in sorted(sc.type_thresholds.items()))
        print(f"    {label:9} ({sc.threshold:.3f}, {sc.type_threshold:.2f}/{specific:.2f}; C {sc.meta['pair_c']:g}, "
              f"{sc.meta['context_c']:g}, {sc.meta['type_c']:g}; {per_type})")
    print(f"  ({time.perf_counter() - t0:.0f} s)")
    return insample_rules, models


def print_table(counts: Counter[tuple[str, str]], rows: Sequence[str], cols: Sequence[str], corner: str) -> None:
    """Print ``counts[(row, col)]`` as an aligned table (column names cut to 8 characters)."""
    print(f"    {corner:17}" + "".join(f"{c[:8]:>9}" for c in cols))
    for r in rows:
        print(f"    {r:17}" + "".join(f"{counts[(r, c)]:9d}" for c in cols))


def type_confusion(pred: dict[str, list[Item]], gold: dict[str, list[Item]], names: Sequence[str],
                   schema: Schema) -> None:
    """Gold type against proposed type, pairs matched with exact arguments and direction (untyped).

    Separates the two ways strict typing loses a gold relation: its pair is not proposed (column
    ``-``), or it is proposed with another type (off the diagonal).
    """
    conf: Counter[tuple[str, str]] = Counter()
    for name in names:
        ps, gs = pred.get(name, []), gold.get(name, [])
        m = match(ps, gs, lambda p, g: compatible(p, g, "exact", "dir", "untyped", schema))
        for i, j in m.items():
            conf[(gs[j][2], ps[i][2])] += 1
        for j in set(range(len(gs))) - set(m.values()):
            conf[(gs[j][2], "-")] += 1
    types = [t for t in schema.relation_types() if any(conf[(t, c)] for c in [*schema.relation_types(), "-"])]
    print("  gold type (rows) by proposed type (columns), exact arguments, direction; '-': pair not proposed:")
    print_table(conf, types, [*types, "-"], "")


def type_model_report(docs: list[Document], gold: Gold, models: Sequence[tuple[RelationRules, list[str]]],
                      schema: Schema) -> None:
    """The type model alone, out of fold: each held-out gold pair typed as if proposed in its gold direction.

    ``models``: each fold's scorer (trained on its training folds) and held-out names.  Prints
    the type model's most probable type's accuracy, the proposed type's (with the type
    thresholds: strictly right and hierarchy-credited), and the proposed types per gold type.
    """
    by_name = {d.pmid: d for d in docs}
    decisions: list[tuple[str, str | None, str | None]] = []
    for rules, test in models:
        decisions += type_decisions(training_examples([by_name[n] for n in test], gold.relations), rules, schema)
    n = max(1, len(decisions))
    top = sum(g == t for g, _c, t in decisions)
    strict = sum(g == c for g, c, _t in decisions)
    credited = sum(c is not None and schema.is_a(g, c) for g, c, _t in decisions)
    print(f"\ntype model alone, out of fold (each held-out gold pair typed as if proposed in its gold direction, "
          f"{len(decisions)} pairs): most probable type right {100 * top / n:.1f}%; proposed type (the "
          f"scorer's decision) strictly right {100 * strict / n:.1f}%, hierarchy-credited {100 * credited / n:.1f}%")
    conf = Counter((g, c or "-") for g, c, _t in decisions)
    types = [t for t in schema.relation_types() if any(g == t for g, _c, _t in decisions)]
    print_table(conf, types, types, "gold / proposed")


def run_shipped(docs: list[Document], e2e: list[Document], gold: Gold, rules_path: str, schema: Schema, k: int,
                seed: int) -> None:
    """The rule file's own scorer and rules (nothing trained) on every sentence, in both settings."""
    rules = load_rules(rules_path, schema)
    names = [d.pmid for d in docs]
    folds = kfold_groups(names, k, seed)
    scorer = rules.scorer
    trained_on = (f"with its scorer, trained on {scorer.meta.get('examples', '?')} sentences of "
                  f"{', '.join(scorer.meta.get('training_dirs', ['?']))}" if scorer is not None
                  else "(rules only, no scorer)")
    print(f"\nshipped: {rules_path} {trained_on}; on the sentences it was trained on, these are in-sample figures")
    for title, setting, args in (("shipped, given gold entities", docs, "exact"),
                                 ("shipped, end to end: PubTator keys, extension, mapping, relations", e2e, "partial")):
        pred = {n: items_of(d) for n, d in predict(rules, setting, schema).items()}
        report(title, {"shipped": pred}, gold.relations, names, schema, folds, args)
        if args == "exact":
            type_confusion(pred, gold.relations, names, schema)


def threshold_curve(docs: list[Document], gold: Gold, models: Sequence[tuple[RelationRules, list[str]]],
                    schema: Schema) -> None:
    """Out-of-fold precision and recall (exact, directed; hierarchy credit and strict) at several fixed thresholds.

    ``models``: each fold's scorer (trained on its training folds) and held-out names; the
    threshold is replaced, the rest (type thresholds, strengths) stays as chosen per fold.  The
    threshold is the pair probability (decision ``thresholds``) or the least expected net actions
    saved per proposal (decision ``actions``).  Also actions saved per 100 sentences.
    """
    names = [d.pmid for d in docs]
    by_name = {d.pmid: d for d in docs}
    actions = any(r.scorer is not None and r.scorer.decision == "actions" for r, _test in models)
    what, values = (("least expected net actions saved", (-0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4)) if actions
                    else ("pair threshold", (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)))
    print(f"\nthreshold curve, given gold entities, out of fold (exact, dir): {what}  hier P/R  strict P/R  "
          "actions saved per 100")
    for threshold in values:
        oof: dict[str, Document] = {}
        for rules, test in models:
            assert rules.scorer is not None
            fixed = dataclasses.replace(rules, scorer=dataclasses.replace(rules.scorer, threshold=threshold))
            oof.update(predict(fixed, [by_name[n] for n in test], schema))
        pred = {n: items_of(d) for n, d in oof.items()}
        h = score(pred, gold.relations, names, schema, "exact", "dir", "hier").prf()
        st = score(pred, gold.relations, names, schema, "exact", "dir", "strict").prf()
        saved = actions_saved(pred, gold.relations, names, schema)[0]
        print(f"  {threshold:4.1f}  P {h[0]:5.1f} R {h[1]:5.1f}   P {st[0]:5.1f} R {st[1]:5.1f}   {saved:+.1f}")


def learning_curve(docs: list[Document], gold: Gold, base: RelationRules, schema: Schema, target: float,
                   k: int, seed: int, budget: float, fractions: Sequence[float] = (0.5, 0.75, 1.0),
                   decision: str = DEFAULT_DECISION) -> None:
    """The scorer out of fold, given gold entities, trained on a share of each fold's training PMIDs.

    Each fold's training PMIDs are shuffled (seeded by the fold number) and the first ``fraction``
    of them kept; the held-out fold is the whole one, as in the other figures.  Prints, per
    fraction, the mean training sentences per fold, precision and recall (exact, directed; strict,
    hierarchy credit, untyped) and actions saved per 100 sentences.
    """
    import random

    names = [d.pmid for d in docs]
    by_name = {d.pmid: d for d in docs}
    folds = kfold_groups(names, k, seed)
    base = dataclasses.replace(base, enabled=None, retype={}, scorer=None)
    print("\nlearning curve, given gold entities, out of fold (exact, dir): share of each fold's training "
          "PMIDs, training sentences per fold, strict P/R, hier P/R, untyped P/R, actions saved per 100")
    for fraction in fractions:
        oof: dict[str, Document] = {}
        sizes = []
        for f in range(k):
            train, test = train_test(folds, f)
            pmids = sorted({n.split("_", 1)[0] for n in train})
            random.Random(f).shuffle(pmids)
            kept = set(pmids[:max(1, round(fraction * len(pmids)))])
            train = [n for n in train if n.split("_", 1)[0] in kept]
            sizes.append(len(train))
            rules, _curve = scorer_rules(base, [by_name[n] for n in train], gold.relations, schema, target,
                                         budget=budget, decision=decision)
            oof.update(predict(rules, [by_name[n] for n in test], schema))
        pred = {n: items_of(d) for n, d in oof.items()}
        cells = []
        for typing in TYPINGS:
            p, r, _f = score(pred, gold.relations, names, schema, "exact", "dir", typing).prf()
            cells.append(f"P {p:5.1f} R {r:5.1f}")
        saved = actions_saved(pred, gold.relations, names, schema)[0]
        print(f"  {fraction:4.2f}  {sum(sizes) / len(sizes):5.0f}   " + "   ".join(cells) + f"   {saved:+.1f}")


def run_setting(title: str, docs: list[Document], gold: Gold, base: RelationRules, schema: Schema,
                min_precision: float, args: str, k: int, seed: int, show_rules: bool) -> dict[str, Document]:
    names = [d.pmid for d in docs]
    by_name = {d.pmid: d for d in docs}
    folds = kfold_groups(names, k, seed)
    # neither the config's selection nor its scorer (both made on all 300 sentences) is used here
    base = dataclasses.replace(base, enabled=None, retype={}, scorer=None)
    insample_rules = tune(base, by_name, gold.relations, names, schema, min_precision, args)
    insample = predict(insample_rules, docs, schema)
    oof: dict[str, Document] = {}
    for f in range(k):
        train, test = train_test(folds, f)
        rules = tune(base, by_name, gold.relations, train, schema, min_precision, args)
        oof.update(predict(rules, [by_name[n] for n in test], schema))
    untuned = predict(base, docs, schema)
    sides = {
        "all keys (no selection)": {n: items_of(d) for n, d in untuned.items()},
        "in-sample (tuned)": {n: items_of(d) for n, d in insample.items()},
        "out of fold": {n: items_of(d) for n, d in oof.items()},
    }
    report(title, sides, gold.relations, names, schema, folds, args)
    if show_rules:
        print("rule precision in sample (all keys, no selection; exact/partial as above, dir, hier): key n P")
        per: Counter[str] = Counter()
        ok: Counter[str] = Counter()
        for name in names:
            d = untuned[name]
            ps, keys, gs = items_of(d), rule_of(d), gold.relations.get(name, [])
            m = match(ps, gs, lambda p, g: compatible(p, g, args, "dir", "hier", schema))
            for i, key in enumerate(keys):
                per[key] += 1
                ok[key] += i in m
        for key, n in per.most_common():
            print(f"    {key:28} {n:4d} {100 * ok[key] / n:5.1f}")
        print("  in-sample selection (config/relations.yaml 'selection'):")
        print("    enabled: [" + ", ".join(sorted(insample_rules.enabled or ())) + "]")
        print("    retype: {" + ", ".join(f"{k}: {v}" for k, v in sorted(insample_rules.retype.items())) + "}")
    return oof


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--rules", default=str(DEFAULT_RULES))
    ap.add_argument("--min-precision", type=float, default=0.6)
    ap.add_argument("--k", type=int, default=DEFAULT_K)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--rules-detail", action="store_true", help="print each rule key's precision")
    ap.add_argument("--skip-end-to-end", action="store_true")
    ap.add_argument("--only-end-to-end", action="store_true")
    ap.add_argument("--method", choices=("scorer", "rules", "both"), default="both",
                    help="the learned scorer, the selected trigger rules, or both (default)")
    ap.add_argument("--target-precision", type=float, default=0.8,
                    help="the scorer's threshold: the lowest with this inner-CV precision on the training folds")
    ap.add_argument("--curve", action="store_true", help="the scorer's out-of-fold threshold curve")
    ap.add_argument("--decision", choices=DECISIONS, default=DEFAULT_DECISION,
                    help=f"the scorers' decision (train-relations' option; default {DEFAULT_DECISION})")
    ap.add_argument("--learning-curve", action="store_true",
                    help="the scorer out of fold trained on half, three quarters and all of each fold's training PMIDs")
    ap.add_argument("--shipped", action="store_true",
                    help="train nothing: score the rule file's own scorer on every sentence (held-out data)")
    ap.add_argument("--type-hierarchy-budget", type=float, default=TYPE_HIERARCHY_COST,
                    help="share of the right inner-CV proposals whose hierarchy credit the type thresholds may lose "
                    f"(train-relations' option; default {TYPE_HIERARCHY_COST})")
    args = ap.parse_args(argv)
    if not (DATA / "gold").is_dir():
        print(f"{DATA} not found", file=sys.stderr)
        return 2
    schema = load_schema()
    base = load_rules(args.rules, schema, with_scorer=False)  # each setting trains its own
    gold = load_gold()
    n_gold = sum(len(v) for v in gold.relations.values())
    print(f"{len(gold.docs)} sentences, {n_gold} gold relations; rules {args.rules}; "
          f"min training precision {args.min_precision}; {args.k} folds by PMID, seed {args.seed}")
    nlp = load_parser(args.model)
    t0 = time.perf_counter()
    parsed = [dataclasses.replace(d, parses=(sentence_parse(s, 0, len(d.text)),))
              for d, s in zip(gold.docs, nlp.pipe(d.text for d in gold.docs), strict=True)]
    print(f"parsed in {time.perf_counter() - t0:.1f} s")
    if args.shipped:
        run_shipped(parsed, end_to_end_docs(gold, nlp, schema), gold, args.rules, schema, args.k, args.seed)
        return 0
    if args.method in ("rules", "both") and not args.only_end_to_end:
        run_setting("rules, given gold entities (exact arguments)", parsed, gold, base, schema, args.min_precision,
                    "exact", args.k, args.seed, args.rules_detail)
    trained: Trained | None = None
    if (args.method in ("scorer", "both") and not args.only_end_to_end) or args.curve:
        trained = run_scorer_setting("scorer, given gold entities", parsed, parsed, gold, base, schema,
                                     args.target_precision, args.k, args.seed, budget=args.type_hierarchy_budget,
                                     decision=args.decision)
        type_model_report(parsed, gold, trained[1], schema)
        if args.curve:
            threshold_curve(parsed, gold, trained[1], schema)
    if args.learning_curve:
        learning_curve(parsed, gold, base, schema, args.target_precision, args.k, args.seed,
                       args.type_hierarchy_budget, decision=args.decision)
    if args.skip_end_to_end:
        return 0
    e2e = end_to_end_docs(gold, nlp, schema)
    if args.method in ("rules", "both"):
        run_setting("rules, end to end: PubTator keys, extension, mapping, relations (selected on partial "
                    "arguments)", e2e, gold, base, schema, args.min_precision, "partial", args.k, args.seed,
                    args.rules_detail)
    if args.method in ("scorer", "both"):
        run_scorer_setting("scorer, end to end: PubTator keys, extension, mapping, relations (trained on the "
                           "gold-entity training sentences)", e2e, parsed, gold, base, schema,
                           args.target_precision, args.k, args.seed, fold_args="partial", trained=trained,
                           budget=args.type_hierarchy_budget, decision=args.decision)
        run_scorer_setting("scorer, end to end, trained on the pipeline's entities (gold relations projected "
                           "onto the entities overlapping their arguments)", e2e, e2e, gold, base, schema,
                           args.target_precision, args.k, args.seed, fold_args="partial", projected=True,
                           budget=args.type_hierarchy_budget, decision=args.decision)
    # the baseline: every ordered pair of the pipeline's entities as isAssociatedWith
    baseline: dict[str, list[Item]] = {}
    for d in e2e:
        ents = [a for a in d.annotations if a.type in schema.entity_parent]
        baseline[d.pmid] = [(a.fragments, b.fragments, "isAssociatedWith", frozenset())
                            for a in ents for b in ents if a is not b]
    t = score(baseline, gold.relations, [d.pmid for d in e2e], schema, "partial", "dir", "hier")
    print(f"\nbaseline (every ordered pair as isAssociatedWith, end to end, partial, dir, hier): {fmt(t)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
