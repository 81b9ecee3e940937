"""The learned scorer's features: of an ordered pair, of its type, and of its context in the sentence."""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

from pipeline.documents import SentenceParse
from pipeline.nlp.relations.proposals import _MODIFIER_DEPS, _abbreviation, _trigger_type
from pipeline.nlp.relations.rules import RelationRules
from pipeline.nlp.relations.tree import _Entity, _overlap, _Tree


def _bucket(n: int) -> str:
    for limit, name in ((0, "0"), (1, "1"), (2, "2"), (4, "3-4"), (7, "5-7"), (12, "8-12"), (20, "13-20")):
        if n <= limit:
            return name
    return ">20"


def _gap(x: _Entity, y: _Entity) -> int:
    return max(0, max(x.start, y.start) - min(x.end, y.end))


def _gap_and_outside(text: str, tree: _Tree, left: _Entity, right: _Entity) -> list[str]:
    """The direction-free features of a pair's surroundings.

    The punctuation between the two entities (``left`` ends before ``right`` starts, half-open
    sentence-relative offsets), then the lemmas of the words just outside the pair.
    """
    p = tree.parse
    gap_text = text[left.end:right.start]
    out = [f"gap_{name}" for ch, name in ((";", "semi"), (":", "colon"), ("(", "lpar"), (")", "rpar"), (",", "comma"))
           if ch in gap_text]
    before = bisect.bisect_right(tree.ends, left.start) - 1
    if 0 <= before < tree.n and tree.ends[before] <= left.start:
        out.append(f"wl={p.lemmas[before]}")
    after = bisect.bisect_left(tree.starts, right.end)
    if after < tree.n:
        out.append(f"wr={p.lemmas[after]}")
    return out


class _SentenceInfo:
    """What every pair of one sentence asks about its entities, computed once per sentence."""

    def __init__(self, ents: Sequence[_Entity], outer: set[int], rules: RelationRules) -> None:
        self.root = {e.index: _root_type(e.type, rules) for e in ents}
        self.kinds: Counter[str] = Counter(self.root[e.index] for e in ents if e.index in outer)
        self.by_kind: dict[str, list[_Entity]] = {}
        for e in ents:
            if e.index in outer:
                self.by_kind.setdefault(self.root[e.index], []).append(e)
        self.overlapping = {(x.index, y.index) for x in ents for y in ents
                            if x is not y and x.start < y.end and y.start < x.end
                            and _overlap(x.annotation, y.annotation)}
        self._words: dict[int, list[str]] = {}
        self.n_ents = f"n_ents={_bucket(len(ents))}"
        self.by_head: dict[int, list[_Entity]] = {}  # outer entities by head token
        for e in ents:
            if e.index in outer and e.head is not None:
                self.by_head.setdefault(e.head, []).append(e)

    def last_words(self, parse: SentenceParse, e: _Entity) -> list[str]:
        """The lemmas of an entity's last two tokens (asked by each of its pairs)."""
        found = self._words.get(e.index)
        if found is None:
            found = self._words[e.index] = [parse.lemmas[i] for i in sorted(e.tokens)[-2:]]
        return found


