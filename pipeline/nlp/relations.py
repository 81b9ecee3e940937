"""Relation pre-annotation: typed, directed relations between the mapped entities of each sentence.

Input: documents whose annotations carry schema types (after type mapping), with
sentences and, for the dependency rules, the sentence parses extension kept
(``Document.parses``, [`sentence_parse`][pipeline.nlp.extend.sentence_parse]).  Output: the
same documents with ``relations`` (indices into ``annotations``) and without
``parses`` (consumed here, never written further).  Offsets are
document-relative and half-open throughout; nothing is parsed here.

Proposals (``Relation.rule`` is ``<rule>:<type proposed before typing>``; the words come from
``config/relations.yaml``, [`load_rules`][pipeline.nlp.relations.load_rules]):

``abbreviation``
    two entities of the same type written "A ( B )": ``isEquivalentTo`` with the
    short form B as Arg1 and the long form A as Arg2 (the PGxCorpus convention).
    Also "A gene ( B )", and each later member of a list of synonyms in the
    parentheses, "A ( B ; C )".
``path``
    a trigger word on the dependency path between the two entities' head
    tokens (conjuncts collapsed onto the first conjunct, so "levels of X, Y and
    Z" relates all three), at most ``max_path`` arcs: the trigger's type.
``modifier``
    a trigger modifying an entity's head ("**elevated** levels of X", "X-**induced**
    Y") when the path between the two entities is within ``max_path`` and holds
    no trigger itself.
``scorer``
    when the rule file names a learned scorer
    ([`RelationScorer`][pipeline.nlp.relations.RelationScorer], trained by
    [`train_scorer`][pipeline.nlp.relations.train_scorer] / ``pgx-corpus
    train-relations``), it replaces ``path`` and ``modifier``: a logistic
    regression over the ordered pair's features
    ([`pair_features`][pipeline.nlp.relations.pair_features]: entity types, the
    dependency path's labels, words and triggers, the words between and around,
    coordination, nesting, nearest candidates) gives the probability that
    annotators relate the pair in that direction, a context model rescores it
    from the scores of both arguments' other pairs in the sentence.  The pair is
    proposed in its more probable direction by the scorer's decision: with its
    most probable type when the proposal is expected to save the annotator an
    action (``actions``, the default of ``train-relations``), or when its
    probability reaches the scorer's threshold, with the most specific type the
    type model is sure enough of (``thresholds``).

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
import itertools
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


class RelationRulesError(ValueError):
    """An invalid relation rule file or scorer file.

    The message starts with the file (and line, for the rule file).
    """


@dataclass(frozen=True)
class RelationRules:
    """The rules' resources (see ``config/relations.yaml``), checked against the schema.

    Attributes:
        triggers: Lemma -> relation type.
        allowed: Relation type -> (Arg1 types, Arg2 types), expanded to every entity type they
            admit (the schema's constraints and ``argument_types`` both).
        rank: Entity type -> argument order rank (lower: Arg1).
        negation: Negation cue lemmas.
        hedges: Hedge cue lemmas.
        max_path: Longest dependency path (arcs) the trigger rules consider.
        source_types: PubTator3 relation type -> schema relation type, or None (dropped).
        disabled: Rule keys (``<family>:<type>``) switched off.
        retype: Rule key -> the ancestor type it proposes instead of its trigger's.
        enabled: The trigger-rule keys that propose (None: all).
        scorer: The learned scorer, when the rule file names one.
        relation_parent: Relation type -> parent type (the schema's hierarchy).
        path: The rule file, named in messages.
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
        """Tell whether a relation type's argument constraints admit the entity types.

        Args:
            type_: The relation type.
            arg1: The Arg1 entity type.
            arg2: The Arg2 entity type.

        Returns:
            True when ``type_`` may relate an ``arg1`` to an ``arg2``.
        """
        allowed = self.allowed.get(type_)
        return allowed is not None and arg1 in allowed[0] and arg2 in allowed[1]

    def fitting_type(self, type_: str, arg1: str, arg2: str) -> str | None:
        """Return ``type_`` or its nearest ancestor whose constraints admit the argument types.

        Args:
            type_: The relation type proposed.
            arg1: The Arg1 entity type.
            arg2: The Arg2 entity type.

        Returns:
            The fitting type, or None when no ancestor admits (arg1, arg2).
        """
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

    A ``scorer:`` entry names the learned scorer's file (relative to the rule file;
    [`train_scorer`][pipeline.nlp.relations.train_scorer]).

    Args:
        path: The rule file (``config/relations.yaml``).
        schema: The schema whose types and relation constraints the rules must respect.
        with_scorer: Load the scorer the file names (False: leave it out).

    Returns:
        The rules.

    Raises:
        RelationRulesError: Naming the file and line, for a bad shape, an unknown relation or
            entity type, a word given to two relation types, an argument type that the schema's
            ``relation_arguments`` forbid for the relation, or a missing or bad scorer file.
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
        self.depth = _depths(parse)
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
    """[`_depth`][pipeline.nlp.relations._depth] of every token, each arc walked once (known depths are reused)."""
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
    """Propose relations between the entities of one sentence.

    Args:
        text: The document text (annotation and parse offsets are half-open, document-relative).
        entities: The sentence's entities as (index in the document's annotations, annotation,
            schema type).
        parse: The sentence's parse (None: only the abbreviation rule applies).
        rules: The rule resources (and scorer).
        counts: Counter the stage's count keys are added to.

    Returns:
        Relations whose ``arg1``/``arg2`` are the entities' document indices, in a deterministic
        order; every unordered pair gets at most one proposal.
    """
    tree = _Tree(parse) if parse is not None and parse.tokens else None
    ents: list[_Entity] = []
    for index, ann, type_ in entities:
        tokens, head = _align(ann, tree) if tree is not None else (frozenset(), None)
        if tree is not None and head is None:
            counts["entities_unaligned"] += 1
        ents.append(_Entity(index, ann, type_, head, tokens, ann.start, ann.end))
    ents.sort(key=lambda e: (e.annotation.sort_key(), e.index))
    # An entity nested in another ("warfarin" in "warfarin sensitivity") is rarely an argument:
    # the outer one is (PGxCorpus dev: 154 of 828 nested entities are, 1,118 of 1,350 outer ones).
    outer = _outer(ents)
    scored = _scored_sentence(text, tree, ents, outer, rules) if tree is not None and rules.scorer else {}
    proposals: list[_Proposal] = []
    considered = 0  # counted here, added once: the stage's counter notes every key it is given
    for x, a in enumerate(ents):
        for b in ents[x + 1:]:
            if a.start < b.end and b.start < a.end and _overlap(a.annotation, b.annotation):
                continue
            considered += 1
            found = _abbreviation(text, a, b, rules, ents)
            if found is None and tree is not None and rules.scorer is not None:
                found = scored.get((a.index, b.index))
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
    if considered:
        counts["pairs_considered"] += considered
    out = []
    for prop in proposals:
        out.append(Relation(prop.type, prop.arg1.index, prop.arg2.index, prop.modality, "rules", prop.rule,
                            prop.trigger))
    return out


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
    """Propose relations in each sentence of each document and drop the parses.

    Streams one document at a time (the per-document memo's attribution contract holds).

    Args:
        docs: Documents with schema-typed annotations, sentences and (for the rules and the
            scorer) the parses extension kept.
        rules: The rule resources (and scorer).
        schema: The schema (entity types).
        counts: Counter the stage's count keys (module docstring) are added to.
        use_rules: False: only the source's relations (PubTator3) become proposals (the
            ``--no-relations`` build does not call this at all).

    Yields:
        Each document with its relations and without parses.
    """
    for doc in docs:
        counts["documents"] += 1
        parses = {(p.start, p.end): p for p in doc.parses}
        # the schema-typed entities by start, to find each sentence's without scanning them all
        typed = sorted((a.start, i, a.end) for i, a in enumerate(doc.annotations) if a.type in schema.entity_parent)
        starts = [t[0] for t in typed]
        relations: list[Relation] = []
        sentences = doc.sentences or ((Sentence(0, len(doc.text)),) if doc.text else ())
        if sentences:
            counts["sentences"] += len(sentences)
        for sent in sentences:
            parse = parses.get((sent.start, sent.end))
            entities = [(i, doc.annotations[i], doc.annotations[i].type) for i in sorted(
                i for _s, i, end in typed[bisect.bisect_left(starts, sent.start):bisect.bisect_left(starts, sent.end)]
                if end <= sent.end)]
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
    """Turn the document's PubTator3 relations into sentence-level proposals.

    A pair already related by ``taken`` (the rules) keeps the rules' proposal.  Relations whose
    type maps to nothing, whose concepts have no mention among the document's entities, or whose
    concepts never share a sentence are counted and logged with the PMID, never written.

    Args:
        doc: The document (``concept_relations``, schema-typed annotations with identifiers).
        sentences: Its sentences (half-open, document-relative).
        rules: The rule resources (``source_types``, argument constraints and order).
        schema: The schema (entity types).
        counts: Counter the ``concept_relations*`` keys are added to.
        taken: Relations already proposed in the document.

    Returns:
        The proposals (rule ``pubtator:<type>``), arguments as indices into ``doc.annotations``.
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
    """The comparable forms of an identifier: ``MESH:D014859`` -> {``mesh:d014859``, ``d014859``}.

    PubTator3 relation ids name genes by number, chemicals and diseases by ``MESH:``, variants by
    ``RS#:``/HGVS forms, mentions carry the same.
    """
    out: set[str] = set()
    for part in re.split(r"[;,|]", identifier):
        part = part.strip().lower()
        if not part or part == "-":
            continue
        out.add(part)
        if ":" in part:
            out.add(part.split(":", 1)[1])
    return out


#: rule_files's answers by (path, modification time, size): every shard task of the build asks for
#: its output path thousands of times, and each ask named the files its parameters depend on
#: (composing this YAML file each time was most of those tasks' own time)
_RULE_FILES: dict[tuple[str, int, int], list[str]] = {}


def rule_files(path: str | Path) -> list[str]:
    """List the rule file and the scorer file it names.

    What a build's relation stage depends on, by content.  Answers are remembered while the
    file's modification time and size stay the same.

    Args:
        path: The rule file.

    Returns:
        The rule file's path, then the scorer's when the file names one.
    """
    p = Path(path)
    try:
        stat = p.stat()
    except OSError:
        return [str(p)]  # load_rules reports the problem, naming the file
    key = (str(p), stat.st_mtime_ns, stat.st_size)
    found = _RULE_FILES.get(key)
    if found is None:
        found = _RULE_FILES[key] = _rule_files(p)
    return list(found)


def _rule_files(p: Path) -> list[str]:
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
    """Load the rules with the schema read from a file (the form the process cache loads).

    Args:
        path: The rule file.
        schema_path: The schema file.
        *scorer_digests: Content digests of the scorer file; unused here, they only make the cache key.

    Returns:
        The rules, as [`load_rules`][pipeline.nlp.relations.load_rules] gives them.

    Raises:
        RelationRulesError: As [`load_rules`][pipeline.nlp.relations.load_rules].
    """
    from pipeline.schema import load_schema

    return load_rules(path, load_schema(schema_path))


# --- the learned scorer ------------------------------------------------------------------------
#
# The rules' trigger paths find many related pairs but cannot tell them from the unrelated ones
# around them (a sentence of the dev set holds about eight entities, and 3% to 18% of its pairs
# are related).  The scorer learns that from finished annotations, in two stages:
#
# 1. the pair model, a logistic regression over the ordered pair's features (entity types, the
#    dependency path's labels and words, the trigger types on it, the words between and around,
#    coordination, nesting, whether each argument is the other's nearest candidate of its kind),
#    gives the probability that an annotator relates Arg1 to Arg2;
# 2. the context model, a logistic regression over what the pair model says about the pair's
#    neighbours in the sentence (the best other pair of each argument, how many other pairs of
#    each argument are likely), rescores it: annotators relate a variant to each phenotype of a
#    sentence, a drug to the one effect it causes, so one pair's score depends on the others'.
#    It is trained on pair-model probabilities cross-fitted on the training data (inner folds).
#
# A softmax regression over the pair features gives the type.  Trained by train_scorer
# (scikit-learn's L-BFGS logistic regression); the file holds the weights only, evaluated here.
# What is proposed is the scorer's decision (DECISIONS): annotators review every proposal, so the
# default proposes what is expected to save them an action rather than what clears thresholds.

SCORER_FORMAT = 2
#: a feature must occur in this many training pairs to get a weight
MIN_FEATURE_COUNT = 3
#: candidate inverse L2 strengths (scikit-learn's ``C``) of the pair, context and type models; each
#: training run chooses among them by inner cross-validation by PMID on its own training data
#: (``train_scorer``), never on the sentences it is evaluated on
PAIR_C_GRID = (0.1, 0.3, 1.0)
CONTEXT_C_GRID = (0.3, 1.0, 3.0)
TYPE_C_GRID = (0.3, 1.0, 3.0)
#: candidate type thresholds; the one chosen gives the most strictly right types among the inner-CV
#: proposals that are right (pair and direction) while losing at most TYPE_HIERARCHY_COST of them
#: under hierarchy credit (a lower threshold names a specific type more often: more strictly right
#: types, but more specific types that hierarchy credit does not accept either); TYPE_HIERARCHY_COST
#: is the default of ``train-relations --type-hierarchy-budget``
TYPE_THRESHOLD_GRID = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
TYPE_HIERARCHY_COST = 0.05
#: how a scorer decides which pairs to propose, with which type (``train-relations --decision``):
#: ``thresholds``, the pair threshold and the type thresholds chosen by inner cross-validation;
#: ``actions``, every pair whose proposal is expected to save the annotator an action, typed with
#: its most probable type (see [`RelationScorer`][pipeline.nlp.relations.RelationScorer])
DECISIONS = ("thresholds", "actions")
#: ``train-relations``' decision (the library's ``train_scorer`` keeps ``thresholds`` unless told):
#: annotators review every proposal, so what a proposal saves them is what counts
DEFAULT_DECISION = "actions"
#: an entity type pair is scored when training annotators related at least this many of its pairs
#: and at least this share of them (Gene_or_protein with Limited_variation, Chemical with Chemical:
#: never related in PGxCorpus); the others are never proposed and cost nothing.  A fixed rule, not
#: selected per training run (each candidate would refit every pair model)
MIN_TYPE_PAIR_RELATED = 2
MIN_TYPE_PAIR_RATE = 0.01


@dataclass(frozen=True)
class RelationScorer:
    """Weights of the pair, context and type models, and the decision thresholds.

    A pair is proposed in its more probable direction when the context model's probability is
    at least ``threshold``; its type is the most specific one whose probability (its own and
    its descendants', from the type model's softmax) is at least its threshold: its own in
    ``type_thresholds`` when it has one, else ``type_threshold`` for the root's children and
    ``specific_type_threshold`` for the types below them (the root, ``isAssociatedWith``, always
    qualifies).

    Attributes:
        pair: Feature -> weight of the pair model (binary features, ``bias`` included).
        types: Relation type -> feature -> weight of the type model (softmax over the types).
        threshold: Lowest context-model probability proposed (decision ``thresholds``), or the
            least expected net actions saved a proposal needs (decision ``actions``; 0 as trained).
        type_threshold: Cumulative type probability a child of the root (``influences``,
            ``treats``) needs to be chosen, and the types below them too when
            ``specific_type_threshold`` is None.
        meta: Training provenance (data, seed, sizes), written to the file as is.
        context: Context feature -> weight of the context model (values are probabilities or
            0/1 indicators); empty: the pair model's probability is used as is.
        pair_types: The entity type pairs (``A|B``, sorted) scored at all; empty: every pair.
        type_features: Version of the type-only features the type model reads besides the pair's
            (computed for the proposed pairs only); 0: none (older files).
        specific_type_threshold: Cumulative type probability a type below the root's children
            (``increases``, ``causes``, ...) needs; None: ``type_threshold`` (older files).
        type_thresholds: Relation type -> the cumulative type probability that type needs, in
            place of its level's threshold; empty: the level thresholds only (older files).
        decision: ``thresholds`` (the above; older files) or ``actions``: a pair is proposed, with
            its most probable type, when the proposal's expected net actions saved are not
            negative.  With ``p`` the context model's probability of the pair in its more probable
            direction and ``q`` the type's probability (averaged over coordinated proposals, as
            the thresholds read it), an annotator keeps the proposal as it is with probability
            ``p * q`` (+1), retypes it with probability ``p * (1 - q)`` (0) and deletes it with
            probability at most ``1 - p`` (-1): proposed when ``p * (1 + q) - 1 >= threshold``
            (0: not negative).  The type thresholds are not read.
    """

    pair: Mapping[str, float]
    types: Mapping[str, Mapping[str, float]]
    threshold: float
    type_threshold: float = 0.5
    meta: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, float] = field(default_factory=dict)
    pair_types: frozenset[str] = frozenset()
    type_features: int = 0
    specific_type_threshold: float | None = None
    type_thresholds: Mapping[str, float] = field(default_factory=dict)
    decision: str = "thresholds"

    def to_json(self) -> dict[str, Any]:
        """Return the scorer as a JSON-ready mapping (sorted keys: the same scorer, the same bytes).

        Returns:
            The format number, thresholds, meta and the three models' weights.
        """
        return {"format": SCORER_FORMAT, "threshold": self.threshold, "type_threshold": self.type_threshold,
                "meta": dict(self.meta), "pair": dict(sorted(self.pair.items())),
                "context": dict(sorted(self.context.items())), "pair_types": sorted(self.pair_types),
                "type_features": self.type_features, "specific_type_threshold": self.specific_type_threshold,
                "type_thresholds": dict(sorted(self.type_thresholds.items())), "decision": self.decision,
                "types": {t: dict(sorted(w.items())) for t, w in sorted(self.types.items())}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> RelationScorer:
        """Read a scorer written by [`to_json`][pipeline.nlp.relations.RelationScorer.to_json].

        Args:
            data: The decoded JSON object.
            where: The file it came from, named in errors.

        Returns:
            The scorer.

        Raises:
            RelationRulesError: If the object is not a scorer of the current format, or its type
                model reads type-only features this version does not compute.
        """
        if not isinstance(data, Mapping) or data.get("format") != SCORER_FORMAT:
            raise RelationRulesError(f"{where}: not a relation scorer of format {SCORER_FORMAT} "
                                     "(retrain it with pgx-corpus train-relations)")
        version = data.get("type_features", 0)
        if not isinstance(version, int) or not 0 <= version <= TYPE_FEATURES:
            raise RelationRulesError(f"{where}: type features of version {version!r}, this version computes "
                                     f"0 to {TYPE_FEATURES} (retrain it with pgx-corpus train-relations)")
        decision = data.get("decision", "thresholds")
        if decision not in DECISIONS:
            raise RelationRulesError(f"{where}: decision {decision!r} is not one of {', '.join(DECISIONS)} "
                                     "(retrain it with pgx-corpus train-relations)")
        try:
            per_type = {str(t): float(v) for t, v in data.get("type_thresholds", {}).items()}
            unknown = sorted(t for t in per_type if t not in data["types"])
            if unknown or not all(0.0 <= v <= 1.0 for v in per_type.values()):
                raise ValueError(f"type_thresholds must be probabilities of the type model's types, "
                                 f"not {per_type} (unknown: {unknown})")
            return cls(pair={str(k): float(v) for k, v in data["pair"].items()},
                       types={str(t): {str(k): float(v) for k, v in w.items()} for t, w in data["types"].items()},
                       threshold=float(data["threshold"]), type_threshold=float(data.get("type_threshold", 0.5)),
                       meta=dict(data.get("meta", {})),
                       context={str(k): float(v) for k, v in data.get("context", {}).items()},
                       pair_types=frozenset(str(t) for t in data.get("pair_types", ())),
                       type_features=version,
                       specific_type_threshold=(None if data.get("specific_type_threshold") is None
                                                else float(data["specific_type_threshold"])),
                       type_thresholds=per_type, decision=str(decision))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RelationRulesError(f"{where}: bad relation scorer: {exc}") from exc


_ZEROS = (0.0,) * 512


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _logit(weights: Mapping[str, float], feats: Sequence[str]) -> float:
    if len(feats) <= len(_ZEROS):
        return sum(map(weights.get, feats, _ZEROS[: len(feats)]))
    return sum(weights.get(f, 0.0) for f in feats)


def _probability(weights: Mapping[str, float], feats: Sequence[str]) -> float:
    """The logistic regression's probability over binary features."""
    return _sigmoid(_logit(weights, feats))


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
    kinds = tree.kinds.get(id(ents))
    if kinds is None:  # per sentence, not per pair
        kinds = tree.kinds[id(ents)] = Counter(_root_type(e.type, rules) for e in ents if e.index in outer)
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


