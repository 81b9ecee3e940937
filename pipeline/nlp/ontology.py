"""The PHARE-like ontology (``config/ontology.yaml``): classes, lexical terms, extension rules.

[`load_ontology`][pipeline.nlp.ontology.load_ontology] reads and validates the file (its format
is documented at the top of ``config/ontology.yaml``) and returns an
[`Ontology`][pipeline.nlp.ontology.Ontology].  Every problem is an
[`OntologyError`][pipeline.nlp.ontology.OntologyError] naming the file and the line, raised
before any work is done:

* YAML syntax errors, unknown keys, values of the wrong shape;
* a class whose ``parent`` is not a class, or a cycle of parents;
* a dependency relation that is not a known dependency label (spaCy's English
  ClearNLP label set plus the Universal Dependencies labels scispaCy and UD
  models use), or a ``prep:`` relation without a preposition;
* a key-entity type that ``entity_types`` does not define;
* the same term in two classes that could both apply (overlapping
  ``modified_by`` types, or both ``standalone``) with equal ``priority`` — the
  tie-break rule is "higher ``priority`` wins"; classes whose key-entity types
  are disjoint may share a term without one (the key decides).

Terms are matched on lemmas: each term is stored as a tuple of normalised
words ([`normalise`][pipeline.nlp.ontology.normalise]), and
[`Ontology.match_terms`][pipeline.nlp.ontology.Ontology.match_terms] finds them in a sequence of
token forms, longest match first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline import resources, yamlfile
from pipeline.errors import InputError

DEFAULT_ONTOLOGY = resources.config_file("ontology.yaml")
"""The project's ontology file, ``config/ontology.yaml``."""
ANTI_CLASS = "GeneTargetedDrug"
"""Class of a drug named by "anti-" and its gene target ("anti-LFA-1"), which the extension makes from the
text, with no term of the class; the parse gate ([`pipeline.nlp.parse_gate`][pipeline.nlp.parse_gate]) reads
it too."""

KNOWN_DEPENDENCIES = frozenset(
    """
    ROOT acl acomp advcl advmod agent amod appos attr aux auxpass case cc ccomp compound conj csubj
    csubjpass dative dep det dobj expl intj mark meta neg nmod npadvmod nsubj nsubjpass nummod oprd
    parataxis pcomp pobj poss preconj predet prep prt punct quantmod relcl xcomp
    nounmod npmod obj iobj obl flat fixed goeswith list orphan reparandum vocative cop clf discourse
    """.split()
)
"""Dependency labels a relation may use.

The ClearNLP labels of spaCy's English models (``en_core_web_*``, scispaCy's
``en_core_sci_*``) and the Universal Dependencies labels of UD-trained models.
"""

_CLASS_KEYS = {
    "parent",
    "description",
    "terms",
    "modified_by",
    "relations",
    "governs",
    "linkers",
    "qualifiers",
    "term_entities",
    "absorbs",
    "standalone",
    "priority",
}
_TOP_KEYS = {"version", "entity_types", "classes", "surface_rules", "suffix_rules"}
_RULE_KEYS = {"name", "types", "pattern", "class", "description", "key_type"}
_SUFFIX_KEYS = {"name", "types", "entity", "pattern", "coordination", "class", "description"}
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class OntologyError(InputError):
    """An invalid ontology file; the message starts with ``file:line``."""


def normalise(word: str) -> str:
    """Normalise a word or lemma for term matching.

    Lower-cased, without the leading hyphens of tokens such as ``-induced``
    (pre-tokenized PubMed text keeps the hyphen on the right-hand word) and
    British ``-is-`` spellings of the ``metaboliser`` family folded to ``-iz-``.

    Args:
        word: A word, token text or lemma.

    Returns:
        The normalised form; a token made of hyphens only is returned
            lower-cased, hyphens kept.
    """
    w = word.lower()
    stripped = w.lstrip("-")
    if not stripped:
        return w  # a hyphen token stays itself
    return stripped.replace("metabolis", "metaboliz")


_INNER_HYPHEN = re.compile(r"(?<=[^\W_])-(?=[^\W_])")


