"""Who may do which brat action on which collection and document.  Deny by default.

A person reaches exactly their own collections (campaign-relative names, brat's ``/phase1/alice/``):

* ``phase1/<id>`` with the ``annotator`` role (while that collection exists);
* ``phase2/<id>`` with the ``senior`` role, once ``campaign review`` has written it (one person may hold
  both);
* either only when ``campaign.json`` names the person (its ``people``; reread when it changes);
* with the ``manager`` role, every ``phase1/<x>`` and ``phase2/<x>``, and ``final`` (the ``FINAL`` that the
  campaign's finalize record names, else ``CAMPAIGN_DIR/final``) when it exists, all read-only.

Nothing else is served: not the campaign root, ``preannotation/``, ``review/``, other people's collections,
``access/`` (users), ``journal/``, ``locks/`` or any configuration outside a collection.  The collections
are looked up on every request, so new people and collections need no restart.

Every brat action is on one of the lists below or refused
([`REFUSED_ACTIONS`][pipeline.serve.policy.REFUSED_ACTIONS] are brat actions the campaign never needs:
importing, deleting, SVG export, normalization look-ups, conversion).  ``tag`` is a write that names
one tagger only, [`TAGGER_ID`][pipeline.serve.policy.TAGGER_ID], in the person's own writable phase-1
collection: serve answers it itself (relation suggestions), and any other tagger id is refused.
``collection`` must be one of the person's collections; ``document`` must name one document in it by
its plain name: no ``/``, no ``.`` or ``..`` component, nothing hidden (``a..b_1`` is a valid name).

Documents become read-only to the people who edit them: a phase-1 document once ``campaign review`` has
merged it into phase 2 (its ``.ann`` is in a ``phase2/<senior>/`` collection), a phase-2 document once it
is finalized: the campaign's finalize record names it ([`pipeline.campaign.finalized`][pipeline.campaign.finalized],
wherever ``FINAL`` is), or its ``.ann`` is in ``CAMPAIGN_DIR/final/`` (campaigns finalized before the record).
An unreadable record makes every phase-2 document read-only (deny by default).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pipeline.campaign.finalized import RecordError, read_record, record_path
from pipeline.campaign.layout import CAMPAIGN_MANIFEST, FINAL_DIR, PHASE1_DIR, PHASE2_DIR, CampaignError, read_campaign
from pipeline.campaign.users import Person

log = logging.getLogger(__name__)

READ_ACTIONS = frozenset({
    "getCollectionInformation", "getDocument", "getDocumentTimestamp", "downloadFile", "downloadCollection",
    "searchTextInDocument", "searchEntityInDocument", "searchEventInDocument", "searchRelationInDocument",
    "searchNoteInDocument", "searchTextInCollection", "searchEntityInCollection", "searchEventInCollection",
    "searchRelationInCollection", "searchNoteInCollection", "logAnnotatorAction",
})
"""brat actions that read a collection or a document."""
WRITE_ACTIONS = frozenset({"createSpan", "deleteSpan", "splitSpan", "createComment", "createArc", "reverseArc",
                           "deleteArc", "undo", "tag"})
"""brat actions that change a document's annotations (``tag`` with [`TAGGER_ID`][pipeline.serve.policy.TAGGER_ID]
only, in the person's own phase-1 collection)."""
TAGGER_ID = "pgx-suggest-relations"
"""The one tagger ``tag`` may name: relation suggestions ([`pipeline.serve.suggest`][pipeline.serve.suggest])."""
SESSION_ACTIONS = frozenset({"saveConf", "loadConf"})
"""brat actions that only touch the person's session (brat's client options)."""
AUTH_ACTIONS = frozenset({"login", "logout", "whoami"})
"""Actions handled by the project itself ([`pipeline.serve.sessions`][pipeline.serve.sessions])."""
REFUSED_ACTIONS = frozenset({"importDocument", "storeSVG", "retrieveStored", "suggestSpanTypes",
                             "deleteDocument", "deleteCollection", "normGetName", "normSearch", "normData",
                             "getConfiguration", "convert"})
