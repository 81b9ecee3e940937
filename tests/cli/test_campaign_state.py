"""``campaign users | history | backup`` (pipeline/cli/users_commands.py) on a campaign written by ``batches``,
with serve's saves simulated through the journal.

Covers: pipeline.durable, pipeline.campaign.journal, pipeline.campaign.locks, pipeline.campaign.status,
pipeline.campaign.users, pipeline.cli, pipeline.cli.brat_commands, pipeline.cli.campaign_commands,
pipeline.cli.users_commands, pipeline.serve.backup, pipeline.serve.history
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import shutil
import stat
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import cli, durable
from pipeline.campaign.journal import Journal
from pipeline.campaign.locks import document_lock
from pipeline.campaign.status import campaign_status
from pipeline.campaign.users import UserStore
from tests.campaign.test_campaign import make_collection

CHEM = "T1\tChemical 0 8\tWarfarin\n"
GENE = "T2\tGene_or_protein 29 35\tCYP2C9\n"
REL = "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t\n"
DONE = "T90\tDone 20 25\tlower\n"
DOC = "phase1/alice/100_1"


class Clock:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        self.now += 60.0
        return self.now


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "locks" not in p.relative_to(root).parts}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A campaign (alice, bob, dave senior, mia manager) written once per module, beside its collection
    ``coll`` and roster ``roster.csv``, and the passwords batches showed."""
    root = tmp_path_factory.mktemp("campaign_state")
    coll = make_collection(root / "coll")
    roster = root / "roster.csv"
    roster.write_text("id,role,phase1\nalice,annotator,yes\nbob,annotator,yes\ndave,senior,no\nmia,manager,\n")
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        code = cli.main(["batches", "--collection", str(coll), "--roster", str(roster),
                         "--out", str(root / "campaign")])
    assert code == 0
    passwords = dict(line.strip().split("\t") for line in shown.getvalue().splitlines() if line.startswith("  "))
    assert sorted(passwords) == ["alice", "bob", "dave", "mia"]
    return root, passwords


@pytest.fixture()
def live(built: tuple[Path, dict[str, str]], tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """Each test's own copy of the module's campaign (in ``tmp_path``, with ``coll`` and ``roster.csv``)."""
    root, passwords = built
    shutil.copytree(root, tmp_path, dirs_exist_ok=True)
    yield tmp_path / "campaign", passwords


def save(campaign: Path, journal: Journal, person: str, document: str, content: str, action: str) -> None:
    """What serve does on a save: the new .ann under the document's lock, journaled."""
    ann = campaign / f"{document}.ann"
    with document_lock(campaign, ann):
        journal.record(person, document, content.encode(), action)
        durable.replace_file(ann, content.encode(), mode=0o644, umask=False, durable=True)


def test_users_list_reset_revoke(live: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str],
                                 caplog: pytest.LogCaptureFixture) -> None:
    campaign, passwords = live
    caplog.set_level(logging.DEBUG)
    assert cli.main(["campaign", "users", str(campaign), "list"]) == 0
    assert capsys.readouterr().out.splitlines() == ["alice\tannotator\tactive", "bob\tannotator\tactive",
                                                    "dave\tsenior\tactive", "mia\tmanager\tactive"]
    assert cli.main(["campaign", "users", str(campaign), "revoke", "bob"]) == 0
    assert "bob: access revoked" in capsys.readouterr().out
    assert UserStore(campaign).verify("bob", passwords["bob"]) is None
    assert cli.main(["campaign", "users", str(campaign), "list"]) == 0
    assert "bob\tannotator\trevoked" in capsys.readouterr().out
    assert cli.main(["campaign", "users", str(campaign), "reset", "alice"]) == 0
    shown = capsys.readouterr().out
    new = dict(line.strip().split("\t") for line in shown.splitlines() if line.startswith("  "))["alice"]
    assert shown.count(new) == 1 and new != passwords["alice"]
    store = UserStore(campaign)
    assert store.verify("alice", new) is not None and store.verify("alice", passwords["alice"]) is None
    assert store.verify("dave", passwords["dave"]) is not None
    everything = b"".join(tree(campaign).values())
    for pw in [*passwords.values(), new]:
        assert pw.encode() not in everything and pw not in caplog.text
    assert oct(stat.S_IMODE((campaign / "access").stat().st_mode)) == "0o700"


