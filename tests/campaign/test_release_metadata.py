"""Issue 40, item 1: a release credits who made the corpus, describes the corpus given and ships its licence.

Authors come from ``--author`` or a ``--citation`` CITATION.cff; without them no CITATION.cff is written (said
on stderr and in the datasheet) and ``--strict-metadata`` refuses.  ``cffconvert`` (the citation tools'
converter) renders the authors given; PGxCorpus is cited only as the method, only when the user says so.

Covers: pipeline.campaign.release.datasheet, pipeline.campaign.release_meta, pipeline.cli,
pipeline.cli.release_commands
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from pipeline.campaign.release.datasheet import PAPER_TABLES
from pipeline.campaign.release_meta import PAPER_AUTHORS, parse_author
from pipeline.cli import main
from tests.campaign.test_release import build_inputs
from tests.conftest import PROJECT, shared_path

cffconvert = pytest.importorskip("cffconvert")

# what these tests read is the datasheet, the metadata and the refusals: the charts are drawn in test_release.py
pytestmark = pytest.mark.usefixtures("charts_not_drawn")


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    return build_inputs(tmp_path)


def _release(inputs: dict[str, Path], out: Path, *extra: str, campaign: bool = True) -> int:
    args = ["release", str(inputs["final"]), "--out", str(out), "--name", "pgx-demo", "--release-version", "1.0",
            "--date", "2026-02-01", *extra]
    if campaign:
        args += ["--campaign", str(inputs["campaign"]), "--decisions", str(inputs["decisions"])]
    return main(args)


def _render(cff: Path) -> tuple[str, str]:
    """The APA and BibTeX citations cffconvert makes of a CITATION.cff, after validating it."""
    citation = cffconvert.Citation(cff.read_text(encoding="utf-8"))
    citation.validate()  # raises on a file that is not valid CFF 1.2.0
    return citation.as_apalike(), citation.as_bibtex()


def test_authors_given_are_the_citation_authors(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "rel"
    assert _release(inputs, out, "--author", "Doe, Jane", "--author", "Smaïl-Tabbone, Malika",
                    "--author", "Demo Annotation Team", "--license", "cc-by-4.0",
                    "--description", "Six invented sentences annotated by a simulated team.") == 0
    apa, bibtex = _render(out / "CITATION.cff")
    assert apa.startswith("Doe J., Smaïl-Tabbone M., Demo Annotation Team (2026). pgx-demo (version 1.0).")
    assert "author = {Doe, Jane and Smaïl-Tabbone, Malika and Demo Annotation Team}" in bibtex
    cff = (out / "CITATION.cff").read_text()
    assert "license: CC-BY-4.0\nlicense-url: http://creativecommons.org/licenses/by/4.0/legalcode\n" in cff
    assert "annotators" not in cff and "PGxCorpus" not in cff and "pgx-corpus" not in cff
    readme = (out / "README.md").read_text()
    body = readme.split("\n---\n", 1)[1]
    assert body.startswith("\n# pgx-demo 1.0\n\nSix invented sentences annotated by a simulated team.\n\n"
                           "Annotated in a pgx-corpus campaign")
    assert "## Authors\n\nJane Doe, Malika Smaïl-Tabbone, Demo Annotation Team.\n" in readme
    # PGxCorpus is not cited for this corpus unless the user says so: it is named once, as the paper the
    # release's tables follow (the tool's reference)
    assert readme.replace(PAPER_TABLES, "").count("PGxCorpus") == 0 and readme.count(PAPER_TABLES) == 1
    assert "Legrand J" not in readme and "@article" not in readme
    assert "PGxCorpus" not in (out / "GUIDELINES.md").read_text()
    assert "pharmacogenomics" not in readme.split("\n---\n", 1)[0]  # the card claims no domain
    assert "license: cc-by-4.0" in readme.split("\n---\n", 1)[0]
    assert (out / "LICENSE.txt").read_text().startswith("Creative Commons Attribution 4.0 International\n")
    assert "<<" not in (out / "LICENSE.txt").read_text()  # the SPDX template's markup is resolved
    assert readme.count("does not cover the sentence texts") == 1
    assert "the sentence texts as distributed here" not in readme  # the old, contradictory paragraph
    sums = (out / "SHA256SUMS").read_text()
    assert "  LICENSE.txt\n" in sums and "  CITATION.cff\n" in sums
    info = json.loads((out / "release.json").read_text())
    assert info["authors"] == ["Jane Doe", "Malika Smaïl-Tabbone", "Demo Annotation Team"]
    assert (info["license"], info["license_file"], info["metadata_missing"]) == ("CC-BY-4.0", "LICENSE.txt", [])


def test_without_authors_no_citation_is_made_up(inputs: dict[str, Path], tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "rel"
    assert _release(inputs, out, "--license", "MIT", campaign=False) == 0
    assert not (out / "CITATION.cff").exists()
    assert "no authors (--author, or authors in --citation): no CITATION.cff is written" in caplog.text
    readme = (out / "README.md").read_text()
    assert ("No authors were given (`release --author`, or `authors` in `--citation`), so none is stated and this "
            "release has no `CITATION.cff`.") in readme
    assert "no `CITATION.cff` (no authors were given)" in readme
    # no campaign: pgx-corpus only released the collection
    assert ("Released with `pgx-corpus release` from the brat collection given to it. No campaign directory was "
            "given, so this release does not say how the corpus was annotated.") in readme
    assert "built with pgx-corpus" not in readme
    # with the build manifest (checked: FINAL's sentences are that build's), the build is named too
    assert _release(inputs, tmp_path / "rel2", "--manifest", str(inputs["manifest"]), campaign=False) == 0
    assert ("from the brat collection given to it, whose sentences a pgx-corpus build selected (see the provenance "
            "below). No campaign directory") in (tmp_path / "rel2" / "README.md").read_text()
    assert (out / "LICENSE.txt").read_text().startswith("MIT License\n")


@pytest.mark.parametrize(("metadata", "missing"), [
    ((), "no authors (--author, or authors in --citation): no CITATION.cff is written; no licence"),
    (("--license", "MIT"), "no authors"),
    (("--author", "Doe, Jane"), "no licence (--license, license in --citation or in --config): none is stated"),
])
def test_strict_metadata_refuses_and_writes_nothing(inputs: dict[str, Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str], metadata: tuple[str, ...],
                                                   missing: str) -> None:
    out = tmp_path / "rel"
    before = sorted(tmp_path.rglob("*"))
    assert _release(inputs, out, "--strict-metadata", *metadata) == 2
    err = capsys.readouterr().err
    assert f"pgx-corpus release: --strict-metadata: {missing}" in err and "nothing released" in err
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, not even a staging directory


def test_strict_metadata_releases_once_authors_and_licence_are_given(inputs: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    """What each refusal above asks for, given: the release is made (once, not once per refusal), after a
    refusal into the same ``--out``."""
    out = tmp_path / "rel"
    assert _release(inputs, out, "--strict-metadata") == 2
    assert _release(inputs, out, "--strict-metadata", "--author", "Doe, Jane", "--license", "MIT") == 0


def test_a_citation_file_describes_the_corpus(inputs: dict[str, Path], tmp_path: Path) -> None:
    given = tmp_path / "CITATION.cff"
    given.write_text("cff-version: 1.2.0\nmessage: cite it\ntitle: My PGx corpus\n"
                     "abstract: Sentences about warfarin dosing.\nlicense: CC0-1.0\n"
                     "authors:\n  - family-names: Roe\n    given-names: Richard\n  - name: The Lab\n"
                     "preferred-citation:\n  type: article\n  title: Our corpus paper\n"
                     "  authors:\n    - family-names: Roe\n      given-names: Richard\n"
                     "  journal: J Test\n  year: 2026\n", encoding="utf-8")
    out = tmp_path / "rel"
    assert main(["release", str(inputs["final"]), "--out", str(out), "--citation", str(given)]) == 0
    apa, _bibtex = _render(out / "CITATION.cff")
    assert apa.startswith("Roe R., The Lab")
    cff = (out / "CITATION.cff").read_text()
    assert "title: My PGx corpus\n" in cff and "title: Our corpus paper" in cff and "license: CC0-1.0" in cff
    readme = (out / "README.md").read_text()
    assert "\n# My PGx corpus\n\nSentences about warfarin dosing.\n" in readme
    assert "; from `CITATION.cff` it also carries `preferred-citation`), together" in readme
    assert (out / "hf" / "my_pgx_corpus_source").is_dir()  # the name is the file's title
    # an option wins over the file
    out2 = tmp_path / "rel2"
    assert main(["release", str(inputs["final"]), "--out", str(out2), "--citation", str(given), "--author",
                 "Doe, Jane", "--name", "other", "--license", "MIT"]) == 0
    cff2 = (out2 / "CITATION.cff").read_text()
    assert "Doe" in cff2 and "Roe\n    given-names: Richard\n  - name" not in cff2 and "license: MIT" in cff2


@pytest.mark.parametrize(("extra", "message"), [
    (("--license", "CC-BY-NC-4"), "--license 'CC-BY-NC-4': not an identifier of the SPDX License List"),
    (("--author", "Doe, Jane, Jr"), "expected 'Family, Given' for a person"),
    (("--author", "Doe, "), "expected 'Family, Given' for a person"),
])
def test_bad_metadata_is_refused(inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 extra: tuple[str, ...], message: str) -> None:
    out = tmp_path / "rel"
    assert _release(inputs, out, *extra, campaign=False) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_bad_citation_file_is_refused(inputs: dict[str, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "CITATION.cff"
    bad.write_text("title: x\nauthors:\n  - given-names: Jane\n", encoding="utf-8")
    out = tmp_path / "rel"
    assert main(["release", str(inputs["final"]), "--out", str(out), "--citation", str(bad)]) == 2
    assert f"{bad}: authors[0]: each author needs a non-empty family-names or name" in capsys.readouterr().err
    assert not out.exists()


def test_pgxcorpus_is_cited_as_the_method_when_the_user_says_so(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "rel"
    assert _release(inputs, out, "--author", "Doe, Jane", "--license", "MIT", "--cite-pgxcorpus-method") == 0
    apa, _ = _render(out / "CITATION.cff")
    assert apa.startswith("Doe J. (2026). pgx-demo")  # the corpus's authors, not the method's
    cff = (out / "CITATION.cff").read_text()
    references = cff.split("references:\n", 1)[1]
    assert all(f"family-names: {family}\n" in references for _given, family in PAPER_AUTHORS)
    assert "doi: 10.1038/s41597-019-0342-9" in references and "preferred-citation" not in cff
    readme = (out / "README.md").read_text()
    assert "The corpus follows the PGxCorpus method" in readme and "@article{legrand2020pgxcorpus," in readme
    assert "those of the PGxCorpus method" in (out / "GUIDELINES.md").read_text()


@pytest.mark.slow  # two releases
def test_the_changelog_names_the_previous_version(inputs: dict[str, Path], tmp_path: Path) -> None:
    first, second = tmp_path / "v1", tmp_path / "v2"
    assert _release(inputs, first, "--license", "MIT") == 0
    assert main(["release", str(inputs["final"]), "--out", str(second), "--name", "pgx-demo", "--release-version",
                 "1.1", "--previous", str(first), "--license", "MIT"]) == 0
    log = (second / "CHANGELOG.md").read_text()
    assert "\n## 1.1 (since 1.0)\n" in log and "v1" not in log


def test_parse_author() -> None:
    assert parse_author("Legrand, Joël") == {"family-names": "Legrand", "given-names": "Joël"}
    assert parse_author(" The Lab ") == {"name": "The Lab"}


def _howto_release_args() -> list[str]:
    """The reproduce-PGxCorpus how-to's release command, as its arguments."""
    page = (PROJECT / "docs" / "how-to" / "reproduce-pgxcorpus.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", page, re.S) if "pgx-corpus release" in b]
    assert len(blocks) == 1
    args = shlex.split(blocks[0].replace("\\\n", " "))
    assert args[0] == ".venv/bin/pgx-corpus"
    return args[1:]


