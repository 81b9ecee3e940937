"""The stages of a build, by name and in order: the names ``build --until`` takes and the manifest lists.

Kept apart from the Luigi tasks (``pipeline.tasks``) so that the command line offers them without
importing Luigi.
"""

from __future__ import annotations

STAGES: tuple[str, ...] = (
    "documents",
    "sentences",
    "preannotated",
    "extended",
    "mapped",
    "filtered",
    "sampled",
    "brat",
    "batches",
)
"""The stages of a build, in order (``--until`` names one)."""
