"""``pgx-corpus release``: a citable, byte-reproducible package of a final corpus.

Input: ``FINAL`` (a brat collection written by ``campaign finalize``, possibly edited by ``decisions
apply``; offsets half-open into each ``.txt``), optionally the campaign directory (phase-1 collections for
Tables 8-9), the pre-annotated collection (Table 10) and the build manifest (provenance).  The release
refuses a collection that does not validate or still holds campaign marks (``Disagreement`` attributes,
``Discard`` entities): every problem is reported as ``file:line: message``.

The release states nothing it has not checked against FINAL (each refusal writes nothing):

* ``--decisions``: every entry has taken effect in FINAL (applied again as a dry run, it changes nothing;
  [`decisions_not_applied`][pipeline.campaign.release.decisions_not_applied]); without a decisions file the datasheet
  states no homogenization;
* ``--campaign``: every FINAL document is a document the campaign assigns (``campaign.json``, else the
  ``manifest.csv`` of an older campaign); ``--manifest``: every FINAL document is a sentence of that build with
  the same text (its ``brat`` collection, or the sentence records of its ``sampled``/``filtered`` stages);
* the datasheet accounts for every assigned document ([`accounting`][pipeline.campaign.release.accounting]: released,
  discarded in phase 1 or 2 by reason, held back, pending), from the campaign and FINAL's ``finalize.json``;
* the machine's provenance notes (``source=...; class=...`` of older brat exports) are not released
  ([`without_machine_notes`][pipeline.campaign.release.without_machine_notes], counted in ``release.json``
  ``machine_notes``);
* ``--out`` inside FINAL, or FINAL inside ``--out``, is refused
  ([`check_out_apart`][pipeline.campaign.release.check_out_apart]).

Output ``DIR`` (built beside itself and swapped in whole):

* ``brat/``: the documents and ``annotation.conf``, ``visual.conf``, ``tools.conf``, ``kb_shortcuts.conf``;
  ``brat.tar.gz``: the same as one archive;
* ``bioc/corpus.bioc.xml``, ``bioc/corpus.bioc.json``, ``pubtator/corpus.pubtator``,
  ``conll/corpus.conll`` ([`pipeline.brat.export`][pipeline.brat.export]; relation types mapped by ``relation_map``);
* ``splits/``: 60/20/20 PMID-grouped splits (``pmids_*.txt``, brat per split, ``splits.json``);
* ``tables/``: Table 2 (entities), Table 3 (relations), the corpus summary, and when the inputs are given
  Table 8 (entity agreement between the phase-1 annotators), Table 9 (relation agreement) and Table 10
  (pre-annotation against the final annotation), each as ``.md``, ``.csv`` and ``.png``;
* ``decisions/``: the homogenization decisions files given (``decisions``), listed in the datasheet;
* ``README.md``: the datasheet (the user's description, authors and licence, contents, counts, annotation
  process, provenance from the build manifest: query, search date, counts per stage, model and package
  versions, configuration hashes, seeds), opened by the Hugging Face dataset card;
* ``CITATION.cff`` (only when authors are given: none is made up) and ``LICENSE.txt`` (the licence's text
  from the SPDX License List), see [`pipeline.campaign.release_meta`][pipeline.campaign.release_meta];
  ``GUIDELINES.md`` (the annotation scheme, each relation type's count) and ``CHANGELOG.md``;
* ``release.json`` (the figures of the datasheet, machine-readable) and ``SHA256SUMS`` (every other file,
  ``sha256sum -c`` format, sorted by path).

Byte reproducibility: nothing records the time or the machine (the BioC collection date is the ``date``
argument, empty by default; absolute paths of the build manifest are reduced to file names); the archive
has fixed member metadata (mtime 0, uid/gid 0, no owner names, sorted members) and a gzip header without
name or time; PNG files are written without the ``Software`` text chunk (matplotlib writes no time).

Agreement (Tables 8-9) is computed between every pair of phase-1 annotators on the released documents
both of them annotated (the phase-1 copies of a released document were, by construction, not discarded);
Discard and Done marker entities and the ``Composite`` presentation attribute are ignored.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import itertools
import json
import logging
import math
import re
import shutil
import tarfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipeline import yamlfile
from pipeline.brat import agreement as agreement_mod
from pipeline.brat import export as export_mod
from pipeline.brat import formats as formats_mod
from pipeline.brat import stats as stats_mod
from pipeline.brat import validate as validate_mod
from pipeline.brat.conf import CONF_FILES, annotation_conf, copy_conf_files, write_conf_files
from pipeline.brat.standoff import BratDocument, dumps, read_directory, read_document, read_text
from pipeline.campaign import release_data as data_mod
from pipeline.campaign import release_meta as meta_mod
from pipeline.campaign.conf import relation_attribute_names
from pipeline.campaign.decisions import Decisions, apply_to_document, load_decisions
from pipeline.campaign.documents import UNSPECIFIED_REASON
from pipeline.campaign.finalize import (
    DONE_TYPE,
    REPORT_JSON,
    check_output,
    doc_key,
    publish_dir,
    relation_notes_in_corpus_form,
    staging_dir,
)
from pipeline.campaign.layout import (
    ASSIGNMENTS_CSV,
    CAMPAIGN_MANIFEST,
    DISAGREEMENT,
    DISCARD_REASON,
    DISCARD_TYPE,
    PHASE1_DIR,
)
from pipeline.documents import SentenceRecord
from pipeline.paths import list_files
from pipeline.schema import Schema
from pipeline.store import iter_directory

log = logging.getLogger(__name__)

SUMS = "SHA256SUMS"
LICENSE_FILE = "LICENSE.txt"
POOLED = "all pairs"
RELEASE_JSON = "release.json"


class ReleaseError(ValueError):
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

    Calibration copies aside, as in [`campaign_documents`][pipeline.campaign.release.campaign_documents]:
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
        The campaign's assigned documents ([`campaign_documents`][pipeline.campaign.release.campaign_documents]).

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
            [`build_texts`][pipeline.campaign.release.build_texts].

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


def accounting(assigned: Sequence[str], released: Sequence[str], final: Path,
               phase1_discard_reasons: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Put every assigned document in exactly one place.

    Released, discarded in phase 1 or by a senior (by reason), held back, pending (a senior's sign-off,
    or not in phase 2 yet), or not accounted for (FINAL's ``finalize.json`` missing or older than the
    campaign).  The place counts add up to ``assigned``.

    Args:
        assigned: The brat documents the campaign assigns.
        released: The documents released.
        final: The final collection, whose ``finalize.json`` is read if present.
        phase1_discard_reasons: Document -> the reasons its phase-1 annotators gave, for the documents
            discarded in phase 1.

    Returns:
        ``assigned``, the count per place (``released``, ``discarded_phase2``, ``held_back``,
        ``pending_signoff``, ``discarded_phase1``, ``pending_phase2``, ``not_accounted_for``),
        ``discard_reasons_phase1`` and ``discard_reasons_phase2`` (documents per reason, a document counted
        once per distinct reason), ``finalize_report`` (whether ``finalize.json`` was there) and the first
        ``not_accounted_for_documents``.

    Raises:
        ReleaseError: If ``finalize.json`` exists but cannot be read.
    """
    report: dict[str, Any] = {}
    path = final / REPORT_JSON
    if path.is_file():
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ReleaseError(f"{path}: cannot read the finalize report: {exc}") from exc

    def listed(key: str) -> list[str]:
        return [e["document"] if isinstance(e, Mapping) else str(e) for e in report.get(key) or []]

    left = set(assigned)
    places: dict[str, list[str]] = {}
    for place, names in (("released", list(released)), ("discarded_phase2", listed("discarded")),
                         ("held_back", listed("held_back")), ("pending_signoff", listed("pending")),
                         ("discarded_phase1", listed("discarded_in_phase1")),
                         ("pending_phase2", listed("not_in_phase2"))):
        places[place] = sorted((n for n in set(names) if n in left), key=doc_key)
        left -= set(places[place])
    places["not_accounted_for"] = sorted(left, key=doc_key)
    reasons2 = {e["document"]: e.get("reasons") or [] for e in report.get("discarded") or []
                if isinstance(e, Mapping)}

    def by_reason(names: Sequence[str], reasons: Mapping[str, Sequence[str]]) -> dict[str, int]:
        # a document counted once per distinct reason given for it; a discard without reason is unspecified
        c: Counter[str] = Counter(r or UNSPECIFIED_REASON for n in names
                                  for r in sorted(set(reasons.get(n) or [UNSPECIFIED_REASON])))
        return dict(sorted(c.items()))

    out: dict[str, Any] = {"assigned": len(assigned), **{k: len(v) for k, v in places.items()},
                           "discard_reasons_phase1": by_reason(places["discarded_phase1"], phase1_discard_reasons),
                           "discard_reasons_phase2": by_reason(places["discarded_phase2"], reasons2),
                           "finalize_report": path.is_file()}
    out["not_accounted_for_documents"] = places["not_accounted_for"][:NAMES_SHOWN]
    return out