def _pair_features_both(text: str, tree: _Tree, a: _Entity, b: _Entity, ents: Sequence[_Entity], outer: set[int],
                        rules: RelationRules, info: _SentenceInfo) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """[`pair_features`][pipeline.nlp.relations.pair_features] of (a, b) and of (b, a), computed together.

    The same features (as multisets) for a fraction of the work: what does not depend on the
    direction (the words between and around, the path's words) is computed once.
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
    return tuple(ab + both), tuple(ba + both)


#: parts of speech whose lemmas are type features (function words and punctuation say nothing of the type)
_CONTENT_TAGS = frozenset({"NOUN", "VERB", "ADJ", "ADV", "PROPN"})
#: version of the type-only features (``RelationScorer.type_features``); 0: the type model reads the pair's
#: features only
TYPE_FEATURES = 1


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


def _type_probabilities(scorer: RelationScorer, feats: Sequence[str]) -> dict[str, float]:
    """The type model's softmax over the relation types."""
    if not scorer.types:
        return {}
    logits = {t: _logit(w, feats) for t, w in scorer.types.items()}
    top = max(logits.values())
    exp = {t: math.exp(z - top) for t, z in logits.items()}
    total = sum(exp.values())
    return {t: v / total for t, v in exp.items()}


def _ancestors(type_: str, rules: RelationRules) -> list[str]:
    out: list[str] = []
    current: str | None = type_
    while current is not None:
        out.append(current)
        current = rules.relation_parent.get(current)
    return out


