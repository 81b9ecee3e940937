"""Annotation batches: who annotates and who revises each document of a brat collection.

Input: a brat collection (``NAME.txt``/``NAME.ann`` + configuration files,
as written by [`pipeline.corpus.brat_export`][pipeline.corpus.brat_export]), a roster, a seed, optionally the
manifest of an earlier run.  Output in ``out_dir``:

* the campaign directory of [`pipeline.campaign.phase1`][pipeline.campaign.phase1]: one blind
  brat collection per phase-1 annotator (``phase1/<person>/``, with the
  campaign types and ``guide.md``), the pre-annotation copy,
  ``campaign.json`` and ``DEPLOY.md``; the phase-2
  senior of each document is chosen and recorded, but phase-2 collections
  are written later, by ``campaign review``; with ``page_size`` a long
  document is written as pages ``NAME_p001`` ... of at most ``page_size``
  lines (paragraphs);
* ``manifest.csv``: ``document,phase,annotator`` rows, sorted by (PMID,
  index) then phase then annotator.

Roster file (CSV, or TSV when the first line holds a tab): a header row
with ``id`` and ``role`` columns and an optional ``phase1`` column (without
a header row the columns are id, role, phase1 in that order); ``role`` is
``annotator``, ``senior`` or ``manager``; ``phase1`` (``yes``/``no``, default ``yes``
for annotators and ``no`` for seniors) says whether the person annotates in
phase 1.  A ``manager`` annotates nothing (``phase1`` must be empty or ``no``):
they get read-only access to the campaign's collections through ``campaign
serve``.  Blank lines and lines starting with ``#`` are ignored.  The roster
is checked before anything is written: ids unique and non-empty, known
roles, at least three people besides managers, at least one senior, and a senior able to
revise every document, i.e. some senior ``s`` such that at least two
phase-1 annotators other than ``s`` exist (a senior who also annotates in
phase 1 never revises a document they annotated).

Assignment (deterministic for a given collection, roster and seed):
documents are taken in (PMID, index) order; each gets the two phase-1
annotators with the lowest phase-1 load, ties broken by a seeded hash of
(seed, document, person); if that pair would leave no senior free to
revise, the best pair that does is taken instead.  Phase 2 goes to the
eligible senior (not among the document's phase-1 annotators) with the
lowest phase-2 load, same tie-break.  Loads therefore stay balanced within
one document among the people of a phase whenever the senior constraint
does not bind.

``previous_manifest``: its assignments are kept exactly (they may name
people no longer in the roster) and count towards the loads; only documents
missing from it are assigned, so a rebuild appends work without moving what
annotators already have.  Documents of the previous manifest missing from
the collection stay in the manifest (counted, logged) but have no files.

Count keys: ``documents``, ``documents_new``, ``documents_previous``,
``previous_missing_from_collection``, ``previous_unknown_people``,
``assignments:phase1``, ``assignments:phase2``, ``people``,
``files_written``, ``collections:phase1``, ``pages``, ``paged_documents``,
``paging_dropped_entities``, ``paging_dropped_relations``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pipeline import durable, names
from pipeline.brat.standoff import BratDocument, read_document
from pipeline.campaign.layout import ASSIGNMENTS_CSV
from pipeline.campaign.phase1 import write_phase1
from pipeline.documents import pmid_sort_key
from pipeline.errors import InputError
from pipeline.paths import list_files, resolve_collection

log = logging.getLogger(__name__)

ROLES = ("annotator", "senior", "manager")
MANIFEST_FIELDS = ("document", "phase", "annotator")
_YES = {"yes", "y", "true", "1"}
_NO = {"no", "n", "false", "0", ""}


class RosterError(InputError):
    """An unusable roster (the message names the file and line)."""


class ManifestError(InputError):
    """An unreadable previous manifest (the message names the file and line)."""


@dataclass(frozen=True)
class Person:
    """One person of the roster.

    Attributes:
        id: The person's id (a user name and a directory name).
        role: ``annotator``, ``senior`` or ``manager``.
        phase1: Whether the person annotates in phase 1.
    """

    id: str
    role: str
    phase1: bool


def read_roster(path: Path) -> list[Person]:
    """Parse and check a roster file (see the module docstring for its format and checks).

    Args:
        path: The roster, CSV or TSV, UTF-8.

    Returns:
        The people, in file order.

    Raises:
        RosterError: Naming the file and line, for an unreadable or empty file, a bad header, an empty,
            unusable or duplicate id (case-insensitively too), an unknown role or ``phase1`` value, a manager
            in phase 1, or a roster that cannot staff every document
            ([`check_roster`][pipeline.campaign.batches.check_roster]).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RosterError(f"{path}: cannot read roster: {exc}") from exc
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.startswith("#")]
    if not lines:
        raise RosterError(f"{path}: empty roster")
    delimiter = "\t" if "\t" in lines[0][1] else ","
    rows = list(csv.reader(io.StringIO("\n".join(line for _, line in lines)), delimiter=delimiter))
    header = [h.strip().lower() for h in rows[0]]
    if "id" not in header or "role" not in header:
        if len(header) >= 2 and header[1] in ROLES:
            # no header row: the columns are id, role[, phase1]
            header = ["id", "role", "phase1"][: max(2, min(3, len(header)))]
            lines = [(0, ""), *lines]
            rows = [header, *rows]
        else:
            raise RosterError(f"{path}:{lines[0][0]}: header must name the columns 'id' and 'role' (got {rows[0]})")
    people: list[Person] = []
    seen: set[str] = set()
    located: list[tuple[str, str]] = []  # (id, file:line) for the case-insensitive check
    for (lineno, _), row in zip(lines[1:], rows[1:], strict=True):
        cells = dict(zip(header, (c.strip() for c in row), strict=False))
        pid, role = cells.get("id", ""), cells.get("role", "").lower()
        if not pid:
            raise RosterError(f"{path}:{lineno}: empty id")
        try:
            # the id names the person's collection directory, beside brat's own configuration files
            names.check_person_id(pid, f"{path}:{lineno}")
        except names.NameError_ as exc:
            raise RosterError(str(exc)) from None
        if pid in seen:
            raise RosterError(f"{path}:{lineno}: id {pid!r} listed twice")
        try:
            located.append((pid, f"{path}:{lineno}"))
            names.check_distinct_ids(located)
        except names.NameError_ as exc:
            raise RosterError(str(exc)) from None
        if role not in ROLES:
            raise RosterError(f"{path}:{lineno}: role of {pid!r} must be annotator, senior or manager, got {role!r}")
        flag = cells.get("phase1", "").lower()
        if flag not in _YES | _NO:
            raise RosterError(f"{path}:{lineno}: phase1 of {pid!r} must be yes or no, got {flag!r}")
        if role == "manager" and flag in _YES:
            raise RosterError(f"{path}:{lineno}: {pid!r} is a manager, who annotates nothing: phase1 must be no")
        phase1 = flag in _YES if flag else role == "annotator"
        seen.add(pid)
        people.append(Person(pid, role, phase1))
    check_roster(people, str(path))
    return people