"""brat actions never served."""
DOCUMENT_ACTIONS = frozenset({"getDocument", "getDocumentTimestamp", "downloadFile", "searchTextInDocument",
                              "searchEntityInDocument", "searchEventInDocument", "searchRelationInDocument",
                              "searchNoteInDocument"}) | WRITE_ACTIONS
"""Actions whose ``document`` argument names one document."""
DOWNLOAD_EXTENSIONS = frozenset({"txt", "ann"})
"""The file extensions ``downloadFile`` may send."""

ROLE_ANNOTATOR, ROLE_SENIOR, ROLE_MANAGER = "annotator", "senior", "manager"
_NAME_RE = re.compile(r"^[^/\\\x00]+$")


@dataclass(frozen=True)
class Collection:
    """One collection a person reaches: its campaign-relative name, its directory, and whether they edit it.

    Attributes:
        name: The campaign-relative name, e.g. ``phase1/alice`` (brat's ``/phase1/alice/``).
        path: The collection's directory.
        role: The role through which the person reaches it (``annotator``, ``senior``, ``manager``).
        writable: Whether the person may edit its documents (never for a manager's view).
    """

    name: str
    path: Path
    role: str
    writable: bool


@dataclass(frozen=True)
class Decision:
    """The answer for one request: allowed, or refused with a reason the person sees.

    Attributes:
        allowed: Whether the action may run.
        reason: Why it is refused, shown to the person (empty when allowed).
        kind: ``read``, ``write`` or ``session`` when allowed.
        collection: The collection the action is on, or None (session actions, root listings).
        document: The document the action is on: its absolute path without extension, or None.
        root_listing: Whether it is ``getCollectionInformation`` of ``/``, ``/phase1/`` or ``/phase2/``,
            answered with the person's own collections only.
        virtual: That directory: ``""``, ``phase1`` or ``phase2``.
    """

    allowed: bool
    reason: str = ""
    kind: str = ""
    collection: Collection | None = None
    document: Path | None = None
    root_listing: bool = False
    virtual: str = ""

    @property
    def document_key(self) -> str | None:
        """The document's key (``phase1/alice/100_1``, as the journal and locks name it), or None."""
        if self.collection is None or self.document is None:
            return None
        return f"{self.collection.name}/{self.document.name}"


def refuse(reason: str) -> Decision:
    """Build a refusal.

    Args:
        reason: The message the person sees.

    Returns:
        A decision that is not allowed.
    """
    return Decision(False, reason)


def split_collection(value: str | None) -> tuple[str, ...] | None:
    """Split brat's ``collection`` argument into its components.

    Args:
        value: The argument as sent (``/phase1/alice/``), or None.

    Returns:
        The components (``("phase1", "alice")``; empty for ``/`` or no argument); None when it does not
            start with ``/``, holds a NUL or a backslash, or has a ``.``/``..`` component.
    """
    if value is None:
        return ()
    if not isinstance(value, str) or not value.startswith("/") or "\x00" in value or "\\" in value:
        return None
    parts = tuple(p for p in value.split("/") if p)
    if any(p in (".", "..") for p in parts):
        return None
    return parts


def valid_document_name(name: str | None) -> bool:
    """Tell whether a value is a plain document name.

    Args:
        name: The ``document`` argument, or None.

    Returns:
        True for one path component (no ``/``, backslash or NUL), not ``.``/``..``, not hidden
            (``a..b_1`` is valid), short enough to be a file name with its extension (251 bytes at most).
    """
    return (isinstance(name, str) and bool(_NAME_RE.match(name)) and name not in (".", "..")
            and not name.startswith(".") and len(name.encode("utf-8", "surrogatepass")) <= 251)


