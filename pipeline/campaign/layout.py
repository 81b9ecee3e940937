"""The campaign directory: the name of each of its parts, the reading of its manifest, and its errors.

Every campaign command and ``campaign serve`` find a part of ``CAMPAIGN_DIR`` by the name given here, and
read ``campaign.json`` with [`read_campaign`][pipeline.campaign.layout.read_campaign]; every error of a
campaign that cannot be written or read as asked is a [`CampaignError`][pipeline.campaign.layout.CampaignError].
[`TOP_LEVEL`][pipeline.campaign.layout.TOP_LEVEL] lists every entry a campaign directory may hold; the
reference page "The campaign directory" says what each holds and which command writes it.  The modules that
write a part keep its format (``pipeline.campaign.users`` the users file, ``pipeline.campaign.journal`` the
journal, ...); this module only names it.

``campaign.json`` ([`CAMPAIGN_MANIFEST`][pipeline.campaign.layout.CAMPAIGN_MANIFEST], read by
[`read_campaign`][pipeline.campaign.layout.read_campaign]): ``{"format", "seed", "people": [{"id", "role", "phase1",
"roster"}], "documents": [{"document", "files", "phase1": [two ids], "phase2": id}], "provenance"}`` (build run,
schema and guideline version: [`pipeline.campaign.origin`][pipeline.campaign.origin]; team changes add keys, see
[`pipeline.campaign.assignments`][pipeline.campaign.assignments]) where ``files`` are the
names of the brat documents of that document (itself, its pages, or none when it is missing from the
collection).

The brat types and attributes named here carry the annotators' decisions.
In brat, an annotator discards a sentence with an entity of type [`DISCARD_TYPE`][pipeline.campaign.layout.DISCARD_TYPE]
(on any span of the sentence) whose [`DISCARD_REASON`][pipeline.campaign.layout.DISCARD_REASON] attribute takes one of
[`DISCARD_REASONS`][pipeline.campaign.layout.DISCARD_REASONS].  In phase 2, an entity that only one annotator made, or
that the two typed differently, carries the [`DISAGREEMENT`][pipeline.campaign.layout.DISAGREEMENT] attribute whose
value names its annotator; the senior accepts it by removing the attribute, or rejects it by deleting the entity.  A
relation the annotators disagree on (drawn by one only, or with another modality) has the generated type
``Disputed_<type>`` ([`disputed_type`][pipeline.campaign.conf.disputed_type]; brat's client cannot show attributes on
relations); the senior accepts it by retyping it to ``<type>``, or rejects it by deleting it, and signs the document off
with the ``Done`` marker.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline import names
from pipeline.errors import InputError

# --- the top level of CAMPAIGN_DIR

CAMPAIGN_MANIFEST = "campaign.json"
"""The campaign manifest: people, their roles, and which document each person has in which phase."""
ASSIGNMENTS_CSV = "manifest.csv"
"""The same assignments as ``document,phase,annotator`` rows."""
ASSIGNMENTS_HISTORY = "assignments.jsonl"
"""One JSON line per change of one assignment, never rewritten (``pipeline.campaign.assignments``)."""
PHASE1_DIR = "phase1"
"""``phase1/<person>/``: one blind brat collection per phase-1 annotator."""
PHASE2_DIR = "phase2"
"""``phase2/<senior>/``: one collection per senior, written by ``campaign review``."""
PREANNOTATION_DIR = "preannotation"
"""Every document as handed out, with the source configuration; never served."""
REVIEW_DIR = "review"
"""What ``campaign review`` reports and the merged documents it wrote."""
DEPLOY_NOTE = "DEPLOY.md"
"""How to serve the campaign, who reaches what."""
GITIGNORE_FILE = ".gitignore"
"""Keeps a campaign's secrets and private state out of git (``pipeline.campaign.origin``)."""
ACCESS_DIR = "access"
"""The users' directory (mode 0700, never served)."""
JOURNAL_DIR = "journal"
"""The journal: every version of every document saved through ``campaign serve``."""
LOCKS_DIR = "locks"
"""The lock files: one per document, and the lock of a running ``campaign serve``."""
CALIBRATION_DIR = "calibration"
"""What ``campaign calibrate`` keeps: the reference annotation of its rounds."""
GUIDELINES_DIR = "guidelines"
"""``<version>.json``: the annotations' fingerprints when a guideline version was recorded."""
ARCHIVE_DIR = "archive"
"""A leaving person's partial versions, under the date of the change (the team commands)."""
FINAL_DIR = "final"
"""The finalized collection's name (brat's ``/final/``), and its directory in campaigns finalized before the
finalize record."""
FINALIZE_RECORD = "finalized.json"
"""The finalize record: where ``FINAL`` is, and the version of each document it took."""
MODELS_DIR = "models"
"""The campaign's models (``campaign retrain``)."""
SUGGESTIONS_DIR = "suggestions"
"""The relation suggestions made in each document (``campaign serve``)."""
APPEND_PENDING = ".append.pending.json"
"""The plan of a ``campaign append`` under way, removed when it is done."""
TEAM_PENDING = ".team-pending.json"
"""The plan of a team change under way, removed when it is done."""
IMPORT_PENDING = ".import.pending"
"""Present while ``campaign import`` writes a new campaign, removed when it is done."""