def check_roster(people: Sequence[Person], where: str = "roster") -> None:
    """Check that a roster can staff two phase-1 annotators and a distinct senior per document.

    Args:
        people: The roster.
        where: Names the roster in messages.

    Raises:
        RosterError: If there are fewer than three people besides managers, no senior, or no senior with
            two phase-1 annotators other than themselves.
    """
    staff = [p for p in people if p.role != "manager"]
    if len(staff) < 3:
        raise RosterError(f"{where}: {len(staff)} people (managers aside); at least three are needed (two annotators "
                          "and a senior)")
    seniors = [p for p in people if p.role == "senior"]
    if not seniors:
        raise RosterError(f"{where}: no senior annotator to revise phase-1 annotations")
    pool = [p for p in people if p.phase1]
    if not any(len([p for p in pool if p.id != s.id]) >= 2 for s in seniors):
        raise RosterError(
            f"{where}: no senior can revise every document: each needs two phase-1 annotators other than "
            f"the senior (phase-1 annotators: {', '.join(p.id for p in pool) or 'none'})"
        )


def _tie(seed: int, document: str, person: str) -> str:
    return hashlib.sha256(f"{seed}:{document}:{person}".encode()).hexdigest()


def _by_load(people: Sequence[str], load: Counter[str], seed: int, document: str) -> list[str]:
    """``people`` by current load, ties broken by the seeded hash."""
    return sorted(people, key=lambda p: (load[p], _tie(seed, document, p)))


