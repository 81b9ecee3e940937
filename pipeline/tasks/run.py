"""Running tasks with Luigi: its configuration, the central scheduler's client, a build and an assistant worker.

The command line (``pgx-corpus build``, ``pgx-corpus worker``) calls these and never imports Luigi.
Only public Luigi APIs are used: ``luigi.build``, ``luigi.rpc.RemoteScheduler``, ``luigi.worker.Worker``
(created with its own ``worker_id``), ``luigi.scheduler.Scheduler`` and the task event handlers
(``Task.event_handler`` / ``Task.remove_event_handler``).

The client of ``luigid`` is ``RemoteScheduler``: it retries as ``[core] rpc_retry_attempts`` and
``rpc_retry_wait`` say (``luigi.cfg``: 2 attempts 1 s apart, against Luigi's 3 attempts 30 s apart), so a
scheduler that does not answer is reported at once, as
[`SchedulerUnreachableError`][pipeline.tasks.run.SchedulerUnreachableError].
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import luigi
import luigi.rpc
import luigi.scheduler
import luigi.worker

from pipeline import resources
from pipeline.tasks.build import task_class

log = logging.getLogger(__name__)


class SchedulerUnreachableError(RuntimeError):
    """The central scheduler does not answer (the message names its URL)."""


def configure(*, keep_alive: bool = False, ncbi: dict[str, str] | None = None) -> None:
    """Set up Luigi's configuration for this process.

    Reads the project's own ``luigi.cfg`` when neither ``LUIGI_CONFIG_PATH`` nor a ``luigi.cfg`` in the
    working directory is there (run from anywhere), and leaves logging to ``pgx-corpus`` (Luigi adding
    its own DEBUG handler printed every line twice).

    Args:
        keep_alive: Set ``[worker] keep_alive``: the worker waits for the tasks other workers run, or,
            as an assistant, asks for work until told to stop.
        ncbi: Values for the ``[ncbi]`` section (``email``, ``api_key``); empty values are not set.
    """
    config = luigi.configuration.get_config()
    if "LUIGI_CONFIG_PATH" not in os.environ and not Path("luigi.cfg").exists():
        config.add_config_path(str(resources.LUIGI_CFG))
    config.set("core", "no_configure_logging", "true")
    if keep_alive:
        config.set("worker", "keep_alive", "true")
    for name, value in (ncbi or {}).items():
        if value:
            config.set("ncbi", name, value)


def scheduler_url(host: str, port: int) -> str:
    """Return the base URL of a central scheduler.

    Args:
        host: The ``luigid`` host.
        port: Its port.

    Returns:
        ``http://HOST:PORT/``.
    """
    return f"http://{host}:{port}/"


_CLIENTS: dict[str, luigi.rpc.RemoteScheduler] = {}


def scheduler_call(url: str, method: str, **data: Any) -> Any:
    """Make one call of luigid's API through ``luigi.rpc.RemoteScheduler``.

    Args:
        url: The scheduler's base URL ([`scheduler_url`][pipeline.tasks.run.scheduler_url]).
        method: The scheduler method (``task_list``, ``worker_list``, ``ping`` ...).
        **data: Its arguments.

    Returns:
        The scheduler's answer.

    Raises:
        SchedulerUnreachableError: If the scheduler does not answer, or answers something unreadable.
    """
    client = _CLIENTS.get(url)
    if client is None:
        configure()  # the project's retry settings, read when the client is made
        client = _CLIENTS[url] = luigi.rpc.RemoteScheduler(url)
    try:
        return getattr(client, method)(**data)
    except (luigi.rpc.RPCError, OSError, ValueError, KeyError) as exc:
        raise SchedulerUnreachableError(
            f"cannot reach the Luigi scheduler at {url} ({exc}); start `luigid --port PORT` there, or check "
            "--scheduler-host, --scheduler-port and the firewall"
        ) from exc


def pipeline_tasks(url: str, statuses: tuple[str, ...] = ("PENDING", "RUNNING")) -> dict[str, dict[str, Any]]:
    """List the tasks of this project the scheduler holds with one of some statuses.

    A status for which luigid lists too many tasks to show is skipped (each task still checks the
    configuration itself).

    Args:
        url: The scheduler's base URL.
        statuses: Luigi task statuses (``PENDING``, ``RUNNING`` ...).

    Returns:
        luigid's task information (name, parameters ...) by task id.

    Raises:
        SchedulerUnreachableError: If the scheduler does not answer.
    """
    found: dict[str, dict[str, Any]] = {}
    for status in statuses:
        listed = scheduler_call(url, "task_list", status=status, upstream_status="", search="")
        if not isinstance(listed, dict) or listed.get("num_tasks", 0) == -1:
            continue  # more than luigid lists: the per-task check still applies
        for task_id, info in listed.items():
            if isinstance(info, dict) and task_class(str(info.get("name"))) is not None:
                found[task_id] = info
    return found


def registered_workers(url: str) -> list[dict[str, Any]]:
    """List the Luigi workers registered with the scheduler.

    Args:
        url: The scheduler's base URL.

    Returns:
        luigid's information on each worker that announced itself (``host``, ``pid`` ...).

    Raises:
        SchedulerUnreachableError: If the scheduler does not answer.
    """
    listed = scheduler_call(url, "worker_list", include_running=False)
    return [w for w in listed or () if isinstance(w, dict) and "pid" in w]


def wait_for_workers(url: str, own: str, count: int, timeout: float, interval: float = 0.25) -> int:
    """Wait until enough Luigi workers of other processes are registered, or a timeout.

    The workers of this process's earlier ``luigi.build`` calls (the build's documents step) stay
    registered for a while: they are not others.

    Args:
        url: The scheduler's base URL.
        own: The id of this process's worker.
        count: How many other workers to wait for.
        timeout: The longest wait, in seconds.
        interval: Seconds between polls.

    Returns:
        How many other workers are registered when the wait ends.

    Raises:
        SchedulerUnreachableError: If the scheduler does not answer.
    """
    deadline = time.monotonic() + timeout
    here = (socket.gethostname(), os.getpid())
    while True:
        others = [w for w in registered_workers(url) if w.get("name") != own and (w.get("host"), w.get("pid")) != here]
        if len(others) >= count or time.monotonic() >= deadline:
            return len(others)
        time.sleep(interval)


class _WaitingWorker(luigi.worker.Worker):  # type: ignore[misc]
    """A worker that, once its tasks are on the scheduler, waits for other workers before running any."""

    def __init__(self, wait: WaitingWorkerFactory, worker_id: str, **kwargs: Any) -> None:
        super().__init__(worker_id=worker_id, **kwargs)
        self.wait = wait
        self.worker_id = worker_id

    def run(self) -> bool:
        wait = self.wait
        if wait.before is not None:
            wait.before()
        log.info("waiting (at most %.0f s) for %d other worker(s) on %s", wait.timeout, wait.count, wait.url)
        found = wait_for_workers(wait.url, self.worker_id, wait.count, wait.timeout, interval=0.1)
        if found < wait.count:
            log.warning("only %d other worker(s) joined within %.0f s: going on", found, wait.timeout)
        else:
            log.info("%d other worker(s) registered: running", found)
        return bool(super().run())


@dataclass
class WaitingWorkerFactory:
    """A worker factory for ``luigi.build`` whose worker waits for other workers before running anything.

    For ``pgx-corpus build --wait-for-workers``: once the build's tasks are on the scheduler, the worker
    calls ``before()``, then waits for ``count`` other workers (at most ``timeout`` seconds; a shortfall
    is logged as a warning and the build goes on).  ``luigi.build`` takes any object with these three
    methods as its ``worker_scheduler_factory``.

    Attributes:
        url: The scheduler's base URL.
        count: How many other workers to wait for.
        timeout: The longest wait, in seconds.
        before: Called once before the wait (e.g. loading the lexicon and model), or None.
    """

    url: str
    count: int
    timeout: float
    before: Callable[[], None] | None = None

    def create_local_scheduler(self) -> luigi.scheduler.Scheduler:
        """Return an in-process scheduler, as Luigi's default factory does.

        Returns:
            The scheduler.
        """
        return luigi.scheduler.Scheduler(prune_on_get_work=True, record_task_history=False)

    def create_remote_scheduler(self, url: str) -> luigi.rpc.RemoteScheduler:
        """Return the client of a central scheduler.

        Args:
            url: The scheduler's URL.

        Returns:
            The client.
        """
        return luigi.rpc.RemoteScheduler(url)

    def create_worker(self, scheduler: Any, worker_processes: int, assistant: bool = False) -> luigi.worker.Worker:
        """Return the waiting worker, with an id of its own (how it tells itself from the others).

        Args:
            scheduler: The scheduler it talks to.
            worker_processes: Its task processes.
            assistant: Whether it runs any pending task.

        Returns:
            The worker.
        """
        worker_id = f"pgx-corpus-build {socket.gethostname()} {os.getpid()} {uuid.uuid4().hex[:12]}"
        return _WaitingWorker(self, worker_id, scheduler=scheduler, worker_processes=worker_processes,
                              assistant=assistant)


@contextlib.contextmanager
def on_failure(callback: Callable[[Any, BaseException], None]) -> Iterator[None]:
    """Call ``callback(task, exception)`` for every task that fails while the block runs.

    Args:
        callback: The handler (Luigi's ``Event.FAILURE``).

    Yields:
        Nothing; the handler is removed at the end of the block.
    """
    luigi.Task.event_handler(luigi.Event.FAILURE)(callback)
    try:
        yield
    finally:
        luigi.Task.remove_event_handler(luigi.Event.FAILURE, callback)


@dataclass
class RunResult:
    """What a run of Luigi tasks gave.

    Attributes:
        scheduling_succeeded: Whether every task was scheduled without errors.
        status: Luigi's status code name (``SUCCESS``, ``FAILED`` ...).
        summary: Luigi's detailed summary.
        raw: Luigi's own result (``luigi.execution_summary.LuigiRunResult``).
    """

    scheduling_succeeded: bool
    status: str
    summary: str
    raw: Any = field(repr=False, default=None)


def _result(raw: Any) -> RunResult:
    return RunResult(bool(raw.scheduling_succeeded), str(raw.status.name), str(raw.summary_text), raw)


@dataclass
class BuildRun:
    """How ``pgx-corpus build`` runs its root task.

    Attributes:
        workers: Luigi workers (task processes).
        scheduler_host: The central scheduler's host, or None for the local scheduler.
        scheduler_port: Its port.
        wait_for_workers: With a central scheduler, how many other workers to wait for once the build's
            tasks are on it (0: none).
        wait_timeout: The longest such wait, in seconds.
        warm: Called before the wait (loading what the shards need), or None.
    """

    workers: int = 1
    scheduler_host: str | None = None
    scheduler_port: int = 8082
    wait_for_workers: int = 0
    wait_timeout: float = 600.0
    warm: Callable[[], None] | None = None

    def scheduler(self) -> dict[str, Any]:
        """Return the keyword arguments of ``luigi.build`` for the scheduler.

        Returns:
            ``scheduler_host`` and ``scheduler_port``, or ``local_scheduler``.
        """
        if self.scheduler_host:
            return {"scheduler_host": self.scheduler_host, "scheduler_port": self.scheduler_port}
        return {"local_scheduler": True}


def run_build(task: Any, documents: Any, how: BuildRun, failures: list[str]) -> RunResult:
    """Run a build's root task with Luigi, its documents first.

    The documents first: then the build's stage wrappers list their shard tasks as requirements, so the
    build adds every shard to the scheduler itself and may run any of them (Luigi lets a non-assistant
    worker run only the tasks it added), instead of the shards a worker added when it ran a wrapper being
    left to that worker.  In one process too: one pass over the whole graph instead of a round of
    scheduling per stage wrapper, each checking every task again.  With a central scheduler, a failed
    task makes Luigi finish the running tasks and ask for no more (SIGUSR1), and the build waits for the
    tasks other workers still run ([`wait_for_other_workers`][pipeline.tasks.run.wait_for_other_workers]).

    Args:
        task: The build's root task (``BuildCorpus``).
        documents: Its documents step (``BuildDocuments``), run first when the build is not complete.
        how: Workers and scheduler.
        failures: Receives one ``Family failed: error`` line per failed task.

    Returns:
        The result of the last ``luigi.build`` run.
    """
    main_pid = os.getpid()
    remote = bool(how.scheduler_host)

    def failed(failed_task: luigi.Task, exception: BaseException) -> None:
        failures.append(f"{failed_task.get_task_family()} failed: {exception}")
        if remote:
            import signal

            os.kill(main_pid, signal.SIGUSR1)  # Luigi: finish the running tasks, ask for no more

    scheduler = how.scheduler()
    waiting = None
    if remote and how.wait_for_workers > 0 and not task.complete():
        url = scheduler_url(str(how.scheduler_host), how.scheduler_port)
        waiting = WaitingWorkerFactory(url, how.wait_for_workers, how.wait_timeout, how.warm)
    with on_failure(failed):
        steps = [task] if task.complete() else [documents, task]
        for step in steps:
            extra = {"worker_scheduler_factory": waiting} if step is task and waiting is not None else {}
            result = _result(luigi.build([step], workers=how.workers, detailed_summary=True, **scheduler, **extra))
            if remote and not failures:
                result = wait_for_other_workers(step, how, result)
            if failures or not step.complete():
                break
    return result


def wait_for_other_workers(task: Any, how: BuildRun, result: RunResult) -> RunResult:
    """Wait for the tasks other workers still run, then schedule again what is left.

    With a central scheduler, the build's worker stops once none of its tasks is pending, even when
    another worker is still running the last ones (the final task included): wait for them, and
    schedule again whatever is left, until the build is complete or nothing moves.  A scheduler that
    stops answering is logged as an error.

    Args:
        task: The Luigi task being built.
        how: Workers and scheduler.
        result: The result of the last ``luigi.build`` run.

    Returns:
        The result of the last ``luigi.build`` run (the one given when nothing was run again).
    """
    url = scheduler_url(str(how.scheduler_host), how.scheduler_port)
    while not task.complete():
        try:
            running = pipeline_tasks(url, ("RUNNING",))
        except SchedulerUnreachableError as exc:
            log.error("%s", exc)
            return result
        if running:
            time.sleep(0.25)  # the last task of another worker: its end is what the build waits for
            continue
        again = _result(luigi.build([task], workers=how.workers, detailed_summary=True, **how.scheduler()))
        if not again.scheduling_succeeded or (not task.complete() and not pipeline_tasks(url, ("RUNNING",))):
            return again
        result = again
    return result


def run_assistant(host: str, port: int, workers: int) -> RunResult:
    """Run an assistant Luigi worker: it runs any pending task of the central scheduler until stopped.

    Args:
        host: The scheduler's host.
        port: Its port.
        workers: Task processes.

    Returns:
        The run's result, once the worker stopped (SIGUSR1, or idle with ``keep_alive`` off).
    """
    return _result(luigi.build([], assistant=True, workers=workers, scheduler_host=host, scheduler_port=port,
                               detailed_summary=True))
