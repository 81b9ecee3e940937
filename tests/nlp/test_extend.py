"""Tests of pipeline.nlp.extend: composite entities from key entities and the dependency parse.

Sentences are written for the tests; the spaCy model and the ontology are loaded once per module.

Covers: pipeline.documents, pipeline.nlp.extend, pipeline.nlp.extend_search, pipeline.nlp.ontology,
pipeline.nlp.spacy_models
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

import pytest
from spacy.language import Language

from pipeline.documents import Annotation, Document, Sentence
from pipeline.nlp.extend import extend_documents
from pipeline.nlp.ontology import Ontology, load_ontology
from pipeline.nlp.spacy_models import load_parser


@pytest.fixture(scope="module")
def nlp() -> Language:
    return load_parser()


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return load_ontology()


def _key(text: str, surface: str, type_: str, nth: int = 0) -> Annotation:
    matches = list(re.finditer(r"(?<![\w])" + re.escape(surface) + r"(?![\w])", text))
    m = matches[nth]
    return Annotation(((m.start(), m.end()),), type_, "pubtator", text=surface)


def _doc(text: str, keys: list[tuple[str, str]], pmid: str = "1") -> Document:
    return Document(pmid, text, text, sentences=(Sentence(0, len(text)),),
                    annotations=tuple(_key(text, s, t) for s, t in keys))


def _composites(doc: Document) -> list[tuple[str, str, int, str]]:
    """(class, covered text, number of fragments, rule) of each composite, sorted."""
    return sorted(
        (a.type, a.covered(doc.text), len(a.fragments), a.rule or "")
        for a in doc.annotations
        if a.source == "ontology"
    )


def _run(docs: list[Document], onto: Ontology, nlp: Language, **kw: int) -> tuple[list[Document], Counter[str]]:
    counts: Counter[str] = Counter()
    return list(extend_documents(docs, onto, nlp, counts, **kw)), counts


CASES = [
    # compound
    ("Patients with high warfarin sensitivity needed lower doses.", [("warfarin", "Chemical")],
     [("DrugSensitivity", "warfarin sensitivity", 1, "compound")]),
    ("Tacrolimus clearance was higher in CYP3A5 expressers.", [("Tacrolimus", "Chemical")],
     [("PharmacokineticParameter", "Tacrolimus clearance", 1, "compound")]),
    ("Alcohol dependence is heritable.", [("Alcohol", "Chemical")],
     [("SubstanceUseDisorder", "Alcohol dependence", 1, "compound")]),
    # amod
    ("Polymorphisms in the MTHFR gene affect methotrexate toxicity.", [("methotrexate", "Chemical")],
     [("AdverseDrugReaction", "methotrexate toxicity", 1, "amod")]),
    # of-phrases and other prepositions
    ("The clearance of tacrolimus was reduced in carriers.", [("tacrolimus", "Chemical")],
     [("PharmacokineticParameter", "clearance of tacrolimus", 1, "prep:of")]),
    ("Resistance to imatinib was observed.", [("imatinib", "Chemical")],
     [("DrugResistance", "Resistance to imatinib", 1, "prep:to")]),
    ("Polymorphisms in the MTHFR gene affect methotrexate toxicity.", [("MTHFR", "Gene")],
     [("Polymorphism", "Polymorphisms in the MTHFR gene", 1, "prep:in"),
      ("AdverseDrugReaction", "toxicity", 1, "standalone")]),  # no drug key here: the term alone
    ("Expression of CYP3A4 in the liver was increased.", [("CYP3A4", "Gene")],
     [("GeneFunction", "Expression of CYP3A4", 1, "prep:of")]),
    # possessive
    ("Tamoxifen's metabolism depends on CYP2D6 activity.", [("Tamoxifen", "Chemical"), ("CYP2D6", "Gene")],
     [("GeneFunction", "CYP2D6 activity", 1, "compound"), ("Metabolism", "Tamoxifen's metabolism", 1, "poss")]),
    # linkers, both word orders
    ("Warfarin-induced bleeding was frequent.", [("Warfarin", "Chemical")],
     [("DrugToxicity", "Warfarin-induced bleeding", 1, "linker:induce"),
      ("DrugToxicity", "bleeding", 1, "linker:induce+effect")]),
    ("Bleeding induced by warfarin was frequent.", [("warfarin", "Chemical")],
     [("DrugToxicity", "Bleeding induced by warfarin", 1, "linker:induce"),
      ("DrugToxicity", "Bleeding", 1, "linker:induce+effect")]),
    # the term is a dependent of the key
    ("Mutant p53 was detected in tumours.", [("p53", "Gene")], [("Mutation", "Mutant p53", 1, "governs:amod")]),
    # a key entity as term, and a nested chain
    ("EGFR-mutated NSCLC responds to gefitinib.", [("EGFR", "Gene"), ("NSCLC", "Disease")],
     [("GeneticallyDefinedDisease", "EGFR-mutated NSCLC", 1, "linker:mutate"),
      ("Mutation", "EGFR-mutated", 1, "npadvmod")]),
    ("The KIT exon 11 mutation was frequent.", [("KIT", "Gene")],
     [("GenomicRegion", "KIT exon 11", 1, "nmod"), ("Mutation", "KIT exon 11 mutation", 1, "nmod")]),
    # qualifiers on the term's left
    ("Plasma warfarin concentrations were measured.", [("warfarin", "Chemical")],
     [("PlasmaConcentration", "Plasma warfarin concentrations", 1, "compound")]),
    # two keys in one sentence, each with its own term (chain of composites)
    ("The CYP2C19 genotype predicted the response to clopidogrel.", [("CYP2C19", "Gene"), ("clopidogrel", "Chemical")],
     [("DrugResponse", "response to clopidogrel", 1, "prep:to"), ("Genotype", "CYP2C19 genotype", 1, "compound")]),
    ("We compared CYP2C9 genotype-guided warfarin dosing with standard dosing.", [("warfarin", "Chemical")],
     [("DrugDose", "warfarin dosing", 1, "compound")]),
    # standalone terms without key entity
    ("Overall survival was longer in patients with adverse drug reactions.", [],
     [("AdverseDrugReaction", "adverse drug reactions", 1, "standalone"),
      ("ClinicalTrait", "Overall survival", 1, "standalone")]),
    # suffix rules: star alleles, coordinated star alleles (discontiguous)
    ("Genotyping of CYP2C9*1, *2 and *3 was performed.", [("CYP2C9", "Gene")],
     [("Haplotype", "CYP2C9 *2", 2, "suffix:star_allele"), ("Haplotype", "CYP2C9 *3", 2, "suffix:star_allele"),
      ("Haplotype", "CYP2C9*1", 1, "suffix:star_allele")]),
    ("Carbamazepine-induced Stevens-Johnson syndrome is associated with HLA-B*15:02.",
     [("Carbamazepine", "Chemical"), ("Stevens-Johnson syndrome", "Disease"), ("HLA-B", "Gene")],
     [("AdverseEvent", "Carbamazepine-induced Stevens-Johnson syndrome", 1, "linker:induce"),
      ("AdverseEvent", "Stevens-Johnson syndrome", 1, "linker:induce+effect"),
      ("Haplotype", "HLA-B*15:02", 1, "suffix:star_allele")]),
    # coordinated modifiers parsed as conjuncts of their shared head noun
    ("We assessed the association between CYP2C9 and SLCO1B1 polymorphisms and the metabolism of nateglinide.",
     [("CYP2C9", "Gene"), ("SLCO1B1", "Gene"), ("nateglinide", "Chemical")],
     [("Polymorphism", "CYP2C9 polymorphisms", 2, "compound+shared"),
      ("Polymorphism", "SLCO1B1 polymorphisms", 1, "compound"),
      ("Metabolism", "metabolism of nateglinide", 1, "prep:of")]),
    # key and term both modifying the same noun (flat parse), then nesting into the larger composite
    ("The COX-2 mRNA suppression was strong.", [("COX-2", "Gene")],
     [("Transcript", "COX-2 mRNA", 1, "nmod+sibling"), ("GeneFunction", "COX-2 mRNA suppression", 1, "nmod")]),
    # the shorter term a longer one starts with ("mRNA" of "mRNA level") nests in a flat parse
    ("The 5-HTT mRNA levels were low.", [("5-HTT", "Gene")],
     [("Transcript", "5-HTT mRNA", 1, "nmod+sibling"), ("GeneFunction", "5-HTT mRNA levels", 1, "nmod")]),
    # a term modifying a noun modifier of the key's head ("promotor" -> "methylation" -> "status")
    ("We measured MGMT promotor methylation status in tumors.", [("MGMT", "Gene")],
     [("GenomicRegion", "MGMT promotor", 1, "compound+sibling"),
      ("GeneFunction", "MGMT promotor methylation status", 1, "compound")]),
    # hyphenated multiword terms match spaCy's split tokens
    ("Progression-free survival was longer.", [], [("ClinicalTrait", "Progression-free survival", 1, "standalone")]),
    # taking a substance is a behaviour (a phenotype), not a disorder
    ("Nicotine self-administration was reduced in the mutant mice.", [("Nicotine", "Chemical")],
     [("SubstanceUseBehavior", "Nicotine self-administration", 1, "compound")]),
    # a standalone drug class is a Chemical key of the search
    ("The response to statins was poor.", [],
     [("DrugClassName", "statins", 1, "standalone"), ("DrugResponse", "response to statins", 1, "prep:to")]),
    # the gene-defined state of a disease subtype is an entity of its own too
    ("Women with HER2 -positive locally advanced breast cancer were treated.",
     [("HER2", "Gene"), ("breast cancer", "Disease")],
     [("GeneDefinedPhenotype", "HER2 -positive", 1, "linker:positive+state"),
      ("GeneticallyDefinedDisease", "HER2 -positive locally advanced breast cancer", 1, "linker:positive")]),
    ("KRAS -negative colorectal cancer was studied.", [("KRAS", "Gene"), ("colorectal cancer", "Disease")],
     [("GeneDefinedPhenotype", "KRAS -negative", 1, "nmod"),
      ("GeneticallyDefinedDisease", "KRAS -negative colorectal cancer", 1, "linker:negative")]),
    # no ontology term near the key: nothing
    ("Warfarin was given to all patients.", [("Warfarin", "Chemical")], []),
]


@pytest.mark.parametrize(("text", "keys", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_rules(text: str, keys: list[tuple[str, str]], expected: list[tuple[str, str, int, str]],
               onto: Ontology, nlp: Language) -> None:
    (out,), _ = _run([_doc(text, keys)], onto, nlp)
    assert _composites(out) == sorted(expected)
    for a in out.annotations:
        if a.source != "ontology":
            continue
        assert a.ontology_class == a.type and a.text == a.covered(text)
        if a.rule == "standalone" or a.rule.endswith("+effect"):
            assert a.key is None
        else:
            # the key entity's fragments lie inside the composite's
            assert a.key is not None
            assert all(any(s <= ks and ke <= e for s, e in a.fragments) for ks, ke in a.key)


@pytest.mark.parametrize(
    ("text", "keys", "expected"),
    [
        # the first conjunct is discontiguous: "warfarin ... sensitivity"
        ("We studied warfarin and acenocoumarol sensitivity in 100 patients.",
         [("warfarin", "Chemical"), ("acenocoumarol", "Chemical")],
         [("DrugSensitivity", "acenocoumarol sensitivity", 1, "nmod+conj"),
          ("DrugSensitivity", "warfarin sensitivity", 2, "nmod")]),
        # the later conjunct is discontiguous: "sensitivity to ... acenocoumarol"
        ("The sensitivity to warfarin and acenocoumarol was higher.",
         [("warfarin", "Chemical"), ("acenocoumarol", "Chemical")],
         [("DrugSensitivity", "sensitivity to acenocoumarol", 2, "prep:to+conj"),
          ("DrugSensitivity", "sensitivity to warfarin", 1, "prep:to")]),
        ("Levels of estrone and estradiol were elevated.", [("estrone", "Chemical"), ("estradiol", "Chemical")],
         [("PlasmaConcentration", "Levels of estradiol", 2, "prep:of+conj"),
          ("PlasmaConcentration", "Levels of estrone", 1, "prep:of")]),
    ],
)
def test_coordination_is_discontiguous(text: str, keys: list[tuple[str, str]],
                                       expected: list[tuple[str, str, int, str]],
                                       onto: Ontology, nlp: Language) -> None:
    (out,), counts = _run([_doc(text, keys)], onto, nlp)
    assert _composites(out) == sorted(expected)
    assert counts["composites_discontiguous"] == 1
    disc = next(a for a in out.annotations if a.discontiguous)
    # the words in between (the other conjunct, "and") are not part of it
    between = out.text[disc.fragments[0][1] : disc.fragments[1][0]]
    assert "and" in between


def test_adjacent_term_when_the_parse_links_nothing(onto: Ontology, nlp: Language) -> None:
    text = "CYP3A5 genetic polymorphism was not associated with tacrolimus -related nephrotoxicity ."
    (out,), counts = _run([_doc(text, [("CYP3A5", "Gene")])], onto, nlp)
    assert ("Polymorphism", "CYP3A5 genetic polymorphism", 1, "compound+adjacent") in _composites(out)
    assert counts["composites_adjacent"] == 1
    text = "We genotyped epidermal growth factor receptor ( EGFR ) gene mutations in tumours ."
    (out,), _ = _run([_doc(text, [("epidermal growth factor receptor", "Gene"), ("EGFR", "Gene")])], onto, nlp)
    assert _composites(out) == [("Mutation", "epidermal growth factor receptor ( EGFR ) gene mutations", 1,
                                 "compound+adjacent")]
    text = "Bisacurone dose-dependently inhibited the expression of VCAM-1 ."
    (out,), _ = _run([_doc(text, [("Bisacurone", "Chemical")])], onto, nlp)
    assert all("dose" not in c[1] for c in _composites(out))


def test_location_qualifiers_of_gene_function_are_taken_in(onto: Ontology, nlp: Language) -> None:
    text = "We measured the cytosolic accumulation of Nrf2 in cells."
    (out,), _ = _run([_doc(text, [("Nrf2", "Gene")])], onto, nlp)
    assert _composites(out) == [("GeneFunction", "cytosolic accumulation of Nrf2", 1, "prep:of")]


def test_key_entities_are_kept_nested(onto: Ontology, nlp: Language) -> None:
    text = "Patients with high warfarin sensitivity needed lower doses."
    (out,), _ = _run([_doc(text, [("warfarin", "Chemical")])], onto, nlp)
    key = next(a for a in out.annotations if a.source == "pubtator")
    comp = next(a for a in out.annotations if a.source == "ontology")
    assert key.covered(text) == "warfarin"
    assert comp.key == key.fragments
    assert comp.start <= key.start and key.end <= comp.end


def test_variant_composite_absorbs_the_variant(onto: Ontology, nlp: Language) -> None:
    text = "The ABCB1 C3435T polymorphism was associated with response."
    (out,), counts = _run([_doc(text, [("ABCB1", "Gene"), ("C3435T", "Mutation")])], onto, nlp)
    assert _composites(out) == [("Polymorphism", "ABCB1 C3435T polymorphism", 1, "nmod")]
    remaining = {(a.type, a.covered(text)) for a in out.annotations if a.source == "pubtator"}
    assert remaining == {("Gene", "ABCB1")}  # the gene stays, the bare variant is absorbed
    assert counts["absorbed_Mutation"] == 1


def test_disease_subtype_replaces_the_bare_disease(onto: Ontology, nlp: Language) -> None:
    text = "Patients with metastatic colorectal cancer were included."
    (out,), counts = _run([_doc(text, [("colorectal cancer", "Disease")])], onto, nlp)
    assert [(a.type, a.covered(text)) for a in out.annotations] == [("DiseaseSubtype", "metastatic colorectal cancer")]
    assert counts["absorbed_Disease"] == 1


def test_drug_induced_effect_replaces_the_disease_it_names(onto: Ontology, nlp: Language) -> None:
    text = "Ribavirin-induced anemia was frequent."
    (out,), counts = _run([_doc(text, [("Ribavirin", "Chemical"), ("anemia", "Disease")])], onto, nlp)
    assert [(a.type, a.covered(text)) for a in out.annotations if a.covered(text) == "anemia"] == [
        ("AdverseEvent", "anemia")]
    assert counts["composites_effect"] == 1 and counts["absorbed_Disease"] == 1


@pytest.mark.parametrize(("text", "keys", "expected"), [
    ("COMT inhibition by entacapone was measured.", [("COMT", "Gene"), ("entacapone", "Chemical")],
     [("DrugResponse", "COMT inhibition by entacapone", 1, "prep:by+both"),
      ("DrugResponse", "inhibition by entacapone", 1, "prep:by")]),
    ("TNF-alpha-mediated expression of VCAM-1 was high.", [("TNF-alpha", "Gene"), ("VCAM-1", "Gene")],
     [("GeneFunction", "TNF-alpha-mediated expression of VCAM-1", 1, "linker:mediate+both"),
      ("GeneFunction", "expression of VCAM-1", 1, "prep:of")]),
])
def test_a_term_extended_from_both_sides_is_one_composite(text: str, keys: list[tuple[str, str]],
                                                          expected: list[tuple[str, str, int, str]],
                                                          onto: Ontology, nlp: Language) -> None:
    (out,), counts = _run([_doc(text, keys)], onto, nlp)
    assert _composites(out) == expected
    assert counts["composites_both"] == 1


def test_a_long_key_entity_does_not_make_its_composite_too_long(onto: Ontology, nlp: Language) -> None:
    text = "Polymorphisms in 3-hydroxy-3-methylglutaryl-coenzyme A reductase ( HMGCR ) were studied."
    keys = [("3-hydroxy-3-methylglutaryl-coenzyme A reductase", "Gene"), ("HMGCR", "Gene")]
    (out,), counts = _run([_doc(text, keys)], onto, nlp)
    assert ("Polymorphism", "Polymorphisms in 3-hydroxy-3-methylglutaryl-coenzyme A reductase ( HMGCR )", 1,
            "prep:in") in _composites(out)
    assert counts["composites_too_long"] == 0


def test_a_standalone_term_takes_a_key_entity_inside_it(onto: Ontology, nlp: Language) -> None:
    text = "Tumor growth was slower, and tumor was smaller."
    (out,), _ = _run([_doc(text, [("Tumor", "Disease"), ("tumor", "Disease")])], onto, nlp)
    assert _composites(out) == [("CellularPhenotype", "Tumor growth", 1, "standalone")]
    assert sorted(a.covered(text) for a in out.annotations if a.source != "ontology") == ["Tumor", "tumor"]


def test_genetically_defined_disease_replaces_the_bare_disease(onto: Ontology, nlp: Language) -> None:
    text = "EGFR-mutated NSCLC responds to gefitinib."
    (out,), counts = _run([_doc(text, [("EGFR", "Gene"), ("NSCLC", "Disease")])], onto, nlp)
    assert sorted(a.covered(text) for a in out.annotations if a.source != "ontology") == ["EGFR"]
    assert counts["absorbed_Disease"] == 1


def test_anti_before_a_gene_names_a_drug(onto: Ontology, nlp: Language) -> None:
    text = "Mice received anti- LFA-1 or anti-CD40L, and anti-inflammatory EGFR inhibitors were not given."
    keys = [("LFA-1", "Gene"), ("CD40L", "Gene"), ("EGFR", "Gene")]
    (out,), _ = _run([_doc(text, keys)], onto, nlp)
    assert [c for c in _composites(out) if c[3] == "prefix:anti"] == [
        ("GeneTargetedDrug", "anti- LFA-1", 1, "prefix:anti"), ("GeneTargetedDrug", "anti-CD40L", 1, "prefix:anti")]


def test_a_chemical_in_a_body_fluid_is_its_level(onto: Ontology, nlp: Language) -> None:
    text = "Serum calcium was measured."
    (out,), _ = _run([_doc(text, [("calcium", "Chemical")])], onto, nlp)
    assert _composites(out) == [("BodyFluidLevel", "Serum calcium", 1, "governs:compound")]


def test_gene_linked_composite_has_no_separate_effect(onto: Ontology, nlp: Language) -> None:
    (out,), counts = _run([_doc("TNF-mediated expression was high.", [("TNF", "Gene")])], onto, nlp)
    assert counts["composites_effect"] == 0


def test_genotype_notation_typed_gene_acts_as_variant(onto: Ontology, nlp: Language) -> None:
    text = "A2/A2 genotype carriers had higher levels."
    (out,), _ = _run([_doc(text, [("A2/A2", "Gene")])], onto, nlp)
    assert _composites(out) == [("Genotype", "A2/A2 genotype", 1, "nmod+sibling")]
    assert not [a for a in out.annotations if a.source == "pubtator"]


def test_document_relative_offsets_over_several_sentences(onto: Ontology, nlp: Language) -> None:
    title = "Warfarin pharmacogenetics."
    abstract = "Warfarin was given. The clearance of tacrolimus was reduced."
    text = title + "\n" + abstract
    s2 = text.index("The clearance")
    doc = Document(
        "42", title, text,
        sentences=(Sentence(0, len(title)), Sentence(len(title) + 1, s2 - 1), Sentence(s2, len(text))),
        annotations=(_key(text, "tacrolimus", "Chemical"), _key(text, "Warfarin", "Chemical")),
    )
    (out,), counts = _run([doc], onto, nlp)
    comp = next(a for a in out.annotations if a.source == "ontology")
    assert comp.covered(text) == "clearance of tacrolimus"
    assert comp.fragments == ((text.index("clearance"), text.index(" was reduced")),)
    assert counts["sentences_parsed"] == 3 and counts["key_entities"] == 2
    assert [a.sort_key() for a in out.annotations] == sorted(a.sort_key() for a in out.annotations)


def test_bad_sentences_are_skipped_and_counted(onto: Ontology, nlp: Language) -> None:
    long_text = " ".join(["warfarin sensitivity"] * 300)
    docs = [
        Document("1", "   ", "   ", sentences=(Sentence(0, 3),)),
        _doc(long_text, [("warfarin", "Chemical")], pmid="2"),
    ]
    out, counts = _run(docs, onto, nlp)
    assert [d.pmid for d in out] == ["1", "2"]
    assert counts["skipped_empty"] == 1 and counts["skipped_too_long"] == 1
    assert counts["sentences_parsed"] == 0
    assert counts["key_entities_in_skipped_sentence"] == 1
    assert out[1].annotations == docs[1].annotations  # untouched, nothing lost


def test_misaligned_key_is_counted_not_widened(onto: Ontology, nlp: Language) -> None:
    text = "Patients with high warfarin sensitivity needed lower doses."
    start = text.index("warfarin")
    bad = Annotation(((start + 2, start + 6),), "Chemical", "pubtator", text="rfar")  # inside a word
    doc = Document("1", text, text, sentences=(Sentence(0, len(text)),), annotations=(bad,))
    (out,), counts = _run([doc], onto, nlp)
    assert counts["misaligned"] == 1
    assert out.annotations == (bad,)


def test_subtoken_key_is_expanded_for_syntax_but_clipped(onto: Ontology, nlp: Language) -> None:
    text = "The CYP2C9+VKORC1 genotype predicted the dose."
    doc = _doc(text, [("VKORC1", "Gene")])
    (out,), counts = _run([doc], onto, nlp)
    assert counts["key_subtoken_expanded"] == 1
    assert _composites(out) == [("Genotype", "VKORC1 genotype", 1, "compound")]


def test_key_before_sentence_final_period_inside_token(onto: Ontology, nlp: Language) -> None:
    # spaCy keeps "Jun." whole at the end of a sentence: the period is clearly another sub-token
    text = "We measured the expression of c-Jun."
    (out,), counts = _run([_doc(text, [("c-Jun", "Gene")])], onto, nlp)
    assert counts["key_subtoken_expanded"] == 1 and counts["misaligned"] == 0
    assert _composites(out) == [("GeneFunction", "expression of c-Jun", 1, "prep:of")]


def test_key_crossing_sentences_is_counted(onto: Ontology, nlp: Language) -> None:
    text = "Warfarin was given. Sensitivity was high."
    cross = Annotation(((9, 25),), "Chemical", "pubtator", text=text[9:25])
    doc = Document("1", text, text, sentences=(Sentence(0, 19), Sentence(20, len(text))), annotations=(cross,))
    (out,), counts = _run([doc], onto, nlp)
    assert counts["key_entities_crossing_sentence"] == 1
    assert out.annotations == (cross,)


def test_streams_in_order_with_small_batches(onto: Ontology, nlp: Language) -> None:
    docs = [_doc("Resistance to imatinib was observed.", [("imatinib", "Chemical")], pmid=str(i)) for i in range(7)]
    out, counts = _run(docs, onto, nlp, batch_size=2)
    assert [d.pmid for d in out] == [str(i) for i in range(7)]
    assert counts["documents"] == 7 and counts["composites_DrugResistance"] == 7


def test_document_without_sentences_is_parsed_whole(onto: Ontology, nlp: Language) -> None:
    text = "Resistance to imatinib was observed."
    doc = Document("1", text, text, annotations=(_key(text, "imatinib", "Chemical"),))
    (out,), counts = _run([doc], onto, nlp)
    assert counts["documents_without_sentences"] == 1
    assert _composites(out) == [("DrugResistance", "Resistance to imatinib", 1, "prep:to")]


def test_composites_are_never_keys(onto: Ontology, nlp: Language) -> None:
    text = "Resistance to imatinib was observed."
    (once,), _ = _run([_doc(text, [("imatinib", "Chemical")])], onto, nlp)
    (twice,), _ = _run([once], onto, nlp)
    assert twice.annotations == once.annotations


def test_extend_from_files_equals_extension_with_the_loaded_files(onto: Ontology, nlp: Language) -> None:
    from pipeline.nlp.extend import extend_from_files
    from pipeline.nlp.ontology import DEFAULT_ONTOLOGY
    from pipeline.nlp.spacy_models import DEFAULT_MODEL

    text, keys, _ = CASES[0]
    expected, expected_counts = _run([_doc(text, keys)], onto, nlp)
    counts: Counter[str] = Counter()
    found = list(extend_from_files([_doc(text, keys)], counts, ontology_path=DEFAULT_ONTOLOGY, model=DEFAULT_MODEL))
    assert found == expected and counts == expected_counts and _composites(found[0])


def test_short_form_of_a_key_entity_gets_its_annotation(onto: Ontology, nlp: Language) -> None:
    text = "Norepinephrine ( NE ) regulates the release of CRH ."
    key = dataclasses.replace(_key(text, "Norepinephrine", "Chemical"), identifier="MESH:D009638")
    (out,), counts = _run([Document("1", text, text, sentences=(Sentence(0, len(text)),), annotations=(key,))],
                          onto, nlp)
    short = [a for a in out.annotations if a.covered(text) == "NE"]
    assert [(a.type, a.source, a.identifier, a.fragments) for a in short] == [
        ("Chemical", "pubtator", "MESH:D009638", ((17, 19),))]
    assert counts["short_forms"] == 1 and counts["short_forms_composite"] == 0


def test_short_form_of_a_composite_is_a_composite_without_key(onto: Ontology, nlp: Language) -> None:
    text = "Patients with high warfarin sensitivity ( WS ) needed lower doses."
    (out,), counts = _run([_doc(text, [("warfarin", "Chemical")])], onto, nlp)
    assert ("DrugSensitivity", "WS", 1, "abbreviation") in _composites(out)
    short = next(a for a in out.annotations if a.covered(text) == "WS")
    assert short.key is None and short.ontology_class == "DrugSensitivity"
    assert counts["short_forms"] == counts["short_forms_composite"] == 1


@pytest.mark.parametrize(("text", "keys"), [
    # already annotated: the source's own annotation stays the only one
    ("Norepinephrine ( NE ) regulates the release of CRH .", [("Norepinephrine", "Chemical"), ("NE", "Gene")]),
    # an annotation inside the short form says what part of it is
    ("Serotonin ( SER-T ) was measured .", [("Serotonin", "Chemical"), ("SER", "Chemical")]),
    # no word of the long form starts with the short form's first letter: a brand name, not a short form
    ("Patients took sorafenib ( Nexavar ) daily .", [("sorafenib", "Chemical")]),
])
def test_no_short_form_where_the_text_or_an_annotation_says_otherwise(
        text: str, keys: list[tuple[str, str]], onto: Ontology, nlp: Language) -> None:
    doc = _doc(text, keys)
    (out,), counts = _run([doc], onto, nlp)
    assert counts["short_forms"] == 0
    assert {a for a in out.annotations if a.source == "pubtator"} == set(doc.annotations)