def test_the_reproduce_howto_release_passes_the_papers_authors_and_licence() -> None:
    args = _howto_release_args()
    authors = [args[i + 1] for i, a in enumerate(args) if a == "--author"]
    assert authors == [f"{family}, {given}" for given, family in PAPER_AUTHORS]
    assert args[args.index("--license") + 1] == "CC-BY-NC-4.0" and "--cite-pgxcorpus-method" in args


@pytest.mark.slow
def test_the_reproduce_howto_release_renders_the_13_authors(tmp_path: Path) -> None:
    shared = shared_path()
    args = [a.replace("../shared", str(shared)) for a in _howto_release_args()]
    out = tmp_path / "pgxcorpus-dev-release"
    args[args.index("--out") + 1] = str(out)
    assert main(args) == 0
    apa, bibtex = _render(out / "CITATION.cff")
    assert apa.startswith("Legrand J., Gogdemir R., Bousquet C., Dalleau K., Devignes M., Digan W., Lee C., "
                          "Ndiaye N., Petitpain N., Ringot P., Smaïl-Tabbone M., Toussaint Y., Coulet A. PGxCorpus-dev")
    assert all(f"{family}, {given}" in bibtex for given, family in PAPER_AUTHORS)
    assert "license: CC-BY-NC-4.0" in (out / "CITATION.cff").read_text()
