"""Grouped, seeded k-fold splits (pipeline.nlp.folds).

Covers: pipeline.nlp.folds
"""

from __future__ import annotations

import pytest

from pipeline.nlp.folds import group_of, kfold_groups, subsample, train_test

NAMES = [f"{pmid}_{k}" for pmid in range(1000, 1040) for k in range(1, 1 + pmid % 3 + 1)]


def test_every_name_in_exactly_one_fold_and_pmids_never_straddle() -> None:
    folds = kfold_groups(NAMES, k=5, seed=13)
    assert len(folds) == 5
    assert sorted(n for f in folds for n in f) == sorted(NAMES)
    owner = {}
    for i, fold in enumerate(folds):
        for name in fold:
            assert owner.setdefault(group_of(name), i) == i
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 3  # within one group (at most 3 sentences here)


def test_split_is_deterministic_order_free_and_seeded() -> None:
    a = kfold_groups(NAMES, k=5, seed=13)
    assert kfold_groups(list(reversed(NAMES)), k=5, seed=13) == a
    assert kfold_groups(NAMES, k=5, seed=14) != a


def test_train_test_partition() -> None:
    folds = kfold_groups(NAMES, k=4, seed=1)
    train, test = train_test(folds, 2)
    assert set(train).isdisjoint(test) and sorted(train + test) == sorted(NAMES)
    assert {group_of(n) for n in train}.isdisjoint({group_of(n) for n in test})
    with pytest.raises(ValueError):
        train_test(folds, 4)


def test_subsample_is_nested_and_whole_groups() -> None:
    small, large = subsample(NAMES, 10, seed=13), subsample(NAMES, 30, seed=13)
    assert 10 <= len(small) <= 12 and set(small) <= set(large)
    for name in small:
        assert all(n in small for n in NAMES if group_of(n) == group_of(name))


def test_too_few_groups() -> None:
    with pytest.raises(ValueError, match="cannot fill"):
        kfold_groups(["1_1", "1_2", "2_1"], k=3)
    with pytest.raises(ValueError):
        kfold_groups(NAMES, k=1)
