"""The annotation campaign, phase 1 to phase 2: simulated annotators edit their .ann files in code, then
``campaign status`` and ``campaign review`` are checked precisely.

Covers: pipeline.brat.standoff, pipeline.brat.validate, pipeline.campaign.batches, pipeline.campaign.deploy,
pipeline.campaign.merge, pipeline.campaign.origin, pipeline.campaign.phase1, pipeline.campaign.review,
pipeline.campaign.status, pipeline.campaign.users, pipeline.cli, pipeline.cli.brat_commands,
pipeline.cli.campaign_commands, pipeline.corpus.brat_export, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.standoff import dumps, read_document
from pipeline.brat.validate import validate_collection
from pipeline.campaign.batches import RosterError, prepare_batches
from pipeline.campaign.layout import CampaignError
from pipeline.campaign.review import review
from pipeline.campaign.status import campaign_status, format_markdown
from pipeline.campaign.users import Person, UserStore
from pipeline.corpus.brat_export import export_collection
from pipeline.documents import Annotation, SentenceRecord
from pipeline.schema import load_schema

SCHEMA = load_schema()
TEXT = "Warfarin doses were lower in CYP2C9 carriers."
NAMES = ["100_1", "100_2", "100_3", "101_1", "101_2", "101_3"]


def make_collection(directory: Path) -> Path:
    records = [
        SentenceRecord(name.split("_")[0], int(name.split("_")[1]) - 1, TEXT, annotations=(
            Annotation(((0, 8),), "Chemical", "pubtator", text="Warfarin"),
            Annotation(((29, 35),), "Gene_or_protein", "pubtator", text="CYP2C9"),
        ))
        for name in NAMES
    ]
    export_collection(records, directory, SCHEMA, Counter())
    return directory


def write_roster(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(["id,role,phase1", *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def campaign(tmp_path: Path) -> Path:
    coll = make_collection(tmp_path / "coll")
    roster = write_roster(tmp_path / "roster.csv", ["alice,annotator,yes", "bob,annotator,yes", "dave,senior,no"])
    out = tmp_path / "campaign"
    prepare_batches(coll, roster, out, seed=5, counts=Counter())
    return out


def ann(campaign: Path, person: str, name: str, phase: str = "phase1") -> Path:
    return campaign / phase / person / f"{name}.ann"


def set_ann(campaign: Path, person: str, name: str, lines: list[str], phase: str = "phase1") -> None:
    ann(campaign, person, name, phase).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def add_lines(campaign: Path, person: str, name: str, lines: list[str]) -> None:
    path = ann(campaign, person, name)
    path.write_text(path.read_text(encoding="utf-8") + "".join(line + "\n" for line in lines), encoding="utf-8")


CHEM = "T1\tChemical 0 8\tWarfarin"
GENE = "T2\tGene_or_protein 29 35\tCYP2C9"
DONE = "T90\tDone 20 25\tlower"


def simulate(campaign: Path) -> None:
    """Both annotators' phase-1 work (see the expected figures in the tests)."""
    # 100_1: alice retypes the gene, adds a phenotype and a relation; bob adds a negated relation; both done
    set_ann(campaign, "alice", "100_1", [CHEM, "T2\tGenomic_factor 29 35\tCYP2C9", "T3\tPhenotype 9 14\tdoses",
                                         "R1\tisAssociatedWith Arg1:T1 Arg2:T3\t", DONE])
    set_ann(campaign, "bob", "100_1", [CHEM, GENE, "R1\tisAssociatedWith Arg1:T2 Arg2:T1\t",
                                       "#1\tAnnotatorNotes R1\tneg", DONE])
    # 100_2: alice discards it (scope), bob finishes it untouched otherwise
    add_lines(campaign, "alice", "100_2", ["T91\tDiscard 0 8\tWarfarin", "A9\tReason T91 scope"])
    add_lines(campaign, "bob", "100_2", [DONE])
    # 100_3: alice done, bob deletes the chemical but has not finished
    add_lines(campaign, "alice", "100_3", [DONE])
    set_ann(campaign, "bob", "100_3", [GENE])
    # 101_1: alice's .ann has a line that does not parse (held back); bob done
    add_lines(campaign, "alice", "101_1", ["T5\tChemical zero 8\tWarfarin", DONE])
    add_lines(campaign, "bob", "101_1", [DONE])
    # 101_2: alice done; bob changed the text (held back)
    add_lines(campaign, "alice", "101_2", [DONE])
    (campaign / "phase1" / "bob" / "101_2.txt").write_text(TEXT.replace("lower", "LOWER"), encoding="utf-8")
    add_lines(campaign, "bob", "101_2", [DONE])
    # 101_3: nobody touches it