def assign(
    documents: Sequence[str],
    people: Sequence[Person],
    seed: int,
    previous: Sequence[tuple[str, str, str]] = (),
) -> list[tuple[str, str, str]]:
    """Assign two phase-1 annotators and a phase-2 senior to each document (see the module docstring).

    Args:
        documents: The brat document names, in the order they are assigned ((PMID, index) order).
        people: The roster, checked by [`check_roster`][pipeline.campaign.batches.check_roster].
        seed: Seed of the tie-break between people of equal load.
        previous: Rows of an earlier manifest, kept unchanged; they count towards the loads, and only
            documents without previous rows are assigned.

    Returns:
        Manifest rows ``(document, phase, person)``, phase ``"1"`` or ``"2"``, previous rows included,
        sorted by (PMID, index), phase, person.

    Raises:
        RosterError: If no senior can revise a document (unreachable after
            [`check_roster`][pipeline.campaign.batches.check_roster]).
    """
    pool = sorted(p.id for p in people if p.phase1)
    seniors = sorted(p.id for p in people if p.role == "senior")
    load1: Counter[str] = Counter({p: 0 for p in pool})
    load2: Counter[str] = Counter({s: 0 for s in seniors})
    done: set[str] = set()
    rows = list(previous)
    for doc, phase, person in previous:
        done.add(doc)
        (load1 if phase == "1" else load2)[person] += 1
    for doc in documents:
        if doc in done:
            continue
        ranked = _by_load(pool, load1, seed, doc)
        pair: tuple[str, str] | None = None
        for i in range(len(ranked)):
            for j in range(i + 1, len(ranked)):
                candidate = (ranked[i], ranked[j])
                if any(s not in candidate for s in seniors):
                    pair = candidate
                    break
            if pair:
                break
        if pair is None:  # check_roster makes this unreachable
            raise RosterError(f"no senior can revise {doc}")
        reviewer = _by_load([s for s in seniors if s not in pair], load2, seed, doc)[0]
        for person in pair:
            load1[person] += 1
            rows.append((doc, "1", person))
        load2[reviewer] += 1
        rows.append((doc, "2", reviewer))
        done.add(doc)
    return sorted(rows, key=lambda r: (_doc_key(r[0]), r[1], r[2]))


def _doc_key(name: str) -> tuple[tuple[int, int | str], int, str]:
    pmid, _, rest = name.partition("_")
    index = int(rest) if rest.isdigit() else -1
    return pmid_sort_key(pmid), index, name


