"""Issue 41 for ``campaign import``: the directories it imports are hostile until checked.

A symbolic link in a ``--work`` or ``--reference`` directory is refused (exit 2) with its path, as
``batches`` refuses one, and its target is never read nor shown; a document name that cannot be one
(``CON``, ``a b``, ``.hidden``, ``-dash``, a newline) is refused before anything is written; and a
refused or failed import of a new campaign leaves no campaign behind (not even ``.import.pending``),
while an existing campaign is left byte for byte as it was.

Covers: pipeline.campaign.importing, pipeline.cli, pipeline.cli.import_commands, pipeline.cli.team_commands
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import cli
from pipeline.campaign.layout import IMPORT_PENDING
from tests.campaign.test_importing import GENE, work_dir
from tests.campaign.test_team import make_collection

SECRET = "TOP SECRET first line\nsecond line\n"


def _tree(root: Path) -> dict[str, bytes | str | None]:
    """Every path under ``root``: a file's bytes, a link's target, None for a directory."""
    out: dict[str, bytes | str | None] = {}
    for p in sorted(root.rglob("*")):
        key = str(p.relative_to(root))
        out[key] = str(p.readlink()) if p.is_symlink() else p.read_bytes() if p.is_file() else None
    return out


def _import(root: Path, work: dict[str, Path], *extra: str) -> list[str]:
    argv = ["campaign", "import", str(root)]
    for person, directory in work.items():
        argv += ["--work", f"{person}={directory}"]
    return [*argv, *extra]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, dict[str, Path], Path]:
    """Two annotators' finished work on 100_1 and 100_2, their reference, and a secret outside them."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    work = {p: work_dir(tmp_path / p, {"100_1": GENE, "100_2": GENE}) for p in ("a", "b")}
    make_collection(tmp_path / "ref", ["100_1", "100_2"])
    return secret, work, tmp_path / "ref"


def _check_refused(tmp_path: Path, argv: list[str], before: dict[str, bytes | str | None], named: str,
                   capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert named in err, err
    assert "TOP SECRET" not in out + err and "second line" not in out + err  # a target is never shown
    assert "Traceback" not in err
    assert _tree(tmp_path) == before, "a refused campaign import wrote something"
    return err


# --- symbolic links ------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["work .txt", "work .ann", "reference .txt", "reference .ann",
                                   "reference annotation.conf"])
