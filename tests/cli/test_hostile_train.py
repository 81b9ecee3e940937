"""Issue 41 for ``train`` and ``train-relations``: their input is hostile until checked.

A document too large to train on (a 240 kB text, a 124 kB ``.ann`` of entities) is refused, naming the
limit, the file and the line, quickly and in little memory; so is an offset beyond its text and a text
that is not UTF-8.  A bad ``--out`` is refused before training.  The outputs are written beside and
renamed through temporaries created exclusively: a symbolic link planted at a temporary's name is never
written through.  Each refusal exits 2 and writes nothing.

Covers: pipeline.cli, pipeline.cli.relation_commands, pipeline.cli.train_commands, pipeline.cli.training_input,
pipeline.nlp.learned, pipeline.nlp.relations.training
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import cli

PROJECT = Path(__file__).resolve().parents[2]
FIXTURE = PROJECT / "tests" / "fixtures" / "brat" / "release_relations"
SENTENCE = "Warfarin doses were lower in CYP2C9 carriers treated for atrial fibrillation. "
VICTIM = "the victim's own content\n"


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a directory or a link)."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(root.rglob("*"))}


def _collection(tmp_path: Path, name: str = "gold") -> Path:
    """The relation fixture (7 annotated sentences) copied under tmp."""
    out = tmp_path / name
    shutil.copytree(FIXTURE, out)
    return out


def _write(directory: Path, name: str, text: str, ann: str) -> tuple[Path, Path]:
    (directory / f"{name}.txt").write_text(text, encoding="utf-8")
    (directory / f"{name}.ann").write_text(ann, encoding="utf-8")
    return directory / f"{name}.txt", directory / f"{name}.ann"


def _entities(sentences: int) -> tuple[str, str]:
    """A text of ``sentences`` sentences, each with four entities (two words, each typed twice) and two
    relations."""
    text, lines = "", []
    for i in range(sentences):
        o, t, r = len(text), 4 * i, 2 * i
        text += SENTENCE
        lines += [f"T{t + 1}\tChemical {o} {o + 8}\tWarfarin", f"T{t + 2}\tGene_or_protein {o + 29} {o + 35}\tCYP2C9",
                  f"T{t + 3}\tGene_or_protein {o} {o + 8}\tWarfarin", f"T{t + 4}\tChemical {o + 29} {o + 35}\tCYP2C9",
                  f"R{r + 1}\tinfluences Arg1:T{t + 2} Arg2:T{t + 1}\t", f"R{r + 2}\tisAssociatedWith Arg1:T{t + 3} "
                  f"Arg2:T{t + 4}\t"]
    return text, "\n".join(lines) + "\n"


def _line_of(ann: Path, nth: int, prefix: str = "") -> str:
    """The line number of the ``nth`` annotation of ``ann`` (of those starting with ``prefix``)."""
    seen = 0
    for number, line in enumerate(ann.read_text(encoding="utf-8").splitlines(), 1):
        seen += line.startswith(prefix)
        if seen == nth:
            return str(number)
    raise AssertionError(f"{ann} has fewer than {nth} annotations")


def _train_argv(command: str, gold: Path, out: Path) -> list[str]:
    # train's key entities from the gold's own pre-annotations (no lexicon needed)
    extra = ["--keys", str(gold), "--c", "1"] if command == "train" else []
    return [command, str(gold), "--out", str(out), *extra]


def _run_measured(argv: list[str], tmp_path: Path) -> tuple[int, str, int, float]:
    """Run the command in a child process: (exit code, stderr, peak memory in KiB, seconds)."""
    code = (
        "import sys\n"
        "from pipeline.cli import main\n"
        f"code = main({argv!r})\n"
        # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's peak across exec on Linux)
        "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
        "print(code, peak)\n"
    )
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    elapsed = time.monotonic() - started
    status, peak = proc.stdout.split()[-2:]
    return int(status), proc.stderr, int(peak), elapsed


# --- size, memory and time ------------------------------------------------------------------------

def _big_text(directory: Path) -> tuple[Path, str]:
    txt, _ = _write(directory, "900_1", SENTENCE * (240_000 // len(SENTENCE)), "T1\tChemical 0 8\tWarfarin\n")
    return txt, "1"


def _many_entities(directory: Path, command: str) -> tuple[Path, str]:
    """A 124 kB .ann on a text within the limit: 2,400 entities and 1,200 relations."""
    text, ann = _entities(600)
    _, path = _write(directory, "900_1", text, ann)
    assert len(text) < 50_000 and len(ann) > 120_000
    return path, _line_of(path, 201, "T") if command == "train-relations" else _line_of(path, 2_001)


def _stacked_entities(directory: Path) -> tuple[Path, str]:
    """5,000 entities on one word of a short text: few characters, many annotations."""
    ann = "".join(f"T{i}\tChemical 0 8\tWarfarin\n" for i in range(1, 5_001))
    _, path = _write(directory, "900_1", SENTENCE, ann)
    return path, "2001"


def _one_long_line(directory: Path) -> tuple[Path, str]:
    """A note of 30 MB on one line, in the .ann of a short text."""
    _, path = _write(directory, "900_1", SENTENCE, "T1\tChemical 0 8\tWarfarin\n#1\tAnnotatorNotes T1\t"
                     + "x" * 30_000_000 + "\n")
    return path, "2"


SIZE_CASES = {
    ("train", "big_text"): (_big_text, "--max-text-chars"),
    ("train-relations", "big_text"): (_big_text, "--max-text-chars"),
    ("train", "many_entities"): (_many_entities, "--max-annotations"),
    ("train-relations", "many_entities"): (_many_entities, "--max-entities"),
    ("train", "stacked_entities"): (_stacked_entities, "--max-annotations"),
    ("train", "one_long_line"): (_one_long_line, "--max-text-chars"),
    ("train-relations", "one_long_line"): (_one_long_line, "--max-text-chars"),
}


@pytest.mark.slow
@pytest.mark.parametrize(("command", "case"), sorted(SIZE_CASES))
def test_a_document_too_large_to_train_on_is_refused_quickly_and_small(tmp_path: Path, command: str,
                                                                       case: str) -> None:
    make, option = SIZE_CASES[(command, case)]
    gold = _collection(tmp_path)
    path, line = make(gold, command) if make is _many_entities else make(gold)  # type: ignore[operator]
    out = tmp_path / "out" / "model"
    before = _tree(tmp_path)
    status, err, peak_kib, seconds = _run_measured(_train_argv(command, gold, out), tmp_path)
    assert status == 2, err
    assert f"{path}:{line}: " in err and option in err and "Traceback" not in err, err
    assert _tree(tmp_path) == before  # nothing written, not even out's parent
    assert peak_kib < 1024 * 1024, f"peak {peak_kib} KiB"
    assert seconds < 60


def _reached_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading the training data raise ``Reached`` (shown by the command): the checks before it passed."""
    from pipeline.nlp import learned_data
    from pipeline.nlp.relations import training as relations

    class Reached(Exception):
        pass

    def reached(*_args: object, **_kwargs: object) -> None:
        raise Reached

    monkeypatch.setattr(learned_data, "brat_examples", reached)
    monkeypatch.setattr(relations, "brat_training", reached)


