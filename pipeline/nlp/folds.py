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
    """The PMID of a brat document name (``12345_3`` -> ``12345``; a name without ``_`` is its own group)."""
    return name.split("_", 1)[0]


def _rank(seed: int, group: str) -> str:
    return hashlib.sha256(f"{seed}:{group}".encode()).hexdigest()


def kfold_groups(names: Iterable[str], k: int = DEFAULT_K, seed: int = DEFAULT_SEED) -> list[list[str]]:
    """Split document names into ``k`` folds grouped by PMID.

    Returns ``k`` lists of names (each sorted); every name is in exactly one
    fold and all names of one PMID are in the same fold.  Raises ValueError
    when ``k < 2`` or there are fewer groups than folds.
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
    """(training names, held-out names) for fold number ``held_out`` of :func:`kfold_groups`' result."""
    if not 0 <= held_out < len(folds):
        raise ValueError(f"fold {held_out} out of range 0..{len(folds) - 1}")
    train = sorted(n for i, f in enumerate(folds) if i != held_out for n in f)
    return train, sorted(folds[held_out])


def subsample(names: Sequence[str], size: int, seed: int = DEFAULT_SEED) -> list[str]:
    """The first ``size`` names by seeded rank of their PMID group (whole groups; nested for growing sizes).

    Used for learning curves: the 50-sentence sample is contained in the
    100-sentence one, and so on.  Groups are added whole, so the result may
    hold slightly more than ``size`` names when the last group has several.
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
