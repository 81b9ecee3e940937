"""Relation pre-annotation: typed, directed relations between the mapped entities of each sentence.

Input: documents whose annotations carry schema types (after type mapping), with
sentences and, for the dependency rules, the sentence parses extension kept
(``Document.parses``, :func:`pipeline.nlp.extend.sentence_parse`).  Output: the
same documents with ``relations`` (indices into ``annotations``) and without
``parses`` (consumed here, never written further).  Offsets are
document-relative and half-open throughout; nothing is parsed here.

Rules (``Relation.rule`` is ``<rule>:<trigger's type>``; all read their words from ``config/relations.yaml``,
:func:`load_rules`):

``abbreviation``
    two entities of the same type written "A ( B )": ``isEquivalentTo`` with the
    short form B as Arg1 and the long form A as Arg2 (the PGxCorpus convention).
``path``
    a trigger word on the dependency path between the two entities' head
    tokens (conjuncts collapsed onto the first conjunct, so "levels of X, Y and
    Z" relates all three), at most ``max_path`` arcs: the trigger's type.
``modifier``
    a trigger modifying an entity's head ("**elevated** levels of X", "X-**induced**
    Y") when the path between the two entities is within ``max_path`` and holds
    no trigger itself.

The direction comes from the types (``argument_order``: the acting factor is
Arg1) and, between types of the same rank, from the syntax (the subject side,
else the entity written first).  The type is then checked against the argument
constraints (the schema's, narrowed by ``argument_types``): a type whose
constraints the pair does not meet is replaced by its nearest ancestor that
admits it, or the pair is dropped.  Modality: a negation cue (``neg``
dependents, "no", "lack", ...) or a hedge ("may", "whether", "is suggested",
"we investigated") on the path, among the trigger's dependents or the words
governing it.

PubTator3 relations (document-level, undirected concept pairs,
``Document.concept_relations``) become proposals between the mentions of both
concepts in one sentence (rule ``pubtator:<type>``), typed through
``source_types`` and directed by the argument constraints; a relation with no
sentence holding mentions of both concepts is counted and logged with the PMID.

Count keys: ``documents``, ``sentences``, ``sentences_without_parse``,
``relations``, ``relations_<rule>`` (per rule family), ``relations_<type>``,
``relations_negated``, ``relations_hypothetical``, ``pairs_considered``,
``dropped_argument_types`` (no type admits the pair), ``concept_relations``,
``concept_relations_unmapped_type``, ``concept_relations_no_mentions``,
``concept_relations_not_in_one_sentence``, ``entities_unaligned``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.documents import MODALITIES, Annotation, Document, Relation, Sentence, SentenceParse
from pipeline.schema import ANY_ENTITY, Schema

log = logging.getLogger(__name__)

DEFAULT_RULES = Path(__file__).resolve().parents[2] / "config" / "relations.yaml"
HYPOTHETICAL, NEGATED = MODALITIES
EQUIVALENT = "isEquivalentTo"
RULE_FAMILIES = ("abbreviation", "path", "modifier", "pubtator")

_ABBREVIATION_GAP = re.compile(r"^\s*\(\s*$")
_ABBREVIATION_END = re.compile(r"^\s*[);,]")
#: dependencies of a verb's subject; the subject side of a trigger verb is the acting side
_SUBJECT_DEPS = frozenset({"nsubj", "csubj", "agent"})
_PASSIVE_SUBJECT_DEPS = frozenset({"nsubjpass", "csubjpass"})
#: dependents of a path word that may carry its modality ("may", "whether", "not")
_MODALITY_DEPS = frozenset({"neg", "aux", "auxpass", "mark", "det", "advmod", "amod", "preconj", "cc"})
_MODIFIER_DEPS = frozenset({"amod", "compound", "nmod", "npadvmod", "advmod", "acl"})


class RelationRulesError(ValueError):
    """An invalid relation rule file; the message names the file and line."""


@dataclass(frozen=True)
class RelationRules:
    """The rules' resources (see ``config/relations.yaml``).

    ``triggers``: lemma -> relation type; ``allowed``: relation type -> (Arg1 types, Arg2 types),
    expanded to every entity type they admit (schema constraints and ``argument_types`` both);
    ``rank``: entity type -> argument order rank (lower: Arg1); ``disabled``: rule keys
    (``<family>:<type>``) switched off (the benches switch off rules their training folds find
    imprecise); ``source_types``: PubTator3 type -> schema type or None.
    """

    triggers: Mapping[str, str]
    allowed: Mapping[str, tuple[frozenset[str], frozenset[str]]]
    rank: Mapping[str, int]
    negation: frozenset[str]
    hedges: frozenset[str]
    max_path: int = 6
    source_types: Mapping[str, str | None] = field(default_factory=dict)
    disabled: frozenset[str] = frozenset()
    retype: Mapping[str, str] = field(default_factory=dict)
    enabled: frozenset[str] | None = None
    relation_parent: Mapping[str, str | None] = field(default_factory=dict)
    path: str = ""

    def admits(self, type_: str, arg1: str, arg2: str) -> bool:
        allowed = self.allowed.get(type_)
        return allowed is not None and arg1 in allowed[0] and arg2 in allowed[1]

    def fitting_type(self, type_: str, arg1: str, arg2: str) -> str | None:
        """``type_`` or its nearest ancestor whose constraints admit (arg1, arg2); None when none does."""
        current: str | None = type_
        while current is not None:
            if self.admits(current, arg1, arg2):
                return current
            current = self.relation_parent.get(current)
        return None

    def without(self, keys: Iterable[str]) -> RelationRules:
        return dataclasses.replace(self, disabled=self.disabled | frozenset(keys))


# --- the rule file -----------------------------------------------------------------------------


def _node_line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _mapping(node: yaml.Node | None, where: str, what: str) -> list[tuple[str, yaml.Node, int]]:
    if node is None:
        return []
    if not isinstance(node, yaml.MappingNode):
        raise RelationRulesError(f"{where}:{_node_line(node)}: {what} must be a mapping")
    out = []
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            raise RelationRulesError(f"{where}:{_node_line(key)}: {what}: keys must be names")
        out.append((str(key.value), value, _node_line(key)))
    return out


def _words(node: yaml.Node, where: str, what: str) -> list[tuple[str, int]]:
    if isinstance(node, yaml.ScalarNode):
        return [(str(node.value), _node_line(node))]
    if not isinstance(node, yaml.SequenceNode):
        raise RelationRulesError(f"{where}:{_node_line(node)}: {what} must be a list of words")
    out = []
    for item in node.value:
        if not isinstance(item, yaml.ScalarNode) or not str(item.value).strip():
            raise RelationRulesError(f"{where}:{_node_line(item)}: {what}: entries must be non-empty words")
        out.append((str(item.value).strip(), _node_line(item)))
    return out


def _expand(schema: Schema, names: Iterable[str]) -> frozenset[str]:
    names = list(names)
    if ANY_ENTITY in names:
        return frozenset(schema.entity_parent)
    return frozenset(t for t in schema.entity_parent if any(schema.is_a(t, n.lstrip("=")) if not n.startswith("=")
                                                              else t == n[1:] for n in names))


def load_rules(path: str | Path, schema: Schema) -> RelationRules:
    """Read and check a relation rule file against ``schema``.

    Raises :class:`RelationRulesError` naming the file and line for a bad shape, an unknown
    relation or entity type, a word given to two relation types, or an argument type that the
    schema's ``relation_arguments`` forbid for the relation.
    """
    p = Path(path)
    where = str(p)
    try:
        root = yaml.compose(p.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except OSError as exc:
        raise RelationRulesError(f"{where}: cannot read relation rules: {exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        raise RelationRulesError(f"{where}{at}: invalid YAML: {exc}") from exc
    sections: dict[str, tuple[Any, int]] = {k: (v, ln) for k, v, ln in _mapping(root, where, "the top level")}
    known = {"version", "max_path", "argument_order", "argument_types", "triggers", "modality", "source_types",
             "selection"}
    for section, (_node, section_line) in sections.items():
        if section not in known:
            raise RelationRulesError(f"{where}:{section_line}: unknown section {section!r} "
                                     f"(known: {', '.join(sorted(known))})")

    def relation_type(name: str, line: int) -> str:
        if name not in schema.relation_parent:
            raise RelationRulesError(f"{where}:{line}: unknown relation type {name!r} (schema {schema.path}: "
                                     f"{', '.join(schema.relation_types())})")
        return name

    def entity_type(name: str, line: int) -> str:
        if name != ANY_ENTITY and name.lstrip("=") not in schema.entity_parent:
            raise RelationRulesError(f"{where}:{line}: unknown entity type {name!r} (schema {schema.path})")
        return name

    line: int
    node: Any
    value: Any
    max_path = 6
    if "max_path" in sections:
        max_node, max_line = sections["max_path"]
        try:
            max_path = int(max_node.value)
        except (TypeError, ValueError):
            raise RelationRulesError(f"{where}:{max_line}: max_path must be a whole number") from None

    rank: dict[str, int] = {}
    order_node = sections.get("argument_order", (None, 0))[0]
    if order_node is not None:
        order = [entity_type(name, line) for name, line in _words(order_node, where, "argument_order")]
        # the most specific entry wins: a type takes the rank of its nearest listed ancestor
        for t in schema.entity_parent:
            for ancestor in schema.ancestors(t, include_self=True):
                if ancestor in order:
                    rank[t] = order.index(ancestor)
                    break

    allowed: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for rel in schema.relation_parent:
        allowed[rel] = (frozenset(schema.allowed_arguments(rel, "Arg1")),
                        frozenset(schema.allowed_arguments(rel, "Arg2")))
    for rel, node, line in _mapping(sections.get("argument_types", (None, 0))[0], where, "argument_types"):
        relation_type(rel, line)
        roles = {role: (value, role_line) for role, value, role_line in _mapping(node, where, f"argument_types.{rel}")}
        narrowed = []
        for role in ("Arg1", "Arg2"):
            if role not in roles:
                narrowed.append(allowed[rel][0 if role == "Arg1" else 1])
                continue
            value, role_line = roles.pop(role)
            names = [entity_type(n, ln) for n, ln in _words(value, where, f"argument_types.{rel}.{role}")]
            permitted = set(schema.allowed_arguments(rel, role))
            for name, ln in _words(value, where, f"argument_types.{rel}.{role}"):
                forbidden = sorted(_expand(schema, [name]) - permitted)
                if forbidden:
                    raise RelationRulesError(
                        f"{where}:{ln}: {rel} {role} {name!r} admits {', '.join(forbidden)}, which the schema's "
                        f"relation_arguments ({schema.path}) forbid for {rel} {role}")
            narrowed.append(_expand(schema, names))
        for role, (_, role_line) in roles.items():
            raise RelationRulesError(f"{where}:{role_line}: argument_types.{rel}: unknown role {role!r} "
                                     "(Arg1 or Arg2)")
        allowed[rel] = (narrowed[0], narrowed[1])

    triggers: dict[str, str] = {}
    for rel, node, line in _mapping(sections.get("triggers", (None, 0))[0], where, "triggers"):
        relation_type(rel, line)
        for word, word_line in _words(node, where, f"triggers.{rel}"):
            word = word.lower()
            if word in triggers and triggers[word] != rel:
                raise RelationRulesError(f"{where}:{word_line}: trigger {word!r} given to both "
                                         f"{triggers[word]} and {rel}")
            triggers[word] = rel

    cues: dict[str, frozenset[str]] = {"negation": frozenset(), "hedge": frozenset()}
    for kind, node, line in _mapping(sections.get("modality", (None, 0))[0], where, "modality"):
        if kind not in cues:
            raise RelationRulesError(f"{where}:{line}: modality: unknown cue list {kind!r} (negation, hedge)")
        cues[kind] = frozenset(w.lower() for w, _line in _words(node, where, f"modality.{kind}"))

    source_types: dict[str, str | None] = {}
    for name, node, _line in _mapping(sections.get("source_types", (None, 0))[0], where, "source_types"):
        value = node.value if isinstance(node, yaml.ScalarNode) else None
        if value in (None, "null", "~", ""):
            source_types[name] = None
        else:
            source_types[name] = relation_type(str(value), _node_line(node))
    enabled: frozenset[str] | None = None
    retype: dict[str, str] = {}
    for name, node, line in _mapping(sections.get("selection", (None, 0))[0], where, "selection"):
        if name == "enabled":
            keys = _words(node, where, "selection.enabled")
            for key, key_line in keys:
                relation_type(key.rsplit(":", 1)[-1], key_line)
            enabled = frozenset(k for k, _line in keys)
        elif name == "retype":
            for key, value, key_line in _mapping(node, where, "selection.retype"):
                relation_type(key.rsplit(":", 1)[-1], key_line)
                target = relation_type(str(getattr(value, "value", "")), _node_line(value))
                if target not in schema.ancestors(key.rsplit(":", 1)[-1], include_self=True):
                    raise RelationRulesError(f"{where}:{_node_line(value)}: {key} can only become an ancestor of "
                                             f"its type, not {target!r}")
                retype[key] = target
        else:
            raise RelationRulesError(f"{where}:{line}: selection: unknown entry {name!r} (enabled, retype)")
    return RelationRules(
        triggers=triggers, allowed=allowed, rank=rank, negation=cues["negation"], hedges=cues["hedge"],
        max_path=max_path, source_types=source_types, relation_parent=dict(schema.relation_parent), path=where,
        enabled=enabled, retype=retype,
    )


# --- one sentence ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entity:
    index: int  # in the document's annotations
    annotation: Annotation
    type: str
    head: int | None  # token index in the sentence parse (None: no parse or unaligned)
    tokens: frozenset[int]


class _Tree:
    """A sentence parse with conjuncts collapsed onto their first conjunct."""

    def __init__(self, parse: SentenceParse) -> None:
        self.parse = parse
        self.n = len(parse.tokens)

    def collapsed(self, i: int) -> int:
        # "levels of X, Y and Z": Y and Z stand where X stands
        seen = 0
        while self.parse.deps[i] == "conj" and self.parse.heads[i] != i and seen < self.n:
            i = self.parse.heads[i]
            seen += 1
        return i

    def chain(self, i: int) -> list[int]:
        out = [i]
        while self.parse.heads[out[-1]] != out[-1] and len(out) <= self.n:
            out.append(self.parse.heads[out[-1]])
        return out

    def path(self, a: int, b: int) -> list[int] | None:
        """Tokens from ``a`` to ``b`` through their lowest common ancestor (both ends included)."""
        up_a, up_b = self.chain(a), self.chain(b)
        common = next((t for t in up_a if t in set(up_b)), None)
        if common is None:
            return None
        return up_a[: up_a.index(common) + 1] + list(reversed(up_b[: up_b.index(common)]))

    def children(self, i: int) -> list[int]:
        return [j for j in range(self.n) if self.parse.heads[j] == i and j != i]


def _align(ann: Annotation, parse: SentenceParse) -> tuple[frozenset[int], int | None]:
    tokens = frozenset(
        i for i, (s, e) in enumerate(parse.tokens) if any(s < fe and fs < e for fs, fe in ann.fragments)
    )
    if not tokens:
        return tokens, None
    heads = [i for i in sorted(tokens) if parse.heads[i] not in tokens or parse.heads[i] == i]
    if not heads:
        return tokens, min(tokens)
    # the outermost one: fewest arcs to the root
    depth = {i: _depth(parse, i) for i in heads}
    return tokens, min(heads, key=lambda i: (depth[i], i))


def _depth(parse: SentenceParse, i: int) -> int:
    d = 0
    while parse.heads[i] != i and d <= len(parse.tokens):
        i = parse.heads[i]
        d += 1
    return d


def _inside(inner: Annotation, outer: Annotation) -> bool:
    """``inner`` lies within ``outer``'s fragments and is not the same span."""
    return inner.fragments != outer.fragments and all(
        any(os <= s and e <= oe for os, oe in outer.fragments) for s, e in inner.fragments)


