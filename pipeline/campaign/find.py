"""``pgx-corpus find``: list the sentences of a brat collection that expose a source of heterogeneity.

Input: brat documents (one sentence each in PGxCorpus; offsets half-open into the ``.txt``).  Criteria:

* ``keyword``: a word or phrase, case-insensitive, on word boundaries (``combination`` does not match
  ``combinations``; write a regex for that);
* ``regex``: a Python regular expression searched in the text (case-sensitive unless it says ``(?i)``);
* ``entity_type``: an entity of that type or of one of its subtypes in the schema (``Phenotype`` finds
  ``Disease`` too); append ``=`` (``Phenotype=``) for that exact type only;
* ``relation``: ``RELATION`` or ``ARG1-RELATION-ARG2`` where each part is a type or ``*``; argument types
  match their subtypes (``Chemical-treats-Phenotype`` finds a ``treats`` whose Arg2 is a ``Disease``), the
  relation type matches exactly (``influences`` does not find ``increases``);
* ``modality``: ``Negated``, ``Hypothetical`` (or the note words ``neg``, ``hyp``...) or ``none``: a relation
  with that modality (``none``: without any), read from the relation's note with the project's grammar
  ([`pipeline.brat.modality`][pipeline.brat.modality]; legacy ``Negated``/``Hypothetical`` attributes count too).  With
  ``relation`` given as well, one relation must match both.

Values of one criterion are alternatives (any may match); different criteria must all match.  A sentence
matches when every given criterion does.  Each match lists what matched (keyword and regex hits as
half-open spans into the text, entity ids, relation ids) and all the sentence's annotations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.brat.modality import MODALITIES, MODALITY_TOKENS
from pipeline.brat.standoff import BratDocument, TextBound
from pipeline.campaign.documents import relation_note
from pipeline.documents import Span
from pipeline.errors import InputError
from pipeline.schema import Schema


class PatternError(InputError):
    """A criterion that cannot be used (bad regex, unknown type, malformed relation pattern)."""


@dataclass(frozen=True)
class RelationPattern:
    """A ``relation`` criterion: ``RELATION`` or ``ARG1-RELATION-ARG2``, each part a type or ``*``.

    Attributes:
        arg1: Arg1's entity type (its subtypes match too; ``TYPE=`` for that exact type), or ``*``.
        relation: The relation type (matched exactly), or ``*``.
        arg2: Arg2's entity type, as ``arg1``.
    """
    arg1: str
    relation: str
    arg2: str

    @classmethod
    def parse(cls, text: str) -> RelationPattern:
        """Parse a relation criterion.

        Args:
            text: ``RELATION`` or ``ARG1-RELATION-ARG2``.

        Returns:
            The pattern; a bare ``RELATION`` takes any arguments.

        Raises:
            PatternError: If the text has another shape or an empty part.
        """
        parts = text.split("-")
        if len(parts) == 1 and parts[0]:
            return cls("*", parts[0], "*")
        if len(parts) == 3 and all(parts):
            return cls(parts[0], parts[1], parts[2])
        raise PatternError(f"bad relation pattern {text!r}: expected RELATION or ARG1-RELATION-ARG2 (* for any)")


@dataclass
class Criteria:
    """The criteria of ``pgx-corpus find`` (see the module docstring), as given.

    Values of one criterion are alternatives; different criteria must all match.

    Attributes:
        keywords: Words or phrases, case-insensitive, on word boundaries.
        regexes: Python regular expressions searched in the text.
        entity_types: Entity types (subtypes included; ``TYPE=`` for that exact type).
        relations: Relation patterns ([`RelationPattern`][pipeline.campaign.find.RelationPattern]).
        modalities: ``Negated``, ``Hypothetical``, their note words, or ``none``.
    """
    keywords: list[str] = field(default_factory=list)
    regexes: list[str] = field(default_factory=list)
    entity_types: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    modalities: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        """Tell whether no criterion is given (then every document matches).

        Returns:
            True when every list is empty.
        """
        return not (self.keywords or self.regexes or self.entity_types or self.relations or self.modalities)


@dataclass
class Match:
    """One matching sentence: what matched, and the whole document.

    Attributes:
        document: The brat document name.
        text: The sentence text.
        spans: The keyword and regex hits, half-open character offsets into ``text``, sorted.
        entities: The ids of the entities the ``entity_type`` criterion matched.
        relations: The ids of the relations the ``relation``/``modality`` criteria matched.
        doc: The document, with all its annotations.
    """
    document: str
    text: str
    spans: list[Span]
    entities: list[str]
    relations: list[str]
    doc: BratDocument

    def as_dict(self, schema: Schema) -> dict[str, Any]:
        """Give the match as JSON-ready data.

        Args:
            schema: The schema (not used: the annotations are listed as written).

        Returns:
            ``document``, ``text``, ``matched`` (``spans`` as ``[start, end]``, ``entities``, ``relations``),
            and all the document's ``entities`` (id, type, fragments, text) and ``relations`` (id, type, args
            by role, modality).
        """
        return {
            "document": self.document,
            "text": self.text,
            "matched": {"spans": [list(s) for s in self.spans], "entities": self.entities,
                        "relations": self.relations},
            "entities": [_entity(t) for t in self.doc.textbounds],
            "relations": [_relation(self.doc, r.id, schema) for r in self.doc.relations],
        }


def _entity(t: TextBound) -> dict[str, Any]:
    return {"id": t.id, "type": t.type, "fragments": [list(f) for f in t.fragments], "text": t.text}


def _relation(doc: BratDocument, rid: str, schema: Schema) -> dict[str, Any]:
    r = next(x for x in doc.relations if x.id == rid)
    return {"id": r.id, "type": r.type, "args": {role: ref for role, ref in r.args},
            "modality": sorted(relation_note(doc, r.id).modality)}


NO_MODALITY = "none"


def _modality_value(value: str) -> str:
    """A ``--modality`` value as a modality name or ``none`` (PatternError for anything else)."""
    by_name = {m.lower(): m for m in MODALITIES}
    key = value.strip().lower()
    if key == NO_MODALITY:
        return NO_MODALITY
    found = by_name.get(key) or MODALITY_TOKENS.get(key)
    if found is None:
        raise PatternError(f"unknown modality {value!r}: expected {', '.join(MODALITIES)}, their note words "
                           f"({', '.join(MODALITY_TOKENS)}) or {NO_MODALITY}")
    return found


def _modality_ok(doc: BratDocument, rid: str, wanted: list[str]) -> bool:
    modality = relation_note(doc, rid).modality
    return any((m == NO_MODALITY and not modality) or m in modality for m in wanted)


def _type_matcher(spec: str, schema: Schema) -> tuple[str, bool]:
    exact = spec.endswith("=")
    name = spec.rstrip("=")
    if name != "*" and name not in schema.entity_parent:
        raise PatternError(f"unknown entity type {name!r} (schema {schema.path or 'config/schema.yaml'})")
    return name, exact


def _type_ok(type_: str, spec: tuple[str, bool], schema: Schema) -> bool:
    name, exact = spec
    if name == "*":
        return True
    return type_ == name if exact else (type_ in schema.entity_parent and schema.is_a(type_, name))


def compile_criteria(criteria: Criteria, schema: Schema) -> dict[str, Any]:
    """Check and compile criteria.

    Args:
        criteria: The criteria as given.
        schema: The schema every entity and relation type is checked against.

    Returns:
        The compiled criteria, for [`match_document`][pipeline.campaign.find.match_document].

    Raises:
        PatternError: If a regex does not compile, a type is not in the schema, a relation pattern is
            malformed, or a modality is unknown; the message names the bad criterion.
    """
    try:
        keywords = [re.compile(r"(?<!\w)" + re.escape(k) + r"(?!\w)", re.IGNORECASE) for k in criteria.keywords]
        regexes = [re.compile(r) for r in criteria.regexes]
    except re.error as exc:
        raise PatternError(f"bad regex: {exc}") from exc
    relations = []
    for text in criteria.relations:
        pat = RelationPattern.parse(text)
        if pat.relation != "*" and pat.relation not in schema.relation_parent:
            raise PatternError(f"unknown relation type {pat.relation!r} in {text!r}")
        relations.append((_type_matcher(pat.arg1, schema), pat.relation, _type_matcher(pat.arg2, schema)))
    return {
        "keywords": keywords,
        "regexes": regexes,
        "entity_types": [_type_matcher(t, schema) for t in criteria.entity_types],
        "relations": relations,
        "modalities": [_modality_value(m) for m in criteria.modalities],
    }


def match_document(doc: BratDocument, compiled: dict[str, Any], schema: Schema) -> Match | None:
    """Match one document against compiled criteria.

    Args:
        doc: The document.
        compiled: What [`compile_criteria`][pipeline.campaign.find.compile_criteria] returned.
        schema: The schema, for the subtypes of entity types.

    Returns:
        The match, or ``None`` when a given criterion does not match.
    """
    spans: list[Span] = []
    for group in ("keywords", "regexes"):
        if compiled[group]:
            hits = [m.span() for rx in compiled[group] for m in rx.finditer(doc.text)]
            if not hits:
                return None
            spans += hits
    entities: list[str] = []
    if compiled["entity_types"]:
        entities = [t.id for t in doc.textbounds if any(_type_ok(t.type, s, schema) for s in compiled["entity_types"])]
        if not entities:
            return None
    relations: list[str] = []
    if compiled["relations"] or compiled["modalities"]:
        types = {t.id: t.type for t in doc.textbounds}
        for r in doc.relations:
            if compiled["modalities"] and not _modality_ok(doc, r.id, compiled["modalities"]):
                continue
            if not compiled["relations"]:
                relations.append(r.id)
                continue
            a1 = types.get(r.arg("Arg1") or "", "")
            a2 = types.get(r.arg("Arg2") or "", "")
            for s1, rel, s2 in compiled["relations"]:
                if (rel in ("*", r.type)) and _type_ok(a1, s1, schema) and _type_ok(a2, s2, schema):
                    relations.append(r.id)
                    break
        if not relations:
            return None
    return Match(doc.name, doc.text, sorted(set(spans)), entities, relations, doc)


def find(docs: Iterable[BratDocument], criteria: Criteria, schema: Schema) -> list[Match]:
    """Find the documents that match criteria.

    Args:
        docs: The documents searched.
        criteria: The criteria; none matches every document.
        schema: The schema.

    Returns:
        The matches, in the order of ``docs``.

    Raises:
        PatternError: If a criterion cannot be used.
    """
    compiled = compile_criteria(criteria, schema)
    return [m for doc in docs if (m := match_document(doc, compiled, schema)) is not None]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _highlight(text: str, spans: Sequence[Span]) -> str:
    out, pos = [], 0
    for s, e in sorted(spans):
        if s < pos:
            continue
        out += [text[pos:s], "**", text[s:e], "**"]
        pos = e
    out.append(text[pos:])
    return "".join(out).replace("\n", " ")


def format_markdown(matches: Sequence[Match], schema: Schema, total: int, matched: int | None = None) -> str:
    """Render matches as Markdown: one section per sentence, hits in bold, its entities and relations.

    Matched entities and relations are starred; entity spans are ``start-end`` character offsets into
    the sentence text.

    Args:
        matches: The matches shown.
        schema: The schema (not used).
        total: How many sentences were searched.
        matched: How many sentences match, when ``matches`` is a shortened list; ``len(matches)`` when
            ``None``.

    Returns:
        The Markdown text.
    """
    matched = len(matches) if matched is None else matched
    shown = f" ({len(matches)} shown)" if matched != len(matches) else ""
    lines = [f"{matched} of {total} sentences match{shown}", ""]
    for m in matches:
        lines += [f"## {m.document}", "", _highlight(m.text, m.spans), ""]
        doc = m.doc
        if doc.textbounds:
            lines += ["| entity | type | span | text |", "|---|---|---|---|"]
            for t in doc.textbounds:
                mark = " *" if t.id in m.entities else ""
                span = ";".join(f"{s}-{e}" for s, e in t.fragments)
                lines.append(f"| {t.id}{mark} | {t.type} | {span} | {_md_cell(t.text)} |")
            lines.append("")
        if doc.relations:
            texts = {t.id: t.text for t in doc.textbounds}
            lines += ["| relation | type | Arg1 | Arg2 | modality |", "|---|---|---|---|---|"]
            for r in doc.relations:
                mark = " *" if r.id in m.relations else ""
                a1, a2 = r.arg("Arg1") or "", r.arg("Arg2") or ""
                mod = "+".join(sorted(relation_note(doc, r.id).modality)) or "-"
                lines.append(f"| {r.id}{mark} | {r.type} | {a1} {_md_cell(texts.get(a1, ''))} "
                             f"| {a2} {_md_cell(texts.get(a2, ''))} | {mod} |")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
