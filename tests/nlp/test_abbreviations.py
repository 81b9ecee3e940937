"""Abbreviation definitions: scispaCy's Schwartz-Hearst detector, the built-in rule, and their use by the annotator.

Covers: pipeline.nlp.abbreviations, pipeline.nlp.local_annotator
"""

from __future__ import annotations

import pytest

from pipeline.nlp import abbreviations as abbr
from pipeline.nlp.local_annotator import LocalAnnotator


def pairs(text: str, found: list[abbr.Abbreviation]) -> list[tuple[str, str]]:
    return [a.texts(text) for a in found]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Spinal and bulbar muscular atrophy (SBMA) is an X-linked disorder.",
            [("SBMA", "Spinal and bulbar muscular atrophy")],
        ),
        # Parentheses are split off even when a hyphen follows: "(LPS)-mediated" is not one token.
        ("Bacterial lipopolysaccharide (LPS)-mediated activation.", [("LPS", "lipopolysaccharide")]),
        # Hyphenated long forms stay whole words (scispaCy's tokenizer), so they fit the long-form window.
        ("Cells were treated with N-acetyl-L-cysteine (NAC) for 2 h.", [("NAC", "N-acetyl-L-cysteine")]),
        # Short form first, long form (more than three words) in parentheses.
        (
            "We genotyped MTHFR (methylene tetrahydrofolate reductase enzyme) in 120 patients.",
            [("MTHFR", "methylene tetrahydrofolate reductase enzyme")],
        ),
        ("Patients on warfarin (see above) bled.", []),
        ("No parenthesis at all: warfarin and CYP2C9.", []),
    ],
)
def test_find_abbreviations(text: str, expected: list[tuple[str, str]]) -> None:
    assert pairs(text, abbr.find_abbreviations(text)) == expected


def test_offsets_are_half_open_and_relative_to_the_text() -> None:
    text = "Methotrexate in leukaemia\nHigh-dose methotrexate (MTX) was given; MTX levels were measured."
    (found,) = abbr.find_abbreviations(text)
    assert found.short == (text.index("MTX"), text.index("MTX") + 3)  # the definition only, not the later use
    assert found.long == (text.index("methotrexate"), text.index(" (MTX"))
    assert text[found.short[0] : found.short[1]] == "MTX"


def test_builtin_rule() -> None:
    text = "methotrexate ( MTX ) and tumor (ABC) and warfarin (W)"
    entities = [(0, 12), (25, 30), (41, 49)]
    assert pairs(text, abbr.builtin_definitions(text, entities)) == [("MTX", "methotrexate")]


def test_scispacy_definitions_are_anchored_on_entities() -> None:
    text = "p38 mitogen-activated protein kinase (MAPK) and HMG-CoA reductase (HMGCR) and aspirin (ASA)."
    mapk = (0, text.index(" (MAPK"))
    reductase = (text.index("reductase"), text.index(" (HMGCR"))
    # The entity contains the Schwartz-Hearst long form "mitogen-activated protein kinase" and ends with it.
    # "reductase" alone explains no "HMGC": not a definition of that entity.  ASA has no entity.
    found = abbr.scispacy_definitions(text, [mapk, reductase])
    assert pairs(text, found) == [("MAPK", "p38 mitogen-activated protein kinase")]


def test_the_detectors_differ_where_the_benchmark_says() -> None:
    # Schwartz-Hearst needs the short form's letters in order in the long form, and at least half of its
    # characters alphabetic; the built-in rule only checks the first letter.
    text = "Myotonic dystrophy (DM) and interleukin-10 (IL-10) and tumor necrosis factor alpha (TNF alpha)."
    entities = [(0, 18), (28, 42), (text.index("tumor"), text.index(" (TNF"))]
    assert pairs(text, abbr.entity_definitions(text, entities, "builtin")) == [
        ("DM", "Myotonic dystrophy"),
        ("IL-10", "interleukin-10"),
    ]
    assert pairs(text, abbr.entity_definitions(text, entities, "scispacy")) == [
        ("TNF alpha", "tumor necrosis factor alpha"),
    ]
    assert pairs(text, abbr.entity_definitions(text, entities, "union")) == [
        ("DM", "Myotonic dystrophy"),
        ("IL-10", "interleukin-10"),
        ("TNF alpha", "tumor necrosis factor alpha"),
    ]
    with pytest.raises(ValueError, match="unknown abbreviation detector 'hearst'"):
        abbr.entity_definitions(text, entities, "hearst")


@pytest.fixture(scope="module")
def annotator() -> LocalAnnotator:
    return LocalAnnotator(
        {
            "folded": [
                ["tumor necrosis factor alpha", "Gene", "NCBIGene:7124"],
                ["myotonic dystrophy", "Disease", "MESH:D009223"],
                ["methotrexate", "Chemical", "MESH:D008727"],
            ],
            "exact": [["MTX", "Gene", "NCBIGene:4580"]],
        }
    )


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("builtin", [("Myotonic dystrophy", "Disease"), ("DM", "Disease"), ("tumor necrosis factor alpha", "Gene"),
                     ("methotrexate", "Chemical"), ("MTX", "Chemical"), ("DM", "Disease"), ("MTX", "Chemical")]),
        ("scispacy", [("Myotonic dystrophy", "Disease"), ("tumor necrosis factor alpha", "Gene"),
                      ("TNF alpha", "Gene"), ("methotrexate", "Chemical"), ("MTX", "Chemical"),
                      ("TNF alpha", "Gene"), ("MTX", "Chemical")]),
        ("union", [("Myotonic dystrophy", "Disease"), ("DM", "Disease"), ("tumor necrosis factor alpha", "Gene"),
                   ("TNF alpha", "Gene"), ("methotrexate", "Chemical"), ("MTX", "Chemical"), ("DM", "Disease"),
                   ("TNF alpha", "Gene"), ("MTX", "Chemical")]),
    ],
)
def test_local_annotator_option(annotator: LocalAnnotator, method: str, expected: list[tuple[str, str]]) -> None:
    text = ("Myotonic dystrophy (DM) and tumor necrosis factor alpha (TNF alpha) and methotrexate (MTX); "
            "DM, TNF alpha, MTX.")
    assert LocalAnnotator.abbreviations == abbr.DEFAULT_METHOD == "builtin"
    annotator.abbreviations = method
    try:
        found = annotator.annotate(text)
    finally:
        del annotator.abbreviations  # back to the class default
    assert [(a.text, a.type) for a in found] == expected
    assert all(text[a.start : a.end] == a.text for a in found)
