"""Key-entity pre-annotation: PubTator3 API, PubTator/BioC files or the local annotator.

Input: [`Document`][pipeline.documents.Document] records with ``sentences`` set (the
sentence stage's output).  Output: the same documents, in the same order,
whose ``annotations`` are the chosen annotator's mentions, as half-open
offsets into ``Document.text`` (document-relative), de-duplicated and sorted.
Annotations the input documents carried are replaced, except that
``pubtator-file`` uses the ``source == "pubtator"`` annotations of documents
read from PubTator files (``origin == "pubtator"``).

Annotators (``annotator`` of [`PreannotationConfig`][pipeline.nlp.preannotate.PreannotationConfig]):

* ``pubtator-api``: [`PubtatorClient`][pipeline.sources.pubtator_api.PubtatorClient] (batches of
  ``batch_size`` <= 100 PMIDs, ``requests_per_second``, raw responses cached in
  ``cache_dir``).  PMIDs PubTator does not return are counted and logged and,
  with ``fallback_local``, annotated by the local annotator.  A batch that
  still fails after the client's last try raises
  [`PubtatorApiError`][pipeline.sources.pubtator_api.PubtatorApiError] naming it (a rerun fetches
  only the batches not yet cached).
* ``pubtator-file``: the annotations that came with ``--pubtator`` documents
  plus those of ``pubtator_files``: PubTator format (also bulk dumps such as
  ``bioconcepts2pubtator_offsets``, streamed in one pass keeping only the
  PMIDs being annotated), BioC XML and BioC/PubTator3 JSON, told apart by
  their first character.  Documents found in no source count as missing and
  fall back to the local annotator like the API's.
* ``local``: [`LocalAnnotator`][pipeline.nlp.local_annotator.LocalAnnotator] (imported lazily).

PubTator and BioC annotations keep the source's type and identifier (``None``
when empty) and are re-aligned to the document text by
[`realign`][pipeline.nlp.align.realign] (PubTator text differs from PubMed text);
BioC/API annotations outside the title/abstract passages are left out.  Then
annotations are projected onto the sentences: those crossing a sentence
boundary are counted and dropped, so every kept annotation lies inside one
sentence ([`Document.sentence_records`][pipeline.documents.Document.sentence_records]
then loses none).  The local
annotator's output is checked too (offsets inside the text, ``text`` = the
covered text).  Same input, same configuration and same cached responses give
the same output.

Count keys:

* ``documents``; ``documents_without_sentences`` (annotations kept unprojected);
* ``source_annotations``: annotations taken from PubTator/BioC sources before alignment;
* from [`pipeline.nlp.align`][pipeline.nlp.align]: ``exact``, ``exact_unverified``, ``realigned``,
  ``dropped_offset_outside_text`` (also negative BioC offsets and local
  annotations past the text), ``dropped_unalignable``, ``dropped_text_mismatch``;
* ``dropped_no_type`` (source annotation without a type), ``dropped_empty_span``
  (a location of length <= 0), ``dropped_other_passage`` (BioC annotation
  outside the title/abstract passages);
* ``crossing_sentence``: annotations crossing a sentence boundary (dropped);
  ``duplicate_annotations``: identical annotations from two sources, kept once;
* ``annotations``: annotations kept; ``source:<source>`` and ``type:<type>`` per kept annotation;
* ``missing_pmids``: documents the PubTator source had nothing for, and one
  ``missing_pmid:<PMID>`` key per such document (so counts.json lists them; the
  log lists them too); ``fallback_local``: of those, documents annotated by the
  local annotator;
* ``api_batches``, ``api_requests``, ``api_cache_hits``, ``api_retries``, ``api_unrequested``,
  ``api_bad_annotations`` (malformed annotations in responses, skipped and logged);
* ``file_records``: records of ``pubtator_files`` matching a document;
  ``file_duplicate_records``: repeated records of one PMID in one file (first kept);
  the PubTator-format reader's keys for whole files with a ``file_`` prefix
  (``file_documents``, ``file_annotations``, ``file_bad_lines`` with
  ``skip_bad_lines``, ``file_duplicate_documents``...) and the BioC reader's
  ``bioc_documents``, ``bioc_annotations``, ``bioc_bad_records``.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pipeline.documents import Annotation, ConceptRelation, Document, pmid_sort_key
from pipeline.nlp.align import realign
from pipeline.sources.bioc_io import BiocDocument, read_bioc, sniff_format
from pipeline.sources.pubtator_api import DEFAULT_BASE_URL, PubtatorClient

if TYPE_CHECKING:
    from pipeline.sources.pubtator_format import PubtatorRecord

logger = logging.getLogger(__name__)

ANNOTATORS = ("pubtator-api", "pubtator-file", "local")
"""The annotator names of [`PreannotationConfig`][pipeline.nlp.preannotate.PreannotationConfig]."""

SourceGroup = tuple[str | None, list[Annotation]]
"""A source text (``None`` = stand-off, no text known) and annotations whose fragments are offsets into it."""


class TextAnnotator(Protocol):
    """What the local annotator offers: document-relative annotations of a text.

    [`LocalAnnotator`][pipeline.nlp.local_annotator.LocalAnnotator] is one;
    tests inject others.
    """

    def annotate(self, text: str) -> list[Annotation]:
        """Annotate a text.

        Args:
            text: A document text.

        Returns:
            Annotations whose half-open offsets are relative to ``text``
                (document-relative).
        """
        ...


@dataclass(frozen=True)
class PreannotationConfig:
    """Pre-annotation settings (see the module docstring).

    Attributes:
        annotator: ``pubtator-api``, ``pubtator-file`` or ``local``.
        pubtator_files: With ``pubtator-file``: PubTator-format, BioC XML or
            BioC/PubTator3 JSON files (plain or gzip) to take annotations from.
        api_base_url: With ``pubtator-api``: the API root.
        cache_dir: With ``pubtator-api``: where raw responses are cached
            (``None``: no cache).
        fallback_local: Annotate documents the PubTator source has nothing for
            with the local annotator.
        lexicon: The local annotator's lexicon file (``None``: the default).
        skip_bad_lines: Count and log malformed lines or records of
            ``pubtator_files`` instead of raising.
        batch_size: PMIDs per API request (at most 100).
        requests_per_second: API request rate, shared host-wide.
        timeout: Seconds per API request.
        max_tries: Tries per API batch before giving up.
        backoff: First retry delay in seconds (doubled at each further retry, capped).

    Raises:
        ValueError: If ``annotator`` is not one of [`ANNOTATORS`][pipeline.nlp.preannotate.ANNOTATORS].
    """

    annotator: str  # pubtator-api | pubtator-file | local
    pubtator_files: tuple[Path, ...] = ()
    api_base_url: str = DEFAULT_BASE_URL
    cache_dir: Path | None = None
    fallback_local: bool = True
    lexicon: Path | None = None
    skip_bad_lines: bool = False
    batch_size: int = 100
    requests_per_second: float = 3.0
    timeout: float = 30.0
    max_tries: int = 5
    backoff: float = 1.0

    def __post_init__(self) -> None:
        if self.annotator not in ANNOTATORS:
            raise ValueError(f"unknown annotator {self.annotator!r}; choose one of {', '.join(ANNOTATORS)}")


# --- sources -> annotations in source offsets ---------------------------------

def bioc_source(doc: BiocDocument, counts: Counter[str]) -> SourceGroup:
    """Return the source text and annotations of a BioC/PubTator3 document.

    Only title/abstract passages are used (see
    [`BiocDocument.selected_passages`][pipeline.sources.bioc_io.BiocDocument.selected_passages]);
    the type and identifier infons are kept as given.

    Args:
        doc: A BioC document (from a file or an API response).
        counts: Counter incremented with ``source_annotations``,
            ``dropped_other_passage``, ``dropped_no_type``,
            ``dropped_offset_outside_text`` (negative offsets) and
            ``dropped_empty_span``.

    Returns:
        A [`SourceGroup`][pipeline.nlp.preannotate.SourceGroup]: the document's
            source text (``None`` when it has none) and its annotations (source
            ``pubtator``) whose fragments are half-open offsets into that text,
            not yet re-aligned.
    """
    selected, left_out = doc.selected_annotations()
    counts["dropped_other_passage"] += left_out
    out: list[Annotation] = []
    for ann in selected:
        counts["source_annotations"] += 1
        kind = ann.type
        if kind is None:
            counts["dropped_no_type"] += 1
            logger.debug("document %s: annotation %s without type dropped", doc.id, ann.id)
            continue
        spans = ann.spans
        if any(start < 0 for start, _ in spans):
            counts["dropped_offset_outside_text"] += 1
            continue
        if any(end <= start for start, end in spans):
            counts["dropped_empty_span"] += 1
            continue
        out.append(
            Annotation(fragments=spans, type=kind, source="pubtator", identifier=ann.identifier, text=ann.text)
        )
    source = doc.source_text()
    return (source or None), out


def pubtator_record_source(record: PubtatorRecord, counts: Counter[str]) -> SourceGroup:
    """Return the source text and annotations of a PubTator-format record.

    The source text is the record's document text as
    [`to_document`][pipeline.sources.pubtator_format.to_document] builds it (it
    settles the legacy dumps' trailing-space titles); the annotations are taken
    from the record's lines unchecked, so [`realign`][pipeline.nlp.align.realign]
    checks and counts them like every other source.

    Args:
        record: One record of a PubTator-format file.
        counts: Counter incremented with ``source_annotations``,
            ``dropped_no_type`` and ``dropped_empty_span``.

    Returns:
        A [`SourceGroup`][pipeline.nlp.preannotate.SourceGroup]: the source text
            and the annotations (source ``pubtator``, text stripped) whose
            fragments are half-open offsets into it.
    """
    from pipeline.sources.pubtator_format import to_document

    text = to_document(record, Counter()).text
    out: list[Annotation] = []
    for ann in record.annotations:
        counts["source_annotations"] += 1
        if not ann.type:
            counts["dropped_no_type"] += 1
            continue
        if ann.end <= ann.start:
            counts["dropped_empty_span"] += 1
            continue
        out.append(
            Annotation(
                fragments=((ann.start, ann.end),),
                type=ann.type,
                source="pubtator",
                identifier=ann.identifier,
                text=ann.text.strip(),
            )
        )
    return text, out


def load_file_sources(
    paths: Sequence[Path], pmids: Iterable[str], counts: Counter[str], *, skip_bad_lines: bool = False,
    relations: dict[str, list[ConceptRelation]] | None = None,
) -> dict[str, list[SourceGroup]]:
    """Read the annotations of some PMIDs from PubTator-format or BioC files.

    Each file is read once, streaming; records of other PMIDs are skipped
    (bulk dumps are huge), a PMID repeated in one file keeps its first record.
    The format of each file is told by its first character.

    Args:
        paths: PubTator-format, BioC XML or BioC/PubTator3 JSON files (plain or gzip).
        pmids: The PMIDs wanted.
        counts: Counter incremented with ``file_records``,
            ``file_duplicate_records``, the PubTator reader's keys prefixed
            ``file_``, the BioC reader's keys, and those of
            [`bioc_source`][pipeline.nlp.preannotate.bioc_source] /
            [`pubtator_record_source`][pipeline.nlp.preannotate.pubtator_record_source].
        skip_bad_lines: Count and log malformed lines or records instead of raising.
        relations: When given, the PubTator3 relations of the records read (relation lines, BioC
            role1/role2 relations) are added to it by PMID.

    Returns:
        PMID -> its [`SourceGroup`][pipeline.nlp.preannotate.SourceGroup]s, one
            per file that has it, in the order of ``paths``; PMIDs found in no file
            are absent.

    Raises:
        pipeline.sources.pubtator_format.PubtatorFormatError: On a malformed
            PubTator line (naming file and line) unless ``skip_bad_lines``.
        pipeline.sources.bioc_io.BiocFormatError: On malformed BioC input
            unless ``skip_bad_lines``.
    """
    wanted = set(pmids)
    found: dict[str, list[SourceGroup]] = defaultdict(list)
    for path in paths:
        path = Path(path)
        seen: set[str] = set()
        kind = sniff_format(path)
        logger.info("reading %s annotations from %s", kind, path)
        if kind == "pubtator":
            from pipeline.sources.pubtator_format import read_pubtator

            # The reader's own keys ("documents", "annotations", "bad_lines"...)
            # describe the whole file: kept apart under a "file_" prefix.
            reader_counts: Counter[str] = Counter()
            for record in read_pubtator(path, skip_bad_lines=skip_bad_lines, counts=reader_counts):
                pmid = str(record.pmid)
                if pmid not in wanted:
                    continue
                if pmid in seen:  # the reader already keeps the first copy; this is a safeguard
                    counts["file_duplicate_records"] += 1
                    continue
                seen.add(pmid)
                counts["file_records"] += 1
                found[pmid].append(pubtator_record_source(record, counts))
                if relations is not None:
                    relations.setdefault(pmid, []).extend(ConceptRelation(r.type, r.arg1, r.arg2)
                                                          for r in record.relations)
            for key, value in sorted(reader_counts.items()):
                counts[f"file_{key}"] += value
        else:
            for bdoc in read_bioc(path, counts=counts, skip_bad=skip_bad_lines):
                if bdoc.pmid is None or bdoc.pmid not in wanted:
                    continue
                if bdoc.pmid in seen:
                    counts["file_duplicate_records"] += 1
                    logger.warning("%s: PMID %s appears again; first document kept", path, bdoc.pmid)
                    continue
                seen.add(bdoc.pmid)
                counts["file_records"] += 1
                found[bdoc.pmid].append(bioc_source(bdoc, counts))
                if relations is not None:
                    relations.setdefault(bdoc.pmid, []).extend(ConceptRelation(*r) for r in bdoc.concept_relations)
    return dict(found)


def shard_annotation_files(
    paths: Sequence[Path],
    out_dir: Path,
    wanted_pmids: Iterable[str],
    shard_size: int,
    counts: Counter[str],
    *,
    skip_bad_lines: bool = False,
) -> dict[str, list[str]]:
    """Split PubTator-format annotation files by document shard, reading each file once.

    Bulk dumps (``bioconcepts2pubtator_offsets``, tens of GB) would otherwise be
    read in full by every shard of the pre-annotation stage.  For each input
    file ``k`` and each shard ``s`` holding some of ``wanted_pmids``, the
    records of those PMIDs are written to ``out_dir/shard-<s>/<k>.pubtator.gz``
    (``k`` zero-padded to three digits; records sorted by PMID, deterministic
    gzip), so that per-file semantics are kept.  BioC files are not split (API
    exports are small); they are listed as ``passthrough``.

    Args:
        paths: The annotation files (PubTator-format or BioC, plain or gzip).
        out_dir: Directory the split files are written under (created).
        wanted_pmids: The PMIDs of the documents being annotated; other
            records are skipped.
        shard_size: PMIDs per document shard (as in
            [`pipeline.store.shard_of`][pipeline.store.shard_of]).
        counts: Counter incremented with ``split_files``, ``split_records``,
            ``split_skipped_records``, and the PubTator reader's keys prefixed
            ``split_file_``.
        skip_bad_lines: Count and log malformed PubTator lines instead of raising.

    Returns:
        ``{"passthrough": [...], "split": [...]}``: the input paths (as strings)
            not split (BioC) and split, in input order; pass it to
            [`shard_annotation_sources`][pipeline.nlp.preannotate.shard_annotation_sources].

    Raises:
        pipeline.sources.pubtator_format.PubtatorFormatError: On a malformed
            PubTator line unless ``skip_bad_lines``.
    """
    from pipeline import store
    from pipeline.sources.pubtator_format import format_record, read_pubtator

    wanted = set(wanted_pmids)
    summary: dict[str, list[str]] = {"passthrough": [], "split": []}
    out_dir.mkdir(parents=True, exist_ok=True)
    for k, path in enumerate(paths):
        if sniff_format(Path(path)) != "pubtator":
            summary["passthrough"].append(str(path))
            continue
        summary["split"].append(str(path))
        counts["split_files"] += 1
        by_shard: dict[int, list[tuple[str, str]]] = defaultdict(list)
        reader_counts: Counter[str] = Counter()
        for record in read_pubtator(Path(path), skip_bad_lines=skip_bad_lines, counts=reader_counts):
            if record.pmid not in wanted:
                counts["split_skipped_records"] += 1
                continue
            counts["split_records"] += 1
            by_shard[store.shard_of(record.pmid, shard_size)].append((record.pmid, format_record(record)))
        for key, value in sorted(reader_counts.items()):
            counts[f"split_file_{key}"] += value
        for shard, blocks in sorted(by_shard.items()):
            target = out_dir / store.shard_name(shard).replace(".jsonl.gz", "") / f"{k:03d}.pubtator.gz"
            target.parent.mkdir(parents=True, exist_ok=True)
            blocks.sort(key=lambda block: pmid_sort_key(block[0]))
            store.write_bytes_gz(target, "".join(text for _, text in blocks).encode("utf-8"))
    return summary


def shard_annotation_sources(split_dir: Path, shard: int, summary: dict[str, list[str]]) -> tuple[Path, ...]:
    """List the annotation files one document shard reads.

    Args:
        split_dir: The ``out_dir`` of
            [`shard_annotation_files`][pipeline.nlp.preannotate.shard_annotation_files].
        shard: The document shard number.
        summary: What ``shard_annotation_files`` returned.

    Returns:
        The shard's split PubTator files (sorted; none when the shard had no
            records), then the ``passthrough`` (BioC) files.
    """
    from pipeline import store

    folder = split_dir / store.shard_name(shard).replace(".jsonl.gz", "")
    split = sorted(folder.glob("*.pubtator.gz")) if folder.is_dir() else []
    return (*split, *(Path(p) for p in summary.get("passthrough", [])))


# --- documents ----------------------------------------------------------------

def _checked_local(doc: Document, annotations: Iterable[Annotation], counts: Counter[str]) -> list[Annotation]:
    out = []
    for ann in annotations:
        if ann.end > len(doc.text):
            counts["dropped_offset_outside_text"] += 1
            logger.warning("PMID %s: local annotation %s %r outside the text dropped", doc.pmid, ann.type, ann.text)
            continue
        covered = ann.covered(doc.text)
        out.append(ann if ann.text == covered else dataclasses.replace(ann, text=covered))
    return out


def project_to_sentences(doc: Document, annotations: Iterable[Annotation], counts: Counter[str]) -> Document:
    """Give a document the annotations that lie inside one of its sentences.

    Uses the same rule as
    [`Document.sentence_records`][pipeline.documents.Document.sentence_records]
    (start >= sentence start and end <= sentence end).  A document without
    sentences keeps all its annotations (counted
    ``documents_without_sentences``, logged).

    Args:
        doc: The document, with ``sentences`` (document-relative spans).
        annotations: Candidate annotations, half-open and document-relative;
            they replace the document's own.
        counts: Counter incremented with ``crossing_sentence`` (dropped),
            ``duplicate_annotations``, ``annotations``, ``source:<source>`` and
            ``type:<type>``.

    Returns:
        A copy of ``doc`` whose annotations are the kept ones, de-duplicated
            and sorted (by [`Document.with_annotations`][pipeline.documents.Document.with_annotations]).
    """
    anns = list(annotations)
    if doc.sentences:
        starts = [s.start for s in doc.sentences]
        kept = []
        for ann in anns:
            k = bisect.bisect_right(starts, ann.start) - 1
            if k >= 0 and ann.end <= doc.sentences[k].end:
                kept.append(ann)
            else:
                counts["crossing_sentence"] += 1
                logger.debug("PMID %s: %s %r crosses a sentence boundary", doc.pmid, ann.type, ann.text)
        anns = kept
    else:
        counts["documents_without_sentences"] += 1
        logger.warning("PMID %s has no sentences; annotations not projected", doc.pmid)
    result = doc.with_annotations(anns)
    # the same mention from two sources (a --pubtator document and its file) is kept once
    counts["duplicate_annotations"] += len(anns) - len(result.annotations)
    counts["annotations"] += len(result.annotations)
    for ann in result.annotations:
        counts[f"source:{ann.source}"] += 1
        counts[f"type:{ann.type}"] += 1
    return result


class _Local:
    """The local annotator, loaded on first use (it reads a lexicon)."""

    def __init__(self, config: PreannotationConfig, annotator: TextAnnotator | None) -> None:
        self.config = config
        self.annotator = annotator

    def get(self) -> TextAnnotator:
        if self.annotator is None:
            from pipeline.nlp.local_annotator import LocalAnnotator

            self.annotator = LocalAnnotator.load(self.config.lexicon)
        return self.annotator

    def annotate(self, doc: Document, counts: Counter[str]) -> list[Annotation]:
        return _checked_local(doc, self.get().annotate(doc.text), counts)


#: Dropped annotations logged one by one per document; the rest are summed up in one line.
_SHOWN_DROPS = 3


def _realigned(doc: Document, groups: Iterable[SourceGroup], counts: Counter[str]) -> list[Annotation]:
    out: list[Annotation] = []
    dropped: list[tuple[str, Annotation]] = []
    for source_text, source_annotations in groups:
        out.extend(realign(source_annotations, source_text, doc.text, counts, dropped=dropped))
    if dropped:
        # out-of-range or mismatched source annotations lose data: say where (first few per document)
        shown = "; ".join(f"{ann.type} {ann.text!r} at {','.join(f'{s}-{e}' for s, e in ann.fragments)} "
                          f"({reason.replace('_', ' ')})" for reason, ann in dropped[:_SHOWN_DROPS])
        more = f"; and {len(dropped) - _SHOWN_DROPS} more" if len(dropped) > _SHOWN_DROPS else ""
        logger.warning("PMID %s: %d PubTator/BioC annotation(s) dropped (source offsets): %s%s",
                       doc.pmid, len(dropped), shown, more)
        counts["documents_with_dropped_annotations"] += 1
    return out


def _missing(doc: Document, config: PreannotationConfig, local: _Local, counts: Counter[str]) -> list[Annotation]:
    counts["missing_pmids"] += 1
    counts[f"missing_pmid:{doc.pmid}"] += 1  # the list, in counts.json
    if not config.fallback_local:
        return []
    counts["fallback_local"] += 1
    return local.annotate(doc, counts)


def preannotate(
    docs: Iterable[Document],
    config: PreannotationConfig,
    counts: Counter[str],
    *,
    client: PubtatorClient | None = None,
    local_annotator: TextAnnotator | None = None,
) -> Iterator[Document]:
    """Pre-annotate ``docs`` with ``config.annotator``; see the module docstring.

    The documents are read into a list first: the API and the files are
    queried once for all their PMIDs.  PMIDs the PubTator source has nothing
    for are logged together at the end.

    Args:
        docs: Documents with ``sentences`` set.
        config: The settings; ``config.annotator`` chooses the annotator.
        counts: Counter incremented with the module's count keys.
        client: The PubTator API client (``pubtator-api``); ``None`` builds one
            from ``config``.  Injected by tests.
        local_annotator: The local annotator; ``None`` loads
            ``LocalAnnotator.load(config.lexicon)`` when it is first needed.

    Yields:
        Each document, in input order, whose annotations are the annotator's,
            half-open, document-relative, each inside one sentence, de-duplicated
            and sorted; with ``pubtator-api``, the response's document-level
            relations become the document's ``concept_relations``.

    Raises:
        pipeline.sources.pubtator_api.PubtatorApiError: If an API batch still
            fails after the client's last try.
        pipeline.nlp.local_annotator.LexiconMissingError: If the local
            annotator is needed and its lexicon does not exist.
    """
    documents = list(docs)
    local = _Local(config, local_annotator)
    pmids = [d.pmid for d in documents]
    missing_pmids: list[str] = []

    if config.annotator == "local":
        for doc in documents:
            counts["documents"] += 1
            yield project_to_sentences(doc, local.annotate(doc, counts), counts)
        return

    if config.annotator == "pubtator-api":
        if client is None:
            client = PubtatorClient(
                config.api_base_url,
                cache_dir=config.cache_dir,
                batch_size=config.batch_size,
                requests_per_second=config.requests_per_second,
                timeout=config.timeout,
                max_tries=config.max_tries,
                backoff=config.backoff,
                # the rate limit is shared host-wide (parallel shard tasks, other builds)
            )
        result = client.fetch(pmids)
        counts["api_batches"] += result.batches
        counts["api_requests"] += result.requests
        counts["api_cache_hits"] += result.cache_hits
        counts["api_retries"] += result.retries
        counts["api_unrequested"] += result.unrequested
        counts["api_bad_annotations"] += result.bad_annotations
        for doc in documents:
            counts["documents"] += 1
            bdoc = result.documents.get(doc.pmid)
            if bdoc is None:
                missing_pmids.append(doc.pmid)
                anns = _missing(doc, config, local, counts)
            else:
                anns = _realigned(doc, [bioc_source(bdoc, counts)], counts)
                # PubTator3's document-level relations: the relation stage proposes them per sentence
                doc = dataclasses.replace(doc, concept_relations=tuple(
                    ConceptRelation(kind, id1, id2) for kind, id1, id2 in bdoc.concept_relations))
            yield project_to_sentences(doc, anns, counts)
    else:  # pubtator-file
        file_relations: dict[str, list[ConceptRelation]] = {}
        from_files = load_file_sources(config.pubtator_files, pmids, counts, skip_bad_lines=config.skip_bad_lines,
                                       relations=file_relations)
        for doc in documents:
            counts["documents"] += 1
            groups = list(from_files.get(doc.pmid, []))
            if file_relations.get(doc.pmid):
                # the dumps' PubTator3 relations join the document's own (a pair given twice once)
                doc = dataclasses.replace(doc, concept_relations=tuple(dict.fromkeys(
                    (*doc.concept_relations, *file_relations[doc.pmid]))))
            if doc.origin == "pubtator":
                own = [a for a in doc.annotations if a.source == "pubtator"]
                counts["source_annotations"] += len(own)
                groups.insert(0, (doc.text, own))
            if groups:
                anns = _realigned(doc, groups, counts)
            else:
                missing_pmids.append(doc.pmid)
                anns = _missing(doc, config, local, counts)
            yield project_to_sentences(doc, anns, counts)

    if missing_pmids:
        shown = ", ".join(missing_pmids)
        logger.warning(
            "%s: no PubTator annotations for %d PMID(s)%s: %s",
            config.annotator,
            len(missing_pmids),
            " (annotated by the local annotator)" if config.fallback_local else "",
            shown,
        )


__all__ = [
    "ANNOTATORS",
    "PreannotationConfig",
    "TextAnnotator",
    "bioc_source",
    "load_file_sources",
    "pubtator_record_source",
    "preannotate",
    "project_to_sentences",
]