@pytest.mark.parametrize(("command", "option"), [("train", "--max-text-chars"), ("train", "--max-annotations"),
                                                 ("train-relations", "--max-text-chars"),
                                                 ("train-relations", "--max-annotations"),
                                                 ("train-relations", "--max-entities")])
def test_each_limit_is_an_option(tmp_path: Path, command: str, option: str, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    gold = _collection(tmp_path)
    text, ann = _entities(2)  # 158 characters, 8 entities, 12 annotations
    _write(gold, "900_1", text, ann)
    argv = _train_argv(command, gold, tmp_path / "out")
    assert cli.main([*argv, option, "7"]) == 2  # lowered: refused, naming the option
    assert option in capsys.readouterr().err
    _reached_training(monkeypatch)
    cli.main([*argv, option, "50000"])  # raised: past the checks, to the training data
    assert "Reached" in capsys.readouterr().err
    for bad in ("0", "-3", "many"):  # a limit is a whole number of at least 1
        with pytest.raises(SystemExit) as info:
            cli.main([*argv, option, bad])
        assert info.value.code == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["train", "train-relations"])
def test_an_offset_beyond_the_text_is_refused_with_its_line(tmp_path: Path, command: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    gold = _collection(tmp_path)
    _, ann = _write(gold, "900_1", SENTENCE, "T1\tGene_or_protein 29 35\tCYP2C9\n"
                    "T2\tChemical 0 300000000\tWarfarin\n")
    before = _tree(tmp_path)
    assert cli.main(_train_argv(command, gold, tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert f"{ann}:2: offset 300000000 lies beyond the {len(SENTENCE)} characters of {gold / '900_1.txt'}" in err
    assert _tree(tmp_path) == before


def test_train_relations_refuses_a_text_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _collection(tmp_path)
    txt = gold / "900_1.txt"
    txt.write_bytes(b"Warfarin \xff\xfe doses.")
    (gold / "900_1.ann").write_text("T1\tChemical 0 8\tWarfarin\n", encoding="utf-8")
    before = _tree(tmp_path)
    assert cli.main(_train_argv("train-relations", gold, tmp_path / "scorer.json")) == 2
    err = capsys.readouterr().err
    assert f"{txt}:1: not valid UTF-8" in err and "Traceback" not in err
    assert _tree(tmp_path) == before


# --- --out: checked before training ----------------------------------------------------------------

def _no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading the training data fail the test: a bad --out must be refused before it."""
    from pipeline.nlp import learned_data
    from pipeline.nlp.relations import training as relations

    def fail(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the training data was read before --out was checked")

    monkeypatch.setattr(learned_data, "brat_examples", fail)
    monkeypatch.setattr(relations, "brat_training", fail)


@pytest.mark.parametrize("command", ["train", "train-relations"])
@pytest.mark.parametrize("bad", ["a file where the output's directory goes", "wrong kind"])
def test_a_bad_out_is_refused_before_training(tmp_path: Path, command: str, bad: str,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    gold = _collection(tmp_path)
    blocker = tmp_path / "blocker"
    if bad == "wrong kind":  # train: a file where its model directory goes; train-relations: a directory
        out = blocker
        if command == "train":
            blocker.write_text("a file\n", encoding="utf-8")
        else:
            blocker.mkdir()
    else:
        blocker.write_text("a file\n", encoding="utf-8")
        out = blocker / "out"
    _no_training(monkeypatch)
    before = _tree(tmp_path)
    assert cli.main(_train_argv(command, gold, out)) == 2
    err = capsys.readouterr().err
    assert f"pgx-corpus {command}: --out {blocker}" in err, err
    assert _tree(tmp_path) == before


# --- writing: never through a planted link ---------------------------------------------------------

@pytest.mark.slow
def test_train_relations_never_writes_through_a_link_planted_beside_out(tmp_path: Path) -> None:
    gold = _collection(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM, encoding="utf-8")
    models = tmp_path / "models"
    models.mkdir()
    out = models / "scorer.json"
    # the temporary names the command used (a fixed one; and one with the process id)
    for name in (f".{out.name}.tmp", f".{out.name}.tmp{os.getpid()}", f".{out.name}.tmp-{os.getpid()}"):
        (models / name).symlink_to(victim)
    assert cli.main(_train_argv("train-relations", gold, out)) == 0
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert out.is_file() and not out.is_symlink() and json.loads(out.read_text(encoding="utf-8"))["decision"]
    assert oct(out.stat().st_mode & 0o777) == oct(0o644)


@pytest.mark.slow
def test_train_never_writes_through_a_link_planted_in_the_model_directory(tmp_path: Path) -> None:
    gold = _collection(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM, encoding="utf-8")
    out = tmp_path / "model"
    out.mkdir()
    (out / "README").write_text("a file of the user's: the model is written in place, beside it\n", encoding="utf-8")
    for name in ("model.json", "meta.json"):
        (out / f".{name}.tmp{os.getpid()}").symlink_to(victim)
    assert cli.main(_train_argv("train", gold, out)) == 0
    assert victim.read_text(encoding="utf-8") == VICTIM
    for name in ("model.json", "meta.json"):
        assert (out / name).is_file() and not (out / name).is_symlink()
        assert json.loads((out / name).read_text(encoding="utf-8"))
    assert sorted(p.name for p in out.iterdir()) == ["README", "meta.json", "model.json"]