def term_variants(term: str) -> list[tuple[str, ...]]:
    """Return the word tuples a term is matched as.

    spaCy splits "progression-free" into "progression", "-", "free", while
    pre-tokenized text may keep it whole; both spellings match.

    Args:
        term: A term as written in the ontology file (words separated by spaces).

    Returns:
        The term's words, each [`normalise`][pipeline.nlp.ontology.normalise]d, as written and,
            when it has inner hyphens, with each inner hyphen a word of its own;
            empty for a blank term.
    """
    words = tuple(normalise(w) for w in term.split())
    if not words:
        return []
    out = [words]
    split = tuple(normalise(w) for w in _INNER_HYPHEN.sub(" - ", term).split())
    if split != words:
        out.append(split)
    return out


@dataclass(frozen=True)
class OntologyClass:
    """One class of the ontology.

    The rule fields (``modified_by``, ``relations``, ``governs``, ``linkers``,
    ``term_entities``, ``absorbs``, ``qualifiers``) are already resolved
    through inheritance: a class that does not set one takes its nearest
    ancestor's.

    Attributes:
        name: The class name (a key of ``classes`` in the file).
        parent: The parent class's name, ``None`` for a root.
        terms: The class's own terms (not inherited), each a tuple of
            normalised words, every spelling variant included.
        modified_by: Key-entity types (canonical names) that may extend to the term.
        relations: How the key entity's head attaches to the term (the key is
            the dependent): a dependency label (``compound``, ``amod``,
            ``poss``...) or ``prep:<preposition>`` (key is the object of that
            preposition attached to the term).
        governs: Labels by which the term depends on the key (``mutant p53``: ``amod``).
        linkers: Lemmas of participles/adjectives bridging key and term
            (``warfarin-induced bleeding``).
        term_entities: Key-entity types that act as the term (``EGFR-mutated NSCLC``).
        absorbs: Key-entity types dropped when a composite of this class
            contains them (a variant annotated together with its gene).
        standalone: True when the term is also an entity on its own, without a key.
        priority: Tie-break between classes sharing a term: the higher wins.
        line: The class's line in the ontology file (1-based), for messages.
        qualifiers: Lemmas of modifiers on the term's left that belong to the
            composite ("**plasma** warfarin concentration", "**daily** dose").
        description: Free text from the file.
    """

    name: str
    parent: str | None
    terms: tuple[tuple[str, ...], ...]
    modified_by: frozenset[str]
    relations: tuple[str, ...]
    governs: tuple[str, ...]
    linkers: frozenset[str]
    term_entities: frozenset[str]
    absorbs: frozenset[str]
    standalone: bool
    priority: int
    line: int
    qualifiers: frozenset[str] = frozenset()
    description: str = ""


@dataclass(frozen=True)
class SurfaceRule:
    """A regular expression over an entity's text that retypes it (applied at type mapping).

    Attributes:
        name: The rule's unique name (count keys ``surface_<name>``).
        types: The source types the rule applies to: the ``entity_types`` named
            in the file, expanded to all their aliases.
        pattern: Searched (``re.search``) in the entity's text.
        target: The ontology class whose schema type the entity takes.
        line: The rule's line in the ontology file (1-based).
        key_type: During extension, the key-entity type a matching entity acts
            as (see [`Ontology.key_type`][pipeline.nlp.ontology.Ontology.key_type]);
            ``None`` to keep its own.
    """

    name: str
    types: frozenset[str]
    pattern: re.Pattern[str]
    target: str
    line: int
    key_type: str | None = None

    def applies(self, type_: str, text: str) -> bool:
        """Say whether the rule applies to an entity.

        Args:
            type_: The entity's source type.
            text: The entity's text.

        Returns:
            True when ``type_`` is one of the rule's types and ``pattern`` occurs in ``text``.
        """
        return type_ in self.types and self.pattern.search(text) is not None


