"""The shard engine: stage outputs under ``work/``, per-shard tasks, their wrappers, progress and step clocks."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import luigi

from pipeline import memo, store
from pipeline.documents import Document
from pipeline.tasks.params import SOURCE_PARAMS, StageTask, param_hash
from pipeline.tasks.sources import Documents
from pipeline.tasks.targets import FileTarget

log = logging.getLogger(__name__)

class ShardTask(StageTask):
    """One shard of a per-document stage: read the upstream shard, transform, write.

    A shard's result is kept in the reuse cache by input content ([`pipeline.memo`][pipeline.memo]), and
    its documents in a per-document memo: an unchanged shard of a rebuild is filled from the cache while
    Luigi checks what to run, and a changed one computes only its new documents.
    """

    shard: int = luigi.IntParameter()
    record_type: ClassVar[type] = Document

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A shard's requirements depend on its parameters only: make them once per instance.
        # Luigi, input() and the reuse-cache checks of complete() ask for them thousands of
        # times in a build of 40 blocks, and each ask cloned tasks again.
        super().__init_subclass__(**kwargs)
        requires = cls.__dict__.get("requires")
        if requires is not None and not getattr(requires, "_once", False):

            def requires_once(self: Any, _requires: Any = requires) -> Any:
                found = self.__dict__.get("_requirements")
                if found is None:
                    found = self.__dict__["_requirements"] = _requires(self)
                return found

            requires_once._once = True  # type: ignore[attr-defined]
            requires_once.__doc__ = requires.__doc__
            cls.requires = requires_once  # type: ignore[method-assign]

    def output(self) -> luigi.LocalTarget:
        """``shard-NNNNNN.jsonl.gz`` in the stage directory."""
        return FileTarget(str(self.stage_dir() / store.shard_name(self.shard)))

    def input_path(self) -> str:
        """Return the upstream shard this shard reads.

        Returns:
            Its path.
        """
        upstream = self.input()
        if isinstance(upstream, luigi.LocalTarget) and upstream.path.endswith("/"):
            return str(Path(upstream.path) / store.shard_name(self.shard))
        return str(upstream.path)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Any]:
        """Return the stage's records for some documents (the stage function, with its configuration loaded).

        Args:
            docs: The input documents, in shard order.
            counts: Updated with the stage's counts.

        Returns:
            The output records.
        """
        raise NotImplementedError

    def input_files(self) -> list[Path]:
        """Return the files whose content decides this shard's result (besides the parameters).

        Returns:
            File paths.
        """
        return [Path(self.input_path())]

    def stage_key(self) -> str:
        """Return the hash of the stage's parameters without the sources, which keys its caches.

        Returns:
            A [`param_hash`][pipeline.tasks.params.param_hash].
        """
        return param_hash(self, exclude=("shard", *SOURCE_PARAMS), sources=False)

    def reuse_path(self) -> Path:
        """Return where the result for this input content and these stage parameters is kept across runs.

        Returns:
            The reuse cache entry (see [`reuse_path`][pipeline.memo.reuse_path]).
        """
        return memo.reuse_path(Path(self.out), self.stage, self.stage_key(), self.input_files())

    def complete(self) -> bool:
        """Whether the shard is written, after filling it from the reuse cache if its result is known."""
        # A shard whose result is in the reuse cache is filled from it here, while Luigi checks
        # what to run: unchanged shards of a rebuild never become tasks (and upstream shards
        # of the same block are checked, and filled, first).
        if super().complete():
            self.keep_in_cache()
            return True
        return self.fill_from_cache()

    def keep_in_cache(self) -> None:
        """Put the complete output in the reuse cache if it is missing there.

        See [`keep_in_cache`][pipeline.memo.keep_in_cache].
        """
        if all(path.exists() for path in self.input_files()):
            memo.keep_in_cache(Path(self.output().path), self.reuse_path())

    def fill_from_cache(self) -> bool:
        """Fill this shard's output from the reuse cache if its input is there and its result known.

        Returns:
            True when the output was written.
        """
        if not all(dep.complete() for dep in luigi.task.flatten(self.requires())):
            return False
        if not all(path.exists() for path in self.input_files()):
            return False
        return memo.fill_from_cache(Path(self.output().path), self.reuse_path())

    def memo_mode(self) -> str | None:
        """Return how the per-document memo calls the transform (see [`pipeline.memo`][pipeline.memo]).

        Returns:
            ``stream``, ``per_document``, or None for no memo.
        """
        return "stream"

    def memo_transform(self) -> Any:
        """Return the transform the memo calls.

        Returns:
            By default [`transform`][pipeline.tasks.engine.ShardTask.transform].
        """
        return self.transform

    def memo_index(self) -> Path:
        """Return this shard's memo index.

        Returns:
            Its path (see [`index_path`][pipeline.memo.index_path]).
        """
        return memo.index_path(Path(self.out), self.stage, self.stage_key(), self.shard)

    def run(self) -> None:
        """Compute the shard, reusing what the memo knows, then keep it in the reuse cache."""
        if self.fill_from_cache():
            return
        output = Path(self.output().path)
        counts_path = store.shard_counts_path(output)
        reuse = self.reuse_path()
        mode = self.memo_mode()
        if mode is None:
            counts: Counter[str] = Counter()
            records = self.transform(store.read_documents(self.input_path()), counts)
            with self.output().temporary_path() as tmp:
                store.write_records(tmp, with_progress(self, records))
                store.write_counts(counts_path, counts)
            memo.remember(output, reuse, counts)
            return
        index = self.memo_index()
        transform = self.memo_transform()
        progress = Progress(self)

        def reported(docs: Iterator[Document], counts: Counter[str]) -> Iterable[Any]:
            return progress(transform(docs, counts))

        result = memo.compute_shard(Path(self.input_path()), reported, index, reuse,
                                    per_document=mode == "per_document")
        log.info("%s shard %d: %d documents reused, %d computed", self.get_task_family(), self.shard,
                 result.reused, result.computed)
        with self.output().temporary_path() as tmp:
            memo.write_shard(Path(tmp), result, counts_path, index, reuse)
        # After the output (an entry made before it would make a killed run's rerun count the shard as
        # reused); a kill before it is repaired by complete() (keep_in_cache)
        memo.remember(output, reuse, result.counts)


class Progress:
    """Records a shard task has produced so far, as its Luigi status message every ``every`` records.

    Counted over the whole shard however many times the transform is called (the per-document
    memo calls it once per document), and nothing at the end (the task's status says it is done):
    on a central scheduler every message is an HTTP request, and one per document, about 3,000 in
    a 3,000-record build, cost more task time than the records' own pre-annotation.
    """

    def __init__(self, task: luigi.Task, every: int = 500) -> None:
        # Luigi sets this callback when a worker runs the task; None otherwise.
        self.report: Any = task.set_status_message or (lambda message: None)
        self.family = task.get_task_family()
        self.every = every
        self.n = 0

    def __call__(self, records: Iterable[Any]) -> Iterator[Any]:
        """Pass ``records`` through, counting them."""
        for record in records:
            self.n += 1
            if self.n % self.every == 0:
                self.report(f"{self.family} shard: {self.n:,} records")
            yield record


def with_progress(task: luigi.Task, records: Iterable[Any], every: int = 500) -> Iterator[Any]:
    """Pass records through, reporting how many so far as the task's Luigi status message.

    Args:
        task: The task whose status message is set.
        records: The records.
        every: Report every this many records.

    Returns:
        The records, unchanged.
    """
    return Progress(task, every)(records)


class StageWrapper(StageTask):
    """All shards of a stage: one shard task per document shard, then the sum of their counts.

    When the document shards already exist as the task is scheduled (a build on a central
    scheduler writes them first, see ``pgx-corpus build``), the shard tasks are static
    requirements: the process that schedules the build adds every one of them to the scheduler,
    so its own worker, not only the assistant that happens to run the wrapper, may run them, and
    they are on the scheduler before any wrapper runs.  Otherwise they are only known once the
    documents are written, and [`run`][pipeline.tasks.engine.StageWrapper.run] yields them (dynamic
    dependencies).
    """

    shard_task: ClassVar[type[ShardTask]]

    def requires(self) -> list[luigi.Task]:
        """The documents, and every shard task when the documents are written already."""
        # Decided once per task instance: Luigi asks again just before run(), and requirements
        # that grew meanwhile (the documents written since) would be "unfulfilled at run time".
        cached = self.__dict__.get("_requirements")
        if cached is None:
            documents = self.documents()
            shards = self.shard_tasks() if documents.complete() else []
            cached = self.__dict__["_requirements"] = [documents, *shards]
        return list(cached)

    def documents(self) -> Documents:
        """Return the documents task of this build.

        Returns:
            The task.
        """
        return self.clone(Documents)

    def shard_tasks(self) -> list[ShardTask]:
        """Return one task per document shard (the documents must be written).

        Returns:
            The shard tasks.
        """
        return [self.clone(self.shard_task, shard=k) for k in store.shard_ids(self.documents().output().path)]

    def output(self) -> luigi.LocalTarget:
        """The stage's ``counts.json``."""
        return FileTarget(str(self.counts_path()))

    def run(self) -> Iterator[list[ShardTask]]:
        """Yield the shard tasks, then write the sum of their counts."""
        tasks = self.shard_tasks()
        yield tasks  # nothing left to run when they were requirements already
        self.write_params()
        totals = store.sum_counts(store.shard_counts_path(t.output().path) for t in tasks)
        totals["shards"] = len(tasks)
        with self.output().temporary_path() as tmp:
            store.write_counts(tmp, totals)


class StepClock:
    """The time a streaming step spends itself, without the time it waits for its source.

    Wrap the step's input with [`source`][pipeline.tasks.engine.StepClock.source] and its output with
    [`step`][pipeline.tasks.engine.StepClock.step]: the step's own time is the time spent producing its
    outputs minus the time spent producing its inputs, which are pulled from inside it.

    Attributes:
        upstream: Seconds spent producing the step's input so far.
        total: Seconds spent producing the step's output so far (the input's production included).
    """

    def __init__(self) -> None:
        self.upstream = 0.0
        self.total = 0.0

    def source(self, items: Iterable[Any]) -> Iterator[Any]:
        """Pass the step's input through, timing each item's production.

        Args:
            items: The step's input.

        Returns:
            The items, unchanged.
        """
        return _timed(items, self._add_upstream)

    def step(self, items: Iterable[Any], report: Callable[[float], None]) -> Iterator[Any]:
        """Pass the step's output through, timing it, and report the step's own seconds at its end.

        Args:
            items: The step's output (an iterator pulling from [`source`][pipeline.tasks.engine.StepClock.source]).
            report: Called once with the step's own seconds when the output is exhausted.

        Yields:
            The items, unchanged.
        """
        yield from _timed(items, self._add_total)
        report(self.total - self.upstream)

    def _add_upstream(self, seconds: float) -> None:
        self.upstream += seconds

    def _add_total(self, seconds: float) -> None:
        self.total += seconds


_END = object()


def _timed(items: Iterable[Any], add: Callable[[float], None]) -> Iterator[Any]:
    """Pass ``items`` through, giving ``add`` the seconds each one (and the end) took to produce."""
    iterator = iter(items)
    while True:
        started = time.perf_counter()
        item = next(iterator, _END)
        add(time.perf_counter() - started)
        if item is _END:
            return
        yield item