def _overlap(a: Annotation, b: Annotation) -> bool:
    return any(s1 < e2 and s2 < e1 for s1, e1 in a.fragments for s2, e2 in b.fragments)


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
    p = tree.parse
    type_ = rules.triggers.get(p.lemmas[i])
    if type_ is None:
        # hyphenated forms: "warfarin-induced" is one token in some tokenizations
        lemma = p.lemmas[i]
        if "-" in lemma:
            type_ = rules.triggers.get("-" + lemma.rsplit("-", 1)[1]) or rules.triggers.get(lemma.rsplit("-", 1)[1])
    return type_


def relate_sentence(
    text: str, entities: Sequence[tuple[int, Annotation, str]], parse: SentenceParse | None, rules: RelationRules,
    counts: Counter[str],
) -> list[Relation]:
    """Relations proposed between ``entities`` (document index, annotation, schema type) of one sentence.

    ``text`` is the document text (annotation and parse offsets are document-relative, half-open).
    Returns relations whose ``arg1``/``arg2`` are the entities' document indices, in a deterministic
    order; every unordered pair gets at most one proposal.
    """
    tree = _Tree(parse) if parse is not None and parse.tokens else None
    ents: list[_Entity] = []
    for index, ann, type_ in entities:
        tokens, head = _align(ann, parse) if tree is not None and parse is not None else (frozenset(), None)
        if tree is not None and head is None:
            counts["entities_unaligned"] += 1
        ents.append(_Entity(index, ann, type_, head, tokens))
    ents.sort(key=lambda e: (e.annotation.sort_key(), e.index))
    # An entity nested in another ("warfarin" in "warfarin sensitivity") is rarely an argument:
    # the outer one is (PGxCorpus dev: 154 of 828 nested entities are, 1,118 of 1,350 outer ones).
    outer = {e.index for e in ents if not any(o is not e and _inside(e.annotation, o.annotation) for o in ents)}
    proposals: list[_Proposal] = []
    for x, a in enumerate(ents):
        for b in ents[x + 1:]:
            if _overlap(a.annotation, b.annotation):
                continue
            counts["pairs_considered"] += 1
            found = _abbreviation(text, a, b, rules)
            if found is None and tree is not None and a.index in outer and b.index in outer:
                found = _syntactic(a, b, tree, rules)
            if found is None:
                continue
            key = f"{found.rule}:{found.type}"
            if key in rules.disabled or (rules.enabled is not None and key not in rules.enabled
                                         and not key.startswith("abbreviation")):
                continue
            found = dataclasses.replace(found, type=rules.retype.get(key, found.type), rule=key)
            typed = _typed(found, rules, counts) if not key.startswith("abbreviation") else found
            if typed is not None:
                proposals.append(typed)
    out = []
    for prop in proposals:
        out.append(Relation(prop.type, prop.arg1.index, prop.arg2.index, prop.modality, "rules", prop.rule,
                            prop.trigger))
    return out


