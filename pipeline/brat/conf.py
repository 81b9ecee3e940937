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

from pipeline import durable, resources, yamlfile
from pipeline.errors import InputError
from pipeline.paths import SymlinkError
from pipeline.schema import ANY_ENTITY, Schema
from pipeline.yamlfile import read_mapping

CONFIG_DIR = resources.config_file("brat")
DEFAULT_SETTINGS = CONFIG_DIR / "brat.yaml"
DEFAULT_TOOLS = CONFIG_DIR / "tools.conf"
CONF_FILES = ("annotation.conf", "visual.conf", "tools.conf", "kb_shortcuts.conf")
OVERLAP_KINDS = ("contain", "equal", "cross")


class BratConfigError(InputError):
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
        durable.replace_file(path, texts[name].encode("utf-8"))  # beside the target, then renamed
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
            durable.replace_file(dst / name, (src / name).read_bytes())
            out.append(dst / name)
    return out