def _choose_type(probs: Mapping[str, float], rules: RelationRules, threshold: float,
                 specific: float | None = None, per_type: Mapping[str, float] | None = None) -> str | None:
    """The most specific type whose own and descendants' probability reaches its threshold.

    A type's threshold is its own in ``per_type`` when it has one; else ``threshold`` for the
    root's children (``influences``, ``treats``) and ``specific`` (None: the same) for the types
    below them (``increases``, ``causes``, ...).  The root always qualifies.
    """
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

    deep = threshold if specific is None else specific
    own = per_type or {}
    passing = [t for t, v in cumulative.items() if v >= own.get(t, deep if depth(t) >= 2 else threshold)]
    if not passing:
        return max(cumulative, key=lambda t: (cumulative[t], t))
    return max(passing, key=lambda t: (depth(t), cumulative[t], t))


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


def _context_logit(weights: Mapping[str, float], p_xy: float, p_yx: float, top_x: float, n_x: int, top_y: float,
                   n_y: int) -> float:
    """The context model's log-odds, without building its features.

    The weighted sum of [`context_features`][pipeline.nlp.relations.context_features] (``top_*``: the best of
    the argument's other pairs, ``n_*``: how many of them reach 0.5).
    """
    g = weights.get
    best = max(p_xy, p_yx)
    flag_x, flag_y = int(best >= top_x), int(best >= top_y)
    bucket = _prob_bucket(p_xy)
    return (g("bias", 0.0) + g("p", 0.0) * p_xy + g("prev", 0.0) * p_yx
            + g("lp", 0.0) * (math.log(p_xy + 1e-6) - math.log(1.0 - p_xy + 1e-6))
            + g(f"p={bucket}", 0.0) + g(f"prev={_prob_bucket(p_yx)}", 0.0) + g(f"dirbest={int(p_xy >= p_yx)}", 0.0)
            + g("x_max_other", 0.0) * top_x + g(f"x_max_other={_prob_bucket(top_x)}", 0.0)
            + g(f"x_isbest={flag_x}", 0.0) + g(f"x_n_over={min(3, n_x)}", 0.0)
            + g("y_max_other", 0.0) * top_y + g(f"y_max_other={_prob_bucket(top_y)}", 0.0)
            + g(f"y_isbest={flag_y}", 0.0) + g(f"y_n_over={min(3, n_y)}", 0.0)
            + g(f"p|best={bucket}|{flag_x}{flag_y}", 0.0))