@dataclass(frozen=True)
class SuffixRule:
    """Text right after a key entity that forms a composite with it ("CYP2D6" + " * 4" = a Haplotype).

    Attributes:
        name: The rule's unique name.
        types: The source types of the key entities it applies to (the
            ``entity_types`` named in the file, expanded to their aliases).
        entity: Optional; must match the key's own text.
        pattern: Matched (``re.match``) at the key entity's end.
        coordination: Optional; separates further suffixes coordinated with the
            first ("CYP2C9*1, *2 and *3"), each forming a discontiguous
            composite with the key.
        target: The ontology class of the composite.
        line: The rule's line in the ontology file (1-based).
    """

    name: str
    types: frozenset[str]
    entity: re.Pattern[str] | None
    pattern: re.Pattern[str]
    coordination: re.Pattern[str] | None
    target: str
    line: int


@dataclass(frozen=True)
class Ontology:
    """The loaded ontology, as returned by [`load_ontology`][pipeline.nlp.ontology.load_ontology].

    Attributes:
        classes: Class name -> class.
        entity_types: Canonical key-entity type (``Chemical``, ``Gene``...) ->
            its source types (aliases, the canonical name included).
        surface_rules: The surface rules, in file order.
        suffix_rules: The suffix rules, in file order.
        path: The file it was loaded from (empty when built in code).
    """

    classes: dict[str, OntologyClass]
    entity_types: dict[str, frozenset[str]]
    surface_rules: tuple[SurfaceRule, ...] = ()
    suffix_rules: tuple[SuffixRule, ...] = ()
    path: str = ""
    _terms: dict[str, list[tuple[tuple[str, ...], str]]] = field(default_factory=dict, repr=False)
    _alias: dict[str, str] = field(default_factory=dict, repr=False)

    def ancestors(self, name: str, include_self: bool = False) -> list[str]:
        """Return the ancestors of a class, nearest first.

        Args:
            name: A class name; a name that is not a class has no ancestors.
            include_self: Put ``name`` itself first.

        Returns:
            The ancestors' names, from the parent up to the root.
        """
        out = [name] if include_self else []
        current = self.classes[name].parent if name in self.classes else None
        while current is not None:
            out.append(current)
            current = self.classes[current].parent
        return out

    def is_a(self, name: str, ancestor: str) -> bool:
        """Say whether a class is another or descends from it.

        Args:
            name: A class name.
            ancestor: A class name.

        Returns:
            True when ``name == ancestor`` or ``ancestor`` is among its ancestors.
        """
        return name == ancestor or ancestor in self.ancestors(name)

    def canonical_type(self, source_type: str) -> str | None:
        """Return the canonical key-entity type of a source type.

        Args:
            source_type: An annotation's source type (``ChemicalEntity``,
                ``GeneOrGeneProduct``...) or a canonical name.

        Returns:
            The canonical key-entity type (``Chemical``, ``Gene``...), or
                ``None`` when ``source_type`` is no alias of one.
        """
        return self._alias.get(source_type)

    def key_type(self, source_type: str, text: str) -> str | None:
        """Return the key-entity type an annotation acts as during extension.

        Args:
            source_type: The annotation's source type.
            text: The annotation's text (what surface rules match).

        Returns:
            The ``key_type`` of the first surface rule that applies and has
                one; otherwise [`canonical_type`][pipeline.nlp.ontology.Ontology.canonical_type]'s
                answer (``None`` when the type is no key-entity type).
        """
        for rule in self.surface_rules:
            if rule.key_type is not None and rule.applies(source_type, text):
                return rule.key_type
        return self._alias.get(source_type)

    def classes_for_term(self, words: tuple[str, ...]) -> list[OntologyClass]:
        """Return the classes that have a term.

        Args:
            words: The term as a tuple of normalised words.

        Returns:
            The classes having the term, highest ``priority`` first (then by name).
        """
        first = self._terms.get(words[0], []) if words else []
        found = [self.classes[c] for w, c in first if w == words]
        return sorted(found, key=lambda c: (-c.priority, c.name))

    def match_terms(self, forms: Sequence[Sequence[str]]) -> list[tuple[int, int, tuple[str, ...]]]:
        """Find term occurrences in a token sequence.

        Args:
            forms: Per token, its normalised forms (lemma, lower-cased
                text...); a term word matches a token when it equals one of them.

        Returns:
            ``(start, end, term)`` triples: half-open ranges of token indices
                into ``forms`` (not character offsets), longest match first at each
                position, non-overlapping, left to right.
        """
        out: list[tuple[int, int, tuple[str, ...]]] = []
        i = 0
        n = len(forms)
        while i < n:
            best: tuple[str, ...] | None = None
            for form in forms[i]:
                for words, _ in self._terms.get(form, ()):
                    if i + len(words) > n or (best is not None and len(words) <= len(best)):
                        continue
                    if all(words[k] in forms[i + k] for k in range(1, len(words))):
                        best = words
            if best is None:
                i += 1
                continue
            out.append((i, i + len(best), best))
            i += len(best)
        return out