def test_phase1_is_blind_and_complete(campaign: Path) -> None:
    data = json.loads((campaign / "campaign.json").read_text(encoding="utf-8"))
    assert [d["document"] for d in data["documents"]] == NAMES
    assert all(sorted(d["phase1"]) == ["alice", "bob"] and d["phase2"] == "dave" for d in data["documents"])
    assert [p["id"] for p in data["people"]] == ["alice", "bob", "dave"]
    assert not (campaign / "phase2").exists()
    for person in ("alice", "bob"):
        coll = campaign / "phase1" / person
        assert sorted(p.stem for p in coll.glob("*.txt")) == NAMES
        assert validate_collection(coll) == []
        conf = (coll / "annotation.conf").read_text(encoding="utf-8")
        assert "\nDiscard\n" in conf and "Reason\tArg:Discard, Value:scope|ambiguous|incomplete|typo|other" in conf
        assert "Disagreement" not in conf and "Disputed_" not in conf
        # brat's client cannot show attributes on relations: none is declared, modality is a note
        assert "<RELATION>" not in conf and "Negated" not in conf and "Hypothetical" not in conf
        guide = (coll / "guide.md").read_text(encoding="utf-8")
        for needle in ("`Discard`", "`Done`", "`scope`", "`typo`", "| `neg` |", "| `hyp` |", "| `hyp neg` |",
                       "Add Frag.", "| `X` | `Discard` |",
                       "| `C` | `Chemical` |", "| `isAssociatedWith` | any entity | any entity |",
                       "| `metabolizes` | `Gene_or_protein` | `Chemical` |", "`Pharmacokinetic_phenotype`"):
            assert needle in guide, needle
    # every document is handed out exactly as pre-annotated, and the pre-annotation copy is kept
    assert (campaign / "preannotation" / "100_1.ann").read_bytes() == ann(campaign, "alice", "100_1").read_bytes()
    note = (campaign / "DEPLOY.md").read_text(encoding="utf-8")
    assert "127.0.0.1" in note and "campaign serve" in note and "campaign users" in note
    # no access-control or password file anywhere: serve authorizes, users are created by the command line
    assert not list(campaign.rglob("acl.conf")) and not (campaign / "brat_users.py").exists()
    assert not (campaign / "access").exists()


def test_access_roles_from_the_campaign_manifest(tmp_path: Path) -> None:
    coll = make_collection(tmp_path / "coll")
    roster = write_roster(tmp_path / "r.csv", ["alice,annotator,yes", "bob,annotator,yes", "carl,senior,yes",
                                               "dave,senior,no", "mia,manager,"])
    roles = prepare_batches(coll, roster, tmp_path / "c", seed=1, counts=Counter())
    assert roles["alice"] == {"annotator"} and roles["mia"] == {"manager"} and roles["dave"] == {"senior"}
    assert roles["carl"] == {"annotator", "senior"}
    data = json.loads((tmp_path / "c" / "campaign.json").read_text(encoding="utf-8"))
    assert {p["id"]: p["role"] for p in data["people"]}["mia"] == "manager"
    assert all("mia" not in d["phase1"] and d["phase2"] != "mia" for d in data["documents"])
    assert "| mia | manager |" in (tmp_path / "c" / "DEPLOY.md").read_text(encoding="utf-8")