class _ContextTable:
    """A context model's weights by feature value: what [`_context_logit`][pipeline.nlp.relations._context_logit] sums.

    The same weights added in the same order as ``_context_logit``'s general form (so the same
    float), looked up by bucket (0-9) and flag instead of by feature name: about 100,000 pairs of a
    3,000-record build ask for sixteen weights each.
    """

    def __init__(self, weights: Mapping[str, float]) -> None:
        g = weights.get
        self.weights = dict(weights)  # a copy: the table serves a mapping equal to it, never a changed one
        self.bias, self.p, self.prev, self.lp = g("bias", 0.0), g("p", 0.0), g("prev", 0.0), g("lp", 0.0)
        self.x_max, self.y_max = g("x_max_other", 0.0), g("y_max_other", 0.0)
        self.p_bucket = [g(f"p={b}", 0.0) for b in range(10)]
        self.prev_bucket = [g(f"prev={b}", 0.0) for b in range(10)]
        self.dirbest = [g(f"dirbest={f}", 0.0) for f in range(2)]
        self.x_bucket = [g(f"x_max_other={b}", 0.0) for b in range(10)]
        self.y_bucket = [g(f"y_max_other={b}", 0.0) for b in range(10)]
        self.x_best = [g(f"x_isbest={f}", 0.0) for f in range(2)]
        self.y_best = [g(f"y_isbest={f}", 0.0) for f in range(2)]
        self.x_over = [g(f"x_n_over={n}", 0.0) for n in range(4)]
        self.y_over = [g(f"y_n_over={n}", 0.0) for n in range(4)]
        self.p_best = [[[g(f"p|best={b}|{fx}{fy}", 0.0) for fy in range(2)] for fx in range(2)] for b in range(10)]

    def logit(self, p_xy: float, p_yx: float, top_x: float, n_x: int, top_y: float, n_y: int) -> float:
        """Return the context model's log-odds (probabilities in [0, 1], counts >= 0).

        Args:
            p_xy: The pair model's probability of the pair in this direction.
            p_yx: The same in the other direction.
            top_x: The best pair-model probability among Arg1's other pairs (0: none).
            n_x: How many of Arg1's other pairs reach 0.5.
            top_y: The same as ``top_x`` for Arg2.
            n_y: The same as ``n_x`` for Arg2.

        Returns:
            The same float as the general form of ``_context_logit``.
        """
        best = max(p_xy, p_yx)
        flag_x, flag_y = int(best >= top_x), int(best >= top_y)
        bucket = min(9, int(p_xy * 10))  # _prob_bucket's value, as an index
        return (self.bias + self.p * p_xy + self.prev * p_yx
                + self.lp * (math.log(p_xy + 1e-6) - math.log(1.0 - p_xy + 1e-6))
                + self.p_bucket[bucket] + self.prev_bucket[min(9, int(p_yx * 10))]
                + self.dirbest[int(p_xy >= p_yx)]
                + self.x_max * top_x + self.x_bucket[min(9, int(top_x * 10))]
                + self.x_best[flag_x] + self.x_over[min(3, n_x)]
                + self.y_max * top_y + self.y_bucket[min(9, int(top_y * 10))]
                + self.y_best[flag_y] + self.y_over[min(3, n_y)]
                + self.p_best[bucket][flag_x][flag_y])


# the table of the context model last used (a build uses one scorer; a check of the weights' equality
# costs far less than the lookups the table saves in a sentence)
_CONTEXT_TABLE: list[_ContextTable] = []


def _context_table(weights: Mapping[str, float]) -> _ContextTable:
    # called once per sentence with the loaded scorer's own dict: identity settles it without comparing
    # every weight; another dict with the same weights still reuses the table
    if not _CONTEXT_TABLE or (_CONTEXT_TABLE[0].weights is not weights and _CONTEXT_TABLE[0].weights != weights):
        _CONTEXT_TABLE[:] = [_ContextTable(weights)]
    return _CONTEXT_TABLE[0]


def _others(rows: Sequence[_PairRow], first: Sequence[tuple[float, float]]) -> list[tuple[float, int, float, int]]:
    """Per pair: the best score among each argument's other pairs and how many of those reach 0.5.

    Returns ``(top_a, n_a, top_b, n_b)`` per pair, ``a`` and ``b`` as in the row.
    """
    # per entity: its pairs' scores (best direction), the two best (pair excluded: the other one)
    scores: dict[int, list[tuple[float, int]]] = {}
    for k, ((a, b, _fab, _fba), (p_ab, p_ba)) in enumerate(zip(rows, first, strict=True)):
        q = max(p_ab, p_ba)
        scores.setdefault(a.index, []).append((q, k))
        scores.setdefault(b.index, []).append((q, k))
    summary: dict[int, tuple[list[tuple[float, int]], int]] = {}
    for index, qs in scores.items():
        qs.sort(key=lambda x: (-x[0], x[1]))
        summary[index] = (qs[:2], sum(1 for q, _k in qs if q >= 0.5))
    out = []
    for k, ((a, b, _fab, _fba), (p_ab, p_ba)) in enumerate(zip(rows, first, strict=True)):
        q = max(p_ab, p_ba)
        row: list[float | int] = []
        for e in (a, b):
            top2, over = summary[e.index]
            rest = [x for x, j in top2 if j != k]
            row += [rest[0] if rest else 0.0, over - (q >= 0.5)]
        out.append((float(row[0]), int(row[1]), float(row[2]), int(row[3])))
    return out


def _pair_probabilities(pair: Mapping[str, float], context: Mapping[str, float], rows: Sequence[_PairRow],
                        first: Sequence[tuple[float, float]] | None = None) -> list[tuple[float, float]]:
    """Both directions' final probabilities of a sentence's pairs (the context model over the pair model's).

    ``first``: the pair model's probabilities when already known (training: cross-fitted ones).
    """
    if first is None:
        first = [(_probability(pair, f_ab), _probability(pair, f_ba)) for _a, _b, f_ab, f_ba in rows]
    if not context:
        return list(first)
    table = _context_table(context)
    out = []
    for (p_ab, p_ba), (top_a, n_a, top_b, n_b) in zip(first, _others(rows, first), strict=True):
        if 0.0 <= min(p_ab, p_ba, top_a, top_b) and max(p_ab, p_ba, top_a, top_b) <= 1.0 and min(n_a, n_b) >= 0:
            out.append((_sigmoid(table.logit(p_ab, p_ba, top_a, n_a, top_b, n_b)),
                        _sigmoid(table.logit(p_ba, p_ab, top_b, n_b, top_a, n_a))))
        else:  # outside what the table covers (not a probability): the general form
            out.append((_sigmoid(_context_logit(context, p_ab, p_ba, top_a, n_a, top_b, n_b)),
                        _sigmoid(_context_logit(context, p_ba, p_ab, top_b, n_b, top_a, n_a))))
    return out


def _scored_sentence(text: str, tree: _Tree, ents: Sequence[_Entity], outer: set[int], rules: RelationRules
                     ) -> dict[tuple[int, int], _Proposal | None]:
    """The scorer's decision on each candidate pair of one sentence, keyed by (index, index) as ordered in ``ents``.

    Proposals are typed together with their coordinated ones
    ([`_coordinated_probabilities`][pipeline.nlp.relations._coordinated_probabilities]).
    """
    scorer = rules.scorer
    assert scorer is not None
    rows = _candidate_pairs(text, tree, ents, outer, rules, scorer.pair_types)
    out: dict[tuple[int, int], _Proposal | None] = {}
    proposed: list[tuple[tuple[int, int], _Entity, _Entity, dict[str, float]]] = []
    pair_probs: list[float] = []
    actions = scorer.decision == "actions"
    # p * (1 + q) - 1 >= threshold needs p >= (1 + threshold) / 2: no pair below it is ever proposed, nor typed
    floor = (1.0 + scorer.threshold) / 2 if actions else scorer.threshold
    for (a, b, f_ab, f_ba), (p_ab, p_ba) in zip(rows, _pair_probabilities(scorer.pair, scorer.context, rows),
                                                strict=True):
        first, second, feats, prob = (a, b, f_ab, p_ab) if p_ab >= p_ba else (b, a, f_ba, p_ba)
        if prob < floor:
            out[(a.index, b.index)] = None
            continue
        if scorer.type_features:
            feats = feats + _type_features(tree, first, second, rules)
        proposed.append(((a.index, b.index), first, second, _type_probabilities(scorer, feats)))
        pair_probs.append(prob)
    for (key, first, second, _own), probs, prob in zip(proposed, _coordinated_probabilities(tree, proposed),
                                                       pair_probs, strict=True):
        if actions:
            type_: str | None = _most_probable(probs)
            if type_ is not None and prob * (1.0 + probs[type_]) - 1.0 < scorer.threshold:
                type_ = None
        else:
            type_ = _choose_type(probs, rules, scorer.type_threshold, scorer.specific_type_threshold,
                                 scorer.type_thresholds)
        out[key] = (None if type_ is None
                    else _Proposal(type_, first, second, "scorer", *_evidence(tree, first, second, rules)))
    return out


def _most_probable(probs: Mapping[str, float]) -> str | None:
    # ties (never seen with real weights) go to the first name, so that the choice is reproducible
    return max(sorted(probs), key=lambda t: probs[t]) if probs else None


