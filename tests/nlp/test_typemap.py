"""Tests of pipeline.nlp.typemap: Table 5 mapping, surface rules, ontology classes, and a pipeline test.

Covers: pipeline.documents, pipeline.nlp.extend, pipeline.nlp.ontology, pipeline.nlp.spacy_models,
pipeline.nlp.typemap, pipeline.schema
"""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.documents import Annotation, Document, Sentence
from pipeline.nlp.extend import extend_documents
from pipeline.nlp.ontology import Ontology, load_ontology
from pipeline.nlp.spacy_models import load_parser
from pipeline.nlp.typemap import map_documents
from pipeline.schema import Schema, load_schema


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_schema()


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return load_ontology()


def _map_one(text: str, ann: Annotation, schema: Schema, onto: Ontology) -> tuple[Annotation | None, Counter[str]]:
    counts: Counter[str] = Counter()
    doc = Document("1", text, text, sentences=(Sentence(0, len(text)),), annotations=(ann,))
    (out,) = map_documents([doc], schema, counts, ontology=onto)
    return (out.annotations[0] if out.annotations else None), counts


def _entity(text: str, type_: str, source: str = "pubtator") -> Annotation:
    return Annotation(((0, len(text)),), type_, source, text=text)


@pytest.mark.parametrize(
    ("source", "text", "type_", "expected"),
    [
        # Table 5: PubTator and the local annotator
        ("pubtator", "warfarin", "Chemical", "Chemical"),
        ("pubtator", "breast cancer", "Disease", "Disease"),
        ("pubtator", "CYP2C9", "Gene", "Gene_or_protein"),
        ("pubtator", "V600E", "Mutation", "Limited_variation"),
        ("pubtator", "rs1045642", "SNP", "Limited_variation"),
        ("local", "VKORC1", "Gene", "Gene_or_protein"),
        ("local", "clopidogrel", "Chemical", "Chemical"),
        # Table 5: PHARE classes
        ("ontology", "warfarin metabolite", "DrugMetabolite", "Chemical"),
        ("ontology", "alcohol dehydrogenase", "GeneProduct", "Gene_or_protein"),
        ("ontology", "MET amplification", "GenomicVariation", "Genomic_variation"),
        ("ontology", "ESR1 promoter", "GenomicRegion", "Genomic_factor"),
        ("ontology", "KRAS mutation", "Mutation", "Limited_variation"),
        # fine mapping through the ancestors
        ("ontology", "tacrolimus clearance", "PharmacokineticParameter", "Pharmacokinetic_phenotype"),
        ("ontology", "metabolism of nateglinide", "Metabolism", "Pharmacokinetic_phenotype"),
        ("ontology", "warfarin sensitivity", "DrugSensitivity", "Pharmacodynamic_phenotype"),
        ("ontology", "carbamazepine-induced SJS", "AdverseEvent", "Pharmacodynamic_phenotype"),
        ("ontology", "warfarin dose", "DrugDose", "Pharmacodynamic_phenotype"),
        ("ontology", "plasma efavirenz concentration", "PlasmaConcentration", "Pharmacodynamic_phenotype"),
        ("ontology", "ABCB1 haplotypes", "Haplotype", "Haplotype"),
        ("ontology", "GSTM1 polymorphism", "Polymorphism", "Limited_variation"),
        ("ontology", "CYP2D6 genotype", "Genotype", "Limited_variation"),
        ("ontology", "COX-2 mRNA", "Transcript", "Genomic_factor"),
        ("ontology", "TPMT activity", "GeneFunction", "Phenotype"),
        ("ontology", "alcohol dependence", "SubstanceUseDisorder", "Disease"),
        ("ontology", "EGFR-mutated NSCLC", "GeneticallyDefinedDisease", "Disease"),
    ],
)
def test_mapping_table(source: str, text: str, type_: str, expected: str, schema: Schema, onto: Ontology) -> None:
    ann = Annotation(((0, len(text)),), type_, source, text=text,
                     ontology_class=type_ if source == "ontology" else None)
    mapped, counts = _map_one(text, ann, schema, onto)
    assert mapped is not None
    assert (mapped.type, mapped.original_type) == (expected, type_)
    assert mapped.fragments == ann.fragments and counts["mapped"] == 1


@pytest.mark.parametrize(
    ("text", "type_", "expected", "rule"),
    [
        ("CYP2D6*4", "Gene", "Haplotype", "star_allele"),
        ("CYP2D6 * 4", "Gene", "Haplotype", "star_allele"),
        ("HLA-B*57:01", "Gene", "Haplotype", "star_allele"),
        ("UGT1A1*28", "Mutation", "Haplotype", "star_allele"),
        ("CYP2C9*1/*3", "Gene", "Haplotype", "star_allele"),
        ("HLA-B*5701", "Gene", "Haplotype", "star_allele"),
        ("A2/A2", "Gene", "Limited_variation", "genotype_notation"),
        ("Arg/Arg", "Chemical", "Limited_variation", "genotype_notation"),
        ("C677T", "Gene", "Limited_variation", "variant_notation"),
        ("Val158Met", "Gene", "Limited_variation", "variant_notation"),
        ("toxicity", "Disease", "Pharmacodynamic_phenotype", "adverse_drug_reaction"),
        ("adverse drug reactions", "Disease", "Pharmacodynamic_phenotype", "adverse_drug_reaction"),
        ("OS", "Disease", "Phenotype", "survival_endpoint"),
    ],
)
def test_surface_rules(text: str, type_: str, expected: str, rule: str, schema: Schema, onto: Ontology) -> None:
    mapped, counts = _map_one(text, _entity(text, type_), schema, onto)
    assert mapped is not None and (mapped.type, mapped.original_type) == (expected, type_)
    assert counts[f"surface_{rule}"] == 1


