"""The short annotator guide (``guide.md``) written into every campaign collection.

It is generated from the collection's own ``annotation.conf`` and ``kb_shortcuts.conf``, so the types,
relations, modality attributes and keys it lists are exactly those brat offers in that collection.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.brat.conf import CAMPAIGN_DONE_TYPE
from pipeline.brat.validate import OVERLAP_TYPES, parse_annotation_conf
from pipeline.campaign.layout import DISAGREEMENT, DISCARD_REASON, DISCARD_REASONS, DISCARD_TYPE

GUIDE_FILE = "guide.md"
CAMPAIGN_TYPES = (DISCARD_TYPE, CAMPAIGN_DONE_TYPE)
_REASON_HELP = {
    "scope": "not about pharmacogenomics (e.g. gene therapy: a drug and a gene, but no PGx relation)",
    "ambiguous": "the meaning cannot be decided from the sentence alone",
    "incomplete": "the sentence is cut or lacks what its relations need",
    "typo": "typing or sentence-splitting errors make it unusable",
    "other": "anything else (add an annotator note saying why)",
}


def _types(allowed: tuple[str, ...]) -> str:
    return ", ".join("any entity" if t == "<ENTITY>" else f"`{t}`" for t in allowed if t not in CAMPAIGN_TYPES)


def shortcuts(kb_text: str) -> list[tuple[str, str]]:
    """(key, type) pairs of a ``kb_shortcuts.conf`` text, in file order."""
    out = []
    for line in kb_text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            out.append((parts[0], parts[1]))
    return out


def annotator_guide(collection: Path, person: str, phase: int) -> str:
    """Markdown guide for ``person`` working in ``collection`` (phase 1 or 2)."""
    conf, _ = parse_annotation_conf((collection / "annotation.conf").read_text(encoding="utf-8"))
    kb = collection / "kb_shortcuts.conf"
    keys = shortcuts(kb.read_text(encoding="utf-8")) if kb.is_file() else []
    lines = [f"# Annotator guide: {person}, phase {phase}", ""]
    if phase == 1:
        lines += [
            "Each document is one sentence, pre-annotated automatically. Correct the entities (delete wrong",
            "ones, fix spans, retype, add missed ones), add the relations between them with their modality,",
            "then mark the sentence `Done`, or discard it. Another annotator works on the same sentences",
            "independently; nobody sees anyone else's work.",
            "",
        ]
    else:
        lines += [
            "Each document holds the work of its two phase-1 annotators, merged. What they agree on appears",
            f"once, unmarked. What only one of them made, or typed differently, carries the `{DISAGREEMENT}`",
            "attribute naming its annotator (dotted border, `≠name` after the label): accept it by removing",
            "the attribute, reject it by deleting the annotation, or correct it. The document is final when no",
            f"`{DISAGREEMENT}` mark is left.",
            "",
        ]
    lines += ["## Entity types", "",
              "Indented types are subtypes; use the most specific type the sentence supports.", ""]
    depth: dict[str, int] = {}
    for t in conf.entity_types:
        if t in CAMPAIGN_TYPES:
            continue
        parent = conf.entity_parent.get(t)
        depth[t] = depth.get(parent, -1) + 1 if parent else 0
        lines.append("  " * depth[t] + f"- `{t}`")
    lines += ["", "## Relation types", "", "| relation | Arg1 | Arg2 |", "|---|---|---|"]
    for r in conf.relations:
        if r.type in OVERLAP_TYPES or len(r.types) != 2:
            continue
        lines.append(f"| `{r.type}` | {_types(r.types[0])} | {_types(r.types[1])} |")
    modality = [a for a in conf.attributes.values() if "<RELATION>" in a.targets and a.name != DISAGREEMENT]
    lines += ["", "## Modality", "",
              "A relation stated as not holding, or only hypothesised, keeps its type and gets an attribute",
              "(double-click the relation arc and tick it):", ""]
    lines += [f"- `{a.name}`" for a in modality] or ["- (none configured)"]
    lines += [
        "",
        "## Finishing or discarding a sentence",
        "",
        f"- **Done**: select any word of the sentence and annotate it as `{CAMPAIGN_DONE_TYPE}` when you have",
        "  finished it. Only sentences marked Done (or discarded) by both annotators go on to phase 2;",
        "  edits alone do not count as finished.",
        f"- **Discard**: select any word and annotate it as `{DISCARD_TYPE}`, then set its `{DISCARD_REASON}`",
        "  attribute (one of the values below). A sentence discarded by either annotator does not go on to",
        "  phase 2; you need not correct its annotations.",
        "",
        "| reason | when |",
        "|---|---|",
    ]
    lines += [f"| `{r}` | {_REASON_HELP.get(r, '')} |" for r in DISCARD_REASONS]
    lines += ["", "## Keyboard shortcuts", "", "Select a span, then press the key to choose its type:", "",
              "| key | type |", "|---|---|"]
    lines += [f"| `{k}` | `{t}` |" for k, t in keys]
    lines += [
        "",
        "brat's own keys: double-click a word to select it, drag between two entities to draw a relation,",
        "double-click an annotation to edit it (its dialog has Delete), the left and right arrow keys move to",
        "the previous and next document. brat saves every change at once; the text itself must never change.",
    ]
    return "\n".join(lines) + "\n"
