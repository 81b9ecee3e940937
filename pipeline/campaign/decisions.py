"""Homogenization decisions (phase 3) applied in bulk to a brat collection: ``pgx-corpus decisions apply``.

A decisions file is YAML with up to three lists; every entry may carry a free-text ``why`` (kept in the
file, for the record) and ``documents`` (a list of document names the entry is limited to; quote them,
as YAML reads an unquoted ``123_4`` as a number)::

    retype:                        # give a term another entity type
      - term: drug response        # the entity's text (fragments joined by a space), case-insensitive
        from: Phenotype            # optional: only entities of this type
        to: Pharmacodynamic_phenotype
      - pattern: "(?i)plasma .* levels?"   # or a regex that must match the whole entity text
        to: Pharmacokinetic_phenotype
    remove:                        # delete a term: the entity, its relations and their attributes/notes
      - term: patients
        type: Phenotype            # optional: only entities of this type
    relations:                     # remap a relation type; `to: null` deletes those relations
      - from: metabolizes
        to: influences
        arg1: Chemical             # optional: only when Arg1 is this type (or a subtype) ...
        arg2: Gene_or_protein      # ... and Arg2 this type (or a subtype)

Entries are applied in file order: all ``retype`` entries, then ``remove``, then ``relations``.  Types are
checked against the schema before anything is touched.  A relation that becomes identical to another one
of its document is merged (see [`merge_duplicate_relations`][pipeline.campaign.finalize.merge_duplicate_relations]).

[`apply_decisions`][pipeline.campaign.decisions.apply_decisions] returns, per changed document, the old and new ``.ann``
text; nothing else is rewritten (unchanged documents keep their bytes).
[`unified_diff`][pipeline.campaign.decisions.unified_diff] renders the change, and
[`write_changes`][pipeline.campaign.decisions.write_changes] writes all changed ``.ann`` files atomically (every new
file is written beside its target first, then each is renamed over it).  Applying the same file twice changes nothing
the second time. A change that would make a document invalid for the collection's ``annotation.conf`` is reported
(``file:line: message``) and nothing is written.

Count keys: ``documents``, ``documents_changed``, ``retyped``, ``removed``, ``removed_dependants``,
``relations_remapped``, ``relations_deleted``, ``relations_merged``, ``decision:<kind>:<index>`` (edits per
entry, index from 1 within its list), ``matched:retype:<index>``.  An entry that matched nothing is
logged as a warning ([`unmatched_entries`][pipeline.campaign.decisions.unmatched_entries]).
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipeline import durable, store, yamlfile
from pipeline.brat import validate as validate_mod
from pipeline.brat.standoff import BratDocument, BratTextError, dumps, parse_ann, read_text
from pipeline.campaign.finalize import REPORT_JSON, doc_key, merge_duplicate_relations, remove_annotations
from pipeline.errors import InputError
from pipeline.paths import list_files
from pipeline.schema import Schema
from pipeline.yamlfile import read_mapping

log = logging.getLogger(__name__)

KINDS = ("retype", "remove", "relations")


class DecisionsError(InputError):
    """A decisions file that cannot be applied; the message names the file (and entry)."""


@dataclass(frozen=True)
class TermSelector:
    """Which entities a ``retype`` or ``remove`` entry applies to.

    Exactly one of ``term`` and ``pattern`` is set.

    Attributes:
        term: The entity text (fragments joined by a space, whitespace collapsed), compared
            case-insensitively.
        pattern: A regular expression that must match the whole entity text (whitespace collapsed).
        type: Only entities of this type (``from`` of a ``retype`` entry, ``type`` of a ``remove`` entry).
        documents: Only in these documents; every document when ``None``.
    """
    term: str | None = None
    pattern: re.Pattern[str] | None = None
    type: str | None = None
    documents: frozenset[str] | None = None

    def selects(self, doc: BratDocument, type_: str, text: str) -> bool:
        """Tell whether an entity of a document is selected.

        Args:
            doc: The document the entity belongs to (its name is checked against ``documents``).
            type_: The entity's type.
            text: The entity's text (fragments joined by a space).

        Returns:
            True when the entity is selected.
        """
        if self.documents is not None and doc.name not in self.documents:
            return False
        if self.type is not None and type_ != self.type:
            return False
        norm = " ".join(text.split())
        if self.term is not None:
            return norm.casefold() == self.term.casefold()
        assert self.pattern is not None
        return self.pattern.fullmatch(norm) is not None


@dataclass(frozen=True)
class RelationRule:
    """A ``relations`` entry: remap or delete the relations of one type.

    Attributes:
        source: The relation type matched (``from``).
        target: Its new type (``to``), or ``None`` to delete those relations.
        arg1: Only when Arg1 is an entity of this type or a subtype.
        arg2: Only when Arg2 is an entity of this type or a subtype.
        documents: Only in these documents; every document when ``None``.
    """
    source: str
    target: str | None
    arg1: str | None = None
    arg2: str | None = None
    documents: frozenset[str] | None = None


@dataclass
class Decisions:
    """A checked decisions file (see the module docstring), its entries in file order.

    Attributes:
        retype: ``(selector, new type)`` per ``retype`` entry.
        remove: The selector of each ``remove`` entry.
        relations: The ``relations`` entries.
    """
    retype: list[tuple[TermSelector, str]] = field(default_factory=list)
    remove: list[TermSelector] = field(default_factory=list)
    relations: list[RelationRule] = field(default_factory=list)


def _entity_type(value: Any, schema: Schema, where: str) -> str:
    if not isinstance(value, str) or value not in schema.entity_parent:
        raise DecisionsError(f"{where}: {value!r} is not an entity type of the schema")
    return value


def _selector(entry: Mapping[str, Any], schema: Schema, where: str, type_key: str) -> TermSelector:
    term, pattern = entry.get("term"), entry.get("pattern")
    if (term is None) == (pattern is None):
        raise DecisionsError(f"{where}: give exactly one of term or pattern")
    compiled = None
    if pattern is not None:
        try:
            compiled = re.compile(str(pattern))
        except re.error as exc:
            raise DecisionsError(f"{where}: bad pattern {pattern!r}: {exc}") from exc
    docs = entry.get("documents")
    if docs is not None and (not isinstance(docs, list) or not all(isinstance(d, str) for d in docs)):
        raise DecisionsError(f"{where}: documents must be a list of quoted document names "
                             "(YAML reads an unquoted 123_4 as the number 1234)")
    type_ = entry.get(type_key)
    return TermSelector(
        term=" ".join(str(term).split()) if term is not None else None,
        pattern=compiled,
        type=_entity_type(type_, schema, where) if type_ is not None else None,
        documents=frozenset(docs) if docs is not None else None,
    )


#: keys whose value is free text (a number is read as its text); every other key but ``documents`` names a type
_TEXT_KEYS = frozenset({"term", "pattern", "why"})


def _check_value_types(entry: Mapping[str, Any], where: str) -> None:
    """DecisionsError unless every value is a scalar of the expected kind.

    A list or mapping where a term or a type is expected crashed later, unhashable, or expanded an alias
    bomb when printed.
    """
    for key in sorted(entry, key=str):
        value = entry[key]
        if key == "documents" or value is None:
            continue
        if key in _TEXT_KEYS:
            ok = isinstance(value, str | int | float) and not isinstance(value, bool)
            expected = "a string"
        else:
            ok = isinstance(value, str)
            expected = "a type name (a string)"
        if not ok:
            raise DecisionsError(f"{where}: {key} must be {expected}, got {type(value).__name__}")


@yamlfile.checked_types(DecisionsError)
def load_decisions(path: str | Path, schema: Schema) -> Decisions:
    """Read and check a decisions file (see the module docstring).

    Args:
        path: The YAML decisions file.
        schema: The schema every type named in the file is checked against.

    Returns:
        The decisions.

    Raises:
        DecisionsError: If the file cannot be read or parsed, has an unknown key, an entry of the wrong
            shape, a bad pattern, or a type that is not in the schema; the message names the file and entry.
    """
    p = Path(path)
    data = read_mapping(p, DecisionsError, "decisions", f"a mapping with {', '.join(KINDS)}")
    unknown = set(data) - set(KINDS)
    if unknown:
        raise DecisionsError(f"{p}: unknown key(s) {sorted(unknown, key=str)} (expected {', '.join(KINDS)})")
    out = Decisions()
    allowed = {"retype": {"term", "pattern", "from", "to", "why", "documents"},
               "remove": {"term", "pattern", "type", "why", "documents"},
               "relations": {"from", "to", "arg1", "arg2", "why", "documents"}}
    for kind in KINDS:
        entries = data.get(kind) or []
        if not isinstance(entries, list):
            raise DecisionsError(f"{p}: {kind} must be a list")
        for i, entry in enumerate(entries, 1):
            where = f"{p}: {kind} entry {i}"
            if not isinstance(entry, Mapping):
                raise DecisionsError(f"{where}: must be a mapping")
            extra = set(entry) - allowed[kind]
            if extra:
                raise DecisionsError(f"{where}: unknown key(s) {sorted(extra, key=str)}")
            _check_value_types(entry, where)
            if kind == "retype":
                if "to" not in entry:
                    raise DecisionsError(f"{where}: needs to")
                out.retype.append((_selector(entry, schema, where, "from"), _entity_type(entry["to"], schema, where)))
            elif kind == "remove":
                out.remove.append(_selector(entry, schema, where, "type"))
            else:
                source, target = entry.get("from"), entry.get("to", "")
                if source not in schema.relation_parent:
                    raise DecisionsError(f"{where}: from {source!r} is not a relation type of the schema")
                if target is not None and target not in schema.relation_parent:
                    raise DecisionsError(f"{where}: to {target!r} is not a relation type of the schema (null deletes)")
                docs = _selector({"term": "", "documents": entry.get("documents")}, schema, where, "type").documents
                out.relations.append(RelationRule(
                    source, target,
                    _entity_type(entry["arg1"], schema, where) if entry.get("arg1") is not None else None,
                    _entity_type(entry["arg2"], schema, where) if entry.get("arg2") is not None else None,
                    docs,
                ))
    return out


def _text(doc: BratDocument, frags: Sequence[tuple[int, int]], fallback: str) -> str:
    return " ".join(doc.text[s:e] for s, e in frags) if doc.text else fallback


def apply_to_document(doc: BratDocument, decisions: Decisions, schema: Schema,
                      counts: Counter[str] | None = None) -> BratDocument:
    """Apply decisions to one document: all ``retype`` entries, then ``remove``, then ``relations``.

    Duplicate relations are merged at the end.  Offsets are not changed.

    Args:
        doc: The document; left unchanged.
        decisions: The decisions.
        schema: The schema, for the subtypes of a relation rule's ``arg1``/``arg2``.
        counts: Counters updated in place (see the module docstring for the keys); a new one when ``None``.

    Returns:
        A new document with the decisions applied.
    """
    counts = counts if counts is not None else Counter()
    textbounds = list(doc.textbounds)
    for i, (sel, to) in enumerate(decisions.retype, 1):
        for k, t in enumerate(textbounds):
            if not sel.selects(doc, t.type, _text(doc, t.fragments, t.text)):
                continue
            counts[f"matched:retype:{i}"] += 1  # already of type `to` (applied before) still matches
            if t.type != to:
                textbounds[k] = replace(t, type=to)
                counts["retyped"] += 1
                counts[f"decision:retype:{i}"] += 1
    doc = replace(doc, textbounds=textbounds)
    for i, sel in enumerate(decisions.remove, 1):
        ids = [t.id for t in doc.textbounds if sel.selects(doc, t.type, _text(doc, t.fragments, t.text))]
        if ids:
            before = sum(1 for _ in doc.ids())
            doc, _gone = remove_annotations(doc, ids)
            counts["removed"] += len(ids)
            counts["removed_dependants"] += before - sum(1 for _ in doc.ids()) - len(ids)
            counts[f"decision:remove:{i}"] += len(ids)
    types = {t.id: t.type for t in doc.textbounds}
    relations = list(doc.relations)
    deleted: list[str] = []
    for i, rule in enumerate(decisions.relations, 1):
        if rule.documents is not None and doc.name not in rule.documents:
            continue
        for k, r in enumerate(relations):
            if r.type != rule.source or r.id in deleted:
                continue
            a1, a2 = types.get(r.arg("Arg1") or ""), types.get(r.arg("Arg2") or "")
            if rule.arg1 is not None and not (a1 and schema.is_a(a1, rule.arg1)):
                continue
            if rule.arg2 is not None and not (a2 and schema.is_a(a2, rule.arg2)):
                continue
            counts[f"decision:relations:{i}"] += 1
            if rule.target is None:
                deleted.append(r.id)
                counts["relations_deleted"] += 1
            else:
                relations[k] = replace(r, type=rule.target)
                counts["relations_remapped"] += 1
    doc = replace(doc, relations=relations)
    if deleted:
        doc = remove_annotations(doc, deleted)[0]
    return merge_duplicate_relations(doc, counts)


@dataclass
class Change:
    """The change decisions make to one ``.ann`` file.

    Attributes:
        name: The brat document name.
        path: The ``.ann`` file.
        old: Its text before (``""`` when it did not exist).
        new: Its text after.
    """
    name: str
    path: Path
    old: str
    new: str


def apply_decisions(directory: str | Path, decisions: Decisions, schema: Schema,
                    counts: Counter[str] | None = None) -> tuple[list[Change], list[str]]:
    """Compute the changes decisions make to the ``.ann`` files of a collection; nothing is written.

    Symbolic links are never followed (reported as problems).  An entry that matched nothing is logged
    as a warning.

    Args:
        directory: The brat collection (its ``annotation.conf``, the nearest one up, is used to validate).
        decisions: The decisions.
        schema: The schema.
        counts: Counters updated in place (see the module docstring for the keys); a new one when ``None``.

    Returns:
        The changes, in document order, and the problems (``file:line: message``): parse issues of the
        input, unreadable documents, symbolic links, and validation failures of a changed document
        against the collection's ``annotation.conf``.  The caller writes nothing when there are any.

    Raises:
        FileNotFoundError: If ``directory`` is not a directory.
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    counts = counts if counts is not None else Counter()
    changes: list[Change] = []
    problems: list[str] = []
    conf_path = validate_mod.find_conf(root)
    conf = (validate_mod.parse_annotation_conf(conf_path.read_text(encoding="utf-8"), str(conf_path))[0]
            if conf_path else None)
    listing = list_files(root, (".txt", ".ann"))
    problems += listing.problems()  # never followed: decisions rewrite .ann files in place
    links = set(listing.symlinks)
    txts = [p for p in listing.files if p.suffix == ".txt" and p.with_suffix(".ann") not in links]
    for txt in sorted(txts, key=lambda p: doc_key(p.stem)):
        ann = txt.with_suffix(".ann")
        try:
            old = read_text(ann) if ann.exists() else ""
            text = read_text(txt)
        except BratTextError as exc:
            problems.append(f"{exc} (document left as it is)")
            continue
        except OSError as exc:
            problems.append(f"{ann}:0: cannot read the document: {exc}")
            continue
        doc, issues = parse_ann(txt.stem, text, old, str(ann))
        counts["documents"] += 1
        problems += [str(i) for i in issues]
        new_doc = apply_to_document(doc, decisions, schema, counts)
        if new_doc == doc:
            continue
        new = dumps(new_doc)
        if new == old:
            continue
        counts["documents_changed"] += 1
        if conf is not None:
            reparsed, _ = parse_ann(txt.stem, doc.text, new, str(ann) + " (after decisions)")
            problems += [str(p) for p in validate_mod.validate_document(reparsed, new, conf,
                                                                       str(ann) + " (after decisions)")]
        changes.append(Change(txt.stem, ann, old, new))
    for message in unmatched_entries(decisions, counts):
        log.warning("%s: %s", root, message)
    return changes, problems


