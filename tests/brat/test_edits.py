"""Tests of the edit model (pipeline.brat.edits), one hand-made case per rule.

Covers: pipeline.brat.edits, pipeline.brat.standoff, pipeline.campaign.conf, pipeline.campaign.layout
"""

from __future__ import annotations

from pipeline.brat.edits import (
    UNCOUNTED_TYPES,
    Edits,
    base_type,
    collection_edits,
    id_order,
    match_entities,
    sentence_edits,
    without_relations,
)
from pipeline.brat.standoff import BratDocument, parse_ann

TEXT = "CYP2D6 poor metabolizers had higher plasma levels of codeine and morphine."


def doc(ann: str) -> BratDocument:
    # " | " stands for a tab; a relation line ends with one
    rows = [line.strip() for line in ann.strip().splitlines()]
    lines = "\n".join((row[:-2] + " | " if row.endswith(" |") else row).replace(" | ", "\t") for row in rows)
    parsed, issues = parse_ann("1_1", TEXT, lines + "\n" if lines else "")
    assert not issues
    return parsed


def edits(proposed: str, final: str) -> Edits:
    return sentence_edits(doc(proposed), doc(final))


def test_identical_documents_cost_nothing() -> None:
    ann = """
        T1 | Gene_or_protein 0 6 | CYP2D6
        T2 | Chemical 53 60 | codeine
        R1 | influences Arg1:T1 Arg2:T2 |
    """
    e = edits(ann, ann)
    assert e.total == 0
    assert (e.entity_keep, e.relation_keep) == (2, 1)


def test_empty_proposal_costs_one_add_per_fragment_and_per_relation() -> None:
    final = """
        T1 | Gene_or_protein 0 6 | CYP2D6
        T2 | Pharmacokinetic_phenotype 28 35;36 49 | higher plasma levels
        R1 | influences Arg1:T1 Arg2:T2 |
    """
    e = edits("", final)
    assert e.entity_add == 3  # one fragment plus two
    assert e.relation_add == 1
    assert (e.entity_edits, e.relation_edits, e.total) == (3, 1, 4)


def test_same_fragments_other_type_is_one_retype() -> None:
    e = edits("T1 | Chemical 0 6 | CYP2D6", "T1 | Gene_or_protein 0 6 | CYP2D6")
    assert (e.entity_retype, e.entity_edits) == (1, 1)


def test_exact_match_beats_an_earlier_retype_candidate() -> None:
    # T1 would retype-match F1 in pass 2, but pass 1 gives T2 the exact F1 first; T1 then goes to F2
    proposed = """
        T1 | Chemical 0 6 | CYP2D6
        T2 | Gene_or_protein 0 6 | CYP2D6
    """
    final = """
        T5 | Gene_or_protein 0 6 | CYP2D6
        T6 | Chemical 0 6 | CYP2D6
    """
    assert match_entities(doc(proposed).textbounds, doc(final).textbounds) == {"T1": "T6", "T2": "T5"}
    assert edits(proposed, final).entity_edits == 0


def test_overlap_is_a_move_plus_one_when_the_type_differs() -> None:
    e = edits("T1 | Gene_or_protein 0 11 | CYP2D6 poor", "T1 | Gene_or_protein 0 6 | CYP2D6")
    assert (e.entity_move, e.entity_move_retype, e.entity_edits) == (1, 0, 1)
    e = edits("T1 | Chemical 0 11 | CYP2D6 poor", "T1 | Gene_or_protein 0 6 | CYP2D6")
    assert (e.entity_move, e.entity_move_retype, e.entity_edits) == (1, 1, 2)


def test_one_shared_character_is_an_overlap_and_touching_is_not() -> None:
    assert edits("T1 | Chemical 5 8 | 6 p", "T1 | Chemical 0 6 | CYP2D6").entity_move == 1
    e = edits("T1 | Chemical 6 11 | poor", "T1 | Chemical 0 6 | CYP2D6")
    assert (e.entity_move, e.entity_delete, e.entity_add) == (0, 1, 1)


def test_overlap_prefers_the_same_type_over_id_order() -> None:
    proposed = "T1 | Chemical 0 24 | CYP2D6 poor metabolizers"
    final = """
        T1 | Gene_or_protein 0 6 | CYP2D6
        T2 | Chemical 7 24 | poor metabolizers
    """
    assert match_entities(doc(proposed).textbounds, doc(final).textbounds) == {"T1": "T2"}
    e = edits(proposed, final)
    assert (e.entity_move, e.entity_move_retype, e.entity_add) == (1, 0, 1)


