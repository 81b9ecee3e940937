"""Sampling: determinism, stability under growth, per-abstract cap, stratified fractions, triggers.

Covers: pipeline.corpus.sample, pipeline.corpus.select, pipeline.documents
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest

from pipeline.corpus.sample import load_trigger_phrases, pmids_with_triggers, rank_key, sample_sentences
from pipeline.documents import Document, SentenceRecord


def pool(n_abstracts: int, per: int, start: int = 1000) -> list[SentenceRecord]:
    return [
        SentenceRecord(pmid=str(start + a), index=k, text=f"sentence {k} of {start + a}")
        for a in range(n_abstracts)
        for k in range(per)
    ]


def names(records: list[SentenceRecord]) -> set[str]:
    return {r.name for r in records}


def test_same_pool_and_seed_same_sample_whatever_the_order() -> None:
    records = pool(50, 6)
    a = sample_sentences(records, n=40, seed=7, counts=Counter())
    b = sample_sentences(list(reversed(records)), n=40, seed=7, counts=Counter())
    assert a == b and len(a) == 40
    assert a == sorted(a, key=lambda r: (int(r.pmid), r.index))
    c = sample_sentences(records, n=40, seed=8, counts=Counter())
    assert names(a) != names(c)


def test_rank_depends_on_seed_and_name_only() -> None:
    r = SentenceRecord("42", 3, "text")
    assert rank_key(1, r) == rank_key(1, SentenceRecord("42", 3, "other text"))
    assert rank_key(1, r) != rank_key(2, r)


@pytest.mark.parametrize("seed", [0, 1, 13])
def test_stable_under_growth(seed: int) -> None:
    """P ⊆ P': old sentences only leave when displaced by new ones, and never enter; n + |added| keeps all."""
    old = pool(60, 5)
    added = pool(30, 5, start=5000) + [SentenceRecord("1000", 5 + k, "new sentence of an old abstract")
                                        for k in range(3)]
    new = old + added
    n = 70
    before = names(sample_sentences(old, n=n, seed=seed, counts=Counter()))
    after = names(sample_sentences(new, n=n, seed=seed, counts=Counter()))
    old_names = names(old)
    assert after & old_names <= before
    assert len(before - after) == len(after - old_names)
    grown = names(sample_sentences(new, n=n + len(added), seed=seed, counts=Counter()))
    assert before <= grown
    # monotonic in n
    assert before <= names(sample_sentences(old, n=n + 10, seed=seed, counts=Counter()))


def test_per_abstract_cap_in_rank_order() -> None:
    records = pool(10, 8)
    counts: Counter[str] = Counter()
    sample = sample_sentences(records, n=25, seed=3, per_abstract=2, counts=counts)
    assert len(sample) == 20  # 10 abstracts x 2: the cap limits the sample
    assert max(Counter(r.pmid for r in sample).values()) == 2
    assert counts["skipped_per_abstract_cap"] == 60
    # the kept sentences of an abstract are its best-ranked ones
    for pmid in {r.pmid for r in sample}:
        mine = sorted((r for r in records if r.pmid == pmid), key=lambda r: rank_key(3, r))
        assert names([r for r in sample if r.pmid == pmid]) == names(mine[:2])


def test_sample_larger_than_pool_warns_and_keeps_pool(caplog: pytest.LogCaptureFixture) -> None:
    records = pool(3, 3)
    counts: Counter[str] = Counter()
    with caplog.at_level(logging.WARNING, logger="pipeline.corpus.sample"):
        sample = sample_sentences(records, n=100, seed=1, counts=counts)
    assert names(sample) == names(records)
    assert counts["sample_larger_than_pool"] == 1 and counts["sampled"] == 9
    assert "larger than the pool" in caplog.text
    assert names(sample_sentences(records, n=None, seed=1, counts=Counter())) == names(records)


def test_duplicates_in_pool_counted() -> None:
    records = pool(2, 2) + pool(1, 1)
    counts: Counter[str] = Counter()
    assert len(sample_sentences(records, n=None, seed=1, counts=counts)) == 4
    assert counts["duplicate_records"] == 1


@pytest.mark.parametrize(("fraction", "n"), [(0.5, 40), (0.25, 40), (0.8, 30), (0.0, 10), (1.0, 10)])
def test_stratified_fractions(fraction: float, n: int) -> None:
    records = pool(40, 4)
    triggered = {str(1000 + a) for a in range(0, 40, 3)}  # 14 abstracts, 56 sentences
    counts: Counter[str] = Counter()
    sample = sample_sentences(records, n=n, seed=5, triggered_pmids=triggered, trigger_fraction=fraction,
                              counts=counts)
    assert len(sample) == n
    got = sum(1 for r in sample if r.pmid in triggered)
    assert got == round(n * fraction)
    assert counts["sampled_triggered"] == got and counts["sampled_other"] == n - got
    assert counts["pool_triggered"] == 56 and counts["pool_other"] == 104


def test_stratified_shortfall_is_filled_from_the_other_stratum() -> None:
    records = pool(20, 2)
    triggered = {"1000", "1001"}  # 4 sentences only
    counts: Counter[str] = Counter()
    sample = sample_sentences(records, n=10, seed=2, triggered_pmids=triggered, trigger_fraction=0.8, counts=counts)
    assert len(sample) == 10
    assert sum(1 for r in sample if r.pmid in triggered) == 4
    assert counts["stratum_shortfall:triggered"] == 4


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n": -1},
        {"n": 3, "per_abstract": 0},
        {"n": 3, "trigger_fraction": 0.5},
        {"n": 3, "triggered_pmids": {"1"}, "trigger_fraction": 1.5},
    ],
)
def test_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        sample_sentences(pool(2, 2), seed=1, counts=Counter(), **kwargs)


def _doc(pmid: str, title: str, abstract: str) -> Document:
    return Document(pmid=pmid, title=title, text=title + "\n" + abstract)


@pytest.mark.parametrize(
    ("text", "phrases", "hit"),
    [
        ("Warfarin and the CYP2C9 Polymorphism.", ["polymorphism"], True),
        ("Warfarin and CYP2C9 polymorphisms.", ["polymorphism"], False),
        ("Patients were POOR\nmetabolizers of codeine.", ["poor metabolizers"], True),
        ("Patients were poormetabolizers of codeine.", ["poor metabolizers"], False),
        ("The HLA-B*57:01 allele and abacavir.", ["HLA-B*57:01"], True),
        ("in combination with cisplatin", ["combination", "co-administration"], True),
        ("no trigger here", [], False),
    ],
)
def test_pmids_with_triggers(text: str, phrases: list[str], hit: bool) -> None:
    docs = [_doc("1", "A title", text), _doc("2", "Another title", "nothing to see")]
    assert pmids_with_triggers(docs, phrases) == ({"1"} if hit else set())


def test_trigger_phrases_from_config(tmp_path: Path) -> None:
    from pipeline.corpus.select import DEFAULT_FILTER

    phrases = load_trigger_phrases(DEFAULT_FILTER)
    assert "polymorphism" in phrases and "poor metabolizer" in phrases
    plain = tmp_path / "triggers.txt"
    plain.write_text("# comment\ncombination\n\nplus\n", encoding="utf-8")
    assert load_trigger_phrases(plain) == ["combination", "plus"]