class Policy:
    """The campaign's authorization (see the module docstring).

    Args:
        campaign_dir: The campaign directory.

    Attributes:
        root: The resolved campaign directory.
    """

    def __init__(self, campaign_dir: Path) -> None:
        self.root = Path(campaign_dir).resolve()
        self._people: tuple[tuple[int, int] | None, frozenset[str]] = (None, frozenset())
        self._record: tuple[tuple[int, int, int] | None, Path | None, frozenset[str] | None] = (None, None,
                                                                                               frozenset())

    def finalized(self) -> tuple[Path, frozenset[str] | None]:
        """Return ``FINAL``'s directory and the documents the finalize record names, reread when it changes.

        Returns:
            The ``FINAL`` the record names and its documents' names; ``CAMPAIGN_DIR/final`` and no name
                when there is no record (campaigns finalized before it); ``CAMPAIGN_DIR/final`` and None
                when the record cannot be read (logged as an error).
        """
        path = record_path(self.root)
        try:
            st = path.stat()
            stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        if stamp is None:
            return self.root / FINAL_DIR, frozenset()
        if stamp != self._record[0]:
            try:
                record = read_record(self.root)
                final, names = ((record.final, frozenset(record.documents)) if record is not None
                                else (None, frozenset()))
            except RecordError as exc:
                log.error("%s: every phase-2 document is read-only until it is mended", exc)
                final, names = None, None
            self._record = (stamp, final, names)
        return self._record[1] or self.root / FINAL_DIR, self._record[2]

    def campaign_people(self) -> frozenset[str]:
        """Return the ids ``campaign.json`` names, reread when the file changes.

        Returns:
            The ids of its ``people``; none when it cannot be read (deny by default).
        """
        path = self.root / CAMPAIGN_MANIFEST
        try:
            st = path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            return frozenset()
        if stamp != self._people[0]:
            try:
                people = frozenset(str(p["id"]) for p in read_campaign(self.root).get("people", []))
            except (CampaignError, KeyError, TypeError):
                people = frozenset()
            self._people = (stamp, people)
        return self._people[1]

    # --- collections -----------------------------------------------------------------------------

    def _subdirs(self, phase: str) -> list[Path]:
        base = self.root / phase
        if not base.is_dir() or base.is_symlink():
            return []
        return sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink() and valid_document_name(p.name))

    def collections(self, person: Person | None) -> dict[str, Collection]:
        """Return the collections a person reaches (see the module docstring).

        Args:
            person: The logged-in person, or None.

        Returns:
            The collections by campaign-relative name; none for nobody or a revoked person.
        """
        out: dict[str, Collection] = {}
        if person is None or person.revoked:
            return out
        if ROLE_MANAGER in person.roles:
            for phase in (PHASE1_DIR, PHASE2_DIR):
                for path in self._subdirs(phase):
                    out[f"{phase}/{path.name}"] = Collection(f"{phase}/{path.name}", path, ROLE_MANAGER, False)
            final = self.finalized()[0]
            if final.is_dir() and not final.is_symlink():
                out[FINAL_DIR] = Collection(FINAL_DIR, final, ROLE_MANAGER, False)
        known = person.id in self.campaign_people()
        for role, phase in ((ROLE_ANNOTATOR, PHASE1_DIR), (ROLE_SENIOR, PHASE2_DIR)):
            path = self.root / phase / person.id
            if role in person.roles and known and valid_document_name(person.id) and path.is_dir() \
                    and not path.is_symlink():
                out[f"{phase}/{person.id}"] = Collection(f"{phase}/{person.id}", path, role, True)
        return out

    def document_read_only(self, collection: Collection, name: str) -> str | None:
        """Say why a document cannot be edited by its collection's owner now.

        Args:
            collection: The collection.
            name: The document's name (file stem).

        Returns:
            The reason (read-only collection, merged into phase 2, finalized), or None when it can be
                edited.
        """
        if not collection.writable:
            return f"{collection.name} is read-only for you"
        if collection.name.startswith(PHASE1_DIR + "/"):
            for senior in self._subdirs(PHASE2_DIR):
                if (senior / f"{name}.ann").exists() or (senior / f"{name}.txt").exists():
                    return f"{name} has been merged into phase 2; it is read-only now"
        elif collection.name.startswith(PHASE2_DIR + "/"):
            names = self.finalized()[1]
            if names is None:
                return "the campaign's finalize record cannot be read; phase 2 is read-only until it is mended"
            if name in names or (self.root / FINAL_DIR / f"{name}.ann").exists():
                return f"{name} has been finalized; it is read-only now"
        return None

    # --- decisions -------------------------------------------------------------------------------

    def authorize(self, person: Person | None, action: str | None, params: Mapping[str, str | None]) -> Decision:
        """Decide whether a person may run a brat action; nothing here changes a file.

        Args:
            person: The logged-in person, or None.
            action: brat's ``action`` argument, or None.
            params: The request's other arguments (``collection``, ``document``, ``extension`` ...).

        Returns:
            The decision: allowed (with the collection and document resolved) or refused with the reason
                shown to the person.
        """
        if action is None or action in AUTH_ACTIONS:
            return refuse("no action" if action is None else f"{action} is not a brat action here")
        if action in REFUSED_ACTIONS:
            return refuse(f"The action {action} is not available in this campaign.")
        if action not in READ_ACTIONS | WRITE_ACTIONS | SESSION_ACTIONS:
            return refuse(f"Unknown action {action}.")
        doc = params.get("document")
        if doc and not valid_document_name(doc):
            return refuse("Refused: the document name is malformed (a path, '..', or hidden).")
        parts = split_collection(params.get("collection"))
        if parts is None:
            return refuse("Refused: the collection path is malformed or has a '.' or '..' component.")
        name = "/".join(parts)
        root_listing = action == "getCollectionInformation" and (not parts or name in (PHASE1_DIR, PHASE2_DIR))
        if person is None:
            if action == "loadConf":
                return Decision(True, kind="session")  # brat's client asks on every page; nothing stored yet
            if root_listing:
                return Decision(True, kind="read", root_listing=True, virtual=name)
            return refuse("Log in first (Login button, top right).")
        if person.revoked:
            return refuse("Your access has ended.")
        if action in SESSION_ACTIONS:
            return Decision(True, kind="session")
        owned = self.collections(person)
        if root_listing:
            return Decision(True, kind="read", root_listing=True, virtual=name)
        collection = owned.get(name)
        if collection is None:
            return refuse(f"Access denied: /{name}/ is not one of your collections.")
        real = collection.path.resolve()
        inside = real.parent.parent == self.root or real.parent == self.root
        if not inside and not (name == FINAL_DIR and real == self.finalized()[0].resolve()):
            return refuse(f"Access denied: /{name}/ is not one of your collections.")
        if action == "tag":
            if params.get("tagger") != TAGGER_ID:
                return refuse("There is no such automatic annotation here.")
            if not (collection.writable and name.startswith(PHASE1_DIR + "/")):
                return refuse(f"Relation suggestions are offered in your phase-1 collection only, not in /{name}/.")
        kind = "write" if action in WRITE_ACTIONS else "read"
        document: Path | None = None
        if action in DOCUMENT_ACTIONS or (action == "logAnnotatorAction" and params.get("document")):
            if not valid_document_name(doc):
                return refuse("Refused: the document name is malformed (a path, '..', or hidden).")
            assert doc is not None
            if not (real / f"{doc}.txt").is_file():
                return refuse(f"There is no document {doc} in /{name}/.")
            document = real / doc
        if action == "downloadFile" and params.get("extension") not in DOWNLOAD_EXTENSIONS:
            return refuse("Only the .txt and .ann of a document can be downloaded.")
        if kind == "write":
            assert document is not None
            why = self.document_read_only(collection, document.name)
            if why is not None:
                return refuse(f"Not saved: {why}.")
        return Decision(True, kind=kind, collection=collection, document=document)
