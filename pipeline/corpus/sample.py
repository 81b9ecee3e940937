"""Seeded, growth-stable sampling of sentences, optionally capped per abstract and stratified.

Every sentence gets a rank: ``sha256(f"{seed}:{name}")`` (``name`` = the brat name ``{pmid}_{k}``) (hex, then
the name to break the impossible tie).  The rank of a sentence depends on
the seed and its own name only, never on the rest of the pool, so:

* the same pool and seed give the same sample, whatever the input order;
* **stability under growth** (no cap, no strata): the sample is the ``n``
  best-ranked sentences of the pool.  When the pool grows from ``P`` to
  ``P' ⊇ P``, an old sentence leaves the sample only when a NEW sentence
  ranks above it, and no old sentence that was not sampled enters it:
  ``sample(P', n) ∩ P ⊆ sample(P, n)`` and
  ``|sample(P, n) − sample(P', n)| = |sample(P', n) − P|``.  Raising ``n`` by
  the number of added sentences keeps the whole previous sample:
  ``sample(P, n) ⊆ sample(P', n + |P' − P|)``.  Work already handed to
  annotators is therefore not reshuffled ([`pipeline.campaign.batches`][pipeline.campaign.batches] keeps the
  handed-out
  assignments on top of this).
* ``per_abstract`` (k) is applied in rank order: walking the ranking, a
  sentence is skipped when k sentences of its abstract were already taken.
  New sentences of an abstract can then displace old ones of the same
  abstract only, and only when they rank higher.
* stratified mode (``triggered_pmids`` and ``trigger_fraction`` given):
  ``round(n * trigger_fraction)`` sentences come from abstracts whose PMID is
  in ``triggered_pmids`` and the rest from the others, each stratum ranked
  as above.  A stratum with too few sentences gives all it has and the
  shortfall is filled from the other stratum in rank order (the budget ``n``
  wins over the fraction), with a warning and a count.

``n=None`` keeps the whole pool (cap still applied).  ``n`` larger than the
pool: a warning, and the whole pool is kept.  The result is sorted by
(PMID, index).

Count keys: ``pool``, ``pool_triggered``/``pool_other`` (stratified),
``sampled``, ``sampled_triggered``/``sampled_other`` (stratified),
``skipped_per_abstract_cap``, ``sample_larger_than_pool``,
``stratum_shortfall:triggered``/``stratum_shortfall:other`` (sentences
missing in that stratum), ``duplicate_records`` (same PMID and index twice
in the pool; the first is kept).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import yaml

from pipeline import durable, yamlfile
from pipeline.documents import Document, pmid_sort_key

log = logging.getLogger(__name__)


class Sampled(Protocol):
    """What sampling reads of a sentence.

    A [`SentenceRecord`][pipeline.documents.SentenceRecord], or a stand-in holding its store line.
    """

    @property
    def pmid(self) -> str:
        """The PMID of the sentence's document."""
        ...

    @property
    def index(self) -> int:
        """The 0-based position of the sentence in its document (the title is sentence 0)."""
        ...

    @property
    def name(self) -> str:
        """The brat name ``{pmid}_{index + 1}``."""
        ...


S = TypeVar("S", bound=Sampled)


def rank_key(seed: int, record: S) -> tuple[str, str]:
    """Rank a sentence for sampling; the rank depends on the seed and its name only.

    Args:
        seed: The sampling seed.
        record: The sentence.

    Returns:
        ``(sha256 of "{seed}:{name}" in hexadecimal, name)``: lower ranks first.
    """
    name = record.name
    return hashlib.sha256(f"{seed}:{name}".encode()).hexdigest(), name


def _take(
    ranked: Sequence[S],
    quota: int | None,
    per_abstract: int | None,
    taken_per_pmid: Counter[str],
    chosen: set[tuple[str, int]],
    counts: Counter[str],
) -> list[S]:
    """Walk ``ranked`` and take up to ``quota`` records not chosen yet, honouring the per-abstract cap."""
    out: list[S] = []
    for record in ranked:
        if quota is not None and len(out) >= quota:
            break
        key = (record.pmid, record.index)
        if key in chosen:
            continue
        if per_abstract is not None and taken_per_pmid[record.pmid] >= per_abstract:
            counts["skipped_per_abstract_cap"] += 1
            continue
        taken_per_pmid[record.pmid] += 1
        chosen.add(key)
        out.append(record)
    return out


