"""``pgx-corpus stats | agreement | evaluate | harmonize | export``: commands on brat directories.

Thin handlers: parse arguments, call [`pipeline.brat.stats`][pipeline.brat.stats],
[`pipeline.brat.agreement`][pipeline.brat.agreement], [`pipeline.brat.evaluate`][pipeline.brat.evaluate],
[`pipeline.brat.harmonize`][pipeline.brat.harmonize], [`pipeline.brat.export`][pipeline.brat.export], print
or write the results.  With ``--json`` exactly one JSON object goes to stdout; logs and warnings go to
stderr.  Every command checks its input first ([`load_checked`][pipeline.brat.checked.load_checked]): each
problem
(missing ``.txt``, orphan ``.ann``, out-of-range or mismatched span, non-UTF-8 bytes, unparsable
line) is printed as ``file:line: message`` on stderr, the broken documents are left out of what
the command computes or writes, and a line per directory says how many were excluded (also in
the JSON, ``input_check``).  Exit codes: 0 done (on the sound documents), 2 bad input (missing
directory, bad config or decision file).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pipeline.brat import agreement as agreement_mod
from pipeline.brat import evaluate as evaluate_mod
from pipeline.brat import export as export_mod
from pipeline.brat import harmonize as harmonize_mod
from pipeline.brat import stats as stats_mod
from pipeline.brat.checked import CheckedCollection, filtered_copy, load_all_checked
from pipeline.brat.standoff import BratTextError
from pipeline.cli import import_commands as import_mod
from pipeline.cli.exitcodes import refusal_code
from pipeline.errors import InputError
from pipeline.schema import DEFAULT_SCHEMA, SchemaError, load_schema


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n")


def _report_issues(issues: list[str], checks: Sequence[CheckedCollection] = ()) -> None:
    """Print issues on stderr, except those the input check already printed."""
    shown = {str(p) for c in checks for p in c.problems}
    for issue in issues:
        if issue not in shown:
            print(f"pgx-corpus: {issue}", file=sys.stderr)


@contextlib.contextmanager
def _checked_input(command: str, directories: Sequence[Path], *, share_texts: bool = False, textless: bool = False
                   ) -> Iterator[tuple[list[Path], list[CheckedCollection]]]:
    """Check the input directories; yield directories holding only their sound documents, and the checks.

    Problems go to stderr (``file:line: message``) with one summary line per
    directory.  When nothing is excluded the directories themselves are
    yielded; otherwise filtered copies in a scratch directory (removed after).
    ``share_texts``: an ``.ann`` without ``.txt`` may be checked against the
    text of the same document in another of the directories; ``textless``
    (scoring): one without any text is kept, its offsets unchecked.
    """
    collections = load_all_checked(directories, share_texts=share_texts, textless=textless)
    for collection in collections:
        for problem in collection.problems:
            print(str(problem), file=sys.stderr)
        if collection.excluded or collection.problems:
            print(f"pgx-corpus {command}: {collection.summary()}", file=sys.stderr)
    if not any(c.excluded for c in collections):
        yield list(directories), collections
        return
    with tempfile.TemporaryDirectory(prefix="pgx-checked-") as scratch:
        yield filtered_copy(collections, Path(scratch)), collections


def _input_check(collections: Sequence[CheckedCollection]) -> dict[str, Any]:
    return {str(c.directory): {"documents": c.total, "excluded": c.excluded, "problems": [str(p) for p in c.problems]}
            for c in collections}


def _relabel(value: Any, names: dict[str, str]) -> Any:
    """``value`` with the scratch copies' paths replaced by the directories the user gave."""
    if isinstance(value, str):
        for copy, original in names.items():
            value = value.replace(copy, original)
        return value
    if isinstance(value, dict):
        return {_relabel(k, names): _relabel(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_relabel(v, names) for v in value]
    return value


def _excluded_exit(collections: Sequence[CheckedCollection]) -> int:
    """0: the command computed what it could from the sound documents (the excluded ones are on stderr)."""
    return 0


def _guard(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn expected input errors into a message and exit code 2 (1 once the command has begun writing)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except (FileNotFoundError, NotADirectoryError, SchemaError, harmonize_mod.DecisionError,
                export_mod.ExportConfigError, BratTextError) as exc:  # BratTextError: file:line, not UTF-8
            print(f"pgx-corpus {args.command}: {exc}", file=sys.stderr)
            return refusal_code() if isinstance(exc, InputError) else 2

    return run


def _existing_dir(value: str) -> Path:
    path = Path(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value}: not a directory")
    return path


def _positive_int(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value}: expected a whole number >= 1")
    return int(value)


def _add_schema(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="schema file (default config/schema.yaml)")


# --- stats -------------------------------------------------------------------------

def run_stats(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus stats``: corpus statistics of a brat collection (and of a pipeline run).

    Markdown on stdout, or one JSON object with ``--json``; ``--out`` also writes CSV tables and PNG
    charts (each path written is named on stderr).

    Args:
        args: The parsed arguments (``brat_dir``, ``pipeline``, ``json``, ``out``, ``schema``).

    Returns:
        ``OK`` (0): computed on the sound documents (the excluded ones are listed on stderr).

    Raises:
        FileNotFoundError: For a missing input (the registered handler turns this and the errors below
            into one ``pgx-corpus COMMAND: ...`` line and exit 2).
        pipeline.schema.SchemaError: For a bad schema file.
    """
    schema = load_schema(args.schema)
    counts: Counter[str] = Counter()
    with _checked_input("stats", [args.brat_dir]) as ((brat_dir,), checks):
        result = _relabel(stats_mod.brat_stats(brat_dir, schema, counts), {str(brat_dir): str(args.brat_dir)})
    result["input_check"] = _input_check(checks)
    result["counts"] = dict(sorted(counts.items()))
    if args.pipeline is not None:
        result["pipeline"] = stats_mod.pipeline_stats(args.pipeline)
    _report_issues(result["parse_issues"], checks)
    if args.out is not None:
        for path in stats_mod.write_outputs(result, args.out):
            print(f"pgx-corpus stats: wrote {path}", file=sys.stderr)
    if args.json:
        _emit_json(result)
    else:
        sys.stdout.write(stats_mod.format_markdown(result))
    return _excluded_exit(checks)


# --- agreement ----------------------------------------------------------------------

def run_agreement(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus agreement``: pairwise inter-annotator agreement, or pre-annotation scores.

    With ``--preannotation`` the first directory is the pre-annotation, scored against each other one
    (Table 10 settings).  Reads only; a table (or ``--json``) on stdout.

    Args:
        args: The parsed arguments (``directories``, at least two; ``json``, ``preannotation``,
            ``source``, ``schema``).

    Returns:
        ``OK`` (0): computed on the sound documents (the excluded ones are listed on stderr).

    Raises:
        FileNotFoundError: For a missing input (the registered handler turns this and the errors below
            into one ``pgx-corpus COMMAND: ...`` line and exit 2).
        pipeline.schema.SchemaError: For a bad schema file.
    """
    schema = load_schema(args.schema)
    counts: Counter[str] = Counter()
    with _checked_input("agreement", args.directories, share_texts=True, textless=True) as (directories, checks):
        names = {str(c): str(o) for c, o in zip(directories, args.directories, strict=True)}
        if args.preannotation:
            result = agreement_mod.preannotation_scores(
                directories[0], directories[1:], schema, source=args.source, counts=counts
            )
            result = _relabel(result, names)
            text = agreement_mod.format_table10(result)
        else:
            result = _relabel(agreement_mod.agreement(directories, schema, counts), names)
            text = agreement_mod.format_agreement(result)
    result["input_check"] = _input_check(checks)
    result["counts"] = dict(sorted(counts.items()))
    _report_issues(result["parse_issues"], checks)
    if args.json:
        _emit_json(result)
    else:
        sys.stdout.write(text)
    return _excluded_exit(checks)


# --- evaluate -------------------------------------------------------------------------

def run_evaluate(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus evaluate``: score a system's output against a gold brat directory.

    A system output in BioC, PubTator or Parquet is read into a scratch brat directory first (removed
    after).  Reads only; a report (or ``--json``) on stdout.

    Args:
        args: The parsed arguments (``gold``, ``system``, ``system_format``, ``schema``, ``json``,
            ``intersection``, ``concepts_tsv``).

    Returns:
        ``OK`` (0): computed on the sound documents; ``REFUSED`` (2): the system output cannot be read.

    Raises:
        FileNotFoundError: For a missing input (the registered handler turns this and the errors below
            into one ``pgx-corpus COMMAND: ...`` line and exit 2).
        pipeline.schema.SchemaError: For a bad schema file.
    """
    counts: Counter[str] = Counter()
    concepts = (args.concepts_tsv[0], args.concepts_tsv[1]) if args.concepts_tsv else None
    # predictions in BioC, PubTator or Hugging Face Parquet are read into a scratch brat directory first
    schema = load_schema(args.schema)
    try:
        fmt = import_mod.input_format(args.system, args.system_format)
        predicted = None if fmt == "brat" else import_mod.read_input(args.system, fmt, schema)
    except import_mod.READ_ERRORS as exc:
        print(f"pgx-corpus evaluate: {args.system}: {exc}", file=sys.stderr)
        return 2
    with import_mod.as_brat_dir(args.system, predicted) as system_dir, \
            _checked_input("evaluate", [args.gold, system_dir], share_texts=True,
                           textless=True) as ((gold, system), checks):
        result = evaluate_mod.evaluate(
            gold, system, intersection=args.intersection, concepts_tsv=concepts, counts=counts, schema=schema
        )
        result = _relabel(result, {str(gold): str(args.gold), str(system): str(args.system),
                                   str(system_dir): str(args.system)})
    result["input_check"] = _input_check(checks)
    result["counts"] = dict(sorted(counts.items()))
    _report_issues(result["parse_issues"], checks)
    if args.json:
        _emit_json(result)
    else:
        sys.stdout.write(evaluate_mod.format_report(result))
    return _excluded_exit(checks)


# --- harmonize -------------------------------------------------------------------------

def run_harmonize(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus harmonize``: merge annotators' brat directories by centroid voting.

    Writes the merged documents as a brat collection in ``--out`` (document by document, not as one
    atomic directory), after applying ``--decisions``; a summary (or ``--json``) on stdout.

    Args:
        args: The parsed arguments (``directories``, ``threshold``, ``out``, ``ambiguity``,
            ``decisions``, ``json``).

    Returns:
        ``OK`` (0): merged from the sound documents (the excluded ones are listed on stderr).

    Raises:
        FileNotFoundError: For a missing input (the registered handler turns this and the error below
            into one ``pgx-corpus harmonize: ...`` line and exit 2).
        pipeline.brat.harmonize.DecisionError: For a bad decisions file, before anything is written.
    """
    counts: Counter[str] = Counter()
    decisions = harmonize_mod.read_decisions(args.decisions) if args.decisions else None
    with _checked_input("harmonize", args.directories, share_texts=True) as (directories, checks):
        docs, report = harmonize_mod.harmonize(directories, args.threshold, counts)
        report = _relabel(report, {str(c): str(o) for c, o in zip(directories, args.directories, strict=True)})
    report["input_check"] = _input_check(checks)
    _report_issues(report["parse_issues"], checks)
    ambiguity_before = harmonize_mod.ambiguity_report(docs) if args.ambiguity else None
    if decisions is not None:
        docs = harmonize_mod.apply_decisions(docs, decisions, counts)
        report["decisions"] = len(decisions)
    written = harmonize_mod.write_collection(docs, args.out)
    report["written"] = written
    report["out"] = str(args.out)
    report["counts"] = dict(sorted(counts.items()))
    if ambiguity_before is not None:
        report["ambiguity"] = ambiguity_before
        if decisions is not None:
            report["ambiguity_after_decisions"] = harmonize_mod.ambiguity_report(docs)
    if args.json:
        _emit_json(report)
        return _excluded_exit(checks)
    print(f"Harmonized {report['documents']} documents from {len(args.directories)} directories "
          f"(threshold {args.threshold}): {report['kept']} entities kept; wrote {written} documents to {args.out}")
    for d, n in report["entities"].items():
        print(f"  {d}: {n} entities" + (f", lacks {len(report['missing'][d])} document(s)" if report["missing"][d]
                                         else ""))
    if ambiguity_before is not None:
        print("\n## Terms annotated with more than one type\n\n| term | counts per type |\n|---|---|")
        for term, types in ambiguity_before.items():
            print(f"| {term} | " + ", ".join(f"{t} {n}" for t, n in types.items()) + " |")
        if decisions is not None:
            left = report["ambiguity_after_decisions"]
            print(f"\nAfter {len(decisions)} decision(s): {len(left)} ambiguous term(s) left")
    return _excluded_exit(checks)


# --- export ------------------------------------------------------------------------------

def run_export(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus export``: write a brat collection as PubTator, BioC, CoNLL or PMID splits.

    A training view: relation types are folded by the config's ``relation_map`` unless
    ``--no-relation-map`` ([`export`][pipeline.brat.export.export] writes ``--out``).  A summary (or
    ``--json``) on stdout.

    Args:
        args: The parsed arguments (``brat_dir``, ``format``, ``out``, ``seed``, ``ratios``, ``config``,
            ``no_relation_map``, ``conll_scheme``, ``pubtator_level``, ``json``, ``schema``).

    Returns:
        ``OK`` (0): exported from the sound documents (the excluded ones are listed on stderr).

    Raises:
        FileNotFoundError: For a missing input (the registered handler turns this and the errors below
            into one ``pgx-corpus export: ...`` line and exit 2).
        pipeline.schema.SchemaError: For a bad schema file.
        pipeline.brat.export.ExportConfigError: For a bad export configuration.
    """
    schema = load_schema(args.schema)
    config = export_mod.load_export_config(args.config)
    if args.no_relation_map:
        config = dataclasses.replace(config, relation_map={})
    if args.conll_scheme:
        config = dataclasses.replace(config, conll_scheme=args.conll_scheme)
    if args.pubtator_level:
        config = dataclasses.replace(config, pubtator_level=args.pubtator_level)
    ratios = export_mod.parse_ratios(args.ratios, "--ratios") if args.ratios else None
    with _checked_input("export", [args.brat_dir]) as (_, checks):
        docs = checks[0].documents
    issues = checks[0].problems
    counts: Counter[str] = Counter({"parse_issues": len(issues), "excluded_documents": len(checks[0].excluded)})
    summary = export_mod.export(docs, args.format, args.out, schema, config=config, ratios=ratios, seed=args.seed,
                                counts=counts)
    summary["parse_issues"] = [str(i) for i in issues]
    summary["input_check"] = _input_check(checks)
    if args.json:
        _emit_json(summary)
    else:
        print(f"pgx-corpus export: wrote {args.format} to {args.out}: "
              + ", ".join(f"{k} {v}" for k, v in summary["counts"].items()))
        if summary["relation_map"]:
            print("pgx-corpus export: relation types folded (a training view; --no-relation-map keeps them as "
                  "annotated): " + ", ".join(f"{k} -> {v or 'dropped'}" for k, v in summary["relation_map"].items()))
        if "sentences" in summary:
            print(f"pgx-corpus export: sentence map (PubTator document offsets of each brat document) in "
                  f"{summary['sentences']}")
    return _excluded_exit(checks)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``stats``, ``agreement``, ``evaluate``, ``harmonize`` and ``export`` to the ``pgx-corpus`` parser.

    Each handler is wrapped so that expected input errors end in one line and exit 2.

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser("stats", help="corpus statistics of a brat collection (and of a pipeline run)",
                       description="Entities by type (simple/nested/discontiguous/both), relations by type and "
                       "modality, sentences with the three key groups, sentences without relation, abstracts. "
                       "Markdown on stdout; --json prints one JSON object instead.")
    p.add_argument("brat_dir", type=_existing_dir, metavar="BRAT_DIR")
    p.add_argument("--pipeline", type=Path, metavar="RUN_DIR",
                   help="a run directory (runs/<hash>/ with manifest.json) for retrieval/pre-annotation figures")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--out", type=Path, metavar="DIR", help="also write CSV tables and PNG bar charts here")
    _add_schema(p)
    p.set_defaults(func=_guard(run_stats))

    p = sub.add_parser("agreement", help="inter-annotator agreement (entities, relations) or pre-annotation scores",
                       description="Pairwise agreement over all pairs of brat directories (the first of a pair is "
                       "the reference): entities in exact/partial span x strict/hierarchy/any type, relations "
                       "also directed/undirected; per type, micro and macro. Documents are matched by name; "
                       "documents present in only one directory are reported and not scored. With "
                       "--preannotation the first directory is the pre-annotation, scored against each other "
                       "directory in the four settings of Table 10 of the PGxCorpus paper.")
    p.add_argument("directories", nargs="+", type=_existing_dir, metavar="DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--preannotation", action="store_true", help="first DIR is the pre-annotation (Table 10)")
    p.add_argument("--source", default="pubtator",
                   help="schema mapping applied to pre-annotation types (default pubtator: Gene -> Gene_or_protein)")
    _add_schema(p)
    p.set_defaults(func=_guard(_need_two(run_agreement)))

    p = sub.add_parser("evaluate", help="score a system's brat output against gold (NER, concepts, linking)",
                       description="NER (exact type and offsets, micro P/R/F1, per type), document-level concept "
                       "indexing (PharmaCoNER), mention- and document-level linking (MedMentions), and entities and "
                       "relations in the PGxCorpus paper's settings (exact/partial spans, strict/hierarchy/any "
                       "type, directed/undirected) with relation modality on the matched relations. Gold "
                       "documents missing from the system count as false negatives unless --intersection.")
    p.add_argument("gold", type=_existing_dir, metavar="GOLD")
    p.add_argument("system", type=import_mod.existing_path, metavar="SYSTEM",
                   help="system output: a brat directory, a BioC .xml/.json file, a PubTator file, or Parquet "
                   "(a file or directory of the release's bigbio_kb or source config)")
    p.add_argument("--system-format", choices=("auto", "brat", *import_mod.FORMATS[1:]), default="auto",
                   help="format of SYSTEM (default: a directory with .ann files is brat, else from the name)")
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="schema file (default config/schema.yaml)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--intersection", action="store_true",
                   help="score only documents present in both (the PharmaCoNER script's behaviour)")
    p.add_argument("--concepts-tsv", nargs=2, type=Path, metavar=("GOLD_TSV", "SYSTEM_TSV"),
                   help="concept indexing from doc_id<TAB>concept files (file or directory of .tsv) "
                   "instead of normalization lines")
    p.set_defaults(func=_guard(run_evaluate))

    p = sub.add_parser("harmonize", help="merge annotators' brat directories (centroid voting), resolve ambiguity",
                       description="Centroid algorithm (Lewin et al. 2012): per entity type, characters and joins "
                       "between adjacent annotation-internal characters are voted; spans with at least THRESHOLD "
                       "votes are kept. An annotator's spans of a type that nest or overlap are voted layer by "
                       "layer (outermost first), so a span inside another of its type is not merged into it; "
                       "discontiguous entities are kept whole when THRESHOLD annotators made them. "
                       "--ambiguity lists terms annotated with several types; --decisions applies "
                       "a TSV/YAML file of term, action (remove | force TYPE | drop TYPE).")
    p.add_argument("directories", nargs="+", type=_existing_dir, metavar="DIR")
    p.add_argument("--threshold", type=_positive_int, default=2, help="minimum votes (default 2)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output brat directory")
    p.add_argument("--ambiguity", action="store_true", help="report terms annotated with different types")
    p.add_argument("--decisions", type=Path, metavar="FILE", help="disambiguation decisions (TSV or YAML)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=_guard(run_harmonize))

    p = sub.add_parser("export", help="export a brat collection: PubTator, BioC XML/JSON, CoNLL, PMID splits",
                       description="A training view: relation types are folded first by the relation_map of "
                       "--config (config/export.yaml: metabolizes and transports -> influences), and the summary "
                       "says so; --no-relation-map keeps them as annotated, as `release` always does.")
    p.add_argument("brat_dir", type=_existing_dir, metavar="BRAT_DIR")
    p.add_argument("--format", required=True, choices=export_mod.FORMATS)
    p.add_argument("--out", type=Path, required=True, metavar="PATH", help="output file (directory for splits)")
    p.add_argument("--seed", type=int, help="split seed (default from config/export.yaml)")
    p.add_argument("--ratios", help="train,dev,test ratios (default 60,20,20)")
    p.add_argument("--config", type=Path, default=export_mod.DEFAULT_EXPORT_CONFIG,
                   help="export config (default config/export.yaml)")
    p.add_argument("--no-relation-map", action="store_true", help="keep relation types as they are")
    p.add_argument("--conll-scheme", choices=["outermost", "layers"], help="override conll_scheme of the config")
    p.add_argument("--pubtator-level", choices=["abstract", "sentence"],
                   help="override pubtator_level of the config: one PubTator document per PMID (abstract, "
                   "default) or per brat document (sentence)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    _add_schema(p)
    p.set_defaults(func=_guard(run_export))


def _need_two(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        if len(args.directories) < 2:
            print(f"pgx-corpus {args.command}: give at least two directories", file=sys.stderr)
            return 2
        return handler(args)

    return run
