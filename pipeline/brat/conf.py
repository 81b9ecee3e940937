"""brat configuration files generated from the corpus schema.

* ``annotation.conf`` from ``config/schema.yaml``: the entity hierarchy
  (tab-indented, one tab per level, as brat reads depth from the indent),
  the relation hierarchy with Arg1/Arg2 constraints, one ``<OVERLAP>`` rule,
  an empty ``[events]`` and the ``[attributes]``: only the ``Composite``
  entity attribute that marks composite entities.  No attribute is declared
  on relations: brat's client can neither show nor edit one (nlplab/brat#791),
  so a relation's modality lives in its one ``AnnotatorNotes``
  ([`pipeline.brat.modality`][pipeline.brat.modality]: ``hyp``, ``neg``).

  brat matches relation argument types *literally* (a parent type does not
  admit its children), so each constraint lists the schema type and all its
  descendants (``Arg2:Phenotype|Disease|...``; a schema ``=Type`` lists the
  type alone), or ``<ENTITY>`` when every entity type is allowed.  The
  schema's ``strict_relation_arguments`` are not written here (they are
  ``pgx-corpus validate --strict`` warnings).  No type is marked ``!`` (non-selectable): the
  PGxCorpus gold uses the parent types ``Genomic_factor``, ``Phenotype``,
  ``Genomic_variation``, ``isAssociatedWith`` and ``influences`` directly.

  Overlap: brat by default forbids any two entities to overlap.  Composites
  contain their key entity, may share its span, and discontiguous ones
  interleave with other entities (brat calls that crossing, as it compares
  fragment sets: "estradiol ... levels of" crosses "estrone" lying between
  its fragments), so the rule is
  ``<OVERLAP> Arg1:<ENTITY>, Arg2:<ENTITY>, <OVL-TYPE>:contain|equal|cross``
  (``config/brat/brat.yaml`` ``overlap`` can narrow it).
* ``visual.conf`` from ``config/brat/brat.yaml``: labels, colours, and the
  dashed border of composite entities (brat draws a span dashed when it
  carries an attribute whose drawing sets ``dashArray``; see brat.yaml).
* ``tools.conf``: ``config/brat/tools.conf`` copied (validation on,
  whitespace tokens, newline sentences, normalization links).
* ``kb_shortcuts.conf`` from ``config/brat/brat.yaml``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import yamlfile
from pipeline.brat.validate import OVERLAP_TYPES, parse_annotation_conf
from pipeline.campaign.layout import DISAGREEMENT, DISCARD_REASON, DISCARD_REASONS, DISCARD_TYPE
from pipeline.paths import SymlinkError
from pipeline.schema import ANY_ENTITY, Schema
from pipeline.store import write_atomic
from pipeline.yamlfile import read_mapping

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config" / "brat"
DEFAULT_SETTINGS = CONFIG_DIR / "brat.yaml"
DEFAULT_TOOLS = CONFIG_DIR / "tools.conf"
CONF_FILES = ("annotation.conf", "visual.conf", "tools.conf", "kb_shortcuts.conf")
OVERLAP_KINDS = ("contain", "equal", "cross")


class BratConfigError(ValueError):
    """Invalid brat presentation settings; the message names the file."""


@dataclass(frozen=True)
class BratSettings:
    """Presentation settings (``config/brat/brat.yaml``).

    Attributes:
        composite_attribute: The entity attribute marking composite entities (``composite.attribute``).
        composite_label: Its label forms in ``visual.conf``, longest first (``composite.label``).
        composite_dash: The ``dashArray`` of a composite entity's border (``composite.dashArray``).
        composite_glyph: The glyph drawn after a composite entity's label; None for none
            (``composite.glyph``).
        labels: Type -> its label forms, longest first (``labels``); a type not listed is labelled by
            its name with ``_`` read as a space.
        colours: Entity type -> background colour (``colours``).
        relation_colours: Relation type -> arc colour (``relation_colours``).
        span_default: The ``SPAN_DEFAULT`` drawing of ``visual.conf`` (``span_default``).
        arc_default: The ``ARC_DEFAULT`` drawing of ``visual.conf`` (``arc_default``).
        kb_shortcuts: One-character key -> type (``kb_shortcuts``).
        overlap: The overlap kinds allowed between entities, among ``contain``, ``equal``, ``cross``
            (``overlap``).
        tools_conf: The ``tools.conf`` copied into collections.
        path: The settings file read (named by errors).
    """

    composite_attribute: str = "Composite"
    composite_label: tuple[str, ...] = ("Composite entity", "Composite")
    composite_dash: str = "3-3"
    composite_glyph: str | None = None
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    colours: dict[str, str] = field(default_factory=dict)
    relation_colours: dict[str, str] = field(default_factory=dict)
    span_default: dict[str, str] = field(default_factory=dict)
    arc_default: dict[str, str] = field(default_factory=dict)
    kb_shortcuts: dict[str, str] = field(default_factory=dict)
    overlap: tuple[str, ...] = OVERLAP_KINDS
    tools_conf: Path = DEFAULT_TOOLS
    path: str = ""


def _str_map(data: Any, name: str, where: str) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BratConfigError(f"{where}: {name} must be a mapping")
    return {str(k): str(v) for k, v in data.items()}


@yamlfile.checked_types(BratConfigError)
def load_settings(path: str | Path = DEFAULT_SETTINGS, tools_conf: str | Path | None = None) -> BratSettings:
    """Read the brat presentation settings.

    Args:
        path: The settings file (``config/brat/brat.yaml`` by default).
        tools_conf: The ``tools.conf`` to copy into collections; by default the one beside ``path``.

    Returns:
        The settings, defaults filled in for what the file leaves out.

    Raises:
        BratConfigError: If the file cannot be read or parsed, or a value has the wrong type or shape
            (a label with ``|``, an unknown overlap kind...); the message names the file.
    """
    p = Path(path)
    data = read_mapping(p, BratConfigError, "brat settings")
    comp = data.get("composite") or {}
    labels: dict[str, tuple[str, ...]] = {}
    for type_, forms in (data.get("labels") or {}).items():
        seq = [forms] if isinstance(forms, str) else list(forms or [])
        if not seq or not all(isinstance(f, str) and f.strip() and "|" not in f for f in seq):
            raise BratConfigError(f"{p}: labels.{type_} must be a list of non-empty strings without '|'")
        labels[str(type_)] = tuple(f.strip() for f in seq)
    overlap = tuple(str(o) for o in (data.get("overlap") or OVERLAP_KINDS))
    bad = [o for o in overlap if o not in OVERLAP_KINDS]
    if bad:
        raise BratConfigError(f"{p}: overlap kinds must be among {OVERLAP_KINDS}, got {bad}")
    label = comp.get("label") or ["Composite entity", "Composite"]
    glyph = comp.get("glyph")
    return BratSettings(
        composite_attribute=str(comp.get("attribute", "Composite")),
        composite_label=tuple(str(x) for x in ([label] if isinstance(label, str) else label)),
        composite_dash=str(comp.get("dashArray", "3-3")),
        composite_glyph=None if glyph is None else str(glyph),
        labels=labels,
        colours=_str_map(data.get("colours"), "colours", str(p)),
        relation_colours=_str_map(data.get("relation_colours"), "relation_colours", str(p)),
        span_default=_str_map(data.get("span_default"), "span_default", str(p)),
        arc_default=_str_map(data.get("arc_default"), "arc_default", str(p)),
        kb_shortcuts=_str_map(data.get("kb_shortcuts"), "kb_shortcuts", str(p)),
        overlap=overlap,
        tools_conf=Path(tools_conf) if tools_conf is not None else p.parent / "tools.conf",
        path=str(p),
    )


# --- annotation.conf -------------------------------------------------------------------------

_HEADER = (
    "# Generated by pipeline/brat/conf.py from {source}; edit the schema, not this file.\n"
    "# Indentation (one tab per level) gives the type hierarchy.\n"
)


def _depth_first(parent_of: dict[str, str | None]) -> list[tuple[str, int]]:
    """Types in file order with their depth (children right after their parent)."""
    children: dict[str | None, list[str]] = {}
    for t, p in parent_of.items():
        children.setdefault(p, []).append(t)
    out: list[tuple[str, int]] = []

    def walk(node: str | None, depth: int) -> None:
        for child in children.get(node, []):
            out.append((child, depth))
            walk(child, depth + 1)

    walk(None, 0)
    return out


def argument_types(schema: Schema, relation: str, role: str) -> str:
    """Write the argument type list of a relation role, as brat's ``annotation.conf`` needs it.

    Args:
        schema: The corpus schema.
        relation: The relation type.
        role: The argument role (``Arg1`` or ``Arg2``).

    Returns:
        ``<ENTITY>`` when every entity type is allowed, else ``A|B|...``: the allowed types with all
            their descendants listed (brat matches types literally).
    """
    spec = schema.relation_arguments.get(relation, {}).get(role, (ANY_ENTITY,))
    allowed = schema.allowed_arguments(relation, role)
    if ANY_ENTITY in spec or set(allowed) == set(schema.entity_parent):
        return ANY_ENTITY
    return "|".join(allowed)


def annotation_conf(schema: Schema, settings: BratSettings | None = None) -> str:
    """Generate the text of ``annotation.conf`` for a schema (see the module docstring).

    Args:
        schema: The corpus schema: entity and relation hierarchies, argument constraints.
        settings: The presentation settings (overlap kinds, composite attribute); read from
            ``config/brat/brat.yaml`` when None.

    Returns:
        The file's text, Unix (LF) line ends, ending with a newline.

    Raises:
        BratConfigError: If ``settings`` is None and the default settings file is invalid.
    """
    settings = settings or load_settings()
    lines = [_HEADER.format(source=Path(schema.path).name or "the schema").rstrip("\n"), "", "[entities]", ""]
    for type_, depth in _depth_first(schema.entity_parent):
        lines.append("\t" * depth + type_)
    lines += ["", "[relations]", ""]
    lines.append("# Argument types are listed with all their subtypes: brat matches them literally.")
    for rel, depth in _depth_first(schema.relation_parent):
        args = ", ".join(f"{role}:{argument_types(schema, rel, role)}" for role in ("Arg1", "Arg2"))
        lines.append("\t" * depth + f"{rel}\t{args}")
    lines += [
        "",
        "# Composite entities contain their key entity, may share its span, and discontiguous",
        "# ones interleave with other entities (brat counts that as crossing).",
        f"<OVERLAP>\tArg1:<ENTITY>, Arg2:<ENTITY>, <OVL-TYPE>:{'|'.join(settings.overlap)}",
        "",
        "[events]",
        "",
        "# none: PGxCorpus annotates entities and binary relations only",
        "",
        "[attributes]",
        "",
        "# Relation modality is not an attribute: it is the relation's note (hyp, neg; pipeline/brat/modality.py),",
        "# as brat's client cannot show or edit attributes on relations.",
        "# Marks pre-annotated composite entities (drawn dashed, see visual.conf); not part of the corpus",
        f"{settings.composite_attribute}\tArg:<ENTITY>",
    ]
    return "\n".join(lines) + "\n"


# --- visual.conf -----------------------------------------------------------------------------

def _drawing(values: dict[str, str]) -> str:
    return ", ".join(f"{k}:{v}" for k, v in values.items())


def visual_conf(schema: Schema, settings: BratSettings | None = None) -> str:
    """Generate the text of ``visual.conf``: labels, colours and the dashed composite border.

    Args:
        schema: The corpus schema, whose entity and relation types are labelled.
        settings: The presentation settings; read from ``config/brat/brat.yaml`` when None.

    Returns:
        The file's text, Unix (LF) line ends, ending with a newline.

    Raises:
        BratConfigError: If ``settings`` is None and the default settings file is invalid.
    """
    settings = settings or load_settings()
    lines = [
        "# Generated by pipeline/brat/conf.py from config/brat/brat.yaml; edit that file, not this one.",
        "",
        "[labels]",
        "",
    ]
    names = schema.entity_types() + schema.relation_types()
    for name in names:
        forms = settings.labels.get(name) or (name.replace("_", " "),)
        lines.append(" | ".join((name, *forms)))
    lines.append(" | ".join((settings.composite_attribute, *settings.composite_label)))
    lines += ["", "[drawing]", ""]
    if settings.span_default:
        lines.append(f"SPAN_DEFAULT\t{_drawing(settings.span_default)}")
    if settings.arc_default:
        lines.append(f"ARC_DEFAULT\t{_drawing(settings.arc_default)}")
    lines.append("ATTRIBUTE_DEFAULT\tglyph:*")
    lines.append("")
    for type_ in schema.entity_types():
        if type_ in settings.colours:
            lines.append(f"{type_}\tbgColor:{settings.colours[type_]}")
    lines.append("")
    for rel in schema.relation_types():
        if rel in settings.relation_colours:
            lines.append(f"{rel}\tcolor:{settings.relation_colours[rel]}")
    lines += [
        "",
        "# Composite entities: dashed box border (brat applies an attribute's dashArray to the span box)",
        f"{settings.composite_attribute}\tdashArray:{settings.composite_dash}, "
        f"glyph:{settings.composite_glyph if settings.composite_glyph else '<NONE>'}",
    ]
    return "\n".join(lines) + "\n"


# --- kb_shortcuts.conf and tools.conf --------------------------------------------------------

def kb_shortcuts_conf(schema: Schema, settings: BratSettings | None = None) -> str:
    """Generate the text of ``kb_shortcuts.conf`` from the settings' ``kb_shortcuts``.

    Args:
        schema: The corpus schema; every shortcut must name one of its entity or relation types.
        settings: The presentation settings; read from ``config/brat/brat.yaml`` when None.

    Returns:
        The file's text, one ``KEY<TAB>type`` line per shortcut, ending with a newline.

    Raises:
        BratConfigError: If a shortcut names an unknown type or its key is not one character.
    """
    settings = settings or load_settings()
    lines = ["# Generated by pipeline/brat/conf.py from config/brat/brat.yaml.", ""]
    for key, type_ in settings.kb_shortcuts.items():
        if type_ not in schema.entity_parent and type_ not in schema.relation_parent:
            raise BratConfigError(f"{settings.path}: kb_shortcuts.{key} names unknown type {type_!r}")
        if len(key) != 1:
            raise BratConfigError(f"{settings.path}: kb_shortcuts key {key!r} must be one character")
        lines.append(f"{key}\t{type_}")
    return "\n".join(lines) + "\n"


def tools_conf(settings: BratSettings | None = None) -> str:
    """Read the ``tools.conf`` that collections get (copied as it is).

    Args:
        settings: The presentation settings, which locate the file; read from
            ``config/brat/brat.yaml`` when None.

    Returns:
        The file's text.

    Raises:
        OSError: If the file cannot be read.
    """
    settings = settings or load_settings()
    return settings.tools_conf.read_text(encoding="utf-8")


def write_conf_files(
    out_dir: str | Path, schema: Schema, settings: BratSettings | None = None
) -> list[Path]:
    """Write the four brat configuration files of a schema into a directory.

    Each file is written atomically (a temporary beside it, then renamed), UTF-8 with Unix (LF) line
    ends; the texts are all generated before the first is written, so an invalid setting writes no file.

    Args:
        out_dir: The collection directory, created if missing.
        schema: The corpus schema.
        settings: The presentation settings; read from ``config/brat/brat.yaml`` when None.

    Returns:
        The paths written: ``annotation.conf``, ``visual.conf``, ``tools.conf``, ``kb_shortcuts.conf``.

    Raises:
        BratConfigError: If the settings are invalid (e.g. a shortcut to an unknown type).
    """
    settings = settings or load_settings()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    texts = {
        "annotation.conf": annotation_conf(schema, settings),
        "visual.conf": visual_conf(schema, settings),
        "tools.conf": tools_conf(settings),
        "kb_shortcuts.conf": kb_shortcuts_conf(schema, settings),
    }
    paths = []
    for name in CONF_FILES:
        path = out / name
        write_atomic(path, texts[name].encode("utf-8"))  # beside the target, then renamed
        paths.append(path)
    return paths


def copy_conf_files(src_dir: str | Path, dst_dir: str | Path, names: Sequence[str] = CONF_FILES) -> list[Path]:
    """Copy the configuration files present in one directory to another (byte for byte).

    A configuration file that is a symbolic link is never followed: its target would be copied into
    every collection made from it.  Each copy is written atomically; a name missing from ``src_dir``
    is skipped.

    Args:
        src_dir: The collection whose configuration is copied.
        dst_dir: The target directory, created if missing.
        names: The file names to copy (the four brat configuration files by default).

    Returns:
        The paths written, in the order of ``names``.

    Raises:
        SymlinkError: If one of the files in ``src_dir`` is a symbolic link
            ([`SymlinkError`][pipeline.paths.SymlinkError]), raised before anything is copied.
    """
    src, dst = Path(src_dir), Path(dst_dir)
    links = [src / name for name in names if (src / name).is_symlink()]
    if links:
        raise SymlinkError(f"{links[0]}: symbolic link inside the collection, not followed (replace it by the "
                           "file itself)")
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for name in names:
        if (src / name).is_file():
            write_atomic(dst / name, (src / name).read_bytes())
            out.append(dst / name)
    return out


# --- campaign collections --------------------------------------------------------------------
# A campaign collection (pipeline/campaign) extends the collection's configuration with the types the
# annotators' decisions are recorded with: the Discard entity and its Reason, the Done marker, and in
# phase 2 the Disagreement attribute of entities whose values name the phase-1 annotators of that
# collection and the generated Disputed_<type> relation types.  The additions are appended to the sections
# of the existing files, so a collection built from any schema keeps its own types; attributes on relations
# (the modality attributes of older configurations) are left out, as brat's client cannot show them.

CAMPAIGN_DONE_TYPE = "Done"
CAMPAIGN_KEYS = {"X": "Discard", "Z": CAMPAIGN_DONE_TYPE}


def _append_to_section(text: str, section: str, lines: Sequence[str]) -> str:
    """``text`` with ``lines`` added at the end of ``[section]`` (a new section at the end if absent)."""
    rows = text.rstrip("\n").split("\n")
    start = next((i for i, r in enumerate(rows) if r.strip() == f"[{section}]"), None)
    if start is None:
        return "\n".join([*rows, "", f"[{section}]", "", *lines]) + "\n"
    end = next((i for i in range(start + 1, len(rows)) if rows[i].strip().startswith("[")), len(rows))
    while end > start + 1 and not rows[end - 1].strip():
        end -= 1
    return "\n".join([*rows[:end], *lines, *rows[end:]]) + "\n"


DISPUTED_PREFIX = "Disputed_"
"""Phase 2: a relation only one annotator drew, or drew with another modality, has the generated type
``Disputed_<type>`` (a valid brat type name: letters, digits, ``_``; no trailing digit, which brat's client
would strip when it looks up labels), drawn dashed red and labelled ``≠ <label>`` on the arc."""
DISPUTED_COLOUR = "#d62728"


def disputed_type(relation_type: str) -> str:
    """Name the generated phase-2 type of a relation type.

    Args:
        relation_type: A relation type of the schema.

    Returns:
        ``Disputed_<type>`` (``influences`` -> ``Disputed_influences``).
    """
    return DISPUTED_PREFIX + relation_type


def undisputed_type(type_: str) -> str | None:
    """Name the relation type a generated phase-2 type stands for.

    Args:
        type_: A relation type, generated or not.

    Returns:
        The type after the ``Disputed_`` prefix, or None when ``type_`` is not a generated type.
    """
    return type_[len(DISPUTED_PREFIX):] if type_.startswith(DISPUTED_PREFIX) and len(type_) > len(DISPUTED_PREFIX) \
        else None


def _section_rows(text: str, section: str) -> tuple[list[str], int, int]:
    """The lines of ``text`` and the [start, end) line range of ``[section]``'s body (empty range if absent)."""
    rows = text.rstrip("\n").split("\n")
    start = next((i for i, r in enumerate(rows) if r.strip() == f"[{section}]"), None)
    if start is None:
        return rows, len(rows), len(rows)
    end = next((i for i in range(start + 1, len(rows)) if rows[i].strip().startswith("[")), len(rows))
    return rows, start + 1, end