def _coordinated_probabilities(tree: _Tree, proposed: Sequence[tuple[tuple[int, int], _Entity, _Entity,
                                                                    dict[str, float]]]) -> list[dict[str, float]]:
    """Each proposal's type probabilities, averaged over the proposals coordinated with it.

    Two proposals are coordinated when they share one argument, in the same role, and their other
    arguments are of one entity type and stand in one coordination ("levels of estrone ,
    estradiol and testosterone": their heads collapse to one, see ``_Tree.collapsed``).
    Annotators type such relations alike: in the 300 PGxCorpus dev sentences, every one of the 147
    groups of two or more gold relations so coordinated has a single type.  Averaging over the
    group makes the decisions agree and pools the evidence of its members; a proposal without
    coordinated ones keeps its own probabilities.  ``proposed``: (key, Arg1, Arg2, type
    probabilities) per proposal.
    """
    groups: dict[tuple[str, int, int, str], list[int]] = {}
    for n, (_key, first, second, _probs) in enumerate(proposed):
        for role, shared, member in (("arg2", first, second), ("arg1", second, first)):
            if member.head is not None:
                groups.setdefault((role, shared.index, tree.collapsed(member.head), member.type), []).append(n)
    with_group: dict[int, set[int]] = {}
    for group in groups.values():
        if len(group) > 1:
            for n in group:
                with_group.setdefault(n, set()).update(group)
    out = []
    for n, (_key, _first, _second, probs) in enumerate(proposed):
        members = sorted(with_group.get(n, ()))
        if not members:
            out.append(probs)
            continue
        out.append({t: sum(proposed[m][3].get(t, 0.0) for m in members) / len(members) for t in probs})
    return out


def _evidence(tree: _Tree, first: _Entity, second: _Entity, rules: RelationRules
              ) -> tuple[str | None, tuple[str, ...]]:
    """The trigger on the pair's path (provenance) and the modality stated around it."""
    if first.head is None or second.head is None:
        return None, ()
    path = tree.path(tree.collapsed(first.head), tree.collapsed(second.head)) or []
    inner = [i for i in path[1:-1] if i not in first.tokens and i not in second.tokens]
    words = sorted(inner, key=lambda i: (tree.depth[i], i))
    trigger = next((tree.parse.lemmas[i] for i in words if _trigger_type(tree, i, rules)), None)
    if not words:
        words = sorted({first.head, second.head}, key=lambda i: (tree.depth[i], i))
    return trigger, _modality(tree, words, rules)


@dataclass(frozen=True)
class TrainingSentence:
    """One training example: a document with parses and its gold relations.

    Attributes:
        doc: The document (one or more sentences, with ``parses``).
        gold: Gold relations as ``(arg1 index, arg2 index, type)`` into ``doc.annotations``.
        group: Its PMID (inner folds keep a PMID's sentences together).
    """

    doc: Document
    gold: tuple[tuple[int, int, str], ...]
    group: str


@dataclass(frozen=True)
class _Sentence:
    """A training sentence's candidate pairs and their labels (computed once, used by every fit)."""

    group: str
    rows: list[_PairRow]
    labels: list[tuple[str | None, str | None]]  # gold type a->b, b->a (None: not related that way)
    reachable: int  # gold relations (not isEquivalentTo) of the sentence
    # the type-only features of each row a->b, b->a (empty: TYPE_FEATURES is 0)
    type_rows: list[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)

    def type_feats(self, k: int, forward: bool) -> tuple[str, ...]:
        """The type model's features of row ``k`` in one direction: the pair's and the type-only ones."""
        row = self.rows[k]
        feats = row[2] if forward else row[3]
        if not self.type_rows:
            return feats
        return feats + self.type_rows[k][0 if forward else 1]


def _sentences(examples: Sequence[TrainingSentence], rules: RelationRules, schema: Schema) -> list[_Sentence]:
    out = []
    for ex in examples:
        doc = ex.doc
        gold = {(i, j): t for i, j, t in ex.gold if t != EQUIVALENT}
        parses = {(p.start, p.end): p for p in doc.parses}
        for sent in doc.sentences:
            parse = parses.get((sent.start, sent.end))
            in_sentence = {e[0] for e in _sentence_entities(doc, sent, schema)}
            reachable = sum(1 for i, j in gold if i in in_sentence and j in in_sentence)
            if parse is None or not parse.tokens:
                if reachable:
                    out.append(_Sentence(ex.group, [], [], reachable))
                continue
            tree = _Tree(parse)
            ents = []
            for index, ann, type_ in _sentence_entities(doc, sent, schema):
                tokens, head = _align(ann, tree)
                ents.append(_Entity(index, ann, type_, head, tokens, ann.start, ann.end))
            ents.sort(key=lambda e: (e.annotation.sort_key(), e.index))
            outer = _outer(ents)
            rows = _candidate_pairs(doc.text, tree, ents, outer, rules)
            labels = [(gold.get((a.index, b.index)), gold.get((b.index, a.index))) for a, b, _x, _y in rows]
            type_rows = [(_type_features(tree, a, b, rules), _type_features(tree, b, a, rules))
                         for a, b, _x, _y in rows] if TYPE_FEATURES else []
            out.append(_Sentence(ex.group, rows, labels, reachable, type_rows))
    return out


def _logistic(rows: Sequence[tuple[Mapping[str, float], int]], c: float) -> dict[str, float]:
    """An L2 logistic regression (scikit-learn, L-BFGS; deterministic) as feature -> weight (``bias`` the intercept)."""
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    labels = [y for _x, y in rows]
    names = sorted({f for x, _y in rows for f in x})
    if len(set(labels)) < 2 or not names:
        # nothing to separate, or nothing to separate it by (a tiny training set): a constant model
        rate = min(max(sum(labels) / max(1, len(labels)), 1e-3), 1 - 1e-3)
        return {"bias": round(math.log(rate / (1 - rate)), 4)}
    column = {f: j for j, f in enumerate(names)}
    data, indices, indptr = [], [], [0]
    for x, _y in rows:
        for f, v in sorted(x.items(), key=lambda kv: column[kv[0]]):
            data.append(v)
            indices.append(column[f])
        indptr.append(len(indices))
    matrix = csr_matrix((data, indices, indptr), shape=(len(rows), len(names)))
    model = LogisticRegression(C=c, max_iter=5000, tol=1e-6).fit(matrix, labels)
    weights = {f: float(w) for f, w in zip(names, model.coef_[0], strict=True)}
    weights["bias"] = weights.get("bias", 0.0) + float(model.intercept_[0])
    return _rounded(weights)


def _softmax_regression(rows: Sequence[tuple[tuple[str, ...], str]], c: float) -> dict[str, dict[str, float]]:
    """A multinomial L2 logistic regression over binary features: type -> feature -> weight."""
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    classes = sorted({y for _x, y in rows})
    if len(classes) < 2:
        return {t: {} for t in classes}
    names = sorted({f for x, _y in rows for f in x})
    if not names:
        # no feature to tell the types apart by (a tiny training set): the types' frequencies
        freq = Counter(y for _x, y in rows)
        return {t: {"bias": round(math.log(freq[t] / len(rows)), 4)} for t in classes}
    column = {f: j for j, f in enumerate(names)}
    indices: list[int] = []
    indptr = [0]
    for x, _y in rows:
        indices.extend(sorted({column[f] for f in x}))
        indptr.append(len(indices))
    matrix = csr_matrix(([1.0] * len(indices), indices, indptr), shape=(len(rows), len(names)))
    model = LogisticRegression(C=c, max_iter=5000, tol=1e-6).fit(matrix, [y for _x, y in rows])
    coef = model.coef_
    intercept = model.intercept_
    if len(classes) == 2:  # scikit-learn keeps one row: the second class against the first
        coef = [-0.5 * coef[0], 0.5 * coef[0]]
        intercept = [-0.5 * intercept[0], 0.5 * intercept[0]]
    out = {}
    for t, row, b in zip(model.classes_, coef, intercept, strict=True):
        weights = {f: float(w) for f, w in zip(names, row, strict=True)}
        weights["bias"] = weights.get("bias", 0.0) + float(b)
        out[str(t)] = _rounded(weights)
    return out


def _kept_features(sentences: Sequence[_Sentence]) -> set[str]:
    # features seen fewer than MIN_FEATURE_COUNT times in the training pairs are left out: they
    # memorise single sentences (and make the scorer file large)
    seen: Counter[str] = Counter(f for s in sentences for _a, _b, f_ab, f_ba in s.rows for f in {*f_ab, *f_ba})
    return {f for f, n in seen.items() if n >= MIN_FEATURE_COUNT}


