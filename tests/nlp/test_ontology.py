"""Tests of pipeline.nlp.ontology: loading, inheritance, term matching and validation errors (file:line).

Covers: pipeline.nlp.ontology, pipeline.schema
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.nlp.ontology import (
    DEFAULT_ONTOLOGY,
    KNOWN_DEPENDENCIES,
    OntologyError,
    load_ontology,
    normalise,
    term_variants,
)
from pipeline.schema import load_schema

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ontology" / "minimal.yaml"


def test_minimal_fixture_loads_with_inheritance() -> None:
    onto = load_ontology(FIXTURE)
    sens = onto.classes["DrugSensitivity"]
    assert sens.parent == "Pharmacodynamic"
    assert sens.modified_by == {"Chemical"}  # inherited
    assert sens.relations == ("compound", "prep:to")  # inherited
    assert ("dose", "requirement") in sens.terms
    assert onto.ancestors("DrugSensitivity") == ["Pharmacodynamic", "Phenotype"]
    assert onto.is_a("DrugLevel", "Phenotype")
    assert onto.canonical_type("SNP") == "Mutation"
    assert onto.canonical_type("Drug") == "Chemical"
    assert onto.canonical_type("Species") is None
    assert [r.name for r in onto.surface_rules] == ["star"]
    assert [r.name for r in onto.suffix_rules] == ["star_suffix"]


def test_shared_term_with_disjoint_key_types_is_allowed() -> None:
    onto = load_ontology(FIXTURE)
    names = {c.name for c in onto.classes_for_term(("level",))}
    assert names == {"GeneFunction", "DrugLevel"}


@pytest.mark.parametrize(
    ("forms", "expected"),
    [
        ([("sensitivity",)], [(0, 1, ("sensitivity",))]),
        ([("the",), ("dose",), ("requirement",)], [(1, 3, ("dose", "requirement"))]),
        ([("dose",), ("response",)], [(1, 2, ("response",))]),
        ([("warfarin",), ("sensitivities", "sensitivity")], [(1, 2, ("sensitivity",))]),
        ([("nothing",)], []),
    ],
)
def test_match_terms(forms: list[tuple[str, ...]], expected: list[tuple[int, int, tuple[str, ...]]]) -> None:
    assert load_ontology(FIXTURE).match_terms(forms) == expected


@pytest.mark.parametrize(
    ("word", "norm"),
    [("-induced", "induced"), ("Metabolisers", "metabolizers"), ("CYP2D6", "cyp2d6"), ("-", "-")],
)
def test_normalise(word: str, norm: str) -> None:
    assert normalise(word) == norm


@pytest.mark.parametrize(
    ("term", "variants"),
    [
        ("progression-free survival", [("progression-free", "survival"), ("progression", "-", "free", "survival")]),
        ("clearance", [("clearance",)]),
        ("-induced", [("induced",)]),
    ],
)
def test_term_variants(term: str, variants: list[tuple[str, ...]]) -> None:
    assert term_variants(term) == variants


def _edit(tmp_path: Path, old: str, new: str) -> Path:
    text = FIXTURE.read_text(encoding="utf-8")
    assert old in text, old
    out = tmp_path / "onto.yaml"
    out.write_text(text.replace(old, new, 1), encoding="utf-8")
    return out


def _line_of(path: Path, needle: str) -> int:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(needle)


@pytest.mark.parametrize(
    ("old", "new", "needle", "message"),
    [
        ("    parent: Pharmacodynamic\n    terms: [sensitivity", "    parent: Pharmacodynamik\n    terms: [sensitivity",
         "parent: Pharmacodynamik", "unknown parent 'Pharmacodynamik'"),
        ("relations: [compound, prep:to]", "relations: [compound, prepobj]", "prepobj",
         "unknown dependency label 'prepobj'"),
        ("relations: [compound, prep:of]", "relations: [compound, 'prep:']", "'prep:'", "bad relation"),
        ("relations: [compound, prep:of]", "relations: [compound, 'dobj:of']", "'dobj:of'", "bad relation"),
        ("terms: [haplotype]", "terms: [haplotype, activity]\n    priority: 0", "terms: [haplotype, activity]",
         "term 'activity' is in classes 'GeneFunction'"),
        ("    modified_by: [Gene]\n    relations: [compound]", "    modified_by: [Protein]\n    relations: [compound]",
         "modified_by: [Protein]", "unknown entity type 'Protein'"),
        ("    terms: [haplotype]", "    terms: [haplotype]\n    synonyms: [x]", "synonyms", "unknown key 'synonyms'"),
        ("    pattern: '\\*\\s*[0-9]+'\n    class: Haplotype\nsuffix",
         "    pattern: '\\*\\s*[0-9]+'\n    class: Haplotyp\nsuffix", "class: Haplotyp", "unknown class 'Haplotyp'"),
        ("  Phenotype:\n    description: root", "  Phenotype:\n    parent: DrugLevel", "parent: DrugLevel",
         "cycle of parents"),
    ],
)
def test_loader_errors_name_file_and_line(tmp_path: Path, old: str, new: str, needle: str, message: str) -> None:
    path = _edit(tmp_path, old, new)
    with pytest.raises(OntologyError) as info:
        load_ontology(path)
    text = str(info.value)
    assert message in text
    if message == "cycle of parents":
        assert text.startswith(f"{path}:")
    else:
        assert text.startswith(f"{path}:{_line_of(path, needle)}:"), text


def test_duplicate_term_resolved_by_priority(tmp_path: Path) -> None:
    path = _edit(tmp_path, "terms: [haplotype]", "terms: [haplotype, activity]\n    priority: 1")
    onto = load_ontology(path)
    assert [c.name for c in onto.classes_for_term(("activity",))] == ["Haplotype", "GeneFunction"]


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = _edit(tmp_path, "    terms: [response]", "    terms: [response")
    with pytest.raises(OntologyError, match=rf"^{path}:\d+: invalid YAML"):
        load_ontology(path)


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    path = _edit(tmp_path, "  Haplotype:\n", "  GeneFunction:\n    terms: [x]\n  Haplotype:\n")
    with pytest.raises(OntologyError, match="duplicate key 'GeneFunction'"):
        load_ontology(path)


def test_bad_surface_regex(tmp_path: Path) -> None:
    path = _edit(tmp_path, "    pattern: '\\*\\s*[0-9]+'\n    class: Haplotype\nsuffix",
                 "    pattern: '(['\n    class: Haplotype\nsuffix")
    with pytest.raises(OntologyError, match=rf"^{path}:\d+: surface rule 'star'"):
        load_ontology(path)


def test_missing_file() -> None:
    with pytest.raises(OntologyError, match="cannot read ontology"):
        load_ontology(Path("/nonexistent/ontology.yaml"))


def test_default_ontology_is_consistent_with_schema() -> None:
    onto = load_ontology(DEFAULT_ONTOLOGY)
    schema = load_schema()
    table = schema.mapping["ontology"]
    for name, cls in onto.classes.items():
        # every class reaches a schema type through itself or an ancestor
        assert any(a in table for a in onto.ancestors(name, include_self=True)), name
        assert set(cls.relations) <= KNOWN_DEPENDENCIES | {r for r in cls.relations if r.startswith("prep:")}
    # the class inventory
    for name in ("DrugResponse", "DrugSensitivity", "DrugToxicity", "AdverseEvent", "Pharmacokinetic", "Clearance",
                 "Metabolism", "PlasmaConcentration", "Polymorphism", "Genotype", "Allele", "Haplotype", "Mutation",
                 "GeneFunction", "GeneProduct", "GenomicRegion", "DrugMetabolite"):
        assert name in onto.classes
    assert onto.is_a("Clearance", "Pharmacokinetic") and onto.is_a("Haplotype", "GenomicVariation")