TOP_LEVEL = frozenset({
    CAMPAIGN_MANIFEST, ASSIGNMENTS_CSV, ASSIGNMENTS_HISTORY, PHASE1_DIR, PHASE2_DIR, PREANNOTATION_DIR, REVIEW_DIR,
    DEPLOY_NOTE, GITIGNORE_FILE, ACCESS_DIR, JOURNAL_DIR, LOCKS_DIR, CALIBRATION_DIR, GUIDELINES_DIR, ARCHIVE_DIR,
    FINAL_DIR, FINALIZE_RECORD, MODELS_DIR, SUGGESTIONS_DIR, APPEND_PENDING, TEAM_PENDING, IMPORT_PENDING,
})
"""Every entry the project writes at the top of a campaign directory (temporaries of a killed writer aside)."""
PENDING_FILES = frozenset({APPEND_PENDING, TEAM_PENDING, IMPORT_PENDING})
"""The entries of [`TOP_LEVEL`][pipeline.campaign.layout.TOP_LEVEL] present only while a command is under way (or
was killed)."""

# --- inside the parts

USERS_FILE = "users.json"
"""The users file, in ``access/``."""
USERS_LOCK = "users.lock"
"""The users file's advisory lock, in ``access/``."""
SERVE_LOCK = "serve.lock"
"""In ``locks/``: held by a running ``campaign serve`` (one server per campaign)."""
JOURNAL_OBJECTS_DIR = "objects"
"""In ``journal/``: the bytes of each ``.ann`` version, named by their sha256."""
JOURNAL_LOG = "log.jsonl"
"""In ``journal/``: one JSON line per write."""
REVIEW_MERGED_DIR = "merged"
"""In ``review/``: ``merged/<senior>/``, each merged document as ``campaign review`` wrote it."""
REVIEW_LEDGER = "published.tsv"
"""In ``review/``: the phase-2 documents ``campaign review`` has published."""
REVIEW_REPORT_JSON = "report.json"
"""In ``review/``: the review report."""
REVIEW_REPORT_MD = "report.md"
"""In ``review/``: the review report in Markdown."""
REVIEW_AGREEMENT_JSON = "agreement.json"
"""In ``review/``: the agreement between the annotators."""
REVIEW_AGREEMENT_MD = "agreement.md"
"""In ``review/``: the agreement between the annotators in Markdown."""
CALIBRATION_REFERENCE_DIR = "reference"
"""In ``calibration/``: the reference annotation a calibration round came with."""
MODELS_RELATIONS_DIR = "relations"
"""In ``models/``: the relation scorers, ``NNN.json``, and ``IN_USE``."""
MODELS_ENTITIES_DIR = "entities"
"""In ``models/``: the learned entity models, ``NNN/``."""
MODELS_IN_USE = "IN_USE"
"""In ``models/relations/``: the version ``campaign serve`` uses (``NNN`` or ``shipped``)."""
MODELS_HISTORY = "history.jsonl"
"""In ``models/``: one JSON line per retrain, with its time."""