def row(status: dict, person: str, phase: int) -> dict:
    return next(r for r in status["rows"] if r["person"] == person and r["phase"] == phase)


def test_status_counts_every_kind_of_edit(campaign: Path) -> None:
    before = campaign_status(campaign)
    assert row(before, "alice", 1)["untouched"] == 6 and row(before, "alice", 1)["edited"] == 0
    assert row(before, "dave", 2)["assigned"] == 6 and row(before, "dave", 2)["in_collection"] == 0
    simulate(campaign)
    status = campaign_status(campaign)
    alice, bob = row(status, "alice", 1), row(status, "bob", 1)
    assert {k: alice[k] for k in ("assigned", "in_collection", "untouched", "edited", "done", "discarded",
                                  "held_back")} == {"assigned": 6, "in_collection": 6, "untouched": 1, "edited": 4,
                                                    "done": 3, "discarded": 1, "held_back": 1}
    assert alice["discarded_by_reason"] == {"scope": 1}
    assert {k: alice[k] for k in ("entities_kept", "entities_deleted", "entities_added", "entities_retyped",
                                  "relations_added")} == {"entities_kept": 7, "entities_deleted": 0,
                                                          "entities_added": 1, "entities_retyped": 1,
                                                          "relations_added": 1}
    assert alice["problems"][0].startswith(f"{ann(campaign, 'alice', '101_1')}:")
    assert {k: bob[k] for k in ("untouched", "edited", "done", "discarded", "held_back", "entities_kept",
                                "entities_deleted", "entities_added", "entities_retyped", "relations_added")} == {
        "untouched": 1, "edited": 4, "done": 3, "discarded": 0, "held_back": 1, "entities_kept": 9,
        "entities_deleted": 1, "entities_added": 0, "entities_retyped": 0, "relations_added": 1}
    assert bob["problems"][0] == (f"{campaign / 'phase1' / 'bob' / '101_2.txt'}:1: text differs from the text "
                                  "handed out (first difference on this line)")
    done_line = ann(campaign, "bob", "101_2").read_text().splitlines().index(DONE) + 1
    bob_ann = ann(campaign, "bob", "101_2")
    assert bob["problems"][1].startswith(f"{bob_ann}:{done_line}: T90: text 'lower' does not match")
    text = format_markdown(status)
    assert "| alice | 1 | 6 | 6 | 1 | 4 | 3 | 1 | 1 | 7 | 0 | 1 | 1 | 1 | 0 |" in text
    assert "| alice | 1 | scope | 1 |" in text


def entity_lines(path: Path) -> list[str]:
    doc, issues = read_document(path.with_suffix(".txt"))
    assert issues == []
    marks = {a.target: a.value for a in doc.attributes if a.type == "Disagreement"}
    out = [f"{t.type} {t.fragments} {marks.get(t.id, '-')}" for t in doc.textbounds]
    assert not [a for a in doc.attributes if a.target.startswith("R")]  # brat cannot show them on relations
    for r in doc.relations:
        args = " ".join(f"{role}:{doc.textbound(ref).type}" for role, ref in r.args)  # type: ignore[union-attr]
        out.append(f"{r.type} {args} | {' / '.join(doc.notes_for(r.id))}")
    return out


