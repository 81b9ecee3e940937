"""The guide per role (``guide.md``) written into every campaign collection.

* [`annotator_guide`][pipeline.campaign.guide.annotator_guide] (phase 1): correcting entities (discontiguous included),
  drawing relations, their modality in the relation's note ([`pipeline.brat.modality`][pipeline.brat.modality]),
  the Suggest relations button of ``campaign serve``, ``Done`` and ``Discard``;
* [`senior_guide`][pipeline.campaign.guide.senior_guide] (phase 2): what entity and relation disagreements look like,
  how to accept or reject each, and the explicit sign-off with ``Done`` that ``campaign finalize`` requires.

Both are generated from the collection's own ``annotation.conf`` and ``kb_shortcuts.conf``, so the types,
relations and keys they list are exactly those brat offers there, and every gesture they describe is one of
brat's web client (nlplab/brat 44ecd825: the span dialog's Delete, Move, Add Frag.; the relation dialog's
type list and Notes field).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.brat.validate import OVERLAP_TYPES, AnnotationConf, parse_annotation_conf
from pipeline.campaign.conf import CAMPAIGN_DONE_TYPE, disputed_type, undisputed_type
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
    """Read the keyboard shortcuts of a ``kb_shortcuts.conf``.

    Args:
        kb_text: The text of the file; comment lines and lines that are not two fields are skipped.

    Returns:
        ``(key, type)`` pairs, in file order.
    """
    out = []
    for line in kb_text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            out.append((parts[0], parts[1]))
    return out


def _entity_and_relation_types(conf: AnnotationConf) -> list[str]:
    lines = ["## Entity types", "",
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
        if r.type in OVERLAP_TYPES or len(r.types) != 2 or undisputed_type(r.type) is not None:
            continue
        lines.append(f"| `{r.type}` | {_types(r.types[0])} | {_types(r.types[1])} |")
    return lines


def _keys(keys: list[tuple[str, str]]) -> list[str]:
    lines = ["", "## Keyboard shortcuts", "", "In the dialog of a new entity, press the key to choose its type:", "",
             "| key | type |", "|---|---|"]
    lines += [f"| `{k}` | `{t}` |" for k, t in keys]
    lines += [
        "",
        "brat's own keys and gestures: double-click a word (or drag over words) to select text for a new entity,",
        "drag from one entity box to another to draw a relation, double-click an entity or a relation's label to",
        "open its dialog (Delete is in it), point at an annotation to see its type and note. The left and right",
        "arrow keys move to the previous and next document. brat saves every change at once; the text itself",
        "never changes.",
    ]
    return lines


MODALITY_HELP = [
    "## Modality of a relation (its note)",
    "",
    "brat cannot show attributes on relations, so a relation's modality is written in the relation's **Notes**",
    "field (the relation dialog: double-click the relation's label, or the dialog that opens when you draw it).",
    "The note starts with the modality words, then, if you want, `|` and your own comment:",
    "",
    "| note | the relation is stated as |",
    "|---|---|",
    "| (empty) | holding (no modality) |",
    "| `neg` | not holding (negated) |",
    "| `hyp` | hypothesised only |",
    "| `hyp neg` | hypothesised not to hold |",
    "| `neg \\| my comment` | negated, with a comment of yours |",
    "| `\\| my comment` | a comment only, no modality |",
    "",
    "`hypo`, `htp` and `not` are read as `hyp`, `hyp` and `neg`; only whole words at the start count (a note",
    "\"hypertension ...\" is a comment). To **set or change** the modality, open the relation's dialog, edit",
    "Notes and press OK; to **remove** it, clear Notes (the ✕ button beside it) and press OK. Point at a",
    "relation to see its note. Keep one note per relation.",
    "",
    "brat's Options: in Annotation mode *Careful* (the default) a dialog waits for OK; in *Normal* or *Rapid*,",
    "clicking a type saves at once, so write Notes before you click the type.",
]


def annotator_guide(collection: Path, person: str, phase: int = 1) -> str:
    """Write the Markdown guide of a phase-1 annotator.

    Generated from the collection's own configuration: the types, relations and keys it lists are
    exactly those brat offers there.

    Args:
        collection: The person's brat collection; its ``annotation.conf`` is read, and its
            ``kb_shortcuts.conf`` if present.
        person: The annotator, named in the title.
        phase: ``1``; any other phase gives the [`senior_guide`][pipeline.campaign.guide.senior_guide].

    Returns:
        The guide's Markdown text (``guide.md``), ending in a newline.

    Raises:
        OSError: If the collection's ``annotation.conf`` cannot be read.
    """
    if phase != 1:
        return senior_guide(collection, person)
    conf, _ = parse_annotation_conf((collection / "annotation.conf").read_text(encoding="utf-8"))
    kb = collection / "kb_shortcuts.conf"
    keys = shortcuts(kb.read_text(encoding="utf-8")) if kb.is_file() else []
    lines = [f"# Annotator guide: {person}, phase 1", ""]
    lines += [
        "Each document is one sentence, pre-annotated automatically. Correct the entities, add the relations",
        "between them with their modality, then mark the sentence `Done`, or discard it. Another annotator",
        "works on the same sentences independently; nobody sees anyone else's work.",
        "",
        "## Correcting entities",
        "",
        "- **Wrong entity**: double-click it and press Delete in its dialog (its relations go with it).",
        "- **Wrong type**: double-click it, choose the type, press OK.",
        "- **Wrong span**: double-click it and press Move, then select the right text.",
        "- **Missed entity**: select its text (double-click a word, or drag over several), choose the type, OK.",
        "- **Discontiguous entity** (\"estradiol ... levels\"): create it on its first part, then double-click it,",
        "  press Add Frag. and select the next part; Delete Frag. and Move Frag. edit one part.",
        "- A dashed border marks a composite entity proposed by the pre-annotation (the `Composite` attribute);",
        "  it only helps you see it, and it does not matter whether you keep it.",
        "",
        "## Adding relations",
        "",
        "Drag from the first argument's box (Arg1) to the second's (Arg2); brat offers only the relation types",
        "the two entity types allow. Choose the type, write the modality in Notes if there is one (below), OK.",
        "",
    ]
    lines += MODALITY_HELP
    lines += [
        "",
        "## Suggested relations",
        "",
        "brat's **Data** dialog (in the menu at the top), under *Automatic annotation*, has a **Suggest relations**",
        "button. Correct the entities first, then press it: it adds the relations the project's relation model",
        "proposes between the entities as they are now, only between two entities that have no relation yet,",
        "and draws them at once (a suggested relation with a modality gets it in its Notes). They are plain",
        "relations: keep the right ones as they are, retype (double-click its label) or delete the wrong ones,",
        "and fix their Notes. A suggestion you deleted or retyped is not suggested again in that sentence while",
        "its two entities stay as they are. Ctrl-Z (or Undo in the menu) right after a press takes it back.",
        "What was suggested, and whether you kept it, is counted for the campaign manager; it is never part of",
        "the corpus or of the review.",
        "",
        "## Finishing or discarding a sentence",
        "",
        f"- **Done**: select any word of the sentence and annotate it as `{CAMPAIGN_DONE_TYPE}` when you have",
        "  finished it. Only sentences marked Done (or discarded) by both annotators go on to phase 2;",
        "  edits alone do not count as finished.",
        f"- **Discard**: select any word and annotate it as `{DISCARD_TYPE}`, then double-click it and set its",
        f"  `{DISCARD_REASON}` (one of the values below). A sentence discarded by either annotator does not go on",
        "  to phase 2; you need not correct its annotations.",
        "",
        "| reason | when |",
        "|---|---|",
    ]
    lines += [f"| `{r}` | {_REASON_HELP.get(r, '')} |" for r in DISCARD_REASONS]
    lines += [""]
    lines += _entity_and_relation_types(conf)
    lines += _keys(keys)
    return "\n".join(lines) + "\n"


def senior_guide(collection: Path, person: str) -> str:
    """Write the Markdown guide of a phase-2 senior (written by ``campaign review``).

    Args:
        collection: The senior's brat collection; its ``annotation.conf`` is read (the ``Disputed_``
            relation types come from it), and its ``kb_shortcuts.conf`` if present.
        person: The senior, named in the title.

    Returns:
        The guide's Markdown text (``guide.md``), ending in a newline.

    Raises:
        OSError: If the collection's ``annotation.conf`` cannot be read.
    """
    conf, _ = parse_annotation_conf((collection / "annotation.conf").read_text(encoding="utf-8"))
    disputed = [r.type for r in conf.relations if undisputed_type(r.type) is not None]
    example = disputed[0] if disputed else disputed_type("influences")
    lines = [
        f"# Senior guide: {person}, phase 2",
        "",
        "Each document holds the work of its two phase-1 annotators, merged. What both made alike appears once,",
        "as an ordinary annotation. What they disagree on is marked, and you decide each mark. The phase-1",
        "annotators' own guide (correcting entities, drawing relations, the modality notes, Discard) applies to",
        "your edits too; this guide says only what is new in phase 2.",
        "",
        "## Entity disagreements",
        "",
        f"An entity only one annotator made carries the `{DISAGREEMENT}` attribute naming that annotator: a",
        "dotted border and `≠name` after its label. Two annotators who typed one span differently give two",
        "marked entities on it, one per type.",
        "",
        f"- **Accept**: double-click the entity, click in its `{DISAGREEMENT}` box, empty it (select the name",
        "  and delete it; the list of values has no \"no value\" entry), click elsewhere in the dialog (the",
        "  Text box at its top), and press OK.",
        "- **Reject**: double-click it and press Delete (its relations go with it).",
        "- Or correct it (type, span), and empty the attribute's box the same way as you accept it.",
        "- Escape, in that box or anywhere in the dialog, cancels the whole dialog: nothing of it is saved, so",
        "  open the entity again and start over.",
        "",
        "## Relation disagreements",
        "",
        "A relation the annotators disagree on has a *disputed* type: a dashed red arc labelled `≠ type`",
        f"(its type in the file is `{example}`). It is disputed when only one annotator drew it, or when both",
        "drew it with a different modality. Point at the arc to see its note: it starts with the modality both",
        "agree on and says, in brackets, who said what, e.g. `neg [alice: neg; bob: no relation]` or",
        "`[alice: hyp; bob: none]`.",
        "",
        "- **Accept**: double-click the arc's label, write the modality you decide in Notes (`neg`, `hyp`,",
        "  `hyp neg`, or nothing), choose the real type (`≠ influences` -> `influences`) and press OK (in brat's",
        "  Normal or Rapid annotation mode, choosing the type saves at once). The bracketed text may stay: the",
        "  final corpus leaves it out.",
        "- **Reject**: double-click the arc's label and press Delete.",
        "- A relation both annotators drew alike is an ordinary arc; its note holds the modality they agreed on.",
        "",
        "Annotators' comments in notes keep their author when the two differ (`alice: ...; bob: ...`); what is",
        "left in a note when you sign off goes into the corpus as a comment, so shorten or clear what need not.",
        "",
        "## Signing off",
        "",
        f"When nothing marked is left, select any word and annotate it as `{CAMPAIGN_DONE_TYPE}`: that signs the",
        "document off. Only signed-off documents go to the final corpus (`campaign finalize`; with",
        "`--accept-agreed`, the manager also lets through documents both annotators agreed on); a signed-off",
        f"document that still holds a `{DISAGREEMENT}` mark or a `≠` relation is held back and the list names what",
        f"is left. To keep a sentence out of the corpus, annotate any word as `{DISCARD_TYPE}` and set its",
        f"`{DISCARD_REASON}`: that decides the document too.",
        "",
        "The modality words in notes are those of the annotators' guide: `neg`, `hyp`, `hyp neg`, then",
        "`|` before a comment.",
    ]
    return "\n".join(lines) + "\n"
