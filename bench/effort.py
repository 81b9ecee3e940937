"""Annotators' work per 100 sentences: the edits of pipeline.brat.edits, out of fold by PMID.

Runs on PGxCorpus dev and more together (../shared/data/pgxcorpus-dev and pgxcorpus-more, 650 sentences;
14 PMIDs have sentences in both, so the folds group by PMID across both sets).  Each row is what a person is
given; the edits turn it into the final (gold) annotation of each sentence:

* no pre-annotation: an empty document;
* PubTator alone: the PubTator key entities mapped to the schema as ``build --no-extend`` exports them;
* the end-to-end build: PubTator keys, extension, mapping, and the relation step with a scorer trained on
  the training folds' final annotations (``train-relations``' procedure and options);
* relations given the final entities: the final entities, relations removed, and ``suggest-relations``
  (pipeline.nlp.relations.suggest) with the same fold's scorer: relation edits only;
* the workflow: the build's entity edits plus the relation edits of the row above.

For the suggestions on the final entities it also prints precision and recall of the suggested relations
against the final ones, exact arguments (the final entities themselves), directed, strict types (a
``Disputed_`` prefix ignored): all types, ``isEquivalentTo`` alone and all but it, in all and per fold.

Phase-1 documents may also keep the build's relations: the annotator corrects the entities (relations on
deleted entities go with them), then presses for suggestions, which only reach pairs with no relation; the
wrong build relations that survive must be deleted.  The last rows count that workflow too.

    python bench/effort.py [--k 5] [--seed 13] [--target-precision 0.75] [--limit N] [--quick]

Measured with ``--quick`` (5 folds, seed 13, 650 sentences; 2,771 s on a shared 2-core machine at load average 2
to 31), edits per 100 sentences (total = entity + relation): no pre-annotation 1,151.7 = 747.4 + 404.3; PubTator
alone 840.9; the end-to-end build 697.7 = 319.2 + 378.5 (entity edits -57.3%, relation edits -6.4%); relations
given the final entities 307.8 (-23.9%); the workflow without build-time relations in phase 1 627.1 (-45.6% of all
edits), with them 654.8 (-43.1%): phase-1 documents save more without build-time relations, which is why the
build proposes none by default.

``--quick`` fits each fold's scorer with the L2 strengths the shipped scorer selected (its meta's ``pair_c``,
``context_c``, ``type_c``) instead of selecting them by inner cross-validation: much faster, not quite the
shipped procedure; say so when quoting its figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline.brat import standoff as brat  # noqa: E402
from pipeline.brat.edits import (  # noqa: E402
    UNCOUNTED_TYPES,
    Edits,
    base_type,
    match_entities,
    sentence_edits,
    without_relations,
)
from pipeline.brat.modality import format_note  # noqa: E402
from pipeline.documents import Document, Sentence  # noqa: E402
from pipeline.nlp.extend import extend_documents, sentence_parse  # noqa: E402
from pipeline.nlp.folds import DEFAULT_K, DEFAULT_SEED, kfold_groups, train_test  # noqa: E402
from pipeline.nlp.ontology import DEFAULT_ONTOLOGY, load_ontology  # noqa: E402
from pipeline.nlp.relations.documents import relate_documents  # noqa: E402
from pipeline.nlp.relations.rules import DEFAULT_DECISION, DEFAULT_RULES, RelationRules, load_rules  # noqa: E402
from pipeline.nlp.relations.suggest import schema_allowed, suggest_relations  # noqa: E402
from pipeline.nlp.relations.training import TrainingSentence, train_scorer  # noqa: E402
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser  # noqa: E402
from pipeline.nlp.typemap import map_documents  # noqa: E402
from pipeline.schema import Schema, load_schema  # noqa: E402

SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared")) / "data"
SETS = ("pgxcorpus-dev", "pgxcorpus-more")


@dataclasses.dataclass
class Sentences:
    names: list[str]
    gold: dict[str, brat.BratDocument]
    keys: dict[str, Document]  # PubTator key entities, one sentence each
    parsed: dict[str, Document]  # gold entities with the sentence parse


def load(limit: int | None, nlp: object) -> Sentences:
    gold: dict[str, brat.BratDocument] = {}
    keys: dict[str, Document] = {}
    for name in SETS:
        for txt in sorted((SHARED / name / "gold").glob("*.txt")):
            gdoc, issues = brat.read_document(txt)
            for issue in issues:
                print(f"warning: {issue}", file=sys.stderr)
            if txt.stem in gold:
                raise SystemExit(f"{txt}: {txt.stem} is in two sets")
            gold[txt.stem] = gdoc
            pt = SHARED / name / "pubtator" / f"{txt.stem}.ann"
            pdoc, _ = brat.parse_ann(txt.stem, gdoc.text, pt.read_text(encoding="utf-8") if pt.exists() else "",
                                     str(pt))
            keys[txt.stem] = Document(txt.stem, gdoc.text, gdoc.text, origin="brat",
                                      sentences=(Sentence(0, len(gdoc.text)),),
                                      annotations=tuple(brat.to_annotations(pdoc, source="pubtator")))
    names = sorted(gold)
    if limit:
        names = names[:limit]
    parsed = {}
    texts = [gold[n].text for n in names]
    for n, sdoc in zip(names, nlp.pipe(texts), strict=True):  # type: ignore[attr-defined]
        g = gold[n]
        parsed[n] = Document(n, g.text, g.text, origin="brat", sentences=(Sentence(0, len(g.text)),),
                             annotations=tuple(brat.to_annotations(g, source="gold")),
                             parses=(sentence_parse(sdoc, 0, len(g.text)),))
    return Sentences(names, gold, keys, parsed)


def training_examples(s: Sentences, names: Sequence[str], schema: Schema) -> list[TrainingSentence]:
    """The final entities and relations of the named sentences (as train-relations reads a collection)."""
    out = []
    for n in names:
        g = s.gold[n]
        index = {t.id: i for i, t in enumerate(t for t in g.textbounds if any(e > st for st, e in t.fragments))}
        triples = []
        for r in g.relations:
            a1, a2 = index.get(r.arg("Arg1") or ""), index.get(r.arg("Arg2") or "")
            if a1 is None or a2 is None or a1 == a2 or r.type not in schema.relation_parent:
                continue
            triples.append((a1, a2, r.type))
        out.append(TrainingSentence(s.parsed[n], tuple(triples), n.split("_", 1)[0]))
    return out


def to_brat(doc: Document, schema: Schema) -> brat.BratDocument:
    """A build's sentence as the brat document a person is given: its schema-typed entities and relations."""
    out = brat.BratDocument(doc.pmid, doc.text)
    tid: dict[int, str] = {}
    for i, a in enumerate(doc.annotations):
        if a.type not in schema.entity_parent:
            continue
        tid[i] = f"T{len(tid) + 1}"
        out.textbounds.append(brat.TextBound(tid[i], a.type, a.fragments, a.text))
    seen: set[tuple[str, str, str]] = set()
    for r in doc.relations:
        a1, a2 = tid.get(r.arg1), tid.get(r.arg2)
        if a1 is None or a2 is None or a1 == a2 or (a1, a2, r.type) in seen:
            continue
        seen.add((a1, a2, r.type))
        rid = f"R{len(out.relations) + 1}"
        out.relations.append(brat.Relation(rid, r.type, (("Arg1", a1), ("Arg2", a2))))
        if r.modality:
            out.notes.append(brat.Note(f"#{len(out.notes) + 1}", "AnnotatorNotes", rid, format_note(r.modality)))
    return out