def _fit_pair(sentences: Sequence[_Sentence], c: float) -> dict[str, float]:
    kept = _kept_features(sentences)
    rows: list[tuple[Mapping[str, float], int]] = []
    for s in sentences:
        for (_a, _b, f_ab, f_ba), (l_ab, l_ba) in zip(s.rows, s.labels, strict=True):
            rows.append(({f: 1.0 for f in f_ab if f in kept}, int(l_ab is not None)))
            rows.append(({f: 1.0 for f in f_ba if f in kept}, int(l_ba is not None)))
    return _logistic(rows, c)


def _learn_pair_types(sentences: Sequence[_Sentence]) -> frozenset[str]:
    total: Counter[str] = Counter()
    related: Counter[str] = Counter()
    for s in sentences:
        for (a, b, _x, _y), (l_ab, l_ba) in zip(s.rows, s.labels, strict=True):
            key = _type_pair(a.type, b.type)
            total[key] += 1
            related[key] += l_ab is not None or l_ba is not None
    return frozenset(t for t, n in related.items() if n >= MIN_TYPE_PAIR_RELATED and n / total[t] >= MIN_TYPE_PAIR_RATE)


def _restricted(s: _Sentence, pair_types: frozenset[str]) -> _Sentence:
    keep = [k for k, (a, b, _x, _y) in enumerate(s.rows) if _type_pair(a.type, b.type) in pair_types]
    return dataclasses.replace(s, rows=[s.rows[k] for k in keep], labels=[s.labels[k] for k in keep],
                               type_rows=[s.type_rows[k] for k in keep] if s.type_rows else [])


@dataclass(frozen=True)
class _Strengths:
    """The inverse L2 strengths (scikit-learn's ``C``) of the pair, context and type models."""

    pair: float
    context: float
    type: float


def _cross_fitted(sentences: Sequence[_Sentence], folds: Sequence[set[str]], c: float
                  ) -> dict[int, list[tuple[float, float]]]:
    """Pair-model probabilities (both directions) of each sentence, from a pair model fitted without its fold.

    ``folds``: sets of PMIDs; keys of the result are indices into ``sentences``.
    """
    first: dict[int, list[tuple[float, float]]] = {}
    for held in folds:
        inner = _fit_pair([s for s in sentences if s.group not in held], c)
        for n, s in enumerate(sentences):
            if s.group in held:
                first[n] = [(_probability(inner, f_ab), _probability(inner, f_ba)) for _a, _b, f_ab, f_ba in s.rows]
    return first


def _context_rows(s: _Sentence, first: Sequence[tuple[float, float]]) -> list[tuple[Mapping[str, float], int]]:
    """The context model's training rows of one sentence (both directions of each pair)."""
    rows: list[tuple[Mapping[str, float], int]] = []
    for (p_ab, p_ba), (top_a, n_a, top_b, n_b), (l_ab, l_ba) in zip(
            first, _others(s.rows, first), s.labels, strict=True):
        rows.append((context_features(p_ab, p_ba, top_a, n_a, top_b, n_b), int(l_ab is not None)))
        rows.append((context_features(p_ba, p_ab, top_b, n_b, top_a, n_a), int(l_ba is not None)))
    return rows


def _typed_rows(sentences: Sequence[_Sentence], kept: set[str]) -> list[tuple[tuple[str, ...], str]]:
    """The type model's training rows: the related ordered pairs' kept features and gold type.

    ``kept``: the pair features kept; type-only features are kept when seen in at least
    ``MIN_FEATURE_COUNT`` of these rows.
    """
    typed: list[tuple[tuple[str, ...], str]] = []
    for s in sentences:
        for k, (l_ab, l_ba) in enumerate(s.labels):
            for forward, label in ((True, l_ab), (False, l_ba)):
                if label is not None:
                    typed.append((s.type_feats(k, forward), label))
    seen: Counter[str] = Counter(f for feats, _label in typed for f in set(feats) if f.startswith("t_"))
    keep = kept | {f for f, n in seen.items() if n >= MIN_FEATURE_COUNT}
    return [(tuple(f for f in feats if f in keep), label) for feats, label in typed]


def _recall_at_precision(scored: Sequence[tuple[float, int]], target: float, reachable: int) -> float:
    """The highest recall of a threshold on ``(probability, right)`` proposals whose precision reaches ``target``."""
    best = right = 0
    for n, (_p, ok) in enumerate(sorted(scored, key=lambda x: -x[0]), 1):
        right += ok
        if right / n >= target:
            best = right
    return best / max(1, reachable)


def _select_strengths(sentences: Sequence[_Sentence], folds: Sequence[set[str]], target_precision: float
                      ) -> tuple[_Strengths, dict[str, Any], dict[int, list[tuple[float, float]]]]:
    """Choose the three models' L2 strengths by cross-validation over ``folds`` (sets of PMIDs) of ``sentences``.

    The pair and context strengths together: the highest recall (pair and direction right) at which the
    held-out two-stage probabilities reach ``target_precision`` (the operating point's own measure: the
    threshold is chosen on it); the pair model's probabilities the context model reads are cross-fitted
    over the same folds.  The type strength: the lowest log-loss of the type model on the held-out
    related pairs (the type threshold is chosen afterwards, so the whole probability counts).  Ties go
    to the stronger regularisation.  Only ``sentences`` are read.

    Returns the strengths, a report (grids, criterion per candidate) and the cross-fitted pair-model
    probabilities of the chosen pair strength (sentences restricted to the type pairs they relate),
    which the final fit reuses.
    """
    pair_types = _learn_pair_types(sentences)
    restricted = [_restricted(s, pair_types) for s in sentences]
    reachable = sum(s.reachable for s in restricted)
    recall: dict[tuple[float, float], float] = {}
    first_by_c: dict[float, dict[int, list[tuple[float, float]]]] = {}
    for pc in PAIR_C_GRID:
        first = first_by_c[pc] = _cross_fitted(restricted, folds, pc)
        rows = {n: _context_rows(s, first[n]) for n, s in enumerate(restricted)}
        for cc in CONTEXT_C_GRID:
            scored: list[tuple[float, int]] = []
            for held in folds:
                context = _logistic([r for n, s in enumerate(restricted) if s.group not in held for r in rows[n]], cc)
                for n, s in enumerate(restricted):
                    if s.group in held:
                        for (p_ab, p_ba), (l_ab, l_ba) in zip(_pair_probabilities({}, context, s.rows, first[n]),
                                                              s.labels, strict=True):
                            scored.append((p_ab, int(l_ab is not None)) if p_ab >= p_ba
                                          else (p_ba, int(l_ba is not None)))
            recall[(pc, cc)] = _recall_at_precision(scored, target_precision, reachable)
    pair_c, context_c = max(recall, key=lambda k: (recall[k], -k[0], -k[1]))
    log_loss: dict[float, float] = {}
    for tc in TYPE_C_GRID:
        total, count = 0.0, 0
        for held in folds:
            train = [s for s in restricted if s.group not in held]
            model = RelationScorer({}, _softmax_regression(_typed_rows(train, _kept_features(train)), tc), 0.0)
            for s in restricted:
                if s.group not in held:
                    continue
                for k, (l_ab, l_ba) in enumerate(s.labels):
                    for forward, label in ((True, l_ab), (False, l_ba)):
                        if label is not None:
                            probs = _type_probabilities(model, s.type_feats(k, forward))
                            total -= math.log(max(probs.get(label, 0.0), 1e-6))
                            count += 1
        log_loss[tc] = total / max(1, count)
    type_c = min(TYPE_C_GRID, key=lambda c: (round(log_loss[c], 6), c))
    report = {"criterion_pair_context": f"inner-CV recall (pair and direction) at precision {target_precision}",
              "criterion_type": "inner-CV log-loss of the type model on related pairs",
              "recall": {f"{pc}/{cc}": round(r, 4) for (pc, cc), r in sorted(recall.items())},
              "type_log_loss": {str(c): round(v, 4) for c, v in sorted(log_loss.items())}}
    return _Strengths(pair_c, context_c, type_c), report, first_by_c[pair_c]


