"""The schema file: hierarchy, mapping (Table 5 of the paper) and validation errors.

Covers: pipeline.schema
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.schema import SchemaError, load_schema


@pytest.fixture(scope="module")
def schema():  # type: ignore[no-untyped-def]
    return load_schema()


def test_pgxcorpus_hierarchy(schema) -> None:  # type: ignore[no-untyped-def]
    assert schema.ancestors("Haplotype") == ["Genomic_variation", "Genomic_factor"]
    assert schema.ancestors("Pharmacokinetic_phenotype") == ["Phenotype"]
    assert schema.is_a("Limited_variation", "Genomic_factor")
    assert not schema.is_a("Disease", "Genomic_factor")
    assert schema.ancestors("metabolizes") == ["influences", "isAssociatedWith"]
    assert set(schema.relation_roots()) == {"isAssociatedWith", "isEquivalentTo"}


@pytest.mark.parametrize(
    ("source", "type_", "expected"),
    [
        ("pubtator", "Chemical", "Chemical"),
        ("pubtator", "Disease", "Disease"),
        ("pubtator", "Gene", "Gene_or_protein"),
        ("pubtator", "Mutation", "Limited_variation"),
        ("pubtator", "Species", None),
        ("ontology", "DrugMetabolite", "Chemical"),
        ("ontology", "GenomicRegion", "Genomic_factor"),
        ("ontology", "GenomicVariation", "Genomic_variation"),
        ("gold", "Haplotype", "Haplotype"),
    ],
)
def test_table5_mapping(schema, source: str, type_: str, expected: str | None) -> None:  # type: ignore[no-untyped-def]
    assert schema.map_type(source, type_) == expected


def test_unknown_source_type_is_an_error(schema) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KeyError, match="Organism"):
        schema.map_type("pubtator", "Organism")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("entities: {A: {}, B: {A: {}}}", "defined twice"),
        ("entities: {A: {}}\nrelations: {r: {}}\nrelation_arguments: {r: {Arg1: [Z]}}", "unknown entity type 'Z'"),
        ("entities: {A: {}}\nmapping: {pubtator: {Gene: Nope}}", "unknown entity type 'Nope'"),
        ("entities: {A: {}}\nbogus: 1", "unknown section"),
        ("entities: [A", "invalid YAML"),
    ],
)
def test_invalid_schema_names_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "schema.yaml"
    path.write_text(content)
    with pytest.raises(SchemaError, match=message) as info:
        load_schema(path)
    assert str(path) in str(info.value)