def corrected_with_build_relations(build: brat.BratDocument, final: brat.BratDocument) -> brat.BratDocument:
    """The final entities with the build's relations whose two entities survived the correction, mapped onto
    the entities they were matched with (what a phase-1 document holds once its entities are corrected)."""
    out = without_relations(final)
    matching = match_entities(build.textbounds, [t for t in final.textbounds if t.type not in UNCOUNTED_TYPES])
    notes = max((int(q.id[1:]) for q in out.notes if q.id[1:].isdigit()), default=0)
    for r in build.relations:
        a1, a2 = matching.get(r.arg("Arg1") or ""), matching.get(r.arg("Arg2") or "")
        if a1 is None or a2 is None or a1 == a2:
            continue
        rid = f"R{len(out.relations) + 1}"
        out.relations.append(brat.Relation(rid, r.type, (("Arg1", a1), ("Arg2", a2))))
        for text in build.notes_for(r.id):
            notes += 1
            out.notes.append(brat.Note(f"#{notes}", "AnnotatorNotes", rid, text))
    return out


def relation_set(doc: brat.BratDocument) -> set[tuple[str, str, str]]:
    """A document's relations as (Arg1 id, Arg2 id, type without ``Disputed_``)."""
    return {(r.arg("Arg1") or "", r.arg("Arg2") or "", base_type(r.type)) for r in doc.relations}