def sample_sentences(
    records: Iterable[S],
    *,
    n: int | None,
    seed: int,
    per_abstract: int | None = None,
    triggered_pmids: Collection[str] | None = None,
    trigger_fraction: float | None = None,
    counts: Counter[str],
) -> list[S]:
    """Draw a seeded, growth-stable sample of sentences (see the module docstring).

    Args:
        records: The pool, in any order; a second record with the same PMID and index is counted and
            dropped.
        n: Sample size; None for the whole pool (cap still applied).  Larger than the pool: a warning,
            and the whole pool is kept.
        seed: The sampling seed.
        per_abstract: Most sentences taken from one abstract, at least 1; None for no cap.
        triggered_pmids: PMIDs of the triggered stratum (stratified mode, with ``trigger_fraction``).
        trigger_fraction: Share of ``n`` taken from the triggered stratum, within [0, 1].
        counts: Count keys (see the module docstring), updated in place.

    Returns:
        The sampled records, sorted by (PMID, index).

    Raises:
        ValueError: For a negative ``n``, a ``per_abstract`` below 1 or a ``trigger_fraction`` outside
            [0, 1], and when only one of ``triggered_pmids`` / ``trigger_fraction`` is given.
    """
    if n is not None and n < 0:
        raise ValueError(f"sample size must be >= 0, got {n}")
    if per_abstract is not None and per_abstract < 1:
        raise ValueError(f"per_abstract must be >= 1, got {per_abstract}")
    stratified = triggered_pmids is not None or trigger_fraction is not None
    if stratified and (triggered_pmids is None or trigger_fraction is None):
        raise ValueError("stratified sampling needs both triggered_pmids and trigger_fraction")
    if trigger_fraction is not None and not 0.0 <= trigger_fraction <= 1.0:
        raise ValueError(f"trigger_fraction must be within [0, 1], got {trigger_fraction}")

    pool: dict[tuple[str, int], S] = {}
    for record in records:
        key = (record.pmid, record.index)
        if key in pool:
            counts["duplicate_records"] += 1
            log.warning("sentence %s_%s appears twice in the pool; keeping the first", record.pmid, record.index)
            continue
        pool[key] = record
    counts["pool"] += len(pool)
    ranked = sorted(pool.values(), key=lambda r: rank_key(seed, r))

    if n is not None and n > len(ranked):
        counts["sample_larger_than_pool"] += 1
        log.warning("sample size %d is larger than the pool (%d sentences): keeping the whole pool", n, len(ranked))
        n = None

    taken_per_pmid: Counter[str] = Counter()
    chosen: set[tuple[str, int]] = set()
    if not stratified:
        sample = _take(ranked, n, per_abstract, taken_per_pmid, chosen, counts)
    else:
        assert triggered_pmids is not None and trigger_fraction is not None
        trig_set = set(triggered_pmids)
        triggered = [r for r in ranked if r.pmid in trig_set]
        other = [r for r in ranked if r.pmid not in trig_set]
        counts["pool_triggered"] += len(triggered)
        counts["pool_other"] += len(other)
        if n is None:
            sample = _take(ranked, None, per_abstract, taken_per_pmid, chosen, counts)
        else:
            want_trig = round(n * trigger_fraction)
            want_other = n - want_trig
            got_trig = _take(triggered, want_trig, per_abstract, taken_per_pmid, chosen, counts)
            if len(got_trig) < want_trig:
                counts["stratum_shortfall:triggered"] += want_trig - len(got_trig)
                log.warning("only %d of %d sentences available from triggered abstracts", len(got_trig), want_trig)
            # the other stratum also fills what the triggered one lacked (the budget n wins over the fraction)
            got_other = _take(other, n - len(got_trig), per_abstract, taken_per_pmid, chosen, counts)
            if len(got_other) < want_other:
                counts["stratum_shortfall:other"] += want_other - len(got_other)
                log.warning("only %d of %d sentences available from other abstracts", len(got_other), want_other)
            missing = n - len(got_trig) - len(got_other)
            if missing > 0:
                got_trig += _take(triggered, missing, per_abstract, taken_per_pmid, chosen, counts)
            sample = got_trig + got_other
        counts["sampled_triggered"] += sum(1 for r in sample if r.pmid in trig_set)
        counts["sampled_other"] += sum(1 for r in sample if r.pmid not in trig_set)

    counts["sampled"] += len(sample)
    return sorted(sample, key=lambda r: (pmid_sort_key(r.pmid), r.index))


def _phrase_pattern(phrases: Sequence[str]) -> re.Pattern[str] | None:
    parts = []
    for phrase in sorted({p.strip() for p in phrases if p.strip()}, key=lambda p: (-len(p), p)):
        words = [re.escape(w) for w in phrase.split()]
        parts.append(r"\s+".join(words))
    if not parts:
        return None
    # word boundaries that also work for phrases starting or ending with punctuation
    return re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)", re.IGNORECASE)