# --- YAML with line numbers -----------------------------------------------

class _Lines(dict[Any, Any]):
    """A mapping that remembers its own line and each key's line (1-based)."""

    line: int = 0
    key_lines: dict[Any, int]


class _LineList(list[Any]):
    line: int = 0
    item_lines: list[int]


class _LineLoader(yamlfile.SafeLoader):  # type: ignore[misc]
    """SafeLoader (libyaml's when available) recording node start lines on mappings and sequences."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Lines:
    loader.flatten_mapping(node)
    out = _Lines()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> _LineList:
    out = _LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def _line(obj: Any, key: Any = None, default: int = 0) -> int:
    if isinstance(obj, _Lines):
        return obj.key_lines.get(key, obj.line) if key is not None else obj.line
    if isinstance(obj, _LineList):
        return obj.line
    return default


# --- loading -----------------------------------------------------------------

def _str_list(value: Any, where: str, what: str) -> list[tuple[str, int]]:
    """A string or a list of strings, each with its line."""
    if value is None:
        return []
    if isinstance(value, str):
        return [(value, 0)]
    if not isinstance(value, list):
        raise OntologyError(f"{where}: {what} must be a string or a list of strings, got {value!r}")
    lines = value.item_lines if isinstance(value, _LineList) else [0] * len(value)
    out = []
    for item, line in zip(value, lines, strict=True):
        if not isinstance(item, str) or not item.strip():
            raise OntologyError(f"{where}: {what} entries must be non-empty strings, got {item!r}")
        out.append((item.strip(), line))
    return out


def _check_relation(rel: str, where: str) -> str:
    label, sep, word = rel.partition(":")
    if sep:
        if label != "prep" or not word.strip() or " " in word.strip():
            raise OntologyError(f"{where}: bad relation {rel!r} (expected a dependency label or prep:<word>)")
        return f"prep:{word.strip().lower()}"
    if label not in KNOWN_DEPENDENCIES:
        raise OntologyError(
            f"{where}: unknown dependency label {rel!r} (known: {' '.join(sorted(KNOWN_DEPENDENCIES))})"
        )
    return label


@yamlfile.checked_types(OntologyError)
def load_ontology(path: str | Path = DEFAULT_ONTOLOGY) -> Ontology:
    """Load and validate an ontology file.

    Args:
        path: The ontology file (YAML; the format is documented at the top of
            ``config/ontology.yaml``).

    Returns:
        The ontology.

    Raises:
        OntologyError: If the file cannot be read, is not valid YAML, or fails
            a check listed in the module docstring; the message starts with
            ``file:line``.
    """
    p = Path(path)
    data = _read_ontology_yaml(p)
    entity_types, alias = _load_entity_types(data, p)
    raw = _raw_classes(data, p)
    classes: dict[str, OntologyClass] = {}
    term_lines: dict[tuple[str, tuple[str, ...]], int] = {}
    for name, (spec, line) in raw.items():
        classes[name] = _build_class(name, spec, line, raw, entity_types, p, term_lines)
    index = _check_duplicate_terms(classes, term_lines, p)
    rules = _load_rules(data.get("surface_rules"), classes, entity_types, p, _line(data, "surface_rules"))
    suffixes = _load_suffix_rules(data.get("suffix_rules"), classes, entity_types, p, _line(data, "suffix_rules"))
    return Ontology(classes, entity_types, rules, suffixes, str(p), index, alias)


def _read_ontology_yaml(p: Path) -> Mapping[str, Any]:
    """Parse the ontology file and check its top-level sections and version."""
    try:
        data = yamlfile.safe_load(p.read_text(encoding="utf-8"), _LineLoader)  # limits checked first
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise OntologyError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    except OSError as exc:
        raise OntologyError(f"{p}: cannot read ontology: {exc}") from exc
    if not isinstance(data, Mapping):
        raise OntologyError(f"{p}:1: top level must be a mapping")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        key = sorted(unknown, key=str)[0]
        raise OntologyError(f"{p}:{_line(data, key)}: unknown section {key!r} (allowed: {sorted(_TOP_KEYS)})")

    version = data.get("version", 1)
    if version != 1:
        raise OntologyError(f"{p}:{_line(data, 'version')}: unsupported ontology version {version!r} (expected 1)")
    return data


def _load_entity_types(data: Mapping[str, Any], p: Path) -> tuple[dict[str, frozenset[str]], dict[str, str]]:
    """Read the key-entity types and map each source alias to its type."""
    entity_types: dict[str, frozenset[str]] = {}
    alias: dict[str, str] = {}
    raw_types = data.get("entity_types") or {}
    if not isinstance(raw_types, Mapping):
        raise OntologyError(f"{p}:{_line(data, 'entity_types')}: entity_types must map a type to its aliases")
    for name, aliases in raw_types.items():
        where = f"{p}:{_line(raw_types, name)}"
        names = {str(name)} | {a for a, _ in _str_list(aliases, where, f"entity_types.{name}")}
        for a in names:
            if a in alias and alias[a] != name:
                raise OntologyError(f"{where}: source type {a!r} is an alias of both {alias[a]!r} and {name!r}")
            alias[a] = str(name)
        entity_types[str(name)] = frozenset(names)
    return entity_types, alias


def _raw_classes(data: Mapping[str, Any], p: Path) -> dict[str, tuple[Mapping[str, Any], int]]:
    """Check the classes' names, keys and parents (no unknown parent, no cycle); map each to (spec, line)."""
    raw_classes = data.get("classes")
    if not isinstance(raw_classes, Mapping) or not raw_classes:
        raise OntologyError(f"{p}:{_line(data, 'classes', 1)}: 'classes' must be a non-empty mapping")

    raw: dict[str, tuple[Mapping[str, Any], int]] = {}
    for name, spec in raw_classes.items():
        line = _line(raw_classes, name)
        where = f"{p}:{line}"
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise OntologyError(f"{where}: bad class name {name!r}")
        spec = spec if spec is not None else {}
        if not isinstance(spec, Mapping):
            raise OntologyError(f"{where}: class {name!r} must be a mapping")
        bad = set(spec) - _CLASS_KEYS
        if bad:
            key = sorted(bad, key=str)[0]
            raise OntologyError(
                f"{p}:{_line(spec, key, line)}: class {name!r}: unknown key {key!r} (allowed: {sorted(_CLASS_KEYS)})"
            )
        raw[name] = (spec, line)
    for name, (spec, line) in raw.items():
        parent = spec.get("parent")
        if parent is not None and parent not in raw:
            raise OntologyError(f"{p}:{_line(spec, 'parent', line)}: class {name!r}: unknown parent {parent!r}")
    for name in raw:
        seen = [name]
        current = raw[name][0].get("parent")
        while current is not None:
            if current in seen:
                raise OntologyError(f"{p}:{raw[name][1]}: cycle of parents: {' -> '.join([*seen, current])}")
            seen.append(current)
            current = raw[current][0].get("parent")
    return raw


