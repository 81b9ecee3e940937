"""Odd brat files (issue 23): CRLF line ends counted as brat counts them, names with dots, bytes that are
not UTF-8 reported against their own file.

Covers: pipeline.brat.conf, pipeline.brat.standoff, pipeline.brat.stats, pipeline.brat.validate, pipeline.schema
"""

from __future__ import annotations

import codecs
from collections import Counter
from pathlib import Path

import pytest

from pipeline.brat import standoff
from pipeline.brat.conf import write_conf_files
from pipeline.brat.stats import brat_stats
from pipeline.brat.validate import validate_collection
from pipeline.schema import load_schema

SCHEMA = load_schema()
CRLF_TEXT = "CYP2C9 carriers.\r\nWarfarin doses were lower.\r\n"


def brat_reads(path: Path) -> str:
    """What brat's ``open_textfile`` returns: ``codecs.open(path, 'rU', encoding='utf8', errors='strict')``.

    ``codecs.open`` always opens the file in binary mode (no newline translation); Python 3.11 refuses
    the ``U`` brat adds, so the same call is made here without it.
    """
    with codecs.open(str(path), "r", encoding="utf8", errors="strict") as fh:
        return fh.read()


def _collection(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    coll = tmp_path / "coll"
    coll.mkdir()
    write_conf_files(coll, SCHEMA)
    for name, content in files.items():
        path = coll / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return coll


def test_crlf_offsets_are_brats(tmp_path: Path) -> None:
    start = CRLF_TEXT.index("Warfarin")  # 18: the \r counts, as in brat
    coll = _collection(tmp_path, {"100_1.txt": CRLF_TEXT,
                                  "100_1.ann": f"T1\tChemical {start} {start + 8}\tWarfarin\n"})
    assert brat_reads(coll / "100_1.txt") == CRLF_TEXT
    doc, issues = standoff.read_document(coll / "100_1.txt")
    assert issues == [] and doc.text == brat_reads(coll / "100_1.txt")
    (t,) = doc.textbounds
    assert doc.text[t.fragments[0][0]:t.fragments[0][1]] == "Warfarin"
    assert validate_collection(coll) == []
    (read,), _ = standoff.read_directory(coll)
    assert read.text == CRLF_TEXT


def test_crlf_offsets_normalised_the_old_way_are_reported(tmp_path: Path) -> None:
    start = CRLF_TEXT.replace("\r\n", "\n").index("Warfarin")  # offsets of a CRLF-normalised text: wrong in brat
    coll = _collection(tmp_path, {"100_1.txt": CRLF_TEXT,
                                  "100_1.ann": f"T1\tChemical {start} {start + 8}\tWarfarin\n"})
    assert any("100_1.ann" in p.file for p in validate_collection(coll))


@pytest.mark.parametrize("name", ["a..b_1", "12.5_1", "x.y.z_3"])
def test_dotted_names_in_validate_and_stats(tmp_path: Path, name: str) -> None:
    coll = _collection(tmp_path, {f"{name}.txt": "Warfarin works.", f"{name}.ann": "T1\tChemical 0 8\tWarfarin\n"})
    assert validate_collection(coll) == []
    docs, issues = standoff.read_directory(coll)
    assert issues == [] and [d.name for d in docs] == [name] and docs[0].text == "Warfarin works."
    result = brat_stats(coll, SCHEMA, Counter())
    assert result["parse_issues"] == []
    assert result["entities"]["Chemical"]["total"] == 1 and result["text_mismatches"] == []


def test_bytes_not_utf8_in_an_ann_are_reported_against_the_ann(tmp_path: Path) -> None:
    coll = _collection(tmp_path, {"100_1.txt": "Warfarin works.",
                                  "100_1.ann": b"T1\tChemical 0 8\tWarfarin\n#1\tx \xff\n"})
    with pytest.raises(standoff.BratTextError, match=rf"^{coll}/100_1\.ann:2: not valid UTF-8"):
        standoff.read_document(coll / "100_1.txt")
    problems = validate_collection(coll)
    assert [(Path(p.file).name, p.line) for p in problems] == [("100_1.ann", 2)]
