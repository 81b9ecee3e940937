"""The corpus schema (``config/schema.yaml``): hierarchies, constraints, type mapping.

[`load_schema`][pipeline.schema.load_schema] validates the file and raises
[`SchemaError`][pipeline.schema.SchemaError] naming the file (and, where YAML knows it, the
line) for anything inconsistent: an unknown type in a constraint or a mapping, a type defined
twice, a bad shape.

Relation argument constraints name entity types that stand for themselves and
all their descendants; a name written ``=Type`` stands for that type alone
(``=Genomic_factor`` admits an argument typed ``Genomic_factor`` itself, not
its subtypes).  ``relation_arguments`` is what annotators may write (brat's
``annotation.conf``); ``strict_relation_arguments`` (same shape, optional) is
the paper's stricter reading, checked by ``pgx-corpus validate --strict`` as
warnings only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline import resources, yamlfile
from pipeline.errors import InputError

ANY_ENTITY = "<ENTITY>"
"""An argument constraint admitting every entity type (brat's ``<ENTITY>``)."""
EXACT = "="
"""Prefix of an argument type that admits the type itself, not its descendants."""
DEFAULT_SCHEMA = resources.config_file("schema.yaml")
"""The project's schema file, ``config/schema.yaml``."""


class SchemaError(InputError):
    """An invalid schema file; the message names the file."""


@dataclass(frozen=True)
class Schema:
    """Entity and relation hierarchies and the rest of the schema, as loaded from a schema file.

    Hierarchies map each type to its parent (roots map to None), in file (pre-)order.

    Attributes:
        entity_parent: Entity type -> parent entity type (None for a root).
        relation_parent: Relation type -> parent relation type (None for a root).
        relation_arguments: Relation -> role (``Arg1``, ``Arg2``) -> allowed entity types as written
            (a type stands for itself and its descendants, ``=Type`` for itself alone,
            [`ANY_ENTITY`][pipeline.schema.ANY_ENTITY] for any); a relation or role not listed
            admits any entity. What annotators may write.
        relation_attributes: Relation attribute name (``Negated``, ``Hypothetical``) -> its settings
            (``note``, the notes token; ``glyph``, brat's mark).
        mapping: Annotation source -> source type -> schema entity type (None: the source type is
            dropped); ``ontology`` keys are ontology classes.
        path: The file the schema was loaded from (for messages).
        strict_relation_arguments: The paper's stricter argument constraints, same shape as
            ``relation_arguments``; only for the relations it lists (``validate --strict`` warnings).
    """

    entity_parent: dict[str, str | None]
    relation_parent: dict[str, str | None]
    relation_arguments: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    relation_attributes: dict[str, dict[str, Any]] = field(default_factory=dict)
    mapping: dict[str, dict[str, str | None]] = field(default_factory=dict)
    path: str = ""
    strict_relation_arguments: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    # -- hierarchy helpers -------------------------------------------------
    def entity_types(self) -> list[str]:
        """Return all entity types, in file (pre-)order.

        Returns:
            The entity type names.
        """
        return list(self.entity_parent)

    def relation_types(self) -> list[str]:
        """Return all relation types, in file (pre-)order.

        Returns:
            The relation type names.
        """
        return list(self.relation_parent)

    def ancestors(self, type_: str, include_self: bool = False) -> list[str]:
        """Return the ancestors of an entity or relation type, nearest first.

        Args:
            type_: An entity or relation type (an unknown type has no ancestor).
            include_self: Put ``type_`` itself first.

        Returns:
            The ancestors, from the parent to the root.
        """
        parents = self.entity_parent if type_ in self.entity_parent else self.relation_parent
        out = [type_] if include_self else []
        current = parents.get(type_)
        while current is not None:
            out.append(current)
            current = parents.get(current)
        return out

    def is_a(self, type_: str, ancestor: str) -> bool:
        """Tell whether a type is another type or one of its descendants.

        Args:
            type_: An entity or relation type.
            ancestor: The type it is compared with.

        Returns:
            True when ``type_`` is ``ancestor`` or below it in the hierarchy.
        """
        return type_ == ancestor or ancestor in self.ancestors(type_)

    def children(self, type_: str | None) -> list[str]:
        """Return the direct children of a type.

        Args:
            type_: A relation type, or an entity type; None gives the entity roots.

        Returns:
            The child types, in file order.
        """
        parents = self.relation_parent if type_ in self.relation_parent else self.entity_parent
        return [t for t, p in parents.items() if p == type_]

    def relation_roots(self) -> list[str]:
        """Return the relation types without a parent.

        Returns:
            The root relation types, in file order.
        """
        return [t for t, p in self.relation_parent.items() if p is None]

    def entity_roots(self) -> list[str]:
        """Return the entity types without a parent.

        Returns:
            The root entity types, in file order.
        """
        return [t for t, p in self.entity_parent.items() if p is None]

    def is_leaf(self, type_: str) -> bool:
        """Tell whether a type has no child.

        Args:
            type_: An entity or relation type.

        Returns:
            True when no type has ``type_`` as its parent.
        """
        return not self.children(type_)

    def allowed_arguments(self, relation: str, role: str, strict: bool = False) -> tuple[str, ...]:
        """Return the entity types allowed for one argument of a relation.

        ``Type`` in the constraint is expanded to itself and its descendants, ``=Type`` to the type
        alone; no constraint (or [`ANY_ENTITY`][pipeline.schema.ANY_ENTITY]) allows every entity type.

        Args:
            relation: The relation type.
            role: The argument role (``Arg1`` or ``Arg2``).
            strict: Use the ``strict_relation_arguments`` constraint where the schema gives one for
                the relation, else the ordinary one.

        Returns:
            The allowed entity types, in schema order.
        """
        table = self.relation_arguments
        if strict and relation in self.strict_relation_arguments:
            table = self.strict_relation_arguments
        spec = table.get(relation, {}).get(role, (ANY_ENTITY,))
        if ANY_ENTITY in spec:
            return tuple(self.entity_parent)
        exact = {s[len(EXACT):] for s in spec if s.startswith(EXACT)}
        return tuple(
            t for t in self.entity_parent
            if t in exact or any(self.is_a(t, s) for s in spec if not s.startswith(EXACT))
        )

    def map_type(self, source: str, type_: str) -> str | None:
        """Return the schema entity type of a source's type.

        Args:
            source: The annotation source (``pubtator``, ``local``, ``ontology`` ...).
            type_: The source's type (for ``ontology``, the ontology class).

        Returns:
            The mapped schema type; None when the mapping drops the type; a schema type maps to itself.

        Raises:
            KeyError: If the type is neither mapped for the source nor a schema type.
        """
        table = self.mapping.get(source, {})
        if type_ in table:
            return table[type_]
        if type_ in self.entity_parent:
            return type_
        raise KeyError(f"no mapping for {source} type {type_!r} in {self.path}")


def _flatten(tree: Any, parent: str | None, out: dict[str, str | None], what: str, path: str) -> None:
    if tree is None:
        return
    if not isinstance(tree, Mapping):
        raise SchemaError(f"{path}: {what} hierarchy under {parent!r} must be a mapping, got {tree!r}")
    for name, sub in tree.items():
        if not isinstance(name, str) or not name.replace("_", "").isalnum():
            raise SchemaError(f"{path}: bad {what} type name {name!r}")
        if name in out:
            raise SchemaError(f"{path}: {what} type {name!r} defined twice")
        out[name] = parent
        _flatten(sub or {}, name, out, what, path)


@yamlfile.checked_types(SchemaError)
def load_schema(path: str | Path = DEFAULT_SCHEMA) -> Schema:
    """Load and validate a schema file.

    Args:
        path: The schema YAML file (default: [`DEFAULT_SCHEMA`][pipeline.schema.DEFAULT_SCHEMA]).

    Returns:
        The schema.

    Raises:
        SchemaError: If the file cannot be read, is not valid YAML (the line is named when known),
            or is inconsistent: unknown section, bad type name, type defined twice, a name used for
            both an entity and a relation, an unknown type in a constraint or a mapping, a value of
            the wrong shape.
    """
    p = Path(path)
    try:
        data = yamlfile.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise SchemaError(f"{where}: invalid YAML: {exc}") from exc
    except OSError as exc:
        raise SchemaError(f"{p}: cannot read schema: {exc}") from exc
    if not isinstance(data, Mapping):
        raise SchemaError(f"{p}: top level must be a mapping")
    unknown = set(data) - {
        "entities", "relations", "relation_arguments", "strict_relation_arguments", "relation_attributes", "mapping"
    }
    if unknown:
        raise SchemaError(f"{p}: unknown section(s) {sorted(unknown)}")
    entities: dict[str, str | None] = {}
    relations: dict[str, str | None] = {}
    _flatten(data.get("entities"), None, entities, "entity", str(p))
    _flatten(data.get("relations"), None, relations, "relation", str(p))
    if not entities:
        raise SchemaError(f"{p}: no entity types")
    overlap = set(entities) & set(relations)
    if overlap:
        raise SchemaError(f"{p}: names used for both entities and relations: {sorted(overlap)}")

    arguments = _arguments(data.get("relation_arguments"), "relation_arguments", relations, entities, p)
    strict = _arguments(data.get("strict_relation_arguments"), "strict_relation_arguments", relations, entities, p)

    attributes = {str(k): dict(v or {}) for k, v in (data.get("relation_attributes") or {}).items()}

    mapping: dict[str, dict[str, str | None]] = {}
    for source, table in (data.get("mapping") or {}).items():
        mapping[str(source)] = {}
        for src_type, target in (table or {}).items():
            if target is not None and target not in entities:
                raise SchemaError(f"{p}: mapping.{source}.{src_type} -> unknown entity type {target!r}")
            mapping[str(source)][str(src_type)] = target
    return Schema(entities, relations, arguments, attributes, mapping, str(p), strict)


def _arguments(
    section: Any, name: str, relations: Mapping[str, str | None], entities: Mapping[str, str | None], p: Path
) -> dict[str, dict[str, tuple[str, ...]]]:
    """A ``relation_arguments``-shaped section, checked: known relations, known (or ``=``known) entity types."""
    if section is not None and not isinstance(section, Mapping):
        raise SchemaError(f"{p}: {name} must map relations to roles")
    arguments: dict[str, dict[str, tuple[str, ...]]] = {}
    for rel, roles in (section or {}).items():
        if rel not in relations:
            raise SchemaError(f"{p}: {name} names unknown relation {rel!r}")
        if not isinstance(roles, Mapping):
            raise SchemaError(f"{p}: {name}.{rel} must map roles to type lists")
        arguments[rel] = {}
        for role, spec in roles.items():
            allowed = [spec] if isinstance(spec, str) else list(spec or [])
            for t in allowed:
                bare = t[len(EXACT):] if isinstance(t, str) and t.startswith(EXACT) else t
                if t != ANY_ENTITY and bare not in entities:
                    raise SchemaError(f"{p}: {name}.{rel}.{role} names unknown entity type {t!r}")
            arguments[rel][str(role)] = tuple(allowed)
    return arguments