def relation_attribute_names(base: str) -> list[str]:
    """List the attributes of an ``annotation.conf`` that may sit on a relation.

    These are the legacy modality attributes ``Negated``/``Hypothetical`` of older campaigns: modality is
    now a relation note.

    Args:
        base: The text of an ``annotation.conf``.

    Returns:
        The names of the attributes whose ``Arg:`` is ``<RELATION>``, ``<ANY>`` or a relation type, in
            file order.
    """
    conf, _ = parse_annotation_conf(base)
    relation_targets = {"<RELATION>", "<ANY>"} | conf.relation_types
    return [a.name for a in conf.attributes.values() if relation_targets & set(a.targets)]


def _drop_names(text: str, sections: Sequence[str], names: Sequence[str], separator: str) -> str:
    """``text`` without the lines of ``sections`` whose first field (up to ``separator``) is one of ``names``."""
    if not names:
        return text
    for section in sections:
        rows, start, end = _section_rows(text, section)
        kept = [r for r in rows[start:end] if r.split(separator, 1)[0].strip() not in names]
        text = "\n".join([*rows[:start], *kept, *rows[end:]]) + "\n"
    return text


def _relation_specs(base: str) -> list[tuple[str, str]]:
    """(type, ``Arg1:A|B, Arg2:C``) of the binary relation types of an ``annotation.conf`` text, in file order."""
    conf, _ = parse_annotation_conf(base)
    out = []
    for r in conf.relations:
        if r.type in OVERLAP_TYPES or r.unused or len(r.roles) != 2 or r.type.startswith(DISPUTED_PREFIX):
            continue
        out.append((r.type, ", ".join(f"{role}:{'|'.join(types)}" for role, types in zip(r.roles, r.types,
                                                                                             strict=True))))
    return out