def _add_path_features(tree: _Tree, a: _Entity, b: _Entity, path: list[int], rules: RelationRules,
                       info: _SentenceInfo, ab: list[str], ba: list[str], both: list[str]) -> None:
    """Add the features of the dependency path between the heads of a and b to the pair's features.

    Args:
        tree: The sentence's parse tree.
        a: The first entity of the pair (its head set).
        b: The second entity of the pair (its head set).
        path: The tokens of the path from a's collapsed head to b's.
        rules: The relation rules (type ranks, triggers).
        info: What the sentence's pairs share.
        ab: The features of (a, b), extended.
        ba: The features of (b, a), extended.
        both: The features of both directions, extended.
    """
    p = tree.parse
    root_a, root_b = info.root[a.index], info.root[b.index]
    tp, pt = f"{a.type}>{b.type}", f"{b.type}>{a.type}"
    rtp, prt = f"{root_a}>{root_b}", f"{root_b}>{root_a}"
    plen = _bucket(len(path) - 1)
    both.append(f"plen={plen}")
    ab.append(f"tp|plen={tp}|{plen}")
    ba.append(f"tp|plen={pt}|{plen}")
    top = min(path, key=lambda i: (tree.depth[i], i))
    k = path.index(top)
    side_a = p.deps[path[k - 1]] if k > 0 else "top"
    side_b = p.deps[path[k + 1]] if k + 1 < len(path) else "top"
    shape, epahs = f"{side_a},{side_b}", f"{side_b},{side_a}"
    top_lemma, top_tag = p.lemmas[top], p.tags[top]
    both += [f"top={top_lemma}", f"top_pos={top_tag}"]
    ab += [f"shape={shape}", f"tp|shape={tp}|{shape}", f"top|shape={top_lemma}|{shape}", f"tp|top={tp}|{top_lemma}",
           f"rtp|shape={rtp}|{shape}", f"toptag|tp={top_tag}|{tp}"]
    ba += [f"shape={epahs}", f"tp|shape={pt}|{epahs}", f"top|shape={top_lemma}|{epahs}", f"tp|top={pt}|{top_lemma}",
           f"rtp|shape={prt}|{epahs}", f"toptag|tp={top_tag}|{pt}"]
    if len(path) <= 7:
        up, down = [p.deps[i] for i in path[:k]], [p.deps[i] for i in path[k + 1:]]
        ab.append("deps=" + ">".join(up) + "^" + "<".join(down))
        ba.append("deps=" + ">".join(reversed(down)) + "^" + "<".join(reversed(up)))
    inner = [i for i in path[1:-1] if i not in a.tokens and i not in b.tokens]
    if len(inner) <= 3:
        ab.append("plem=" + "_".join(p.lemmas[i] for i in inner))
        ba.append("plem=" + "_".join(p.lemmas[i] for i in reversed(inner)))
    on_a = on_b = on_all = 0  # outer entities whose head is on the path (few sentences have any)
    for i in inner:
        for e in info.by_head.get(i, ()):
            if e is not a and e is not b:
                on_all += 1
                kind = info.root[e.index]
                on_a += kind == root_a
                on_b += kind == root_b
    on_a, on_b = min(2, on_a), min(2, on_b)
    both.append(f"onpath={min(2, on_all)}")
    ab += [f"onpath_same={on_a}{on_b}", f"tp|onpath_same={tp}|{on_a}{on_b}"]
    ba += [f"onpath_same={on_b}{on_a}", f"tp|onpath_same={pt}|{on_b}{on_a}"]
    any_trigger = False
    for i in inner:
        both.append(f"pl={p.lemmas[i]}")
        t = _trigger_type(tree, i, rules)
        if t is not None:
            any_trigger = True
            both.append(f"ptrig={t}")
            ab.append(f"tp|ptrig={tp}|{t}")
            ba.append(f"tp|ptrig={pt}|{t}")
    top_trigger = _trigger_type(tree, top, rules) if top not in a.tokens and top not in b.tokens else None
    if top_trigger is not None:
        both.append(f"toptrig={top_trigger}")
        ab.append(f"toptrig|shape={top_trigger}|{shape}")
        ba.append(f"toptrig|shape={top_trigger}|{epahs}")
    for ent, side, other in ((a, "a", "b"), (b, "b", "a")):
        assert ent.head is not None
        for c in tree.children(ent.head):
            if c in ent.tokens or p.deps[c] not in _MODIFIER_DEPS:
                continue
            t = _trigger_type(tree, c, rules)
            if t is not None:
                ab.append(f"mod_{side}={t}")
                ba.append(f"mod_{other}={t}")
    if not any_trigger and top_trigger is None:
        both.append("notrigger")


