"""The phase-2 merge of relations and notes, and the corpus form of relation notes at finalize: small cases.

Covers: pipeline.brat.standoff, pipeline.campaign.finalize, pipeline.campaign.merge
"""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.brat.standoff import BratDocument, dumps, parse_ann
from pipeline.campaign.finalize import relation_notes_in_corpus_form
from pipeline.campaign.merge import count_marks, marks_left, merge_versions, strip_dispute

TEXT = "Warfarin doses were lower in CYP2C9 carriers."
ENTS = "T1\tChemical 0 8\tWarfarin\nT2\tGene_or_protein 29 35\tCYP2C9\n"
REL = "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t\n"
BACK = "R2\tisAssociatedWith Arg1:T2 Arg2:T1\t\n"


def doc(ann: str) -> BratDocument:
    d, issues = parse_ann("100_1", TEXT, ann)
    assert issues == []
    return d


def merged_relations(a: str, b: str) -> tuple[list[str], dict[str, int]]:
    out, counts = merge_versions([("alice", doc(ENTS + a)), ("bob", doc(ENTS + b))])
    names = {t.id: t.text for t in out.textbounds}
    lines = [f"{r.type} {names[r.arg('Arg1') or '']}->{names[r.arg('Arg2') or '']} | "
             + " / ".join(out.notes_for(r.id)) for r in out.relations]
    triples = [(r.arg("Arg1"), r.type, r.arg("Arg2")) for r in out.relations]
    assert len(triples) == len(set(triples))  # never two relations with one (origin, type, target)
    assert not [x for x in out.attributes if x.target.startswith("R")]  # brat cannot show them
    return lines, counts


@pytest.mark.parametrize(("alice", "bob", "expected", "disputed", "modality_differs"), [
    # same relation, same modality: agreed, the modality in the note
    (REL + "#1\tAnnotatorNotes R1\tneg\n", REL + "#1\tAnnotatorNotes R1\tnot\n",
     ["isAssociatedWith Warfarin->CYP2C9 | neg"], 0, 0),
    (REL, REL, ["isAssociatedWith Warfarin->CYP2C9 | "], 0, 0),
    # a modality difference is a disagreement
    (REL + "#1\tAnnotatorNotes R1\thyp neg\n", REL + "#1\tAnnotatorNotes R1\thyp\n",
     ["Disputed_isAssociatedWith Warfarin->CYP2C9 | hyp [alice: hyp neg; bob: hyp]"], 1, 1),
    (REL, REL + "#1\tAnnotatorNotes R1\tneg\n",
     ["Disputed_isAssociatedWith Warfarin->CYP2C9 | [alice: none; bob: neg]"], 1, 1),
    # only one drew it (the other drew the reverse direction: another triple)
    (REL + "#1\tAnnotatorNotes R1\tneg\n", BACK.replace("R2", "R1"),
     ["Disputed_isAssociatedWith Warfarin->CYP2C9 | neg [alice: neg; bob: no relation]",
      "Disputed_isAssociatedWith CYP2C9->Warfarin | [alice: no relation; bob: none]"], 2, 0),
    # two identical relations in one version are one relation in brat
    (REL + REL.replace("R1", "R2"), REL, ["isAssociatedWith Warfarin->CYP2C9 | "], 0, 0),
    # free notes: kept as written when alike, with their author when not; modality apart
    (REL + "#1\tAnnotatorNotes R1\tneg | check the dose\n", REL + "#1\tAnnotatorNotes R1\tneg\n",
     ["isAssociatedWith Warfarin->CYP2C9 | neg alice: check the dose"], 0, 0),
    (REL + "#1\tAnnotatorNotes R1\t| not sure\n", REL + "#1\tAnnotatorNotes R1\t| not sure\n",
     ["isAssociatedWith Warfarin->CYP2C9 | | not sure"], 0, 0),
    # an older campaign's modality attribute is modality
    (REL + "A1\tNegated R1\n", REL + "#1\tAnnotatorNotes R1\tneg\n", ["isAssociatedWith Warfarin->CYP2C9 | neg"],
     0, 0),
])
def test_relations_merge(alice: str, bob: str, expected: list[str], disputed: int, modality_differs: int) -> None:
    lines, counts = merged_relations(alice, bob)
    assert lines == expected
    assert (counts["relations_marked"], counts["relations_modality_differs"]) == (disputed, modality_differs)


def test_composite_is_display_only_and_notes_are_one_per_entity() -> None:
    comp = "T3\tGenomic_variation 29 44\tCYP2C9 carriers\n"
    a = doc(ENTS + comp + "A1\tComposite T3\n#1\tAnnotatorNotes T1\tbrand name\n")
    b = doc(ENTS + comp + "#1\tAnnotatorNotes T1\tgeneric\n#2\tAnnotatorNotes T1\tsee title\n")
    out, counts = merge_versions([("alice", a), ("bob", b)])
    assert counts["entities_marked"] == 0 and count_marks(out) == 0
    assert [(x.type, x.target) for x in out.attributes] == [("Composite", "T3")]
    assert [(q.target, q.text) for q in out.notes] == [("T1", "alice: brand name; bob: generic; see title")]


def test_marks_left_name_what_is_left() -> None:
    d = doc(ENTS + "R1\tDisputed_influences Arg1:T2 Arg2:T1\t\nA1\tDisagreement T1 alice\n")
    assert [m[2] for m in marks_left(d)] == [
        "T1 (Chemical) still carries Disagreement=alice: remove the attribute to accept it or delete the entity to "
        "reject it",
        "R1 (Disputed_influences) is still disputed: retype it to influences to accept it or delete it to reject it",
    ]


@pytest.mark.parametrize(("free", "kept", "removed"), [
    ("[alice: neg; bob: no relation]", "", 1),
    ("[alice: hyp neg; bob: none]; alice: check", "alice: check", 1),
    ("[sic] as written", "[sic] as written", 0),
    ("[alice: maybe]", "[alice: maybe]", 0),
])
def test_strip_dispute(free: str, kept: str, removed: int) -> None:
    assert strip_dispute(free) == (kept, removed)


@pytest.mark.parametrize(("ann", "notes"), [
    # a single note in the grammar is kept as written (PGxCorpus has htp, not)
    (REL + "#1\tAnnotatorNotes R1\thtp\n", ["#1\tAnnotatorNotes R1\thtp"]),
    # an older campaign's attributes become note words; several notes become one
    (REL + "A1\tNegated R1\nA2\tHypothetical R1\n", ["#1\tAnnotatorNotes R1\thyp neg"]),
    (REL + "A1\tNegated R1\n#1\tAnnotatorNotes R1\tsee abstract\n", ["#1\tAnnotatorNotes R1\tneg see abstract"]),
    (REL + "#1\tAnnotatorNotes R1\tneg\n#2\tAnnotatorNotes R1\thyp\n", ["#1\tAnnotatorNotes R1\thyp neg"]),
    # the merge's who-said-what text goes
    (REL + "#1\tAnnotatorNotes R1\tneg [alice: neg; bob: no relation]\n", ["#1\tAnnotatorNotes R1\tneg"]),
    (REL + "#1\tAnnotatorNotes R1\t[alice: neg; bob: none]\n", []),
])
def test_relation_notes_in_corpus_form(ann: str, notes: list[str]) -> None:
    out = relation_notes_in_corpus_form(doc(ENTS + ann), Counter())
    assert not out.attributes
    assert [line for line in dumps(out).splitlines() if line.startswith("#")] == notes