def _inherited_value(raw: Mapping[str, tuple[Mapping[str, Any], int]], name: str, key: str) -> tuple[Any, str]:
    """Return a class's value for key, or its nearest ancestor's, with the class that sets it."""
    current: str | None = name
    while current is not None:
        spec = raw[current][0]
        if key in spec:
            return spec[key], current
        current = spec.get("parent")
    return None, name


def _build_class(
    name: str,
    spec: Mapping[str, Any],
    line: int,
    raw: Mapping[str, tuple[Mapping[str, Any], int]],
    entity_types: Mapping[str, frozenset[str]],
    p: Path,
    term_lines: dict[tuple[str, tuple[str, ...]], int],
) -> OntologyClass:
    """Build one class, resolving inherited keys; records each term's line in term_lines."""

    def types_of(key: str) -> frozenset[str]:
        value, owner = _inherited_value(raw, name, key)
        owner_spec, owner_line = raw[owner]
        w = f"{p}:{_line(owner_spec, key, owner_line)}"
        out = set()
        for t, tline in _str_list(value, w, f"class {owner!r}: {key}"):
            if t not in entity_types:
                raise OntologyError(
                    f"{p}:{tline or _line(owner_spec, key, owner_line)}: class {owner!r}: {key} names unknown "
                    f"entity type {t!r} (entity_types: {sorted(entity_types)})"
                )
            out.add(t)
        return frozenset(out)

    def words_of(key: str) -> frozenset[str]:
        value, owner = _inherited_value(raw, name, key)
        where = f"{p}:{_line(raw[owner][0], key, raw[owner][1])}"
        return frozenset(normalise(w) for w, _ in _str_list(value, where, f"class {owner!r}: {key}"))

    def relations_of(key: str) -> tuple[str, ...]:
        value, owner = _inherited_value(raw, name, key)
        owner_spec, owner_line = raw[owner]
        w = f"{p}:{_line(owner_spec, key, owner_line)}"
        out = []
        for rel, rline in _str_list(value, w, f"class {owner!r}: {key}"):
            out.append(_check_relation(rel, f"{p}:{rline or _line(owner_spec, key, owner_line)}: class {owner!r}"))
        if key == "governs":
            for rel in out:
                if rel.startswith("prep:"):
                    raise OntologyError(f"{w}: class {owner!r}: governs takes dependency labels, not {rel!r}")
        return tuple(dict.fromkeys(out))

    terms = []
    for term, tline in _str_list(spec.get("terms"), f"{p}:{_line(spec, 'terms', line)}", f"class {name!r}: terms"):
        for words in term_variants(term):
            terms.append(words)
            term_lines.setdefault((name, words), tline or _line(spec, "terms", line))
    priority = spec.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise OntologyError(f"{p}:{_line(spec, 'priority', line)}: class {name!r}: priority must be an integer")
    standalone = spec.get("standalone", False)
    if not isinstance(standalone, bool):
        raise OntologyError(f"{p}:{_line(spec, 'standalone', line)}: class {name!r}: standalone must be a boolean")
    desc = spec.get("description", "")
    return OntologyClass(
        name=name,
        parent=spec.get("parent"),
        terms=tuple(dict.fromkeys(terms)),
        modified_by=types_of("modified_by"),
        relations=relations_of("relations"),
        governs=relations_of("governs"),
        linkers=words_of("linkers"),
        term_entities=types_of("term_entities"),
        absorbs=types_of("absorbs"),
        standalone=standalone,
        qualifiers=words_of("qualifiers"),
        priority=priority,
        line=line,
        description=str(desc or ""),
    )


