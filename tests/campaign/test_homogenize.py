"""find and decisions apply on a finalized corpus, and on the dev gold.

Covers: pipeline.campaign.decisions, pipeline.campaign.finalize, pipeline.campaign.find, pipeline.cli,
pipeline.cli.release_commands
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.campaign.decisions import DecisionsError, apply_decisions, load_decisions
from pipeline.campaign.finalize import finalize
from pipeline.cli import main
from tests.campaign.builders import SCHEMA, build_campaign, span
from tests.campaign.test_finalize import ann_content, tree
from tests.conftest import shared_path


@pytest.fixture
def final(tmp_path: Path) -> Path:
    campaign = build_campaign(tmp_path)
    ann = campaign / "phase2" / "senior1" / "100_2.ann"
    ann.write_text(ann.read_text().replace("Disputed_treats", "treats"))  # the senior accepts the relation
    out = tmp_path / "final"
    finalize(campaign, out, SCHEMA)
    return out


def find_json(final: Path, capsys: pytest.CaptureFixture[str], *options: str) -> list[str]:
    assert main(["find", str(final), "--json", *options]) == 0
    return [m["document"] for m in json.loads(capsys.readouterr().out)["matches"]]


def test_find_criteria(final: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert find_json(final, capsys) == ["100_1", "100_2", "300_1"]
    assert find_json(final, capsys, "--keyword", "CODEINE") == ["100_1"]
    assert find_json(final, capsys, "--keyword", "metabolizer") == []  # whole words only
    assert find_json(final, capsys, "--regex", r"metaboli[sz]ers?") == ["100_1"]
    assert find_json(final, capsys, "--keyword", "codeine", "--keyword", "warfarin") == ["100_1", "100_2"]
    assert find_json(final, capsys, "--entity-type", "Phenotype") == ["100_2", "300_1"]  # Disease is a Phenotype
    assert find_json(final, capsys, "--entity-type", "Phenotype=") == []
    assert find_json(final, capsys, "--relation", "Chemical-treats-Phenotype") == ["100_2"]
    assert find_json(final, capsys, "--relation", "*-increases-Disease") == ["300_1"]
    assert find_json(final, capsys, "--relation", "influences") == ["100_1"]
    # different criteria must all hold
    assert find_json(final, capsys, "--entity-type", "Disease", "--keyword", "risk") == ["300_1"]
    # modality, read from the relation notes; with --relation, one relation must match both
    assert find_json(final, capsys, "--modality", "Negated") == ["300_1"]
    assert find_json(final, capsys, "--modality", "neg") == ["300_1"]
    assert find_json(final, capsys, "--modality", "none") == ["100_1", "100_2"]
    assert find_json(final, capsys, "--modality", "Hypothetical") == []
    assert find_json(final, capsys, "--modality", "Hypothetical", "--modality", "none") == ["100_1", "100_2"]
    assert find_json(final, capsys, "--relation", "increases", "--modality", "none") == []
    assert find_json(final, capsys, "--relation", "treats", "--modality", "none") == ["100_2"]


def test_find_output(final: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["find", str(final), "--json", "--relation", "increases"]) == 0
    match = json.loads(capsys.readouterr().out)["matches"][0]
    assert match["matched"]["relations"] == ["R1"]
    assert match["relations"] == [{"id": "R1", "type": "increases", "args": {"Arg1": "T1", "Arg2": "T2"},
                                   "modality": ["Negated"]}]
    assert [e["type"] for e in match["entities"]] == ["Chemical", "Disease"]
    assert main(["find", str(final), "--keyword", "risk"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 of 3 sentences match\n")
    assert "Tamoxifen did not increase the **risk** of endometrial cancer." in out
    assert "| R1 | increases | T1 Tamoxifen | T2 endometrial cancer | Negated |" in out
    assert main(["find", str(final), "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 of 3 sentences match (1 shown)\n") and out.count("## ") == 1
    assert main(["find", str(final), "--entity-type", "Drug"]) == 2
    assert "unknown entity type 'Drug'" in capsys.readouterr().err
    assert main(["find", str(final), "--relation", "a-b"]) == 2
    assert main(["find", str(final), "--modality", "maybe"]) == 2
    assert "unknown modality 'maybe'" in capsys.readouterr().err



def test_find_reads_modality_by_whole_tokens(final: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """find shows the modality the project's grammar reads: `not` is Negated, `hypertension` is free text."""
    ann = final / "100_1.ann"
    ann.write_text(ann.read_text() + "#1\tAnnotatorNotes R1\tnot\n#2\tAnnotatorNotes R2\thypertension\n")
    assert main(["find", str(final), "--json", "--keyword", "codeine"]) == 0
    rels = json.loads(capsys.readouterr().out)["matches"][0]["relations"]
    assert {r["id"]: r["modality"] for r in rels} == {"R1": ["Negated"], "R2": []}


DECISIONS = """\
retype:
  - term: Endometrial  Cancer
    from: Disease
    to: Phenotype
    why: the guideline calls cancers of a treated organ phenotypes
remove:
  - pattern: "CYP2D\\\\d"
relations:
  - from: treats
    to: isAssociatedWith
    arg1: Chemical
"""


