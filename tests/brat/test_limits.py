"""pipeline.brat.limits: the limits on what the training commands read, checked in bounded pieces.

Covers: pipeline.brat.limits
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.brat.limits import LimitError, Limits, check_collections


def _doc(directory: Path, name: str, text: str, ann: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.txt").write_text(text, encoding="utf-8", newline="")
    (directory / f"{name}.ann").write_text(ann, encoding="utf-8", newline="")


def test_within_the_limits_every_file_is_checked(tmp_path: Path) -> None:
    _doc(tmp_path / "a", "1_1", "Warfarin é\r\nCYP2C9.", "T1\tChemical 0 8;12 18\tWarfarin CYP2C9\n\n#1\tNote T1\tok\n")
    _doc(tmp_path / "a" / "sub", "a..b_1", "x" * 10, "T1\tChemical 0 10\txxxxxxxxxx\n")
    assert check_collections([tmp_path / "a"], Limits(max_text_chars=19, max_annotations=2, max_entities=1)) == 4


def test_the_text_limit_names_the_line_where_it_is_crossed(tmp_path: Path) -> None:
    _doc(tmp_path, "1_1", "ab\ncd\nef\n", "")
    with pytest.raises(LimitError, match=r"1_1\.txt:3: the text is longer than 7 characters.*--max-text-chars"):
        check_collections([tmp_path], Limits(max_text_chars=7))


def test_offsets_are_checked_against_the_text_of_the_same_name(tmp_path: Path) -> None:
    _doc(tmp_path, "a..b_1", "Warfarin", "T1\tChemical 0 8\tWarfarin\nT2\tChemical 0 2;4 9\tWa\n")
    with pytest.raises(LimitError, match=r"a\.\.b_1\.ann:2: offset 9 lies beyond the 8 characters of .*a\.\.b_1\.txt"):
        check_collections([tmp_path], Limits())


def test_entities_annotations_and_line_length_have_their_own_options(tmp_path: Path) -> None:
    _doc(tmp_path, "1_1", "Warfarin", "T1\tChemical 0 8\tWarfarin\nT2\tChemical 0 8\tWarfarin\n#1\tNote T1\tx\n")
    with pytest.raises(LimitError, match=r"1_1\.ann:2: more than 1 text-bound .*--max-entities"):
        check_collections([tmp_path], Limits(max_entities=1))
    with pytest.raises(LimitError, match=r"1_1\.ann:3: more than 2 annotations .*--max-annotations"):
        check_collections([tmp_path], Limits(max_annotations=2))
    (tmp_path / "1_1.ann").write_text("T1\tChemical 0 8\tWarfarin\n#1\tNote T1\t" + "x" * 2_000 + "\n")
    with pytest.raises(LimitError, match=r"1_1\.ann:2: a line of more than 1,040 bytes.*--max-text-chars"):
        check_collections([tmp_path], Limits(max_text_chars=10))


def test_links_are_not_followed(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("x" * 100, encoding="utf-8")
    _doc(tmp_path / "c", "1_1", "Warfarin", "")
    (tmp_path / "c" / "2_1.txt").symlink_to(big)  # the readers report it; never read here
    assert check_collections([tmp_path / "c"], Limits(max_text_chars=10)) == 2
