"""One sentence's dependency tree and entities, as the relation rules and the scorer read them."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.documents import Annotation, SentenceParse


@dataclass(frozen=True)
class _Entity:
    index: int  # in the document's annotations
    annotation: Annotation
    type: str
    head: int | None  # token index in the sentence parse (None: no parse or unaligned)
    tokens: frozenset[int]
    start: int = 0  # the annotation's bounds (document-relative), kept here: every pair asks for them
    end: int = 0


class _Tree:
    """A sentence parse with conjuncts collapsed onto their first conjunct."""

    def __init__(self, parse: SentenceParse) -> None:
        self.parse = parse
        self.n = len(parse.tokens)
        # computed once per sentence: every pair of its entities asks for them
        self.kids: list[list[int]] = [[] for _ in range(self.n)]
        for j, h in enumerate(parse.heads):
            if h != j:
                self.kids[h].append(j)
        self.depth = _depths(parse)
        self.starts = [s for s, _ in parse.tokens]
        self.ends = [e for _, e in parse.tokens]
        self._chains: dict[int, list[int]] = {}
        self.triggers: dict[int, str | None] = {}  # the trigger lexicon's type of each token asked about

    def collapsed(self, i: int) -> int:
        # "levels of X, Y and Z": Y and Z stand where X stands
        seen = 0
        while self.parse.deps[i] == "conj" and self.parse.heads[i] != i and seen < self.n:
            i = self.parse.heads[i]
            seen += 1
        return i

    def chain(self, i: int) -> list[int]:
        found = self._chains.get(i)
        if found is None:
            found = [i]
            while self.parse.heads[found[-1]] != found[-1] and len(found) <= self.n:
                found.append(self.parse.heads[found[-1]])
            self._chains[i] = found
        return found

    def path(self, a: int, b: int) -> list[int] | None:
        """Tokens from ``a`` to ``b`` through their lowest common ancestor (both ends included)."""
        up_a, up_b = self.chain(a), self.chain(b)
        on_b = set(up_b)
        common = next((t for t in up_a if t in on_b), None)
        if common is None:
            return None
        return up_a[: up_a.index(common) + 1] + list(reversed(up_b[: up_b.index(common)]))

    def children(self, i: int) -> list[int]:
        return self.kids[i]


def _align(ann: Annotation, tree: _Tree) -> tuple[frozenset[int], int | None]:
    """The tokens an annotation overlaps and its head token (the outermost one), or None."""
    found: set[int] = set()
    for fs, fe in ann.fragments:
        # tokens are sorted and disjoint: those ending after fs and starting before fe
        found.update(range(bisect.bisect_right(tree.ends, fs), bisect.bisect_left(tree.starts, fe)))
    tokens = frozenset(found)
    if not tokens:
        return tokens, None
    heads_of = tree.parse.heads
    heads = [i for i in sorted(tokens) if heads_of[i] not in tokens or heads_of[i] == i]
    if not heads:
        return tokens, min(tokens)
    # the outermost one: fewest arcs to the root
    return tokens, min(heads, key=lambda i: (tree.depth[i], i))


def _depths(parse: SentenceParse) -> list[int]:
    """[`_depth`][pipeline.nlp.relations.tree._depth] of every token, each arc walked once (known depths are reused)."""
    heads = parse.heads
    n = len(heads)
    depth: list[int | None] = [None] * n
    for i in range(n):
        walk: list[int] = []
        j = i
        while depth[j] is None and heads[j] != j:
            walk.append(j)
            j = heads[j]
            if len(walk) > n:  # a cycle: _depth's capped walk decides, token by token
                return [_depth(parse, k) for k in range(n)]
        d = depth[j]
        if d is None:  # a root
            d = depth[j] = 0
        for k in reversed(walk):
            d += 1
            depth[k] = d
    return [d for d in depth if d is not None]


def _depth(parse: SentenceParse, i: int) -> int:
    d = 0
    while parse.heads[i] != i and d <= len(parse.tokens):
        i = parse.heads[i]
        d += 1
    return d


def _outer(ents: Sequence[_Entity]) -> set[int]:
    """Indices of the entities no other entity of the sentence contains."""
    return {e.index for e in ents if not any(o is not e and o.start <= e.start and e.end <= o.end
                                             and _inside(e.annotation, o.annotation) for o in ents)}


def _inside(inner: Annotation, outer: Annotation) -> bool:
    """``inner`` lies within ``outer``'s fragments and is not the same span."""
    return inner.fragments != outer.fragments and all(
        any(os <= s and e <= oe for os, oe in outer.fragments) for s, e in inner.fragments)


def _overlap(a: Annotation, b: Annotation) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a.fragments for s2, e2 in b.fragments)