def test_proposals_are_taken_in_numeric_id_order() -> None:
    # T2 comes before T10, so T2 gets the one overlapping final entity
    proposed = """
        T10 | Chemical 0 11 | CYP2D6 poor
        T2 | Chemical 0 3 | CYP
    """
    final = "T1 | Chemical 0 6 | CYP2D6"
    assert match_entities(doc(proposed).textbounds, doc(final).textbounds) == {"T2": "T1"}
    assert id_order("T2") < id_order("T10")


def test_unmatched_proposal_is_a_delete_and_the_add_counts_even_beside_a_matched_overlap() -> None:
    proposed = "T1 | Chemical 0 24 | CYP2D6 poor metabolizers"
    final = """
        T1 | Chemical 0 6 | CYP2D6
        T2 | Chemical 7 24 | poor metabolizers
    """
    e = edits(proposed, final)
    # T1 moves onto the first final entity; the second, though overlapped by T1, is an add
    assert (e.entity_move, e.entity_add, e.entity_delete) == (1, 1, 0)
    e = edits("T1 | Chemical 53 60 | codeine\nT2 | Chemical 65 73 | morphine", "T1 | Chemical 53 60 | codeine")
    assert (e.entity_keep, e.entity_delete, e.entity_edits) == (1, 1, 1)


def test_marks_are_not_counted() -> None:
    proposed = "T1 | Chemical 53 60 | codeine"
    final = """
        T1 | Chemical 53 60 | codeine
        T2 | Done 0 6 | CYP2D6
        T3 | Discard 7 11 | poor
        T4 | Reason 12 24 | metabolizers
    """
    assert edits(proposed, final).total == 0
    assert edits(final, proposed).total == 0
    assert {"Done", "Discard", "Reason"} == UNCOUNTED_TYPES


def test_marks_name_the_campaign_types() -> None:
    from pipeline.campaign.conf import CAMPAIGN_DONE_TYPE
    from pipeline.campaign.layout import DISCARD_REASON, DISCARD_TYPE

    assert {CAMPAIGN_DONE_TYPE, DISCARD_TYPE, DISCARD_REASON} == UNCOUNTED_TYPES


def test_disputed_prefix_is_ignored_on_entities_and_relations() -> None:
    from pipeline.campaign.conf import DISPUTED_PREFIX

    assert base_type(DISPUTED_PREFIX + "influences") == "influences"
    proposed = """
        T1 | Gene_or_protein 0 6 | CYP2D6
        T2 | Chemical 53 60 | codeine
        R1 | influences Arg1:T1 Arg2:T2 |
    """
    final = """
        T1 | Disputed_Gene_or_protein 0 6 | CYP2D6
        T2 | Chemical 53 60 | codeine
        R1 | Disputed_influences Arg1:T1 Arg2:T2 |
    """
    assert edits(proposed, final).total == 0


ENTS = """
    T1 | Gene_or_protein 0 6 | CYP2D6
    T2 | Chemical 53 60 | codeine
    T3 | Chemical 65 73 | morphine
"""


def test_relation_of_another_type_is_a_retype() -> None:
    e = edits(ENTS + "R1 | influences Arg1:T1 Arg2:T2 |", ENTS + "R1 | isAssociatedWith Arg1:T1 Arg2:T2 |")
    assert (e.relation_retype, e.relation_edits) == (1, 1)


def test_reversed_relation_costs_a_delete_and_an_add() -> None:
    e = edits(ENTS + "R1 | influences Arg1:T2 Arg2:T1 |", ENTS + "R1 | influences Arg1:T1 Arg2:T2 |")
    assert (e.relation_delete, e.relation_add, e.relation_edits) == (1, 1, 2)


def test_relation_arguments_are_mapped_through_the_entity_matching() -> None:
    proposed = """
        T7 | Gene_or_protein 0 11 | CYP2D6 poor
        T9 | Chemical 53 60 | codeine
        R4 | influences Arg1:T7 Arg2:T9 |
    """
    final = """
        T1 | Gene_or_protein 0 6 | CYP2D6
        T2 | Chemical 53 60 | codeine
        R1 | influences Arg1:T1 Arg2:T2 |
    """
    e = edits(proposed, final)
    assert (e.entity_move, e.relation_keep, e.relation_edits) == (1, 1, 0)


