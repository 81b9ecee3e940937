"""Defect 8 of issue 23: a PMID is a file name (``{PMID}_{k}.txt``), so a PubTator file or a PubMed XML
record whose PMID is a path (``../../x/PWNED``, an absolute path) is refused with its file and line, and
the build writes nothing outside ``--out``.

Covers: pipeline.cli, pipeline.cli.build_commands, pipeline.documents, pipeline.store
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main

ABSTRACT = "Warfarin dose requirement depends on CYP2C9 genotype in patients treated for atrial fibrillation."


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _hostile_pmids(tmp_path: Path) -> list[str]:
    return ["../../x/PWNED", str(tmp_path / "abs" / "PWNED"), "../PWNED", "12/../../PWNED"]


def _pubtator(pmid: str) -> str:
    good = "12345678"
    return (f"{good}|t|A clean record.\n{good}|a|{ABSTRACT}\n\n"
            f"{pmid}|t|A hostile record.\n{pmid}|a|{ABSTRACT}\n{pmid}\t0\t8\tWarfarin\tChemical\tMESH:D014859\n\n")


def _pubmed_xml(pmid: str) -> str:
    return ("<?xml version='1.0'?>\n<PubmedArticleSet>\n<PubmedArticle><MedlineCitation>\n"
            f"<PMID>{pmid}</PMID>\n<Article><ArticleTitle>A hostile record.</ArticleTitle>\n"
            f"<Abstract><AbstractText>{ABSTRACT}</AbstractText></Abstract></Article>\n"
            "</MedlineCitation></PubmedArticle>\n</PubmedArticleSet>\n")


@pytest.mark.parametrize("index", range(4))
@pytest.mark.parametrize("source", ["pubtator", "pubmed-xml"])
def test_a_pmid_that_is_a_path_is_refused(tmp_path: Path, source: str, index: int,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    pmid = _hostile_pmids(tmp_path)[index]
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    if source == "pubtator":
        path = work / "input.pubtator"
        path.write_text(_pubtator(pmid), encoding="utf-8")
        line = 4
    else:
        path = work / "input.xml"
        path.write_text(_pubmed_xml(pmid), encoding="utf-8")
        line = 3
    out = work / "out"
    before = _tree(tmp_path)
    code = main(["build", "--out", str(out), f"--{source}", str(path), "--annotator", "local", "--sample", "all"])
    err = capsys.readouterr().err
    assert code == 1  # the build ran and its documents stage failed
    assert f"{path}:{line}:" in err and "refused" in err, err
    assert not any("PWNED" in p for p in _tree(tmp_path)), "a file was written through the hostile PMID"
    outside = {p for p in _tree(tmp_path) - before if not p.startswith(str(out.relative_to(tmp_path)))}
    assert outside == set()


def test_skip_bad_lines_skips_the_hostile_record_and_keeps_the_rest(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "input.pubtator"
    path.write_text(_pubtator("../../x/PWNED"), encoding="utf-8")
    out = tmp_path / "out"
    code = main(["build", "--out", str(out), "--pubtator", str(path), "--skip-bad-lines", "--until", "documents"])
    assert code == 0, capsys.readouterr().err
    assert not any("PWNED" in p for p in _tree(tmp_path))
    from pipeline import store
    from pipeline.documents import Document

    (stage,) = (out / "work" / "01_documents").iterdir()
    assert [d.pmid for d in store.iter_directory(stage, Document)] == ["12345678"]
