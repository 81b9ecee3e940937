"""A one-way reference of the relation scorer's pair features, for the tests only.

The scorer computes both directions of a pair at once
(``pipeline.nlp.relations.features._pair_features_both``); this straightforward version computes one
direction, and the tests check that the two give the same features as multisets.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence

from pipeline.nlp.relations.features import _bucket, _gap, _gap_and_outside, _root_type
from pipeline.nlp.relations.proposals import _MODIFIER_DEPS, _trigger_type
from pipeline.nlp.relations.rules import RelationRules
from pipeline.nlp.relations.tree import _Entity, _overlap, _Tree


def pair_features(text: str, tree: _Tree, a: _Entity, b: _Entity, ents: Sequence[_Entity], outer: set[int],
                  rules: RelationRules) -> tuple[str, ...]:
    """Return the features of the ordered pair (``a`` as Arg1, ``b`` as Arg2) of one parsed sentence.

    Args:
        text: The document text (entity and token offsets are half-open, document-relative).
        tree: The sentence's parse.
        a: The candidate Arg1.
        b: The candidate Arg2.
        ents: All entities of the sentence, sorted by position.
        outer: Indices of the entities no other entity of the sentence contains.
        rules: The rule resources (trigger lexicon, argument order).

    Returns:
        Binary feature names; the same pair gives the same tuple.
    """
    p = tree.parse
    root = {t: _root_type(t, rules) for t in (a.type, b.type)}
    tp = f"{a.type}>{b.type}"
    ra, rb = rules.rank.get(a.type, 99), rules.rank.get(b.type, 99)
    feats = ["bias", f"tp={tp}", f"rtp={root[a.type]}>{root[b.type]}", f"rank={(ra > rb) - (ra < rb)}",
             f"first={'a' if a.start < b.start else 'b'}",
             f"nested={int(a.index not in outer)}{int(b.index not in outer)}"]
    left, right = (a, b) if a.start < b.start else (b, a)
    lo = bisect.bisect_left(tree.starts, left.end)
    between_tokens = [i for i in range(lo, bisect.bisect_right(tree.starts, right.start))
                      if tree.ends[i] <= right.start]
    feats.append(f"dist={_bucket(len(between_tokens))}")
    between = [e for e in ents if e is not a and e is not b and e.start >= left.end and e.end <= right.start]
    feats.append(f"between_ents={min(len(between), 3)}")
    # how many candidates of each side's kind the sentence offers (one variant and three phenotypes:
    # the variant is usually related to each)
    kinds = Counter(_root_type(e.type, rules) for e in ents if e.index in outer)
    same_a, same_b = kinds[root[a.type]], kinds[root[b.type]]
    feats += [f"n_a={min(same_a, 4)}", f"n_b={min(same_b, 4)}", f"tp|n={tp}|{min(same_a, 3)}|{min(same_b, 3)}",
              f"tp|dist={tp}|{_bucket(len(between_tokens))}", f"n_ents={_bucket(len(ents))}"]
    # is each argument the other's nearest candidate of its kind ("X increased Y and Z decreased W":
    # X goes with Y, not W)?  And how many entities of the same kind stand between them?
    rivals_b = [e for e in ents if e is not a and e is not b and e.index in outer
                and _root_type(e.type, rules) == root[b.type] and not _overlap(e.annotation, a.annotation)]
    rivals_a = [e for e in ents if e is not a and e is not b and e.index in outer
                and _root_type(e.type, rules) == root[a.type] and not _overlap(e.annotation, b.annotation)]
    gap = _gap(a, b)
    nearest = f"{int(all(_gap(b, e) > gap for e in rivals_a))}{int(all(_gap(a, e) > gap for e in rivals_b))}"
    between_kinds = Counter(_root_type(e.type, rules) for e in between if e.index in outer)
    same_between = f"{min(2, between_kinds[root[a.type]])}{min(2, between_kinds[root[b.type]])}"
    feats += [f"nearest={nearest}", f"tp|nearest={tp}|{nearest}", f"btw_same={same_between}"]
    feats += _gap_and_outside(text, tree, left, right)
    # the arguments' own last words ("CYP2C9 *3 allele", "warfarin dose")
    for ent, side in ((a, "a"), (b, "b")):
        feats.extend(f"ew{side}={p.lemmas[i]}" for i in sorted(ent.tokens)[-2:])
    if len(between_tokens) <= 5:
        feats.extend(f"bw={p.lemmas[i]}" for i in between_tokens)
        feats.append("bw_seq=" + "_".join(p.lemmas[i] for i in between_tokens))
    if a.head is None or b.head is None:
        return tuple(feats + ["unaligned"])
    feats += [f"ha={p.lemmas[a.head]}", f"hb={p.lemmas[b.head]}"]
    ha, hb = tree.collapsed(a.head), tree.collapsed(b.head)
    feats.append(f"head_deps={p.deps[a.head]}>{p.deps[b.head]}")
    if ha == hb:
        return tuple(feats + ["coordinated"])
    path = tree.path(ha, hb)
    if path is None:
        return tuple(feats + ["nopath"])
    feats += [f"plen={_bucket(len(path) - 1)}", f"tp|plen={tp}|{_bucket(len(path) - 1)}"]
    top = min(path, key=lambda i: (tree.depth[i], i))
    k = path.index(top)
    side_a = p.deps[path[k - 1]] if k > 0 else "top"
    side_b = p.deps[path[k + 1]] if k + 1 < len(path) else "top"
    shape = f"{side_a},{side_b}"
    feats += [f"shape={shape}", f"tp|shape={tp}|{shape}", f"top={p.lemmas[top]}", f"top_pos={p.tags[top]}",
              f"top|shape={p.lemmas[top]}|{shape}", f"tp|top={tp}|{p.lemmas[top]}",
              f"rtp|shape={root[a.type]}>{root[b.type]}|{shape}", f"toptag|tp={p.tags[top]}|{tp}"]
    if len(path) <= 7:
        feats.append("deps=" + ">".join(p.deps[i] for i in path[:k]) + "^" + "<".join(p.deps[i] for i in path[k + 1:]))
    inner = [i for i in path[1:-1] if i not in a.tokens and i not in b.tokens]
    if len(inner) <= 3:
        feats.append("plem=" + "_".join(p.lemmas[i] for i in inner))
    # other entities the path goes through ("X raised A-induced B": A stands between X and B); of a's
    # kind or b's, they may be the real partner
    on_path = [e for e in ents if e is not a and e is not b and e.index in outer and e.head in inner]
    same = (f"{min(2, sum(1 for e in on_path if _root_type(e.type, rules) == root[a.type]))}"
            f"{min(2, sum(1 for e in on_path if _root_type(e.type, rules) == root[b.type]))}")
    feats += [f"onpath={min(2, len(on_path))}", f"onpath_same={same}", f"tp|onpath_same={tp}|{same}"]
    trigger_types = []
    for i in inner:
        feats.append(f"pl={p.lemmas[i]}")
        t = _trigger_type(tree, i, rules)
        if t is not None:
            trigger_types.append(t)
            feats += [f"ptrig={t}", f"tp|ptrig={tp}|{t}"]
    top_trigger = _trigger_type(tree, top, rules) if top not in a.tokens and top not in b.tokens else None
    if top_trigger is not None:
        feats += [f"toptrig={top_trigger}", f"toptrig|shape={top_trigger}|{shape}"]
    for ent, side in ((a, "a"), (b, "b")):
        assert ent.head is not None
        for c in tree.children(ent.head):
            if c in ent.tokens or p.deps[c] not in _MODIFIER_DEPS:
                continue
            t = _trigger_type(tree, c, rules)
            if t is not None:
                feats.append(f"mod_{side}={t}")
    if not trigger_types and top_trigger is None:
        feats.append("notrigger")
    return tuple(feats)
