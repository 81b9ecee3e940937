"""Validator: one small broken document per error kind, conf lookup, the real gold, the command line.

Covers: pipeline.brat.conf, pipeline.brat.standoff, pipeline.brat.validate, pipeline.cli, pipeline.cli.brat_commands,
pipeline.schema
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.conf import annotation_conf, write_conf_files
from pipeline.brat.validate import Problem, parse_annotation_conf, strict_relation_warnings, validate_collection
from pipeline.schema import SchemaError, load_schema
from tests.conftest import FIXTURES, shared_path

MINI = FIXTURES / "brat" / "mini"
TEXT = "Imatinib binds ABL1 kinase in leukemia."
#       0         1         2         3
#       0123456789012345678901234567890123456789


def check(tmp_path: Path, ann: str, text: str = TEXT) -> list[Problem]:
    shutil.copy(MINI / "annotation.conf", tmp_path / "annotation.conf")
    (tmp_path / "doc.txt").write_text(text, encoding="utf-8")
    (tmp_path / "doc.ann").write_text(ann, encoding="utf-8")
    return validate_collection(tmp_path)


def test_clean_fixture_collection_is_clean() -> None:
    assert validate_collection(MINI) == []


@pytest.mark.parametrize(
    ("ann", "line", "message"),
    [
        # text does not match offsets
        ("T1\tChemical 0 8\tImatinab\n", 1, "does not match"),
        ("T1\tChemical 0 8\tImatinibs\n", 1, "does not match"),
        ("T1\tProtein 15 19;20 26\tABL1kinase\n", 1, "does not match"),
        # offsets outside the text
        ("T1\tChemical 30 45\tleukemia.\n", 1, "exceeds the text length"),
        # fragments of one annotation overlap or touch
        ("T1\tProtein 15 22;20 26\tABL1 ki nase\n", 1, "overlap"),
        ("T1\tProtein 19 26;15 19\t kinase ABL1\n", 1, "overlap"),
        # unparsable lines
        ("T1\tChemical 8 0\t\n", 1, "cannot parse"),
        ("T1\tChemical zero 8\tImatinib\n", 1, "cannot parse"),
        ("X1\tChemical 0 8\tImatinib\n", 1, "cannot parse"),
        ("T1\tChemical 0 8\n", 1, "cannot parse"),
        # ids
        ("T1\tChemical 0 8\tImatinib\nT1\tProtein 15 19\tABL1\n", 2, "duplicate id T1"),
        ("T\tChemical 0 8\tImatinib\n", 1, "invalid id"),
        # unknown types
        ("T1\tDrug 0 8\tImatinib\n", 1, "Drug is not a known entity type"),
        ("T1\tChemical 0 8\tImatinib\nT2\tProtein 15 19\tABL1\nR1\tInhibits Arg1:T1 Arg2:T2\t\n", 3,
         "Inhibits is not a known relation type"),
        ("T1\tChemical 0 8\tImatinib\nA1\tSpeculation T1\n", 2, "Speculation is not a known attribute"),
        # relation argument types
        ("T1\tChemical 0 8\tImatinib\nT2\tProtein 15 19\tABL1\nR1\tBinds Arg1:T1 Arg2:T2\t\n", 3,
         "Binds not allowed between Arg1:Chemical and Arg2:Protein"),
        ("T1\tChemical 0 8\tImatinib\nT2\tProtein 15 19\tABL1\nR1\tBinds Cause:T2 Arg2:T1\t\n", 3,
         "Binds not allowed"),
        ("T1\tMolecule 0 8\tImatinib\nT2\tDisease 30 38\tleukemia\nR1\tCauses Arg1:T1 Arg2:T2\t\n", 3,
         "Causes not allowed between Arg1:Molecule"),
        # references
        ("T1\tChemical 0 8\tImatinib\nR1\tBinds Arg1:T9 Arg2:T1\t\n", 2, "Arg1 refers to undefined id T9"),
        ("T1\tChemical 0 8\tImatinib\nA1\tConfidence T7 High\n", 2, "target T7 is not defined"),
        ("T1\tChemical 0 8\tImatinib\n#1\tAnnotatorNotes T4\tnote\n", 2, "target T4 is not defined"),
        ("T1\tChemical 0 8\tImatinib\nN1\tReference T2 MESH:D1\tx\n", 2, "target T2 is not defined"),
        ("T1\tProtein 15 19\tABL1\nT2\tProtein 20 26\tkinase\nT3\tChemical 0 8\tImatinib\n"
         "R1\tBinds Arg1:T1 Arg2:T3\t\nR2\tBinds Arg1:R1 Arg2:T3\t\n", 5, "Arg1 refers to R1, a relation"),
        # attributes
        ("T1\tChemical 0 8\tImatinib\nA1\tNegation T1\n", 2, "Chemical T1 cannot take a Negation attribute"),
        ("T1\tChemical 0 8\tImatinib\nA1\tConfidence T1 Maybe\n", 2, "value 'Maybe' not among Low|High"),
        ("T1\tChemical 0 8\tImatinib\nA1\tConfidence T1\n", 2, "value None not among"),
        ("T1\tProtein 15 19\tABL1\nT2\tChemical 0 8\tImatinib\nR1\tBinds Arg1:T1 Arg2:T2\t\nA1\tNegation R1 yes\n",
         4, "binary attribute Negation takes no value"),
        # overlaps
        ("T1\tChemical 0 8\tImatinib\nT2\tProtein 0 8\tImatinib\n", 2, "cannot have the same span"),
        ("T1\tProtein 15 26\tABL1 kinase\nT2\tChemical 15 19\tABL1\n", 2, "Chemical cannot be contained in Protein"),
        ("T1\tProtein 15 26\tABL1 kinase\nT2\tDisease 20 38\tkinase in leukemia\n", 2,
         "Disease cannot cross Protein"),
        ("T1\tProtein 15 19;30 38\tABL1 leukemia\nT2\tChemical 20 26\tkinase\n", 2,
         "Chemical cannot cross Protein"),
        # equivalences
        ("T1\tChemical 0 8\tImatinib\nT2\tProtein 15 19\tABL1\n*\tEquiv T1 T2\n", 3, "Equiv not allowed"),
        ("T1\tProtein 15 19\tABL1\n*\tEquiv T1 T5\n", 2, "refers to T5, not entities"),
    ],
)
def test_each_error_kind(tmp_path: Path, ann: str, line: int, message: str) -> None:
    problems = check(tmp_path, ann)
    where = str(tmp_path / "doc.ann")
    assert any(p.file == where and p.line == line and message in p.message for p in problems), problems
    for p in problems:
        assert str(p) == f"{p.file}:{p.line}: {p.message}"


@pytest.mark.parametrize(
    "ann",
    [
        "T1\tChemical 0 8\tImatinib \n",  # trailing whitespace at line end (as in the PGxCorpus release)
        "T1\tChemical 0 8\tImatinib\tmore columns\n",
        "T1\tProtein 20 26;15 19\tkinase ABL1\n",  # fragments in any order
        "T1\tProtein 15 19;19 26\tABL1  kinase\n",  # brat accepts a fragment touching an earlier one on its right
        "T1\tProtein 15 26\tABL1 kinase\nT2\tProtein 15 19\tABL1\n",  # allowed containment
        "T1\tProtein 15 19\tABL1\nT2\tDisease 15 38\tABL1 kinase in leukemia\n",
        "",
    ],
)
def test_accepted_variants(tmp_path: Path, ann: str) -> None:
    assert check(tmp_path, ann) == []


def test_ann_without_txt_and_missing_conf(tmp_path: Path) -> None:
    (tmp_path / "lonely.ann").write_text("T1\tChemical 0 3\tabc\n", encoding="utf-8")
    (tmp_path / "doc.txt").write_text("abc", encoding="utf-8")
    problems = validate_collection(tmp_path, MINI / "annotation.conf")
    assert [p.message for p in problems if p.file.endswith("lonely.ann")] == [
        "no text file lonely.txt for this annotation file"
    ]
    nested = tmp_path / "deep" / "er"
    nested.mkdir(parents=True)
    (nested / "x.txt").write_text("abc", encoding="utf-8")
    found = validate_collection(nested)
    # no annotation.conf anywhere above tmp_path's document directory (or, if the machine has one, it is used)
    assert all("annotation.conf" in p.message or p.file.endswith(".conf") for p in found) or found == []


def test_conf_found_walking_up(tmp_path: Path) -> None:
    shutil.copytree(MINI, tmp_path / "coll")
    assert validate_collection(tmp_path / "coll" / "sub") == []
    (tmp_path / "coll" / "sub" / "annotation.conf").write_text("[entities]\nDisease\n[relations]\n[events]\n"
                                                               "[attributes]\n", encoding="utf-8")
    problems = validate_collection(tmp_path / "coll")
    assert {p.message for p in problems if "nested" in p.file} == {
        "T1: Chemical is not a known entity type", "T2: Protein is not a known entity type"
    }


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ("[entities]\nA\n\tB\n[relations]\nR\tArg1:A\n[events]\n[attributes]\n", "needs exactly two arguments"),
        ("[entities]\n\tB\n[relations]\n[events]\n[attributes]\n", "indented but has no parent"),
        ("[entities]\nA\n[relations]\n<OVERLAP>\tArg1:A, Arg2:A\n[events]\n[attributes]\n", "without <OVL-TYPE>"),
        ("[entities]\nA\n[relations]\n<OVERLAP>\tArg1:A, Arg2:A, <OVL-TYPE>:nest\n[events]\n[attributes]\n",
         "unknown <OVL-TYPE>"),
        ("[entities]\nA\n[relations]\n[attributes]\nNeg\tValue:x\n", "missing section [events]"),
        ("[entities]\nA\nA\n[relations]\n[events]\n[attributes]\n", "defined twice"),
    ],
)
def test_conf_problems(conf: str, message: str) -> None:
    _, problems = parse_annotation_conf(conf, "x.conf")
    assert any(message in p.message for p in problems), problems


def test_real_gold_validates_clean_against_generated_conf(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    write_conf_files(tmp_path, load_schema())
    problems = validate_collection(gold, tmp_path / "annotation.conf")
    assert problems == []
    assert len(list(gold.glob("*.ann"))) == 300


def test_real_gold_needs_the_overlap_rule(tmp_path: Path) -> None:
    """Without <OVERLAP> rules (brat's default) the nesting and crossing of the gold is reported."""
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    write_conf_files(tmp_path, load_schema())
    conf = tmp_path / "annotation.conf"
    conf.write_text("\n".join(line for line in conf.read_text().splitlines() if not line.startswith("<OVERLAP>")))
    kinds = Counter(
        "cross" if "cross" in p.message else "contain" if "contained" in p.message else "other"
        for p in validate_collection(gold, conf)
    )
    assert kinds["cross"] > 0 and kinds["contain"] > 0 and kinds["other"] == 0


def _cli(argv: list[str]) -> int:
    return cli.main(argv)


def test_validate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["validate", str(MINI)]) == 0
    assert capsys.readouterr().out == ""
    check(tmp_path, "T1\tChemical 0 8\tImatinab\nT2\tDrug 15 19\tABL1\n")
    assert _cli(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{tmp_path / 'doc.ann'}:1: T1: text")
    assert out[1] == f"{tmp_path / 'doc.ann'}:2: T2: Drug is not a known entity type"
    assert _cli(["validate", str(tmp_path), "--conf", str(tmp_path / "nope.conf")]) == 2


RELEASE_RELATIONS = FIXTURES / "brat" / "release_relations"


def test_release_relation_combinations_are_admitted_and_strict_warns(tmp_path: Path) -> None:
    """The 7 argument combinations of the released corpus that the paper's constraints reject
    validate clean against the generated conf and come back as --strict warnings."""
    schema = load_schema()
    write_conf_files(tmp_path, schema)
    assert validate_collection(RELEASE_RELATIONS, tmp_path / "annotation.conf") == []
    warnings = strict_relation_warnings(RELEASE_RELATIONS, schema)
    assert [(Path(w.file).stem, w.line) for w in warnings] == [
        (n, 3) for n in ("1000001_1", "1000001_2", "1000002_1", "1000002_2", "1000002_3", "1000002_4", "1000003_1")
    ]
    assert all(w.message.startswith("warning: R1: ") for w in warnings)
    assert "decreases outside the strict constraints: Arg2:Genomic_factor (strict: Chemical|Gene_or_protein|" \
        in warnings[0].message
    assert "Arg2:Limited_variation (strict: Phenotype|Disease|" in warnings[5].message  # treats


@pytest.mark.parametrize(
    ("relation", "arg1", "arg2", "admitted"),
    [
        ("decreases", "Chemical", "Genomic_factor", True),
        ("increases", "Chemical", "Genomic_factor", True),
        ("decreases", "Chemical", "Haplotype", False),  # =Genomic_factor admits the parent type only
        ("decreases", "Chemical", "Genomic_variation", False),
        ("causes", "Chemical", "Genomic_factor", False),
        ("causes", "Phenotype", "Limited_variation", True),
        ("treats", "Chemical", "Limited_variation", True),
        ("treats", "Gene_or_protein", "Limited_variation", False),
        ("metabolizes", "Chemical", "Limited_variation", False),
    ],
)
def test_admitted_relation_types(relation: str, arg1: str, arg2: str, admitted: bool) -> None:
    conf, problems = parse_annotation_conf(annotation_conf(load_schema()))
    assert problems == []
    assert conf.relation_allowed(relation, ("Arg1", "Arg2"), (arg1, arg2)) is admitted


def test_schema_exact_marker_and_strict_section(tmp_path: Path) -> None:
    schema = load_schema()
    assert schema.allowed_arguments("decreases", "Arg2", strict=True) == (
        "Chemical", "Gene_or_protein", "Phenotype", "Disease", "Pharmacodynamic_phenotype", "Pharmacokinetic_phenotype"
    )
    assert "Genomic_factor" in schema.allowed_arguments("decreases", "Arg2")
    assert "Haplotype" not in schema.allowed_arguments("decreases", "Arg2")
    # a relation the strict section does not list falls back to relation_arguments
    assert schema.allowed_arguments("influences", "Arg2", strict=True) == tuple(schema.entity_parent)
    bad = tmp_path / "schema.yaml"
    bad.write_text("entities: {A: {}}\nrelations: {r: {}}\nstrict_relation_arguments: {r: {Arg1: ['=Z']}}\n")
    with pytest.raises(SchemaError, match="strict_relation_arguments.r.Arg1 names unknown entity type '=Z'"):
        load_schema(bad)


def test_dev_gold_has_no_strict_warning() -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    assert strict_relation_warnings(gold, load_schema()) == []


def test_validate_strict_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    coll = tmp_path / "coll"
    shutil.copytree(RELEASE_RELATIONS, coll)
    write_conf_files(coll, load_schema())
    assert _cli(["validate", str(coll)]) == 0
    assert capsys.readouterr().out == ""
    assert _cli(["validate", str(coll), "--strict"]) == 0  # warnings do not change the exit status
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 7 and all(": warning: R1: " in line for line in lines)
    assert "7 strict-constraint warning(s)" in captured.err
    # an error still fails, and the warnings are still printed
    (coll / "1000001_1.ann").write_text("T1\tDrug 0 8\tWarfarin\n")
    assert _cli(["validate", str(coll), "--strict"]) == 1
    out = capsys.readouterr().out
    assert "Drug is not a known entity type" in out and out.count("warning:") == 6
    assert _cli(["validate", str(coll), "--strict", "--schema", str(tmp_path / "missing.yaml")]) == 2


def test_reference_problems_are_validates_own(tmp_path: Path) -> None:
    """The save check of campaign serve runs these alone: each is also a problem of the full check."""
    from pipeline.brat.standoff import parse_ann
    from pipeline.brat.validate import reference_problems

    ann = ("T1\tChemical 0 8\tImatinib\n#1\tAnnotatorNotes T9\tx\nA1\tNegated T8\nN1\tReference T7 CHEBI:1\tw\n"
           "R1\tisAssociatedWith Arg1:T1 Arg2:T6\n")
    doc, issues = parse_ann("d", TEXT, ann, "d.ann")
    assert issues == []
    found = reference_problems(doc, "d.ann")
    assert [(p.line, p.message) for p in found] == [
        (2, "#1: target T9 is not defined"), (3, "A1: target T8 is not defined"),
        (4, "N1: target T7 is not defined"), (5, "R1: Arg2 refers to undefined id T6")]
    full = {(p.line, p.message) for p in check(tmp_path, ann)}
    assert {(p.line, p.message) for p in found} <= full
    assert reference_problems(parse_ann("d", TEXT, "T1\tChemical 0 8\tImatinib\n#1\tAnnotatorNotes T1\tx\n",
                                        "d.ann")[0], "d.ann") == []