@pytest.mark.parametrize("argv", [["reset", "zoe"], ["revoke", "zoe"]])
def test_users_unknown_person_is_refused(live: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str],
                                         argv: list[str]) -> None:
    campaign, _ = live
    before = tree(campaign)
    assert cli.main(["campaign", "users", str(campaign), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pgx-corpus campaign users: ") and "no person 'zoe'" in err
    assert tree(campaign) == before


def test_users_needs_a_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["campaign", "users", str(tmp_path / "nowhere"), "list"]) == 2
    assert "pgx-corpus campaign users: " in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


def test_history_lists_and_restores(live: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    campaign, _ = live
    journal = Journal(campaign, clock=Clock())
    save(campaign, journal, "alice", DOC, CHEM, "createSpan")
    save(campaign, journal, "alice", DOC, CHEM + GENE, "createSpan")
    save(campaign, journal, "alice", DOC, CHEM + GENE + REL + DONE, "createArc")
    assert cli.main(["campaign", "history", str(campaign), DOC + ".ann"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{DOC}: 3 version(s), oldest first"
    assert out[1].split() == ["#", "time", "(UTC)", "person", "action", "sha256", "entities", "relations", "done"]
    sha1 = hashlib.sha256(CHEM.encode()).hexdigest()
    assert out[2].split() == ["1", "2026-09-21", "14:14:20", "alice", "createSpan", sha1[:12], "1", "0", "no"]
    assert out[4].split()[-3:] == ["2", "1", "yes"]
    # edited outside serve, then restored: the outside edit is journaled first, nothing is lost
    (campaign / f"{DOC}.ann").write_text(GENE)
    monkeypatch.setattr("pipeline.cli.users_commands.operator", lambda: "manager")
    assert cli.main(["campaign", "history", str(campaign), DOC, "--restore", "1"]) == 0
    assert f"{DOC}: version 1 restored ({sha1[:12]})" in capsys.readouterr().out
    assert (campaign / f"{DOC}.ann").read_text() == CHEM
    versions = journal.versions(DOC)
    assert [(v.person, v.action) for v in versions[-2:]] == [("manager", "snapshot"), ("manager", "restore")]
    assert journal.content(versions[-2].sha256) == GENE.encode() and versions[-1].sha256 == sha1
    # by sha prefix; the current bytes are the latest version, so no snapshot this time
    sha3 = versions[2].sha256
    assert cli.main(["campaign", "history", str(campaign), DOC, "--restore", sha3[:8]]) == 0
    assert (campaign / f"{DOC}.ann").read_text() == CHEM + GENE + REL + DONE
    assert [v.action for v in journal.versions(DOC)][-1:] == ["restore"] and len(journal.versions(DOC)) == 6
    # a document nobody saved through serve
    assert cli.main(["campaign", "history", str(campaign), "phase1/bob/100_1"]) == 0
    assert "no journaled version" in capsys.readouterr().out


@pytest.mark.parametrize(("document", "restore", "message"), [
    ("phase1/alice/999_9", None, "no such document"),
    ("phase1/carol/100_1", None, "no such document"),
    ("phase1/alice/../bob/100_1", None, "without '..'"),
    ("/etc/passwd", None, "no such document"),
    (DOC, "99", "no version 99 (the document has 1)"),
    (DOC, "0", "no version 0"),
    (DOC, "abcdef", "no version whose sha256 starts with abcdef"),
    (DOC, "latest", "neither a number nor a sha256 prefix"),
    ("phase1/bob/100_1", "1", "no version 1 (the document has 0)"),
])
def test_history_bad_input_writes_nothing(live: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str],
                                          document: str, restore: str | None, message: str) -> None:
    campaign, _ = live
    save(campaign, Journal(campaign), "alice", DOC, CHEM, "createSpan")
    before = tree(campaign)
    argv = ["campaign", "history", str(campaign), document] + (["--restore", restore] if restore else [])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("pgx-corpus campaign history: ") and message in err, err
    assert tree(campaign) == before


def extract(archive: Path, dest: Path) -> list[str]:
    """The restore the command's help documents: mkdir NEW_DIR && tar -xzpf OUT.tar.gz -C NEW_DIR."""
    dest.mkdir()
    subprocess.run(["tar", "-xzpf", str(archive), "-C", str(dest)], check=True)
    with tarfile.open(archive) as tar:
        return tar.getnames()


def test_backup_round_trip(live: tuple[Path, dict[str, str]], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    campaign, passwords = live
    journal = Journal(campaign, clock=Clock())
    save(campaign, journal, "alice", DOC, CHEM + GENE, "createSpan")
    save(campaign, journal, "bob", "phase1/bob/100_1", CHEM + DONE, "createSpan")
    (campaign / "locks" / "x.lock").parent.mkdir(exist_ok=True)
    (campaign / "phase1" / "alice" / ".100_2.ann.tmp-1-ab").write_text("half")  # a killed writer's
    out = tmp_path / "backups" / "campaign.tar.gz"
    out.parent.mkdir()
    assert cli.main(["campaign", "backup", str(campaign), str(out)]) == 0
    assert "campaign.tar.gz: 18 documents" in capsys.readouterr().out
    assert oct(stat.S_IMODE(out.stat().st_mode)) == "0o600"
    assert [p.name for p in out.parent.iterdir()] == ["campaign.tar.gz"]  # no temporary left
    names = extract(out, tmp_path / "restored")
    assert names == sorted(names) and "access/users.json" in names and "journal/log.jsonl" in names
    assert not any(n.startswith("locks") or ".tmp-" in n for n in names)
    original = {k: v for k, v in tree(campaign).items() if ".tmp-" not in k}
    restored = tmp_path / "restored"
    assert tree(restored) == original
    for rel in original:
        assert (restored / rel).stat().st_mode == (campaign / rel).stat().st_mode, rel
        assert int((restored / rel).stat().st_mtime) == int((campaign / rel).stat().st_mtime), rel
    assert oct(stat.S_IMODE((restored / "access").stat().st_mode)) == "0o700"
    # the restored campaign works: people log in, history reads, status is the same
    assert UserStore(restored).verify("alice", passwords["alice"]) is not None
    assert Journal(restored).versions(DOC) == journal.versions(DOC)
    a, b = campaign_status(campaign), campaign_status(restored)
    assert a["rows"] == b["rows"]
    # same campaign, same archive
    again = tmp_path / "backups" / "again.tar.gz"
    assert cli.main(["campaign", "backup", str(campaign), str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_backup_bad_input_writes_nothing(live: tuple[Path, dict[str, str]], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    campaign, _ = live
    before = tree(campaign)
    for out, message in ((campaign / "b.tar.gz", "outside the campaign"),
                         (campaign / "phase1" / "b.tar.gz", "outside the campaign"),
                         (tmp_path / "missing" / "b.tar.gz", "does not exist"),
                         (tmp_path, "is a directory")):
        assert cli.main(["campaign", "backup", str(campaign), str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("pgx-corpus campaign backup: ") and message in err, err
    assert tree(campaign) == before and not (tmp_path / "missing").exists()
    assert cli.main(["campaign", "backup", str(tmp_path / "coll"), str(tmp_path / "x.tar.gz")]) == 2
    assert "no campaign manifest" in capsys.readouterr().err and not (tmp_path / "x.tar.gz").exists()


def test_backup_of_a_live_campaign_never_holds_half_an_edit(live: tuple[Path, dict[str, str]],
                                                            tmp_path: Path) -> None:
    """A writer changes a document's .txt and .ann together under the lock, as serve and review do; every
    backup taken meanwhile has the two files of one state."""
    campaign, _ = live
    base = campaign / "phase1" / "alice" / "100_3"
    stop = threading.Event()
    written = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            with document_lock(campaign, base):
                base.with_suffix(".txt").write_text(f"state {n}\n")
                stop.wait(0.001)
                base.with_suffix(".ann").write_text(f"#1\tAnnotatorNotes T1\tstate {n}\n")
            written.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        # on a loaded machine the writer may not have run yet: the first backup would hold the document
        # as it was before, which says nothing of the two files' consistency
        assert written.wait(30)
        for i in range(8):
            out = tmp_path / f"b{i}.tar.gz"
            assert cli.main(["campaign", "backup", str(campaign), str(out)]) == 0
            with tarfile.open(out) as tar:
                txt = tar.extractfile("phase1/alice/100_3.txt")
                ann = tar.extractfile("phase1/alice/100_3.ann")
                assert txt is not None and ann is not None
                state = io.TextIOWrapper(txt).read().split()[1]
                assert io.TextIOWrapper(ann).read().endswith(f"state {state}\n")
    finally:
        stop.set()
        thread.join()


def test_status_png_plots_progress_over_time_from_the_journal(live: tuple[Path, dict[str, str]], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.campaign.status import done_over_time

    campaign, _ = live
    journal = Journal(campaign, clock=Clock())
    save(campaign, journal, "alice", DOC, CHEM + DONE, "createSpan")            # alice: 1 done
    save(campaign, journal, "bob", "phase1/bob/100_1", CHEM, "createSpan")      # bob: 0
    save(campaign, journal, "alice", "phase1/alice/100_2", DONE, "createSpan")  # alice: 2
    save(campaign, journal, "alice", DOC, CHEM, "deleteSpan")                   # alice: Done removed, 1
    save(campaign, journal, "bob", "phase1/bob/100_1", CHEM + DONE, "createSpan")  # bob: 1
    save(campaign, journal, "bob", "phase1/bob/100_1", CHEM + GENE + DONE, "createSpan")  # bob: still 1
    entries = [(e.time, e.document, journal.content(e.sha256)) for e in journal.entries()]
    t = [e.time for e in journal.entries()]
    assert done_over_time(entries) == {
        "alice (phase 1)": [(t[0], 1), (t[2], 2), (t[3], 1)],
        "bob (phase 1)": [(t[1], 0), (t[4], 1)],
    }
    assert done_over_time([*entries, (t[5] + 1, "review/merged/dave/100_1", DONE.encode())]) == done_over_time(entries)
    # the command draws both charts: the figure is taller than the bars alone
    plain = tmp_path / "plain.png"
    assert cli.main(["campaign", "status", str(tmp_path / "coll"), "--png", str(plain)]) == 2  # not a campaign
    from pipeline.campaign.status import campaign_status, write_png

    write_png(campaign_status(campaign), plain)
    png = tmp_path / "progress.png"
    assert cli.main(["campaign", "status", str(campaign), "--png", str(png)]) == 0
    capsys.readouterr()
    from PIL import Image

    with Image.open(plain) as a, Image.open(png) as b:
        assert b.size[1] > a.size[1] + 200


def test_batches_refuses_a_broken_users_file_before_writing(live: tuple[Path, dict[str, str]], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    campaign, _ = live
    (campaign / "access" / "users.json").write_text("{broken")
    before = tree(campaign)
    argv = ["batches", "--collection", str(tmp_path / "coll"), "--roster", str(tmp_path / "roster.csv"),
            "--out", str(campaign), "--seed", "99"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("pgx-corpus batches: ") and "not a users file" in err
    assert tree(campaign) == before