def _fit_scorer(sentences: Sequence[_Sentence], *, inner_folds: int, seed: int, strengths: _Strengths,
                first: Mapping[int, list[tuple[float, float]]] | None = None
                ) -> tuple[dict[str, float], dict[str, float], dict[str, dict[str, float]], frozenset[str]]:
    """The pair, context and type models trained on ``sentences``, and the type pairs they score.

    The context model learns from pair-model probabilities cross-fitted over ``inner_folds`` folds
    by PMID (a pair model never scores the sentences it was trained on), as it meets them when
    applied to new sentences.  ``first``: those probabilities when already computed (by
    [`_select_strengths`][pipeline.nlp.relations._select_strengths], with the same folds and strength).
    """
    from pipeline.nlp.folds import kfold_groups

    pair_types = _learn_pair_types(sentences)
    sentences = [_restricted(s, pair_types) for s in sentences]
    pair = _fit_pair(sentences, strengths.pair)
    groups = sorted({s.group for s in sentences})
    k = min(inner_folds, len(groups))
    context: dict[str, float] = {}
    if k >= 2:
        if first is None:
            first = _cross_fitted(sentences, [set(f) for f in kfold_groups(groups, k=k, seed=seed)], strengths.pair)
        rows = [r for n, s in enumerate(sentences) for r in _context_rows(s, first[n])]
        context = _logistic(rows, strengths.context)
    typed = _typed_rows(sentences, _kept_features(sentences))
    return pair, context, _softmax_regression(typed, strengths.type), pair_types


def _rounded(weights: Mapping[str, float]) -> dict[str, float]:
    return {f: round(w, 4) for f, w in sorted(weights.items()) if round(w, 4)}


def _inner_scored(sentences: Sequence[_Sentence], folds: Sequence[set[str]], *, inner_folds: int, seed: int,
                  strengths: _Strengths) -> tuple[list[tuple[float, int, str | None, dict[str, float]]], int]:
    """The held-out proposals of the whole scorer trained on the other folds, most probable first.

    Each item: (probability of the pair's more probable direction, right pair and direction, gold
    type when right, the type model's probabilities); and the reachable gold relations of the folds.
    """
    scored: list[tuple[float, int, str | None, dict[str, float]]] = []
    reachable = 0
    for held in folds:
        pair, context, types, pair_types = _fit_scorer([s for s in sentences if s.group not in held],
                                                       inner_folds=inner_folds, seed=seed, strengths=strengths)
        inner = RelationScorer(pair, types, 0.0, context=context)
        for s in sentences:
            if s.group not in held:
                continue
            s = _restricted(s, pair_types)
            reachable += s.reachable
            for k, ((l_ab, l_ba), (p_ab, p_ba)) in enumerate(zip(
                    s.labels, _pair_probabilities(pair, context, s.rows), strict=True)):
                label, prob, forward = (l_ab, p_ab, True) if p_ab >= p_ba else (l_ba, p_ba, False)
                scored.append((prob, int(label is not None), label,
                               _type_probabilities(inner, s.type_feats(k, forward))))
    scored.sort(key=lambda x: -x[0])
    return scored, reachable


class _TypeCounts:
    """The right inner proposals' type probabilities, to count what a choice of type thresholds gives.

    ``accepted``: inner held-out proposals (as [`_inner_scored`][pipeline.nlp.relations._inner_scored]
    gives them); only the right ones (pair and direction) count.
    """

    def __init__(self, accepted: Sequence[tuple[float, int, str | None, dict[str, float]]],
                 rules: RelationRules) -> None:
        self.rules = rules
        self.right = [(g, probs) for _p, ok, g, probs in accepted if ok and g is not None]
        self.credited = [frozenset(_ancestors(g, rules)) for g, _probs in self.right]

    def __call__(self, threshold: float, specific: float | None = None,
                 per_type: Mapping[str, float] | None = None) -> tuple[int, int]:
        """Return how many right proposals get the gold type, and how many get hierarchy credit."""
        chosen = [_choose_type(probs, self.rules, threshold, specific, per_type) for _g, probs in self.right]
        return (sum(1 for (g, _p), t in zip(self.right, chosen, strict=True) if t == g),
                sum(1 for ok, t in zip(self.credited, chosen, strict=True) if t in ok))


def _select_type_threshold(accepted: Sequence[tuple[float, int, str | None, dict[str, float]]],
                           rules: RelationRules, budget: float = TYPE_HIERARCHY_COST
                           ) -> tuple[float, float, dict[str, list[int]]]:
    """The two type thresholds serving strict typing within a bounded cost under hierarchy credit.

    ``accepted``: the inner held-out proposals at or above the pair threshold (as
    [`_inner_scored`][pipeline.nlp.relations._inner_scored] gives them).  Among the pairs of
    ``TYPE_THRESHOLD_GRID`` (for the root's children, for the types below them), those whose types
    keep hierarchy credit on at least ``1 - budget`` of the proposals right (pair and direction)
    qualify; the pair with the most strictly right types is chosen (ties: the higher
    thresholds).  None qualifying: the highest.  Two thresholds, since the two levels cost
    differently under hierarchy credit: ``influences`` is credited for any of its five children,
    ``increases`` only for itself.  Returns them and, per candidate ``"a/b"``, [strictly right,
    hierarchy-credited, right].
    """
    type_counts = _TypeCounts(accepted, rules)
    right = len(type_counts.right)
    counts = {candidate: type_counts(*candidate)
              for candidate in itertools.product(TYPE_THRESHOLD_GRID, TYPE_THRESHOLD_GRID)}
    qualifying = [c for c in counts if counts[c][1] >= (1 - budget) * right]
    top = TYPE_THRESHOLD_GRID[-1]
    best = max(qualifying, key=lambda c: (counts[c][0], c)) if qualifying else (top, top)
    return best[0], best[1], {f"{a}/{b}": [*counts[(a, b)], right] for a, b in counts}


def _select_per_type_thresholds(accepted: Sequence[tuple[float, int, str | None, dict[str, float]]],
                                rules: RelationRules, general: float, specific: float,
                                budget: float = TYPE_HIERARCHY_COST) -> tuple[dict[str, float], list[list[Any]]]:
    """A threshold per type, under the same criterion and budget as the two level thresholds.

    The types' probabilities are not calibrated alike: ``treats`` is rarely confused with
    another type, yet at the level threshold it falls back to the root as often as
    ``influences``, which annotators confuse with ``isAssociatedWith`` all the time.  Starting
    from the level thresholds (``general``, ``specific``, as
    [`_select_type_threshold`][pipeline.nlp.relations._select_type_threshold] chose them), each
    type below the root in turn (name order, two rounds) takes the value of
    ``TYPE_THRESHOLD_GRID`` giving the most strictly right types among ``accepted``'s right
    proposals while hierarchy credit still covers at least ``1 - budget`` of them
    (ties: the higher threshold); a type keeps its level's threshold (and no entry) when no
    candidate stays within that budget.  Returns the thresholds and the steps taken, ``[type, threshold, strictly right,
    hierarchy-credited]`` each.
    """
    type_counts = _TypeCounts(accepted, rules)
    floor = (1 - budget) * len(type_counts.right)
    below_root = sorted({t for _g, probs in type_counts.right for t in probs
                         if rules.relation_parent.get(t) is not None})
    # the start: no type of its own, each at its level's threshold (_choose_type falls back to it)
    thresholds: dict[str, float] = {}
    steps: list[list[Any]] = []
    for _round in range(2):
        for t in below_root:
            best: tuple[tuple[int, float], tuple[int, int]] | None = None
            for value in TYPE_THRESHOLD_GRID:
                strict, hier = type_counts(general, specific, {**thresholds, t: value})
                if hier >= floor and (best is None or (strict, value) > best[0]):
                    best = ((strict, value), (strict, hier))
            if best is not None:
                thresholds[t] = best[0][1]
                steps.append([t, best[0][1], *best[1]])
    return thresholds, steps