def _describe(sel: TermSelector) -> str:
    return f"term {sel.term!r}" if sel.term is not None else f"pattern {sel.pattern.pattern if sel.pattern else ''!r}"


def unmatched_entries(decisions: Decisions, counts: Counter[str]) -> list[str]:
    """List the decisions entries that matched nothing in the documents counted.

    A misspelt term, a wrong type, or an entry applied already and now without object.

    Args:
        decisions: The decisions.
        counts: The counts [`apply_decisions`][pipeline.campaign.decisions.apply_decisions] filled.

    Returns:
        One message per entry that matched nothing.
    """
    out = []
    for i, (sel, to) in enumerate(decisions.retype, 1):
        if not counts[f"matched:retype:{i}"]:
            out.append(f"decisions retype entry {i} ({_describe(sel)} -> {to}) matched nothing")
    for i, sel in enumerate(decisions.remove, 1):
        if not counts[f"decision:remove:{i}"]:
            out.append(f"decisions remove entry {i} ({_describe(sel)}) matched nothing")
    for i, rule in enumerate(decisions.relations, 1):
        if not counts[f"decision:relations:{i}"]:
            out.append(f"decisions relations entry {i} ({rule.source} -> {rule.target}) matched nothing")
    return out


def unified_diff(changes: Sequence[Change], root: str | Path) -> str:
    """Render changes as one unified diff.

    Args:
        changes: The changes.
        root: The collection; paths are relative to it (``a/NAME.ann`` -> ``b/NAME.ann``).

    Returns:
        The diff text; empty when there is no change.
    """
    out: list[str] = []
    for c in changes:
        rel = c.path.relative_to(Path(root)).as_posix()
        out += difflib.unified_diff(c.old.splitlines(keepends=True), c.new.splitlines(keepends=True),
                                    f"a/{rel}", f"b/{rel}")
    return "".join(out)


