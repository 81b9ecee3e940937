"""pipeline/names.py: the patterns of identifiers that become paths.

Covers: pipeline.names
"""

from __future__ import annotations

import pytest

from pipeline import names


@pytest.mark.parametrize(
    ("value", "ok"),
    [("12345678", True), ("1", True), ("../../x/PWNED", False), ("/etc/passwd", False), ("", False),
     ("12 34", False), ("１２３", False), ("²", False), ("1" * 13, False), ("123\0", False), ("PMC123", False)],
)
def test_pmid(value: str, ok: bool) -> None:
    assert names.is_pmid(value) is ok
    if not ok:
        with pytest.raises(names.NameError_, match=r"^f\.xml:7: PMID"):
            names.check_pmid(value, "f.xml:7")


@pytest.mark.parametrize(
    ("value", "ok"),
    [("12345678", True), ("1559_1", True), ("a..b", True), ("PMC99", True), ("..", False), (".", False),
     ("../x", False), ("/abs", False), ("a/b", False), ("a\\b", False), (".hidden", False), ("a\0b", False),
     ("a b", False), ("x" * 65, False), ("é1", False)],
)
def test_document_id(value: str, ok: bool) -> None:
    assert names.is_document_id(value) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [("12345678_1", True), ("a..b_1", True), ("a.b.c", True), ("x+y_2", True), ("..", False), ("../a_1", False),
     ("a/..", False), ("/tmp/a_1", False), ("a/b_1", False), (".a_1", False), ("a\0", False), ("", False),
     ("con", False), ("a" * 201, False)],
)
def test_document_name(value: str, ok: bool) -> None:
    assert names.is_document_name(value) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [("alice", True), ("bob.smith", True), ("a-1", True), ("acl.conf", False), ("annotation.conf", False),
     ("Visual.Conf", False), ("tools.conf", False), ("other.conf", False), ("phase1", False), ("..", False),
     ("a/b", False), (".alice", False), ("al ice", False), ("", False)],
)
def test_person_id(value: str, ok: bool) -> None:
    if ok:
        assert names.check_person_id(value, "roster.tsv:2") == value
    else:
        with pytest.raises(names.NameError_, match=r"^roster\.tsv:2: id"):
            names.check_person_id(value, "roster.tsv:2")


def test_ids_that_differ_only_in_case() -> None:
    names.check_distinct_ids([("alice", "r:2"), ("bob", "r:3")])
    with pytest.raises(names.NameError_, match=r"^r:3: id 'Alice' differs only in case from 'alice' \(r:2\)"):
        names.check_distinct_ids([("alice", "r:2"), ("Alice", "r:3")])


@pytest.mark.parametrize("value", ["", ".", "..", "a/b", "a\0b", "a\\b"])
def test_component(value: str) -> None:
    with pytest.raises(names.NameError_):
        names.check_component(value, "here")
    assert names.check_component("a..b") == "a..b"


@pytest.mark.parametrize(
    ("value", "parts"),
    [("/", ()), ("/campaigns/pgx/", ("campaigns", "pgx")), ("a/b", ("a", "b")), ("/x\nAllow: /", None),
     ("/a b/", None), ("/../x/", None), ("/.hidden/", None), ("/a\0/", None)],
)
def test_collection_path(value: str, parts: tuple[str, ...] | None) -> None:
    if parts is None:
        with pytest.raises(names.NameError_, match="^--brat-path: collection path"):
            names.check_collection_path(value, "--brat-path")
    else:
        assert names.check_collection_path(value) == parts


@pytest.mark.parametrize(("value", "colon", "ok"), [
    ("Chemical", False, True), ("D014859", True, True), ("GO:0001", True, True), ("GO:0001", False, False),
    ("", False, False), (None, False, False), ("a b", False, False), ("a\tb", False, False), ("a\nb", False, False),
    ("a\u2028b", False, False), ("a\x85b", False, False), ("a\x00b", False, False), ("a\ud800", False, False),
])
def test_brat_token(value: object, colon: bool, ok: bool) -> None:
    assert (names.brat_token_problem(value, colon=colon) is None) is ok
    if not ok:
        with pytest.raises(names.NameError_, match=r"^f\.xml:7: type of T1 refused"):
            names.check_brat_token(value, "type of T1", "f.xml:7", colon=colon)


@pytest.mark.parametrize(("value", "ok"), [
    ("a drug, 5 mg", True), ("", True), ("x\x00y", True), ("a\tb", False), ("a\nT9\tChemical", False),
    ("a\rb", False), ("a\x0bb", False), ("a\x1cb", False), ("a\u2029b", False), ("a\ud800", False), (None, False),
])
def test_brat_text(value: object, ok: bool) -> None:
    assert (names.brat_text_problem(value) is None) is ok


@pytest.mark.parametrize(("value", "kind", "ok"), [
    ("T1", "T", True), ("#12", "#", True), ("R1", "T", False), ("T", "T", False), ("T1a", "T", False),
    ("T1\t", "T", False), ("T" + "1" * 10, "T", False), (1, "T", False),
])
def test_annotation_id(value: object, kind: str, ok: bool) -> None:
    if ok:
        assert names.check_annotation_id(value, kind, "f") == value
    else:
        with pytest.raises(names.NameError_, match="^f: annotation id"):
            names.check_annotation_id(value, kind, "f")
