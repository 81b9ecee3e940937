"""Grouped, seeded k-fold splits for out-of-fold evaluation of pre-annotation.

Documents are brat names such as ``10070957_8`` (``{PMID}_{k}``, one sentence
each in the PGxCorpus release).  All names of one PMID go to the same fold, so
the sentences of one abstract never straddle the training and the held-out
side (their shared entities would leak).  The assignment depends only on the
seed and the set of groups: every PMID gets the rank of
``sha256(f"{seed}:{pmid}")``, and the ranked groups are dealt round-robin to
the folds, which keeps fold sizes within one group of each other and makes the
split independent of the order in which names are given.

Used by ``bench/preannotation_agreement.py``, ``bench/preannotation.py``,
``pipeline.nlp.learned`` and the tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

#: Default number of folds and seed of the benches.
DEFAULT_K = 5
DEFAULT_SEED = 13


def group_of(name: str) -> str:
    """Return the PMID group of a brat document name.

    Args:
        name: A brat document name such as ``12345_3`` (``{PMID}_{k}``).

    Returns:
        The part before the first ``_`` (``12345_3`` -> ``12345``); a name
            without ``_`` is its own group.
    """
    return name.split("_", 1)[0]


def _rank(seed: int, group: str) -> str:
    return hashlib.sha256(f"{seed}:{group}".encode()).hexdigest()


def kfold_groups(names: Iterable[str], k: int = DEFAULT_K, seed: int = DEFAULT_SEED) -> list[list[str]]:
    """Split document names into ``k`` folds grouped by PMID.

    Groups are dealt largest first (ties broken by their seeded rank) to the
    currently smallest fold, which balances the folds' sentence counts.
    Duplicate names count once; the order of ``names`` does not matter.

    Args:
        names: brat document names (``{PMID}_{k}``), grouped with
            [`group_of`][pipeline.nlp.folds.group_of].
        k: Number of folds, at least 2.
        seed: Seed of the rank that breaks ties between groups of equal size.

    Returns:
        ``k`` lists of names, each sorted; every name is in exactly one fold
            and all names of one PMID are in the same fold.

    Raises:
        ValueError: If ``k < 2`` or there are fewer PMID groups than folds.
    """
    if k < 2:
        raise ValueError(f"k-fold needs k >= 2, got {k}")
    groups: dict[str, list[str]] = {}
    for name in sorted(set(names)):
        groups.setdefault(group_of(name), []).append(name)
    if len(groups) < k:
        raise ValueError(f"{len(groups)} PMID groups cannot fill {k} folds")
    # Largest groups first (ties by seeded rank) to the currently smallest fold: balanced sentence counts.
    order = sorted(groups, key=lambda g: (-len(groups[g]), _rank(seed, g)))
    folds: list[list[str]] = [[] for _ in range(k)]
    for group in order:
        smallest = min(range(k), key=lambda i: (len(folds[i]), i))
        folds[smallest].extend(groups[group])
    return [sorted(f) for f in folds]


def train_test(folds: Sequence[Sequence[str]], held_out: int) -> tuple[list[str], list[str]]:
    """Split folds into a training side and a held-out side.

    Args:
        folds: Folds as returned by [`kfold_groups`][pipeline.nlp.folds.kfold_groups].
        held_out: Index (0-based) of the fold held out.

    Returns:
        ``(training names, held-out names)``, each sorted; the training side is
            every fold but ``held_out``.

    Raises:
        ValueError: If ``held_out`` is not a valid fold index.
    """
    if not 0 <= held_out < len(folds):
        raise ValueError(f"fold {held_out} out of range 0..{len(folds) - 1}")
    train = sorted(n for i, f in enumerate(folds) if i != held_out for n in f)
    return train, sorted(folds[held_out])


def subsample(names: Sequence[str], size: int, seed: int = DEFAULT_SEED) -> list[str]:
    """Take a seeded sample of about ``size`` names, whole PMID groups at a time.

    Used for learning curves: groups are taken in the order of their seeded
    rank, so for one seed the 50-sentence sample is contained in the
    100-sentence one, and so on.  Groups are added whole, so the result may
    hold slightly more than ``size`` names when the last group has several.

    Args:
        names: brat document names (``{PMID}_{k}``); duplicates count once.
        size: Wanted number of names; groups are added until the sample holds
            at least this many (or every name).
        seed: Seed of the group rank.

    Returns:
        The sampled names, sorted.
    """
    groups: dict[str, list[str]] = {}
    for name in sorted(set(names)):
        groups.setdefault(group_of(name), []).append(name)
    out: list[str] = []
    for group in sorted(groups, key=lambda g: _rank(seed + 1, g)):
        if len(out) >= size:
            break
        out.extend(groups[group])
    return sorted(out)