def write_changes(changes: Sequence[Change], directory: str | Path | None = None) -> None:
    """Write the changed ``.ann`` files.

    ``directory`` (the collection the changes were computed on): the leftovers of a killed run there are
    removed first (hidden temporaries, a staged copy beside it).  A final corpus (a directory holding
    ``finalize.json``, which nobody edits) is changed in one step: a copy beside it (hard links for the
    unchanged files) gets the new files and is swapped in
    ([`publish_directory`][pipeline.durable.publish_directory]), so a reader sees it before or after the
    decisions, never half-applied.  Any other collection (one people may edit) changes document by
    document: every new ``.ann`` beside its target first, then each renamed over it.

    Args:
        changes: The changes, from [`apply_decisions`][pipeline.campaign.decisions.apply_decisions].
        directory: The collection the changes were computed on; ``None`` skips the clean-up and always
            writes file by file.
    """
    root = Path(directory) if directory is not None else None
    if root is not None:
        durable.restore_directory(root)
        durable.clean_leftovers(root.parent, root.name)
        durable.clean_leftovers(root)
    if not changes:
        return
    if root is not None and (root / REPORT_JSON).is_file() and not root.is_symlink():
        _publish_changed_copy(root, changes)
        return
    staged: list[tuple[Path, Path]] = []
    try:
        for c in changes:
            tmp = durable.temporary_name(c.path)
            tmp.write_text(c.new, encoding="utf-8", newline="\n")
            staged.append((tmp, c.path))
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, target in staged:
        durable.rename(tmp, target)


def _publish_changed_copy(root: Path, changes: Sequence[Change]) -> None:
    """Stage ``root`` with the changes applied beside it (unchanged files hard-linked) and swap it in."""
    new = {c.path.name: c.new for c in changes}
    staging = durable.staging_directory(root)
    try:
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            dest = staging / entry.name
            if entry.name in new:
                dest.write_text(new[entry.name], encoding="utf-8", newline="\n")
            elif entry.is_dir(follow_symlinks=False):
                shutil.copytree(entry.path, dest, copy_function=store.link_or_copy, symlinks=True)  # type: ignore[arg-type]
            else:
                store.link_or_copy(Path(entry.path), dest)
        for name in sorted(set(new) - {p.name for p in staging.iterdir()}):  # an .ann the document lacked
            (staging / name).write_text(new[name], encoding="utf-8", newline="\n")
        durable.publish_directory(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