def campaign_annotation_conf(base: str, disagreement: Sequence[str] = ()) -> str:
    """Extend an ``annotation.conf`` text with the campaign types.

    Adds the entity types ``Discard`` (with the ``Reason`` attribute, values
    the campaign's ``DISCARD_REASONS``) and ``Done``, overlap
    rules letting them lie on any span, and, in phase 2 (``disagreement``
    names the annotators): the ``Disagreement`` attribute of *entities* with
    those names as values, and one generated relation type
    ([`disputed_type`][pipeline.brat.conf.disputed_type]) per relation type, with the same arguments.
    Attributes on relations in ``base`` (the legacy ``Negated``/``Hypothetical``)
    are left out: brat's client cannot show them, and modality is a note.

    Args:
        base: The text of the collection's ``annotation.conf``.
        disagreement: Phase 2: the ids of the phase-1 annotators (the ``Disagreement`` values); empty
            in phase 1.

    Returns:
        The extended text, its own types kept.
    """
    legacy = relation_attribute_names(base)
    specs = _relation_specs(base)
    text = _drop_names(base, ("attributes",), legacy, "\t")
    markers = f"{DISCARD_TYPE}|{CAMPAIGN_DONE_TYPE}"
    text = _append_to_section(text, "entities", [
        "",
        "# Campaign decisions (pipeline/campaign): mark any span of the sentence",
        DISCARD_TYPE,
        CAMPAIGN_DONE_TYPE,
    ])
    relations = [
        "",
        "# The campaign markers may lie on any span, whatever else is annotated there",
        f"<OVERLAP>\tArg1:{markers}, Arg2:<ENTITY>, <OVL-TYPE>:<ANY>",
        f"<OVERLAP>\tArg1:<ENTITY>, Arg2:{markers}, <OVL-TYPE>:<ANY>",
    ]
    if disagreement:
        relations += ["", "# Phase 2: relations the annotators disagree on (only one drew it, or not with the same",
                      "# modality); retype to the real type to accept, delete to reject"]
        relations += [f"{disputed_type(rel)}\t{args}" for rel, args in specs]
    text = _append_to_section(text, "relations", relations)
    attrs = ["", "# Why a sentence is discarded",
             f"{DISCARD_REASON}\tArg:{DISCARD_TYPE}, Value:{'|'.join(DISCARD_REASONS)}"]
    if disagreement:
        attrs += ["# Phase 2: an entity only one annotator made (named); remove to accept, delete the entity to reject",
                  f"{DISAGREEMENT}\tArg:<ENTITY>, Value:{'|'.join(disagreement)}"]
    return _append_to_section(text, "attributes", attrs)


