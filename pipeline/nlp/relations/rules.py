"""The relation rule file (``config/relations.yaml``) and the learned scorer's file it names."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline import resources, yamlfile
from pipeline.errors import InputError
from pipeline.schema import ANY_ENTITY, Schema

DEFAULT_RULES = resources.config_file("relations.yaml")


EQUIVALENT = "isEquivalentTo"


RULE_FAMILIES = ("abbreviation", "path", "modifier", "pubtator")


class RelationRulesError(InputError):
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
    [`train_scorer`][pipeline.nlp.relations.training.train_scorer]).

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
    sections = _rule_sections(p)
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

    rank = _argument_rank(sections, schema, where)
    allowed = _argument_types(sections, schema, where)

    triggers: dict[str, str] = {}
    for rel, node, line in _mapping(sections.get("triggers", (None, 0))[0], where, "triggers"):
        _relation_type(schema, where, rel, line)
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
            source_types[name] = _relation_type(schema, where, str(value), _node_line(node))
    enabled, retype = _selection(sections, schema, where)
    scorer = _load_scorer(sections, p, schema) if with_scorer else None
    return RelationRules(
        triggers=triggers, allowed=allowed, rank=rank, negation=cues["negation"], hedges=cues["hedge"],
        max_path=max_path, source_types=source_types, relation_parent=dict(schema.relation_parent), path=where,
        enabled=enabled, retype=retype, scorer=scorer,
    )


def _rule_sections(p: Path) -> dict[str, tuple[Any, int]]:
    """Compose the rule file's YAML and map each known top-level section to (node, line)."""
    where = str(p)
    try:
        root = yamlfile.compose(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RelationRulesError(f"{where}: cannot read relation rules: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise RelationRulesError(f"{where}: cannot read relation rules: not UTF-8 ({exc.reason} at byte "
                                 f"{exc.start})") from exc
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
    return sections


def _relation_type(schema: Schema, where: str, name: str, line: int) -> str:
    """Return name if the schema has that relation type, else raise naming the file and line."""
    if name not in schema.relation_parent:
        raise RelationRulesError(f"{where}:{line}: unknown relation type {name!r} (schema {schema.path}: "
                                 f"{', '.join(schema.relation_types())})")
    return name


def _entity_type(schema: Schema, where: str, name: str, line: int) -> str:
    """Return name if it is ANY_ENTITY or a schema entity type (``=`` prefix allowed), else raise."""
    if name != ANY_ENTITY and name.lstrip("=") not in schema.entity_parent:
        raise RelationRulesError(f"{where}:{line}: unknown entity type {name!r} (schema {schema.path})")
    return name


def _argument_rank(sections: Mapping[str, tuple[Any, int]], schema: Schema, where: str) -> dict[str, int]:
    """Rank each entity type by its nearest ancestor in ``argument_order`` (empty without that section)."""
    rank: dict[str, int] = {}
    order_node = sections.get("argument_order", (None, 0))[0]
    if order_node is not None:
        order = [_entity_type(schema, where, name, line) for name, line in _words(order_node, where, "argument_order")]
        # the most specific entry wins: a type takes the rank of its nearest listed ancestor
        for t in schema.entity_parent:
            for ancestor in schema.ancestors(t, include_self=True):
                if ancestor in order:
                    rank[t] = order.index(ancestor)
                    break
    return rank


def _argument_types(
    sections: Mapping[str, tuple[Any, int]], schema: Schema, where: str
) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Map each relation type to its (Arg1, Arg2) entity types: the schema's, narrowed by ``argument_types``."""
    line: int
    node: Any
    value: Any
    allowed: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for rel in schema.relation_parent:
        allowed[rel] = (frozenset(schema.allowed_arguments(rel, "Arg1")),
                        frozenset(schema.allowed_arguments(rel, "Arg2")))
    for rel, node, line in _mapping(sections.get("argument_types", (None, 0))[0], where, "argument_types"):
        _relation_type(schema, where, rel, line)
        roles = {role: (value, role_line) for role, value, role_line in _mapping(node, where, f"argument_types.{rel}")}
        narrowed = []
        for role in ("Arg1", "Arg2"):
            if role not in roles:
                narrowed.append(allowed[rel][0 if role == "Arg1" else 1])
                continue
            value, role_line = roles.pop(role)
            names = [_entity_type(schema, where, n, ln)
                     for n, ln in _words(value, where, f"argument_types.{rel}.{role}")]
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
    return allowed


def _selection(
    sections: Mapping[str, tuple[Any, int]], schema: Schema, where: str
) -> tuple[frozenset[str] | None, dict[str, str]]:
    """Read the ``selection`` section: the enabled keys (None: all) and the retype map."""
    enabled: frozenset[str] | None = None
    retype: dict[str, str] = {}
    for name, node, line in _mapping(sections.get("selection", (None, 0))[0], where, "selection"):
        if name == "enabled":
            keys = _words(node, where, "selection.enabled")
            for key, key_line in keys:
                _relation_type(schema, where, key.rsplit(":", 1)[-1], key_line)
            enabled = frozenset(k for k, _line in keys)
        elif name == "retype":
            for key, value, key_line in _mapping(node, where, "selection.retype"):
                _relation_type(schema, where, key.rsplit(":", 1)[-1], key_line)
                target = _relation_type(schema, where, str(getattr(value, "value", "")), _node_line(value))
                if target not in schema.ancestors(key.rsplit(":", 1)[-1], include_self=True):
                    raise RelationRulesError(f"{where}:{_node_line(value)}: {key} can only become an ancestor of "
                                             f"its type, not {target!r}")
                retype[key] = target
        else:
            raise RelationRulesError(f"{where}:{line}: selection: unknown entry {name!r} (enabled, retype)")
    return enabled, retype


def _load_scorer(sections: Mapping[str, tuple[Any, int]], p: Path, schema: Schema) -> RelationScorer | None:
    """Load the scorer the ``scorer`` section names (relative to the rule file p); None without that section."""
    if "scorer" not in sections:
        return None
    scorer_node, scorer_line = sections["scorer"]
    return load_scorer_file(p.parent / str(getattr(scorer_node, "value", "")), schema,
                            named_at=f"{p}:{scorer_line}")


def load_scorer_file(path: Path, schema: Schema, *, named_at: str = "") -> RelationScorer:
    """Read a relation scorer file and check its types against the schema.

    Args:
        path: The scorer file.
        schema: The corpus schema.
        named_at: ``FILE:LINE`` of the rule file's ``scorer`` entry that names it, when it was named there
            (an unreadable file is then reported at that line).

    Returns:
        The scorer.

    Raises:
        RelationRulesError: If the file cannot be read, is not a scorer of the current format, or names a
            relation type the schema lacks (the message names the file).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        where = f"{named_at}: cannot read the scorer {path}" if named_at else f"{path}: cannot read the relation scorer"
        raise RelationRulesError(f"{where}: {exc}") from exc
    scorer = RelationScorer.from_json(data, str(path))
    unknown = sorted(set(scorer.types) - set(schema.relation_parent))
    if unknown:
        raise RelationRulesError(f"{path}: unknown relation type(s) {', '.join(unknown)}")
    return scorer


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
        root = yamlfile.compose(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
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
        The rules, as [`load_rules`][pipeline.nlp.relations.rules.load_rules] gives them.

    Raises:
        RelationRulesError: As [`load_rules`][pipeline.nlp.relations.rules.load_rules].
    """
    from pipeline.schema import load_schema

    return load_rules(path, load_schema(schema_path))


#
#: the version of the scorer file's layout (``RelationScorer.to_json``)
SCORER_FORMAT = 2


#: how a scorer decides which pairs to propose, with which type (``train-relations --decision``):
#: ``thresholds``, the pair threshold and the type thresholds chosen by inner cross-validation;
#: ``actions``, every pair whose proposal is expected to save the annotator an action, typed with
#: its most probable type (see [`RelationScorer`][pipeline.nlp.relations.rules.RelationScorer])
DECISIONS = ("thresholds", "actions")


#: ``train-relations``' decision (the library's ``train_scorer`` keeps ``thresholds`` unless told):
#: annotators review every proposal, so what a proposal saves them is what counts
DEFAULT_DECISION = "actions"


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
        """Read a scorer written by [`to_json`][pipeline.nlp.relations.rules.RelationScorer.to_json].

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


#: version of the type-only features (``RelationScorer.type_features``); 0: the type model reads the pair's
#: features only
TYPE_FEATURES = 1
