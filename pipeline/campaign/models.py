"""The models a campaign learns from its finished documents: ``CAMPAIGN_DIR/models/``.

``campaign retrain`` writes, under one version number ``NNN`` (three digits or more, the next after every
version present):

* ``models/relations/NNN.json``: a relation scorer (``pgx-corpus train-relations``' format), written once,
  exclusively and atomically;
* ``models/entities/NNN/``: a learned entity model (``pgx-corpus train``'s ``model.json`` and ``meta.json``),
  which the next rebuild uses with ``build --learned CAMPAIGN_DIR/models/entities/NNN``;
* ``models/history.jsonl``: one JSON line per retrain (``time``, ``version``, ``documents``,
  ``data_sha256``), never rewritten; the model files carry no date, so the same inputs give the same bytes.

``campaign serve`` picks its relation scorer with [`select_scorer`][pipeline.campaign.models.select_scorer]:
the newest version that loads, else the shipped one; the version in use goes to ``models/relations/IN_USE``
(``NNN`` or ``shipped``) and every newer file that does not load is logged with its name.  Nothing under
``models/`` is served.

The training data ([`finished_documents`][pipeline.campaign.models.finished_documents]): each finished document
of the campaign once, its ``FINAL`` version where the finalize record names one, else its senior's signed-off
phase-2 version.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat import standoff
from pipeline.brat.standoff import BratDocument
from pipeline.campaign.finalize import remove_annotations, strip_attributes, strip_markers
from pipeline.campaign.finalized import RecordError, read_record
from pipeline.campaign.layout import (
    DISAGREEMENT,
    DISCARD_TYPE,
    MODELS_DIR,
    MODELS_ENTITIES_DIR,
    MODELS_HISTORY,
    MODELS_IN_USE,
    MODELS_RELATIONS_DIR,
    PHASE2_DIR,
)
from pipeline.nlp.relations.rules import RelationRulesError, RelationScorer, load_scorer_file
from pipeline.schema import Schema

log = logging.getLogger(__name__)

SHIPPED = "shipped"
"""The version name of the scorer the relation rules name (``config/relation_scorer.json`` by default)."""
DONE_TYPE = "Done"
"""The senior's sign-off marker."""
DISPUTED_PREFIX = "Disputed_"
"""The prefix of a relation type the annotators disagreed on (``pipeline.campaign.conf``)."""

_VERSION = re.compile(r"^(\d{3,})(\.json)?$")


class ModelsError(ValueError):
    """The campaign's training data or models cannot be read; the message names the file."""


def models_dir(campaign_dir: Path) -> Path:
    """Give ``CAMPAIGN_DIR/models``.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        The path (it may not exist).
    """
    return Path(campaign_dir) / MODELS_DIR


def version_name(number: int) -> str:
    """Give a version's name: the number, zero-padded to three digits.

    Args:
        number: The version number (1 and up).

    Returns:
        ``001``, ``002``, ...
    """
    return f"{number:03d}"


def scorer_versions(campaign_dir: Path) -> list[tuple[int, Path]]:
    """List the relation scorer files ``models/relations/NNN.json``, oldest first.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        ``(number, path)`` in increasing number.
    """
    directory = models_dir(campaign_dir) / MODELS_RELATIONS_DIR
    if not directory.is_dir():
        return []
    out = []
    for p in directory.iterdir():
        m = _VERSION.match(p.name)
        if m is not None and m.group(2) == ".json":
            out.append((int(m.group(1)), p))
    return sorted(out)


def next_version(campaign_dir: Path) -> int:
    """Give the number of the next retrain: one more than every relation or entity version present.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        1 when there is none yet.
    """
    numbers = [n for n, _p in scorer_versions(campaign_dir)]
    entities = models_dir(campaign_dir) / MODELS_ENTITIES_DIR
    if entities.is_dir():
        numbers += [int(m.group(1)) for p in entities.iterdir() if (m := _VERSION.match(p.name)) and not m.group(2)]
    return max(numbers, default=0) + 1


@dataclass(frozen=True)
class ScorerChoice:
    """The relation scorer chosen for a campaign.

    Attributes:
        version: ``NNN`` of the campaign scorer, or ``shipped``.
        scorer: The scorer (None: the shipped rules name none).
        path: Its file (None for a shipped rules file without scorer).
        newest: The newest campaign version present (None: none), loadable or not.
        broken: ``(file, message)`` of every campaign scorer newer than the one chosen that does not load.
    """

    version: str
    scorer: RelationScorer | None
    path: Path | None
    newest: str | None = None
    broken: tuple[tuple[Path, str], ...] = field(default_factory=tuple)