# --- tables -------------------------------------------------------------------------------------

@dataclass
class Table:
    """One table of the release: written as ``.md``, ``.csv`` and, with a chart, ``.png``.

    Attributes:
        name: The file name without extension (``table2_entities``).
        title: The title, the Markdown heading and the chart's title.
        header: The column names.
        rows: The rows; a float is a fraction shown in %, ``None`` an undefined score (``n/a``).
        chart: ``(y label, x labels, series name -> values)`` of a grouped bar chart; ``None`` for no chart.
        readme_rows: The rows the datasheet shows; all when ``None``.
    """
    name: str
    title: str
    header: list[str]
    rows: list[list[Any]]
    chart: tuple[str, list[str], dict[str, list[float]]] | None = None  # ylabel, x labels, series
    readme_rows: list[list[Any]] | None = None  # the rows the datasheet shows (None: all)

    def markdown(self, rows: list[list[Any]] | None = None) -> str:
        """Render the table as Markdown, under a ``##`` heading.

        Args:
            rows: The rows shown; all when ``None``.

        Returns:
            The Markdown text (fractions in %, integers with thousands separators, ``|`` escaped).
        """
        cells = [[_cell(v) for v in row] for row in (self.rows if rows is None else rows)]
        lines = [f"## {self.title}", "", "| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """Render the table as CSV.

        Returns:
            The CSV text, with a header row (fractions in %, integers without separators).
        """
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.header)
        writer.writerows([[_cell(v, csv=True) for v in row] for row in self.rows])
        return buf.getvalue()


def _pct(value: float | None) -> float:
    """A score in % for a chart; an undefined score (None: nothing to score) is NaN, drawn as no bar."""
    return math.nan if value is None else 100 * value


def _cell(value: Any, csv: bool = False) -> str:
    if value is None:
        # an undefined score (nothing to score), as `evaluate` and `agreement` print it
        return "n/a"
    if isinstance(value, float):
        return f"{100 * value:.1f}"
    if isinstance(value, int) and not csv:
        return f"{value:,}"
    return str(value).replace("|", "\\|") if not csv else str(value)


def corpus_tables(docs: Sequence[BratDocument], schema: Schema) -> tuple[list[Table], dict[str, Any]]:
    """Make Tables 2 (entities), 3 (relations) and the corpus summary.

    Counted by [`pipeline.brat.stats`][pipeline.brat.stats].

    Table 3's modality columns are counted by the paper's rule
    ([`paper_relation_modality`][pipeline.brat.stats.paper_relation_modality]); when the project's
    normalization ([`pipeline.brat.modality`][pipeline.brat.modality]: whole tokens, ``htp`` and ``not``
    included) gives other counts, Table 3b shows them beside it, and the modality tokens table says which
    tokens were read.

    Args:
        docs: The released documents.
        schema: The schema.

    Returns:
        The tables, and the statistics they come from
        ([`collection_stats`][pipeline.brat.stats.collection_stats]).
    """
    result = stats_mod.collection_stats(docs, schema)
    named = stats_mod.tables(result)
    ents_h, ents_r = named["entities"]
    corp_h, corp_r = named["corpus"]
    per_type = [r for r in ents_r if r[0] != "Total"]
    paper = result["relation_modality_paper"]
    pmods = sorted(result["modality_totals_paper"])
    rels_h = ["type", "total", *pmods]
    rels_r: list[list[Any]] = [[t, n, *(paper.get(t, {}).get(m, 0) for m in pmods)]
                               for t, n in result["relations"].items()]
    rels_r.append(["Total", result["relation_total"], *(result["modality_totals_paper"].get(m, 0) for m in pmods)])
    per_rel = rels_r[:-1]
    tables = [
        Table("table2_entities", "Table 2: entities by type (simple, nested, discontiguous, both)", ents_h, ents_r,
              ("entities", [r[0] for r in per_type],
               {c: [float(r[1 + i]) for r in per_type] for i, c in enumerate(stats_mod.CATEGORIES)})),
        Table("table3_relations", "Table 3: relations by type and modality (the paper's rule)", rels_h, rels_r,
              ("relations", [r[0] for r in per_rel], {m: [float(r[2 + i]) for r in per_rel]
                                                      for i, m in enumerate(pmods)})),
    ]
    if "relations_paper" in named:
        # the paper's rule and the normalization disagree: show the normalized counts too
        norm_h, norm_r = named["relations"]
        mods = norm_h[2:]
        per_norm = [r for r in norm_r if r[0] != "Total"]
        tables.append(Table("table3b_relations_normalized",
                            "Table 3b: relations by type and modality (normalized whole tokens)", norm_h, norm_r,
                            ("relations", [r[0] for r in per_norm], {m: [float(r[2 + i]) for r in per_norm]
                                                                     for i, m in enumerate(mods)})))
    if "modality_tokens" in named:
        tok_h, tok_r = named["modality_tokens"]
        tables.append(Table("modality_tokens", "Modality note tokens read (whole tokens, pipeline/brat/modality.py)",
                            tok_h, tok_r))
    tables.append(Table("corpus", "Corpus summary", corp_h, [r for r in corp_r if r[0] != "unparseable .ann lines"]))
    return tables, result


def _strip_campaign(doc: BratDocument) -> BratDocument:
    """A phase-1 document without the campaign's marker entities (Discard, Done) and Disagreement marks."""
    drop = {t.id for t in doc.textbounds if t.type in (DISCARD_TYPE, DONE_TYPE)}
    return replace(doc, textbounds=[t for t in doc.textbounds if t.id not in drop],
                   attributes=[a for a in doc.attributes if a.target not in drop and a.type != DISAGREEMENT])


def phase1_collections(campaign: Path, released: set[str]) -> dict[str, dict[str, BratDocument]]:
    """Read the phase-1 collections, restricted to released documents the campaign assigns each person.

    The calibration copies other annotators hold of a promoted document are not campaign work, and
    would count one document in many pairs.  Campaign markers (``Discard``, ``Done``) and
    ``Disagreement`` marks are removed; parse issues are logged.

    Args:
        campaign: The campaign directory ``CAMPAIGN_DIR``.
        released: The names of the released documents.

    Returns:
        Person -> ``{document: doc}``.

    Raises:
        FileNotFoundError: If the campaign has no ``phase1/`` directory.
    """
    out: dict[str, dict[str, BratDocument]] = {}
    root = campaign / PHASE1_DIR
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no phase-1 collections in the campaign directory")
    assigned = phase1_assignments(campaign)
    for person_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        docs, issues = read_directory(person_dir)
        for issue in issues:
            log.warning("%s", issue)
        mine = assigned.get(person_dir.name, set())
        out[person_dir.name] = {d.name: _strip_campaign(d) for d in docs if d.name in released and d.name in mine}
    return out


def agreement_tables(campaign: Path, released: set[str], schema: Schema) -> tuple[list[Table], dict[str, Any]]:
    """Make Tables 8 (entities), 9 (relations) and 9b (relation modality) between phase-1 annotators.

    Every pair of annotators is scored on the released documents both have; a pooled row sums every
    pair's counts.

    Args:
        campaign: The campaign directory ``CAMPAIGN_DIR``.
        released: The names of the released documents.
        schema: The schema.

    Returns:
        The tables, and the summary written to ``release.json`` (micro scores per pair, pooled scores).

    Raises:
        FileNotFoundError: If the campaign has no ``phase1/`` directory.
    """
    people = phase1_collections(campaign, released)
    pairs = []
    for a, b in itertools.combinations(sorted(people), 2):
        common = set(people[a]) & set(people[b])
        if common:
            # both restricted to the shared documents: the others are not a disagreement
            docs_a = {n: d for n, d in people[a].items() if n in common}
            docs_b = {n: d for n, d in people[b].items() if n in common}
            pairs.append(agreement_mod.compare_collections(docs_a, docs_b, schema, ref_label=a, pred_label=b))
    summary: dict[str, Any] = {"pairs": [
        {"pair": f"{p['reference']} vs {p['predicted']}", "documents": p["documents"]["common"],
         "entities": {k: v["micro"] for k, v in p["entities"].items()},
         "relations": {k: v["micro"] for k, v in p["relations"].items()}} for p in pairs]}
    tables = []
    for number, kind, title in ((8, "entities", "entity agreement"), (9, "relations", "relation agreement")):
        header = ["pair", "documents", "setting", "TP", "FP", "FN", "P", "R", "F1"]
        rows: list[list[Any]] = []
        settings = list(pairs[0][kind]) if pairs else []
        series: dict[str, list[float]] = {}
        for p in pairs:
            label = f"{p['reference']} vs {p['predicted']}"
            for setting in settings:
                m = p[kind][setting]["micro"]
                rows.append([label, p["documents"]["common"], setting, m["tp"], m["fp"], m["fn"],
                             m["precision"], m["recall"], m["f1"]])
            series[label] = [_pct(p[kind][s]["micro"]["f1"]) for s in settings]
        pooled: list[list[Any]] = []
        if pairs:
            # every pair's counts summed: the agreement of the campaign as a whole
            n_docs = sum(p["documents"]["common"] for p in pairs)
            for setting in settings:
                tp, fp, fn = (sum(p[kind][setting]["micro"][k] for p in pairs) for k in ("tp", "fp", "fn"))
                m = agreement_mod.prf(tp, fp, fn)
                pooled.append([POOLED, n_docs, setting, tp, fp, fn, m["precision"], m["recall"], m["f1"]])
            series[POOLED] = [_pct(r[-1]) for r in pooled]
            summary[f"pooled_{kind}"] = {r[2]: agreement_mod.prf(r[3], r[4], r[5]) for r in pooled}
        tables.append(Table(f"table{number}_{kind}_agreement",
                            f"Table {number}: {title} between phase-1 annotators (P, R, F1 in %)", header,
                            rows + pooled, ("F1 (%)", settings, series) if pairs else None,
                            readme_rows=pooled))
    # modality is not part of a relation match: its agreement on the matched relations is a figure of its own
    mod_rows: list[list[Any]] = []
    for p in pairs:
        m = p["relation_modality"]
        mod_rows.append([f"{p['reference']} vs {p['predicted']}", m["setting"], m["matched"], m["same_modality"],
                         m["agreement"]])
    if pairs:
        matched = sum(r[2] for r in mod_rows)
        same = sum(r[3] for r in mod_rows)
        pooled_mod: list[Any] = [POOLED, agreement_mod.MODALITY_SETTING, matched, same,
                                 same / matched if matched else None]
        summary["pooled_relation_modality"] = {"matched": matched, "same_modality": same,
                                               "agreement": pooled_mod[-1]}
        tables.append(Table("table9b_relation_modality_agreement",
                            "Table 9b: relation modality agreement on the relations both annotators have (%)",
                            ["pair", "setting", "matched relations", "same modality", "agreement"],
                            [*mod_rows, pooled_mod], readme_rows=[pooled_mod]))
    return tables, summary


def preannotation_table(preannotation: Path, docs: Sequence[BratDocument], schema: Schema) -> tuple[Table, Any]:
    """Make Table 10: the pre-annotation scored against the final annotation, in the settings of the paper.

    Relation rows are added when relations were pre-annotated
    ([`TABLE10_RELATION_SETTINGS`][pipeline.campaign.release.TABLE10_RELATION_SETTINGS]).

    Args:
        preannotation: The pre-annotated brat collection (parse issues are logged).
        docs: The released documents (the reference); those without a pre-annotated version are left out.
        schema: The schema.

    Returns:
        The table, and what ``release.json`` records: ``documents``, ``scores`` per setting and, if any,
        ``relations``.
    """
    pre, issues = read_directory(preannotation)
    for issue in issues:
        log.warning("%s", issue)
    pre_by_name = {d.name: d for d in pre}
    pairs = [
        (list(agreement_mod.brat_entities(d).values()),
         list(agreement_mod.brat_entities(pre_by_name[d.name], schema=schema, source="pubtator").values()))
        for d in docs if d.name in pre_by_name
    ]
    scores = agreement_mod.table10_scores(pairs)
    settings = list(agreement_mod.TABLE10_SETTINGS)
    rows: list[list[Any]] = [[s, len(pairs), scores[s]["tp"], scores[s]["fp"], scores[s]["fn"],
                              scores[s]["precision"], scores[s]["recall"], scores[s]["f1"]] for s in settings]
    relations = _preannotated_relations(docs, pre_by_name, schema)
    for name, m in relations.items():
        rows.append([f"relations {name}", len(pairs), m["tp"], m["fp"], m["fn"], m["precision"], m["recall"], m["f1"]])
    table = Table("table10_preannotation", "Table 10: pre-annotation against the final annotation (P, R, F1 in %)",
                  ["setting", "documents", "TP", "FP", "FN", "P", "R", "F1"], rows,
                  ("%", settings, {k: [_pct(scores[s][key]) for s in settings]
                                   for k, key in (("P", "precision"), ("R", "recall"), ("F1", "f1"))}))
    extra: dict[str, Any] = {"documents": len(pairs), "scores": {s: scores[s] for s in settings}}
    if relations:
        extra["relations"] = relations
    return table, extra


TABLE10_RELATION_SETTINGS = (("exact", "strict", "directed"), ("exact", "hierarchy", "directed"),
                             ("partial", "strict", "directed"), ("partial", "hierarchy", "directed"),
                             ("partial", "any", "undirected"))
"""The relation rows of Table 10 when relations were pre-annotated: (span, type, direction) settings."""


def _preannotated_relations(docs: Sequence[BratDocument], pre_by_name: Mapping[str, BratDocument],
                            schema: Schema) -> dict[str, Any]:
    """Pre-annotated relations against the final ones ({} when the pre-annotation has none)."""
    tallies = {"_".join(k): agreement_mod.Tally() for k in TABLE10_RELATION_SETTINGS}
    proposed = 0
    for d in docs:
        pre = pre_by_name.get(d.name)
        if pre is None:
            continue
        final_rels = agreement_mod.brat_relations(d, agreement_mod.brat_entities(d))
        pre_rels = agreement_mod.brat_relations(pre, agreement_mod.brat_entities(pre, schema=schema, source="pubtator"))
        proposed += len(pre_rels)
        for span, types, direction in TABLE10_RELATION_SETTINGS:
            tallies["_".join((span, types, direction))].add(agreement_mod.relation_tally(
                final_rels, pre_rels, span=span, types=types, directed=direction == "directed", schema=schema))
    return {k: t.micro() for k, t in tallies.items()} if proposed else {}


def write_chart(path: Path, title: str, chart: tuple[str, list[str], dict[str, list[float]]]) -> None:
    """Draw a grouped bar chart as PNG, byte-identical for the same input.

    Written without the ``Software`` text chunk (matplotlib writes no time); every value is printed on
    its bar, and a NaN value draws no bar.

    Args:
        path: The PNG file written.
        title: The chart's title.
        chart: ``(y label, x labels, series name -> values)``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ylabel, labels, series = chart
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(labels) * max(1, len(series)) ** 0.5 + 2), 4.5))
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        bars = ax.bar([i + k * width - 0.4 + width / 2 for i in range(len(labels))], values, width, label=name)
        # every value printed on its bar, so a small count stays readable beside a large one
        ax.bar_label(bars, labels=["" if math.isnan(v) else (f"{v:.1f}" if ylabel.endswith("(%)") or ylabel == "%"
                                                               else f"{v:,.0f}") for v in values],
                     fontsize=6, padding=1, rotation=90 if len(labels) * len(series) > 24 else 0)
    ax.set_xticks(list(range(len(labels))))
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.margins(y=0.15)
    if len(series) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def write_tables(tables: Sequence[Table], out: Path) -> None:
    """Write each table as ``.md`` and ``.csv``, and as ``.png`` when it has a chart with data.

    Args:
        tables: The tables.
        out: The directory, created if needed.
    """
    out.mkdir(parents=True, exist_ok=True)
    for t in tables:
        (out / f"{t.name}.md").write_text(t.markdown(), encoding="utf-8", newline="\n")
        (out / f"{t.name}.csv").write_text(t.csv(), encoding="utf-8", newline="\n")
        if t.chart is not None and t.chart[1]:
            write_chart(out / f"{t.name}.png", t.title, t.chart)


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


# --- files -----------------------------------------------------------------------------------------

def write_tar_gz(source: Path, archive: Path, arcroot: str) -> None:
    """Archive a directory as a byte-reproducible gzipped tar.

    Members are sorted, with mtime 0, root-owned, without owner names (USTAR format); the gzip header has
    no name or time.

    Args:
        source: The directory archived.
        archive: The ``.tar.gz`` file written.
        arcroot: The name of the archive's root directory.
    """
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        paths = sorted(source.rglob("*"), key=lambda p: p.relative_to(source).as_posix())
        for path in [source, *paths]:
            rel = path.relative_to(source).as_posix()
            info = tarfile.TarInfo(arcroot if rel == "." else f"{arcroot}/{rel}")
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    with open(archive, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(buf.getvalue())


def sha256sums(root: Path) -> str:
    """List the checksums of every file under a directory, ``sha256sum -c`` format.

    Args:
        root: The directory; its ``SHA256SUMS`` is left out.

    Returns:
        One ``<sha256>  <relative path>`` line per file, sorted by path.
    """
    lines = []
    for path in sorted((p for p in root.rglob("*") if p.is_file() and p.name != SUMS),
                       key=lambda p: p.relative_to(root).as_posix()):
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(root).as_posix()}")
    return "".join(line + "\n" for line in lines)


# --- provenance and datasheet ---------------------------------------------------------------------

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


def _stage_line(counts: Mapping[str, Any]) -> str:
    items = [f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in sorted(counts.items())
             if isinstance(v, int | float | str)]
    return ", ".join(items[:12]) + (f", ... ({len(items) - 12} more in release.json)" if len(items) > 12 else "")


def datasheet(info: Mapping[str, Any], tables: Sequence[Table]) -> str:
    """Write the release's ``README.md``: a datasheet for the corpus.

    Args:
        info: What ``release.json`` holds (name, version, statistics, formats, campaign, provenance ...).
        tables: The tables, shown with their ``readme_rows``.

    Returns:
        The Markdown text.
    """
    s = info["stats"]
    name = info["name"] + (f" {info['version']}" if info["version"] else "")
    lines = [f"# {name}", ""]
    lines += [info["description"], ""] if info.get("description") else [
        "No description of the corpus was given (`release --description`, or `abstract` in `--citation`).", ""]
    lines += [_made_with(info), ""]
    if info.get("pgxcorpus_method"):
        lines += ["The corpus follows the PGxCorpus method (annotation scheme, guidelines and two-phase "
                  f"annotation): {meta_mod.PGXCORPUS_METHOD}", ""]
    if info["date"]:
        lines += [f"Release date: {info['date']}", ""]
    lines += ["## Authors", ""]
    if info.get("authors"):
        lines += [", ".join(info["authors"]) + ".", ""]
    else:
        lines += ["No authors were given (`release --author`, or `authors` in `--citation`), so none is stated "
                  "and this release has no `CITATION.cff`.", ""]
    ex = info["export"]
    hf = info["huggingface"]
    kb = hf["bigbio_kb"]
    prefix = hf["configs"][0].removesuffix("_source")
    lines += ["## Licence", ""]
    if info.get("license"):
        text = (f" Its text is in `{info['license_file']}`, as the {info['license_list']} gives it."
                if info.get("license_file") else
                f" Its text is not shipped (the {info['license_list']} has none): read it at the URI.")
        lines += [f"The annotations are distributed under {info['license_name']} (`{info['license']}`, "
                  f"<{info['license_uri']}>).{text} The licence does not cover the sentence texts: they remain "
                  "under the terms of their source (for PubMed abstracts, their publishers' copyright and NLM's "
                  "terms of use).", ""]
    else:
        lines += ["No licence was given for this release (`release --license`, `license` in `--citation` or in "
                  "the export configuration), so none is stated and none is guessed: ask the corpus producers "
                  "before reuse.", ""]
    lines += [
        "## Contents", "",
        f"- {s['sentences']:,} sentences from {s['abstracts']:,} abstracts, {s['entities']:,} entities, "
        f"{s['relations']:,} relations.",
        "- `brat/` (and `brat.tar.gz`): brat standoff with its configuration files; offsets are half-open "
        "character offsets into each `.txt`.",
        "- `bioc/corpus.bioc.xml`, `bioc/corpus.bioc.json`: BioC, one document per sentence, one passage at "
        "offset 0, entities (one location per fragment, in ascending offset order, the text joined in that order) "
        "and relations (modality as `Negated`/`Hypothetical` infons, notes as `note` infons); `bioc/corpus.key` "
        "is the key file the collection header names. A gapped annotation's text is its fragments joined by a "
        "space, not the span from its first location to its last, which `bioc.validate` assumes: it flags "
        + _bioc_validate_sentence(ex["bioc_validate"]),
        f"- `pubtator/corpus.pubtator`: PubTator entities **and relations with their modality** (the 5th column of "
        f"a relation line), a 7th entity column `{{document}}:{{brat id}}` linking the lines of one entity "
        f"(discontiguous entities: one line per fragment, `pubtator_discontiguous: {ex['pubtator_discontiguous']}`)"
        + (". Level `abstract`: one PubTator document per PMID whose title is its sentence `{PMID}_1` "
           "when that sentence is released, else empty "
           f"({ex['pubtator_empty_titles']:,} of {ex['pubtator_documents']:,} documents have an empty title), and "
           "whose abstract is its other released sentences joined by a space, so its text is **not** PubMed's; "
           "`corpus.pubtator.sentences.tsv` maps each sentence to its span." if ex["pubtator_level"] == "abstract"
           else ".") + " Readers that accept only the six standard columns (`bconv`) cannot read it: "
        "`pubtator/corpus.bconv.pubtator` is the flavour they read (one document per sentence, the sentence as "
        "title; entity lines only, discontiguous entities as separate fragments; no relations, which need the "
        "key column).",
        "- `conll/corpus.conll`: CoNLL BIO, scheme `outermost` (one label column; `# NAME` before each sentence, "
        "columns token, start, end, label): nested and discontiguous entities are lost there, see the format "
        "table. `conll/corpus.layers.conll`: scheme `layers` (one label column per nesting layer, every "
        "contiguous entity in some column). `conll/corpus.spacy.conll`: the `outermost` labels for "
        "`python -m spacy convert -c ner` (`-DOCSTART-` lines, token and label only). In every CoNLL file each "
        "fragment of a discontiguous entity opens with `B-`, adjacent fragments too, so it reads back as separate "
        "fragments, never as one span joining them.",
        f"- `hf/`: the Hugging Face dataset (Parquet), configs `{prefix}_source` (default; everything as "
        f"annotated: modality, notes, attributes, relation types) and `{prefix}_bigbio_kb` (BigBIO `bigbio_kb` "
        f"schema), splits " + ", ".join(f"{k} ({v:,} sentences)" for k, v in hf["splits"].items() if v)
        + "".join(f"; {k} has no sentence and is not in the card" for k, v in hf["splits"].items() if not v)
        + f". Load with `datasets.load_dataset(\"path/to/release\")` or "
        f"`load_dataset(\"path/to/release\", \"{prefix}_bigbio_kb\")`. In `bigbio_kb`, negated and "
        f"hypothetical relations are **excluded** ({kb['relations_excluded_modality']:,} of {s['relations']:,}; "
        f"{kb['relations']:,} relations remain); the source config keeps them with their modality. "
        + ("There are **no normalizations** in this corpus (the `normalized` lists are empty)."
           if not info["formats"]["brat"]["features"]["normalizations"]["annotated"] else
           f"Normalizations: {info['formats']['brat']['features']['normalizations']['annotated']:,} "
           "(brat `N` lines), in `entities.normalized`."),
        "- `spacy/{train,dev,test}.spacy`: spaCy `DocBin` files: `doc.spans[\"sc\"]` holds every contiguous entity "
        "(nested included; spaCy `spancat`), `doc.spans[\"discontiguous\"]` the fragments of each discontiguous "
        "entity linked by `span.id_` (its brat id), `doc.ents` a flat view for `ner`"
        + _ents_sentence(info["spacy"]) + ". Train with "
        "`python -m spacy init config config.cfg --lang en --pipeline spancat` then `python -m spacy train "
        "config.cfg --paths.train spacy/train.spacy --paths.dev spacy/dev.spacy`.",
        f"- `splits/`: train/dev/test by PMID, ratios {info['splits']['ratios']}, seed {info['splits']['seed']}: "
        + ", ".join(f"{k} {v['pmids']} PMIDs / {v['documents']} sentences"
                    for k, v in info["splits"]["splits"].items())
        + "; each split folder holds its brat documents and `annotation.conf`, and every format is also written "
        "per split (`bioc/train.bioc.xml`, `pubtator/dev.pubtator`, `conll/test.conll`...).",
        ("- `splits/folds.tsv`, `splits/folds.json`: " + str(info["folds"]["k"]) + " cross-validation folds grouped "
         "by PMID over the whole corpus (pipeline/nlp/folds.py, seed " + str(info["folds"]["seed"]) + "), as the "
         "paper evaluated its corpus." if "folds" in info["folds"] else
         f"- No cross-validation folds: {info['folds'].get('error', '')}."),
        "- `sentences.tsv`: each sentence's PMID, sentence index, split, fold, length and its start in the PubMed "
        f"record text (title, newline, abstract): known for {info['sentence_offsets']:,} of {s['sentences']:,} "
        "sentences (from the sentence records of the build manifest; never guessed).",
        "- `GUIDELINES.md`: the annotation scheme (types, relations and their arguments with each type's count "
        "in this release, 0 included; modality) as configured; "
        + ("`CITATION.cff` (the authors above); " if info.get("citation_cff") else "no `CITATION.cff` (no authors "
           "were given); ")
        + (f"`{info['license_file']}` (the licence's text); " if info.get("license_file") else "")
        + "`CHANGELOG.md` (documents added, removed, changed since the previous release; "
        "document ids are stable); `tables/`: the tables below as Markdown, CSV and PNG.",
        "- `release.json`: these figures, machine-readable; `SHA256SUMS`: check with `sha256sum -c SHA256SUMS`.",
        "",
        "Relation types are kept as annotated in every file"
        + (" (the export configuration's `relation_map`, " + ", ".join(
            f"`{k}` -> `{v}`" if v else f"`{k}` dropped"
            for k, v in sorted(ex["relation_map_not_applied"].items()))
           + ", is a training view of `pgx-corpus export` and is not applied here)"
           if ex["relation_map_not_applied"] else "") + ": " + ", ".join(
            f"{t} {n:,}" for t, n in info["relation_types"].items()) + ".", "",
        "## What each format keeps", "",
        "Computed by reading every exported file back with an independent reader and finding each annotated "
        "feature again (nothing here is written by hand).", "",
        formats_mod.markdown(info["formats"]),
    ]
    mod = info["modality"]
    lines += [
        "## Relation modality", "",
        "Modality is read from the relation's note with one grammar (pipeline/brat/modality.py): its leading whole "
        "tokens `hyp`, `hypo`, `htp` mean Hypothetical and `neg`, `not` Negated; other notes are free text, and "
        "a token is never matched by prefix (`hypertension` is not hypothetical). Tokens read: "
        + (", ".join(f"`{k}` ({v['modality']}) {v['relations']:,}" for k, v in mod["tokens"].items()) or "none")
        + ".",
        "Table 3 counts modality by the paper's rule (note tokens starting with `neg` or `hyp`): "
        + (", ".join(f"{k} {v:,}" for k, v in mod["paper_rule"].items()) or "none") + "; the normalization gives "
        + (", ".join(f"{k} {v:,}" for k, v in mod["normalized"].items()) or "none")
        + (" (the same)." if mod["paper_rule"] == mod["normalized"] else " (Table 3b)."), "",
        "## Annotation process", "",
    ]
    camp = info.get("campaign")
    if camp:
        lines += [
            f"Each sentence was annotated independently by two of {camp['annotators']} annotators (phase 1); a "
            f"senior annotator who had not annotated it ({camp['seniors']} seniors) compared and revised both "
            "annotations (phase 2)"
            + ("; annotations were then homogenized in bulk (phase 3, decisions below)." if info.get("decisions")
               else "; no homogenization decisions file was given (`--decisions`), so none is stated."),
        ]
        if camp.get("documents_assigned") is not None and not camp["discarded_phase1"]:
            lines.append(f"Of the {camp['documents_assigned']:,} sentences assigned, none was discarded in phase 1.")
        elif camp.get("documents_assigned") is not None:
            n = camp["discarded_phase1"]
            lines.append(f"Of the {camp['documents_assigned']:,} sentences assigned, {n:,} "
                         f"{'was' if n == 1 else 'were'} discarded in phase 1 by at least one annotator (" + (", ".join(
                             f"{k} {v}" for k, v in camp["discard_reasons"].items()) or "no reason given")
                         + ").")
        if camp.get("held_back") is not None:
            lines.append(f"At finalization {camp['held_back']} document(s) were held back (unresolved "
                         "disagreement or failed validation), "
                         f"{camp.get('pending_phase2', 0)} were not signed off by their senior and "
                         f"{camp.get('discarded_phase2', 0)} were discarded by their senior; none of them is "
                         "released.")
        lines.append("")
        lines += _accounting_lines(camp.get("accounting"))
    else:
        lines += ["No campaign directory was given: annotation-process figures are not reported.", ""]
    lines += [PAPER_TABLES, ""]
    for t in tables:
        lines += [t.markdown(t.readme_rows)]
        if t.readme_rows is not None:
            lines += [f"Per annotator pair: `tables/{t.name}.md`.", ""]
    prov = info.get("provenance")
    relations_flag = str(((prov or {}).get("params") or {}).get("relations", "")).lower()
    if relations_flag == "true":
        lines += ["Relations were pre-annotated (rules of `config/relations.yaml` and, where the pre-annotation "
                  "came from PubTator3, its relations): annotators confirmed, retyped or deleted proposals and "
                  "drew the rest, so relation agreement is not comparable with the paper's Table 9, where every "
                  "relation was drawn by hand.", ""]
    elif relations_flag == "false":
        lines += ["Relations were not pre-annotated: annotators drew every relation, as in the paper.", ""]
    lines += ["## Provenance", ""]
    if not prov:
        lines += ["No build manifest was given (`--manifest runs/<hash>/manifest.json`): provenance not recorded.",
                  ""]
    else:
        search = prov.get("search") or {}
        lines += [
            f"- build run: `{prov['run']}`",
            f"- query: `{search.get('query', 'n/a (offline sources)')}`" if search else
            "- query: none (offline sources: " + ", ".join(
                f"{k}={v}" for k, v in sorted(prov["params"].items()) if k in ("pubmed_xml", "pubtator")) + ")",
            f"- search date: {search.get('search_date', 'n/a')}; PubMed hits: {search.get('count', 'n/a')}",
            "- seeds: " + (", ".join(f"{k} {v}" for k, v in sorted(prov["seeds"].items())) or "n/a"),
            f"- failed fetch batches: {prov['failures']}",
            "", "### Counts per stage", "", "| stage | counts |", "|---|---|",
        ]
        lines += [f"| {stage} | {_stage_line(c) if isinstance(c, Mapping) else c} |"
                  for stage, c in prov["stages"].items()]
        lines += ["", "### Versions", "", "| package or model | version |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(prov["versions"].items())]
        lines += ["", "### Configuration (SHA-256)", "", "| file | sha256 |", "|---|---|"]
        lines += [f"| {k} | `{v}` |" for k, v in sorted(prov["config_hashes"].items())]
        lines += ["", "### Build parameters", "", "| parameter | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(prov["params"].items())]
        lines.append("")
    if info.get("decisions"):
        lines += ["## Homogenization decisions", "",
                  "Applied in bulk to the final corpus (`pgx-corpus decisions apply`); the files are in "
                  "`decisions/`.", "", "| file | kind | term or relation | change | why |", "|---|---|---|---|---|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in info["decisions"]]
        lines.append("")
    lines += ["## How to cite", ""]
    if info.get("citation_cff"):
        lines += [f"Cite this release as `CITATION.cff` says (`{info['name']}`"
                  + (f", version {info['version']}" if info["version"] else "") + ", by the authors above"
                  + (f"; from `{info['citation_file']}` it also carries "
                     + ", ".join(f"`{k}`" for k in info["citation_carried"]) if info.get("citation_carried") else "")
                  + "), together with its `SHA256SUMS`.", ""]
    else:
        lines += ["No authors were given, so this release states no citation of its own; cite it by name"
                  + (f", version {info['version']}" if info["version"] else "") + " and `SHA256SUMS`.", ""]
    if info.get("pgxcorpus_method"):
        lines += ["Cite the method as well (in `CITATION.cff` `references`, when there is one):", "",
                  "```bibtex", "@article{legrand2020pgxcorpus,",
                  "  title   = {PGxCorpus, a manually annotated corpus for pharmacogenomics},",
                  "  author  = {" + " and ".join(f"{family}, {given}" for given, family in meta_mod.PAPER_AUTHORS)
                  + "},",
                  "  journal = {Scientific Data},", "  volume  = {7},", "  pages   = {3},", "  year    = {2020},",
                  "  doi     = {10.1038/s41597-019-0342-9}", "}", "```", ""]
    return "\n".join(lines)


PAPER_TABLES = ("The tables are numbered, and their settings chosen, as in the paper that defined them, the "
                "PGxCorpus paper (Legrand et al., Scientific Data 7:3, 2020), which pgx-corpus reproduces; \"the "
                "paper\" in this file is that paper, whatever corpus is released.")
"""The datasheet's one sentence about the paper the tables follow: the tool's reference, not the corpus's."""


def _made_with(info: Mapping[str, Any]) -> str:
    """Say what pgx-corpus did: released the collection given, and with a campaign or a build, more."""
    if info.get("campaign"):
        return ("Annotated in a pgx-corpus campaign (two annotators and a senior per sentence; see the annotation "
                "process below) and released with `pgx-corpus release`.")
    built = ", whose sentences a pgx-corpus build selected (see the provenance below)" if info.get("provenance") else ""
    return (f"Released with `pgx-corpus release` from the brat collection given to it{built}. No campaign directory "
            "was given, so this release does not say how the corpus was annotated.")


def _bioc_validate_sentence(v: Mapping[str, int]) -> str:
    """What ``bioc.validate`` flags in ``bioc/corpus.bioc.xml``, as counted at release time."""
    if not v.get("discontiguous"):
        return "nothing here, since no annotation is discontiguous."
    passed = v["discontiguous"] - v["validate_flagged_discontiguous"]
    return (f"{v['validate_flagged_discontiguous']:,} of the {v['discontiguous']:,} discontiguous annotations "
            + (f"(the other {passed:,} have fragments one space apart, so their joined text equals the span) "
               if passed else "")
            + f"and {v['validate_flagged'] - v['validate_flagged_discontiguous']:,} other annotations.")


def _ents_sentence(spacy: Mapping[str, Mapping[str, int]]) -> str:
    """How many entities ``doc.ents`` holds over the DocBin files, and why the others are not in it."""
    total = sum(c.get("entities", 0) for c in spacy.values())
    out = sum(c.get("entities_not_in_ents", 0) for c in spacy.values())
    disc = sum(c.get("entities_discontiguous", 0) for c in spacy.values())
    over = sum(c.get("entities_overlapping_not_in_ents", 0) for c in spacy.values())
    return (f" ({total - out:,} of the {total:,} entities; not in it: the {disc:,} discontiguous ones and {over:,} "
            "contiguous ones overlapping a longer one)")


def _accounting_lines(acc: Mapping[str, Any] | None) -> list[str]:
    """The datasheet's table of where every assigned document went (``accounting``)."""
    if not acc:
        return []

    def reasons(key: str) -> str:
        return ", ".join(f"{k} {v:,}" for k, v in acc[key].items())

    rows = [("released", acc["released"], ""),
            ("discarded in phase 1 (by an annotator, never reviewed)", acc["discarded_phase1"],
             reasons("discard_reasons_phase1")),
            ("discarded in phase 2 (by the senior)", acc["discarded_phase2"], reasons("discard_reasons_phase2")),
            ("held back (unresolved or invalid)", acc["held_back"], ""),
            ("pending: not signed off by the senior", acc["pending_signoff"], ""),
            ("pending: not in phase 2 yet", acc["pending_phase2"], "")]
    if acc["not_accounted_for"]:
        rows.append(("not accounted for" + ("" if acc["finalize_report"] else " (FINAL has no finalize.json)"),
                     acc["not_accounted_for"], ", ".join(acc["not_accounted_for_documents"])))
    lines = ["### Every assigned document", "", "| documents | count | reasons |", "|---|---|---|"]
    lines += [f"| {label} | {n:,} | {why} |" for label, n, why in rows]
    lines += [f"| **assigned** | **{acc['assigned']:,}** |  |", ""]
    return lines


def _campaign_info(campaign: Path | None, final: Path, assigned: Sequence[str],
                   released: Sequence[str]) -> dict[str, Any] | None:
    if campaign is None:
        return None
    info: dict[str, Any] = {"annotators": 0, "seniors": 0, "held_back": None}
    manifest = campaign / "manifest.csv"
    if manifest.is_file():
        rows = list(csv.DictReader(io.StringIO(manifest.read_text(encoding="utf-8"))))
        info["annotators"] = len({r["annotator"] for r in rows if r.get("phase") in ("1", "phase1")})
        info["seniors"] = len({r["annotator"] for r in rows if r.get("phase") in ("2", "phase2")})
        info["documents_assigned"] = len({r["document"] for r in rows})
    else:
        info["annotators"] = len([p for p in (campaign / PHASE1_DIR).iterdir() if p.is_dir()])
    # phase-1 discards: a sentence discarded by at least one of its annotators (a calibration copy is not
    # campaign work), counted once per reason given
    reasons: dict[str, set[str]] = {}
    mine = phase1_assignments(campaign)
    for person_dir in sorted(p for p in (campaign / PHASE1_DIR).glob("*") if p.is_dir()):
        docs, _issues = read_directory(person_dir)  # issues were logged with the agreement tables
        for d in docs:
            if d.name not in mine.get(person_dir.name, set()):
                continue
            for t in d.textbounds:
                if t.type == DISCARD_TYPE:
                    given = [a.value for a in d.attributes if a.target == t.id and a.type == DISCARD_REASON]
                    reasons.setdefault(d.name, set()).update(v or UNSPECIFIED_REASON for v in given or [None])
    info["discarded_phase1"] = len(reasons)
    info["discard_reasons"] = dict(sorted(Counter(r for rs in reasons.values() for r in rs).items()))
    report = final / REPORT_JSON
    if report.is_file():
        done = json.loads(report.read_text(encoding="utf-8"))
        info["held_back"] = len(done.get("held_back", []))
        info["pending_phase2"] = len(done.get("pending", []))
        info["discarded_phase2"] = len(done.get("discarded", []))
    info["accounting"] = accounting(assigned, released, final, {k: sorted(v) for k, v in reasons.items()})
    return info


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


def log_pubtator_losses(losses: Mapping[str, Counter[str]]) -> None:
    """Log each kind of PubTator loss once for the whole release, naming the files that have it.

    Args:
        losses: Per PubTator file (path in the release), what it could not hold
            (``write_formats``'s ``losses``).
    """
    kinds = sorted({k for c in losses.values() for k in c})
    for kind in kinds:
        files = [(path, c[kind]) for path, c in sorted(losses.items()) if c[kind]]
        log.warning("release: the PubTator format cannot hold them, %s: %s (see pipeline/brat/pubtator.py)", kind,
                    ", ".join(f"{path} {n}" for path, n in files))


def release(inputs: ReleaseInputs, out: str | Path, schema: Schema) -> dict[str, Any]:
    """Write the release of FINAL (see the module docstring).

    Everything the datasheet will state is checked before anything is written; the release is built in a
    staging directory beside ``out`` and swapped in whole.

    Args:
        inputs: What the release is made from.
        out: The release directory: absent, empty, or an earlier release.
        schema: The schema.

    Returns:
        What ``release.json`` holds.

    Raises:
        ReleaseError: If FINAL cannot be released as it is, the decisions are not applied to it, it holds
            documents the campaign does not assign or that are not sentences of the build, ``out`` and
            FINAL overlap, an input cannot be read, the licence is not an SPDX id, or (``strict_metadata``)
            the authors or the licence are missing; nothing is written then.
        FinalizeError: If ``out`` is an unrelated non-empty directory.
        DecisionsError: If a decisions file cannot be applied.
        NotADirectoryError: If ``previous`` is not a release directory.
    """
    out_dir = Path(out)
    check_out_apart(inputs.final, out_dir)
    check_output(out_dir, SUMS)
    # the small inputs first, so a typo there is reported before the corpus is read
    names = [p.name for p in inputs.decisions]
    if len(set(names)) != len(names):
        raise ReleaseError(f"decisions files need distinct names, got {names}")
    decisions = decision_rows(inputs.decisions, schema)
    cfg = inputs.export_config
    try:
        meta = meta_mod.metadata(inputs.name or None, inputs.description or None, inputs.authors,
                                 inputs.license or None, inputs.citation, inputs.pgxcorpus_method, cfg.license)
        lic = meta_mod.licence(meta.license) if meta.license else None
    except meta_mod.MetadataError as exc:
        raise ReleaseError(f"{exc}; nothing released") from exc
    gaps = meta_mod.missing(meta)
    if gaps and inputs.strict_metadata:
        raise ReleaseError("--strict-metadata: " + "; ".join(gaps) + "; nothing released")
    prov = provenance(inputs.manifest) if inputs.manifest else None
    if inputs.previous is not None and not (inputs.previous / "brat").is_dir():
        raise NotADirectoryError(f"{inputs.previous}: not a release directory (no brat/ in it)")
    preannotation = inputs.preannotation
    if preannotation is None and inputs.manifest is not None:
        built = json.loads(inputs.manifest.read_text(encoding="utf-8")).get("outputs", {}).get("brat")
        preannotation = Path(built) if built and Path(built).is_dir() else None
    docs = read_final(inputs.final, schema)
    # what the datasheet will state is checked against FINAL before anything is written
    if inputs.decisions:
        not_applied = decisions_not_applied(docs, [(p.name, load_decisions(p, schema)) for p in inputs.decisions],
                                            schema)
        if not_applied:
            raise ReleaseError(f"{inputs.final}: --decisions not applied to FINAL, nothing released (run "
                               "`pgx-corpus decisions apply` on FINAL first): " + "; ".join(not_applied))
    assigned = check_campaign(docs, inputs.campaign) if inputs.campaign is not None else None
    if inputs.manifest is not None:
        check_manifest(docs, inputs.manifest)
    counts: Counter[str] = Counter()
    # a FINAL of an older campaign may hold modality as relation attributes: the release writes notes; the
    # machine's provenance notes (older brat exports) are never released
    docs = [without_machine_notes(relation_notes_in_corpus_form(d, counts), counts) for d in docs]
    for gap in gaps:
        log.warning("release: %s", gap)
    # relation types stay as annotated in every file: no relation_map here (it is `export`'s training view)
    tables, stats = corpus_tables(docs, schema)
    extra: dict[str, Any] = {}
    if inputs.campaign is not None:
        agree, extra["agreement"] = agreement_tables(inputs.campaign, {d.name for d in docs}, schema)
        tables += agree
    if preannotation is not None:
        t10, extra["preannotation"] = preannotation_table(preannotation, docs, schema)
        tables.append(t10)
    prefix = data_mod.config_name(meta.name)
    tmp = staging_dir(out_dir)
    try:
        brat = tmp / "brat"
        brat.mkdir()
        final_conf = inputs.final / "annotation.conf"
        if final_conf.is_file() and not relation_attribute_names(final_conf.read_text(encoding="utf-8")):
            copy_conf_files(inputs.final, brat, CONF_FILES)
        else:
            write_conf_files(brat, schema)
        for d in docs:
            (brat / f"{d.name}.txt").write_text(d.text, encoding="utf-8", newline="\n")
            (brat / f"{d.name}.ann").write_text(dumps(d), encoding="utf-8", newline="\n")
        write_tar_gz(brat, tmp / "brat.tar.gz", meta.name)
        plain = replace(cfg, relation_map={})
        fmt_counts: Counter[str] = Counter()
        losses: dict[str, Counter[str]] = {}
        exports = [("brat", "brat", brat)]
        exports += data_mod.write_formats(docs, tmp, "corpus", schema, inputs.date, meta.name, plain, fmt_counts,
                                          losses)
        (tmp / "bioc" / export_mod.BIOC_KEY_FILE).write_text(export_mod.bioc_key(schema), encoding="utf-8",
                                                             newline="\n")
        splits = export_mod.export(docs, "splits", tmp / "splits", schema, config=plain)
        parts = {name: (tmp / "splits" / f"pmids_{name}.txt").read_text(encoding="utf-8").split()
                 for name in data_mod.SPLITS}
        by_split = data_mod.split_of(docs, parts)
        for name in data_mod.SPLITS:
            split_dir = tmp / "splits" / name
            split_dir.mkdir(exist_ok=True)
            copy_conf_files(brat, split_dir, CONF_FILES)
            data_mod.write_formats(by_split[name], tmp, name, schema, inputs.date, meta.name, plain, losses=losses)
        log_pubtator_losses(losses)
        hf = data_mod.write_hf(by_split, tmp, prefix)
        exports += [("Hugging Face bigbio_kb (Parquet, all splits)", "bigbio_kb", tmp / "hf" / f"{prefix}_bigbio_kb"),
                    ("Hugging Face source (Parquet, all splits)", "source", tmp / "hf" / f"{prefix}_source")]
        spacy_counts = data_mod.write_spacy(by_split, tmp)
        exports.append(("spaCy DocBin (all splits)", "spacy", tmp / "spacy"))
        folds = data_mod.write_folds(docs, tmp)
        fold_of = folds.pop("fold_of", {})
        offsets = data_mod.record_offsets(inputs.manifest, docs)
        (tmp / "sentences.tsv").write_text(data_mod.sentence_map(docs, by_split, fold_of, offsets),
                                           encoding="utf-8", newline="\n")
        (tmp / "GUIDELINES.md").write_text(
            data_mod.annotation_scheme((brat / "annotation.conf").read_text(encoding="utf-8"), meta.name,
                                       stats["relations"], meta.pgxcorpus_method),
            encoding="utf-8", newline="\n")
        previous_brat = inputs.previous / "brat" if inputs.previous is not None else None
        (tmp / "CHANGELOG.md").write_text(data_mod.changelog(docs, previous_brat, inputs.version,
                                                             previous_version(inputs.previous)),
                                          encoding="utf-8", newline="\n")
        cff = meta_mod.citation_cff(meta, inputs.version, inputs.date, lic)
        if cff is not None:
            (tmp / "CITATION.cff").write_text(cff, encoding="utf-8", newline="\n")
        if lic is not None and lic.text is not None:
            (tmp / LICENSE_FILE).write_text(lic.text.rstrip("\n") + "\n", encoding="utf-8", newline="\n")
        declared = formats_mod.format_table(docs, exports, schema, tmp)
        write_tables(tables, tmp / "tables")
        if inputs.decisions:
            (tmp / "decisions").mkdir()
            for path in inputs.decisions:
                (tmp / "decisions" / path.name).write_bytes(path.read_bytes())
        kb_total: Counter[str] = Counter()
        for c in hf["bigbio_kb"].values():
            kb_total.update(c)
        info: dict[str, Any] = {
            "name": meta.name,
            "version": inputs.version,
            "date": inputs.date,
            "description": meta.description,
            "authors": meta_mod.author_names(meta),
            "citation_cff": cff is not None,
            "citation_file": meta.citation_file or None,
            "citation_carried": sorted(meta.carried),
            "pgxcorpus_method": meta.pgxcorpus_method,
            "license": lic.id if lic else None,
            "license_name": lic.name if lic else None,
            "license_uri": lic.uri if lic else None,
            "license_file": LICENSE_FILE if lic is not None and lic.text is not None else None,
            "license_list": lic.source if lic else None,
            "metadata_missing": gaps,
            "stats": {"sentences": len(docs), "abstracts": stats["abstracts"],
                      "entities": stats["entity_totals"]["total"], "relations": stats["relation_total"]},
            "relation_types": dict(stats["relations"]),
            "modality": {"tokens": stats["modality_tokens"], "normalized": stats["modality_totals"],
                         "paper_rule": stats["modality_totals_paper"]},
            "export": {"relation_map": {}, "relation_map_not_applied": cfg.relation_map,
                       "pubtator_level": cfg.pubtator_level, "pubtator_discontiguous": cfg.pubtator_discontiguous,
                       "conll_scheme": cfg.conll_scheme, "conll_outermost_misaligned": fmt_counts["conll_misaligned"],
                       "conll_outermost_not_in_first_layer": fmt_counts["conll_not_in_first_layer"],
                       "pubtator_documents": fmt_counts["pubtator_documents"],
                       "pubtator_empty_titles": fmt_counts["pubtator_empty_titles"],
                       "pubtator_losses": {k: dict(sorted(v.items())) for k, v in sorted(losses.items())},
                       "bioc_validate": {k.removeprefix("bioc_"): fmt_counts[k] for k in (
                           "bioc_annotations", "bioc_discontiguous", "bioc_validate_flagged",
                           "bioc_validate_flagged_discontiguous")}},
            "formats": declared,
            "huggingface": {"configs": [f"{prefix}_source", f"{prefix}_bigbio_kb"], "default": f"{prefix}_source",
                            "splits": {data_mod.HF_SPLITS[k]: len(v) for k, v in by_split.items()},
                            "bigbio_kb": {"entities": kb_total["entities"], "relations": kb_total["relations"],
                                          "relations_excluded_modality": kb_total["relations_excluded_modality"],
                                          "relations_excluded_arguments": kb_total["relations_excluded_arguments"]},
                            "per_split": hf},
            "spacy": spacy_counts,
            "splits": {"ratios": splits["ratios"], "seed": splits["seed"], "splits": splits["splits"]},
            "folds": folds,
            "sentence_offsets": len(offsets),
            "campaign": _campaign_info(inputs.campaign, inputs.final, assigned or [], [d.name for d in docs]),
            "machine_notes": {"dropped": counts["machine_notes_dropped"],
                              "trimmed": counts["machine_notes_trimmed"]},
            "provenance": prov,
            "tables": [t.name for t in tables],
            "decisions": decisions,
            **extra,
        }
        card = data_mod.hf_front_matter(prefix, lic.id if lic else None, meta.name, list(hf["bigbio_kb"]))
        (tmp / "README.md").write_text(card + datasheet(info, tables), encoding="utf-8", newline="\n")
        (tmp / RELEASE_JSON).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8",
                                        newline="\n")
        (tmp / SUMS).write_text(sha256sums(tmp), encoding="utf-8", newline="\n")
        publish_dir(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info