def _check_duplicate_terms(
    classes: Mapping[str, OntologyClass], term_lines: Mapping[tuple[str, tuple[str, ...]], int], p: Path
) -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """Refuse a term shared by classes without a tie-break; return the first-word term index."""
    index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    owners: dict[tuple[str, ...], list[str]] = {}
    for cls in classes.values():
        for words in cls.terms:
            owners.setdefault(words, []).append(cls.name)
            index.setdefault(words[0], []).append((words, cls.name))
    for words, owner_names in owners.items():
        for i, a in enumerate(owner_names):
            for b in owner_names[i + 1 :]:
                ca, cb = classes[a], classes[b]
                clash = bool(ca.modified_by & cb.modified_by) or (ca.standalone and cb.standalone)
                if clash and ca.priority == cb.priority:
                    raise OntologyError(
                        f"{p}:{term_lines.get((b, words), cb.line)}: term {' '.join(words)!r} is in classes {a!r} "
                        f"(line {term_lines.get((a, words), ca.line)}) and {b!r} "
                        f"with overlapping key-entity types and equal priority {ca.priority}: give one a higher "
                        "'priority' or make their modified_by types disjoint"
                    )
    return index


def _compile(item: Mapping[str, Any], key: str, where: str, required: bool) -> re.Pattern[str] | None:
    value = item.get(key)
    if value is None or value == "":
        if required:
            raise OntologyError(f"{where}: missing '{key}'")
        return None
    try:
        return re.compile(str(value))
    except re.error as exc:
        raise OntologyError(f"{where}: bad '{key}' pattern: {exc}") from exc


