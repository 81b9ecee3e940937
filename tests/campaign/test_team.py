"""A campaign of several months with a changing team, simulated in code: annotators write their .ann files
as brat would, someone leaves half-way, a newcomer and an extra senior join, documents are reassigned, a
calibration round runs, the guidelines change.  After every step the campaign's rules and counts are
checked (:func:`check`).

Covers: pipeline.brat.standoff, pipeline.brat.validate, pipeline.campaign.append, pipeline.campaign.assignments,
pipeline.campaign.batches, pipeline.campaign.calibration, pipeline.campaign.conf, pipeline.campaign.documents,
pipeline.campaign.guidelines, pipeline.campaign.journal, pipeline.campaign.layout, pipeline.campaign.locks,
pipeline.campaign.merge, pipeline.campaign.phase1, pipeline.campaign.review, pipeline.campaign.simulate,
pipeline.campaign.status, pipeline.campaign.team, pipeline.campaign.users, pipeline.cli, pipeline.cli.brat_commands,
pipeline.cli.campaign_commands, pipeline.cli.release_commands, pipeline.cli.team_commands,
pipeline.corpus.brat_export, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import Any

import pytest

from pipeline import cli
from pipeline.brat.standoff import BratDocument, dumps, read_document
from pipeline.brat.validate import validate_collection
from pipeline.campaign import assignments as asg
from pipeline.campaign import calibration, guidelines, team, users
from pipeline.campaign.append import append_to_campaign
from pipeline.campaign.batches import prepare_batches
from pipeline.campaign.conf import CAMPAIGN_DONE_TYPE, undisputed_type
from pipeline.campaign.documents import canonical, is_finished, without_markers
from pipeline.campaign.layout import (
    ASSIGNMENTS_HISTORY,
    DISAGREEMENT,
    DISCARD_TYPE,
    CampaignError,
    access_roles,
    read_campaign,
)
from pipeline.campaign.locks import document_lock
from pipeline.campaign.merge import strip_dispute
from pipeline.campaign.review import review
from pipeline.campaign.simulate import mark, remove_annotation
from pipeline.campaign.status import campaign_status
from pipeline.corpus.brat_export import export_collection
from pipeline.documents import Annotation, SentenceRecord
from pipeline.schema import load_schema

SCHEMA = load_schema()
TEXT = "Warfarin doses were lower in CYP2C9 carriers."
DONE = "Done 20 25\tlower"


def names(pmids: range, per: int = 4) -> list[str]:
    return [f"{p}_{k}" for p in pmids for k in range(1, per + 1)]


def make_collection(directory: Path, docs: list[str]) -> Path:
    records = [SentenceRecord(n.split("_")[0], int(n.split("_")[1]) - 1, TEXT, annotations=(
        Annotation(((0, 8),), "Chemical", "pubtator", text="Warfarin"),
        Annotation(((29, 35),), "Gene_or_protein", "pubtator", text="CYP2C9"),
    )) for n in docs]
    export_collection(records, directory, SCHEMA, Counter())
    return directory


def annotate(root: Path, person: str, name: str, *, finish: bool = True, phase: str = "phase1",
             variant: bool = False) -> None:
    """What brat writes after an annotator's edits: the whole .ann rewritten, ids renumbered.  ``variant``:
    another reading of the sentence (one more entity, another relation type), for the seniors to adjudicate."""
    lines = ["T1\tGene_or_protein 29 35\tCYP2C9", "T2\tChemical 0 8\tWarfarin", "T3\tPhenotype 9 14\tdoses",
             f"R1\t{'influences' if variant else 'isAssociatedWith'} Arg1:T2 Arg2:T3\t"]
    if variant:
        lines.append("T5\tGenomic_factor 29 44\tCYP2C9 carriers")
    if finish:
        lines.append(f"T4\t{DONE}")
    (root / phase / person / f"{name}.ann").write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def rewrite_untouched(root: Path, person: str, name: str) -> None:
    """brat rewrites a file it opened without any change of annotation: other ids, other order."""
    path = root / "phase1" / person / f"{name}.ann"
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x]
    path.write_text("".join(x.replace("T1\t", "T7\t").replace("T2\t", "T1\t").replace("T7\t", "T2\t") + "\n"
                            for x in reversed(lines)), encoding="utf-8")


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "locks" not in p.parts}


def check(root: Path) -> dict[str, Any]:
    """Every rule and count of the campaign, checked; returns the campaign."""
    campaign = read_campaign(root)
    docs = campaign["documents"]
    calib = {(e["document"], p) for e in campaign.get("calibration", []) for p in e["annotators"]}
    # two distinct annotators, a senior who annotated none of their documents
    assert asg.rule_violations(campaign) == []
    # no document lost: each assigned file is in each holder's collection; no document held by someone else
    held: Counter[tuple[str, str]] = Counter()
    for e in docs:
        for person in e["phase1"]:
            for name in e["files"]:
                assert (root / "phase1" / person / f"{name}.txt").is_file(), (person, name)
                assert (root / "phase1" / person / f"{name}.ann").is_file(), (person, name)
                held[(name, person)] += 1
    assert max(held.values()) == 1  # none assigned twice to one person
    for txt in root.glob("phase1/*/*.txt"):
        assert (txt.stem, txt.parent.name) in held or (txt.stem, txt.parent.name) in calib, txt
    # phase 2: a senior's collection holds only documents that senior adjudicates, each in one collection
    senior_of = {name: e["phase2"] for e in docs for name in e["files"]}
    in_phase2: Counter[str] = Counter()
    for txt in root.glob("phase2/*/*.txt"):
        assert senior_of.get(txt.stem) == txt.parent.name, txt
        assert txt.with_suffix(".ann").is_file(), txt
        in_phase2[txt.stem] += 1
    assert not in_phase2 or max(in_phase2.values()) == 1
    # manifest.csv derived from campaign.json, the history replays to it
    assert (root / "manifest.csv").read_text(encoding="utf-8") == asg.manifest_text(campaign)
    if (root / ASSIGNMENTS_HISTORY).exists():
        assert asg.replay(asg.read_history(root)) == set(asg.rows(campaign))
        assert all(r["reconciles"] for r in asg.person_history(root, campaign))
    # status counts reconcile with campaign.json
    status = campaign_status(root)
    phase1 = [r for r in status["rows"] if r["phase"] == 1]
    assert sum(r["assigned"] for r in phase1) == 2 * sum(len(e["files"]) for e in docs)
    for r in phase1:
        assert r["assigned"] == sum(len(e["files"]) for e in docs if r["person"] in e["phase1"])
        assert r["untouched"] + r["edited"] + r["held_back"] == r["in_collection"] == r["assigned"]
    return campaign


def mine(campaign: dict[str, Any], person: str) -> list[str]:
    return [e["document"] for e in campaign["documents"] if person in e["phase1"]]


@pytest.mark.slow  # a whole campaign with a changing team
def test_a_campaign_of_several_months(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    # --- month 0: batches, 20 documents, four annotators and one senior
    coll = make_collection(tmp_path / "coll", names(range(100, 105)))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nann1,annotator\nann2,annotator\nann3,annotator\nann4,annotator\nsen1,senior\n",
                      encoding="utf-8")
    root = tmp_path / "campaign"
    prepare_batches(coll, roster, root, seed=3, counts=Counter())
    users.create_users(root, access_roles(read_campaign(root)))
    campaign = check(root)
    assert campaign["provenance"]["guideline_version"] == "1"
    assert (root / ".gitignore").read_text(encoding="utf-8").count("/access/") == 1
    assert all(len(mine(campaign, p)) == 10 for p in ("ann1", "ann2", "ann3", "ann4"))

    # --- month 1: everyone finishes half their documents; ann1 has started one more; brat rewrote one
    for person in ("ann1", "ann2", "ann3", "ann4"):
        for name in mine(campaign, person)[:5]:
            annotate(root, person, name)
    ann1 = mine(campaign, "ann1")
    annotate(root, "ann1", ann1[5], finish=False)
    rewrite_untouched(root, "ann1", ann1[6])  # bytes differ, annotations do not: not started
    assert asg.file_started(root, "1", "ann1", ann1[5]) and not asg.file_started(root, "1", "ann1", ann1[6])
    check(root)

    # --- month 2: ann1 leaves.  Without a choice for the started document: refused, nothing written
    before = snapshot(root)
    with pytest.raises(team.TeamError, match=ann1[5]):
        team.replace(root, "ann1", "newbie", when="2026-03-01T09:00:00+00:00")
    assert snapshot(root) == before
    # a replacement who already annotates the same documents would break a rule: refused by name
    with pytest.raises(team.TeamError, match="is already a person"):
        team.replace(root, "ann1", "ann2", started="move")
    assert snapshot(root) == before
    result = team.replace(root, "ann1", "newbie", started="move", when="2026-03-01T09:00:00+00:00")
    campaign = check(root)
    assert sorted(m.document for m in result.moves) == sorted(ann1[5:])
    assert mine(campaign, "ann1") == ann1[:5]  # finished work stays
    assert sorted(mine(campaign, "newbie")) == sorted(ann1[5:])
    archived = root / "archive" / "2026-03-01T090000+0000" / "phase1" / "ann1" / f"{ann1[5]}.ann"
    assert "Phenotype" in archived.read_text(encoding="utf-8")  # ann1's partial version, archived
    # the newcomer starts fresh from the pre-annotation, in a collection of their own with guide and conf
    assert (root / "phase1" / "newbie" / f"{ann1[5]}.ann").read_bytes() == \
        (root / "preannotation" / f"{ann1[5]}.ann").read_bytes()
    assert validate_collection(root / "phase1" / "newbie") == []
    for conf in ("annotation.conf", "visual.conf", "kb_shortcuts.conf", "tools.conf"):
        assert (root / "phase1" / "newbie" / conf).read_bytes() == (root / "phase1" / "ann2" / conf).read_bytes()
    assert "Guidelines version 1" in (root / "phase1" / "newbie" / "guide.md").read_text(encoding="utf-8")
    people = {p.id: p for p in users.list_people(root)}
    assert people["ann1"].revoked and not people["newbie"].revoked and set(result.passwords) == {"newbie"}
    assert users.UserStore(root).verify("newbie", result.passwords["newbie"]) is not None

    # --- month 3: a newcomer and an extra senior join and take a fair share of unstarted documents
    unstarted = sum(1 for e in campaign["documents"] for p in e["phase1"] if not asg.started(root, e, "1", p))
    result = team.add_person(root, "ann5", "annotator", when="2026-04-01T09:00:00+00:00")
    campaign = check(root)
    assert len(mine(campaign, "ann5")) == unstarted // 5 == len(result.moves)
    assert all(not m.started for m in result.moves)
    result = team.add_person(root, "sen2", "senior", when="2026-04-02T09:00:00+00:00")
    campaign = check(root)
    assert len(result.moves) == 20 // 2
    assert Counter(e["phase2"] for e in campaign["documents"]) == {"sen1": 10, "sen2": 10}

    # --- reassignments: a started document is refused, so is a rule break; an unstarted one moves
    ann2 = mine(campaign, "ann2")
    before = snapshot(root)
    first_pair = next(e for e in campaign["documents"] if e["document"] == ann2[0])["phase1"]
    free = next(p for p in ("ann3", "ann4", "ann5", "newbie") if p not in first_pair)
    with pytest.raises(team.TeamError, match=f"nobody moved who has started.*{ann2[0]}"):
        team.reassign(root, [ann2[0]], free, giver="ann2")
    partner = next(e for e in campaign["documents"] if e["document"] == ann2[-1])["phase1"]
    other = next(p for p in partner if p != "ann2")
    with pytest.raises(team.TeamError, match=f"two distinct phase-1 annotators.*{ann2[-1]}"):
        team.reassign(root, [ann2[-1]], other, giver="ann2")
    with pytest.raises(team.TeamError, match="a senior who annotated none"):
        team.reassign(root, [ann2[-1]], "sen1", giver="ann2")
    assert snapshot(root) == before
    target = next(p for p in ("ann3", "ann4", "ann5", "newbie") if p not in partner)
    team.reassign(root, [ann2[-1]], target, giver="ann2", when="2026-04-10T09:00:00+00:00")
    campaign = check(root)
    assert ann2[-1] in mine(campaign, target) and ann2[-1] not in mine(campaign, "ann2")

    # --- a calibration round: two extra documents to every active annotator, outside the rules
    calib_coll = make_collection(tmp_path / "calib", ["900_1", "900_2"])
    result_round = calibration.add_round(root, calib_coll, ["900_1", "900_2"], reference=calib_coll,
                                         when="2026-04-15T09:00:00+00:00")
    assert result_round["annotators"] == ["ann2", "ann3", "ann4", "ann5", "newbie"]
    campaign = check(root)
    for person in result_round["annotators"]:
        annotate(root, person, "900_1")
    annotate(root, "ann2", "900_2")
    report = calibration.report(root, SCHEMA)
    rows = {r["person"]: r for r in report["people"]}
    assert rows["ann2"]["finished"] == 2 and rows["ann3"]["finished"] == 1
    assert rows["ann3"]["mean_entities_f1_vs_others"] == 1.0  # all annotated 900_1 alike
    assert rows["ann3"]["entities_f1_vs_reference"] is not None and rows["ann3"]["entities_f1_vs_reference"] < 1.0
    assert "| ann2 | 2 | 2 |" in calibration.format_report(report)
    status = campaign_status(root)  # calibration documents are counted apart, not as anyone's assignments
    assert sum(r["assigned"] for r in status["rows"] if r["phase"] == 1) == 40
    from pipeline.campaign.status import team_status

    assert team_status(root)["calibration"] == {p: 2 for p in result_round["annotators"]}
    # the manager adds 900_1 to the campaign: two of its annotators, a senior who is neither
    with pytest.raises(CampaignError, match="a senior who annotated none"):
        calibration.promote(root, "900_1", ["ann2", "ann3"], "ann4")
    calibration.promote(root, "900_1", ["ann2", "ann3"], "sen2", when="2026-04-20T09:00:00+00:00")
    campaign = check(root)
    assert len(campaign["documents"]) == 21

    # --- the guidelines change: every guide says so; nobody has worked since (no journal: cannot be told)
    guidelines.record_version(root, "2", "Phenotype spans exclude determiners.", when="2026-05-01T00:00:00+00:00")
    guide = (root / "phase1" / "ann3" / "guide.md").read_text(encoding="utf-8")
    assert "Guidelines version 2**, current since 2026-05-01" in guide and "exclude determiners" in guide
    assert guide.startswith("# Annotator guide") and guide.count("Guidelines version") == 1
    since = guidelines.worked_since(root, read_campaign(root))
    assert since["source"] == "annotations" and all(r["documents"] == 0 for r in since["people"])
    todo = [n for n in mine(campaign, "ann4") if not asg.file_started(root, "1", "ann4", n)]
    rewrite_untouched(root, "ann4", todo[1])  # brat rewrote a file it opened: not work
    annotate(root, "ann4", todo[0])
    since = {r["person"]: r for r in guidelines.worked_since(root, read_campaign(root))["people"]}
    assert since["ann4"]["documents"] == 1 and since["ann3"]["documents"] == 0
    with pytest.raises(CampaignError, match="already recorded"):
        guidelines.record_version(root, "2", "again")
    from pipeline.campaign.journal import Journal

    Journal(root).record("ann3", f"phase1/ann3/{mine(campaign, 'ann3')[-1]}", b"", "createSpan",
                         when=guidelines._epoch("2026-05-02T00:00:00+00:00"))
    since = {r["person"]: r for r in guidelines.worked_since(root, read_campaign(root))["people"]}
    assert since["ann3"]["writes"] == 1 and since["ann4"]["writes"] == 0 and "ann1" not in since

    # --- month 5: future documents go to the active team only; everyone finishes
    make_collection(tmp_path / "coll2", names(range(100, 107)))
    with caplog.at_level(logging.WARNING):
        new_rows = append_to_campaign(tmp_path / "coll2", root, roster, seed=3)
    campaign = check(root)
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "ann1 left the campaign" in warned and "ann5 is in the campaign but not in the roster" in warned
    takers = {p for _, ph, p in new_rows if ph == "1"}
    assert "ann1" not in takers and {"ann5", "newbie"} & takers
    for i, e in enumerate(campaign["documents"]):
        for person in e["phase1"]:
            doc, _ = read_document(root / "phase1" / person / f"{e['document']}.txt")
            if not is_finished(doc) and person != "ann1":
                annotate(root, person, e["document"], variant=i % 2 == 0 and person == e["phase1"][1])
    # ann1's finished work is still there and counts
    counts: Counter[str] = Counter()
    result_review = review(root, SCHEMA, counts)
    assert result_review["documents"]["assigned"] == len(campaign["documents"]) == 29
    assert result_review["documents"]["ready"] == 29 and counts["added"] == 29
    reviewed = {p["file"] for p in result_review["phase2"]}
    assert "900_1" in reviewed and "900_2" not in reviewed  # calibration apart unless the manager adds it
    check(root)

    # the history: dated entries per change, and per person over it
    history = asg.read_history(root)
    assert {h["action"] for h in history} >= {"batches", "replace", "add-person", "reassign", "calibration",
                                               "promote", "append"}
    per = {(r["person"], r["phase"]): r for r in asg.person_history(root, campaign)}
    assert per[("ann1", 1)]["ever"] == 10 and per[("ann1", 1)]["now"] == 5 and per[("ann1", 1)]["left"]
    assert per[("newbie", 1)]["joined"] == "2026-03-01T09:00:00+00:00"

    signed_off = adjudicate_and_sign_off(root, campaign)
    release_twice(tmp_path, root, signed_off, capsys)


def adjudicate(doc: BratDocument, accept: bool) -> tuple[BratDocument, int]:
    """What a senior does in brat: each ``Disagreement`` attribute removed (accept) or its entity deleted
    (reject), each ``Disputed_<type>`` relation retyped to ``<type>`` (accept) or deleted (reject), alternating
    from ``accept``; returns the document and the number of decisions taken."""
    taken = 0
    for attr in [a for a in doc.attributes if a.type == DISAGREEMENT]:
        if not any(i == attr.target for i in doc.ids()):
            continue  # deleted with an entity rejected before
        if accept:
            doc = dc_replace(doc, attributes=[a for a in doc.attributes if a.id != attr.id])
        else:
            doc = remove_annotation(doc, attr.target)
        accept, taken = not accept, taken + 1
    for rel in [r for r in doc.relations if undisputed_type(r.type)]:
        if accept:
            real = undisputed_type(rel.type) or rel.type
            doc = dc_replace(doc, relations=[dc_replace(r, type=real) if r.id == rel.id else r
                                             for r in doc.relations])
        else:
            doc = remove_annotation(doc, rel.id)
        accept, taken = not accept, taken + 1
    return doc, taken


def adjudicate_and_sign_off(root: Path, campaign: dict[str, Any]) -> dict[str, BratDocument]:
    """Phase 2: the seniors adjudicate and sign off every document but one each (pending); sen1 discards one.
    Returns the signed-off documents (not the discarded one) as the seniors left them."""
    seniors = sorted({e["phase2"] for e in campaign["documents"]})
    signed_off: dict[str, BratDocument] = {}
    decisions = 0
    for senior in seniors:
        names_ = sorted((p.stem for p in (root / "phase2" / senior).glob("*.txt")), key=lambda n: n.split("_"))
        assert names_ == sorted((n for e in campaign["documents"] if e["phase2"] == senior for n in e["files"]),
                                key=lambda n: n.split("_"))
        assert senior != "sen2" or "900_1" in names_  # the promoted calibration document is adjudicated too
        for k, name in enumerate(names_):
            if k == 1:
                continue  # stays pending
            txt = root / "phase2" / senior / f"{name}.txt"
            with document_lock(root, txt):
                doc, issues = read_document(txt)
                assert issues == []
                if senior == "sen1" and k == 0:
                    doc = mark(doc, DISCARD_TYPE, "ambiguous")
                else:
                    doc, taken = adjudicate(doc, accept=k % 2 == 0)
                    decisions += taken
                    doc = mark(doc, CAMPAIGN_DONE_TYPE)
                    signed_off[name] = doc
                txt.with_suffix(".ann").write_text(dumps(doc), encoding="utf-8")
            check(root)
    assert decisions >= 10  # the variant readings gave the seniors something to decide
    campaign = check(root)
    status = {(r["person"], r["phase"]): r for r in campaign_status(root)["rows"]}
    assert sum(status[(s, 2)]["done"] for s in seniors) == len(signed_off)
    assert sum(status[(s, 2)]["discarded"] for s in seniors) == 1
    assert all(status[(s, 2)]["disagreements_left"] == 0 for s in seniors)
    return signed_off


def release_twice(tmp_path: Path, root: Path, signed_off: dict[str, BratDocument],
                  capsys: pytest.CaptureFixture[str]) -> None:
    """Finalize, apply a decision, release twice with the same inputs: the same bytes, every document
    accounted for."""
    final = tmp_path / "final"
    capsys.readouterr()
    assert cli.main(["campaign", "finalize", str(root), "--out", str(final), "--json"]) == 3  # 2 pending
    report = json.loads(capsys.readouterr().out)
    assert {p.stem for p in final.glob("*.txt")} == set(signed_off)
    assert len(report["pending"]) == 2 and report["held_back"] == [] and len(report["discarded"]) == 1
    assert not any(x in (final / f"{n}.ann").read_text(encoding="utf-8")
                   for n in signed_off for x in ("Disagreement", "Disputed_", "Done"))
    for name, adjudicated in signed_off.items():  # FINAL says what the senior decided, nothing else
        doc, issues = read_document(final / f"{name}.txt")
        # the merge's "[newbie: no relation; ann5: none]" dispute text is campaign-only: finalize removes it
        expected = without_markers(adjudicated)
        expected.notes = [n for n in expected.notes if strip_dispute(n.text)[0].strip()]
        assert issues == [] and canonical(doc) == canonical(expected), name
    check(root)

    decisions = tmp_path / "decisions.yaml"
    decisions.write_text('retype:\n  - pattern: "(?i)doses?"\n    from: Phenotype\n    to: Pharmacokinetic_phenotype\n'
                         '    why: a dose is pharmacokinetic, phase-3 meeting\n', encoding="utf-8")
    args = ["--campaign", str(root), "--decisions", str(decisions), "--name", "months", "--release-version", "1",
            "--date", "2026-06-01", "--json"]
    # decisions not applied yet: refused, nothing written
    assert cli.main(["release", str(final), "--out", str(tmp_path / "early"), *args]) == 2
    assert not (tmp_path / "early").exists()
    capsys.readouterr()
    assert cli.main(["decisions", "apply", str(final), str(decisions)]) == 0
    for name in signed_off:
        ann = (final / f"{name}.ann").read_text(encoding="utf-8")
        assert "Pharmacokinetic_phenotype 9 14\tdoses" in ann and "\tPhenotype " not in ann
    check(root)

    releases = [tmp_path / "release1", tmp_path / "release2"]
    infos = []
    for out in releases:
        capsys.readouterr()
        assert cli.main(["release", str(final), "--out", str(out), *args]) == 0
        infos.append(json.loads(capsys.readouterr().out))
        check(root)
    first, second = (snapshot(r) for r in releases)
    assert sorted(first) == sorted(second) and len(first) > 20
    assert [k for k in first if first[k] != second[k]] == []
    assert infos[0] == infos[1]
    acc = json.loads((releases[0] / "release.json").read_text(encoding="utf-8"))["campaign"]["accounting"]
    campaign = read_campaign(root)
    assert acc["assigned"] == len(campaign["documents"]) == 29  # 900_2, calibration only, counted apart
    assert acc["released"] == len(signed_off) and acc["discarded_phase2"] == 1 and acc["pending_signoff"] == 2
    assert acc["held_back"] == acc["discarded_phase1"] == acc["pending_phase2"] == acc["not_accounted_for"] == 0
    assert acc["released"] + acc["discarded_phase2"] + acc["held_back"] + acc["pending_signoff"] \
        + acc["discarded_phase1"] + acc["pending_phase2"] == acc["assigned"]
    assert acc["discard_reasons_phase2"] == {"ambiguous": 1}
    assert {p.stem for p in (releases[0] / "brat").glob("*.txt")} == set(signed_off)
    # Tables 8-9: each released document compared once, between the two annotators the campaign assigned it
    # (the other annotators' calibration copies of a promoted document are not campaign work)
    info = json.loads((releases[0] / "release.json").read_text(encoding="utf-8"))
    pairs = {p["pair"]: p["documents"] for p in info["agreement"]["pairs"]}
    assigned_pairs = Counter(" vs ".join(sorted(e["phase1"])) for e in campaign["documents"]
                             if e["document"] in signed_off)
    assert pairs == dict(assigned_pairs), (pairs, assigned_pairs)


def test_cli_team_commands_and_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    coll = make_collection(tmp_path / "coll", names(range(100, 103)))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nann1,annotator\nann2,annotator\nann3,annotator\nsen1,senior\n", encoding="utf-8")
    root = tmp_path / "campaign"
    assert cli.main(["batches", "--collection", str(coll), "--roster", str(roster), "--out", str(root),
                     "--seed", "1"]) == 0
    capsys.readouterr()
    first = mine(read_campaign(root), "ann1")[0]
    annotate(root, "ann1", first, finish=False)
    assert cli.main(["campaign", "replace", str(root), "ann1", "ann9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pgx-corpus campaign replace:") and first in err
    assert cli.main(["campaign", "replace", str(root), "ann1", "ann9", "--started", "keep"]) == 0
    out = capsys.readouterr().out
    assert "ann1: access revoked" in out and "ann9\t" in out
    assert first in mine(read_campaign(root), "ann1")
    assert cli.main(["campaign", "add-person", str(root), "sen2", "--role", "senior"]) == 0
    assert "phase 2 sen1 -> sen2" in capsys.readouterr().out
    assert cli.main(["campaign", "status", str(root), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    team_rows = {(r["person"], r["phase"]): r for r in status["team"]["people"]}
    assert team_rows[("ann1", 1)]["left"] and team_rows[("ann9", 1)]["now"] == 7
    assert cli.main(["campaign", "status", str(root)]) == 0
    assert "## Team over the assignment history" in capsys.readouterr().out


def test_replacing_a_senior_moves_what_they_have_not_started(tmp_path: Path) -> None:
    coll = make_collection(tmp_path / "coll", names(range(100, 102)))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nann1,annotator\nann2,annotator\nsen1,senior\n", encoding="utf-8")
    root = tmp_path / "campaign"
    prepare_batches(coll, roster, root, seed=3, counts=Counter())
    docs = names(range(100, 102))
    for person in ("ann1", "ann2"):
        for name in docs[:4]:
            annotate(root, person, name)
    review(root, SCHEMA)
    senior = root / "phase2" / "sen1"
    assert sorted(p.stem for p in senior.glob("*.txt")) == docs[:4]
    # sen1 signs off 100_1 and has started 100_2; 100_3 and 100_4 are merged but untouched
    annotate(root, "sen1", docs[0], phase="phase2")
    (senior / f"{docs[1]}.ann").write_text("T1\tGene_or_protein 29 35\tCYP2C9\n", encoding="utf-8")
    assert asg.file_started(root, "2", "sen1", docs[1]) and not asg.file_started(root, "2", "sen1", docs[2])
    with pytest.raises(team.TeamError, match=docs[1]):
        team.replace(root, "sen1", "sen9")
    result = team.replace(root, "sen1", "sen9", started="keep", when="2026-02-01T00:00:00+00:00")
    campaign = check(root)
    assert result.kept_started == [docs[1]]
    assert sorted(m.document for m in result.moves) == docs[2:]  # merged-untouched and not yet merged
    phase2 = {e["document"]: e["phase2"] for e in campaign["documents"]}
    assert [phase2[d] for d in docs] == ["sen1", "sen1"] + ["sen9"] * 6
    # the merged, untouched documents moved with their reference; review writes the others for sen9
    assert sorted(p.stem for p in (root / "phase2" / "sen9").glob("*.txt")) == docs[2:4]
    assert (root / "review" / "merged" / "sen9" / f"{docs[2]}.ann").is_file()
    assert not (senior / f"{docs[2]}.txt").exists() and (senior / f"{docs[0]}.txt").exists()
    for person in ("ann1", "ann2"):
        for name in docs[4:]:
            annotate(root, person, name)
    counts: Counter[str] = Counter()
    assert review(root, SCHEMA, counts)["documents"]["ready"] == 8 and counts["added"] == 4
    assert sorted(p.stem for p in (root / "phase2" / "sen9").glob("*.txt")) == docs[2:]
    status = {(r["person"], r["phase"]): r for r in campaign_status(root)["rows"]}
    assert status[("sen9", 2)]["assigned"] == status[("sen9", 2)]["in_collection"] == 6
    assert status[("sen9", 2)]["untouched"] == 6 and status[("sen1", 2)]["assigned"] == 2
    # a started document moves only when the manager says so; the senior's version is archived
    team.add_person(root, "sen3", "senior", when="2026-02-02T00:00:00+00:00")
    team.reassign(root, [docs[1]], "sen3", giver="sen1", started="move", when="2026-02-03T00:00:00+00:00")
    check(root)
    assert (root / "archive" / "2026-02-03T000000+0000" / "phase2" / "sen1" / f"{docs[1]}.ann").is_file()
    assert not asg.file_started(root, "2", "sen3", docs[1])


def test_an_interrupted_team_change_can_be_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    coll = make_collection(tmp_path / "coll", names(range(100, 102)))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nann1,annotator\nann2,annotator\nann3,annotator\nsen1,senior\n", encoding="utf-8")
    root = tmp_path / "campaign"
    prepare_batches(coll, roster, root, seed=3, counts=Counter())
    before = read_campaign(root)

    def interrupted(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(asg, "save_campaign", interrupted)
    with pytest.raises(OSError):
        team.add_person(root, "ann4", "annotator")
    monkeypatch.undo()
    assert read_campaign(root) == before  # the change has not happened: every giver still has their copy
    assert all((root / "phase1" / p / f"{e['document']}.ann").is_file() for e in before["documents"]
               for p in e["phase1"])
    result = team.add_person(root, "ann4", "annotator")  # the receiver's copies are taken as written
    campaign = check(root)
    assert len(mine(campaign, "ann4")) == len(result.moves) == 16 // 4
