"""Validate a brat collection the way brat does when it loads (and verifies) a document.

[`validate_collection`][pipeline.brat.validate.validate_collection] reads every ``NAME.txt``/``NAME.ann`` under a
directory and the ``annotation.conf`` that applies to each document (the
``conf`` argument, else the nearest ``annotation.conf`` walking up from the
document's directory, as brat does), and returns one [`Problem`][pipeline.brat.validate.Problem]
(``file:line: message``) per finding.  What is checked, after brat's
``annotation.py`` (parsing) and ``verify_annotations.py`` (verification):

* every line parses (``T``/``R``/``E``/``A``/``M``/``N``/``#``/``*`` syntax);
  ids are well formed (letters or ``#`` + digits) and unique in the document;
* text-bound offsets lie within the text, a fragment does not end before it
  starts, the fragments of one annotation do not overlap (brat's test, kept
  as is: a fragment is rejected when ``end >= start`` and ``start < end`` of
  a fragment listed before it, so it also rejects touching the start of an
  earlier fragment; the export merges touching fragments), and the text column starts with the
  fragment texts joined by single spaces, followed by nothing or by
  whitespace (so trailing whitespace at the end of the line is tolerated, as
  in the PGxCorpus release);
* types are known: text-bound types are entity (or event) types of the
  configuration, relation and event types likewise, attribute types are
  declared in ``[attributes]``;
* references exist: relation and event arguments, attribute, note and
  normalization targets, equivalence members; relation arguments are
  entities or events, normalization targets are entities or events;
* relation argument types are allowed: the relation is configured with the
  same argument labels (``Arg1``/``Arg2``) and each argument's type appears
  in the configured list, literally or through ``<ENTITY>``/``<EVENT>``/
  ``<ANY>`` (brat does not expand the type hierarchy here, which is why the
  generated ``annotation.conf`` lists every subtype explicitly);
* overlap: two entities whose extents overlap are allowed only as the
  ``<OVERLAP>`` (or old ``ENTITY-NESTING``) rules say: identical fragment
  sets need ``equal``, fragment-wise containment ``contain`` (Arg1 = inner,
  Arg2 = outer), anything else ``cross``; ``<ANY>`` allows all, and without
  rules nothing may overlap (brat's default);
* attributes: the attribute may be attached to the target's kind and type
  (``Arg:``), a binary attribute has no value and a multi-valued one has one
  of its configured ``Value:`` values;
* equivalences (``*``) join entities of types some symmetric-transitive
  relation allows.

Problems are sorted by file, line and message; line 0 means the file as a
whole.  Normalization databases are not looked up (brat does not at load).

[`strict_relation_warnings`][pipeline.brat.validate.strict_relation_warnings] is not a brat check: it reports relations
whose argument types the schema's ``strict_relation_arguments`` (the paper's
stricter constraints) reject although ``annotation.conf`` admits them
(``pgx-corpus validate --strict``); they are warnings, never errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.brat.standoff import BratDocument, TextBound, parse_ann, read_directory, read_text
from pipeline.paths import list_files
from pipeline.schema import Schema

RESERVED_TYPES = ("<ANY>", "<ENTITY>", "<EVENT>", "<RELATION>")
OVERLAP_TYPES = ("<OVERLAP>", "ENTITY-NESTING")
SECTIONS = ("entities", "relations", "events", "attributes")
_ID_RE = re.compile(r"^([A-Za-z]+|#[A-Za-z]*)([0-9]+)(.*?)$")


@dataclass(frozen=True, order=True)
class Problem:
    """One finding, printed as ``file:line: message``.

    Problems sort by file, line and message.

    Attributes:
        file: The path of the file concerned (the ``.ann``, the ``.txt``, the ``annotation.conf`` or a
            directory).
        line: The 1-based line; 0 for the file as a whole.
        message: What is wrong (a warning starts with ``warning:``).
    """

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


# --- annotation.conf -------------------------------------------------------------------------

@dataclass(frozen=True)
class RelationDef:
    """One relation line of ``[relations]``: type, argument labels and their allowed types.

    Attributes:
        type: The relation type (or ``<OVERLAP>``/``ENTITY-NESTING`` for an overlap rule).
        roles: The argument labels, in order (``("Arg1", "Arg2")``).
        types: For each role, the types allowed (names, or ``<ENTITY>``/``<EVENT>``/``<ANY>``).
        special: The ``<KEY>:value`` arguments: ``<REL-TYPE>`` split at ``-`` (``symmetric``,
            ``transitive``), ``<OVL-TYPE>`` as written (``contain|equal``).
        unused: True when the type is marked ``!`` (a grouping, not to be annotated): no relation
            of it is allowed.
    """

    type: str
    roles: tuple[str, ...]
    types: tuple[tuple[str, ...], ...]
    special: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)
    unused: bool = False


@dataclass(frozen=True)
class AttributeDef:
    """One line of ``[attributes]``.

    Attributes:
        name: The attribute name.
        targets: The types (or ``<ENTITY>``/``<RELATION>``/``<EVENT>``/``<ANY>``) it may be attached to
            (its ``Arg:``).
        values: Its ``Value:`` values; None for a binary attribute.
    """

    name: str
    targets: tuple[str, ...]
    values: tuple[str, ...] | None = None  # None: binary attribute


@dataclass
class AnnotationConf:
    """What validation needs from an ``annotation.conf``.

    Attributes:
        entity_types: The entity types, in file order.
        entity_parent: Entity type -> the type it is indented under (None at the top).
        event_types: The event types, in file order.
        relations: The ``[relations]`` lines, overlap rules included.
        attributes: Attribute name -> its definition.
        path: The file it was parsed from (named by problems).
    """

    entity_types: list[str] = field(default_factory=list)
    entity_parent: dict[str, str | None] = field(default_factory=dict)
    event_types: list[str] = field(default_factory=list)
    relations: list[RelationDef] = field(default_factory=list)
    attributes: dict[str, AttributeDef] = field(default_factory=dict)
    path: str = ""

    @property
    def relation_types(self) -> set[str]:
        """The relation types configured (overlap rules excluded)."""
        return {r.type for r in self.relations if r.type not in OVERLAP_TYPES}

    def _matches(self, allowed: Iterable[str], type_: str) -> bool:
        for a in allowed:
            if a == type_ or a == "<ANY>":
                return True
            if a == "<ENTITY>" and type_ in self.entity_types:
                return True
            if a == "<EVENT>" and type_ in self.event_types:
                return True
        return False

    def relation_allowed(self, rel_type: str, roles: tuple[str, str], types: tuple[str, str]) -> bool:
        """Tell whether a relation line of the configuration admits a relation, as brat checks it.

        Types are matched literally or through ``<ENTITY>``/``<EVENT>``/``<ANY>``; the type hierarchy
        is not expanded (as in brat).

        Args:
            rel_type: The relation type.
            roles: The argument labels, in order (``("Arg1", "Arg2")``).
            types: The types of the two arguments, in the same order.

        Returns:
            True when a used (not ``!``) line of that type, with the same labels, admits both types.
        """
        for r in self.relations:
            if r.type != rel_type or r.unused or len(r.roles) != 2 or r.roles != roles:
                continue
            if self._matches(r.types[0], types[0]) and self._matches(r.types[1], types[1]):
                return True
        return False

    def overlap_types(self, inner: str, outer: str) -> set[str]:
        """List the overlap kinds configured for a pair of types, as brat's ``ProjectConfiguration.overlap_types``.

        Args:
            inner: The type of the inner (or first) entity.
            outer: The type of the outer (or second) entity.

        Returns:
            The kinds among ``contain``, ``equal``, ``cross`` and ``<ANY>`` from the ``<OVERLAP>``
                rules; ``{"contain"}`` when only old ``ENTITY-NESTING`` rules apply; empty when none.
        """
        rules = [
            r for r in self.relations
            if r.type in OVERLAP_TYPES and len(r.types) == 2
            and self._matches(r.types[0], inner) and self._matches(r.types[1], outer)
        ]
        new_style = [r for r in rules if r.type == "<OVERLAP>"]
        if new_style:
            kinds: set[str] = set()
            for r in new_style:
                for value in r.special.get("<OVL-TYPE>", ()):
                    kinds |= set(value.split("|"))
            return kinds
        return {"contain"} if rules else set()

    def can_be_equal(self, t1: str, t2: str) -> bool:
        """Tell whether entities of two types may have the same fragments.

        Args:
            t1: One type.
            t2: The other type (the test is symmetric).

        Returns:
            True when an overlap rule allows ``equal`` (or ``<ANY>``) either way.
        """
        return bool({"equal", "<ANY>"} & (self.overlap_types(t1, t2) | self.overlap_types(t2, t1)))

    def can_contain(self, inner: str, outer: str) -> bool:
        """Tell whether an entity of one type may lie inside an entity of another.

        Args:
            inner: The type of the contained entity (``Arg1`` of the rule).
            outer: The type of the containing entity (``Arg2`` of the rule).

        Returns:
            True when a rule allows ``contain`` for (inner, outer), or ``<ANY>`` either way.
        """
        return bool({"contain", "<ANY>"} & self.overlap_types(inner, outer)) or "<ANY>" in self.overlap_types(
            outer, inner
        )

    def can_cross(self, t1: str, t2: str) -> bool:
        """Tell whether entities of two types may overlap without one containing the other.

        Args:
            t1: One type.
            t2: The other type (the test is symmetric).

        Returns:
            True when an overlap rule allows ``cross`` (or ``<ANY>``) either way.
        """
        return bool({"cross", "<ANY>"} & (self.overlap_types(t1, t2) | self.overlap_types(t2, t1)))

    def equiv_allowed(self, t1: str, t2: str) -> bool:
        """Tell whether an equivalence (``*`` line) may join entities of two types.

        Args:
            t1: The type of one member.
            t2: The type of another member.

        Returns:
            True when a symmetric-transitive relation (``<REL-TYPE>:symmetric-transitive``, or an
                ``Equiv`` line without ``<REL-TYPE>``) admits (t1, t2).
        """
        for r in self.relations:
            rel_kind = r.special.get("<REL-TYPE>", ())
            symmetric = (("symmetric" in rel_kind and "transitive" in rel_kind) or
                         (r.type == "Equiv" and not rel_kind))
            if symmetric and len(r.types) == 2 and self._matches(r.types[0], t1) and self._matches(r.types[1], t2):
                return True
        return False

    def attributes_for(self, kind: str, type_: str) -> set[str]:
        """List the attributes that may be attached to an annotation.

        Args:
            kind: ``entity``, ``relation`` or ``event``.
            type_: The annotation's type.

        Returns:
            The names of the attributes whose ``Arg:`` lists the type, ``<ANY>``, or the kind's
                placeholder (``<ENTITY>``, ``<RELATION>``, ``<EVENT>``).
        """
        out = set()
        for a in self.attributes.values():
            t = a.targets
            if (type_ in t or "<ANY>" in t or (kind == "entity" and "<ENTITY>" in t)
                    or (kind == "relation" and "<RELATION>" in t) or (kind == "event" and "<EVENT>" in t)):
                out.add(a.name)
        return out


_TERM_RE = re.compile(r"^(\s*)(\S+)(?:\s+(.*))?$")
_ARG_RE = re.compile(r"^(\S*?):(\S*)$")
_REP_RE = re.compile(r"^(\S+?)(\{\S+\}|\?|\*|\+|)$")


def parse_annotation_conf(text: str, source: str = "annotation.conf") -> tuple[AnnotationConf, list[Problem]]:
    """Parse ``annotation.conf`` text as brat reads it; malformed lines are reported, not raised.

    Macros (``<NAME>=...``) are expanded, the ``[spans]`` section is read as ``[entities]``, an
    indented type has the type above it as parent, and a missing section is a problem (line 0).

    Args:
        text: The content of the file.
        source: The path named by the problems.

    Returns:
        The configuration read (malformed lines left out) and the problems found, one per finding.
    """
    conf = AnnotationConf(path=source)
    problems: list[Problem] = []
    section: str | None = None
    seen_sections: set[str] = set()
    macros: dict[str, str] = {}
    last_at_depth: dict[str, dict[int, str]] = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip() or re.match(r"^\s*#", line):
            continue
        m = re.match(r"^\s*\[(.*)\]\s*$", line)
        if m:
            section = {"spans": "entities"}.get(m.group(1), m.group(1))
            if section not in SECTIONS:
                problems.append(Problem(source, lineno, f"unexpected section [{m.group(1)}] (ignored)"))
            seen_sections.add(section)
            macros = {}
            continue
        if re.match(r"^\s*-+\s*$", line):
            continue  # display separator
        mm = re.match(r"^<([a-zA-Z_-]+)>=\s*(.*?)\s*$", line)
        if mm:
            macros[f"<{mm.group(1)}>"] = mm.group(2)
            continue
        for name, value in macros.items():
            line = line.replace(name, value)
        if section is None:
            problems.append(Problem(source, lineno, "line outside any section"))
            continue
        if section not in SECTIONS:
            continue
        tm = _TERM_RE.match(line)
        if not tm:
            problems.append(Problem(source, lineno, f"cannot parse line {line!r}"))
            continue
        indent, terms_s, args_s = tm.groups()
        terms = [t.strip() for t in terms_s.split("|") if t.strip()]
        unused = any(t.startswith("!") for t in terms)
        name = terms[0].lstrip("!") if terms else ""
        if not name:
            problems.append(Problem(source, lineno, "empty type name"))
            continue
        depth = len(indent)
        depths = last_at_depth.setdefault(section, {})
        if depth > 0 and depth - 1 not in depths:
            problems.append(Problem(source, lineno, f"{name!r} is indented but has no parent"))
            continue
        parent = depths.get(depth - 1) if depth > 0 else None
        depths[depth] = name
        for d in [d for d in depths if d > depth]:
            del depths[d]
        args = [a.strip() for a in (args_s or "").split(",") if a.strip()]
        roles: list[str] = []
        role_types: list[tuple[str, ...]] = []
        special: dict[str, tuple[str, ...]] = {}
        bad = False
        for arg in args:
            am = _ARG_RE.match(arg)
            if not am:
                problems.append(Problem(source, lineno, f"cannot parse argument {arg!r}"))
                bad = True
                break
            key, types_s = am.groups()
            if key.startswith("<") and key.endswith(">"):
                special[key] = tuple(types_s.split("-")) if key == "<REL-TYPE>" else (types_s,)
                continue
            rm = _REP_RE.match(key)
            if not rm or not types_s or any(not t for t in types_s.split("|")):
                problems.append(Problem(source, lineno, f"bad argument {arg!r}"))
                bad = True
                break
            roles.append(rm.group(1))
            role_types.append(tuple(types_s.split("|")))
        if bad:
            continue
        if section == "entities":
            if name in conf.entity_parent:
                problems.append(Problem(source, lineno, f"entity type {name!r} defined twice"))
            conf.entity_types.append(name)
            conf.entity_parent[name] = parent
        elif section == "events":
            conf.event_types.append(name)
        elif section == "relations":
            if len(roles) != 2 and not unused:
                problems.append(Problem(source, lineno, f"relation {name!r} needs exactly two arguments"))
            if name == "<OVERLAP>" and "<OVL-TYPE>" not in special:
                problems.append(Problem(source, lineno, "<OVERLAP> without <OVL-TYPE> (ignored by brat)"))
            for value in special.get("<OVL-TYPE>", ()):
                for kind in value.split("|"):
                    if kind not in ("contain", "equal", "cross", "<ANY>"):
                        problems.append(Problem(source, lineno, f"unknown <OVL-TYPE> value {kind!r}"))
            conf.relations.append(RelationDef(name, tuple(roles), tuple(role_types), special, unused))
        elif section == "attributes":
            targets: tuple[str, ...] = ()
            values: tuple[str, ...] | None = None
            for role, types in zip(roles, role_types, strict=True):
                if role == "Arg":
                    targets = types
                elif role == "Value":
                    values = types
            if not targets:
                problems.append(Problem(source, lineno, f"attribute {name!r} lacks an Arg: specification"))
            conf.attributes[name] = AttributeDef(name, targets, values)
    for s in SECTIONS:
        if s not in seen_sections:
            problems.append(Problem(source, 0, f"missing section [{s}]"))
    return conf, problems


def find_conf(directory: Path) -> Path | None:
    """Find the ``annotation.conf`` that applies to a directory, as brat looks it up.

    Args:
        directory: The directory of a document (resolved before walking up).

    Returns:
        The nearest ``annotation.conf`` in ``directory`` or its parents, or None when there is none.
    """
    current = directory.resolve()
    while True:
        candidate = current / "annotation.conf"
        if candidate.is_file():
            return candidate
        if current.parent == current:
            return None
        current = current.parent


# --- documents -------------------------------------------------------------------------------

def _tail(raw_lines: list[str], line: int) -> str | None:
    """The raw text column of a ``T`` line (everything after the second tab), or None."""
    if not 0 < line <= len(raw_lines):
        return None
    cols = raw_lines[line - 1].rstrip("\r").split("\t", 2)
    return cols[2] if len(cols) == 3 else None


def _textbound_problems(t: TextBound, text: str, raw_lines: list[str], where: str) -> list[Problem]:
    out: list[Problem] = []
    seen: list[tuple[int, int]] = []
    for start, end in t.fragments:
        if end > len(text):
            out.append(Problem(where, t.line, f"{t.id}: offset {end} exceeds the text length {len(text)}"))
            return out
        for ostart, oend in seen:
            if end >= ostart and start < oend:
                out.append(Problem(where, t.line, f"{t.id}: fragments {start} {end} and {ostart} {oend} overlap"))
                return out
        seen.append((start, end))
    reference = " ".join(text[s:e] for s, e in t.fragments)
    tail = _tail(raw_lines, t.line)
    if tail is None:
        out.append(Problem(where, t.line, f"{t.id}: missing text column"))
    elif not tail.startswith(reference):
        out.append(Problem(where, t.line, f"{t.id}: text {tail!r} does not match the text at "
                                          f"{';'.join(f'{s} {e}' for s, e in t.fragments)} ({reference!r})"))
    elif tail[len(reference):] and not tail[len(reference)].isspace():
        out.append(Problem(where, t.line, f"{t.id}: text {tail!r} does not match the text at "
                                          f"{';'.join(f'{s} {e}' for s, e in t.fragments)} ({reference!r})"))
    return out


def _same_span(a: TextBound, b: TextBound) -> bool:
    return set(a.fragments) == set(b.fragments)


def _contains(outer: TextBound, inner: TextBound) -> bool:
    return all(any(s >= os and e <= oe for os, oe in outer.fragments) for s, e in inner.fragments)


def reference_problems(doc: BratDocument, where: str) -> list[Problem]:
    """The reference checks of [`validate_document`][pipeline.brat.validate.validate_document], alone.

    A relation or event argument, an event trigger, or the target of an attribute, note or
    normalization that names an id the document does not define (same messages as the full check).
    ``campaign serve`` runs them on every save; they need no configuration.

    Args:
        doc: The parsed document.
        where: The ``.ann`` path named by the problems.

    Returns:
        The problems, in line order.
    """
    ids = {a.id for group in (doc.textbounds, doc.relations, doc.events, doc.attributes, doc.normalizations,
                              doc.notes) for a in group}
    problems: list[Problem] = []
    for r in doc.relations:
        problems += [Problem(where, r.line, f"{r.id}: {role} refers to undefined id {ref}")
                     for role, ref in r.args if ref not in ids]
    for e in doc.events:
        if e.trigger not in ids:
            problems.append(Problem(where, e.line, f"{e.id}: trigger {e.trigger} is not a text-bound annotation"))
        problems += [Problem(where, e.line, f"{e.id}: {role} refers to undefined id {ref}")
                     for role, ref in e.args if ref not in ids]
    targets = [(a.id, a.line, a.target) for a in doc.attributes] + [(q.id, q.line, q.target) for q in doc.notes]
    targets += [(n.id, n.line, n.target) for n in doc.normalizations]
    problems += [Problem(where, line, f"{ident}: target {target} is not defined")
                 for ident, line, target in targets if target not in ids]
    return sorted(problems, key=lambda p: p.line)


def validate_document(doc: BratDocument, ann_text: str, conf: AnnotationConf, where: str) -> list[Problem]:
    """Check one parsed document against a configuration (the checks of the module docstring).

    Args:
        doc: The document, its offsets half-open character offsets into its text (the ``.txt``).
        ann_text: The raw ``.ann`` content it was parsed from (its text columns are compared with
            the text).
        conf: The configuration that applies to the document.
        where: The ``.ann`` path named by the problems.

    Returns:
        The problems found, in the order checked (ids, text-bounds, relations, events, attributes,
            notes and normalizations, equivalences, overlaps); not sorted.
    """
    problems: list[Problem] = []
    raw_lines = ann_text.split("\n")
    text = doc.text

    # ids: well formed and unique
    kinds: dict[str, str] = {}
    items: list[tuple[str, int, str]] = (
        [(t.id, t.line, "entity") for t in doc.textbounds]
        + [(r.id, r.line, "relation") for r in doc.relations]
        + [(e.id, e.line, "event") for e in doc.events]
        + [(a.id, a.line, "attribute") for a in doc.attributes]
        + [(n.id, n.line, "normalization") for n in doc.normalizations]
        + [(q.id, q.line, "note") for q in doc.notes]
    )
    for ident, line, kind in items:
        if not _ID_RE.match(ident):
            problems.append(Problem(where, line, f"invalid id {ident!r}"))
        if ident in kinds:
            problems.append(Problem(where, line, f"duplicate id {ident}"))
        else:
            kinds[ident] = kind
    types: dict[str, str] = {t.id: t.type for t in doc.textbounds}
    types.update({r.id: r.type for r in doc.relations})
    types.update({e.id: e.type for e in doc.events})

    # text-bound annotations
    for t in doc.textbounds:
        problems += _textbound_problems(t, text, raw_lines, where)
        if t.type not in conf.entity_types and t.type not in conf.event_types:
            problems.append(Problem(where, t.line, f"{t.id}: {t.type} is not a known entity type"))

    # relations
    problems += _relation_problems(doc, conf, kinds, types, where)

    # events (PGxCorpus has none; checked for known type and trigger)
    for e in doc.events:
        if e.type not in conf.event_types:
            problems.append(Problem(where, e.line, f"{e.id}: {e.type} is not a known event type"))
        if e.trigger not in kinds or kinds[e.trigger] != "entity":
            problems.append(Problem(where, e.line, f"{e.id}: trigger {e.trigger} is not a text-bound annotation"))
        for role, ref in e.args:
            if ref not in kinds:
                problems.append(Problem(where, e.line, f"{e.id}: {role} refers to undefined id {ref}"))

    # attributes
    problems += _attribute_problems(doc, conf, kinds, types, where)

    # notes and normalizations
    for q in doc.notes:
        if q.target not in kinds:
            problems.append(Problem(where, q.line, f"{q.id}: target {q.target} is not defined"))
    for n in doc.normalizations:
        if n.target not in kinds:
            problems.append(Problem(where, n.line, f"{n.id}: target {n.target} is not defined"))
        elif kinds[n.target] not in ("entity", "event"):
            problems.append(Problem(where, n.line, f"{n.id}: target {n.target} is a {kinds[n.target]}, not a span"))
        if not n.db or not n.db_id:
            problems.append(Problem(where, n.line, f"{n.id}: reference must be DB:ID"))

    # equivalences
    for eq in doc.equivs:
        bad = [i for i in eq.ids if kinds.get(i) != "entity"]
        if bad:
            problems.append(Problem(where, eq.line, f"equivalence refers to {', '.join(bad)}, not entities"))
            continue
        eq_types = sorted({types[i] for i in eq.ids})
        for t1 in eq_types:
            for t2 in eq_types:
                if t1 <= t2 and not conf.equiv_allowed(t1, t2):
                    problems.append(Problem(where, eq.line, f"{eq.type} not allowed between {t1} and {t2}"))

    # overlap between entities
    problems += _overlap_problems(doc, conf, where)
    return problems


def _relation_problems(
    doc: BratDocument, conf: AnnotationConf, kinds: Mapping[str, str], types: Mapping[str, str], where: str
) -> list[Problem]:
    """Check the relations: known type, distinct labels, defined span arguments, allowed argument types."""
    problems: list[Problem] = []
    for r in doc.relations:
        if r.type not in conf.relation_types:
            problems.append(Problem(where, r.line, f"{r.id}: {r.type} is not a known relation type"))
        roles = tuple(role for role, _ in r.args)
        if len(set(roles)) != len(roles):
            problems.append(Problem(where, r.line, f"{r.id}: argument labels must differ"))
        missing = False
        for role, ref in r.args:
            if ref not in kinds:
                problems.append(Problem(where, r.line, f"{r.id}: {role} refers to undefined id {ref}"))
                missing = True
            elif kinds[ref] not in ("entity", "event"):
                problems.append(Problem(where, r.line, f"{r.id}: {role} refers to {ref}, a {kinds[ref]}"))
                missing = True
        if missing or r.type not in conf.relation_types or len(r.args) != 2:
            continue
        arg_types = (types[r.args[0][1]], types[r.args[1][1]])
        if not conf.relation_allowed(r.type, (roles[0], roles[1]), arg_types):
            problems.append(Problem(
                where, r.line,
                f"{r.id}: {r.type} not allowed between {roles[0]}:{arg_types[0]} and {roles[1]}:{arg_types[1]}",
            ))
    return problems


def _attribute_problems(
    doc: BratDocument, conf: AnnotationConf, kinds: Mapping[str, str], types: Mapping[str, str], where: str
) -> list[Problem]:
    """Check the attributes: defined target, known attribute allowed on it, value among the allowed ones."""
    problems: list[Problem] = []
    for a in doc.attributes:
        if a.target not in kinds:
            problems.append(Problem(where, a.line, f"{a.id}: target {a.target} is not defined"))
            continue
        adef = conf.attributes.get(a.type)
        if adef is None:
            problems.append(Problem(where, a.line, f"{a.id}: {a.type} is not a known attribute"))
            continue
        kind = kinds[a.target]
        if kind not in ("entity", "relation", "event") or a.type not in conf.attributes_for(kind, types[a.target]):
            what = types.get(a.target, kind)
            problems.append(Problem(where, a.line, f"{a.id}: {what} {a.target} cannot take a {a.type} attribute"))
        if adef.values is None and a.value is not None:
            problems.append(Problem(where, a.line, f"{a.id}: binary attribute {a.type} takes no value ({a.value!r})"))
        elif adef.values is not None and a.value not in adef.values:
            problems.append(Problem(
                where, a.line, f"{a.id}: {a.type} value {a.value!r} not among {'|'.join(adef.values)}"
            ))
    return problems


def _overlap_problems(doc: BratDocument, conf: AnnotationConf, where: str) -> list[Problem]:
    """Check each pair of overlapping entities (same span, containment, crossing) against the configuration."""
    problems: list[Problem] = []
    entities = [t for t in doc.textbounds if t.type in conf.entity_types and t.fragments]
    entities.sort(key=lambda t: (t.start, t.end, t.line))
    for i, a1 in enumerate(entities):
        for a2 in entities[i + 1:]:
            if a2.start >= a1.end:
                break
            if not (a2.start < a1.end and a2.end > a1.start):
                continue
            if _same_span(a1, a2):
                if not conf.can_be_equal(a1.type, a2.type):
                    problems.append(Problem(where, a2.line, f"{a2.id}: {a2.type} cannot have the same span as "
                                                            f"{a1.type} {a1.id}"))
            elif _contains(a1, a2):
                if not conf.can_contain(a2.type, a1.type):
                    problems.append(Problem(where, a2.line, f"{a2.id}: {a2.type} cannot be contained in "
                                                            f"{a1.type} {a1.id}"))
            elif _contains(a2, a1):
                if not conf.can_contain(a1.type, a2.type):
                    problems.append(Problem(where, a1.line, f"{a1.id}: {a1.type} cannot be contained in "
                                                            f"{a2.type} {a2.id}"))
            elif not conf.can_cross(a1.type, a2.type):
                problems.append(Problem(where, a2.line, f"{a2.id}: {a2.type} cannot cross {a1.type} {a1.id}"))
    return problems


def _documents(root: Path, problems: list[Problem]) -> list[tuple[Path, Path]]:
    """(txt, ann) path pairs under ``root``; an ``.ann`` without ``.txt`` comes with a missing txt.

    Names keep their dots (``a..b_1`` pairs ``a..b_1.txt`` with ``a..b_1.ann``); a symbolic link inside
    ``root`` is never followed: it is a problem, and its document is left out.
    """
    listing = list_files(root, (".txt", ".ann"), recursive=True)
    problems.extend(Problem(str(p), 0, "symbolic link inside the collection, not followed") for p in listing.symlinks)
    links = set(listing.symlinks)
    pairs = {p.with_name(p.name[: -len(p.suffix)]) for p in listing.files}
    out = []
    for base in sorted(pairs):
        txt, ann = base.with_name(base.name + ".txt"), base.with_name(base.name + ".ann")
        if txt not in links and ann not in links:
            out.append((txt, ann))
    return out


def validate_collection(directory: Path, conf: Path | None = None) -> list[Problem]:
    """List every problem brat would report for the documents under a directory (recursively).

    Symbolic links inside the directory are problems and are not followed; a document whose files
    are not UTF-8, whose ``.txt`` is missing, or for which no ``annotation.conf`` is found is reported
    and not checked further.  Offsets are checked as brat counts them (into the ``.txt`` read without
    newline translation).  Nothing is written.

    Args:
        directory: The collection.
        conf: The ``annotation.conf`` to use for every document; by default
            each document uses the nearest one walking up from its directory.

    Returns:
        The problems (of the documents and of the configurations read), without duplicates, sorted by
            file, line and message.

    Raises:
        FileNotFoundError: If ``directory`` is not a directory or ``conf`` does not exist.
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    if conf is not None and not Path(conf).is_file():
        raise FileNotFoundError(f"{conf}: no such annotation.conf")
    problems: list[Problem] = []
    confs: dict[Path, AnnotationConf | None] = {}

    def load(path: Path) -> AnnotationConf:
        if path not in confs:
            parsed, found = parse_annotation_conf(path.read_text(encoding="utf-8"), str(path))
            problems.extend(found)
            confs[path] = parsed
        result = confs[path]
        assert result is not None
        return result

    fixed = load(Path(conf)) if conf is not None else None
    missing_conf_dirs: set[Path] = set()
    for txt, ann in _documents(root, problems):
        where = str(ann)
        if not txt.exists():
            problems.append(Problem(where, 0, f"no text file {txt.name} for this annotation file"))
            continue
        undecodable = False
        for path in (txt, ann):  # each bad file named, with the line of its first bad byte
            raw = path.read_bytes() if path.exists() else b""
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = raw[: exc.start].count(b"\n") + 1
                problems.append(Problem(str(path), line, f"not UTF-8: {exc.reason} at byte {exc.start}"))
                undecodable = True
        if undecodable:
            continue
        text = read_text(txt)  # as brat reads it: no newline translation (offsets count a CRLF as 2)
        ann_text = read_text(ann) if ann.exists() else ""
        if fixed is not None:
            doc_conf = fixed
        else:
            found = find_conf(txt.parent)
            if found is None:
                if txt.parent not in missing_conf_dirs:
                    missing_conf_dirs.add(txt.parent)
                    problems.append(Problem(str(txt.parent), 0, "no annotation.conf found in this directory "
                                                                "or its parents"))
                continue
            doc_conf = load(found)
        doc, issues = parse_ann(txt.stem, text, ann_text, where)
        problems += [Problem(i.file, i.line, i.message) for i in issues]
        problems += validate_document(doc, ann_text, doc_conf, where)
    return sorted(set(problems))