def train_scorer(examples: Sequence[TrainingSentence], rules: RelationRules, schema: Schema, *,
                 target_precision: float = 0.8, inner_folds: int = 3, seed: int = 13,
                 type_threshold: float | None = None, strengths: tuple[float, float, float] | None = None,
                 hierarchy_budget: float = TYPE_HIERARCHY_COST, decision: str = "thresholds"
                 ) -> tuple[RelationScorer, list[tuple[float, float, float]]]:
    """Train the scorer on ``examples`` and choose its settings on them by inner cross-validation.

    Everything is chosen on ``examples`` alone, over ``inner_folds`` folds by PMID.  First the L2
    strengths of the three models (unless given), among ``PAIR_C_GRID``, ``CONTEXT_C_GRID`` and
    ``TYPE_C_GRID``: the pair and context strengths with the highest inner cross-validated recall
    (pair and direction right) at ``target_precision``, the type strength with the lowest inner
    cross-validated log-loss of the type model on the related pairs (ties: the stronger
    regularisation).  Then, with those strengths, the whole two-stage scorer is trained on the
    inner training folds and applied to the inner held-out fold.  The threshold is the lowest
    probability at which those held-out proposals (best direction per pair) are right (pair and
    direction) at least ``target_precision`` of the time; the two type thresholds (unless
    ``type_threshold`` is given: then it applies to every level) the pair of
    ``TYPE_THRESHOLD_GRID`` giving the most strictly right types among those proposals while
    keeping hierarchy credit on all but ``hierarchy_budget`` of the right ones (the same inner
    predictions), and from there a threshold per type under the same criterion and budget (each
    type in turn, two rounds; ``type_thresholds``).  The type model reads the pair's features and
    type-only ones (words and trigger types around and between the arguments, the words governing
    them).  The chosen values and the criterion per candidate are in the scorer's ``meta``.
    With ``decision="actions"`` no threshold is chosen: the scorer proposes each pair whose
    proposal is expected to save an action (``RelationScorer.decision``); its ``threshold``, the
    least expected net actions saved, is 0.

    Args:
        examples: The training sentences (gold entities, parses, gold relations).
        rules: The rule resources the features use (trigger lexicon, argument order).
        schema: The schema (entity types, relation hierarchy).
        target_precision: Inner cross-validated precision the threshold must reach.
        inner_folds: Folds by PMID of the inner cross-validation (and of the context model's cross-fitting).
        seed: Seed of the fold assignment.
        type_threshold: A fixed type threshold (every level and type) instead of the chosen ones.
        strengths: Fixed ``(pair, context, type)`` L2 strengths (scikit-learn's ``C``) instead of
            the chosen ones.
        hierarchy_budget: The share of the right inner proposals whose hierarchy credit the type
            thresholds may lose (0: a specific type only where hierarchy credit never suffers;
            higher: more strictly right types, more specific types that are wrong).
        decision: One of ``DECISIONS``: ``thresholds`` (the thresholds above) or ``actions``.

    Returns:
        The scorer and the inner threshold curve ``[(threshold, precision, recall)]`` (recall
        over the gold relations other than ``isEquivalentTo``).

    Raises:
        ValueError: If ``hierarchy_budget`` is not in [0, 1), or ``decision`` not one of ``DECISIONS``.
    """
    from pipeline.nlp.folds import kfold_groups

    if not 0.0 <= hierarchy_budget < 1.0:
        raise ValueError(f"the type thresholds' hierarchy budget must be in [0, 1), not {hierarchy_budget}")
    if decision not in DECISIONS:
        raise ValueError(f"the scorer's decision must be one of {', '.join(DECISIONS)}, not {decision!r}")

    sentences = _sentences(examples, rules, schema)
    groups = sorted({s.group for s in sentences})
    k = min(inner_folds, len(groups))
    folds = [set(f) for f in kfold_groups(groups, k=k, seed=seed)] if k >= 2 else []
    first: dict[int, list[tuple[float, float]]] | None = None
    selection: dict[str, Any] = {}
    if strengths is not None:
        chosen = _Strengths(*strengths)
        selection = {"strengths": "given"}
    elif folds:
        chosen, selection, first = _select_strengths(sentences, folds, target_precision)
    else:  # too few PMIDs to cross-validate: the middle of each grid
        chosen = _Strengths(PAIR_C_GRID[1], CONTEXT_C_GRID[1], TYPE_C_GRID[1])
        selection = {"strengths": "grid middle (fewer than 2 PMIDs)"}
    scored, reachable = _inner_scored(sentences, folds, inner_folds=inner_folds, seed=seed, strengths=chosen)
    curve: list[tuple[float, float, float]] = []
    right = 0
    threshold = 0.5
    for n, (prob, ok, _gold_type, _probs) in enumerate(scored, 1):
        right += ok
        curve.append((prob, right / n, right / max(1, reachable)))
    qualifying = [t for t, prec, _ in curve if prec >= target_precision]
    if qualifying:
        threshold = min(qualifying)
    type_report: dict[str, list[int]] = {}
    specific: float | None = None
    per_type: dict[str, float] = {}
    per_type_steps: list[list[Any]] = []
    if decision == "actions":  # no threshold to choose; the type thresholds are not read
        threshold, type_threshold = 0.0, 0.5 if type_threshold is None else type_threshold
    elif type_threshold is None:
        accepted = [x for x in scored if x[0] >= threshold]
        type_threshold, specific, type_report = _select_type_threshold(accepted, rules, hierarchy_budget)
        per_type, per_type_steps = _select_per_type_thresholds(accepted, rules, type_threshold, specific,
                                                               hierarchy_budget)
    pair, context, types, pair_types = _fit_scorer(sentences, inner_folds=inner_folds, seed=seed, strengths=chosen,
                                                   first=first)
    meta = {"examples": len(examples), "groups": len(groups), "target_precision": target_precision,
            "inner_folds": k, "seed": seed, "pair_c": chosen.pair, "context_c": chosen.context,
            "type_c": chosen.type, "pair_c_grid": list(PAIR_C_GRID), "context_c_grid": list(CONTEXT_C_GRID),
            "type_c_grid": list(TYPE_C_GRID), "selection": selection,
            "min_feature_count": MIN_FEATURE_COUNT, "min_type_pair_related": MIN_TYPE_PAIR_RELATED,
            "min_type_pair_rate": MIN_TYPE_PAIR_RATE, "decision": decision}
    if decision == "actions":
        meta["decision_criterion"] = ("each pair in its more probable direction, with its most probable type, "
                                      "when p * (1 + q) - 1 >= 0 (expected net actions saved not negative); "
                                      "no threshold chosen")
    else:
        meta.update({"type_threshold_criterion": "inner-CV strictly right types among the proposals right (pair "
                                                 f"and direction), losing at most {hierarchy_budget} of them under "
                                                 "hierarchy credit; counts per (type_threshold/"
                                                 "specific_type_threshold): strictly right, hierarchy-credited, right",
                     "type_hierarchy_budget": hierarchy_budget, "type_threshold_counts": type_report,
                     "per_type_threshold_steps": per_type_steps})
    return RelationScorer(pair, types, threshold, type_threshold, meta, context, pair_types, TYPE_FEATURES,
                          specific, per_type, decision), curve


def type_decisions(examples: Sequence[TrainingSentence], rules: RelationRules, schema: Schema
                   ) -> list[tuple[str, str | None, str | None]]:
    """The scorer's type model on gold pairs: what it names when the pair and its direction are right.

    Separates the type model from the pair model: every gold relation of ``examples`` (not
    ``isEquivalentTo``, which the abbreviation rule proposes) between entities the scorer decides on
    is typed as if the pair model had proposed it alone in its gold direction, whatever the pair
    model's probability (no averaging with coordinated proposals).  Gold relations of a type pair
    the scorer does not score are left out.

    Args:
        examples: Sentences with gold entities, parses and gold relations.
        rules: Rules carrying the scorer (``rules.scorer``).
        schema: The schema (entity types).

    Returns:
        Per gold relation scored: (gold type, the type the scorer proposes (with its type
        thresholds; decision ``actions``: the most probable one), the type model's most probable
        type); the last two are None when the scorer has no type model.

    Raises:
        ValueError: When ``rules`` has no scorer.
    """
    scorer = rules.scorer
    if scorer is None:
        raise ValueError(f"{rules.path or 'the relation rules'}: no scorer to type the gold pairs with")
    out: list[tuple[str, str | None, str | None]] = []
    for s in _sentences(examples, rules, schema):
        s = _restricted(s, scorer.pair_types) if scorer.pair_types else s
        for k, labels in enumerate(s.labels):
            for forward, gold_type in zip((True, False), labels, strict=True):
                if gold_type is None:
                    continue
                row = s.rows[k]
                feats = s.type_feats(k, forward) if scorer.type_features else (row[2] if forward else row[3])
                probs = _type_probabilities(scorer, feats)
                top = _most_probable(probs)
                chosen = (top if scorer.decision == "actions"
                          else _choose_type(probs, rules, scorer.type_threshold, scorer.specific_type_threshold,
                                            scorer.type_thresholds))
                out.append((gold_type, chosen, top))
    return out


def brat_training(directories: Iterable[str | Path], nlp: Any, schema: Schema, counts: Counter[str]
                  ) -> list[TrainingSentence]:
    """Read training sentences from finished brat collections.

    The annotators' entities (schema types) and relations; each document is parsed once with
    ``nlp``.  Names ``{PMID}_{k}`` group by PMID.

    Args:
        directories: Finished brat collections.
        nlp: The spaCy pipeline that parses (the build's).
        schema: The schema (relation types known).
        counts: Counter of ``training_sentences``, ``training_relations`` and
            ``training_relations_skipped``.

    Returns:
        The training sentences, with their parses.
    """
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
