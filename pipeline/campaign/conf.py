"""The campaign's brat configuration: the configuration of a collection extended with the campaign types.

[`write_campaign_conf_files`][pipeline.campaign.conf.write_campaign_conf_files] copies a collection's
configuration (written by [`pipeline.brat.conf`][pipeline.brat.conf]) with the types the annotators'
decisions are recorded with (their names are in [`pipeline.campaign.layout`][pipeline.campaign.layout]).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline import durable
from pipeline.brat.conf import CONF_FILES
from pipeline.brat.validate import OVERLAP_TYPES, parse_annotation_conf
from pipeline.campaign.layout import DISAGREEMENT, DISCARD_REASON, DISCARD_REASONS, DISCARD_TYPE

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
    ([`disputed_type`][pipeline.campaign.conf.disputed_type]) per relation type, with the same arguments.
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
            ([`relation_attribute_names`][pipeline.campaign.conf.relation_attribute_names]).

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
    ([`campaign_annotation_conf`][pipeline.campaign.conf.campaign_annotation_conf],
    [`campaign_visual_conf`][pipeline.campaign.conf.campaign_visual_conf],
    [`campaign_kb_shortcuts_conf`][pipeline.campaign.conf.campaign_kb_shortcuts_conf]), ``tools.conf`` copied
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
        durable.replace_file(dst / name, (maker(text) if maker else text).encode("utf-8"))
        out.append(dst / name)
    return out