PRF_GROUPS = ("all types", "isEquivalentTo", "other types")


def prf_counts(given: brat.BratDocument, final: brat.BratDocument) -> Counter[str]:
    """True positives, proposals and final relations, exact arguments, directed, strict types, per group.

    ``given`` holds the final entities under their own ids (``without_relations`` keeps them), so
    the arguments are compared by id.
    """
    out: Counter[str] = Counter()
    proposed, gold = relation_set(given), relation_set(final)
    for group in PRF_GROUPS:
        def keep(t: tuple[str, str, str], group: str = group) -> bool:
            return (group == "all types" or (t[2] == "isEquivalentTo") == (group == "isEquivalentTo"))
        p = {t for t in proposed if keep(t)}
        g = {t for t in gold if keep(t)}
        out[f"{group}:tp"] += len(p & g)
        out[f"{group}:p"] += len(p)
        out[f"{group}:g"] += len(g)
    return out


def prf(c: Counter[str]) -> str:
    parts = []
    for group in PRF_GROUPS:
        tp, p, g = c[f"{group}:tp"], c[f"{group}:p"], c[f"{group}:g"]
        parts.append(f"{group} P {100 * tp / max(1, p):.1f} R {100 * tp / max(1, g):.1f} ({tp}/{p}/{g})")
    return "; ".join(parts)


def per100(e: Edits, n: int) -> str:
    f = 100 / max(1, n)
    return (f"{e.total * f:7.1f} {e.entity_edits * f:7.1f} {e.relation_edits * f:7.1f}   "
            f"(keep {e.entity_keep * f:.1f}, retype {e.entity_retype * f:.1f}, move {e.entity_move * f:.1f}"
            f"+{e.entity_move_retype * f:.1f}, delete {e.entity_delete * f:.1f}, add {e.entity_add * f:.1f} | "
            f"keep {e.relation_keep * f:.1f}, retype {e.relation_retype * f:.1f}, delete {e.relation_delete * f:.1f}, "
            f"add {e.relation_add * f:.1f}, modality {e.modality * f:.1f})")


def saved(e: Edits, base: Edits) -> str:
    def pct(a: int, b: int) -> str:
        return f"{100 * (b - a) / b:5.1f}%" if b else "   - "
    return (f"saved: all {pct(e.total, base.total)}, entities {pct(e.entity_edits, base.entity_edits)}, "
            f"relations {pct(e.relation_edits, base.relation_edits)}")


def missing_data() -> str:
    """The shared data sets that are absent, as one message ("" when all are there)."""
    missing = [s for s in SETS if not (SHARED / s / "gold").is_dir()]
    return f"missing data: {', '.join(str(SHARED / s) for s in missing)}" if missing else ""