def test_relation_with_an_unmatched_argument_costs_nothing() -> None:
    proposed = ENTS + "T4 | Chemical 28 34 | higher\nR1 | influences Arg1:T1 Arg2:T4 |"
    e = edits(proposed, ENTS)
    assert (e.entity_delete, e.relation_delete, e.relation_edits) == (1, 0, 0)


def test_matched_proposal_with_no_final_relation_is_a_delete() -> None:
    e = edits(ENTS + "R1 | influences Arg1:T1 Arg2:T2 |", ENTS)
    assert (e.relation_delete, e.relation_edits) == (1, 1)


def test_relations_pair_one_to_one_and_prefer_the_same_type() -> None:
    proposed = ENTS + "R1 | isAssociatedWith Arg1:T1 Arg2:T2 |\nR2 | influences Arg1:T1 Arg2:T2 |"
    final = ENTS + "R1 | influences Arg1:T1 Arg2:T2 |"
    e = edits(proposed, final)
    # R2 keeps the one final relation; R1 has none left in its direction
    assert (e.relation_keep, e.relation_retype, e.relation_delete) == (1, 0, 1)
    e = edits(ENTS + "R1 | influences Arg1:T1 Arg2:T2 |", final + "\nR2 | isAssociatedWith Arg1:T1 Arg2:T2 |")
    assert (e.relation_keep, e.relation_add) == (1, 1)


def test_modality_differences_count_in_either_direction() -> None:
    rel = ENTS + "R1 | influences Arg1:T1 Arg2:T2 |"
    with_neg = rel + "\n#1 | AnnotatorNotes R1 | neg"
    assert edits(rel, with_neg).modality == 1
    assert edits(with_neg, rel).modality == 1
    assert edits(with_neg, rel + "\n#1 | AnnotatorNotes R1 | not because of x").modality == 0
    assert edits(with_neg, rel + "\n#1 | AnnotatorNotes R1 | hyp").modality == 1
    # free text is not modality: "hypertension" is a word, "| neg" is free text
    assert edits(rel, rel + "\n#1 | AnnotatorNotes R1 | hypertension").modality == 0
    assert edits(rel, rel + "\n#1 | AnnotatorNotes R1 | | neg").modality == 0


def test_modality_of_a_retyped_relation_is_counted_too() -> None:
    proposed = ENTS + "R1 | influences Arg1:T1 Arg2:T2 |"
    final = ENTS + "R1 | isAssociatedWith Arg1:T1 Arg2:T2 |\n#1 | AnnotatorNotes R1 | hyp"
    e = edits(proposed, final)
    assert (e.relation_retype, e.modality, e.relation_edits) == (1, 1, 2)


def test_an_added_relation_with_modality_costs_two() -> None:
    e = edits(ENTS, ENTS + "R1 | influences Arg1:T1 Arg2:T3 |\n#1 | AnnotatorNotes R1 | htp neg")
    assert (e.relation_add, e.modality, e.relation_edits) == (1, 1, 2)


def test_a_deleted_proposal_modality_is_not_counted() -> None:
    e = edits(ENTS + "R1 | influences Arg1:T1 Arg2:T2 |\n#1 | AnnotatorNotes R1 | neg", ENTS)
    assert (e.relation_delete, e.modality) == (1, 0)


def test_relations_on_marks_or_missing_ids_are_not_counted() -> None:
    final = ENTS + "T5 | Done 0 6 | CYP2D6\nR1 | influences Arg1:T5 Arg2:T2 |\nR2 | influences Arg1:T1 Arg2:T9 |"
    assert edits(ENTS, final).total == 0


def test_sum_and_dict() -> None:
    a = edits("", ENTS)
    b = edits(ENTS, ENTS)
    total = collection_edits([(doc(""), doc(ENTS)), (doc(ENTS), doc(ENTS))])
    assert total == a + b
    assert total.as_dict()["entity_add"] == 3
    assert total.as_dict()["total"] == 3
    assert total.as_dict()["entity_keep"] == 3


def test_without_relations_keeps_entities_and_entity_notes() -> None:
    d = doc(ENTS + "R1 | influences Arg1:T1 Arg2:T2 |\n#1 | AnnotatorNotes R1 | neg\n#2 | AnnotatorNotes T1 | a gene")
    bare = without_relations(d)
    assert bare.relations == [] and [n.id for n in bare.notes] == ["#2"]
    assert bare.textbounds == d.textbounds
    e = sentence_edits(bare, d)
    assert (e.entity_edits, e.relation_add, e.modality) == (0, 1, 1)
