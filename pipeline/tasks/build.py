"""The build's root tasks and the helpers of the process that runs them."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import luigi

from pipeline import store
from pipeline.corpus.stages import STAGES
from pipeline.process_cache import loaded
from pipeline.tasks.params import BatchParams, ExtendParams, PreannotateParams, param_hash, significant_params
from pipeline.tasks.sources import Documents, Fetch, Search
from pipeline.tasks.stages import (
    ExportBrat,
    Extended,
    Filtered,
    Mapped,
    Preannotated,
    PrepareBatches,
    Sample,
    Sentences,
)
from pipeline.tasks.targets import FileTarget, hold_out_lock, output_dir

log = logging.getLogger(__name__)

# --- the whole build -------------------------------------------------------------------------

class BuildDocuments(BatchParams, luigi.WrapperTask):
    """The build's document shards (and, online, its search and fetch), scheduled before the rest.

    ``pgx-corpus build --scheduler-host`` completes this first, so that when it schedules
    [`BuildCorpus`][pipeline.tasks.build.BuildCorpus] every stage wrapper lists its shard tasks as requirements
    (see [`StageWrapper`][pipeline.tasks.engine.StageWrapper]) and both the build and the workers may run every
    shard.  It carries every parameter of the build: a worker that sees only this task on the scheduler
    still knows what the shards will need (the lexicon, the model) and loads it meanwhile.
    """

    def requires(self) -> Documents:
        """The documents."""
        return self.clone(Documents)


STAGE_TASKS: dict[str, type[luigi.Task]] = {
    "documents": Documents,
    "sentences": Sentences,
    "preannotated": Preannotated,
    "extended": Extended,
    "mapped": Mapped,
    "filtered": Filtered,
    "sampled": Sample,
    "brat": ExportBrat,
    "batches": PrepareBatches,
}


class BuildCorpus(BatchParams, luigi.Task):
    """Every stage up to ``until`` -> ``runs/<hash>/manifest.json`` (and ``brat/`` published)."""

    until: str = luigi.ChoiceParameter(default="auto", choices=("auto", *STAGES), var_type=str)

    def last_stage(self) -> str:
        """Return the last stage built.

        Returns:
            ``until``, or for ``auto`` the batches with a roster and the brat collection without.
        """
        if self.until != "auto":
            return self.until
        return "batches" if self.roster else "brat"

    def stages(self) -> list[str]:
        """Return the stages this build runs, in order (extension only when on).

        Returns:
            Names of [`STAGES`][pipeline.corpus.stages.STAGES].
        """
        wanted = STAGES[: STAGES.index(self.last_stage()) + 1]
        return [s for s in wanted if s != "extended" or self.extend]

    def requires(self) -> dict[str, luigi.Task]:
        """Every stage's task (and, under plain ``luigi --module``, the ``--out`` lock)."""
        hold_out_lock(self)
        return {stage: self.clone(STAGE_TASKS[stage]) for stage in self.stages()}

    def run_dir(self) -> Path:
        """Return the run's directory.

        Returns:
            ``OUT/runs/<hash of every significant parameter>``.
        """
        return Path(self.out) / "runs" / param_hash(self, exclude=())

    def output(self) -> luigi.LocalTarget:
        """The run's ``manifest.json``."""
        return FileTarget(str(self.run_dir() / "manifest.json"))

    def complete(self) -> bool:
        """Whether the manifest is written and the published ``brat/`` is this run's."""
        # The published brat/ must be this run's, not a later build's with other parameters.
        if not super().complete():
            return False
        if "brat" in self.stages():
            marker = Path(self.out) / "brat" / ".run"
            return marker.exists() and marker.read_text().strip() == self.run_dir().name
        return True

    def run(self) -> None:
        """Write the run's manifest, and publish its collection unless the build had failures."""
        from pipeline.corpus.manifest import build_manifest
        from pipeline.corpus.outdir import finish_run

        inputs = self.input()
        outputs = {stage: output_dir(inputs[stage]) for stage in self.stages()}
        manifest = build_manifest(
            params=significant_params(self, exclude=()),
            outputs=outputs,
            search=store.read_json(self.clone(Search).output().path) if self.query else None,
            fetch=store.read_json(self.clone(Fetch).output().path) if self.query else None,
            config_files=self.config_files(),
            seeds={"sample": self.seed, "batches": self.batch_seed},
            model=self.model if self.extend else None,
        )
        collection = Path(outputs["brat"]) if "brat" in outputs else None
        finish_run(manifest, Path(self.output().path), Path(self.out), collection, self.run_dir().name)

    def config_files(self) -> dict[str, str]:
        """Return the versioned inputs whose content decides the result, named for the manifest.

        Returns:
            Name -> path (see [`config_file_names`][pipeline.corpus.manifest.config_file_names]).
        """
        from pipeline.corpus.manifest import config_file_names

        names = {self.schema: "schema", self.ontology: "ontology", self.roster: "roster",
                 self.triggers: "triggers", self.previous_batches: "previous_batches"}
        return config_file_names(self.config_inputs(), names)