def strict_relation_warnings(directory: Path, schema: Schema) -> list[Problem]:
    """Warn about the relations under a directory that the schema's strict constraints reject.

    Argument types are compared through the schema hierarchy (a type stands for
    its descendants, ``=Type`` for itself).  Relations of a type the strict
    section does not list, relations with an unknown argument id, and types
    the schema does not know are left to
    [`validate_collection`][pipeline.brat.validate.validate_collection], which
    reports the last two as errors.

    Args:
        directory: The collection, read recursively.
        schema: The corpus schema, whose ``strict_relation_arguments`` are applied.

    Returns:
        One problem per relation outside the constraints (its ``.ann`` and line), the message
            starting with ``warning:``; sorted by file, line and message.

    Raises:
        FileNotFoundError: If ``directory`` is not a directory.
    """
    docs, _issues = read_directory(directory)  # parse issues are validate_collection's to report
    out: list[Problem] = []
    for doc in docs:
        types = {t.id: t.type for t in doc.textbounds}
        for r in doc.relations:
            if r.type not in schema.strict_relation_arguments or len(r.args) != 2:
                continue
            if any(ref not in types or types[ref] not in schema.entity_parent for _, ref in r.args):
                continue
            rejected = []
            for role, ref in r.args:
                allowed = schema.allowed_arguments(r.type, role, strict=True)
                if types[ref] not in allowed:
                    rejected.append(f"{role}:{types[ref]} (strict: {'|'.join(allowed) or 'none'})")
            if rejected:
                out.append(Problem(
                    doc.path or f"{doc.name}.ann", r.line,
                    f"warning: {r.id}: {r.type} outside the strict constraints: {', '.join(rejected)}",
                ))
    return sorted(out)