MANIFEST_FORMAT = "pgx-corpus campaign 1"
"""The ``format`` of ``campaign.json``."""
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""A person id as the campaign takes it: a brat user name, an attribute value and a directory name."""


class CampaignError(InputError):
    """A campaign that cannot be written or read as asked; nothing was written."""


# --- the brat types and attributes of the annotators' decisions

DISCARD_TYPE = "Discard"
"""The brat entity type with which an annotator discards the sentence the entity is in."""
DISCARD_REASON = "Reason"
"""The attribute of a [`DISCARD_TYPE`][pipeline.campaign.layout.DISCARD_TYPE] entity that says why."""
DISCARD_REASONS = ("scope", "ambiguous", "incomplete", "typo", "other")
"""The values of [`DISCARD_REASON`][pipeline.campaign.layout.DISCARD_REASON]."""

DISAGREEMENT = "Disagreement"
"""The phase-2 entity attribute whose value names the one annotator who made (or so typed) the entity."""


def check_ids(ids: Sequence[str], where: str) -> None:
    """Check that every person id can be a user name, an attribute value and a directory name.

    Args:
        ids: The person ids.
        where: What the ids come from (a file, ``roster``), the start of every error message.

    Raises:
        CampaignError: If an id has characters other than letters, digits, ``.``, ``_`` and ``-``, is a
            reserved name ([`pipeline.names`][pipeline.names]), or differs from another one only in case.
    """
    seen: dict[str, str] = {}
    for pid in ids:
        if not ID_RE.match(pid):
            raise CampaignError(f"{where}: id {pid!r} must be letters, digits, '.', '_' or '-' (it becomes a brat "
                                "user name, an attribute value and a directory name)")
        try:
            names.check_person_id(pid, where)  # reserved names: brat's acl.conf, annotation.conf, ...
        except names.NameError_ as exc:
            raise CampaignError(str(exc)) from None
        if pid.lower() in seen and seen[pid.lower()] != pid:
            raise CampaignError(f"{where}: ids {seen[pid.lower()]!r} and {pid!r} differ only in case (their "
                                "collections would clash on a case-insensitive file system)")
        seen[pid.lower()] = pid


def read_campaign(campaign_dir: Path) -> dict[str, Any]:
    """Read and check the campaign manifest ``campaign.json``.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        The parsed manifest (its keys: see the module docstring).

    Raises:
        CampaignError: If the file is missing, unreadable, not JSON, not of this format, or names a
            person or document that cannot name a path; the message names the file.
    """
    path = Path(campaign_dir) / CAMPAIGN_MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CampaignError(f"{path}: no campaign manifest (write the campaign with pgx-corpus batches)") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise CampaignError(f"{path}: cannot read the campaign manifest: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise CampaignError(f"{path}:1: not a campaign manifest of format {MANIFEST_FORMAT!r}")
    _check_names(data, path)
    return data


def _check_names(data: Mapping[str, Any], path: Path) -> None:
    """CampaignError unless every person id and document name of ``campaign.json`` can name a path.

    See ``pipeline.names``: they become ``phase1/<person>/<file>.txt`` for every later command.
    """
    people = data.get("people", [])
    documents = data.get("documents", [])
    if not isinstance(people, list) or not isinstance(documents, list):
        raise CampaignError(f"{path}: people and documents must be lists")
    try:
        for i, person in enumerate(people):
            where = f"{path}: people[{i}]"
            if not isinstance(person, Mapping):
                raise CampaignError(f"{where}: must be an object")
            names.check_person_id(person.get("id"), where)
        for i, entry in enumerate(documents):
            where = f"{path}: documents[{i}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("files", []), list) \
                    or not isinstance(entry.get("phase1", []), list):
                raise CampaignError(f"{where}: must be an object whose files and phase1 are lists")
            names.check_document_name(entry.get("document"), where)
            for name in entry.get("files", []):
                names.check_document_name(name, where)
            for person in [*entry.get("phase1", []), *([entry["phase2"]] if entry.get("phase2") else [])]:
                names.check_person_id(person, where)
    except names.NameError_ as exc:
        raise CampaignError(str(exc)) from None


def access_roles(campaign: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Give the roles ``campaign serve`` gives each person of a campaign.

    ``annotator``: the person has phase-1 documents; ``senior``: the roster says senior, or the person
    has phase-2 documents; ``manager``: the roster says manager.  One person may hold several roles.

    Args:
        campaign: The parsed campaign manifest (``campaign.json``).

    Returns:
        Person -> their roles, sorted by person.
    """
    roles: dict[str, set[str]] = {}
    for person in campaign["people"]:
        if person["role"] in ("senior", "manager"):
            roles.setdefault(person["id"], set()).add(person["role"])
    for entry in campaign["documents"]:
        for person in entry["phase1"]:
            roles.setdefault(person, set()).add("annotator")
        if entry["phase2"]:
            roles.setdefault(entry["phase2"], set()).add("senior")
    return {person: frozenset(r) for person, r in sorted(roles.items())}
