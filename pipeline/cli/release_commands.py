"""``pgx-corpus campaign finalize | campaign append``, ``find``, ``decisions apply``, ``release``.

Thin handlers over [`pipeline.campaign.finalize`][pipeline.campaign.finalize],
[`pipeline.campaign.append`][pipeline.campaign.append], [`pipeline.campaign.find`][pipeline.campaign.find],
[`pipeline.campaign.decisions`][pipeline.campaign.decisions] and
[`pipeline.campaign.release`][pipeline.campaign.release].  Exit codes
([`pipeline.cli.exitcodes`][pipeline.cli.exitcodes]): 0 done; 2 bad input (missing directory, bad roster, manifest,
criteria or decisions file) or problems that stopped the write (decisions, release); 3 done with documents
held back (finalize: a senior's discard is a finished decision, not one) or blocked (append).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pipeline.brat import export as export_mod
from pipeline.brat.standoff import read_directory
from pipeline.campaign import append as append_mod
from pipeline.campaign import decisions as decisions_mod
from pipeline.campaign import finalize as finalize_mod
from pipeline.campaign import find as find_mod
from pipeline.campaign.batches import ManifestError, RosterError
from pipeline.campaign.release.command import release
from pipeline.campaign.release.read import ReleaseError, ReleaseInputs
from pipeline.cli.campaign_commands import add_campaign_command
from pipeline.cli.exitcodes import ExitCode, refusal_code
from pipeline.errors import InputError
from pipeline.schema import DEFAULT_SCHEMA, SchemaError, load_schema

_EXPECTED = (FileNotFoundError, NotADirectoryError, SchemaError, export_mod.ExportConfigError, RosterError,
             ManifestError, finalize_mod.FinalizeError, find_mod.PatternError, decisions_mod.DecisionsError)


def _guard(label: str, handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except _EXPECTED as exc:
            print(f"pgx-corpus {label}: {exc}", file=sys.stderr)
            return refusal_code() if isinstance(exc, InputError) else ExitCode.REFUSED

    return run


def _emit_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n")


def _add_schema(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="schema file (default config/schema.yaml)")


def _add_export_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=export_mod.DEFAULT_EXPORT_CONFIG,
                   help="export settings with the relation_map (default config/export.yaml)")


# --- campaign finalize / append ----------------------------------------------------------------

def run_finalize(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign finalize``: collect the seniors' signed-off documents into FINAL.

    [`finalize`][pipeline.campaign.finalize.finalize] writes ``--out`` as one brat collection, replaced in
    one step.  Held-back documents (``file:line``) and pending ones go to stderr, a summary (or ``--json``)
    to stdout; the registered handler turns the expected input errors (missing directory, bad schema, export
    configuration, roster, manifest, criteria or decisions file) into one line and exit 2.

    Args:
        args: The parsed arguments (``campaign_dir``, ``out``, ``accept_agreed``, ``schema``, ``config``,
            ``json``).

    Returns:
        ``ExitCode.OK`` every phase-2 document finished or discarded by its senior;
            ``ExitCode.WORK_LEFT`` FINAL written, documents held back, pending a sign-off or not in phase 2 yet.
    """
    schema = load_schema(args.schema)
    config = export_mod.load_export_config(args.config)
    result = finalize_mod.finalize(args.campaign_dir, args.out, schema, export_config=config,
                                   accept_agreed=args.accept_agreed)
    for name, found in sorted(result.held_back.items(), key=lambda kv: finalize_mod.doc_key(kv[0])):
        for f in found:
            print(f"pgx-corpus campaign finalize: held back {name}: {Path(args.campaign_dir) / f.file}:{f.line}: "
                  f"{f.message}", file=sys.stderr)
    for name, left in sorted(result.pending.items(), key=lambda kv: finalize_mod.doc_key(kv[0])):
        print(f"pgx-corpus campaign finalize: pending {name} ({result.senior_of.get(name, '')}): {left}",
              file=sys.stderr)
    if args.json:
        _emit_json(result.report())
    else:
        c = result.counts
        print(f"{c['documents_final']} of {c['documents_phase2']} phase-2 documents -> {args.out} "
              f"({c['signed_off']} signed off, {c['accepted_agreed']} agreed accepted without sign-off); "
              f"{c['pending']} pending a sign-off, {c['held_back']} held back (listed in "
              f"{Path(args.out) / finalize_mod.HELD_BACK_TSV}), {c['discarded']} discarded by a senior; "
              f"{c['not_in_phase2']} assigned but not in phase 2 ({c['discarded_in_phase1']} more discarded in "
              "phase 1)")
    if result.work_left:
        print(f"pgx-corpus campaign finalize: work left: {_work_left(result)}", file=sys.stderr)
        return ExitCode.WORK_LEFT
    return ExitCode.OK