def read_manifest(path: Path) -> list[tuple[str, str, str]]:
    """Read the rows of a manifest CSV written by [`prepare_batches`][pipeline.campaign.batches.prepare_batches].

    Args:
        path: The ``manifest.csv``.

    Returns:
        The rows ``(document, phase, person)``, in file order; blank lines are skipped.

    Raises:
        ManifestError: Naming the file and line, for an unreadable file, a wrong header, a malformed row,
            or a document name or person id that cannot name a file.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc}") from exc
    reader = csv.reader(io.StringIO(text))
    rows: list[tuple[str, str, str]] = []
    for lineno, row in enumerate(reader, 1):
        if lineno == 1:
            if tuple(c.strip() for c in row) != MANIFEST_FIELDS:
                raise ManifestError(f"{path}:1: header must be {','.join(MANIFEST_FIELDS)}, got {row}")
            continue
        if not row:
            continue
        if len(row) != 3 or row[1] not in ("1", "2") or not row[0] or not row[2]:
            raise ManifestError(f"{path}:{lineno}: bad manifest row {row}")
        try:
            # both name files: NAME.txt in a person's collection, and that person's directory
            names.check_document_name(row[0], f"{path}:{lineno}")
            names.check_person_id(row[2], f"{path}:{lineno}")
        except names.NameError_ as exc:
            raise ManifestError(str(exc)) from None
        rows.append((row[0], row[1], row[2]))
    return rows


# --- pages for long documents ----------------------------------------------------------------

def paginate(doc: BratDocument, page_size: int, counts: Counter[str]) -> list[BratDocument]:
    r"""Split a brat document into pages of at most ``page_size`` lines (paragraphs).

    A page's text is its lines joined by ``\n`` (the newline ending the
    page is dropped).  Entities lying on one page move with it, and so do the
    relations, attributes, notes and normalizations attached to them;
    entities crossing a page boundary and relations between pages cannot be
    represented and are dropped (counted, logged).

    Args:
        doc: The document; its offsets are half-open, into its ``.txt``.
        page_size: Most lines per page, at least 1.
        counts: ``paged_documents``, ``pages``, ``paging_dropped_entities`` and
            ``paging_dropped_relations``, updated in place.

    Returns:
        The pages, named ``{name}_p001``, ``{name}_p002``, ... (at least 3 digits), their fragments moved
        to half-open offsets into the page's text; ``[doc]`` unchanged for a document of at most
        ``page_size`` lines.

    Raises:
        ValueError: If ``page_size`` is below 1.
    """
    if page_size < 1:
        raise ValueError(f"page size must be >= 1, got {page_size}")
    lines = doc.text.split("\n")
    if len(lines) <= page_size:
        return [doc]
    counts["paged_documents"] += 1
    pages: list[BratDocument] = []
    offset = 0
    bounds: list[tuple[int, int]] = []
    for first in range(0, len(lines), page_size):
        chunk = lines[first:first + page_size]
        length = len("\n".join(chunk))
        bounds.append((offset, offset + length))
        offset += length + 1
    width = max(3, len(str(len(bounds))))
    placed: dict[str, int] = {}
    for t in doc.textbounds:
        where = next((k for k, (s, e) in enumerate(bounds) if t.start >= s and t.end <= e), None)
        if where is None:
            counts["paging_dropped_entities"] += 1
            log.warning("%s: %s %s crosses a page boundary; left out of the pages", doc.name, t.id, t.fragments)
        else:
            placed[t.id] = where
    for r in doc.relations:
        pages_of = [placed.get(ref) for _, ref in r.args]
        first_page = pages_of[0] if pages_of else None
        if first_page is not None and all(p == first_page for p in pages_of):
            placed[r.id] = first_page
        else:
            counts["paging_dropped_relations"] += 1
            log.warning("%s: relation %s joins different pages; left out of the pages", doc.name, r.id)
    for k, (start, end) in enumerate(bounds):
        page = BratDocument(name=f"{doc.name}_p{k + 1:0{width}d}", text=doc.text[start:end])
        page.textbounds = [
            replace(t, fragments=tuple((s - start, e - start) for s, e in t.fragments))
            for t in doc.textbounds if placed.get(t.id) == k
        ]
        page.relations = [r for r in doc.relations if placed.get(r.id) == k]
        page.attributes = [a for a in doc.attributes if placed.get(a.target) == k]
        page.normalizations = [n for n in doc.normalizations if placed.get(n.target) == k]
        page.notes = [q for q in doc.notes if placed.get(q.target) == k]
        page.equivs = [q for q in doc.equivs if all(placed.get(i) == k for i in q.ids)]
        pages.append(page)
    counts["pages"] += len(pages)
    return pages


# --- the stage function ----------------------------------------------------------------------

def prepare_batches(
    collection: Path,
    roster: Path,
    out_dir: Path,
    *,
    seed: int,
    previous_manifest: Path | None = None,
    counts: Counter[str],
    page_size: int | None = None,
) -> dict[str, frozenset[str]]:
    """Assign the documents of a brat collection and write the campaign directory.

    The roster (and the previous manifest) are checked before anything is
    written.  ``out_dir`` is created; its ``phase1/``, ``phase2/``,
    ``preannotation/``, ``manifest.csv`` and the other generated files of
    [`pipeline.campaign.phase1`][pipeline.campaign.phase1] are replaced, nothing else in it is
    touched (its users and journal stay).  ``manifest.csv`` is written atomically, last.

    Args:
        collection: The source brat collection (``OUT/brat`` is resolved to the collection it links to), with
            its ``annotation.conf``.
        roster: The roster file (see the module docstring).
        out_dir: The campaign directory.
        seed: Seed of the assignment's tie-break.
        previous_manifest: The ``manifest.csv`` of an earlier run, whose assignments are kept; None for a
            new campaign.
        counts: Count keys (see the module docstring), updated in place.
        page_size: Most lines (paragraphs) per page of a long document; None for no paging.

    Returns:
        Each person's access roles
        ([`access_roles`][pipeline.campaign.layout.access_roles]), for the caller
        to create their users ([`create_users`][pipeline.campaign.users.create_users]).

    Raises:
        RosterError: For an unusable roster (before anything is written).
        ManifestError: For an unreadable previous manifest (before anything is written).
        FileNotFoundError: If ``collection`` is not a directory or has no ``annotation.conf`` (before the
            output directory is made).
        CampaignError: If the campaign has started (a phase-1 document edited): it is not rewritten
            ([`CampaignError`][pipeline.campaign.layout.CampaignError]).
    """
    people = read_roster(Path(roster))
    previous = read_manifest(Path(previous_manifest)) if previous_manifest else []
    src = Path(collection)
    if not src.is_dir():
        raise FileNotFoundError(f"{src}: not a directory")
    src = resolve_collection(src)  # OUT/brat is a link a new build may swap: read one collection
    if not (src / "annotation.conf").is_file():
        # checked before the output directory is made: a refused batches leaves nothing behind
        raise FileNotFoundError(f"{src / 'annotation.conf'}: the collection has no annotation.conf (export it "
                                "with pgx-corpus build, or copy the configuration files into it)")
    listing = list_files(src, (".txt", ".ann", ".conf"))  # .conf: copied into every collection too
    listing.refuse_symlinks("batches")  # a link would copy its target into every annotator's collection
    txts = {p.stem: p for p in listing.files if p.suffix == ".txt"}
    for name, path in txts.items():
        names.check_document_name(name, str(path))  # it names files in every person's collection
    documents = sorted(txts, key=_doc_key)
    known = {p.id for p in people}
    prev_docs = {d for d, _, _ in previous}
    counts["documents"] += len(documents)
    counts["documents_previous"] += len(prev_docs & set(documents))
    counts["documents_new"] += len(set(documents) - prev_docs)
    missing = sorted(prev_docs - set(documents), key=_doc_key)
    if missing:
        counts["previous_missing_from_collection"] += len(missing)
        log.warning("%d documents of the previous manifest are not in %s (kept in the manifest): %s",
                    len(missing), src, ", ".join(missing[:10]))
    strangers = sorted({p for _, _, p in previous} - known)
    if strangers:
        counts["previous_unknown_people"] += len(strangers)
        log.warning("previous manifest names people not in the roster (assignments kept): %s", ", ".join(strangers))
    rows = assign(documents, people, seed, previous)
    counts["people"] += len(people)
    for _, phase, _ in rows:
        counts[f"assignments:phase{phase}"] += 1

    pages: dict[str, list[BratDocument]] | None = None
    if page_size is not None:
        pages = {}
        for doc_name in sorted({d for d, _, _ in rows if d in txts}, key=_doc_key):
            doc, issues = read_document(txts[doc_name])
            for issue in issues:
                log.warning("%s", issue)
            pages[doc_name] = paginate(doc, page_size, counts)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    roles = write_phase1(src, txts, rows, [(p.id, p.role, p.phase1) for p in people], out, seed=seed,
                         counts=counts, pages=pages)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(MANIFEST_FIELDS)
    writer.writerows(rows)
    durable.replace_file(out / ASSIGNMENTS_CSV, buf.getvalue().encode("utf-8"))
    return roles
