"""The rules' proposals in one sentence: abbreviations, trigger paths and modifiers, direction, type, modality."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.documents import MODALITIES, SentenceParse
from pipeline.nlp.relations.rules import EQUIVALENT, RelationRules
from pipeline.nlp.relations.tree import _depth, _Entity, _Tree

HYPOTHETICAL, NEGATED = MODALITIES


#: between the long form and the short form: the opening parenthesis, after "gene" ("dihydropyrimidine
#: dehydrogenase gene ( DPYD )"), or before earlier synonyms separated by ";" ("( SM360320 ; 1V136 )").  Not
#: after a comma, which lists examples as often as synonyms, nor a slash or "or", which join as often the
#: parts of a complex or alternatives: "AP-1 (c-Jun/c-Fos)", "NF-E2 (or AP-1)" (GENIA abstracts)
_ABBREVIATION_GAP = re.compile(r"^\s*(?:gene\s*)?\(\s*(?:[^()\s;][^();]{0,40};\s*){0,3}$")


_ABBREVIATION_END = re.compile(r"^\s*[);,]")


#: dependencies of a verb's subject; the subject side of a trigger verb is the acting side
_SUBJECT_DEPS = frozenset({"nsubj", "csubj", "agent"})


_PASSIVE_SUBJECT_DEPS = frozenset({"nsubjpass", "csubjpass"})


#: dependents of a path word that may carry its modality ("may", "whether", "not")
_MODALITY_DEPS = frozenset({"neg", "aux", "auxpass", "mark", "det", "advmod", "amod", "preconj", "cc"})


_MODIFIER_DEPS = frozenset({"amod", "compound", "nmod", "npadvmod", "advmod", "acl"})


@dataclass(frozen=True)
class _Proposal:
    type: str
    arg1: _Entity
    arg2: _Entity
    rule: str
    trigger: str | None = None
    modality: tuple[str, ...] = ()


def _modality(tree: _Tree, words: Sequence[int], rules: RelationRules) -> tuple[str, ...]:
    """Modality stated around ``words`` (path and trigger): their cue dependents and governing words."""
    p = tree.parse
    scope: list[int] = []
    for w in words:
        scope.append(w)
        scope.extend(c for c in tree.children(w) if p.deps[c] in _MODALITY_DEPS)
    top = words[0] if words else None
    if top is not None:
        # the words governing the path ("we investigated whether ...", "it is suggested that ...")
        for g in tree.chain(top)[1:]:
            scope.append(g)
            scope.extend(c for c in tree.children(g) if p.deps[c] in _MODALITY_DEPS)
    lemmas = {p.lemmas[i] for i in scope}
    negated = any(p.deps[i] == "neg" for i in scope) or bool(lemmas & rules.negation)
    hedged = bool(lemmas & rules.hedges)
    return tuple(m for m, on in ((HYPOTHETICAL, hedged), (NEGATED, negated)) if on)


def _direct(a: _Entity, b: _Entity, tree: _Tree | None, trigger: int | None, rules: RelationRules) -> tuple[
        _Entity, _Entity]:
    ra, rb = rules.rank.get(a.type, len(rules.rank)), rules.rank.get(b.type, len(rules.rank))
    if ra != rb:
        return (a, b) if ra < rb else (b, a)
    if tree is not None and trigger is not None and a.head is not None and b.head is not None:
        p = tree.parse
        for first, second in ((a, b), (b, a)):
            assert first.head is not None
            chain = tree.chain(tree.collapsed(first.head))
            if trigger in chain:
                below = chain[chain.index(trigger) - 1] if chain.index(trigger) > 0 else None
                if below is not None and p.deps[below] in _SUBJECT_DEPS:
                    return first, second
                if below is not None and p.deps[below] in _PASSIVE_SUBJECT_DEPS:
                    return second, first
    return (a, b) if a.annotation.start <= b.annotation.start else (b, a)


def _typed(proposal: _Proposal, rules: RelationRules, counts: Counter[str]) -> _Proposal | None:
    """The proposal with a type its arguments admit (the pair reversed if only that fits), or None."""
    for first, second in ((proposal.arg1, proposal.arg2), (proposal.arg2, proposal.arg1)):
        if rules.admits(proposal.type, first.type, second.type):
            return dataclasses.replace(proposal, arg1=first, arg2=second)
    fitting = rules.fitting_type(proposal.type, proposal.arg1.type, proposal.arg2.type)
    if fitting is not None:
        return dataclasses.replace(proposal, type=fitting)
    counts["dropped_argument_types"] += 1
    return None


def _trigger_type(tree: _Tree, i: int, rules: RelationRules) -> str | None:
    # once per token of the sentence (every pair whose path crosses it asks)
    if i in tree.triggers:
        return tree.triggers[i]
    tree.triggers[i] = found = _lexicon_type(tree, i, rules)
    return found


def _lexicon_type(tree: _Tree, i: int, rules: RelationRules) -> str | None:
    p = tree.parse
    type_ = rules.triggers.get(p.lemmas[i])
    if type_ is None:
        # hyphenated forms: "warfarin-induced" is one token in some tokenizations
        lemma = p.lemmas[i]
        if "-" in lemma:
            type_ = rules.triggers.get("-" + lemma.rsplit("-", 1)[1]) or rules.triggers.get(lemma.rsplit("-", 1)[1])
    return type_


def _long_form(text: str, first: _Entity, short: _Entity, ents: Sequence[_Entity]) -> _Entity:
    """The long form a short form defines, of the entities of ``first``'s type ending where it ends.

    Of "CBZ-induced hypersensitivity syndrome" and "hypersensitivity syndrome" before "( HSS )": the
    shortest with a word starting with the short form's first letter, else the longest.
    """
    nested = [e for e in ents if e.type == first.type and e.end == first.end]
    if len(nested) == 1:
        return first
    # imported here: the abbreviations module brings spaCy, which reading rule files does not need
    from pipeline.nlp.abbreviations import word_initials

    letter = text[short.start].casefold()
    initialled = [e for e in nested if letter in word_initials(text[e.start:e.end])]
    if initialled:
        return min(initialled, key=lambda e: (e.end - e.start, e.index))
    return max(nested, key=lambda e: (e.end - e.start, -e.index))


def _abbreviation(text: str, a: _Entity, b: _Entity, rules: RelationRules,
                  ents: Sequence[_Entity] | None = None) -> _Proposal | None:
    """The abbreviation rule's proposal for a pair written "A ( B )".

    Given the sentence's ``ents``, only for the long form ``_long_form`` chooses among nested ones;
    without them (the scorer's candidates leave out every such pair), for any.
    """
    # asked of every pair of a sentence: the entities' own bounds, not the annotations' properties
    if a.type != b.type or f"abbreviation:{EQUIVALENT}" in rules.disabled:
        return None
    first, second = (a, b) if a.end <= b.start else (b, a)
    if first.end > second.start:
        return None
    if not _ABBREVIATION_GAP.match(text[first.end : second.start]):
        return None
    if not _ABBREVIATION_END.match(text[second.end : second.end + 3] or ")"):
        return None
    if ents is not None and first is not _long_form(text, first, second, ents):
        return None
    # the short form (in parentheses) is Arg1, the long form Arg2
    return _Proposal(EQUIVALENT, second, first, "abbreviation", "(")


def _syntactic(a: _Entity, b: _Entity, tree: _Tree, rules: RelationRules) -> _Proposal | None:
    if a.head is None or b.head is None:
        return None
    p = tree.parse
    ha, hb = tree.collapsed(a.head), tree.collapsed(b.head)
    if ha == hb or ha in b.tokens or hb in a.tokens:
        return None  # coordinated with each other, or one inside the other
    path = tree.path(ha, hb)
    if path is None or len(path) - 1 > rules.max_path:
        return None
    inner = [i for i in path[1:-1] if i not in a.tokens and i not in b.tokens]
    # the word nearest the top of the path decides ("associated with the increased risk")
    by_depth = sorted(inner, key=lambda i: (_depth(p, i), i))
    for i in by_depth:
        type_ = _trigger_type(tree, i, rules)
        if type_ is None:
            continue
        first, second = _direct(a, b, tree, i, rules)
        top = by_depth[0]
        return _Proposal(type_, first, second, f"path[{_shape(tree, path, first, second, ha)}]", _token_text(p, i),
                         _modality(tree, [top, *inner], rules))
    # a trigger modifying one of the two heads ("elevated levels of X", "X-induced Y")
    for ent in (a, b):
        assert ent.head is not None
        for c in sorted(tree.children(ent.head)):
            if c in a.tokens or c in b.tokens and p.deps[c] not in _MODIFIER_DEPS:
                continue
            if p.deps[c] not in _MODIFIER_DEPS:
                continue
            type_ = _trigger_type(tree, c, rules)
            if type_ is None:
                continue
            first, second = _direct(a, b, tree, None, rules)
            words = sorted(inner, key=lambda i: (_depth(p, i), i)) or [c]
            return _Proposal(type_, first, second, f"modifier[{_shape(tree, path, first, second, ha)}]",
                             _token_text(p, c), _modality(tree, words, rules))
    return None


def _shape(tree: _Tree, path: list[int], first: _Entity, second: _Entity, start: int) -> str:
    """The path's shape: the labels by which Arg1's and Arg2's sides attach under the top of the path."""
    p = tree.parse
    top = min(path, key=lambda i: _depth(p, i))
    k = path.index(top)
    side_start = p.deps[path[k - 1]] if k > 0 else "top"
    side_end = p.deps[path[k + 1]] if k + 1 < len(path) else "top"
    if path[0] != start:
        side_start, side_end = side_end, side_start
    # path runs from a's head (start) to b's: label Arg1's side first
    if first.head is not None and tree.collapsed(first.head) == start:
        return f"{side_start},{side_end}"
    return f"{side_end},{side_start}"


def _token_text(parse: SentenceParse, i: int) -> str:
    return parse.lemmas[i]
