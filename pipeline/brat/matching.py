"""Maximum bipartite matching (Hopcroft-Karp) and span-overlap helpers.

Used to pair annotations one-to-one when "matching" is looser than equality
(partial span overlap): a greedy pass can pair a reference annotation with the
wrong prediction and leave another pair unmatched, while a maximum matching
pairs as many as possible.  Hopcroft-Karp runs in ``O(E * sqrt(V))``.

Offsets: spans are half-open ``[start, end)`` character offsets; fragments of
one annotation are a sequence of such spans, all in the same offset space.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from pipeline.documents import Span

L = TypeVar("L", bound=Hashable)
R = TypeVar("R", bound=Hashable)

_INF = float("inf")


def max_bipartite_matching(left: Sequence[L], adjacency: Mapping[L, Sequence[R]]) -> dict[L, R]:
    """Find a maximum matching of a bipartite graph (Hopcroft-Karp).

    Deterministic: vertices and edges are explored in the order given, so
    the same input always yields the same matching.

    Args:
        left: The left vertices (distinct, hashable).
        adjacency: For a left vertex ``u``, ``adjacency[u]`` lists the right vertices ``u`` may be
            matched with (a vertex missing from ``adjacency`` has no edge).

    Returns:
        ``{left vertex: right vertex}`` with every right vertex used at most once and as many pairs
            as possible; unmatched left vertices are absent.
    """
    pair_u: dict[L, R | None] = {u: None for u in left}
    pair_v: dict[R, L | None] = {}
    for u in left:
        for v in adjacency.get(u, ()):
            pair_v.setdefault(v, None)
    dist: dict[L | None, float] = {}

    def bfs() -> bool:
        queue: deque[L] = deque()
        for u in left:
            if pair_u[u] is None:
                dist[u] = 0
                queue.append(u)
            else:
                dist[u] = _INF
        dist[None] = _INF
        while queue:
            u = queue.popleft()
            if dist[u] < dist[None]:
                for v in adjacency.get(u, ()):
                    w = pair_v[v]
                    if dist[w] == _INF:
                        dist[w] = dist[u] + 1
                        if w is not None:
                            queue.append(w)
        return dist[None] != _INF

    def dfs(root: L) -> bool:
        # Iterative DFS along layered augmenting paths (recursion could hit
        # Python's limit on large documents).
        stack: list[tuple[L, int]] = [(root, 0)]
        path: list[tuple[L, R]] = []
        while stack:
            u, i = stack[-1]
            edges = adjacency.get(u, ())
            advanced = False
            while i < len(edges):
                v = edges[i]
                i += 1
                w = pair_v[v]
                if w is None and dist[None] == dist[u] + 1:
                    # Augmenting path found: flip it.
                    path.append((u, v))
                    for pu, pv in path:
                        pair_u[pu] = pv
                        pair_v[pv] = pu
                    return True
                if w is not None and dist[w] == dist[u] + 1:
                    stack[-1] = (u, i)
                    path.append((u, v))
                    stack.append((w, 0))
                    advanced = True
                    break
            if not advanced:
                dist[u] = _INF
                stack.pop()
                if path:
                    path.pop()
        return False

    while bfs():
        for u in left:
            if pair_u[u] is None:
                dfs(u)
    return {u: v for u, v in pair_u.items() if v is not None}


def spans_overlap(a: Iterable[Span], b: Iterable[Span]) -> bool:
    """Tell whether two fragmented spans share a character.

    Args:
        a: The fragments of one annotation, half-open ``(start, end)`` character offsets.
        b: The fragments of the other, in the same offset space (same text).

    Returns:
        True when some fragment of ``a`` shares at least one character with some fragment of ``b``
            (touching spans, ``end == start``, do not overlap).
    """
    bs = list(b)
    return any(s1 < e2 and s2 < e1 for s1, e1 in a for s2, e2 in bs)


def match_count(left: Sequence[L], adjacency: Mapping[L, Sequence[R]]) -> int:
    """Count the pairs of a maximum matching.

    Args:
        left: The left vertices, as for
            [`max_bipartite_matching`][pipeline.brat.matching.max_bipartite_matching].
        adjacency: The right vertices each left vertex may be matched with.

    Returns:
        The size of a maximum matching.
    """
    return len(max_bipartite_matching(left, adjacency))


__all__ = ["match_count", "max_bipartite_matching", "spans_overlap"]