def _abbreviation(text: str, a: _Entity, b: _Entity, rules: RelationRules) -> _Proposal | None:
    first, second = (a, b) if a.annotation.end <= b.annotation.start else (b, a)
    if first.type != second.type or f"abbreviation:{EQUIVALENT}" in rules.disabled:
        return None
    if first.annotation.end > second.annotation.start:
        return None
    if not _ABBREVIATION_GAP.match(text[first.annotation.end : second.annotation.start]):
        return None
    if not _ABBREVIATION_END.match(text[second.annotation.end : second.annotation.end + 3] or ")"):
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


# --- documents ---------------------------------------------------------------------------------


def _sentence_entities(doc: Document, sent: Sentence, schema: Schema) -> list[tuple[int, Annotation, str]]:
    return [
        (i, a, a.type) for i, a in enumerate(doc.annotations)
        if a.start >= sent.start and a.end <= sent.end and a.type in schema.entity_parent
    ]


def relate_documents(
    docs: Iterable[Document], rules: RelationRules, schema: Schema, counts: Counter[str], *,
    use_rules: bool = True,
) -> Iterator[Document]:
    """Documents with relations proposed in each sentence and their parses dropped.

    ``use_rules`` False: only the source's relations (PubTator3) are turned into proposals (the
    ``--no-relations`` build does not call this at all).  Streams one document at a time (the
    per-document memo's attribution contract holds).
    """
    for doc in docs:
        counts["documents"] += 1
        parses = {(p.start, p.end): p for p in doc.parses}
        relations: list[Relation] = []
        sentences = doc.sentences or ((Sentence(0, len(doc.text)),) if doc.text else ())
        for sent in sentences:
            counts["sentences"] += 1
            parse = parses.get((sent.start, sent.end))
            entities = _sentence_entities(doc, sent, schema)
            if len(entities) < 2:
                continue
            if parse is None:
                counts["sentences_without_parse"] += 1
            if use_rules:
                relations.extend(relate_sentence(doc.text, entities, parse, rules, counts))
        relations.extend(concept_relations(doc, sentences, rules, schema, counts, taken=relations))
        for rel in relations:
            counts["relations"] += 1
            counts[f"relations_{re.split('[:[]', rel.rule or 'none', maxsplit=1)[0]}"] += 1
            counts[f"relations_{rel.type}"] += 1
            counts["relations_hypothetical"] += HYPOTHETICAL in rel.modality
            counts["relations_negated"] += NEGATED in rel.modality
        yield dataclasses.replace(doc, parses=()).with_relations(relations)