def _work_left(result: finalize_mod.FinalizeResult) -> str:
    """``2 held back, 1 pending, 3 not in phase 2``: what keeps a finalize from being complete."""
    return (f"{len(result.held_back)} held back, {len(result.pending)} pending a sign-off, "
            f"{len(result.not_in_phase2)} not in phase 2 yet")


def run_append(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign append``: assign a rebuild's new documents in a running campaign.

    [`append_to_campaign`][pipeline.campaign.append.append_to_campaign] writes the new documents into
    the phase-1 collections; existing assignments and files are never moved or rewritten.  One line for
    each roster row it does not act on (a manager, a person who left or who is not in the campaign) saying
    what it did with it, then a summary (or ``--json``, with ``roster_not_acted_on``) on stdout; the
    registered handler turns the expected input errors (missing directory, bad schema, export
    configuration, roster, manifest, criteria or decisions file) into one line and exit 2.

    Args:
        args: The parsed arguments (``campaign_dir``, ``collection``, ``roster``, ``seed``, ``json``).

    Returns:
        ``ExitCode.OK`` appended; ``ExitCode.WORK_LEFT`` appended, documents blocked by existing files
            (left unassigned); ``ExitCode.REFUSED`` the rebuild's pre-annotation settings differ from the
            campaign's.
    """
    counts: Counter[str] = Counter()
    skipped: list[tuple[str, str]] = []
    try:
        rows = append_mod.append_to_campaign(args.collection, args.campaign_dir, args.roster, seed=args.seed,
                                             counts=counts, skipped=skipped)
    except append_mod.SettingsMismatchError as exc:
        print(f"pgx-corpus campaign append: {exc}", file=sys.stderr)
        return int(ExitCode.REFUSED)
    if args.json:
        _emit_json({"new_rows": [list(r) for r in rows], "counts": dict(sorted(counts.items())),
                    "roster_not_acted_on": [{"person": p, "done": what} for p, what in skipped]})
    else:
        for person, what in skipped:
            print(f"roster row {person}: {what}")
        print(f"{counts['documents_appended']} new document(s) appended ({counts['assignments:phase1']} phase-1, "
              f"{counts['assignments:phase2']} phase-2 assignments); {counts['documents_assigned_before']} "
              f"already assigned left as they are; {counts['documents_blocked']} blocked by existing files")
    return ExitCode.WORK_LEFT if counts["documents_blocked"] else ExitCode.OK


# --- find ------------------------------------------------------------------------------------------

def run_find(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus find``: list the sentences of a brat collection matching every criterion.

    Reads only.  Bad lines and bytes are reported on stderr, not fatal; the matches go to stdout as
    Markdown (or ``--json``); the registered handler turns the expected input errors (missing
    directory, bad schema, export configuration, roster, manifest, criteria or decisions file) into one
    line and exit 2.

    Args:
        args: The parsed arguments (``brat_dir``, ``keyword``, ``regex``, ``entity_type``, ``relation``,
            ``modality``, ``limit``, ``json``, ``schema``).

    Returns:
        ``OK`` (0): searched.
    """
    schema = load_schema(args.schema)
    criteria = find_mod.Criteria(args.keyword, args.regex, args.entity_type, args.relation, args.modality)
    docs, issues = read_directory(args.brat_dir)  # lenient: bad lines and bytes are reported, not fatal
    for issue in issues:
        print(f"pgx-corpus find: {issue}", file=sys.stderr)
    docs.sort(key=lambda d: finalize_mod.doc_key(d.name))
    matches = find_mod.find(docs, criteria, schema)
    shown = matches if args.limit is None else matches[: args.limit]
    if args.json:
        _emit_json({"documents": len(docs), "matched": len(matches), "matches": [m.as_dict(schema) for m in shown]})
    else:
        sys.stdout.write(find_mod.format_markdown(shown, schema, len(docs), len(matches)))
    return 0


# --- decisions apply ---------------------------------------------------------------------------------

def run_decisions_apply(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus decisions apply``: apply a homogenization decisions file to a brat collection.

    With ``--dry-run`` the unified diff goes to stdout and nothing is written.  Otherwise the changed
    ``.ann`` files are written ([`write_changes`][pipeline.campaign.decisions.write_changes]: a final
    corpus in one step, another collection document by document, each atomically) unless a change would
    not validate; the registered handler turns the expected input errors (missing directory, bad schema, export
    configuration, roster, manifest, criteria or decisions file) into one line and exit 2.

    Args:
        args: The parsed arguments (``brat_dir``, ``decisions``, ``dry_run``, ``schema``).

    Returns:
        ``ExitCode.OK`` applied (or the diff printed); ``ExitCode.REFUSED`` a change would not validate
            (problems on stderr, nothing written).
    """
    schema = load_schema(args.schema)
    decisions = decisions_mod.load_decisions(args.decisions, schema)
    counts: Counter[str] = Counter()
    changes, problems = decisions_mod.apply_decisions(args.brat_dir, decisions, schema, counts)
    for problem in problems:
        print(f"pgx-corpus decisions: {problem}", file=sys.stderr)
    if args.dry_run:
        sys.stdout.write(decisions_mod.unified_diff(changes, args.brat_dir))
    elif problems:
        print(f"pgx-corpus decisions: {len(problems)} problem(s); nothing written", file=sys.stderr)
    else:
        decisions_mod.write_changes(changes, args.brat_dir)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if not k.startswith("decision:"))
    verb = "would change" if args.dry_run else ("not written" if problems else "changed")
    print(f"pgx-corpus decisions: {len(changes)} document(s) {verb}: {summary}", file=sys.stderr)
    return ExitCode.REFUSED if problems else ExitCode.OK


# --- release -------------------------------------------------------------------------------------------

def run_release(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus release``: a citable, byte-reproducible release of a final corpus.

    [`release`][pipeline.campaign.release.command.release] writes every format, table and the datasheet to
    ``--out`` (replaced).  A summary (or ``--json``, release.json) on stdout; the registered handler turns
    the expected input errors (missing directory, bad schema, export configuration, roster, manifest,
    criteria or decisions file) into one line and exit 2.

    Args:
        args: The parsed arguments (``final``, ``out``, ``campaign``, ``preannotation``, ``manifest``,
            ``name``, ``release_version``, ``date``, ``decisions``, ``previous``, ``license``, ``author``,
            ``citation``, ``description``, ``cite_pgxcorpus_method``, ``strict_metadata``, ``schema``,
            ``config``, ``json``).

    Returns:
        0 (``OK``) released (without authors: no ``CITATION.cff``, said on stderr and in the datasheet);
            ``ExitCode.REFUSED`` something the release would state is not so (decisions not applied to
            FINAL, documents the campaign does not assign, ``--out`` inside FINAL, a licence that is not an
            SPDX id, no authors or licence with ``--strict-metadata`` ...): nothing written.
    """
    schema = load_schema(args.schema)
    inputs = ReleaseInputs(
        final=Path(args.final), campaign=args.campaign, preannotation=args.preannotation, manifest=args.manifest,
        name=args.name or "", version=args.release_version or "", date=args.date or "",
        export_config=export_mod.load_export_config(args.config), decisions=list(args.decisions),
        license=args.license or "", previous=args.previous, authors=list(args.author), citation=args.citation,
        description=args.description or "", pgxcorpus_method=args.cite_pgxcorpus_method,
        strict_metadata=args.strict_metadata,
    )
    try:
        info = release(inputs, args.out, schema)
    except ReleaseError as exc:  # refused before writing: checked before the release is staged
        print(f"pgx-corpus release: {exc}", file=sys.stderr)
        return refusal_code()
    if args.json:
        _emit_json(info)
    else:
        s = info["stats"]
        print(f"release {args.out}: {s['sentences']} sentences, {s['entities']} entities, {s['relations']} "
              f"relations; tables: {', '.join(info['tables'])}; check with sha256sum -c SHA256SUMS")
    return 0


def _register_finalize() -> None:
    """Add ``campaign finalize``."""
    p = add_campaign_command("finalize", "collect the seniors' phase-2 collections into the final corpus")
    p.description = (
        "Read CAMPAIGN_DIR/phase2/<senior>/ and write the finished documents to --out as one brat collection "
        "with its configuration files (without the campaign-only marks). Only documents a senior signed off (a "
        "Done marker) are taken; the others are pending. A signed-off document that still holds Disagreement "
        "marks or disputed (Disputed_<type>) relations, fails validation or whose text changed is held back: "
        "listed as file:line on stderr and in FINAL/held_back.tsv and FINAL/finalize.json. A senior's Discard "
        "is a decision, not work left. Relation types are kept as annotated (the relation_map of --config is a "
        "training view for `export` only); each relation keeps one note in the PGxCorpus form (hyp, neg). Exit 3 "
        "when documents are held back or pending, 0 when everything is finished.")
    p.add_argument("campaign_dir", type=Path, metavar="CAMPAIGN_DIR")
    p.add_argument("--accept-agreed", action="store_true",
                   help="also take, without a sign-off, documents both annotators agreed on (nothing to adjudicate)")
    p.add_argument("--out", type=Path, required=True, metavar="FINAL", help="final corpus directory (replaced)")
    _add_schema(p)
    _add_export_config(p)
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=_guard("campaign finalize", run_finalize))


def _register_append() -> None:
    """Add ``campaign append``."""
    p = add_campaign_command("append", "append a rebuild's new sentences to a running campaign")
    p.description = (
        "Assign the documents of --collection that CAMPAIGN_DIR/manifest.csv does not list yet (two phase-1 "
        "annotators and a senior each, balanced, seeded) and write them into the phase-1 collections. Existing "
        "assignments and files are never moved or rewritten.")
    p.add_argument("campaign_dir", type=Path, metavar="CAMPAIGN_DIR")
    p.add_argument("--collection", type=Path, required=True, metavar="BRAT_DIR",
                   help="the rebuild's brat collection (e.g. OUT/brat)")
    p.add_argument("--roster", type=Path, required=True, metavar="FILE", help="roster (same format as batches)")
    p.add_argument("--seed", type=int, default=13, help="seed for tie-breaking (default 13)")
    p.add_argument("--json", action="store_true", help="print the new assignments as one JSON object")
    p.set_defaults(func=_guard("campaign append", run_append))


def _register_find(sub: argparse._SubParsersAction) -> None:
    """Add ``find`` to the subparsers of ``pgx-corpus``.

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "find", help="list the sentences matching a keyword, regex, entity type or relation pattern",
        description="List the sentences of BRAT_DIR (e.g. FINAL) matching every given criterion, with their "
        "entities and relations (Markdown; matched hits in bold, matched annotations starred). Repeat an "
        "option for alternatives. --entity-type TYPE matches its subtypes too (TYPE= for the exact type); "
        "--relation takes RELATION or ARG1-RELATION-ARG2 with * for any, e.g. Chemical-treats-Disease; "
        "--modality Negated|Hypothetical|none finds relations by the modality of their note (hyp, neg).")
    p.add_argument("brat_dir", metavar="BRAT_DIR", help="brat collection (searched recursively)")
    p.add_argument("--keyword", action="append", default=[], metavar="WORDS",
                   help="word or phrase, case-insensitive, whole words")
    p.add_argument("--regex", action="append", default=[], metavar="REGEX", help="Python regex searched in the text")
    p.add_argument("--entity-type", action="append", default=[], metavar="TYPE",
                   help="entity type (with subtypes; TYPE= for exactly this type)")
    p.add_argument("--relation", action="append", default=[], metavar="PATTERN",
                   help="RELATION or ARG1-RELATION-ARG2 (* for any part)")
    p.add_argument("--modality", action="append", default=[], metavar="MODALITY",
                   help="a relation with this modality, read from its note: Negated, Hypothetical (or neg, hyp) "
                        "or none; with --relation, one relation must match both")
    p.add_argument("--limit", type=int, metavar="N", help="show at most N sentences")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of Markdown")
    _add_schema(p)
    p.set_defaults(func=_guard("find", run_find))


def _register_decisions(sub: argparse._SubParsersAction) -> None:
    """Add ``decisions`` and its ``apply`` to the subparsers of ``pgx-corpus``.

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    d = sub.add_parser("decisions", help="homogenization decisions applied in bulk to a brat collection",
                       description="Apply a decisions file (YAML: retype, remove, relations) to a collection.")
    dsub = d.add_subparsers(dest="decisions_command", metavar="DECISIONS_COMMAND", required=True)
    p = dsub.add_parser(
        "apply", help="apply a decisions file (with --dry-run: print the diff only)",
        description="Retype terms, remove terms (with their relations) and remap relation types in every .ann "
        "of BRAT_DIR. --dry-run prints a unified diff of the .ann files and writes nothing; otherwise the "
        "changed files are written atomically, unless a change would not validate (then nothing is written, "
        "exit 2).")
    p.add_argument("brat_dir", metavar="BRAT_DIR")
    p.add_argument("decisions", type=Path, metavar="DECISIONS", help="decisions file (YAML)")
    p.add_argument("--dry-run", action="store_true", help="print the unified diff of the .ann files; write nothing")
    _add_schema(p)
    p.set_defaults(func=_guard("decisions apply", run_decisions_apply))


def _register_release(sub: argparse._SubParsersAction) -> None:
    """Add ``release`` to the subparsers of ``pgx-corpus``.

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "release", help="a citable, byte-reproducible release of a final corpus",
        description="Write brat (+ configuration, tar.gz), BioC XML/JSON (+ key file), PubTator (+ a six-column "
        "flavour for bconv), CoNLL (outermost, layers, spacy convert), a Hugging Face dataset (Parquet: "
        "<name>_source and <name>_bigbio_kb configs, dataset card), spaCy DocBin files, 60/20/20 PMID splits "
        "(every format also per split) and 10 PMID-grouped folds, sentences.tsv, CITATION.cff, Tables 2-3 (and "
        "8-10 with --campaign / --preannotation or --manifest) as Markdown, CSV and PNG, a datasheet README.md "
        "(with what each format keeps, computed by reading it back, and provenance from --manifest), "
        "release.json and SHA256SUMS. Relation types are kept as annotated. The same inputs give byte-identical "
        "output. Nothing is stated unchecked: exit 2, nothing written, when a --decisions entry has not taken effect "
        "in FINAL, when FINAL holds documents that --campaign does not assign or that are not sentences of the "
        "--manifest build, or when --out is inside FINAL. The datasheet accounts for every assigned document; "
        "the machine's provenance notes (source=...) are not released. Authors, description and licence come "
        "from you (--author, --description, --license, or a --citation CITATION.cff): without authors no "
        "CITATION.cff is written (said on stderr and in the datasheet; --strict-metadata refuses instead, exit 2, "
        "as it does without a licence). The licence ships as its URI and, from the SPDX License List of the spdx "
        "package, its text (LICENSE.txt).")
    p.add_argument("final", metavar="FINAL", help="final corpus (from campaign finalize)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="release directory (replaced)")
    p.add_argument("--campaign", type=Path, metavar="CAMPAIGN_DIR",
                   help="FINAL's campaign directory: Tables 8-9 from its phase-1 collections, every assigned document "
                        "accounted for")
    p.add_argument("--preannotation", type=Path, metavar="BRAT_DIR",
                   help="pre-annotated collection for Table 10 (default: the brat output named in --manifest)")
    p.add_argument("--manifest", type=Path, metavar="MANIFEST",
                   help="FINAL's build manifest (OUT/runs/<hash>/manifest.json) for the datasheet's provenance; "
                        "FINAL's texts must be that build's")
    p.add_argument("--name", help="corpus name in the datasheet, the citation and the archive (default: title of "
                   "--citation, else 'corpus')")
    p.add_argument("--description", metavar="TEXT",
                   help="what the corpus is, opening the datasheet and the dataset card (default: abstract of "
                        "--citation, else none stated)")
    p.add_argument("--author", action="append", default=[], metavar="'FAMILY, GIVEN'",
                   help="a corpus author, in order (repeat the option); a value without a comma is an "
                        "organisation; replaces the authors of --citation")
    p.add_argument("--citation", type=Path, metavar="CITATION.cff",
                   help="the corpus's own CITATION.cff: its title, abstract, authors, license, preferred-citation, "
                        "references, doi and url go into the release's (an option given wins)")
    p.add_argument("--cite-pgxcorpus-method", action="store_true",
                   help="the corpus follows the PGxCorpus method: cite Legrand et al. (Sci Data 2020) as the method "
                        "in the datasheet, GUIDELINES.md and CITATION.cff references")
    p.add_argument("--strict-metadata", action="store_true",
                   help="refuse (exit 2, nothing written) when no author or no licence is given")
    p.add_argument("--release-version", metavar="VERSION", help="version label in the datasheet")
    p.add_argument("--date", metavar="YYYY-MM-DD", help="release date (datasheet and BioC; default none)")
    p.add_argument("--decisions", nargs="+", type=Path, default=[], metavar="FILE",
                   help="homogenization decisions files applied to FINAL (checked: every entry has taken effect): "
                        "copied and listed as the record")
    p.add_argument("--previous", type=Path, metavar="RELEASE_DIR",
                   help="the previous release: CHANGELOG.md lists the documents added, removed and changed since")
    p.add_argument("--license", metavar="SPDX",
                   help="the corpus licence (an SPDX id, e.g. CC-BY-NC-4.0) stated by the datasheet, the dataset "
                   "card and CITATION.cff, shipped as its URI and text (default: license of --citation, else of "
                   "--config; none given: none is stated or guessed)")
    _add_schema(p)
    _add_export_config(p)
    p.add_argument("--json", action="store_true", help="print release.json on stdout")
    p.set_defaults(func=_guard("release", run_release))


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``find``, ``decisions``, ``release`` and the ``campaign finalize``/``append`` subcommands.

    Every handler is wrapped so that expected input errors end in one ``pgx-corpus COMMAND: ...`` line and
    exit 2.

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    _register_finalize()
    _register_append()
    _register_find(sub)
    _register_decisions(sub)
    _register_release(sub)