def warm_caches(task: luigi.Task) -> None:
    """Load the lexicon and the spaCy model in this process before Luigi forks task processes.

    With ``--workers N`` > 1 every task runs in a forked child: what the parent has loaded is shared
    with each child (copy on write), so no shard task loads them again.  ``gc.freeze()`` keeps the
    collector from touching, and so copying, those objects in the children.  A file that cannot be
    loaded is left for the task that needs it to report.

    Args:
        task: The build's root task (its parameters say what to load).
    """
    import gc

    if isinstance(task, PreannotateParams) and (task.annotator == "local" or task.fallback_local):
        from pipeline.nlp.local_annotator import LexiconMissingError, LocalAnnotator

        try:
            LocalAnnotator.load(Path(task.lexicon) if task.lexicon else None)
        except LexiconMissingError:
            pass  # the task that needs it reports the error
    if isinstance(task, ExtendParams) and task.extend:
        from pipeline.nlp import spacy_models

        try:
            spacy_models.load_parser(task.model)
        except spacy_models.ModelNotAvailableError:
            pass
        else:
            if task.filter == "pgx":
                from pipeline.corpus.select import DEFAULT_FILTER
                from pipeline.nlp import parse_gate

                try:
                    loaded(parse_gate.gate_for, task.ontology, task.schema, DEFAULT_FILTER, extra=(task.model,))
                except (OSError, ValueError):
                    pass
    if isinstance(task, ExtendParams):
        from pipeline import schema
        from pipeline.corpus import select
        from pipeline.nlp import ontology

        try:
            loaded(ontology.load_ontology, task.ontology)
            loaded(schema.load_schema, task.schema)
            loaded(select.load_filter_settings, select.DEFAULT_FILTER)
        except (OSError, ValueError):
            pass  # the task that reads the file reports the error, naming it
    gc.freeze()


def stage_output_dirs(task: BuildCorpus) -> dict[str, Path]:
    """Return where each stage of a build writes (whether or not it has run).

    Args:
        task: The build.

    Returns:
        Stage name -> output directory.
    """
    return {stage: Path(output_dir(task.clone(STAGE_TASKS[stage]).output())) for stage in task.stages()}


def forget_failed_fetch(task: BuildCorpus) -> bool:
    """If this build's fetch left failed batches, remove its outputs so a rerun retries them.

    Raw batches already in the cache stay: the retry downloads only the PMIDs that are still missing.

    Args:
        task: The build.

    Returns:
        True when something was removed.
    """
    from pipeline.corpus.outdir import remove_stage_outputs

    if not task.query:
        return False
    fetch = task.clone(Fetch)
    path = Path(fetch.output().path)
    if not path.exists() or not store.read_json(path).get("failed"):
        return False
    log.warning("previous fetch of this run had failed batches: retrying them")
    path.unlink()
    remove_stage_outputs(stage_output_dirs(task).values())
    manifest = Path(task.output().path)
    if manifest.exists():
        manifest.unlink()
    return True


def task_class(name: str) -> type[luigi.Task] | None:
    """Return the task class of this package with a Luigi task family name.

    Args:
        name: A task family, as the central scheduler lists it (``ExtendShard``).

    Returns:
        The class, or None when no task of ``pipeline.tasks`` has that name.
    """
    for module in ("pipeline.tasks.sources", "pipeline.tasks.stages", __name__):  # imported above
        found = getattr(sys.modules[module], name, None)
        if isinstance(found, type) and issubclass(found, luigi.Task) and found.__module__.startswith("pipeline.tasks"):
            return found
    return None