def concept_relations(
    doc: Document, sentences: Sequence[Sentence], rules: RelationRules, schema: Schema, counts: Counter[str],
    taken: Sequence[Relation] = (),
) -> list[Relation]:
    """Sentence-level proposals from the document's PubTator3 relations (see the module docstring).

    A pair already related by ``taken`` (the rules) keeps the rules' proposal.  Relations whose
    type maps to nothing, whose concepts have no mention among the document's entities, or whose
    concepts never share a sentence are counted and logged with the PMID, never written.
    """
    out: list[Relation] = []
    pairs = {frozenset((r.arg1, r.arg2)) for r in taken}
    for cr in doc.concept_relations:
        counts["concept_relations"] += 1
        if cr.type not in rules.source_types:
            counts["concept_relations_unmapped_type"] += 1
            log.warning("PMID %s: PubTator relation type %r is not in %s source_types; not written",
                        doc.pmid, cr.type, rules.path)
            continue
        type_ = rules.source_types[cr.type]
        if type_ is None:
            counts["concept_relations_dropped_type"] += 1
            continue
        mentions1 = _mentions(doc, cr.concept1, schema)
        mentions2 = _mentions(doc, cr.concept2, schema)
        if not mentions1 or not mentions2:
            counts["concept_relations_no_mentions"] += 1
            log.info("PMID %s: PubTator relation %s %s %s: no mention of %s among the document's entities; "
                     "not written", doc.pmid, cr.type, cr.concept1, cr.concept2,
                     " and ".join(c for c, m in ((cr.concept1, mentions1), (cr.concept2, mentions2)) if not m))
            continue
        written = 0
        for sent in sentences:
            in1 = [i for i in mentions1 if _within(doc.annotations[i], sent)]
            in2 = [i for i in mentions2 if _within(doc.annotations[i], sent)]
            for i in in1:
                for j in in2:
                    if i == j or frozenset((i, j)) in pairs or _overlap(doc.annotations[i], doc.annotations[j]):
                        continue
                    a, b = doc.annotations[i], doc.annotations[j]
                    first, second = (i, j), (j, i)
                    ra, rb = rules.rank.get(a.type, 99), rules.rank.get(b.type, 99)
                    order = [first, second] if ra <= rb else [second, first]
                    chosen = None
                    for x, y in order:
                        fitting = rules.fitting_type(type_, doc.annotations[x].type, doc.annotations[y].type)
                        if fitting is not None:
                            chosen = (fitting, x, y)
                            break
                    if chosen is None:
                        counts["dropped_argument_types"] += 1
                        continue
                    pairs.add(frozenset((i, j)))
                    out.append(Relation(chosen[0], chosen[1], chosen[2], (), "pubtator", f"pubtator:{cr.type}"))
                    written += 1
        if not written:
            counts["concept_relations_not_in_one_sentence"] += 1
            log.info("PMID %s: PubTator relation %s %s %s: no sentence holds mentions of both concepts; not written",
                     doc.pmid, cr.type, cr.concept1, cr.concept2)
    return out


