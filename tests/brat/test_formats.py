"""The format table: features found again by a reader, decided per feature.

Covers: pipeline.brat.formats, pipeline.brat.spacy_docbin, pipeline.brat.standoff
"""

from __future__ import annotations

import pytest

from pipeline.brat.formats import FEATURES, declare, decode_bio, inventory
from pipeline.brat.standoff import parse_ann


@pytest.mark.parametrize(("labels", "spans"), [
    (["B-A", "I-A", "O", "B-B"], [((0, 2), "A"), ((3, 4), "B")]),
    (["B-A", "B-A"], [((0, 1), "A"), ((1, 2), "A")]),
    (["O", "I-A", "I-A"], [((1, 3), "A")]),  # lenient: I- after O opens a span
    (["B-A", "I-B"], [((0, 1), "A"), ((1, 2), "B")]),
])
def test_decode_bio(labels: list[str], spans: list[tuple[tuple[int, int], str]]) -> None:
    tokens = [(i, i + 1) for i in range(len(labels))]
    assert decode_bio(tokens, labels) == spans


def test_declare_kept_lost_partly_and_none() -> None:
    ann = ("T1\tChemical 0 1\ta\nT2\tChemical 0 3;4 5\ta b c\nT3\tChemical 0 3\ta b\n"
           "R1\ttreats Arg1:T1 Arg2:T3\t\n#1\tAnnotatorNotes R1\thyp | in cells\n")
    full, _ = parse_ann("1_1", "a b c", ann)
    entities_only, _ = parse_ann("1_1", "a b c", "T1\tChemical 0 1\ta\nT3\tChemical 0 3\ta b\n")
    ref = inventory([full])
    assert ref["modality"] and ref["notes"] == {(("1_1", "treats", (("Arg1", ("1_1", ((0, 1),), "Chemical")),
                                                                    ("Arg2", ("1_1", ((0, 3),), "Chemical")))),
                                                 "in cells")}
    rows = declare(ref, inventory([entities_only]), {"relations:lost": "no relations"})
    assert set(rows) == set(FEATURES)
    assert rows["entities"]["status"] == "partly kept: 2 of 3" and rows["entities"]["lost"] == 1
    assert rows["discontiguous"]["status"] == "lost"
    assert rows["nested"]["status"] == "partly kept: 1 of 2"  # T3 and T2 hold T1; T2 is gone
    assert rows["relations"] == {"annotated": 1, "kept": 0, "lost": 1, "status": "lost", "how": "no relations"}
    assert rows["normalizations"]["status"] == "none annotated"