def _pair_features_both(text: str, tree: _Tree, a: _Entity, b: _Entity, ents: Sequence[_Entity], outer: set[int],
                        rules: RelationRules, info: _SentenceInfo) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return the features of the ordered pairs (a, b) and (b, a) of one parsed sentence, computed together.

    The features: entity types, the dependency path's labels, words and triggers, the words between and
    around, coordination, nesting, nearest candidates of each kind.  What does not depend on the direction
    (the words between and around, the path's words) is computed once; the tests keep a one-way
    reference of the same features (as multisets) to check this against.
    """
    p = tree.parse
    ia, ib = a.index, b.index
    root_a, root_b = info.root[ia], info.root[ib]
    tp, pt = f"{a.type}>{b.type}", f"{b.type}>{a.type}"
    rtp, prt = f"{root_a}>{root_b}", f"{root_b}>{root_a}"
    ra, rb = rules.rank.get(a.type, 99), rules.rank.get(b.type, 99)
    nested_a, nested_b = int(ia not in outer), int(ib not in outer)
    ab = ["bias", f"tp={tp}", f"rtp={rtp}", f"rank={(ra > rb) - (ra < rb)}",
          f"first={'a' if a.start < b.start else 'b'}", f"nested={nested_a}{nested_b}"]
    ba = ["bias", f"tp={pt}", f"rtp={prt}", f"rank={(rb > ra) - (rb < ra)}",
          f"first={'a' if b.start < a.start else 'b'}", f"nested={nested_b}{nested_a}"]
    both: list[str] = []  # the same in both directions
    left, right = (a, b) if a.start < b.start else (b, a)
    lo = bisect.bisect_left(tree.starts, left.end)
    between_tokens = [i for i in range(lo, bisect.bisect_right(tree.starts, right.start))
                      if tree.ends[i] <= right.start]
    dist = _bucket(len(between_tokens))
    between = [e for e in ents if e is not a and e is not b and e.start >= left.end and e.end <= right.start]
    both += [f"dist={dist}", f"between_ents={min(len(between), 3)}", info.n_ents]
    same_a, same_b = info.kinds[root_a], info.kinds[root_b]
    ab += [f"n_a={min(same_a, 4)}", f"n_b={min(same_b, 4)}", f"tp|n={tp}|{min(same_a, 3)}|{min(same_b, 3)}",
           f"tp|dist={tp}|{dist}"]
    ba += [f"n_a={min(same_b, 4)}", f"n_b={min(same_a, 4)}", f"tp|n={pt}|{min(same_b, 3)}|{min(same_a, 3)}",
           f"tp|dist={pt}|{dist}"]
    gap = _gap(a, b)
    overlapping = info.overlapping
    # a's kind not overlapping b, b's kind not overlapping a; _gap(x, e) > gap written out (gap >= 0,
    # so _gap's max(0, ...) changes nothing): it is asked of every such entity of every pair
    bs, be, as_, ae = b.start, b.end, a.start, a.end
    near_b = int(all((bs if bs > e.start else e.start) - (be if be < e.end else e.end) > gap
                     for e in info.by_kind.get(root_a, ())
                     if e is not a and e is not b and (e.index, ib) not in overlapping))
    near_a = int(all((as_ if as_ > e.start else e.start) - (ae if ae < e.end else e.end) > gap
                     for e in info.by_kind.get(root_b, ())
                     if e is not a and e is not b and (e.index, ia) not in overlapping))
    btw_a = btw_b = 0  # outer entities between of a's kind and of b's (usually none are)
    for e in between:
        if e.index in outer:
            kind = info.root[e.index]
            btw_a += kind == root_a
            btw_b += kind == root_b
    btw_a, btw_b = min(2, btw_a), min(2, btw_b)
    ab += [f"nearest={near_b}{near_a}", f"tp|nearest={tp}|{near_b}{near_a}", f"btw_same={btw_a}{btw_b}"]
    ba += [f"nearest={near_a}{near_b}", f"tp|nearest={pt}|{near_a}{near_b}", f"btw_same={btw_b}{btw_a}"]
    both += _gap_and_outside(text, tree, left, right)
    words_a, words_b = info.last_words(p, a), info.last_words(p, b)
    ab += [f"ewa={w}" for w in words_a] + [f"ewb={w}" for w in words_b]
    ba += [f"ewa={w}" for w in words_b] + [f"ewb={w}" for w in words_a]
    if len(between_tokens) <= 5:
        both.extend(f"bw={p.lemmas[i]}" for i in between_tokens)
        both.append("bw_seq=" + "_".join(p.lemmas[i] for i in between_tokens))
    if a.head is None or b.head is None:
        both.append("unaligned")
        return tuple(ab + both), tuple(ba + both)
    ab += [f"ha={p.lemmas[a.head]}", f"hb={p.lemmas[b.head]}", f"head_deps={p.deps[a.head]}>{p.deps[b.head]}"]
    ba += [f"ha={p.lemmas[b.head]}", f"hb={p.lemmas[a.head]}", f"head_deps={p.deps[b.head]}>{p.deps[a.head]}"]
    ha, hb = tree.collapsed(a.head), tree.collapsed(b.head)
    if ha == hb:
        both.append("coordinated")
        return tuple(ab + both), tuple(ba + both)
    path = tree.path(ha, hb)
    if path is None:
        both.append("nopath")
        return tuple(ab + both), tuple(ba + both)
    _add_path_features(tree, a, b, path, rules, info, ab, ba, both)
    return tuple(ab + both), tuple(ba + both)


#: parts of speech whose lemmas are type features (function words and punctuation say nothing of the type)
_CONTENT_TAGS = frozenset({"NOUN", "VERB", "ADJ", "ADV", "PROPN"})


def _type_features(tree: _Tree, first: _Entity, second: _Entity, rules: RelationRules) -> tuple[str, ...]:
    """Features that only the type model reads, of the ordered pair (``first`` as Arg1).

    Computed for the pairs the scorer proposes only (after the pair threshold), so they cost
    nothing on the others.  What says which way an effect goes ("increased risk of X", "lower
    plasma levels of Y in carriers of Z") is often off the dependency path between the two
    arguments, or more than five words away: the content words between the arguments and just
    around them, the trigger types among them and the one nearest to the arguments, and the words
    governing each argument (up to three steps up) with the trigger types of their modifiers.
    """
    p = tree.parse
    left, right = (first, second) if first.start < second.start else (second, first)
    lo = bisect.bisect_left(tree.starts, left.start)
    hi = bisect.bisect_right(tree.ends, right.end)
    inside = first.tokens | second.tokens
    feats: list[str] = []
    near: tuple[int, str] | None = None
    for i in range(max(0, lo - 3), min(tree.n, hi + 3)):
        if i in inside or p.tags[i] not in _CONTENT_TAGS:
            continue
        where = "in" if tree.starts[i] >= left.end and tree.ends[i] <= right.start else "out"
        feats.append(f"t_w={p.lemmas[i]}")
        t = _trigger_type(tree, i, rules)
        if t is not None:
            feats.append(f"t_trig_{where}={t}")
            d = min(abs(i - j) for j in inside) if inside else 0
            if near is None or d < near[0]:
                near = (d, t)
    if near is not None:
        feats += [f"t_near={near[1]}", f"t_near|tp={near[1]}|{first.type}>{second.type}"]
    for ent, side in ((first, "a"), (second, "b")):
        if ent.head is None:
            continue
        for i in tree.chain(ent.head)[1:4]:
            if i in inside:
                break
            feats.append(f"t_anc_{side}={p.lemmas[i]}")
            t = _trigger_type(tree, i, rules)
            if t is not None:
                feats.append(f"t_anctrig_{side}={t}")
            for c in tree.children(i):
                if c not in inside and p.deps[c] in _MODIFIER_DEPS:
                    t = _trigger_type(tree, c, rules)
                    if t is not None:
                        feats.append(f"t_ancmod_{side}={t}")
    return tuple(dict.fromkeys(feats))


def _root_type(type_: str, rules: RelationRules) -> str:
    # the entity hierarchy's roots by rank: the argument order lists them
    return str(rules.rank.get(type_, 99))


def _prob_bucket(x: float) -> str:
    return str(min(9, int(x * 10)))


def context_features(p_xy: float, p_yx: float, top_x: float, n_x: int, top_y: float, n_y: int) -> dict[str, float]:
    """Return the context model's features of one ordered pair.

    Args:
        p_xy: The pair model's probability of the pair in this direction.
        p_yx: The same in the other direction.
        top_x: The best pair-model probability (best direction) among Arg1's other pairs in the sentence (0: none).
        n_x: How many of Arg1's other pairs reach 0.5.
        top_y: The same as ``top_x`` for Arg2.
        n_y: The same as ``n_x`` for Arg2.

    Returns:
        Feature name -> value (probabilities, log-odds, or 1.0 for indicators).
    """
    best = max(p_xy, p_yx)
    feats = {"bias": 1.0, "p": p_xy, "prev": p_yx, "lp": math.log(p_xy + 1e-6) - math.log(1.0 - p_xy + 1e-6),
             f"p={_prob_bucket(p_xy)}": 1.0, f"prev={_prob_bucket(p_yx)}": 1.0,
             f"dirbest={int(p_xy >= p_yx)}": 1.0}
    flags = []
    for role, top, n in (("x", top_x, n_x), ("y", top_y, n_y)):
        feats[f"{role}_max_other"] = top
        feats[f"{role}_max_other={_prob_bucket(top)}"] = 1.0
        flags.append(str(int(best >= top)))
        feats[f"{role}_isbest={flags[-1]}"] = 1.0
        feats[f"{role}_n_over={min(3, n)}"] = 1.0
    feats[f"p|best={_prob_bucket(p_xy)}|{''.join(flags)}"] = 1.0
    return feats


# (Arg1 candidate, Arg2 candidate, features a->b, features b->a) of one sentence's scored pairs
_PairRow = tuple[_Entity, _Entity, tuple[str, ...], tuple[str, ...]]


def _type_pair(a: str, b: str) -> str:
    return f"{a}|{b}" if a <= b else f"{b}|{a}"


def _candidate_pairs(text: str, tree: _Tree, ents: Sequence[_Entity], outer: set[int], rules: RelationRules,
                     pair_types: frozenset[str] = frozenset()) -> list[_PairRow]:
    """The unordered pairs the scorer decides on.

    Neither overlapping nor an abbreviation, of a type pair in ``pair_types`` (empty: any).
    """
    info = _SentenceInfo(ents, outer, rules)
    out = []
    for x, a in enumerate(ents):
        for b in ents[x + 1:]:
            if (a.index, b.index) in info.overlapping or (pair_types and _type_pair(a.type, b.type) not in pair_types):
                continue
            if _abbreviation(text, a, b, rules) is not None:  # a long form or a nested one: never scored
                continue
            out.append((a, b, *_pair_features_both(text, tree, a, b, ents, outer, rules, info)))
    return out
