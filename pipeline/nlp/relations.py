"""Relation pre-annotation: typed, directed relations between the mapped entities of each sentence.

Input: documents whose annotations carry schema types (after type mapping), with
sentences and, for the dependency rules, the sentence parses extension kept
(``Document.parses``, :func:`pipeline.nlp.extend.sentence_parse`).  Output: the
same documents with ``relations`` (indices into ``annotations``) and without
``parses`` (consumed here, never written further).  Offsets are
document-relative and half-open throughout; nothing is parsed here.

Proposals (``Relation.rule`` is ``<rule>:<type proposed before typing>``; the words come from
``config/relations.yaml``, :func:`load_rules`):

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
``scorer``
    when the rule file names a learned scorer (:class:`RelationScorer`, trained by
    :func:`train_scorer` / ``pgx-corpus train-relations``), it replaces ``path``
    and ``modifier``: a logistic regression over the ordered pair's features
    (:func:`pair_features`: entity types, the dependency path's labels, words
    and triggers, the words between, coordination, nesting) gives the
    probability that annotators relate the pair in that direction; the pair is
    proposed in its more probable direction when that reaches the scorer's
    threshold, with the most specific type the type models are sure enough of.

``path`` and ``modifier`` keys propose only when listed in the rule file's
``selection`` (rule keys chosen on training data by ``bench/relations.py``).

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

import bisect
import dataclasses
import json
import logging
import math
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
    scorer: RelationScorer | None = None
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


def load_rules(path: str | Path, schema: Schema, *, with_scorer: bool = True) -> RelationRules:
    """Read and check a relation rule file against ``schema``.

    Raises :class:`RelationRulesError` naming the file and line for a bad shape, an unknown
    relation or entity type, a word given to two relation types, or an argument type that the
    schema's ``relation_arguments`` forbid for the relation.  A ``scorer:`` entry names the learned
    scorer's file (relative to the rule file; :func:`train_scorer`), loaded unless ``with_scorer`` is
    False; a missing or bad scorer file is an error naming it.
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
             "selection", "scorer"}
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
    scorer = None
    if with_scorer and "scorer" in sections:
        scorer_node, scorer_line = sections["scorer"]
        scorer_path = p.parent / str(getattr(scorer_node, "value", ""))
        try:
            scorer_data = json.loads(scorer_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise RelationRulesError(f"{where}:{scorer_line}: cannot read the scorer {scorer_path}: {exc}") from exc
        scorer = RelationScorer.from_json(scorer_data, str(scorer_path))
        unknown = sorted(set(scorer.types) - set(schema.relation_parent))
        if unknown:
            raise RelationRulesError(f"{scorer_path}: unknown relation type(s) {', '.join(unknown)}")
    return RelationRules(
        triggers=triggers, allowed=allowed, rank=rank, negation=cues["negation"], hedges=cues["hedge"],
        max_path=max_path, source_types=source_types, relation_parent=dict(schema.relation_parent), path=where,
        enabled=enabled, retype=retype, scorer=scorer,
    )


# --- one sentence ------------------------------------------------------------------------------


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
        self.depth = [_depth(parse, i) for i in range(self.n)]
        self.starts = [s for s, _ in parse.tokens]
        self.ends = [e for _, e in parse.tokens]
        self._chains: dict[int, list[int]] = {}
        self.kinds: dict[int, Counter[str]] = {}  # outer entities per kind, for pair_features
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
        ents.append(_Entity(index, ann, type_, head, tokens, ann.start, ann.end))
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
            if found is None and tree is not None and rules.scorer is not None:
                found = _scored(text, tree, a, b, ents, outer, rules)
            elif found is None and tree is not None and a.index in outer and b.index in outer:
                found = _syntactic(a, b, tree, rules)
            if found is None:
                continue
            key = f"{found.rule}:{found.type}"
            if key in rules.disabled or (rules.enabled is not None and key not in rules.enabled
                                         and key.startswith(("path", "modifier"))):
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


def rule_files(path: str | Path) -> list[str]:
    """The rule file and the scorer file it names (what a build's relation stage depends on, by content)."""
    p = Path(path)
    try:
        root = yaml.compose(p.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return [str(p)]  # load_rules reports the problem, naming the file
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if getattr(key, "value", None) == "scorer" and isinstance(value, yaml.ScalarNode):
                return [str(p), str(p.parent / str(value.value))]
    return [str(p)]


def load_rules_file(path: str | Path, schema_path: str | Path, *scorer_digests: str | None) -> RelationRules:
    """:func:`load_rules` with the schema read from ``schema_path`` (the form the process cache loads;
    ``scorer_digests``, the content digests of the scorer file, only make the cache key)."""
    from pipeline.schema import load_schema

    return load_rules(path, load_schema(schema_path))


# --- the learned scorer ------------------------------------------------------------------------
#
# The rules' trigger paths find many related pairs but cannot tell them from the unrelated ones
# around them (a sentence of the dev set holds about eight entities, and 3% to 18% of its pairs
# are related).  The scorer learns that from finished annotations: a logistic regression over
# the ordered pair's features (entity types, the dependency path's labels and words, the trigger
# types on it, the words between, coordination, nesting) gives the probability that an annotator
# relates Arg1 to Arg2; one-vs-rest regressions give the type.  Trained by :func:`train_scorer`.

SCORER_FORMAT = 1
#: a feature must occur in this many training pairs to get a weight
MIN_FEATURE_COUNT = 5
#: L2 penalty of the scorer's regressions (stronger than the entity model's: the pairs are few and noisy)
L2 = 1e-2


@dataclass(frozen=True)
class RelationScorer:
    """Weights of the pair model and of each type's model, and the decision thresholds.

    A pair is proposed in its more probable direction when that probability is at least
    ``threshold``; its type is the most specific one whose probability (its own and its
    descendants', the type models' scores normalised over the types) is at least
    ``type_threshold`` (the root, ``isAssociatedWith``, always qualifies).
    """

    pair: Mapping[str, float]
    types: Mapping[str, Mapping[str, float]]
    threshold: float
    type_threshold: float = 0.5
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": SCORER_FORMAT, "threshold": self.threshold, "type_threshold": self.type_threshold,
                "meta": dict(self.meta), "pair": dict(sorted(self.pair.items())),
                "types": {t: dict(sorted(w.items())) for t, w in sorted(self.types.items())}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> RelationScorer:
        if not isinstance(data, Mapping) or data.get("format") != SCORER_FORMAT:
            raise RelationRulesError(f"{where}: not a relation scorer of format {SCORER_FORMAT}")
        try:
            return cls(pair={str(k): float(v) for k, v in data["pair"].items()},
                       types={str(t): {str(k): float(v) for k, v in w.items()} for t, w in data["types"].items()},
                       threshold=float(data["threshold"]), type_threshold=float(data.get("type_threshold", 0.5)),
                       meta=dict(data.get("meta", {})))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RelationRulesError(f"{where}: bad relation scorer: {exc}") from exc


_ZEROS = (0.0,) * 256


def _probability(weights: Mapping[str, float], feats: Sequence[str]) -> float:
    """The logistic regression's probability (the model of :mod:`pipeline.nlp.learned`)."""
    z = sum(map(weights.get, feats, _ZEROS[: len(feats)])) if len(feats) <= len(_ZEROS) else sum(
        weights.get(f, 0.0) for f in feats)
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _bucket(n: int) -> str:
    for limit, name in ((0, "0"), (1, "1"), (2, "2"), (4, "3-4"), (7, "5-7"), (12, "8-12"), (20, "13-20")):
        if n <= limit:
            return name
    return ">20"


def pair_features(text: str, tree: _Tree, a: _Entity, b: _Entity, ents: Sequence[_Entity], outer: set[int],
                  rules: RelationRules) -> tuple[str, ...]:
    """Features of the ordered pair (``a`` as Arg1, ``b`` as Arg2) of one parsed sentence."""
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
    others = sum(1 for e in ents if e is not a and e is not b and e.start >= left.end and e.end <= right.start)
    feats.append(f"between_ents={min(others, 3)}")
    # how many candidates of each side's kind the sentence offers (one variant and three phenotypes:
    # the variant is usually related to each)
    kinds = tree.kinds.get(id(ents))
    if kinds is None:  # per sentence, not per pair
        kinds = tree.kinds[id(ents)] = Counter(_root_type(e.type, rules) for e in ents if e.index in outer)
    same_a, same_b = kinds[root[a.type]], kinds[root[b.type]]
    feats += [f"n_a={min(same_a, 4)}", f"n_b={min(same_b, 4)}", f"tp|n={tp}|{min(same_a, 3)}|{min(same_b, 3)}",
              f"tp|dist={tp}|{_bucket(len(between_tokens))}", f"n_ents={_bucket(len(ents))}"]
    if len(between_tokens) <= 5:
        feats.extend(f"bw={p.lemmas[i]}" for i in between_tokens)
        feats.append("bw_seq=" + "_".join(p.lemmas[i] for i in between_tokens))
    if a.head is None or b.head is None:
        return tuple(feats + ["unaligned"])
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
              f"rtp|shape={root[a.type]}>{root[b.type]}|{shape}"]
    if len(path) <= 7:
        feats.append("deps=" + ">".join(p.deps[i] for i in path[:k]) + "^" + "<".join(p.deps[i] for i in path[k + 1:]))
    inner = [i for i in path[1:-1] if i not in a.tokens and i not in b.tokens]
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


def _root_type(type_: str, rules: RelationRules) -> str:
    # the entity hierarchy's roots by rank: the argument order lists them
    return str(rules.rank.get(type_, 99))


def _type_probabilities(scorer: RelationScorer, feats: Sequence[str]) -> dict[str, float]:
    raw = {t: _probability(w, feats) for t, w in scorer.types.items()}
    total = sum(raw.values()) or 1.0
    return {t: v / total for t, v in raw.items()}


def _ancestors(type_: str, rules: RelationRules) -> list[str]:
    out: list[str] = []
    current: str | None = type_
    while current is not None:
        out.append(current)
        current = rules.relation_parent.get(current)
    return out


def _choose_type(probs: Mapping[str, float], rules: RelationRules, threshold: float) -> str | None:
    """The most specific type whose own and descendants' probability reaches ``threshold``."""
    if not probs:
        return None
    cumulative: dict[str, float] = {}
    for t, v in probs.items():
        current: str | None = t
        while current is not None:
            cumulative[current] = cumulative.get(current, 0.0) + v
            current = rules.relation_parent.get(current)

    def depth(t: str) -> int:
        d, current = 0, rules.relation_parent.get(t)
        while current is not None:
            d, current = d + 1, rules.relation_parent.get(current)
        return d

    passing = [t for t, v in cumulative.items() if v >= threshold]
    if not passing:
        return max(cumulative, key=lambda t: (cumulative[t], t))
    return max(passing, key=lambda t: (depth(t), cumulative[t], t))


def _scored(text: str, tree: _Tree, a: _Entity, b: _Entity, ents: Sequence[_Entity], outer: set[int],
            rules: RelationRules) -> _Proposal | None:
    scorer = rules.scorer
    assert scorer is not None
    f_ab = pair_features(text, tree, a, b, ents, outer, rules)
    f_ba = pair_features(text, tree, b, a, ents, outer, rules)
    p_ab, p_ba = _probability(scorer.pair, f_ab), _probability(scorer.pair, f_ba)
    first, second, feats, prob = (a, b, f_ab, p_ab) if p_ab >= p_ba else (b, a, f_ba, p_ba)
    if prob < scorer.threshold:
        return None
    type_ = _choose_type(_type_probabilities(scorer, feats), rules, scorer.type_threshold)
    if type_ is None:
        return None
    words: list[int] = []
    trigger = None
    if a.head is not None and b.head is not None:
        path = tree.path(tree.collapsed(first.head or 0), tree.collapsed(second.head or 0)) or []
        inner = [i for i in path[1:-1] if i not in a.tokens and i not in b.tokens]
        words = sorted(inner, key=lambda i: (tree.depth[i], i))
        trigger = next((tree.parse.lemmas[i] for i in words if _trigger_type(tree, i, rules)), None)
        if not words:
            words = sorted({first.head or 0, second.head or 0}, key=lambda i: (tree.depth[i], i))
    return _Proposal(type_, first, second, "scorer", trigger, _modality(tree, words, rules) if words else ())


@dataclass(frozen=True)
class TrainingSentence:
    """One training example: a document (one or more sentences, with parses) and its gold relations as
    ``(arg1 index, arg2 index, type)`` into ``doc.annotations``; ``group`` is its PMID (inner folds)."""

    doc: Document
    gold: tuple[tuple[int, int, str], ...]
    group: str


def _pairs(example: TrainingSentence, rules: RelationRules, schema: Schema) -> Iterator[
        tuple[int, int, tuple[str, ...], tuple[str, ...]]]:
    """(arg1, arg2, features a->b, features b->a) of every unordered pair of every parsed sentence."""
    doc = example.doc
    parses = {(p.start, p.end): p for p in doc.parses}
    for sent in doc.sentences:
        parse = parses.get((sent.start, sent.end))
        if parse is None or not parse.tokens:
            continue
        tree = _Tree(parse)
        ents = []
        for index, ann, type_ in _sentence_entities(doc, sent, schema):
            tokens, head = _align(ann, parse)
            ents.append(_Entity(index, ann, type_, head, tokens, ann.start, ann.end))
        ents.sort(key=lambda e: (e.annotation.sort_key(), e.index))
        outer = {e.index for e in ents if not any(o is not e and _inside(e.annotation, o.annotation) for o in ents)}
        for x, a in enumerate(ents):
            for b in ents[x + 1:]:
                if _overlap(a.annotation, b.annotation) or _abbreviation(doc.text, a, b, rules) is not None:
                    continue
                yield (a.index, b.index, pair_features(doc.text, tree, a, b, ents, outer, rules),
                       pair_features(doc.text, tree, b, a, ents, outer, rules))


def _fit_scorer(examples: Sequence[TrainingSentence], rules: RelationRules, schema: Schema, *, seed: int,
                epochs: int, l2: float = L2) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    from pipeline.nlp.learned import TrainConfig, _fit

    config = TrainConfig(seed=seed, epochs=epochs, l2=l2)
    pair_rows: list[tuple[tuple[str, ...], int]] = []
    typed_rows: list[tuple[tuple[str, ...], str]] = []
    for ex in examples:
        gold = {(i, j): t for i, j, t in ex.gold if t != EQUIVALENT}
        for i, j, f_ij, f_ji in _pairs(ex, rules, schema):
            for (x, y), feats in (((i, j), f_ij), ((j, i), f_ji)):
                label = gold.get((x, y))
                pair_rows.append((feats, int(label is not None)))
                if label is not None:
                    typed_rows.append((feats, label))
    # features seen fewer than MIN_FEATURE_COUNT times in the training pairs are left out: they
    # memorise single sentences (and made the scorer file megabytes)
    seen: Counter[str] = Counter(f for feats, _ in pair_rows for f in set(feats))
    kept = {f for f, n in seen.items() if n >= MIN_FEATURE_COUNT}
    pair_rows = [(tuple(f for f in feats if f in kept), label) for feats, label in pair_rows]
    typed_rows = [(tuple(f for f in feats if f in kept), label) for feats, label in typed_rows]
    pair = _rounded(_fit(pair_rows, config))
    types = {t: _rounded(_fit([(f, int(label == t)) for f, label in typed_rows], config))
             for t in sorted({label for _, label in typed_rows})}
    return pair, types


def _rounded(weights: Mapping[str, float]) -> dict[str, float]:
    return {f: round(w, 4) for f, w in weights.items() if round(w, 4)}


def train_scorer(examples: Sequence[TrainingSentence], rules: RelationRules, schema: Schema, *,
                 target_precision: float = 0.8, inner_folds: int = 3, seed: int = 13, epochs: int = 6,
                 type_threshold: float | None = None) -> tuple[RelationScorer, list[tuple[float, float, float]]]:
    """Train the scorer on ``examples`` and choose its threshold on them by inner cross-validation.

    The threshold is the lowest probability at which the inner held-out proposals (best direction per
    pair) are right (pair and direction) at least ``target_precision`` of the time; the type threshold
    (unless given) the lowest at which the types cost at most 5% of those proposals' precision with
    hierarchy credit (the same inner predictions).  Returns the scorer
    and the inner threshold curve ``[(threshold, precision, recall)]`` (recall over the gold pairs the
    candidates could reach).
    """
    from pipeline.nlp.folds import kfold_groups

    groups = sorted({ex.group for ex in examples})
    k = min(inner_folds, len(groups))
    # (probability, right pair and direction, gold type when right, the type models' probabilities)
    scored: list[tuple[float, int, str | None, dict[str, float]]] = []
    reachable = 0
    if k >= 2:
        by_group: dict[str, list[TrainingSentence]] = {}
        for ex in examples:
            by_group.setdefault(ex.group, []).append(ex)
        for fold in kfold_groups(groups, k=k, seed=seed):
            held = set(fold)
            pair, types = _fit_scorer([ex for ex in examples if ex.group not in held], rules, schema, seed=seed,
                                      epochs=epochs)
            inner = RelationScorer(pair, types, 0.0)
            for group in fold:
                for ex in by_group[group]:
                    gold = {(i, j): t for i, j, t in ex.gold if t != EQUIVALENT}
                    reachable += len(gold)
                    for i, j, f_ij, f_ji in _pairs(ex, rules, schema):
                        p_ij, p_ji = _probability(pair, f_ij), _probability(pair, f_ji)
                        best, prob, feats = ((i, j), p_ij, f_ij) if p_ij >= p_ji else ((j, i), p_ji, f_ji)
                        scored.append((prob, int(best in gold), gold.get(best), _type_probabilities(inner, feats)))
    scored.sort(key=lambda x: -x[0])
    curve: list[tuple[float, float, float]] = []
    right = 0
    threshold = 0.5
    for n, (prob, ok, _gold_type, _probs) in enumerate(scored, 1):
        right += ok
        precision, recall = right / n, right / max(1, reachable)
        curve.append((prob, precision, recall))
    qualifying = [t for t, prec, _ in curve if prec >= target_precision]
    if qualifying:
        threshold = min(qualifying)
    if type_threshold is None:
        # the lowest type threshold at which the types cost at most 5% of the proposals' precision
        # (hierarchy credit: the type proposed is the gold type or an ancestor; a higher threshold
        # backs off to ancestors more often)
        accepted = [x for x in scored if x[0] >= threshold]
        untyped = sum(x[1] for x in accepted)
        type_threshold = 0.95
        for candidate in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
            credited = sum(1 for _, ok, g, probs in accepted if ok and g is not None
                           and _choose_type(probs, rules, candidate) in _ancestors(g, rules))
            if credited >= 0.95 * untyped:
                type_threshold = candidate
                break
    pair, types = _fit_scorer(examples, rules, schema, seed=seed, epochs=epochs)
    meta = {"examples": len(examples), "groups": len(groups), "target_precision": target_precision,
            "inner_folds": k, "seed": seed, "epochs": epochs, "l2": L2}
    return RelationScorer(pair, types, threshold, type_threshold, meta), curve


def brat_training(directories: Iterable[str | Path], nlp: Any, schema: Schema, counts: Counter[str]
                  ) -> list[TrainingSentence]:
    """Training sentences from finished brat collections: the annotators' entities (schema types) and
    relations, each sentence parsed once with ``nlp`` (a spaCy pipeline).  Names ``{PMID}_{k}`` group by PMID."""
    from pipeline.brat import standoff
    from pipeline.nlp.extend import sentence_parse

    docs: list[tuple[Document, tuple[tuple[int, int, str], ...]]] = []
    for directory in directories:
        found, issues = standoff.read_collection(directory)
        for issue in issues:
            log.warning("%s", issue)
        for bdoc in found:
            anns = standoff.to_annotations(bdoc, source="gold")
            index = {t.id: i for i, t in enumerate(t for t in bdoc.textbounds if any(e > s for s, e in t.fragments))}
            gold = []
            for r in bdoc.relations:
                a1, a2 = index.get(r.arg("Arg1") or ""), index.get(r.arg("Arg2") or "")
                if a1 is None or a2 is None or a1 == a2 or r.type not in schema.relation_parent:
                    counts["training_relations_skipped"] += 1
                    continue
                gold.append((a1, a2, r.type))
            text = bdoc.text
            docs.append((Document(bdoc.name, text, text, origin="brat", sentences=(Sentence(0, len(text)),),
                                  annotations=tuple(anns)), tuple(gold)))
    out = []
    for (doc, relations), sdoc in zip(docs, nlp.pipe(d.text for d, _ in docs), strict=True):
        counts["training_sentences"] += 1
        counts["training_relations"] += len(relations)
        parsed = dataclasses.replace(doc, parses=(sentence_parse(sdoc, 0, len(doc.text)),))
        out.append(TrainingSentence(parsed, relations, doc.pmid.split("_", 1)[0]))
    return out


def relate_from_files(docs: Iterable[Document], counts: Counter[str], *, rules_path: Path,
                      schema_path: Path) -> Iterator[Document]:
    """Pre-annotate relations with the rules and the schema read from files, loaded once per process and content.

    Args:
        docs: Documents with typed entities and their sentences' parses.
        counts: Updated with the relation stage's counts.
        rules_path: The relation rule file (it names its scorer file, whose content counts too).
        schema_path: The schema file.

    Returns:
        The documents, as [`relate_documents`][pipeline.nlp.relations.relate_documents] returns them.
    """
    from pipeline.process_cache import loaded
    from pipeline.schema import load_schema
    from pipeline.store import content_digest

    schema = loaded(load_schema, schema_path)
    # the scorer's content is part of the cache key too (the rule file only names it)
    scorer = tuple(content_digest(f) for f in rule_files(rules_path)[1:])
    rules = loaded(load_rules_file, rules_path, schema_path, extra=scorer)
    return relate_documents(docs, rules, schema, counts)
