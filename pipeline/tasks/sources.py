"""The build's sources: the PubMed search, the efetch download and the document shards."""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import luigi

from pipeline import store
from pipeline.tasks.params import RunParams, SourceParams, StageTask, as_paths, ncbi, param_hash, significant_params
from pipeline.tasks.targets import DirectoryTarget, FileTarget

log = logging.getLogger(__name__)

# --- retrieval -------------------------------------------------------------------------------


class Search(RunParams, luigi.Task):
    """PubMed query -> ESearch record (query, date, Count, PMIDs)."""

    query: str = luigi.Parameter()
    search_date: str = luigi.Parameter()
    allow_empty: bool = luigi.BoolParameter(default=False, significant=False)

    def output(self) -> luigi.LocalTarget:
        """``OUT/searches/<query hash>/<date>.json``."""
        from pipeline.sources.retrieval import query_hash

        return FileTarget(str(Path(self.out) / "searches" / query_hash(self.query) / f"{self.search_date}.json"))

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
        return FileTarget(str(Path(self.out) / "work" / "01_fetch" / f"{param_hash(self)}.json"))

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
            pubmed_xml=as_paths(self.pubmed_xml), pubtator=as_paths(self.pubtator), skip_bad_lines=self.skip_bad_lines,
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