def select_scorer(campaign_dir: Path, schema: Schema, shipped: RelationScorer | None, shipped_path: Path | None,
                  *, write_in_use: bool = True) -> ScorerChoice:
    """Pick the newest campaign scorer that loads, else the shipped one; never raise for a campaign scorer.

    Every newer ``models/relations/NNN.json`` that does not load is logged (warning) with its name and
    skipped.  With ``write_in_use``, the version chosen is written to ``models/relations/IN_USE``
    (``NNN`` or ``shipped`` and a newline, atomically, the directory created if needed; a failure to write
    it is logged, not raised).

    Args:
        campaign_dir: The campaign directory.
        schema: The corpus schema (a scorer naming a relation type it lacks does not load).
        shipped: The scorer the relation rules name (``config/relation_scorer.json`` by default).
        shipped_path: Its file, named in the choice.
        write_in_use: Write ``IN_USE`` (``campaign serve``); False: only read (``campaign retrain``).

    Returns:
        The choice.
    """
    versions = scorer_versions(campaign_dir)
    broken: list[tuple[Path, str]] = []
    choice: ScorerChoice | None = None
    newest = version_name(versions[-1][0]) if versions else None
    for number, path in reversed(versions):
        try:
            scorer = load_scorer_file(path, schema)
        except RelationRulesError as exc:
            log.warning("campaign scorer %s does not load, skipped: %s", path, exc)
            broken.append((path, str(exc)))
            continue
        choice = ScorerChoice(version_name(number), scorer, path, newest, tuple(broken))
        break
    if choice is None:
        choice = ScorerChoice(SHIPPED, shipped, shipped_path, newest, tuple(broken))
    if write_in_use:
        directory = models_dir(campaign_dir) / MODELS_RELATIONS_DIR
        try:
            directory.mkdir(parents=True, exist_ok=True)
            durable.replace_file(directory / MODELS_IN_USE, f"{choice.version}\n".encode(), mode=0o644, umask=False,
                                 durable=True)
        except OSError as exc:
            log.warning("%s: cannot record the relation scorer in use (%s): %s", directory / MODELS_IN_USE,
                        choice.version, exc)
    return choice


def read_in_use(campaign_dir: Path) -> str | None:
    """Read ``models/relations/IN_USE``: the version ``campaign serve`` last chose.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        ``NNN`` or ``shipped``, or None when there is no such file (or it cannot be read).
    """
    try:
        in_use = models_dir(campaign_dir) / MODELS_RELATIONS_DIR / MODELS_IN_USE
        return in_use.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class FinishedDocument:
    """One finished document of a campaign, as training reads it.

    Attributes:
        name: The brat document name.
        source: Where it was read: ``final`` (the finalize record's ``FINAL``) or ``phase2/<senior>``.
        doc: The document (campaign marks, ``Disputed_`` relations and ``Disagreement`` attributes removed).
        txt_sha256: The sha256 of the ``.txt`` read.
        ann_sha256: The sha256 of the ``.ann`` read (before the marks were removed).
    """

    name: str
    source: str
    doc: BratDocument
    txt_sha256: str
    ann_sha256: str


def _read(txt: Path, ann: Path, name: str) -> tuple[BratDocument, str, str, list[str]]:
    text = standoff.read_text(txt)
    raw = standoff.read_text(ann)
    doc, issues = standoff.parse_ann(name, text, raw, str(ann))
    return (doc, hashlib.sha256(text.encode("utf-8")).hexdigest(), hashlib.sha256(raw.encode("utf-8")).hexdigest(),
            [str(i) for i in issues])


def _cleaned(doc: BratDocument, counts: Counter[str]) -> BratDocument:
    disputed = [r.id for r in doc.relations if r.type.startswith(DISPUTED_PREFIX)]
    counts["disputed_relations_removed"] += len(disputed)
    doc, _gone = remove_annotations(doc, disputed)
    doc = strip_attributes(doc, (DISAGREEMENT,), counts)
    return strip_markers(doc, counts)