def scoring_setup(quick: bool) -> tuple[Schema, RelationRules, tuple[float, float, float] | None]:
    """The schema, the relation rules without their scorer and, with ``quick``, the shipped scorer's L2 strengths."""
    schema = load_schema()
    base = load_rules(DEFAULT_RULES, schema, with_scorer=False)
    shipped = load_rules(DEFAULT_RULES, schema).scorer
    strengths = ((shipped.meta["pair_c"], shipped.meta["context_c"], shipped.meta["type_c"])
                 if quick and shipped is not None else None)
    return schema, base, strengths


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--k", type=int, default=DEFAULT_K)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--target-precision", type=float, default=0.75)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--limit", type=int, help="the first N sentences by name only (a quick check)")
    ap.add_argument("--quick", action="store_true",
                    help="the shipped scorer's L2 strengths for every fold (no inner selection)")
    args = ap.parse_args(argv)
    if missing_data():
        print(missing_data(), file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    schema, base, strengths = scoring_setup(args.quick)
    nlp = load_parser(args.model)
    s = load(args.limit, nlp)
    n = len(s.names)
    pmids = {x.split("_", 1)[0] for x in s.names}
    print(f"{n} sentences of {', '.join(SETS)}, {len(pmids)} PMIDs; {args.k} folds by PMID, seed {args.seed}; "
          f"scorer per fold: train-relations' procedure, target precision {args.target_precision}, decision "
          f"{DEFAULT_DECISION}{f' (--quick: fixed L2 strengths {strengths})' if strengths else ''}; parsed in "
          f"{time.perf_counter() - t0:.0f} s")
    counts: Counter[str] = Counter()
    ontology = load_ontology(DEFAULT_ONTOLOGY)
    keys = [s.keys[x] for x in s.names]
    pubtator = {d.pmid: d for d in map_documents(keys, schema, counts, ontology=ontology)}
    extended = {d.pmid: d for d in map_documents(extend_documents(keys, ontology, nlp, counts, keep_parses=True),
                                                 schema, counts, ontology=ontology)}
    allowed = schema_allowed(schema)
    rows: dict[str, Edits] = {k: Edits() for k in ("none", "pubtator", "build", "given", "kept")}
    folds = kfold_groups(s.names, args.k, args.seed)
    prf_all: Counter[str] = Counter()
    for fold in range(args.k):
        train, test = train_test(folds, fold)
        t1 = time.perf_counter()
        scorer, _curve = train_scorer(training_examples(s, train, schema), base, schema,
                                      target_precision=args.target_precision, decision=DEFAULT_DECISION,
                                      **({"strengths": strengths} if strengths else {}))
        rules: RelationRules = dataclasses.replace(base, scorer=scorer)
        built = {d.pmid: d for d in relate_documents([extended[x] for x in test], rules, schema, counts)}
        fold_none, fold_given, fold_prf = Edits(), Edits(), Counter[str]()
        for x in test:
            final = s.gold[x]
            rows["none"] += sentence_edits(brat.BratDocument(x, final.text), final)
            rows["pubtator"] += sentence_edits(to_brat(pubtator[x], schema), final)
            build = to_brat(built[x], schema)
            rows["build"] += sentence_edits(build, final)
            given, _ = suggest_relations(without_relations(final), rules, schema, nlp, allowed)
            given_edits = sentence_edits(given, final)
            rows["given"] += given_edits
            fold_given += given_edits
            fold_none += sentence_edits(brat.BratDocument(x, final.text), final)
            fold_prf += prf_counts(given, final)
            kept, _ = suggest_relations(corrected_with_build_relations(build, final), rules, schema, nlp, allowed)
            rows["kept"] += sentence_edits(kept, final)
        prf_all += fold_prf
        print(f"fold {fold + 1}/{args.k}: {len(train)} training, {len(test)} held-out sentences, "
              f"{time.perf_counter() - t1:.0f} s; suggestions on the final entities: relation edits "
              f"{saved(fold_given, fold_none).split(', ')[-1]}; {prf(fold_prf)}", flush=True)
    none = rows["none"]
    build, given, kept = rows["build"], rows["given"], rows["kept"]
    workflow = Edits(**{**dataclasses.asdict(build), **{k: v for k, v in dataclasses.asdict(given).items()
                                                         if k.startswith("relation") or k == "modality"}})
    workflow_kept = Edits(**{**dataclasses.asdict(build), **{k: v for k, v in dataclasses.asdict(kept).items()
                                                              if k.startswith("relation") or k == "modality"}})
    given_rel_only = Edits(**{k: v for k, v in dataclasses.asdict(given).items()
                              if k.startswith("relation") or k == "modality"})
    print(f"\nedits per 100 sentences (out of fold), {n} sentences: total, entity, relation edits\n")
    table = [("no pre-annotation", none),
             ("PubTator alone", rows["pubtator"]),
             ("end-to-end build", build),
             ("relations given the final entities (suggestions)", given_rel_only),
             ("workflow: build entities + suggestions (phase 1 without build relations)", workflow),
             ("workflow: build entities and relations + suggestions (phase 1 keeps build relations)", workflow_kept)]
    for title, e in table:
        print(f"{title}\n  {per100(e, n)}")
        if e is given_rel_only:
            print(f"  {saved(e, none).split(', ')[-1]}")
            print(f"  exact arguments, directed, strict types: {prf(prf_all)}")
        elif e is not none:
            print(f"  {saved(e, none)}")
    better = "without" if workflow.total <= workflow_kept.total else "with"
    print(f"\nphase-1 documents {better} build-time relations save more: "
          f"{100 * workflow.total / n:.1f} vs {100 * workflow_kept.total / n:.1f} edits per 100 sentences "
          f"(without vs with); {time.perf_counter() - t0:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
