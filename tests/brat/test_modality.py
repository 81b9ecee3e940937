"""The relation modality and note grammar (pipeline.brat.modality).

Covers: pipeline.brat.modality
"""

from __future__ import annotations

import pytest

from pipeline.brat.modality import (
    HYPOTHETICAL,
    NEGATED,
    format_note,
    join_notes,
    modality_label,
    parse_note,
)

H, N = HYPOTHETICAL, NEGATED


@pytest.mark.parametrize(
    ("text", "modality", "free"),
    [
        ("hyp", {H}, ""),
        ("neg", {N}, ""),
        ("hyp neg", {H, N}, ""),
        ("htp neg", {H, N}, ""),
        ("hypo", {H}, ""),
        ("NOT", {N}, ""),
        ("  neg  ", {N}, ""),
        ("hypertension", set(), "hypertension"),
        ("negative result", set(), "negative result"),
        ("neg direction unclear", {N}, "direction unclear"),
        ("neg | not sure", {N}, "not sure"),
        ("| hyp is my guess", set(), "hyp is my guess"),
        ("in BAFs :Breast Adipose Fibroblastes", set(), "in BAFs :Breast Adipose Fibroblastes"),
        ("", set(), ""),
        ("|", set(), ""),
    ],
)
def test_parse_note(text: str, modality: set[str], free: str) -> None:
    note = parse_note(text)
    assert note.modality == frozenset(modality)
    assert note.free == free


@pytest.mark.parametrize(
    ("modality", "free", "text"),
    [
        (set(), "", ""),
        ({N}, "", "neg"),
        ({N, H}, "", "hyp neg"),
        ({H}, "weak evidence", "hyp weak evidence"),
        (set(), "not sure", "| not sure"),
        ({N}, "hyp? ask", "neg hyp? ask"),
        ({N}, "hyp ask", "neg | hyp ask"),
        (set(), "line\nbreak\ttab", "line break tab"),
    ],
)
def test_format_note_round_trips(modality: set[str], free: str, text: str) -> None:
    written = format_note(modality, free)
    assert written == text
    back = parse_note(written)
    assert back.modality == frozenset(modality)
    assert back.free == " ".join(free.split())


def test_labels_and_unknown_modality() -> None:
    assert modality_label([]) == "none"
    assert modality_label([N, H]) == "Hypothetical+Negated"
    assert parse_note("neg hyp").label == "Hypothetical+Negated"
    with pytest.raises(ValueError, match="unknown modality"):
        format_note({"Speculated"})


def test_join_notes_folds_several_notes() -> None:
    joined = join_notes(["hyp", "neg check", "check", "other"])
    assert joined.modality == frozenset({H, N})
    assert joined.free == "check; other"
