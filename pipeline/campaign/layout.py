"""Names shared by every campaign step: the campaign directory layout and the brat decision types.

The brat types and attributes named here carry the annotators' decisions.

A campaign directory ``CAMPAIGN_DIR`` holds:

* ``campaign.json``: the campaign manifest (people, their roles, and which document each person has in
  which phase);
* ``manifest.csv``: the same assignments as ``document,phase,annotator`` rows;
* ``phase1/<person>/``: one blind brat collection per phase-1 annotator;
* ``phase2/<senior>/``: one collection per senior, written by ``campaign review`` from both phase-1
  annotations of each finished document;
* ``review/``: what ``campaign review`` reports (discarded documents, agreement, documents held back).

In brat, an annotator discards a sentence with an entity of type [`DISCARD_TYPE`][pipeline.campaign.layout.DISCARD_TYPE]
(on any span of the sentence) whose [`DISCARD_REASON`][pipeline.campaign.layout.DISCARD_REASON] attribute takes one of
[`DISCARD_REASONS`][pipeline.campaign.layout.DISCARD_REASONS].  In phase 2, an entity that only one annotator made, or
that the two typed differently, carries the [`DISAGREEMENT`][pipeline.campaign.layout.DISAGREEMENT] attribute whose
value names its annotator; the senior accepts it by removing the attribute, or rejects it by deleting the entity.  A
relation the annotators disagree on (drawn by one only, or with another modality) has the generated type
``Disputed_<type>`` ([`disputed_type`][pipeline.campaign.conf.disputed_type]; brat's client cannot show attributes on
relations); the senior accepts it by retyping it to ``<type>``, or rejects it by deleting it, and signs the document off
with the ``Done`` marker.
"""

from __future__ import annotations

CAMPAIGN_MANIFEST = "campaign.json"
ASSIGNMENTS_CSV = "manifest.csv"
PHASE1_DIR = "phase1"
PHASE2_DIR = "phase2"
REVIEW_DIR = "review"

DISCARD_TYPE = "Discard"
"""The brat entity type with which an annotator discards the sentence the entity is in."""
DISCARD_REASON = "Reason"
"""The attribute of a [`DISCARD_TYPE`][pipeline.campaign.layout.DISCARD_TYPE] entity that says why."""
DISCARD_REASONS = ("scope", "ambiguous", "incomplete", "typo", "other")
"""The values of [`DISCARD_REASON`][pipeline.campaign.layout.DISCARD_REASON]."""

DISAGREEMENT = "Disagreement"
"""The phase-2 entity attribute whose value names the one annotator who made (or so typed) the entity."""