def _labels(visual: str) -> dict[str, list[str]]:
    rows, start, end = _section_rows(visual, "labels")
    out = {}
    for row in rows[start:end]:
        if row.strip() and not row.lstrip().startswith("#"):
            parts = [p.strip() for p in row.split("|")]
            out[parts[0]] = parts[1:]
    return out


def campaign_visual_conf(base: str, disagreement: Sequence[str] = (), relation_types: Sequence[str] = (),
                         legacy: Sequence[str] = ()) -> str:
    """Extend a ``visual.conf`` text with labels and drawing of the campaign types.

    ``Discard`` is drawn white on black, ``Done`` grey; a ``Disagreement``
    entity gets a dotted border and the glyph ``≠name`` after its label; in
    phase 2, the generated type of each of ``relation_types`` is labelled
    ``≠ <label>`` (each short form too) and drawn as a dashed red arc.  Labels
    and drawing of ``legacy`` (relation attributes left out of
    ``annotation.conf``) are dropped.

    Args:
        base: The text of the collection's ``visual.conf``.
        disagreement: Phase 2: the ids of the phase-1 annotators; empty in phase 1.
        relation_types: The relation types of the collection's ``annotation.conf`` (phase 2: each gets
            a disputed type).
        legacy: The relation attributes left out of ``annotation.conf``
            ([`relation_attribute_names`][pipeline.brat.conf.relation_attribute_names]).

    Returns:
        The extended text.
    """
    text = _drop_names(base, ("labels",), legacy, "|")
    text = _drop_names(text, ("drawing",), legacy, "\t")
    known = _labels(base)
    labels = [
        f"{DISCARD_TYPE} | Discard sentence | Discard | X",
        f"{CAMPAIGN_DONE_TYPE} | Done | OK",
        f"{DISCARD_REASON} | Discard reason | Reason",
    ]
    if disagreement:
        labels.append(f"{DISAGREEMENT} | Disagreement | Disagr")
        for rel in relation_types:
            forms = known.get(rel) or [rel.replace("_", " ")]
            labels.append(" | ".join([disputed_type(rel), *(f"≠ {f}" for f in forms), "≠"]))
    text = _append_to_section(text, "labels", labels)
    lines = [
        "",
        "# Campaign decisions",
        f"{DISCARD_TYPE}\tbgColor:#000000, fgColor:white, borderColor:red",
        f"{CAMPAIGN_DONE_TYPE}\tbgColor:#d0d0d0, fgColor:black",
        f"{DISCARD_REASON}\tglyph:" + "|".join(f"({r})" for r in DISCARD_REASONS),
    ]
    if disagreement:
        lines += ["# Phase 2: entities only one annotator made (dotted border, ≠annotator after the label)",
                  f"{DISAGREEMENT}\tdashArray:1-2, glyph:" + "|".join(f"≠{name}" for name in disagreement),
                  "# Phase 2: disputed relations (dashed red arcs labelled ≠ type)"]
        lines += [f"{disputed_type(rel)}\tcolor:{DISPUTED_COLOUR}, dashArray:3-3" for rel in relation_types]
    return _append_to_section(text, "drawing", lines)


