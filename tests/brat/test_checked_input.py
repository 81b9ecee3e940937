"""Issue 10 (7): every brat command checks its input first, reports file:line, leaves broken documents out.

Covers: pipeline.brat.checked, pipeline.brat.validate, pipeline.cli, pipeline.cli.corpus_commands
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.checked import load_all_checked, load_checked
from pipeline.brat.validate import validate_collection

TEXT = "Warfarin dose and CYP2C9 genotype."


def broken_collection(root: Path) -> Path:
    """Two sound documents and one of each kind of broken one."""
    root.mkdir(parents=True)
    good = "T1\tChemical 0 8\tWarfarin\nT2\tGene_or_protein 18 24\tCYP2C9\n"
    for name in ("1_0", "2_0"):
        (root / f"{name}.txt").write_text(TEXT)
        (root / f"{name}.ann").write_text(good)
    (root / "3_0.ann").write_text("T1\tChemical 0 8\tWarfarin\n")  # orphan: no 3_0.txt
    (root / "4_0.txt").write_text(TEXT)
    (root / "4_0.ann").write_text("T1\tChemical 0 8\tWarfarin\nT2\tChemical 5000 5008\tnothing\n")  # out of range
    (root / "5_0.txt").write_text(TEXT)
    (root / "5_0.ann").write_text("T1\tChemical 0 3\t2. \n")  # text mismatch
    (root / "6_0.txt").write_text(TEXT)
    (root / "6_0.ann").write_bytes(b"T1\tChemical 0 8\tWarfarin\nT2\tChemical 18 24\tCYP2C9 \xff\n")  # bad byte line 2
    (root / "7_0.txt").write_text(TEXT)
    (root / "7_0.ann").write_text(good + "T9\tChemical x y\tbroken\n")  # a bad line: reported, line skipped
    return root


EXPECTED = {"3_0.ann:0: no text file", "4_0.ann:2: T2: offset 5008 exceeds", "5_0.ann:1: T1: text '2. '",
            "6_0.ann:2: not valid UTF-8", "7_0.ann:3: cannot parse line"}


def test_load_checked_reports_and_excludes(tmp_path: Path) -> None:
    checked = load_checked(broken_collection(tmp_path / "c"))
    assert [d.name for d in checked.documents] == ["1_0", "2_0", "7_0"]
    assert checked.excluded == ["3_0", "4_0", "5_0", "6_0"]
    shown = [str(p).replace(str(tmp_path / "c") + "/", "") for p in checked.problems]
    for expected in EXPECTED:
        assert any(s.startswith(expected) for s in shown), (expected, shown)
    assert "excluded 4 of 7 document(s)" in checked.summary()


def test_orphan_checked_against_the_text_of_another_directory(tmp_path: Path) -> None:
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "1_0.txt").write_text(TEXT)
    (gold / "1_0.ann").write_text("T1\tChemical 0 8\tWarfarin\n")
    system = tmp_path / "system"
    system.mkdir()
    (system / "1_0.ann").write_text("T1\tChemical 0 8\tWarfarin\n")  # annotations only: scored against gold
    (system / "2_0.ann").write_text("T1\tChemical 0 4\tWarf\n")  # no text anywhere: kept, unchecked
    g, s = load_all_checked([gold, system], textless=True)
    assert [d.name for d in s.documents] == ["1_0", "2_0"] and s.excluded == []
    assert s.documents[0].text == TEXT and s.unchecked == ["2_0"]
    assert s.orphans_with_reference == ["1_0"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_reported(err: str, directory: Path, excluded: int, total: int) -> None:
    for expected in EXPECTED:
        assert f"{directory}/{expected}" in err, expected
    if excluded == 3:  # scoring: the orphan without any text is kept, its offsets unchecked
        assert "1 without any text kept" in err
    assert f"{directory}: excluded {excluded} of {total} document(s)" in err


@pytest.mark.parametrize("fmt", ["pubtator", "bioc-xml", "bioc-json", "conll", "splits"])
def test_export_leaves_broken_documents_out(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    col = broken_collection(tmp_path / "c")
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "export", str(col), "--format", fmt, "--out", str(out), "--json")
    assert code == 0
    assert_reported(err, col, 4, 7)
    summary = json.loads(stdout)
    assert summary["input_check"][str(col)]["excluded"] == ["3_0", "4_0", "5_0", "6_0"]
    written = "".join(p.read_text() for p in ([out] if out.is_file() else sorted(out.rglob("*"))) if p.is_file())
    assert "nothing" not in written and "2. " not in written and "5000" not in written
    for pmid in ("3", "4", "5", "6"):
        assert f"{pmid}_0" not in written


def test_stats_counts_only_sound_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    col = broken_collection(tmp_path / "c")
    code, stdout, err = run(capsys, "stats", str(col), "--json")
    assert code == 0
    assert_reported(err, col, 4, 7)
    data = json.loads(stdout)
    assert data["sentences"]["total"] == 3  # 1_0, 2_0, 7_0
    assert data["entity_totals"]["total"] == 6


def test_agreement_and_evaluate_name_the_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = broken_collection(tmp_path / "a")
    b = broken_collection(tmp_path / "b")
    code, stdout, err = run(capsys, "agreement", str(a), str(b), "--json")
    assert code == 0
    assert_reported(err, a, 3, 7)
    assert_reported(err, b, 3, 7)
    result = json.loads(stdout)
    assert result["pairs"][0]["documents"]["common"] == 4
    assert result["directories"] == [str(a), str(b)]  # the user's paths, not the scratch copies
    code, stdout, err = run(capsys, "evaluate", str(a), str(b), "--json")
    assert code == 0
    assert_reported(err, a, 3, 7)
    result = json.loads(stdout)
    assert result["documents"]["scored"] == 4 and result["ner"]["f1"] == 1.0
    assert result["gold"] == str(a)


def test_evaluate_reads_a_linked_gold_when_a_system_document_is_excluded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: GOLD is the build's OUT/brat, a symbolic link to the run's collection; an excluded SYSTEM
    document makes the command score filtered copies, whose paths are taken under the link's target."""
    run_dir = broken_collection(tmp_path / "runs" / "1" / "brat")
    (run_dir / "annotation.conf").write_text("[entities]\nChemical\nGene_or_protein\n", encoding="utf-8")
    gold = tmp_path / "brat"
    gold.symlink_to(run_dir)
    system = broken_collection(tmp_path / "system")
    code, stdout, err = run(capsys, "evaluate", str(gold), str(system), "--json")
    assert code == 0, err
    assert_reported(err, system, 3, 7)
    result = json.loads(stdout)
    assert result["documents"]["scored"] == 4 and result["ner"]["f1"] == 1.0
    assert result["gold"] == str(gold) and result["system"] == str(system)


def test_harmonize_writes_no_text_for_an_orphan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = broken_collection(tmp_path / "a")
    b = broken_collection(tmp_path / "b")
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "harmonize", str(a), str(b), "--threshold", "2", "--out", str(out), "--json")
    assert code == 0
    assert_reported(err, a, 4, 7)
    assert sorted(p.stem for p in out.glob("*.txt")) == ["1_0", "2_0", "7_0"]
    assert all(p.read_text() == TEXT for p in out.glob("*.txt"))


def test_validate_attributes_bad_bytes_to_the_ann(tmp_path: Path) -> None:
    col = broken_collection(tmp_path / "c")
    (col / "annotation.conf").write_text("[entities]\nChemical\nGene_or_protein\n[relations]\n[events]\n"
                                         "[attributes]\n")
    problems = [str(p) for p in validate_collection(col)]
    assert any(p.startswith(f"{col}/6_0.ann:2: not UTF-8") for p in problems), problems
    assert not any(p.startswith(f"{col}/6_0.txt") for p in problems)