def _rule_header(
    item: Any, allowed: set[str], names: set[str], classes: Mapping[str, OntologyClass],
    entity_types: Mapping[str, frozenset[str]], p: Path, line: int, what: str,
) -> tuple[str, str, frozenset[str], int]:
    iline = _line(item, default=line)
    if not isinstance(item, Mapping):
        raise OntologyError(f"{p}:{iline}: a {what} must be a mapping")
    bad = set(item) - allowed
    if bad:
        raise OntologyError(f"{p}:{iline}: {what}: unknown key(s) {sorted(bad)} (allowed: {sorted(allowed)})")
    name = item.get("name")
    if not isinstance(name, str) or not name or name in names:
        raise OntologyError(f"{p}:{iline}: {what} needs a unique 'name', got {name!r}")
    names.add(name)
    target = item.get("class")
    if target not in classes:
        raise OntologyError(f"{p}:{_line(item, 'class', iline)}: {what} {name!r}: unknown class {target!r}")
    types: set[str] = set()
    for t, tline in _str_list(item.get("types"), f"{p}:{iline}", f"{what} {name!r}: types"):
        if t not in entity_types:
            raise OntologyError(f"{p}:{tline or iline}: {what} {name!r}: unknown entity type {t!r}")
        types |= entity_types[t]
    if not types:
        raise OntologyError(f"{p}:{iline}: {what} {name!r}: 'types' is empty")
    return name, str(target), frozenset(types), iline


def _load_suffix_rules(
    value: Any,
    classes: Mapping[str, OntologyClass],
    entity_types: Mapping[str, frozenset[str]],
    p: Path,
    line: int,
) -> tuple[SuffixRule, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise OntologyError(f"{p}:{line}: suffix_rules must be a list")
    out = []
    names: set[str] = set()
    for item in value:
        name, target, types, iline = _rule_header(
            item, _SUFFIX_KEYS, names, classes, entity_types, p, line, "suffix rule"
        )
        where = f"{p}:{iline}: suffix rule {name!r}"
        pattern = _compile(item, "pattern", where, required=True)
        assert pattern is not None
        out.append(
            SuffixRule(
                name, types, _compile(item, "entity", where, False), pattern,
                _compile(item, "coordination", where, False), target, iline,
            )
        )
    return tuple(out)


def _load_rules(
    value: Any,
    classes: Mapping[str, OntologyClass],
    entity_types: Mapping[str, frozenset[str]],
    p: Path,
    line: int,
) -> tuple[SurfaceRule, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise OntologyError(f"{p}:{line}: surface_rules must be a list")
    out = []
    names: set[str] = set()
    for item in value:
        name, target, types, iline = _rule_header(
            item, _RULE_KEYS, names, classes, entity_types, p, line, "surface rule"
        )
        where = f"{p}:{iline}: surface rule {name!r}"
        pattern = _compile(item, "pattern", where, required=True)
        assert pattern is not None
        key_type = item.get("key_type")
        if key_type is not None and key_type not in entity_types:
            raise OntologyError(f"{p}:{_line(item, 'key_type', iline)}: surface rule {name!r}: unknown key_type "
                                f"{key_type!r}")
        out.append(SurfaceRule(name, types, pattern, target, iline, key_type))
    return tuple(out)


__all__ = [
    "ANTI_CLASS",
    "DEFAULT_ONTOLOGY",
    "KNOWN_DEPENDENCIES",
    "Ontology",
    "OntologyClass",
    "OntologyError",
    "SuffixRule",
    "SurfaceRule",
    "load_ontology",
    "normalise",
    "term_variants",
]