def test_review_merges_lists_and_never_overwrites(campaign: Path) -> None:
    simulate(campaign)
    counts: Counter[str] = Counter()
    report = review(campaign, SCHEMA, counts)
    assert report["documents"] == {"assigned": 6, "ready": 1, "discarded": 1, "held_back": 2, "pending": 2}
    assert counts["added"] == 1
    senior = campaign / "phase2" / "dave"
    assert sorted(p.stem for p in senior.glob("*.txt")) == ["100_1"]
    assert entity_lines(senior / "100_1.ann") == [
        "Chemical ((0, 8),) -",
        "Phenotype ((9, 14),) alice",
        "Gene_or_protein ((29, 35),) bob",
        "Genomic_factor ((29, 35),) alice",
        # relations only one annotator drew: a disputed type, the note saying who said what (bob's modality)
        "Disputed_isAssociatedWith Arg1:Chemical Arg2:Phenotype | [alice: none; bob: no relation]",
        "Disputed_isAssociatedWith Arg1:Gene_or_protein Arg2:Chemical | neg [alice: no relation; bob: neg]",
    ]
    assert validate_collection(senior) == []
    conf = (senior / "annotation.conf").read_text(encoding="utf-8")
    assert "Disagreement\tArg:<ENTITY>, Value:alice|bob" in conf and "<RELATION>" not in conf
    assert "Disputed_isAssociatedWith\tArg1:<ENTITY>, Arg2:<ENTITY>" in conf
    visual = (senior / "visual.conf").read_text(encoding="utf-8")
    assert "Disagreement\tdashArray:1-2, glyph:≠alice|≠bob" in visual
    assert "Disputed_isAssociatedWith | ≠ is associated with | ≠ associated | ≠ assoc | ≠" in visual
    guide = (senior / "guide.md").read_text(encoding="utf-8")
    assert "carries the `Disagreement` attribute" in guide and "annotate it as `Done`: that signs" in guide
    assert "final when no" not in guide and "## Entity types" not in guide  # no phase-1 rules repeated
    assert report["discarded"] == [{"file": "100_2", "document": "100_2", "by": {"alice": ["scope"]}}]
    held = {(h["file"], h["person"]): h["problems"] for h in report["held_back"]}
    assert sorted(held) == [("101_1", "alice"), ("101_2", "bob")]
    assert held[("101_1", "alice")][0].startswith(f"{ann(campaign, 'alice', '101_1')}:")
    assert {p["file"]: p["waiting_for"] for p in report["pending"]} == {"100_3": ["bob"], "101_3": ["alice", "bob"]}
    # agreement of the pair over the one ready document (alice is the reference)
    pair = report["agreement"]["pairs"][0]
    assert (pair["reference"], pair["predicted"], pair["documents"]["common"]) == ("alice", "bob", 1)
    exact = pair["entities"]["exact_strict"]["micro"]
    assert (exact["tp"], exact["fp"], exact["fn"]) == (1, 1, 2)
    assert pair["entities"]["exact_any"]["micro"]["f1"] == pytest.approx(0.8)
    assert pair["relations"]["exact_any_undirected"]["micro"]["tp"] == 0
    md = (campaign / "review" / "agreement.md").read_text(encoding="utf-8")
    assert "## Entities (Table 8 settings)" in md and "| alice / bob | 1 | 40.0 |" in md
    assert "| 100_2 | alice: scope |" in (campaign / "review" / "report.md").read_text(encoding="utf-8")

    # running twice gives the same result
    snapshot = {p: p.read_bytes() for p in sorted(campaign.rglob("*")) if p.is_file()}
    counts2: Counter[str] = Counter()
    review(campaign, SCHEMA, counts2)
    assert counts2["added"] == 0 and counts2["already_in_phase2"] == 1
    assert {p: p.read_bytes() for p in sorted(campaign.rglob("*")) if p.is_file()} == snapshot

    # the senior starts; the annotators mend and finish the rest; a rerun adds only the new documents
    set_ann(campaign, "dave", "100_1", ["T1\tChemical 0 8\tWarfarin", "T4\tGenomic_factor 29 35\tCYP2C9",
                                        "T2\tPhenotype 9 14\tdoses", "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t"],
            phase="phase2")
    started = ann(campaign, "dave", "100_1", "phase2").read_bytes()
    set_ann(campaign, "alice", "101_1", [CHEM, GENE, DONE])
    add_lines(campaign, "bob", "100_3", [DONE])
    counts3: Counter[str] = Counter()
    report3 = review(campaign, SCHEMA, counts3)
    assert counts3["added"] == 2 and report3["documents"]["ready"] == 3
    assert ann(campaign, "dave", "100_1", "phase2").read_bytes() == started
    assert sorted(p.stem for p in senior.glob("*.txt")) == ["100_1", "100_3", "101_1"]
    assert entity_lines(senior / "101_1.ann") == ["Chemical ((0, 8),) -", "Gene_or_protein ((29, 35),) -"]
    assert entity_lines(senior / "100_3.ann") == ["Chemical ((0, 8),) alice", "Gene_or_protein ((29, 35),) -"]

    # phase-2 status against the merged documents
    dave = row(campaign_status(campaign), "dave", 2)
    assert (dave["assigned"], dave["in_collection"], dave["untouched"], dave["edited"]) == (6, 3, 2, 1)
    assert (dave["entities_kept"], dave["entities_deleted"], dave["entities_added"]) == (3 + 2 + 2, 1, 0)
    assert dave["disagreements_left"] == 1  # 100_3: alice's chemical is still marked