def test_decisions_dry_run_then_apply(final: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    decisions = tmp_path / "decisions.yaml"
    decisions.write_text(DECISIONS)
    before = tree(final)
    assert main(["decisions", "apply", str(final), str(decisions), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert tree(final) == before  # a dry run writes nothing
    assert out == (
        "--- a/100_1.ann\n+++ b/100_1.ann\n@@ -1,4 +1 @@\n"
        f"-T1\tGene_or_protein {span('100_1', 'CYP2D6')}\tCYP2D6\n"
        f" T2\tChemical {span('100_1', 'codeine')}\tcodeine\n"
        "-R1\tmetabolizes Arg1:T1 Arg2:T2\t\n"
        "-R2\tinfluences Arg1:T1 Arg2:T2\t\n"
        "--- a/100_2.ann\n+++ b/100_2.ann\n@@ -1,3 +1,3 @@\n"
        f" T1\tChemical {span('100_2', 'Warfarin')}\tWarfarin\n"
        f" T2\tDisease {span('100_2', 'thrombosis')}\tthrombosis\n"
        "-R1\ttreats Arg1:T1 Arg2:T2\t\n"
        "+R1\tisAssociatedWith Arg1:T1 Arg2:T2\t\n"
        "--- a/300_1.ann\n+++ b/300_1.ann\n@@ -1,4 +1,4 @@\n"
        f" T1\tChemical {span('300_1', 'Tamoxifen')}\tTamoxifen\n"
        f"-T2\tDisease {span('300_1', 'endometrial cancer')}\tendometrial cancer\n"
        f"+T2\tPhenotype {span('300_1', 'endometrial cancer')}\tendometrial cancer\n"
        " R1\tincreases Arg1:T1 Arg2:T2\t\n"
        " #1\tAnnotatorNotes R1\tneg\n"
    )
    assert main(["decisions", "apply", str(final), str(decisions)]) == 0
    after = tree(final)
    assert after["100_1.ann"] == f"T2\tChemical {span('100_1', 'codeine')}\tcodeine\n".encode()
    assert after["300_1.txt"] == before["300_1.txt"]
    assert sorted(k for k in after if after[k] != before[k]) == ["100_1.ann", "100_2.ann", "300_1.ann"]
    assert not [p for p in final.iterdir() if p.name.startswith(".")]  # no temporary file left
    # applying the same decisions again changes nothing
    capsys.readouterr()
    assert main(["decisions", "apply", str(final), str(decisions), "--dry-run"]) == 0
    assert capsys.readouterr().out == ""


def test_decisions_that_break_validation_write_nothing(final: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    decisions = tmp_path / "decisions.yaml"
    # increases admits a Limited_variation as Arg2 (the release has such relations), never a Haplotype
    decisions.write_text("retype:\n  - term: endometrial cancer\n    to: Haplotype\n")
    before = tree(final)
    assert main(["decisions", "apply", str(final), str(decisions)]) == 2  # REFUSED: nothing written
    err = capsys.readouterr().err
    assert f"{final}/300_1.ann (after decisions):3: R1" in err and "nothing written" in err
    assert tree(final) == before


@pytest.mark.parametrize("text, message", [
    ("retype:\n  - term: x\n    to: Drug\n", "retype entry 1: 'Drug' is not an entity type"),
    ("remove:\n  - term: x\n    pattern: y\n", "remove entry 1: give exactly one of term or pattern"),
    ("relations:\n  - from: regulates\n    to: influences\n", "relations entry 1: from 'regulates'"),
    ("renames: []\n", "unknown key(s) ['renames']"),
    ("remove:\n  - pattern: '('\n", "bad pattern"),
    ("remove:\n  - term: x\n    documents: [123_4]\n", "quoted document names"),
])
def test_bad_decisions_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(text)
    with pytest.raises(DecisionsError) as err:
        load_decisions(path, SCHEMA)
    assert message in str(err.value)


def test_decisions_on_gold_give_back_the_gold(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    final = tmp_path / "final"
    shutil.copytree(gold, final)
    # the paper's homogenization is already in the gold: nothing to change
    homogenize = tmp_path / "homogenize.yaml"
    homogenize.write_text("relations:\n  - {from: metabolizes, to: influences}\n"
                          "  - {from: transports, to: influences}\n")
    changes, problems = apply_decisions(final, load_decisions(homogenize, SCHEMA), SCHEMA)
    assert (changes, problems) == ([], [])
    # a retype and its inverse, limited to one document, give back the gold's annotations
    doc = "10070957_8"
    forth, back = tmp_path / "forth.yaml", tmp_path / "back.yaml"
    forth.write_text(f"retype:\n  - {{term: A2/A2 genotype, from: Limited_variation, to: Genomic_variation, "
                     f"documents: ['{doc}']}}\n")
    back.write_text(f"retype:\n  - {{term: a2/a2 GENOTYPE, from: Genomic_variation, to: Limited_variation, "
                    f"documents: ['{doc}']}}\n")
    assert main(["decisions", "apply", str(final), str(forth)]) == 0
    assert "T1\tGenomic_variation 41 55" in (final / f"{doc}.ann").read_text()
    assert main(["decisions", "apply", str(final), str(back)]) == 0
    assert ann_content(final) == ann_content(gold)
