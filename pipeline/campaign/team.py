"""Team changes of a running campaign: ``replace``, ``add-person`` and ``reassign``.

Every change keeps the campaign's rules: phase 1 stays blind (a newcomer gets a collection of their
own), each document has two distinct phase-1 annotators and a senior who annotated none of their
documents, and nobody loses a document they have started ([`started`][pipeline.campaign.assignments.started])
unless the manager says so (``started="move"``, their version archived).

A change is planned first ([`plan_replace`][pipeline.campaign.team.plan_replace],
[`plan_add_person`][pipeline.campaign.team.plan_add_person], [`plan_reassign`][pipeline.campaign.team.plan_reassign]):
the plan is the new ``campaign.json`` and the list of [`Move`][pipeline.campaign.team.Move]; a change that would break a
rule raises [`TeamError`][pipeline.campaign.team.TeamError] naming the rule and the documents, before anything is
written. [`apply`][pipeline.campaign.team.apply] then writes, in this order:

1. the newcomers' users ([`create_users`][pipeline.campaign.users.create_users]; their one-time passwords are
   returned) and the receivers' collections (configuration and ``guide.md``);
2. each moved document, one by one under [`document_lock`][pipeline.campaign.locks.document_lock], into the
   receiver's collection as handed out (the pre-annotation in phase 1, the merged document in
   phase 2; ``.ann`` first, ``.txt`` last);
3. ``campaign.json`` and the ``manifest.csv`` derived from it, then the history entries;
4. the givers' versions, one by one under their lock: copied to ``archive/<time>/<collection>/``
   and removed (``.txt`` first, so brat stops listing it);
5. the revocation of someone who leaves ([`revoke`][pipeline.campaign.users.revoke]).

Collections are never swapped as a whole: only single documents are written.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat.conf import CONF_FILES
from pipeline.campaign import assignments as asg
from pipeline.campaign import deploy
from pipeline.campaign import users as users_mod
from pipeline.campaign.conf import write_campaign_conf_files
from pipeline.campaign.guide import GUIDE_FILE, annotator_guide
from pipeline.campaign.layout import (
    ARCHIVE_DIR,
    ASSIGNMENTS_HISTORY,
    DEPLOY_NOTE,
    PREANNOTATION_DIR,
    TEAM_PENDING,
    CampaignError,
    access_roles,
    check_ids,
    read_campaign,
)
from pipeline.campaign.locks import document_lock

log = logging.getLogger(__name__)

STARTED_CHOICES = ("keep", "move")


class TeamError(CampaignError):
    """A team change that would break a campaign rule (the message names the rule and the documents)."""


@dataclass(frozen=True)
class Move:
    """One document moving from a giver to a receiver in one phase.

    Attributes:
        document: The campaign document.
        files: Its brat documents (itself, or its pages).
        phase: ``"1"`` or ``"2"``.
        giver: The person who holds it now.
        receiver: The person who gets it.
        started: Whether the giver had started it (their version is then archived).
    """

    document: str
    files: tuple[str, ...]
    phase: str
    giver: str
    receiver: str
    started: bool


@dataclass
class Plan:
    """A planned team change: the new ``campaign.json`` and what [`apply`][pipeline.campaign.team.apply] writes.

    Attributes:
        action: ``replace``, ``add-person`` or ``reassign``, recorded in the history.
        campaign: The campaign manifest as it will be once the change is made.
        moves: The documents that change hands.
        kept_started: Documents a leaver started and keeps (``started="keep"``).
        leaving: The person who leaves (their access is revoked), if any.
        joining: The newcomers (their users are created).
        note: Free text (unused by [`apply`][pipeline.campaign.team.apply]).
    """
    action: str
    campaign: dict[str, Any]
    moves: list[Move] = field(default_factory=list)
    kept_started: list[str] = field(default_factory=list)  # documents left with a leaver
    leaving: str | None = None
    joining: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class Result:
    """What [`apply`][pipeline.campaign.team.apply] did.

    Attributes:
        moves: The documents that changed hands.
        kept_started: Documents a leaver started and keeps.
        passwords: Newcomer -> their one-time password (shown once, stored nowhere in clear).
        revoked: The person whose access was revoked (at most one).
    """
    moves: list[Move]
    kept_started: list[str]
    passwords: dict[str, str]
    revoked: list[str]


def _person(campaign: Mapping[str, Any], pid: str) -> dict[str, Any] | None:
    return next((p for p in campaign["people"] if p["id"] == pid), None)


def _holders(entry: Mapping[str, Any], phase: str) -> list[str]:
    return list(entry["phase1"]) if phase == "1" else ([entry["phase2"]] if entry.get("phase2") else [])


def _swap(entry: dict[str, Any], phase: str, giver: str, receiver: str) -> None:
    if phase == "1":
        entry["phase1"] = [receiver if p == giver else p for p in entry["phase1"]]
    else:
        entry["phase2"] = receiver


def _rule_for(entry: Mapping[str, Any], phase: str, receiver: str) -> str | None:
    """The campaign rule ``receiver`` would break by taking ``entry`` in ``phase`` (None when none)."""
    if phase == "1":
        if receiver in entry["phase1"]:
            return "two distinct phase-1 annotators per document"
        if receiver == entry.get("phase2"):
            return "a senior who annotated none of their documents"
    elif receiver in entry["phase1"]:
        return "a senior who annotated none of their documents"
    return None


def _refuse(problems: Mapping[str, list[str]]) -> None:
    if problems:
        raise TeamError("; ".join(f"refused, it would break the rule '{rule}': {', '.join(docs)}"
                                  for rule, docs in sorted(problems.items())))


def _load(root: Path) -> dict[str, Any]:
    campaign = read_campaign(root)
    if not (root / PREANNOTATION_DIR).is_dir():
        raise CampaignError(f"{root}: no {PREANNOTATION_DIR}/ (write the campaign with batches)")
    return campaign


def plan_replace(root: Path, old: str, new: str, *, started: str | None = None, when: str = "") -> Plan:
    """Plan a replacement: ``old`` leaves, ``new`` joins in their role and takes their documents.

    ``new`` takes every document ``old`` has not started; a document ``old`` has started and finished
    stays with them; a started, unfinished one goes to ``new`` fresh with ``started="move"`` (``old``'s
    version archived) or stays with ``old`` with ``started="keep"``.  ``old`` is marked ``left`` and
    ``new`` ``joined`` (with ``replaces``) in the planned campaign.  Nothing is written.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        old: The person who leaves.
        new: The newcomer, not yet a person of the campaign.
        started: ``"keep"``, ``"move"``, or ``None`` (refuse when ``old`` has started, unfinished documents).
        when: The date recorded for ``left`` and ``joined``, ISO 8601; now (UTC) when empty.

    Returns:
        The plan.

    Raises:
        TeamError: If ``old`` is not a person or already left, ``new`` already is one, ``started`` is not
            a choice, ``old`` has started, unfinished documents and ``started`` is ``None`` (they are
            listed), or a rule would break.
        CampaignError: If the campaign cannot be read, has no ``preannotation/``, or ``new`` is unusable
            as an id.
    """
    campaign = copy.deepcopy(_load(root))
    person = _person(campaign, old)
    if person is None:
        raise TeamError(f"{old} is not a person of the campaign")
    if person.get("left"):
        raise TeamError(f"{old} already left the campaign on {person['left']}")
    check_ids([p["id"] for p in campaign["people"] if p["id"] != old] + [new], "replace")
    if _person(campaign, new) is not None:
        raise TeamError(f"{new} is already a person of the campaign (use reassign to give them documents)")
    if started is not None and started not in STARTED_CHOICES:
        raise TeamError(f"started documents: choose one of {', '.join(STARTED_CHOICES)}, not {started!r}")
    plan = Plan("replace", campaign, leaving=old, joining=[new])
    undecided: list[str] = []
    problems: dict[str, list[str]] = {}
    for entry in campaign["documents"]:
        for phase in ("1", "2"):
            if old not in _holders(entry, phase):
                continue
            is_started = asg.started(root, entry, phase, old)
            if is_started and _finished(root, entry, phase, old):
                continue  # finished work stays
            if is_started and started != "move":
                (plan.kept_started if started == "keep" else undecided).append(entry["document"])
                continue
            rule = _rule_for(entry, phase, new)
            if rule:
                problems.setdefault(rule, []).append(entry["document"])
                continue
            plan.moves.append(Move(entry["document"], tuple(entry["files"]), phase, old, new, is_started))
    if undecided:
        raise TeamError(f"{old} has started and not finished {len(undecided)} document(s): {', '.join(undecided)}; "
                        "choose --started keep (they stay with them to finish or discard) or --started move "
                        "(they go to the newcomer fresh, the partial versions archived)")
    _refuse(problems)
    for move in plan.moves:
        _swap(_entry(campaign, move.document), move.phase, old, new)
    person["left"] = when or asg.now()
    campaign["people"].append({"id": new, "role": person["role"], "phase1": person.get("phase1", True),
                               "roster": False, "joined": when or asg.now(), "replaces": old})
    return plan


def _finished(root: Path, entry: Mapping[str, Any], phase: str, person: str) -> bool:
    from pipeline.campaign.documents import is_finished

    for name in entry["files"]:
        doc = asg._read(asg.collection_dir(root, phase, person) / f"{name}.txt")
        if doc is None or not is_finished(doc):
            return False
    return bool(entry["files"])


def _entry(campaign: Mapping[str, Any], document: str) -> dict[str, Any]:
    return next(e for e in campaign["documents"] if e["document"] == document)


def _tie(seed: int, document: str, person: str) -> str:
    return hashlib.sha256(f"{seed}:{document}:{person}".encode()).hexdigest()


def plan_add_person(root: Path, person: str, role: str, *, when: str = "") -> Plan:
    """Plan a newcomer who joins as annotator or senior and takes a fair share of the unstarted documents.

    A ``manager`` joins with no documents: ``campaign serve`` gives them every collection read-only.
    Documents of their phase (1 for an annotator, 2 for a senior) are taken one at a time from whoever
    holds most unstarted ones (seeded tie-break) until the newcomer holds ``unstarted // (holders + 1)``;
    a document the newcomer may not take (a rule) stays.  Documents not yet assigned (a later
    ``append``) go to the least loaded people, the newcomer included.  Nothing is written.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        person: The newcomer, not yet a person of the campaign.
        role: ``annotator``, ``senior`` or ``manager``.
        when: The date recorded for ``joined``, ISO 8601; now (UTC) when empty.

    Returns:
        The plan.

    Raises:
        TeamError: If ``role`` is none of these, or ``person`` already is a person of the campaign.
        CampaignError: If the campaign cannot be read, has no ``preannotation/``, or ``person`` is
            unusable as an id.
    """
    if role not in ("annotator", "senior", "manager"):
        raise TeamError(f"role must be annotator, senior or manager, not {role!r}")
    campaign = copy.deepcopy(_load(root))
    if _person(campaign, person) is not None:
        raise TeamError(f"{person} is already a person of the campaign")
    check_ids([p["id"] for p in campaign["people"]] + [person], "add-person")
    if role == "manager":  # annotates nothing: no share of the documents, no collection
        campaign["people"].append({"id": person, "role": role, "phase1": False, "roster": False,
                                   "joined": when or asg.now()})
        return Plan("add-person", campaign, joining=[person])
    phase = "1" if role == "annotator" else "2"
    seed = int(campaign.get("seed", 0))
    unstarted: dict[str, list[dict[str, Any]]] = {}
    for entry in campaign["documents"]:
        if not entry["files"]:
            continue
        for holder in _holders(entry, phase):
            if not asg.started(root, entry, phase, holder) and _rule_for(entry, phase, person) is None:
                unstarted.setdefault(holder, []).append(entry)
    holders = {p["id"] for p in asg.active_people(campaign)
               if (p.get("phase1", True) if phase == "1" else p["role"] == "senior")}
    total = sum(len(v) for v in unstarted.values())
    share = total // (len(holders | set(unstarted)) + 1) if total else 0
    plan = Plan("add-person", campaign, joining=[person])
    taken: set[str] = set()
    while len(plan.moves) < share:
        givers = sorted(((len([e for e in v if e["document"] not in taken]), g) for g, v in unstarted.items()),
                        key=lambda t: (-t[0], t[1]))
        if not givers or givers[0][0] == 0:
            break
        giver = givers[0][1]
        choices = sorted((e for e in unstarted[giver] if e["document"] not in taken),
                         key=lambda e: _tie(seed, e["document"], person))
        entry = choices[0]
        taken.add(entry["document"])
        unstarted[giver] = [e for e in unstarted[giver] if e is not entry]
        plan.moves.append(Move(entry["document"], tuple(entry["files"]), phase, giver, person, False))
        _swap(entry, phase, giver, person)
    campaign["people"].append({"id": person, "role": role, "phase1": role == "annotator", "roster": False,
                               "joined": when or asg.now()})
    return plan


def plan_reassign(root: Path, documents: Sequence[str], to: str, *, giver: str, started: str | None = None) -> Plan:
    """Plan moving documents from one person to another, in the phase the giver holds them.

    Nothing is written.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        documents: The campaign documents moved.
        to: The receiver, an active person of the campaign (a senior for phase-2 documents).
        giver: The person who holds them now.
        started: ``"move"`` to move documents the giver has started (their version archived); otherwise
            a started document is refused.

    Returns:
        The plan.

    Raises:
        TeamError: If ``to`` is not an active person, or any document is refused (not in the campaign,
            not held by ``giver``, phase 2 to a non-senior, a broken rule, started without
            ``started="move"``); every refused document is named.
        CampaignError: If the campaign cannot be read or has no ``preannotation/``.
    """
    campaign = copy.deepcopy(_load(root))
    receiver = _person(campaign, to)
    if receiver is None:
        raise TeamError(f"{to} is not a person of the campaign (add them with add-person first)")
    if receiver.get("left"):
        raise TeamError(f"{to} left the campaign on {receiver['left']}")
    plan = Plan("reassign", campaign)
    problems: dict[str, list[str]] = {}
    by_name = {e["document"]: e for e in campaign["documents"]}
    for doc in documents:
        entry = by_name.get(doc)
        if entry is None:
            problems.setdefault("a document of the campaign", []).append(doc)
            continue
        phases = [ph for ph in ("1", "2") if giver in _holders(entry, ph)]
        if not phases:
            problems.setdefault(f"reassign only what {giver} holds", []).append(doc)
            continue
        phase = phases[0]
        if phase == "2" and receiver["role"] != "senior":
            problems.setdefault("phase 2 goes to a senior", []).append(doc)
            continue
        rule = _rule_for(entry, phase, to)
        if rule:
            problems.setdefault(rule, []).append(doc)
            continue
        is_started = asg.started(root, entry, phase, giver)
        if is_started and started != "move":
            problems.setdefault("nobody moved who has started (use --started move to archive their version)",
                                []).append(doc)
            continue
        plan.moves.append(Move(doc, tuple(entry["files"]), phase, giver, to, is_started))
        _swap(entry, phase, giver, to)
    _refuse(problems)
    return plan


# --- writing -----------------------------------------------------------------------------------

def _prepare_collection(root: Path, phase: str, person: str, campaign: Mapping[str, Any]) -> None:
    dest = asg.collection_dir(root, phase, person)
    if phase == "1":
        pre = root / PREANNOTATION_DIR
        # every configuration file, not only the first written: a killed run may have written some
        if not all((dest / name).is_file() for name in CONF_FILES if (pre / name).is_file()):
            write_campaign_conf_files(pre, dest)
        kind = 1
    else:
        annotators = sorted({p for e in campaign["documents"] if e.get("phase2") == person for p in e["phase1"]})
        write_campaign_conf_files(root / PREANNOTATION_DIR, dest, annotators)
        kind = 2
    if not (dest / GUIDE_FILE).is_file() or phase == "2":
        durable.replace_file(dest / GUIDE_FILE, annotator_guide(dest, person, kind).encode("utf-8"))
    from pipeline.campaign.guidelines import stamp_guide  # the guideline version each person sees

    stamp_guide(root, dest / GUIDE_FILE)


def archive_document(root: Path, collection: Path, name: str, stamp: str) -> Path | None:
    """Move one brat document of a collection into the campaign's archive.

    Under the document's lock, ``collection/name.{txt,ann}`` are copied to
    ``archive/<stamp>/<collection>/`` (colons left out of the stamp) and removed.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        collection: The collection, inside ``root``.
        name: The brat document name, without extension.
        stamp: The time of the change, ISO 8601, naming the archive directory.

    Returns:
        The archive directory, or ``None`` when the collection holds neither file.
    """
    files = [collection / f"{name}{s}" for s in (".txt", ".ann")]
    if not any(f.exists() for f in files):
        return None
    dest = root / ARCHIVE_DIR / stamp.replace(":", "") / collection.relative_to(root)
    dest.mkdir(parents=True, exist_ok=True)
    with document_lock(root, collection / name):
        for f in files:
            if f.exists():
                (dest / f.name).write_bytes(f.read_bytes())
        for f in files:
            f.unlink(missing_ok=True)
    return dest


def hand_out(root: Path, source: Path, collection: Path, name: str) -> None:
    """Write a document into a collection as handed out, under the document's lock.

    ``.ann`` first, ``.txt`` last (plain writes, not renamed); a source file that is missing is written
    empty.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        source: Where the document is copied from (``preannotation/`` or a senior's merged reference).
        collection: The receiving collection, created if needed.
        name: The brat document name, without extension.
    """
    collection.mkdir(parents=True, exist_ok=True)
    with document_lock(root, collection / name):
        for suffix in (".ann", ".txt"):
            src = source / f"{name}{suffix}"
            (collection / f"{name}{suffix}").write_bytes(src.read_bytes() if src.exists() else b"")


def apply(root: Path, plan: Plan, *, when: str = "", counts: Counter[str] | None = None) -> Result:
    """Write a planned team change (see the module docstring).

    The order makes every interruption safe and a rerun of the same command possible: users first (a
    user without documents is harmless), then the receivers' copies, then ``campaign.json`` (the
    change happens here), then the givers' versions archived and removed, then revocation.  Until
    ``campaign.json`` is written the change has not happened (a receiver's copy equal to what is handed
    out is taken as written by an interrupted run); after it, a giver's stale copy is still in the
    archive's place, never lost.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        plan: The plan, from [`plan_replace`][pipeline.campaign.team.plan_replace],
            [`plan_add_person`][pipeline.campaign.team.plan_add_person] or
            [`plan_reassign`][pipeline.campaign.team.plan_reassign].
        when: The time recorded in the history and naming the archive; now (UTC) when empty.
        counts: Counters updated in place (``files_written``, ``moved:phase1``, ``moved:phase2``,
            ``archived``); a new one when ``None``.

    Returns:
        The moves, the documents kept by a leaver, the newcomers' one-time passwords and the revoked
        access.

    Raises:
        TeamError: Before anything is written, if a receiver's collection already holds another version
            of a moved file, or the planned campaign breaks a rule.
    """
    counts = counts if counts is not None else Counter()
    when = when or asg.now()
    root = Path(root)

    def written(m: Move, name: str) -> bool:
        # phase 1: the receiver always gets the pre-annotation; phase 2: only a document review wrote
        return m.phase == "1" or (asg.collection_dir(root, m.phase, m.giver) / f"{name}.txt").exists()

    def source(m: Move) -> Path:
        return asg.reference_dir(root, m.phase, m.giver)

    def clash(m: Move, name: str) -> bool:
        mine = asg.collection_dir(root, m.phase, m.receiver)
        return any((mine / f"{name}{s}").exists() and (mine / f"{name}{s}").read_bytes() !=
                   ((source(m) / f"{name}{s}").read_bytes() if (source(m) / f"{name}{s}").exists() else b"")
                   for s in (".txt", ".ann"))

    # refuse a receiver whose collection already holds another version of a moved file
    clashes = sorted({f"{m.document} ({m.receiver})" for m in plan.moves for name in m.files
                      if written(m, name) and clash(m, name)})
    if clashes:
        raise TeamError(f"refused: the receiver's collection already holds {', '.join(clashes)}")
    bad = asg.rule_violations(plan.campaign)
    if bad:
        raise TeamError("refused: " + "; ".join(bad))
    roles = access_roles(plan.campaign)
    wanted = {p: roles.get(p) or frozenset({(_person(plan.campaign, p) or {"role": "annotator"})["role"]})
              for p in plan.joining}
    passwords = users_mod.create_users(root, wanted) if wanted else {}
    for phase, person in sorted({(m.phase, m.receiver) for m in plan.moves} | {("1", p) for p in plan.joining
                                 if (_person(plan.campaign, p) or {}).get("phase1")}):
        _prepare_collection(root, phase, person, plan.campaign)
    to_archive: list[tuple[Move, str]] = []
    changes = []
    for m in plan.moves:
        for name in m.files:
            if not written(m, name):
                continue
            if m.phase == "2":
                # the merged reference moves with the document (status compares with it)
                ref = asg.reference_dir(root, "2", m.receiver)
                ref.mkdir(parents=True, exist_ok=True)
                for s in (".ann", ".txt"):
                    if (source(m) / f"{name}{s}").exists():
                        (ref / f"{name}{s}").write_bytes((source(m) / f"{name}{s}").read_bytes())
            hand_out(root, source(m), asg.collection_dir(root, m.phase, m.receiver), name)
            counts["files_written"] += 1
            to_archive.append((m, name))
        note = f"from {m.giver}" + (" (started; their version archived)" if m.started else "")
        changes.append(asg.change(plan.action, m.document, m.phase, m.giver, "unassigned", when, f"to {m.receiver}"))
        changes.append(asg.change(plan.action, m.document, m.phase, m.receiver, "assigned", when, note))
        counts[f"moved:phase{m.phase}"] += 1
    asg.ensure_history(root, read_campaign(root))
    write_pending(root, plan.campaign, changes, [(m.phase, m.giver, name) for m, name in to_archive], when,
                  leaving=plan.leaving or "", deploy=bool(plan.moves or plan.joining))
    asg.save_campaign(root, plan.campaign)
    done = finish_pending(root)
    counts["archived"] += done["archived"]
    revoked = [plan.leaving] if plan.leaving and done["revoked"] else []
    log.info("%s: %s moved %d document(s)", root, plan.action, len(plan.moves))
    return Result(plan.moves, plan.kept_started, passwords, revoked)


def write_pending(root: Path, campaign: Mapping[str, Any], changes: Sequence[Mapping[str, Any]],
                  archive: Sequence[tuple[str, str, str]], when: str, *, leaving: str = "",
                  deploy: bool = False) -> None:
    """Record what is left to do once a team change's ``campaign.json`` is saved.

    Written atomically to [`TEAM_PENDING`][pipeline.campaign.layout.TEAM_PENDING], before ``campaign.json``.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        campaign: The campaign manifest about to be saved.
        changes: Its history entries.
        archive: ``(phase, giver, name)`` of each giver's brat document to archive and remove.
        when: The time of the change (names the archive directory).
        leaving: The person whose access to revoke; ``""`` for none.
        deploy: Whether to rewrite ``DEPLOY.md`` (the people changed).
    """
    pending = {"campaign": campaign, "changes": list(changes), "archive": [list(a) for a in archive],
               "when": when, "leaving": leaving, "deploy": deploy}
    durable.replace_file(Path(root) / TEAM_PENDING, json.dumps(pending, ensure_ascii=False).encode("utf-8"))


def finish_pending(root: Path) -> dict[str, int]:
    """Finish the team change [`TEAM_PENDING`][pipeline.campaign.layout.TEAM_PENDING] describes, if any.

    When ``campaign.json`` records the change: ``manifest.csv``, its history lines (unless the history
    already ends with them), the givers' copies archived, the access revoked (a missing user is logged,
    not an error), ``DEPLOY.md``.  A command killed before ``campaign.json`` was saved left nothing that
    happened: the file is only dropped.  The pending file is removed at the end.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        ``{"archived": n, "revoked": 0 or 1}``: how many documents were archived and whether an access
        was revoked.

    Raises:
        CampaignError: If ``campaign.json`` cannot be read.
    """
    root = Path(root)
    path = root / TEAM_PENDING
    done = {"archived": 0, "revoked": 0}
    if not path.is_file():
        return done
    pending = json.loads(path.read_text(encoding="utf-8"))
    if read_campaign(root) == pending["campaign"]:
        asg.write_manifest_csv(root, pending["campaign"])  # killed between campaign.json and manifest.csv
        history = root / ASSIGNMENTS_HISTORY
        lines = "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n" for c in pending["changes"])
        if not (history.is_file() and history.read_text(encoding="utf-8").endswith(lines)):
            asg.record(root, pending["changes"])
        for phase, giver, name in pending["archive"]:
            if archive_document(root, asg.collection_dir(root, phase, giver), name, pending["when"]) is not None:
                done["archived"] += 1
        if pending["leaving"]:
            try:
                users_mod.revoke(root, pending["leaving"])
                done["revoked"] = 1
            except users_mod.UsersError as exc:
                log.warning("%s: %s (no access to revoke)", pending["leaving"], exc)
        if pending["deploy"]:
            _update_deploy_note(root, pending["campaign"])
    path.unlink()
    return done


def _update_deploy_note(root: Path, campaign: Mapping[str, Any]) -> None:
    roles = access_roles(campaign)
    active = {p["id"] for p in asg.active_people(campaign)}
    annotators = sorted(p for p, r in roles.items() if "annotator" in r and p in active)
    seniors = sorted(p for p, r in roles.items() if "senior" in r and p in active)
    managers = sorted(p for p, r in roles.items() if "manager" in r)
    durable.replace_file(root / DEPLOY_NOTE, deploy.deployment_note(annotators, seniors, managers).encode("utf-8"))


def replace(root: Path, old: str, new: str, *, started: str | None = None, when: str = "",
            counts: Counter[str] | None = None) -> Result:
    """Replace a person: plan the change, then apply it.

    Plans with [`plan_replace`][pipeline.campaign.team.plan_replace], then writes with
    [`apply`][pipeline.campaign.team.apply].

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        old: The person who leaves.
        new: The newcomer.
        started: ``"keep"``, ``"move"`` or ``None``, for ``old``'s started, unfinished documents.
        when: The time of the change, ISO 8601; now (UTC) when empty.
        counts: Counters updated in place, as [`apply`][pipeline.campaign.team.apply] does.

    Returns:
        What was done: the moves, the documents left with a leaver, the newcomers' one-time passwords and
        the revoked access.

    Raises:
        TeamError: If the change would break a campaign rule (nothing is written then).
        CampaignError: If the campaign cannot be read, has no ``preannotation/``, or a new id is unusable.
    """
    when = when or asg.now()
    return apply(root, plan_replace(root, old, new, started=started, when=when), when=when, counts=counts)


def add_person(root: Path, person: str, role: str, *, when: str = "", counts: Counter[str] | None = None) -> Result:
    """Add a person: plan the change, then apply it.

    Plans with [`plan_add_person`][pipeline.campaign.team.plan_add_person], then writes with
    [`apply`][pipeline.campaign.team.apply].

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        person: The newcomer.
        role: ``annotator``, ``senior`` or ``manager`` (read-only everywhere, no documents).
        when: The time of the change, ISO 8601; now (UTC) when empty.
        counts: Counters updated in place, as [`apply`][pipeline.campaign.team.apply] does.

    Returns:
        What was done: the moves, the documents left with a leaver, the newcomers' one-time passwords and
        the revoked access.

    Raises:
        TeamError: If the change would break a campaign rule (nothing is written then).
        CampaignError: If the campaign cannot be read, has no ``preannotation/``, or a new id is unusable.
    """
    when = when or asg.now()
    return apply(root, plan_add_person(root, person, role, when=when), when=when, counts=counts)


def reassign(root: Path, documents: Sequence[str], to: str, *, giver: str, started: str | None = None,
             when: str = "", counts: Counter[str] | None = None) -> Result:
    """Reassign documents: plan the change, then apply it.

    Plans with [`plan_reassign`][pipeline.campaign.team.plan_reassign], then writes with
    [`apply`][pipeline.campaign.team.apply].

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``.
        documents: The campaign documents moved.
        to: The receiver.
        giver: The person who holds them now.
        started: ``"move"`` to move started documents (the giver's version archived).
        when: The time of the change, ISO 8601; now (UTC) when empty.
        counts: Counters updated in place, as [`apply`][pipeline.campaign.team.apply] does.

    Returns:
        What was done: the moves, the documents left with a leaver, the newcomers' one-time passwords and
        the revoked access.

    Raises:
        TeamError: If the change would break a campaign rule (nothing is written then).
        CampaignError: If the campaign cannot be read, has no ``preannotation/``, or a new id is unusable.
    """
    return apply(root, plan_reassign(root, documents, to, giver=giver, started=started), when=when, counts=counts)