@pytest.mark.parametrize(("text", "type_"), [("CYP2D6", "Gene"), ("warfarin", "Chemical"), ("asthma", "Disease")])
def test_surface_rules_leave_ordinary_names_alone(text: str, type_: str, schema: Schema, onto: Ontology) -> None:
    mapped, counts = _map_one(text, _entity(text, type_), schema, onto)
    assert mapped is not None and mapped.type == schema.map_type("pubtator", type_)
    assert not any(k.startswith("surface_") for k in counts)


def test_null_and_unmapped_types_are_dropped_and_counted(schema: Schema, onto: Ontology) -> None:
    text = "human mice cells"
    anns = (
        Annotation(((0, 5),), "Species", "pubtator", text="human"),
        Annotation(((6, 10),), "Mystery", "pubtator", text="mice"),
        Annotation(((11, 16),), "Chemical", "pubtator", text="cells"),
    )
    counts: Counter[str] = Counter()
    (out,) = map_documents([Document("1", text, text, annotations=anns)], schema, counts, ontology=onto)
    assert [a.type for a in out.annotations] == ["Chemical"]
    assert counts["dropped_null_pubtator_Species"] == 1
    assert counts["dropped_unmapped_pubtator_Mystery"] == 1


def test_mapping_is_idempotent_and_merges_duplicates(schema: Schema, onto: Ontology) -> None:
    text = "ABCB1 haplotypes"
    anns = (
        Annotation(((0, 16),), "Haplotype", "ontology", text=text, ontology_class="Haplotype", rule="compound"),
        Annotation(((0, 16),), "Haplotype", "ontology", text=text, ontology_class="Haplotype", rule="nmod"),
        Annotation(((0, 5),), "Gene", "pubtator", text="ABCB1"),
    )
    counts: Counter[str] = Counter()
    (once,) = map_documents([Document("1", text, text, annotations=anns)], schema, counts, ontology=onto)
    assert sorted(a.type for a in once.annotations) == ["Gene_or_protein", "Haplotype"]
    assert counts["duplicates_merged"] == 1
    (twice,) = map_documents([once], schema, Counter(), ontology=onto)
    assert twice == once


def test_default_ontology_is_loaded_when_none_given(schema: Schema) -> None:
    text = "CYP2D6*4"
    counts: Counter[str] = Counter()
    (out,) = map_documents([Document("1", text, text, annotations=(_entity(text, "Gene"),))], schema, counts)
    assert out.annotations[0].type == "Haplotype"


def test_pipeline_from_documents_to_mapped_annotations(schema: Schema, onto: Ontology) -> None:
    """Documents with key annotations -> extension -> schema types, document-relative throughout."""
    title = "Pharmacogenetics of warfarin."
    abstract = ("Warfarin sensitivity was higher in CYP2C9*3 carriers. "
                "The clearance of tacrolimus depends on the CYP3A5 genotype.")
    text = title + "\n" + abstract
    s1 = len(title) + 1
    s2 = text.index("The clearance")

    def key(surface: str, type_: str) -> Annotation:
        start = text.index(surface, s1)
        return Annotation(((start, start + len(surface)),), type_, "pubtator", text=surface)

    doc = Document(
        "7", title, text,
        sentences=(Sentence(0, len(title)), Sentence(s1, s2 - 1), Sentence(s2, len(text))),
        annotations=(key("Warfarin", "Chemical"), key("CYP2C9", "Gene"), key("tacrolimus", "Chemical"),
                     key("CYP3A5", "Gene")),
    )
    counts: Counter[str] = Counter()
    extended = extend_documents([doc], onto, load_parser(), counts)
    (out,) = list(map_documents(extended, schema, counts, ontology=onto))
    got = sorted((a.type, a.covered(text), a.original_type) for a in out.annotations)
    assert got == sorted([
        ("Chemical", "Warfarin", "Chemical"),
        ("Pharmacodynamic_phenotype", "Warfarin sensitivity", "DrugSensitivity"),
        ("Gene_or_protein", "CYP2C9", "Gene"),
        ("Haplotype", "CYP2C9*3", "Haplotype"),
        ("Chemical", "tacrolimus", "Chemical"),
        ("Pharmacokinetic_phenotype", "clearance of tacrolimus", "PharmacokineticParameter"),
        ("Gene_or_protein", "CYP3A5", "Gene"),
        ("Limited_variation", "CYP3A5 genotype", "Genotype"),
    ])
    for a in out.annotations:
        assert a.text == a.covered(text)  # document-relative offsets
        assert a.type in schema.entity_parent
    assert counts["mapped"] == len(out.annotations)


def test_map_from_files_equals_mapping_with_the_loaded_files(schema: Schema, onto: Ontology) -> None:
    from pipeline.nlp.typemap import map_from_files
    from pipeline.schema import DEFAULT_SCHEMA

    text = "CYP2C9*3 and warfarin."
    doc = Document("1", text, text, sentences=(Sentence(0, len(text)),),
                   annotations=(Annotation(((0, 8),), "Mutation", "pubtator", text="CYP2C9*3"),
                                Annotation(((13, 21),), "Chemical", "pubtator", text="warfarin")))
    expected_counts: Counter[str] = Counter()
    expected = list(map_documents([doc], schema, expected_counts, ontology=onto))
    counts: Counter[str] = Counter()
    assert list(map_from_files([doc], counts, schema_path=DEFAULT_SCHEMA)) == expected
    assert counts == expected_counts and {a.type for a in expected[0].annotations} != {"Mutation", "Chemical"}