def finished_documents(campaign_dir: Path, counts: Counter[str] | None = None) -> list[FinishedDocument]:
    """Collect a campaign's finished documents, each once, sorted by name.

    A document the finalize record names is read from its ``FINAL``.  Any other document is read from
    ``phase2/<senior>/`` when its senior signed it off (a ``Done`` marker) and did not discard it; its
    ``Disputed_`` relations (with their notes), its ``Disagreement`` attributes and its ``Done`` markers are
    removed.  A signed-off document in two seniors' collections is left out (logged, counted
    ``ambiguous``); one that does not parse is left out (each line logged, counted ``parse_issues``).

    Args:
        campaign_dir: The campaign directory.
        counts: Updated with ``from_final``, ``from_phase2``, ``not_signed_off``, ``discarded``,
            ``ambiguous``, ``parse_issues``, ``disputed_relations_removed``, ``attributes_removed:Disagreement``.

    Returns:
        The documents.

    Raises:
        ModelsError: If the finalize record cannot be read, or a document it names is missing from
            ``FINAL`` or cannot be read (the message names the file).
    """
    counts = counts if counts is not None else Counter()
    campaign = Path(campaign_dir)
    try:
        record = read_record(campaign)
    except RecordError as exc:
        raise ModelsError(str(exc)) from exc
    out: dict[str, FinishedDocument] = {}
    if record is not None:
        for name in sorted(record.documents):
            txt, ann = record.final / f"{name}.txt", record.final / f"{name}.ann"
            try:
                doc, txt_sha, ann_sha, issues = _read(txt, ann, name)
            except (OSError, standoff.BratTextError) as exc:
                raise ModelsError(f"{ann}: named by the finalize record, cannot be read: {exc}") from exc
            if issues:
                raise ModelsError(f"{issues[0]} (a document of FINAL, named by the finalize record)")
            out[name] = FinishedDocument(name, "final", _cleaned(doc, counts), txt_sha, ann_sha)
            counts["from_final"] += 1
    signed: dict[str, list[FinishedDocument]] = {}
    phase2 = campaign / PHASE2_DIR
    seniors = sorted(p for p in phase2.iterdir() if p.is_dir() and not p.is_symlink()) if phase2.is_dir() else []
    for senior_dir in seniors:
        for ann in sorted(senior_dir.glob("*.ann")):
            name = ann.stem
            txt = ann.with_suffix(".txt")
            if name in out or not txt.is_file() or ann.is_symlink() or txt.is_symlink():
                continue
            try:
                doc, txt_sha, ann_sha, issues = _read(txt, ann, name)
            except (OSError, standoff.BratTextError) as exc:
                log.warning("%s: left out of the training data: %s", ann, exc)
                counts["parse_issues"] += 1
                continue
            if issues:
                for issue in issues:
                    log.warning("%s (left out of the training data)", issue)
                counts["parse_issues"] += 1
                continue
            types = {t.type for t in doc.textbounds}
            if DISCARD_TYPE in types:
                counts["discarded"] += 1
                continue
            if DONE_TYPE not in types:
                counts["not_signed_off"] += 1
                continue
            signed.setdefault(name, []).append(
                FinishedDocument(name, f"{PHASE2_DIR}/{senior_dir.name}", doc, txt_sha, ann_sha))
    for name, found in sorted(signed.items()):
        if len(found) > 1:
            log.warning("%s: signed off in %s: left out of the training data", name,
                        ", ".join(f.source for f in found))
            counts["ambiguous"] += 1
            continue
        f = found[0]
        out[name] = FinishedDocument(name, f.source, _cleaned(f.doc, counts), f.txt_sha256, f.ann_sha256)
        counts["from_phase2"] += 1
    return [out[n] for n in sorted(out)]


def append_history(campaign_dir: Path, entry: Mapping[str, Any]) -> None:
    """Append one line to ``models/history.jsonl``, with the current UTC time, and flush it.

    Args:
        campaign_dir: The campaign directory (``models/`` exists).
        entry: What to record (``time`` is added).
    """
    path = models_dir(campaign_dir) / MODELS_HISTORY
    line = json.dumps({"time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), **entry}, sort_keys=True)
    durable.append_bytes(path, (line + "\n").encode("utf-8"), mode=0o644)


def models_status(campaign_dir: Path) -> dict[str, Any]:
    """Say which relation scorer ``campaign serve`` uses and which versions exist (``campaign status``).

    Args:
        campaign_dir: The campaign directory.

    Returns:
        ``in_use``: the version ``models/relations/IN_USE`` names (None: none recorded); ``newest``: the
            newest ``models/relations/NNN.json`` (None: none); ``newest_entities``: the newest
            ``models/entities/NNN/`` (None: none).
    """
    versions = scorer_versions(campaign_dir)
    entities = models_dir(campaign_dir) / MODELS_ENTITIES_DIR
    numbers = sorted(int(m.group(1)) for p in entities.iterdir()
                     if (m := _VERSION.match(p.name)) and not m.group(2) and p.is_dir()) if entities.is_dir() else []
    return {"in_use": read_in_use(campaign_dir), "newest": version_name(versions[-1][0]) if versions else None,
            "newest_entities": version_name(numbers[-1]) if numbers else None}
