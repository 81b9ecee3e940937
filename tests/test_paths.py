"""pipeline/paths.py and the readers built on it: a symbolic link inside a collection is never followed
(issue 23, defect 9); the collection itself may be one (the build publishes ``OUT/brat`` as a link).

Covers: pipeline.brat.standoff, pipeline.brat.stats, pipeline.brat.validate, pipeline.cli.brat_commands,
pipeline.paths, pipeline.schema, pipeline.store
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline import paths, store
from pipeline.brat.standoff import read_collection, read_directory
from pipeline.brat.stats import brat_stats
from pipeline.brat.validate import validate_collection
from pipeline.schema import load_schema

SECRET = "SECRET password line\n"


def _collection(tmp_path: Path) -> tuple[Path, Path]:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET, encoding="utf-8")
    coll = tmp_path / "real"
    (coll / "sub").mkdir(parents=True)
    (coll / "100_1.txt").write_text("Warfarin works.", encoding="utf-8")
    (coll / "100_1.ann").write_text("T1\tChemical 0 8\tWarfarin\n", encoding="utf-8")
    (coll / "100_2.txt").symlink_to(secret)
    (coll / "100_2.ann").write_text("", encoding="utf-8")
    (coll / "linked_dir").symlink_to(secret.parent, target_is_directory=True)
    (coll / "sub" / "101_1.txt").write_text("Aspirin.", encoding="utf-8")
    link = tmp_path / "published"
    link.symlink_to(coll, target_is_directory=True)  # like OUT/brat
    return coll, link


def test_list_files_never_follows_a_link_inside(tmp_path: Path) -> None:
    coll, link = _collection(tmp_path)
    listing = paths.list_files(link, (".txt", ".ann"), recursive=True)
    # the link given is resolved once: the files are those of the collection it named then
    assert [p.relative_to(coll).as_posix() for p in listing.files] == ["100_1.ann", "100_1.txt", "100_2.ann",
                                                                      "sub/101_1.txt"]
    assert [p.name for p in listing.symlinks] == ["100_2.txt", "linked_dir"]
    with pytest.raises(paths.SymlinkError, match=r"batches refused: 2 symbolic link\(s\).*100_2\.txt"):
        listing.refuse_symlinks("batches")


def test_a_linked_collection_is_resolved_once(tmp_path: Path) -> None:
    """A build that swaps OUT/brat while a command reads it: the command reads the collection it started on."""
    old, new = tmp_path / "old", tmp_path / "new"
    for directory, text in ((old, "old"), (new, "new")):
        directory.mkdir()
        (directory / "1_1.txt").write_text(text, encoding="utf-8")
    link = tmp_path / "brat"
    link.symlink_to(old, target_is_directory=True)
    listing = paths.list_files(link, (".txt",))
    swap = tmp_path / "brat.new"
    swap.symlink_to(new, target_is_directory=True)
    swap.replace(link)  # what the build's publication does
    assert [p.read_text(encoding="utf-8") for p in listing.files] == ["old"]
    assert paths.resolve_collection(tmp_path / "old") == tmp_path / "old"


def test_readers_report_links_and_never_read_their_targets(tmp_path: Path) -> None:
    coll, link = _collection(tmp_path)
    docs, issues = read_directory(link)
    assert all(SECRET.strip() not in d.text for d in docs)
    assert {Path(i.file).name for i in issues if "symbolic link" in i.message} == {"100_2.txt", "linked_dir"}
    docs, issues = read_collection(link)
    assert [d.name for d in docs] == ["100_1", "101_1"] and all(SECRET.strip() not in d.text for d in docs)
    problems = validate_collection(link)
    assert any(p.file.endswith("100_2.txt") and "symbolic link" in p.message for p in problems)
    result = brat_stats(link, load_schema(), Counter())
    assert any("100_2.txt" in issue for issue in result["parse_issues"])


def test_a_symlinked_shard_is_refused(tmp_path: Path) -> None:
    stage = tmp_path / "stage"
    stage.mkdir()
    (tmp_path / "elsewhere.jsonl.gz").write_bytes(b"")
    (stage / store.shard_name(0)).symlink_to(tmp_path / "elsewhere.jsonl.gz")
    with pytest.raises(paths.SymlinkError, match="shard-000000"):
        store.list_shards(stage)
    linked_stage = tmp_path / "linked"
    linked_stage.symlink_to(tmp_path / "empty", target_is_directory=True)
    (tmp_path / "empty").mkdir()
    assert store.list_shards(linked_stage) == []
