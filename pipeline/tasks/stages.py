"""The build's stage tasks: retrieval, documents, and one shard task and wrapper per per-document stage."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import luigi

from pipeline import store
from pipeline.documents import Document, SentenceRecord
from pipeline.tasks.engine import ShardTask, StageWrapper, StepClock
from pipeline.tasks.params import (
    SOURCE_PARAMS,
    BatchParams,
    BratParams,
    ExtendParams,
    FilterParams,
    MapParams,
    PreannotateParams,
    SampleParams,
    SentenceParams,
    StageTask,
    as_paths,
    param_hash,
    pubtator,
    significant_params,
)
from pipeline.tasks.sources import Documents
from pipeline.tasks.targets import DirectoryTarget, hold_out_lock, output_dir

log = logging.getLogger(__name__)

class SplitSentencesShard(SentenceParams, ShardTask):
    """Document shard -> the same documents with sentence spans."""

    stage = "02_sentences"

    def requires(self) -> Documents:
        """The document shards (and, under plain ``luigi --module``, the ``--out`` lock)."""
        hold_out_lock(self)
        return self.clone(Documents)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
        """Split the documents' title and abstract into sentences.

        Args:
            docs: The input documents, in shard order.
            counts: Updated with the stage's counts.

        Returns:
            The documents with their sentence spans.
        """
        from pipeline.nlp import sentences

        return sentences.split_documents(docs, counts)


class Sentences(SentenceParams, StageWrapper):
    """All document shards -> sentence shards."""

    stage = "02_sentences"
    shard_task = SplitSentencesShard


class SplitAnnotationFiles(PreannotateParams, StageTask):
    """PubTator-format annotation dumps -> the records of our PMIDs, one small file per document shard."""

    stage = "03_annotation_files"

    def requires(self) -> Documents:
        """The document shards."""
        return self.clone(Documents)

    def output(self) -> luigi.LocalTarget:
        """The stage directory, complete with its marker."""
        return DirectoryTarget(str(self.stage_dir()) + "/")

    def run(self) -> None:
        """Split the annotation files by document shard."""
        from pipeline.nlp import preannotate

        counts: Counter[str] = Counter()
        wanted = (d.pmid for d in store.iter_directory(self.input().path, Document))
        with self.output().temporary_path() as tmp:
            summary = preannotate.shard_annotation_files(
                as_paths(self.annotation_files), Path(tmp), wanted, self.shard_size, counts,
                skip_bad_lines=self.skip_bad_lines,
            )
            store.write_json(Path(tmp) / "sources.json", summary)
            store.write_counts(Path(tmp) / "counts.json", counts)


class PreannotateShard(PreannotateParams, ShardTask):
    """Sentence shard -> documents with key entities (PubTator API, PubTator files or local)."""

    stage = "03_preannotated"

    def requires(self) -> dict[str, luigi.Task]:
        """The sentence shard, and the split annotation files with ``pubtator-file``."""
        deps: dict[str, luigi.Task] = {"sentences": self.clone(SplitSentencesShard)}
        if self.annotation_files and self.annotator == "pubtator-file":
            deps["annotations"] = self.clone(SplitAnnotationFiles)
        return deps

    def input_path(self) -> str:
        """Return the sentence shard this shard reads.

        Returns:
            Its path.
        """
        return str(self.input()["sentences"].path)

    def input_files(self) -> list[Path]:
        """Return the files whose content decides this shard's result: the sentences and the annotations.

        Returns:
            File paths.
        """
        return [Path(self.input_path()), *self.annotation_sources()]

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
        """Pre-annotate the documents' key entities with the configured annotator.

        Args:
            docs: The input documents, in shard order.
            counts: Updated with the stage's counts.

        Returns:
            The documents with their entities.
        """
        from pipeline.nlp import preannotate

        return preannotate.preannotate(docs, preannotation_config(self, self.annotation_sources()), counts)

    def memo_mode(self) -> str | None:
        """Return how the memo calls the transform: per document with the local annotator, else no memo.

        Returns:
            ``per_document`` or None.
        """
        # The PubTator API and files are queried for the whole shard (shard-level counts): no memo.
        return "per_document" if self.annotator == "local" else None

    def memo_transform(self) -> Any:
        """Return the transform the memo calls, with the local annotator loaded once per process.

        Returns:
            A transform taking documents and counts.
        """
        from pipeline.nlp import local_annotator, preannotate

        config = preannotation_config(self, self.annotation_sources())
        annotator = local_annotator.load_once(Path(self.lexicon) if self.lexicon else None)

        def transform(docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
            return preannotate.preannotate(docs, config, counts, local_annotator=annotator)

        return transform

    def annotation_sources(self) -> tuple[Path, ...]:
        """Return this shard's part of the annotation files (each dump was split once, not read per shard).

        Returns:
            The files to read.
        """
        from pipeline.nlp import preannotate

        if "annotations" not in self.input():
            return as_paths(self.annotation_files)
        split_dir = Path(self.input()["annotations"].path)
        summary = store.read_json(split_dir / "sources.json")
        return preannotate.shard_annotation_sources(split_dir, self.shard, summary)


def preannotation_config(task: PreannotateParams, annotation_files: tuple[Path, ...] = ()) -> Any:
    """Return the pre-annotation settings of a task, with the ``[pubtator]`` section of ``luigi.cfg``.

    Args:
        task: The task.
        annotation_files: The PubTator or BioC files to read annotations from.

    Returns:
        A [`PreannotationConfig`][pipeline.nlp.preannotate.PreannotationConfig].
    """
    from pipeline.nlp.preannotate import PreannotationConfig

    cfg = pubtator()
    return PreannotationConfig(
        annotator=task.annotator,
        # Documents read with --pubtator already carry their annotations.
        pubtator_files=annotation_files,
        api_base_url=cfg.base_url,
        cache_dir=Path(task.out) / "cache" / "pubtator",
        fallback_local=task.fallback_local,
        lexicon=Path(task.lexicon) if task.lexicon else None,
        skip_bad_lines=task.skip_bad_lines,
        batch_size=cfg.batch_size,
        requests_per_second=cfg.requests_per_second,
        timeout=cfg.timeout,
        max_tries=cfg.max_tries,
        backoff=cfg.backoff,
    )


class Preannotated(PreannotateParams, StageWrapper):
    """All sentence shards -> pre-annotated shards."""

    stage = "03_preannotated"
    shard_task = PreannotateShard


class ExtendShard(ExtendParams, ShardTask):
    """Pre-annotated shard -> documents with composite entities (dependency parse + ontology)."""

    stage = "04_extended"

    def requires(self) -> PreannotateShard:
        """The pre-annotated shard."""
        return self.clone(PreannotateShard)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
        """Build composite entities from a dependency parse and the ontology.

        Args:
            docs: The input documents, in shard order.
            counts: Updated with the stage's counts.

        Returns:
            The documents with their composite entities (and parses, with relations on).
        """
        from pipeline.corpus.select import DEFAULT_FILTER
        from pipeline.nlp import extend

        # under --filter pgx, the sentences that cannot pass the filter are not parsed
        gate = (Path(self.schema), DEFAULT_FILTER) if self.filter == "pgx" else None
        return extend.extend_from_files(docs, counts, ontology_path=Path(self.ontology), model=self.model,
                                        batch_size=self.parse_batch_size, gate=gate, keep_parses=self.relations)


class Extended(ExtendParams, StageWrapper):
    """All pre-annotated shards -> extended shards."""

    stage = "04_extended"
    shard_task = ExtendShard


class MapShard(MapParams, ShardTask):
    """Extended (or, with --no-extend, pre-annotated) shard -> typed annotations, and relation proposals.

    With relations on, the relation step runs here, on the mapped documents while extension's parses
    are in memory (they are consumed and never written further): the documents are read and
    written once for both.  Its own time (the time spent in the relation step, not in mapping) is
    logged per shard, ``relation step: <seconds> s``, which ``bench/scale.py`` reads.
    """

    stage = "05_mapped"

    def requires(self) -> ShardTask:
        """The extended shard, or with ``--no-extend`` the pre-annotated one."""
        return self.clone(ExtendShard) if self.extend else self.clone(PreannotateShard)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
        """Type the annotations with the schema (and the learned model), then propose relations.

        Args:
            docs: The input documents, in shard order.
            counts: Updated with the stage's counts (mapping's, and the relation step's: their keys
                differ, see [`pipeline.nlp.relations`][pipeline.nlp.relations]).

        Returns:
            The documents with typed annotations and, with relations on, their relations and no
            parses.
        """
        from pipeline.nlp import typemap

        mapped = typemap.map_from_files(docs, counts, schema_path=Path(self.schema), ontology_path=Path(self.ontology))
        if model_dir := self.learned_model():
            from pipeline.nlp import learned

            mapped = learned.apply_documents(mapped, learned.load_model(model_dir), counts)
        if not self.relations:
            return mapped
        from pipeline.nlp.relations.documents import relate_from_files

        clock = StepClock()
        related = relate_from_files(clock.source(mapped), counts,
                                    rules_path=Path(self.relation_rules), schema_path=Path(self.schema))
        return clock.step(related, lambda seconds: log.info("%s shard %d: relation step: %.3f s",
                                                             self.get_task_family(), self.shard, seconds))


class Mapped(MapParams, StageWrapper):
    """All shards -> mapped shards (with relation proposals when relations are on)."""

    stage = "05_mapped"
    shard_task = MapShard


class FilterShard(FilterParams, ShardTask):
    """Mapped shard -> well-formed sentences that pass the content rule (sentence records)."""

    stage = "06_filtered"

    def requires(self) -> ShardTask:
        """The mapped shard."""
        return self.clone(MapShard)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[SentenceRecord]:
        """Keep the well-formed sentences that pass the content rule.

        Args:
            docs: The input documents, in shard order.
            counts: Updated with the stage's counts.

        Returns:
            The kept sentences, as sentence records.
        """
        from pipeline.corpus import select

        return select.filter_from_files(docs, self.filter, counts, schema_path=Path(self.schema))


class Filtered(FilterParams, StageWrapper):
    """All mapped shards -> filtered sentence shards."""

    stage = "06_filtered"
    shard_task = FilterShard


class Sample(SampleParams, StageTask):
    """Filtered sentence pool -> seeded sample (stable when the pool grows), sharded like the pool."""

    stage = "07_sampled"

    def requires(self) -> dict[str, luigi.Task]:
        """The filtered pool, and the mapped documents (for trigger phrases)."""
        return {"filtered": self.clone(Filtered), "mapped": self.clone(Mapped)}

    def output(self) -> luigi.LocalTarget:
        """The stage directory, complete with its marker."""
        return DirectoryTarget(str(self.stage_dir()) + "/")

    def run(self) -> None:
        """Sample the pool."""
        from pipeline.corpus import sample

        counts: Counter[str] = Counter()
        with self.output().temporary_path() as tmp:
            sample.write_sample(
                Path(self.input()["filtered"].path).parent, Path(tmp), counts,
                n=None if self.sample == "all" else int(self.sample), seed=self.seed,
                per_abstract=self.per_abstract or None, triggered_pmids=self.triggered_pmids(),
                trigger_fraction=self.trigger_fraction if self.trigger_fraction >= 0 else None,
                shard_size=self.shard_size, keys_path=Path(self.out) / "cache" / "memo" / self.stage / "keys.json",
                members_cache=Path(self.out) / "cache" / "sampled",
            )
            store.write_counts(Path(tmp) / "counts.json", counts)
            store.write_json(Path(tmp) / "params.json", significant_params(self))

    def triggered_pmids(self) -> set[str] | None:
        """Return the PMIDs of abstracts containing a trigger phrase (stratified mode only).

        Returns:
            The PMIDs, or None when sampling is not stratified.
        """
        from pipeline.corpus import sample

        if not self.triggers or self.trigger_fraction < 0:
            return None
        phrases = sample.load_trigger_phrases(self.triggers)
        docs = store.iter_directory(Path(self.input()["mapped"].path).parent, Document)
        return sample.pmids_with_triggers(docs, phrases)


class ExportBrat(BratParams, StageTask):
    """Sample -> brat collection (txt/ann per sentence + annotation/visual/tools/kb configuration)."""

    stage = "08_brat"

    def requires(self) -> Sample:
        """The sample."""
        return self.clone(Sample)

    def output(self) -> luigi.LocalTarget:
        """``collection/`` in the stage directory, complete with its marker."""
        return DirectoryTarget(str(self.stage_dir() / "collection") + "/")

    def run(self) -> None:
        """Export the sample, linking the unchanged sentences' files to the previous export's."""
        from pipeline import schema
        from pipeline.corpus import brat_export

        counts: Counter[str] = Counter()
        out = Path(self.out)
        key = param_hash(self, exclude=("shard", *SOURCE_PARAMS), sources=False)
        memo_file = brat_export.ExportMemo(
            path=out / "cache" / "memo" / self.stage / f"{key}.json", out=out,
            collection=Path(output_dir(self.output())), recycle_within=out / "work" / self.stage, keep=(out / "brat",),
        )
        with self.output().temporary_path() as tmp:
            brat_export.export_shards(Path(self.input().path), Path(tmp), schema.load_schema(Path(self.schema)),
                                      counts, relations=self.relations, memo=memo_file)
            store.write_counts(self.counts_path(), counts)
            self.write_params()


class PrepareBatches(BatchParams, StageTask):
    """brat collection + roster -> a campaign directory: blind phase-1 collections, campaign.json, manifest CSV.

    The directory also holds ``access/users.json`` (the people's scrypt password hashes, random salts),
    the one output that is not a function of the parameters.  A build shows no password: the manager
    gives each person one with ``pgx-corpus campaign users CAMPAIGN_DIR reset PERSON``.
    """

    stage = "09_batches"

    def requires(self) -> ExportBrat:
        """The brat collection."""
        return self.clone(ExportBrat)

    def output(self) -> luigi.LocalTarget:
        """``batches/`` in the stage directory, complete with its marker."""
        return DirectoryTarget(str(self.stage_dir() / "batches") + "/")

    def run(self) -> None:
        """Prepare the campaign's batches, and its people without a password."""
        from pipeline.campaign import batches, users

        if not self.roster:
            raise ValueError("PrepareBatches needs a roster file (--roster)")
        counts: Counter[str] = Counter()
        previous = Path(self.previous_batches) if self.previous_batches else None
        with self.output().temporary_path() as tmp:
            roles = batches.prepare_batches(
                Path(self.input().path), Path(self.roster), Path(tmp),
                seed=self.batch_seed, previous_manifest=previous, counts=counts,
            )
            # users without a shown password: nobody logs in until the manager resets one
            users.create_users(Path(tmp), roles, shown=False)
            store.write_counts(self.counts_path(), counts)
            self.write_params()