def campaign_kb_shortcuts_conf(base: str) -> str:
    """Extend a ``kb_shortcuts.conf`` text with keys for ``Discard`` (``X``) and ``Done`` (``Z``).

    Args:
        base: The text of the collection's ``kb_shortcuts.conf``.

    Returns:
        The text with the two keys added, each only when ``base`` does not bind that key already.
    """
    used = {line.split("\t", 1)[0] for line in base.splitlines() if line.strip() and not line.startswith("#")}
    extra = [f"{key}\t{type_}" for key, type_ in CAMPAIGN_KEYS.items() if key not in used]
    return base.rstrip("\n") + "\n" + "".join(line + "\n" for line in extra)


def write_campaign_conf_files(
    src_dir: str | Path, dst_dir: str | Path, disagreement: Sequence[str] = ()
) -> list[Path]:
    """Copy a collection's configuration to a campaign collection, with the campaign types added.

    ``annotation.conf``, ``visual.conf`` and ``kb_shortcuts.conf`` are extended
    ([`campaign_annotation_conf`][pipeline.brat.conf.campaign_annotation_conf],
    [`campaign_visual_conf`][pipeline.brat.conf.campaign_visual_conf],
    [`campaign_kb_shortcuts_conf`][pipeline.brat.conf.campaign_kb_shortcuts_conf]), ``tools.conf`` copied
    as it is; a file missing from ``src_dir`` is skipped.  Each file is written atomically.

    Args:
        src_dir: The collection whose configuration is extended.
        dst_dir: The campaign collection, created if missing.
        disagreement: Phase 2: the ids of the phase-1 annotators; empty in phase 1.

    Returns:
        The paths written, in the order ``annotation.conf``, ``visual.conf``, ``tools.conf``,
            ``kb_shortcuts.conf``.
    """
    src, dst = Path(src_dir), Path(dst_dir)
    dst.mkdir(parents=True, exist_ok=True)
    base = (src / "annotation.conf").read_text(encoding="utf-8") if (src / "annotation.conf").is_file() else ""
    relation_types = [rel for rel, _ in _relation_specs(base)] if base else []
    legacy = relation_attribute_names(base) if base else []
    makers = {
        "annotation.conf": lambda t: campaign_annotation_conf(t, disagreement),
        "visual.conf": lambda t: campaign_visual_conf(t, disagreement, relation_types, legacy),
        "kb_shortcuts.conf": campaign_kb_shortcuts_conf,
    }
    out = []
    for name in CONF_FILES:
        if not (src / name).is_file():
            continue
        text = (src / name).read_text(encoding="utf-8")
        maker = makers.get(name)
        write_atomic(dst / name, (maker(text) if maker else text).encode("utf-8"))
        out.append(dst / name)
    return out
