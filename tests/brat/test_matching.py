"""Tests of pipeline.brat.matching.

Covers: pipeline.brat.matching
"""

from __future__ import annotations

import itertools
import random

import pytest

from pipeline.brat.matching import match_count, max_bipartite_matching, spans_overlap


def brute_force(left: list[int], adjacency: dict[int, list[str]]) -> int:
    """Size of a maximum matching by trying every assignment (tiny graphs only)."""
    best = 0
    options = [[None, *adjacency.get(u, [])] for u in left]
    for choice in itertools.product(*options):
        used = [v for v in choice if v is not None]
        if len(used) == len(set(used)):
            best = max(best, len(used))
    return best


def check_valid(left: list, adjacency: dict, matching: dict) -> None:
    assert len(set(matching.values())) == len(matching)
    for u, v in matching.items():
        assert u in left
        assert v in adjacency[u]


@pytest.mark.parametrize(
    ("left", "adjacency", "size"),
    [
        ([], {}, 0),
        ([1], {}, 0),
        ([1], {1: ["a"]}, 1),
        # greedy takes 1-a first and then 2 has nothing; the maximum matching is 1-b, 2-a
        ([1, 2], {1: ["a", "b"], 2: ["a"]}, 2),
        # a chain needing an augmenting path of length 5
        ([1, 2, 3], {1: ["a", "b"], 2: ["b", "c"], 3: ["a"]}, 3),
        ([1, 2, 3], {1: ["a"], 2: ["a"], 3: ["a"]}, 1),
        ([1, 2], {1: ["a", "a"], 2: ["a"]}, 1),
    ],
)
def test_known_sizes(left: list, adjacency: dict, size: int) -> None:
    m = max_bipartite_matching(left, adjacency)
    check_valid(left, adjacency, m)
    assert len(m) == size
    assert match_count(left, adjacency) == size


def test_random_graphs_match_brute_force() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n, k = rng.randint(1, 6), rng.randint(1, 6)
        right = [f"r{i}" for i in range(k)]
        left = list(range(n))
        adjacency = {u: rng.sample(right, rng.randint(0, k)) for u in left}
        m = max_bipartite_matching(left, adjacency)
        check_valid(left, adjacency, m)
        assert len(m) == brute_force(left, adjacency)


def test_deterministic_and_large() -> None:
    n = 3000
    left = list(range(n))
    # every u may take u or u+1: a perfect matching exists; a naive recursive DFS would go 3000 deep
    adjacency = {u: [u + 1, u] for u in left}
    m1 = max_bipartite_matching(left, adjacency)
    assert len(m1) == n
    assert m1 == max_bipartite_matching(left, adjacency)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([(0, 5)], [(5, 8)], False),  # half-open: touching is no overlap
        ([(0, 5)], [(4, 8)], True),
        ([(0, 3), (10, 12)], [(4, 9)], False),  # falls in the gap of a discontiguous span
        ([(0, 3), (10, 12)], [(11, 20)], True),
        ([(2, 3)], [(0, 10)], True),
    ],
)
def test_spans_overlap(a: list, b: list, expected: bool) -> None:
    assert spans_overlap(a, b) is expected
    assert spans_overlap(b, a) is expected