def test_bad_campaigns_fail_before_writing(campaign: Path, tmp_path: Path) -> None:
    simulate(campaign)
    data = json.loads((campaign / "campaign.json").read_text(encoding="utf-8"))
    data["documents"][0]["phase2"] = "alice"
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("preannotation", "phase1"):
        (bad / name).symlink_to(campaign / name)
    (bad / "campaign.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CampaignError, match="cannot give document 100_1 a senior who did not annotate it"):
        review(bad, SCHEMA)
    assert not (bad / "phase2").exists() and not (bad / "review").exists()
    # a person missing from the campaign directory
    (campaign / "phase1" / "bob").rename(tmp_path / "bob")
    with pytest.raises(CampaignError, match="bob .* is missing from the campaign directory"):
        review(campaign, SCHEMA)
    assert not (campaign / "phase2").exists() and not (campaign / "review").exists()


def test_batches_refuses_unusable_ids_and_started_campaigns(tmp_path: Path, campaign: Path) -> None:
    coll = make_collection(tmp_path / "coll2")
    roster = write_roster(tmp_path / "r.csv", ["Al ice,annotator,yes", "bob,annotator,yes", "dave,senior,no"])
    # the roster reader refuses it with file:line, before anything is written
    with pytest.raises(RosterError, match=r"r\.csv:2: id 'Al ice' refused as a directory name"):
        prepare_batches(coll, roster, tmp_path / "out", seed=1, counts=Counter())
    assert not (tmp_path / "out").exists()
    roster = write_roster(tmp_path / "r2.csv", ["bob,annotator,yes", "Bob,annotator,yes", "dave,senior,no"])
    with pytest.raises(RosterError, match=r"r2\.csv:3: id 'Bob' differs only in case"):
        prepare_batches(coll, roster, tmp_path / "out", seed=1, counts=Counter())
    add_lines(campaign, "alice", "100_1", [DONE])
    roster = write_roster(tmp_path / "r3.csv", ["alice,annotator,yes", "bob,annotator,yes", "dave,senior,no"])
    with pytest.raises(CampaignError, match="has started"):
        prepare_batches(coll, roster, campaign, seed=5, counts=Counter())
    assert DONE in ann(campaign, "alice", "100_1").read_text(encoding="utf-8")


def test_campaign_commands(campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           caplog: pytest.LogCaptureFixture) -> None:
    simulate(campaign)
    # WORK_LEFT (3): documents are held back, others pending
    assert cli.main(["campaign", "status", str(campaign), "--json", "--png", str(tmp_path / "p.png")]) == 3
    captured = capsys.readouterr()
    status = json.loads(captured.out)
    assert row(status, "bob", 1)["done"] == 3
    assert "held back:" in captured.err and "101_2.txt:1:" in captured.err
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["campaign", "status", str(campaign)]) == 3
    assert "| bob | 1 | 6 | 6 | 1 | 4 | 3 | 0 | 1 |" in capsys.readouterr().out
    assert cli.main(["campaign", "review", str(campaign)]) == 3  # WORK_LEFT: documents held back
    assert "6 documents: 1 ready (1 added" in capsys.readouterr().out
    assert cli.main(["campaign", "review", str(campaign), "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["added"] == 0
    (campaign / "phase1" / "bob").rename(tmp_path / "gone")
    assert cli.main(["campaign", "review", str(campaign)]) == 2
    assert "missing from the campaign directory" in capsys.readouterr().err
    # the batches command shows each new password once, on stdout, and writes or logs it nowhere
    caplog.set_level(logging.DEBUG)
    coll = make_collection(tmp_path / "c3")
    roster = write_roster(tmp_path / "r.csv", ["alice,annotator,yes", "bob,annotator,yes", "dave,senior,no",
                                               "mia,manager,no"])
    out_dir = tmp_path / "o"
    assert cli.main(["batches", "--collection", str(coll), "--roster", str(roster), "--out", str(out_dir)]) == 0
    out = capsys.readouterr()
    passwords = dict(line.strip().split("\t") for line in out.out.splitlines() if line.startswith("  "))
    assert sorted(passwords) == ["alice", "bob", "dave", "mia"] and len(set(passwords.values())) == 4
    store = UserStore(out_dir)
    assert all(store.verify(person, pw) is not None for person, pw in passwords.items())
    assert store.get("mia") == Person("mia", frozenset({"manager"}))
    tree = b"".join(p.read_bytes() for p in out_dir.rglob("*") if p.is_file())
    for pw in passwords.values():
        assert out.out.count(pw) == 1 and pw not in out.err and pw not in caplog.text
        assert pw.encode() not in tree
    # a rerun keeps every password: no new one, none shown
    assert cli.main(["batches", "--collection", str(coll), "--roster", str(roster), "--out", str(out_dir)]) == 0
    again = capsys.readouterr().out
    assert "new passwords" not in again and "4 people (0 new)" in again
    assert all(UserStore(out_dir).verify(person, pw) is not None for person, pw in passwords.items())


def test_merge_is_independent_of_ids(campaign: Path) -> None:
    """The same annotations under other ids give byte-identical phase-2 documents."""
    from pipeline.campaign.merge import merge_versions

    a, _ = read_document(campaign / "preannotation" / "100_1.txt")
    a.textbounds = list(reversed(a.textbounds))
    b, _ = read_document(campaign / "preannotation" / "100_1.txt")
    merged1, c1 = merge_versions([("alice", a), ("bob", b)])
    merged2, c2 = merge_versions([("alice", b), ("bob", a)])
    assert dumps(merged1) == dumps(merged2) and c1 == c2 == {"entities_agreed": 2, "entities_marked": 0,
                                                             "relations_agreed": 0, "relations_marked": 0,
                                                             "relations_modality_differs": 0}


def test_other_modules_add_campaign_commands() -> None:
    """How release_commands adds ``campaign finalize``: from its register(sub), after ours."""
    from pipeline.cli import campaign_commands

    parser = cli.make_parser()
    demo = campaign_commands.add_campaign_command("demo", "a demonstration command")
    demo.add_argument("campaign_dir")
    demo.set_defaults(func=lambda args: 7)
    args = parser.parse_args(["campaign", "demo", "somewhere"])
    assert args.func(args) == 7 and args.campaign_dir == "somewhere"
    # other modules add theirs too (serve, users, history, backup, ...)
    assert {"append", "backup", "demo", "finalize", "history", "review", "status", "users"} <= set(
        campaign_commands.COMMANDS)
