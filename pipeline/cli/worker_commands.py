"""``pgx-corpus worker``: join a running build through Luigi's central scheduler (``luigid``).

A build started with ``pgx-corpus build --scheduler-host H --scheduler-port P``
registers its tasks with ``luigid``; every per-shard task is an ordinary
pending task there.  ``pgx-corpus worker --scheduler-host H --scheduler-port P``
runs a Luigi *assistant* worker: it asks the scheduler for any pending task
of ``pipeline.tasks``, of any build, and runs it, so the shards of a build are
shared between the build process and every worker, on this host or others.

Checks before any work:

* the project imports (``pipeline.tasks`` and its dependencies);
* the scheduler answers (through ``luigi.rpc.RemoteScheduler``, see
  [`pipeline.tasks.run`][pipeline.tasks.run]);
* the configuration of a build already on the scheduler is the one this
  process sees: the build records the digests of its config files, source
  fingerprint, model version and code version under
  ``OUT/cache/config/<digest>.json`` and passes the digest to every task;
  a difference is reported file by file and the worker exits (status 2)
  without running anything.  Every task repeats the check before it runs
  (``pipeline.tasks.params.verify_config``), so a build started later is
  covered too: the task fails with the same message, never writing where
  the build does not expect it, and the worker stops asking for work.

A worker started before any build waits for one on the scheduler, then checks
its configuration and loads the lexicon and the spaCy model its shards need
(``pipeline.tasks.build.warm_caches``) before asking for work: the loading
overlaps the build's own first, single-process steps (reading the sources).
Idle Luigi workers ask again after ``[worker] wait_interval`` + up to
``wait_jitter`` seconds (``luigi.cfg``: 0.1 + 0.2, against Luigi's 1 + 5), so
a worker takes a new shard within a fraction of a second.
``pgx-corpus build --wait-for-workers N`` makes the build, once its tasks are
on the scheduler, wait for N registered workers before running any
([`WaitingWorkerFactory`][pipeline.tasks.run.WaitingWorkerFactory]).

``--exit-when-idle SECONDS`` stops the worker once the scheduler, after it
has held pgx-corpus tasks, has had none pending or running for that long (0,
the default: run until interrupted; SIGUSR1 makes Luigi finish the running
tasks and stop).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

TASK_MODULE = "pipeline.tasks"
"""The module whose tasks a worker runs."""


def configuration_problems(infos: dict[str, dict[str, Any]]) -> tuple[Any, list[str]]:
    """Compare this process's configuration with that of the builds on the scheduler.

    Args:
        infos: Scheduled tasks, from [`pipeline_tasks`][pipeline.tasks.run.pipeline_tasks].

    Returns:
        A task carrying a build record (the first that differs, else the first; None when none carries
            one), and the differences file by file (empty when this process sees the same configuration).
    """
    from pipeline.tasks.build import task_class
    from pipeline.tasks.params import config_differences

    checked: set[tuple[str, str]] = set()
    first: Any = None
    for info in infos.values():
        params = info.get("params") or {}
        digest, out = params.get("config_digest", ""), params.get("out", "")
        if not digest or (digest, out) in checked:
            continue
        checked.add((digest, out))
        task = task_class(info["name"]).from_str_params(params)  # type: ignore[union-attr]
        first = first or task
        problems = config_differences(task)
        if problems:
            return task, problems
    return first, []


def warm_sample(infos: dict[str, dict[str, Any]]) -> Any:
    """Pick a scheduled task whose parameters say what the build's shards load (lexicon, model).

    The most derived one: the build's root task (``BuildCorpus``) carries every
    parameter; a ``Documents`` task alone says nothing about the model.

    Args:
        infos: Scheduled tasks, from [`pipeline_tasks`][pipeline.tasks.run.pipeline_tasks].

    Returns:
        The task rebuilt from its parameters, or None when no task carries run parameters.
    """
    from pipeline.tasks.build import task_class
    from pipeline.tasks.params import RunParams

    best: Any = None
    best_depth = 0
    for info in infos.values():
        cls = task_class(str(info.get("name")))
        if cls is None or not issubclass(cls, RunParams):
            continue
        # How far down the parameter classes (SourceParams ... BatchParams) the task is.
        depth = sum(1 for c in cls.__mro__ if isinstance(c, type) and issubclass(c, RunParams))
        if depth > best_depth:
            best, best_depth = cls.from_str_params(info.get("params") or {}), depth  # type: ignore[attr-defined]
    return best


def wait_for_build(url: str, stop: threading.Event, interval: float = 0.25) -> dict[str, dict[str, Any]]:
    """Poll the scheduler until it holds pgx-corpus tasks.

    Args:
        url: The scheduler's base URL.
        stop: Set to stop waiting (e.g. by a signal handler).
        interval: Seconds between polls.

    Returns:
        The pending and running tasks found; empty when ``stop`` was set first.

    Raises:
        SchedulerUnreachableError: If the scheduler stops answering.
    """
    from pipeline.tasks.run import pipeline_tasks

    while not stop.wait(interval):
        scheduled = pipeline_tasks(url)
        if scheduled:
            return scheduled
    return {}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``worker`` subcommand to the ``pgx-corpus`` parser.

    Handler: [`run_worker`][pipeline.cli.worker_commands.run_worker].

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "worker",
        help="join a running build through a central Luigi scheduler (luigid) and run its pending tasks",
        description="Run an assistant Luigi worker: it takes pending pgx-corpus tasks (shards of every stage) "
        "from the central scheduler that a `pgx-corpus build --scheduler-host H --scheduler-port P` uses. The "
        "build's --out must be visible here at the same path (shared filesystem), with the same configuration "
        "files, sources and versions: the worker checks and refuses otherwise.",
    )
    p.add_argument("--scheduler-host", required=True, help="host of the central scheduler (luigid)")
    p.add_argument("--scheduler-port", type=int, default=8082, help="port of the central scheduler (default 8082)")
    p.add_argument("--workers", type=int, default=1, help="task processes of this worker (default 1)")
    p.add_argument("--exit-when-idle", type=float, default=0.0, metavar="SECONDS",
                   help="stop once the scheduler, after holding pgx-corpus tasks, has had none pending or "
                   "running for SECONDS (default 0: run until interrupted)")
    p.set_defaults(func=run_worker)


def _idle_watch(url: str, seconds: float, stop: threading.Event, seen: bool = False) -> None:
    """Send SIGUSR1 to this process (Luigi: finish running tasks, ask for no more) once idle long enough.

    Idle time counts from the first time a build was seen: now when ``seen`` (the worker found one
    before it started; a small build may be over before the first look here), else on the scheduler.
    """
    from pipeline.tasks.run import SchedulerUnreachableError, pipeline_tasks

    idle_since: float | None = time.monotonic() if seen else None
    while not stop.wait(min(1.0, seconds / 4)):
        try:
            # RUNNING first: a short list; PENDING (every task of a build, with its parameters, which
            # luigid serializes at every call) only when nothing runs
            busy = bool(pipeline_tasks(url, ("RUNNING",))) or bool(pipeline_tasks(url, ("PENDING",)))
        except SchedulerUnreachableError as exc:
            log.warning("%s", exc)
            busy = False
        now = time.monotonic()
        if busy:
            idle_since = now
        elif idle_since is not None and now - idle_since >= seconds:
            # Repeated while idle: a signal sent before Luigi installed its handler is not lost.
            log.info("no pending or running pgx-corpus task for %.0f s: stopping", seconds)
            os.kill(os.getpid(), signal.SIGUSR1)


def run_worker(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus worker``: an assistant Luigi worker for the builds on a central scheduler.

    Waits for a build when there is none yet, checks that this host's configuration is the build's,
    loads what the shards need, then runs pending pgx-corpus tasks until stopped (SIGUSR1, Ctrl-C, or
    ``--exit-when-idle``).  A task refused for a configuration mismatch stops the worker.

    Args:
        args: The parsed arguments (``scheduler_host``, ``scheduler_port``, ``workers``,
            ``exit_when_idle``).

    Returns:
        0 (``OK``) stopped with the build done, or before any build appeared; 1 (``ERROR``) a task failed
            or the scheduler does not answer; 2 (``REFUSED``) bad arguments, the pipeline cannot be imported,
            or this host's configuration differs from the build's (listed on stderr).
    """
    try:
        import importlib

        importlib.import_module(TASK_MODULE)  # every task of the package, registered with Luigi
        from pipeline.corpus.config_record import ConfigMismatchError
        from pipeline.tasks import run
        from pipeline.tasks.build import warm_caches
    except ImportError as exc:
        print(
            f"pgx-corpus worker: cannot import the pipeline ({TASK_MODULE}): {exc}. Install the project and its "
            "dependencies on this host, at the version the build uses (`pip install -e <checkout>`).",
            file=sys.stderr,
        )
        return 2
    if args.workers < 1:
        print("pgx-corpus worker: --workers must be at least 1", file=sys.stderr)
        return 2
    url = run.scheduler_url(args.scheduler_host, args.scheduler_port)
    stopped = threading.Event()
    try:
        scheduled = run.pipeline_tasks(url)
        if not scheduled:
            # Nothing to check or load yet: wait for a build (SIGUSR1 or Ctrl-C stop the wait).
            log.info("no pgx-corpus build on the scheduler at %s yet: waiting for one", url)
            previous = signal.signal(signal.SIGUSR1, lambda signum, frame: stopped.set())
            try:
                scheduled = wait_for_build(url, stopped)
            finally:
                signal.signal(signal.SIGUSR1, previous)
            if stopped.is_set():
                log.info("stopped before any build appeared")
                return 0
        sample, problems = configuration_problems(scheduled)
        warm = warm_sample(scheduled)
    except run.SchedulerUnreachableError as exc:  # a service that did not answer
        print(f"pgx-corpus worker: {exc}", file=sys.stderr)
        return 1
    if problems:
        print(
            f"pgx-corpus worker: refusing to join the build writing to {sample.out}: this host's configuration "
            "differs from the build's:",
            file=sys.stderr,
        )
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 2
    # An assistant asks for work until told to stop (SIGUSR1) or, with --exit-when-idle, until idle.
    run.configure(keep_alive=True)
    if warm is not None:
        # Load the lexicon and the model before asking for work (while the build reads its sources),
        # not in the first shard; with --workers > 1 the forked task processes share them.
        began = time.monotonic()
        warm_caches(warm)
        log.info("loaded what the build's shards need in %.1f s", time.monotonic() - began)
    main_pid = os.getpid()
    refused: list[str] = []

    def on_failure(task: Any, exception: BaseException) -> None:
        if isinstance(exception, ConfigMismatchError):
            # Never run more of a build whose configuration this host does not share.
            print(f"pgx-corpus worker: {exception}", file=sys.stderr)
            refused.append(str(exception))
            os.kill(main_pid, signal.SIGUSR1)

    stop = threading.Event()
    watcher = None
    if args.exit_when_idle > 0:
        signal.signal(signal.SIGUSR1, lambda signum, frame: None)  # until Luigi installs its own handler
        watcher = threading.Thread(target=_idle_watch, args=(url, args.exit_when_idle, stop, True), daemon=True)
        watcher.start()
    log.info("worker joining the scheduler at %s with %d process(es)", url, args.workers)
    try:
        with run.on_failure(on_failure):
            result = run.run_assistant(args.scheduler_host, args.scheduler_port, args.workers)
    finally:
        stop.set()
    log.info("%s", result.summary)
    if refused:
        return 2
    return 0 if result.scheduling_succeeded else 1