def pmids_with_triggers(docs: Iterable[Document], phrases: Sequence[str]) -> set[str]:
    """Find the documents whose title + abstract contain one of a list of phrases.

    Matching is case-insensitive and at word boundaries (``allele`` matches
    "Allele," but not "alleles"; list both forms to match both); spaces inside
    a phrase match any run of whitespace.

    Args:
        docs: The documents searched (their whole text).
        phrases: The trigger phrases; blank ones are ignored.

    Returns:
        The PMIDs of the documents with a match; empty when no phrase is given.
    """
    pattern = _phrase_pattern(phrases)
    if pattern is None:
        return set()
    return {doc.pmid for doc in docs if pattern.search(doc.text)}


def load_trigger_phrases(path: str | Path) -> list[str]:
    """Read trigger phrases from a YAML or a text file.

    Args:
        path: A ``.yaml``/``.yml`` file with a ``trigger_phrases:`` list (e.g. ``config/filter.yaml``), or a
            text file with one phrase per line (``#`` starts a comment line).

    Returns:
        The phrases, stripped, blanks left out, in file order.

    Raises:
        ValueError: Naming the file, for invalid YAML or a missing or malformed ``trigger_phrases`` list.
        OSError: If the file cannot be read.
    """
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if p.suffix in (".yaml", ".yml"):
        try:
            data = yamlfile.safe_load(text) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
            raise ValueError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from exc
        phrases = data.get("trigger_phrases") if isinstance(data, dict) else None
        if not isinstance(phrases, list) or not all(isinstance(x, str) for x in phrases):
            raise ValueError(f"{p}: expected a 'trigger_phrases' list of strings")
        return [x.strip() for x in phrases if x.strip()]
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def write_sample(
    pool_dir: Path,
    out_dir: Path,
    counts: Counter[str],
    *,
    n: int | None,
    seed: int,
    per_abstract: int | None = None,
    triggered_pmids: Collection[str] | None = None,
    trigger_fraction: float | None = None,
    shard_size: int,
    keys_path: Path,
    members_cache: Path,
) -> None:
    """Sample a stage's sentence pool into shard files, copying the chosen lines' gzip members.

    The pool's lines are not decoded into records: sampling needs PMID and index, which come from a memo
    by line digest (``keys_path``, rewritten with the whole pool's keys) for the lines seen before.  The
    sample is [`sample_sentences`][pipeline.corpus.sample.sample_sentences]'s, sharded like the pool.

    Args:
        pool_dir: The filtered stage's directory of sentence record shards.
        out_dir: Where the sample's shards are written (created).
        counts: Updated with the sampling counts.
        n: The sample size; None keeps the whole pool.
        seed: The sampling seed.
        per_abstract: At most this many sentences per abstract; None: no cap.
        triggered_pmids: For stratified sampling, the PMIDs of the abstracts with a trigger phrase.
        trigger_fraction: The share of the sample drawn from triggered abstracts (stratified sampling).
        shard_size: PMIDs per shard block.
        keys_path: The memo of PMID and index by line digest (an unreadable one is ignored).
        members_cache: Where the shard files are remembered by content, so that an unchanged block is a
            hard link to an earlier run's (see [`write_members_cached`][pipeline.store.write_members_cached]).

    Raises:
        ValueError: If the sampling parameters are invalid (see
            [`sample_sentences`][pipeline.corpus.sample.sample_sentences]).
    """
    from pipeline import store

    try:
        known = store.read_json(keys_path)
    except (OSError, ValueError):
        known = {}
    pool = list(store.iter_members(pool_dir, known))
    chosen = sample_sentences(pool, n=n, seed=seed, per_abstract=per_abstract, triggered_pmids=triggered_pmids,
                              trigger_fraction=trigger_fraction, counts=counts)
    members: dict[int, list[bytes]] = {}
    for line in chosen:
        members.setdefault(store.shard_of(line.pmid, shard_size), []).append(line.data)
    store.write_members_cached(out_dir, sorted(members.items()), members_cache)
    # the memo before the output, which appears last: a killed run's rerun finds it
    keys_path.parent.mkdir(parents=True, exist_ok=True)
    keys = {m.digest: [m.pmid, m.index] for m in pool}
    durable.replace_file(keys_path, json.dumps(keys, sort_keys=True, separators=(",", ":")).encode("utf-8"))
