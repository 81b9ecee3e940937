"""Reading and checking what a release is made from: FINAL, the campaign, the build manifest, the decisions.

Every function here reads; none writes.  A problem is a [`ReleaseError`][pipeline.campaign.release.read.ReleaseError]
naming ``file:line`` (or the file), raised before the release writes anything.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipeline import yamlfile
from pipeline.brat import export as export_mod
from pipeline.brat import validate as validate_mod
from pipeline.brat.conf import annotation_conf
from pipeline.brat.standoff import BratDocument, dumps, read_document, read_text
from pipeline.campaign.decisions import Decisions, apply_to_document, load_decisions
from pipeline.campaign.finalize import (
    doc_key,
)
from pipeline.campaign.layout import (
    ASSIGNMENTS_CSV,
    CAMPAIGN_MANIFEST,
    DISAGREEMENT,
    DISCARD_TYPE,
)
from pipeline.documents import SentenceRecord
from pipeline.errors import InputError
from pipeline.paths import list_files
from pipeline.schema import Schema
from pipeline.store import iter_directory

log = logging.getLogger(__name__)

RELEASE_JSON = "release.json"


class ReleaseError(InputError):
    """The final corpus cannot be released as it is (the message lists ``file:line`` problems)."""


@dataclass
class ReleaseInputs:
    """What a release is made from (the options of ``pgx-corpus release``).

    Attributes:
        final: ``FINAL``, the brat collection released (from ``campaign finalize``, possibly edited by
            ``decisions apply``).
        campaign: The campaign directory, for Tables 8-9, the campaign check and the accounting; ``None``
            to leave them out.
        preannotation: The pre-annotated collection, for Table 10; when ``None``, the ``brat`` output of
            ``manifest`` if it exists.
        manifest: The build manifest (``runs/<hash>/manifest.json``), for provenance and the check of
            FINAL's sentences; ``None`` to leave them out.
        name: The corpus name (the archive's root, the Hugging Face configuration prefix); ``""``: the
            ``title`` of ``citation``, else ``corpus``.
        version: The corpus version, stated in the datasheet and ``CITATION.cff``.
        date: The release date, written as given (the BioC collection date); empty by default, so that
            nothing records the time.
        export_config: The export configuration (PubTator and CoNLL options, licence); its
            ``relation_map`` is not applied.
        decisions: The homogenization decisions files, checked as applied and copied into ``decisions/``.
        license: The corpus licence (SPDX id); ``""``: the ``license`` of ``citation``, else the export
            configuration's, else none stated.
        previous: An earlier release directory: ``CHANGELOG.md`` lists what changed since.
        authors: The corpus authors (``Family, Given`` or an organisation's name); when given, they replace
            the authors of ``citation``.
        citation: The corpus's own ``CITATION.cff`` (title, abstract, authors, licence, preferred citation).
        description: What the corpus is (``""``: the ``abstract`` of ``citation``, else none stated).
        pgxcorpus_method: The corpus follows the PGxCorpus method, which is then cited as the method.
        strict_metadata: Refuse (write nothing) when the authors or the licence are missing.
    """
    final: Path
    campaign: Path | None = None
    preannotation: Path | None = None
    manifest: Path | None = None
    name: str = ""
    version: str = ""
    date: str = ""
    export_config: export_mod.ExportConfig = field(default_factory=export_mod.ExportConfig)
    decisions: list[Path] = field(default_factory=list)
    license: str = ""  # the corpus licence (SPDX id); "" = the export configuration's, else none stated
    previous: Path | None = None  # an earlier release directory: CHANGELOG.md lists what changed since
    authors: list[str] = field(default_factory=list)
    citation: Path | None = None
    description: str = ""
    pgxcorpus_method: bool = False
    strict_metadata: bool = False


# --- reading and checking ---------------------------------------------------------------------

def read_final(final: Path, schema: Schema) -> list[BratDocument]:
    """Read and check the documents of FINAL (top level only).

    Every document is parsed and validated against FINAL's ``annotation.conf`` (or, when it has none,
    the configuration generated from the schema); symbolic links, ``Disagreement`` attributes and
    ``Discard`` entities are problems too.

    Args:
        final: The final collection.
        schema: The schema, for the configuration when FINAL has none.

    Returns:
        The documents by PMID then sentence index, with no path; offsets are half-open character offsets
        into each ``.txt``.

    Raises:
        FileNotFoundError: If ``final`` is not a directory.
        ReleaseError: If there is any problem (every one listed ``file:line: message``) or no document.
    """
    if not final.is_dir():
        raise FileNotFoundError(f"{final}: not a directory")
    conf_path = final / "annotation.conf"
    # a linked annotation.conf is never read (reported with the other links below)
    readable = conf_path.is_file() and not conf_path.is_symlink()
    conf_text = conf_path.read_text(encoding="utf-8") if readable else annotation_conf(schema)
    conf, problems = validate_mod.parse_annotation_conf(conf_text, str(conf_path))
    found = [str(p) for p in problems]
    docs = []
    listing = list_files(final, (".txt", ".ann", ".conf"))
    found += listing.problems()  # a link would publish its target in every format: refused like any problem
    links = set(listing.symlinks)
    txts = [p for p in listing.files if p.suffix == ".txt" and p.with_suffix(".ann") not in links]
    for txt in sorted(txts, key=lambda p: doc_key(p.stem)):
        doc, issues = read_document(txt)
        ann_text = read_text(txt.with_suffix(".ann")) if txt.with_suffix(".ann").exists() else ""
        found += [str(i) for i in issues]
        found += [str(p) for p in validate_mod.validate_document(doc, ann_text, conf, doc.path)]
        found += [f"{doc.path}:{a.line}: {a.target} still carries {DISAGREEMENT}={a.value}"
                  for a in doc.attributes if a.type == DISAGREEMENT]
        found += [f"{doc.path}:{t.line}: {t.id} is a {DISCARD_TYPE} entity" for t in doc.textbounds
                  if t.type == DISCARD_TYPE]
        docs.append(replace(doc, path=""))
    if found:
        raise ReleaseError(f"{final}: {len(found)} problem(s), nothing released:\n" + "\n".join(found))
    if not docs:
        raise ReleaseError(f"{final}: no documents")
    return docs


# --- what the release may state: checks against FINAL ------------------------------------------

NAMES_SHOWN = 10
"""How many names a refusal lists before ``... (N in all)``."""


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f", ... ({len(names)} in all)" if len(names) > NAMES_SHOWN else "")


def check_out_apart(final: Path, out: Path) -> None:
    """Refuse a release directory inside FINAL, or FINAL inside it.

    The release's own brat files would then be read back as documents of FINAL (``stats`` counted the
    release's sentences twice), or FINAL replaced with the release.

    Args:
        final: The final collection.
        out: The release directory.

    Raises:
        ReleaseError: If one lies inside the other (or they are the same directory).
    """
    f, o = final.resolve(), out.resolve()
    if o == f or o.is_relative_to(f):
        raise ReleaseError(f"{out}: the release directory is inside FINAL {final}; nothing released "
                           "(write the release beside FINAL)")
    if f.is_relative_to(o):
        raise ReleaseError(f"{out}: FINAL {final} is inside the release directory, which the release replaces; "
                           "nothing released")


def decisions_not_applied(docs: Sequence[BratDocument], decisions: Sequence[tuple[str, Decisions]],
                          schema: Schema) -> list[str]:
    """List the decisions entries that have not taken effect in FINAL.

    The files are applied in order to each document, as ``decisions apply`` would (a dry run, nothing
    written); an entry that still changes a document (``decision:<kind>:<index>`` counted on a document
    whose annotations then differ) was not applied to FINAL, e.g. FINAL was rebuilt by ``finalize``
    after ``decisions apply``.

    Args:
        docs: The documents of FINAL.
        decisions: ``(file name, decisions)`` in the order given.
        schema: The schema.

    Returns:
        One message per entry not applied, naming the file, the entry and the documents it would change;
        empty when all have taken effect.
    """
    pending: dict[tuple[int, str, int], list[str]] = {}
    for doc in docs:
        new = doc
        per_file: list[Counter[str]] = []
        for _name, dec in decisions:
            counts: Counter[str] = Counter()
            new = apply_to_document(new, dec, schema, counts)
            per_file.append(counts)
        if dumps(new) == dumps(doc):
            continue
        for k, counts in enumerate(per_file):
            for key, n in counts.items():
                if key.startswith("decision:") and n:
                    _, kind, number = key.split(":")
                    pending.setdefault((k, kind, int(number)), []).append(doc.name)
    out = []
    for (k, kind, entry), names in sorted(pending.items(), key=lambda kv: (kv[0][0], _KIND_ORDER[kv[0][1]],
                                                                         kv[0][2])):
        out.append(f"{decisions[k][0]}: {kind} entry {entry} has not taken effect in FINAL; it would still "
                   f"change {len(names)} document(s): {_names(names)}")
    return out


_KIND_ORDER = {"retype": 0, "remove": 1, "relations": 2}


def campaign_documents(campaign: Path) -> list[str]:
    """List the brat documents a campaign assigns (pages included, calibration documents aside).

    From ``campaign.json`` (the source of truth), else from ``manifest.csv`` of an older campaign.

    Args:
        campaign: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        The brat document names, in document order.

    Raises:
        ReleaseError: If the directory has neither file, or the one it has cannot be read.
    """
    path = campaign / CAMPAIGN_MANIFEST
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            names = [f for entry in data["documents"] for f in entry.get("files") or [entry["document"]]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ReleaseError(f"{path}: cannot read the campaign manifest: {exc}") from exc
        return sorted(set(names), key=doc_key)
    csv_path = campaign / ASSIGNMENTS_CSV
    if csv_path.is_file():
        reader = csv.DictReader(io.StringIO(csv_path.read_text(encoding="utf-8")))
        if not reader.fieldnames or "document" not in reader.fieldnames:
            raise ReleaseError(f"{csv_path}:1: header needs a document column, got {reader.fieldnames}")
        return sorted({row["document"] for row in reader if row.get("document")}, key=doc_key)
    raise ReleaseError(f"{campaign}: not a campaign directory (no {CAMPAIGN_MANIFEST} or {ASSIGNMENTS_CSV}); "
                       "nothing released")


def phase1_assignments(campaign: Path) -> dict[str, set[str]]:
    """List the brat documents a campaign assigns each person in phase 1.

    Calibration copies aside, as in [`campaign_documents`][pipeline.campaign.release.read.campaign_documents]:
    from ``campaign.json``, else from ``manifest.csv`` of an older campaign.

    Args:
        campaign: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        Person -> their brat documents.

    Raises:
        ReleaseError: If the directory has neither file, or ``campaign.json`` cannot be read.
    """
    path = campaign / CAMPAIGN_MANIFEST
    out: dict[str, set[str]] = {}
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for entry in data["documents"]:
                for person in entry["phase1"]:
                    out.setdefault(person, set()).update(entry.get("files") or [entry["document"]])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ReleaseError(f"{path}: cannot read the campaign manifest: {exc}") from exc
        return out
    csv_path = campaign / ASSIGNMENTS_CSV
    if csv_path.is_file():
        for row in csv.DictReader(io.StringIO(csv_path.read_text(encoding="utf-8"))):
            if row.get("phase") in ("1", "phase1") and row.get("document") and row.get("annotator"):
                out.setdefault(row["annotator"], set()).add(row["document"])
        return out
    raise ReleaseError(f"{campaign}: not a campaign directory (no {CAMPAIGN_MANIFEST} or {ASSIGNMENTS_CSV}); "
                       "nothing released")


def check_campaign(docs: Sequence[BratDocument], campaign: Path) -> list[str]:
    """Check that every document of FINAL is a document the campaign assigns.

    Args:
        docs: The documents of FINAL.
        campaign: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        The campaign's assigned documents ([`campaign_documents`][pipeline.campaign.release.read.campaign_documents]).

    Raises:
        ReleaseError: If FINAL holds documents the campaign does not assign (the first ones are named),
            or the campaign's manifest cannot be read.
    """
    assigned = campaign_documents(campaign)
    known = set(assigned)
    foreign = [d.name for d in docs if d.name not in known]
    if foreign:
        raise ReleaseError(f"{campaign}: {len(foreign)} document(s) of FINAL are not documents of this campaign: "
                           f"{_names(foreign)}; nothing released (is it FINAL's campaign?)")
    return assigned


def _output_path(manifest: Path, value: Any) -> Path | None:
    if not isinstance(value, str) or not value:
        return None
    path = Path(value) if Path(value).is_absolute() else manifest.parent / value
    return path if path.is_dir() else None


def build_texts(manifest: Path) -> tuple[dict[str, str], list[str]]:
    """Read the sentences the build of a manifest wrote.

    From its ``brat`` collection's ``.txt`` files (unreadable ones logged), then the sentence records of
    its ``sampled`` and ``filtered`` stages, named ``{PMID}_{index + 1}``; the first text found for a
    name is kept.  Relative output paths are relative to the manifest's directory.

    Args:
        manifest: The build manifest (``runs/<hash>/manifest.json``).

    Returns:
        ``{document: text}``, and the outputs read (``brat``, ``sampled``, ``filtered``).

    Raises:
        ReleaseError: If the manifest cannot be read.
    """
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReleaseError(f"{manifest}: cannot read the build manifest: {exc}") from exc
    outputs = data.get("outputs") if isinstance(data, Mapping) else None
    outputs = outputs if isinstance(outputs, Mapping) else {}
    texts: dict[str, str] = {}
    read: list[str] = []
    brat = _output_path(manifest, outputs.get("brat"))
    if brat is not None:
        read.append("brat")
        for txt in sorted(brat.rglob("*.txt")):
            try:
                texts.setdefault(txt.stem, read_text(txt))
            except (OSError, ValueError) as exc:
                log.warning("%s: %s", txt, exc)
    for stage in ("sampled", "filtered"):
        path = _output_path(manifest, outputs.get(stage))
        if path is None:
            continue
        read.append(stage)
        for rec in iter_directory(path, SentenceRecord):
            texts.setdefault(f"{rec.pmid}_{rec.index + 1}", rec.text)
    return texts, read


def check_manifest(docs: Sequence[BratDocument], manifest: Path) -> None:
    """Check that every document of FINAL is a sentence of a build, with the same text.

    Args:
        docs: The documents of FINAL.
        manifest: The build manifest; its sentences are read with
            [`build_texts`][pipeline.campaign.release.read.build_texts].

    Raises:
        ReleaseError: If a document is not a sentence of the build or its text differs (the first ones
            are named), or none of the build's outputs can be read (nothing to check against).
    """
    texts, read = build_texts(manifest)
    if not read:
        raise ReleaseError(f"{manifest}: none of the build's outputs (brat, sampled, filtered) can be read, so "
                           "FINAL cannot be checked against this build; nothing released")
    foreign = [d.name for d in docs if texts.get(d.name) != d.text]
    if foreign:
        raise ReleaseError(f"{manifest}: {len(foreign)} document(s) of FINAL are not sentences of this build "
                           f"(read: {', '.join(read)}): {_names(foreign)}; nothing released (is it FINAL's build?)")


#: a segment of the provenance note the brat export wrote on composite entities (pipeline/corpus/brat_export.py
#: ``_note``: ``source=...; original_type=...; class=...; rule=...; key=...``), possibly with the author the
#: merge puts before each annotator's version (``ann1: source=...``)
_MACHINE_SEGMENT = re.compile(r"^(?:[^\s:;=]+: )?(source|original_type|class|rule|key)=[^;]*$")


def without_machine_notes(doc: BratDocument, counts: Counter[str]) -> BratDocument:
    """Remove the machine's provenance from the notes of a document.

    A note made only of provenance segments (``source=...; class=...`` of older brat exports) is dropped,
    one where an annotator's text is left keeps that text.  A note without a ``source=`` segment is never
    touched.

    Args:
        doc: The document; left unchanged.
        counts: Counters updated in place: ``machine_notes_dropped``, ``machine_notes_trimmed``.

    Returns:
        ``doc`` itself when no note changed, else a copy.
    """
    notes = []
    changed = False
    for note in doc.notes:
        segments = note.text.split("; ")
        kinds = [m.group(1) if (m := _MACHINE_SEGMENT.match(s)) else None for s in segments]
        if "source" not in kinds:
            notes.append(note)
            continue
        changed = True
        kept = [s for s, k in zip(segments, kinds, strict=True) if k is None]
        if kept:
            notes.append(replace(note, text="; ".join(kept)))
            counts["machine_notes_trimmed"] += 1
        else:
            counts["machine_notes_dropped"] += 1
    return replace(doc, notes=notes) if changed else doc



def decision_rows(paths: Sequence[Path], schema: Schema) -> list[list[str]]:
    """List the entries of decisions files, for the datasheet.

    Each file is checked first with [`load_decisions`][pipeline.campaign.decisions.load_decisions]: a
    file that cannot be applied is not released as the record.

    Args:
        paths: The decisions files.
        schema: The schema they are checked against.

    Returns:
        ``[file, kind, what, change, why]`` per entry, in file order.

    Raises:
        DecisionsError: If a file cannot be read or applied.
    """
    rows = []
    for path in paths:
        load_decisions(path, schema)  # a file that cannot be applied is not released as the record
        data = yamlfile.safe_load(path.read_text(encoding="utf-8")) or {}
        for kind in ("retype", "remove", "relations"):
            for e in data.get(kind) or []:
                what = str(e.get("term") if e.get("term") is not None else f"/{e.get('pattern')}/")
                if kind == "retype":
                    change = f"{e.get('from') or 'any type'} -> {e['to']}"
                elif kind == "remove":
                    change = f"{e.get('type') or 'any type'} removed"
                else:
                    what = e["from"] + (f" ({e.get('arg1') or '*'} -> {e.get('arg2') or '*'})"
                                        if e.get("arg1") or e.get("arg2") else "")
                    change = f"-> {e['to']}" if e.get("to") is not None else "deleted"
                if e.get("documents"):
                    what += f" in {len(e['documents'])} document(s)"
                rows.append([path.name, kind, what, change, str(e.get("why") or "")])
    return rows



def _plain(value: Any) -> Any:
    """Manifest values without machine-specific absolute paths (file names kept)."""
    if isinstance(value, str) and value.startswith("["):
        try:  # Luigi stores list parameters as JSON text
            return _plain(json.loads(value))
        except json.JSONDecodeError:
            return value
    if isinstance(value, str) and value.startswith("/"):
        return Path(value).name
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def provenance(manifest_path: Path) -> dict[str, Any]:
    """Read what the datasheet reports from a build manifest.

    Machine-specific absolute paths are reduced to file names, so the release does not depend on where
    the build ran.

    Args:
        manifest_path: The build manifest (``runs/<hash>/manifest.json``).

    Returns:
        ``run`` (the run directory's name), ``search``, ``params``, ``stages``, ``versions``,
        ``config_hashes``, ``seeds`` and ``failures`` (how many).

    Raises:
        ReleaseError: If the manifest cannot be read or is not a JSON object.
    """
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReleaseError(f"{manifest_path}: cannot read the build manifest: {exc}") from exc
    if not isinstance(manifest, Mapping):
        raise ReleaseError(f"{manifest_path}: not a build manifest (expected a JSON object)")
    return {
        "run": manifest_path.parent.name,
        "search": _plain(manifest.get("search")),
        "params": _plain(manifest.get("params") or {}),
        "stages": _plain(manifest.get("stages") or {}),
        "versions": _plain(manifest.get("versions") or {}),
        "config_hashes": _plain(manifest.get("config_hashes") or {}),
        "seeds": _plain(manifest.get("seeds") or {}),
        "failures": len(manifest.get("failures") or []),
    }



def previous_version(previous: Path | None) -> str:
    """Name a previous release by its version, for the changelog's heading.

    Args:
        previous: The previous release's directory; ``None`` for none.

    Returns:
        The ``version`` its ``release.json`` states; ``""`` when there is none (no previous release, no
        ``release.json``, or no version in it), never the directory's name.
    """
    if previous is None:
        return ""
    try:
        version = json.loads((previous / RELEASE_JSON).read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return ""
    return version if isinstance(version, str) else ""