@pytest.mark.parametrize("campaign", ["new", "existing"])
def test_a_symbolic_link_is_refused_naming_it_never_showing_its_target(
        tmp_path: Path, setup: tuple[Path, dict[str, Path], Path], where: str, campaign: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    secret, work, reference = setup
    root = tmp_path / "campaign"
    if campaign == "existing":
        assert cli.main(_import(root, work, "--reference", str(reference), "--senior", "s")) == 0
        capsys.readouterr()
    directory = work["a"] if where.startswith("work") else reference
    if where.endswith("annotation.conf"):
        link = directory / "annotation.conf"
        link.unlink()
    elif where.endswith(".txt"):
        link = directory / "100_3.txt"
        (directory / "100_3.ann").write_text("", encoding="utf-8")
        if where.startswith("work"):  # b holds it too: a document of two annotators, imported today
            (work["b"] / "100_3.txt").write_text(SECRET, encoding="utf-8")
            (work["b"] / "100_3.ann").write_text("", encoding="utf-8")
    else:
        link = directory / "100_1.ann"
        link.unlink()
    link.symlink_to(secret)
    before = _tree(tmp_path)
    args = ("--reference", str(reference)) if where.startswith("reference") or campaign == "new" else ()
    seniors = ("--senior", "s") if campaign == "new" else ()
    err = _check_refused(tmp_path, _import(root, work, *args, *seniors), before, f"{link}: symbolic link", capsys)
    assert "refused" in err
    assert secret.read_text(encoding="utf-8") == SECRET


def test_a_linked_work_directory_is_read_as_the_directory_it_names(
        tmp_path: Path, setup: tuple[Path, dict[str, Path], Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The directory given may itself be a link (as OUT/brat is): only links inside it are refused."""
    _secret, work, reference = setup
    linked = tmp_path / "linked-a"
    linked.symlink_to(work["a"])
    root = tmp_path / "campaign"
    assert cli.main(_import(root, {"a": linked, "b": work["b"]}, "--reference", str(reference),
                            "--senior", "s")) == 0
    assert (root / "phase1" / "a" / "100_1.ann").is_file()


# --- document names -------------------------------------------------------------------------------

BAD_NAMES = ["CON", "a b", ".hidden", "-dash", "x\ny", "nul"]


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize("campaign", ["new", "new, with a reference", "existing"])
def test_a_bad_document_name_is_refused_before_anything_is_written(
        tmp_path: Path, setup: tuple[Path, dict[str, Path], Path], name: str, campaign: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _secret, work, reference = setup
    root = tmp_path / "campaign"
    args: tuple[str, ...] = ("--senior", "s")
    if campaign == "existing":
        assert cli.main(_import(root, work, *args)) == 0
        capsys.readouterr()
        args = ()
    elif campaign == "new, with a reference":
        args += ("--reference", str(reference))
        work_dir(reference, {name: ""})
    for directory in work.values():
        work_dir(directory, {name: GENE})
    before = _tree(tmp_path)
    shown = repr(f"{name}.txt") if not name.isprintable() else f"{name}.txt"
    err = _check_refused(tmp_path, _import(root, work, *args), before, shown, capsys)
    assert f"document name {name!r} refused" in err
    assert "\n" not in err.strip()  # one line: the newline of a name is never printed as it is


# --- no half-written campaign ---------------------------------------------------------------------

@pytest.mark.parametrize("problem", ["no senior", "a senior imported too", "no document"])
@pytest.mark.parametrize("exists", [False, True])
def test_a_refused_new_campaign_leaves_nothing(tmp_path: Path, setup: tuple[Path, dict[str, Path], Path],
                                               problem: str, exists: bool,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _secret, work, _reference = setup
    root = tmp_path / "campaign"
    if exists:
        root.mkdir()  # an empty directory given: left empty
    args = {"no senior": (), "a senior imported too": ("--senior", "a"), "no document": ("--senior", "s")}[problem]
    message = {"no senior": "needs at least one senior", "a senior imported too": "a both imported and senior",
               "no document": "no document"}[problem]
    if problem == "no document":
        work = {p: work_dir(tmp_path / f"empty-{p}", {}) for p in ("a", "b")}
    before = _tree(tmp_path)
    assert cli.main(_import(root, work, *args)) == 2
    assert message in capsys.readouterr().err
    assert _tree(tmp_path) == before
    assert not (root / IMPORT_PENDING).exists()


def test_a_new_campaign_that_fails_after_writing_is_removed(
        tmp_path: Path, setup: tuple[Path, dict[str, Path], Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The users file of the directory given cannot be read: the campaign written before is removed, the
    directory's own files stay."""
    _secret, work, reference = setup
    root = tmp_path / "campaign"
    (root / "access").mkdir(parents=True)
    (root / "access" / "users.json").write_text("{not json", encoding="utf-8")
    (root / "notes.md").write_text("the manager's notes\n", encoding="utf-8")
    before = _tree(tmp_path)
    code = cli.main(_import(root, work, "--reference", str(reference), "--senior", "s"))
    assert code in (1, 2)
    assert "users.json" in capsys.readouterr().err
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(("source", "name"), [("reference", "100_1.txt"), ("reference", "100_1.ann"),
                                            ("reference", "annotation.conf"), ("work", "100_1.txt")])
def test_a_file_that_is_not_utf8_is_refused_with_its_line(
        tmp_path: Path, setup: tuple[Path, dict[str, Path], Path], name: str, source: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """What a new campaign copies from outside (texts, the reference's pre-annotation and configuration) is
    read before anything is written; the work's own .ann is checked per version (held back, exit 3)."""
    _secret, work, reference = setup
    directory = reference if source == "reference" else work["a"]
    bad = directory / name
    bad.write_bytes(b"fine first line\n\xff\xfe second line\n")
    root = tmp_path / "campaign"
    before = _tree(tmp_path)
    args = ("--reference", str(reference)) if source == "reference" else ()
    err = _check_refused(tmp_path, _import(root, work, *args, "--senior", "s"), before, f"{bad}:2: not valid UTF-8",
                         capsys)
    assert "nothing imported" in err