def _within(ann: Annotation, sent: Sentence) -> bool:
    return ann.start >= sent.start and ann.end <= sent.end


def _mentions(doc: Document, concept: str, schema: Schema) -> list[int]:
    wanted = _concept_ids(concept)
    return [i for i, a in enumerate(doc.annotations)
            if a.identifier and a.type in schema.entity_parent and wanted & _concept_ids(a.identifier)]


def _concept_ids(identifier: str) -> set[str]:
    """The comparable forms of an identifier: ``MESH:D014859`` -> {``mesh:d014859``, ``d014859``};
    PubTator3 relation ids name genes by number, chemicals and diseases by ``MESH:``, variants by
    ``RS#:``/HGVS forms, mentions carry the same."""
    out: set[str] = set()
    for part in re.split(r"[;,|]", identifier):
        part = part.strip().lower()
        if not part or part == "-":
            continue
        out.add(part)
        if ":" in part:
            out.add(part.split(":", 1)[1])
    return out


def rules_summary(rules: RelationRules) -> dict[str, Any]:
    """What a build's datasheet says about the rules (counts only; the file itself is versioned)."""
    by_type: Counter[str] = Counter(rules.triggers.values())
    return {"rules": rules.path, "trigger_words": dict(sorted(by_type.items())), "max_path": rules.max_path}


def load_rules_file(path: str | Path, schema_path: str | Path) -> RelationRules:
    """:func:`load_rules` with the schema read from ``schema_path`` (the form the process cache loads)."""
    from pipeline.schema import load_schema

    return load_rules(path, load_schema(schema_path))
