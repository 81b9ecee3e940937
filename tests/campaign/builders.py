"""A small campaign directory written in code: phase-1 and phase-2 collections, a manifest, a pre-annotation."""

from __future__ import annotations

from pathlib import Path

from pipeline.brat.conf import annotation_conf, write_conf_files
from pipeline.campaign.conf import campaign_annotation_conf
from pipeline.campaign.layout import DISCARD_REASON, DISCARD_TYPE
from pipeline.schema import load_schema

SCHEMA = load_schema()
PEOPLE = ("ann1", "ann2", "ann3")
SENIORS = ("senior1", "senior2")

TEXTS = {
    "100_1": "CYP2D6 metabolizes codeine in poor metabolizers.",
    "100_2": "Warfarin treats thrombosis.",
    "200_1": "Imatinib is given in CML.",
    "200_2": "Gene therapy with AAV vectors.",
    "300_1": "Tamoxifen did not increase the risk of endometrial cancer.",
    "300_2": "Aspirin and clopidogrel were combined.",
}


def span(name: str, phrase: str) -> str:
    """``start end`` of the first occurrence of ``phrase`` in the text of ``name``."""
    start = TEXTS[name].index(phrase)
    return f"{start} {start + len(phrase)}"


def campaign_conf() -> str:
    """The phase-2 campaign annotation.conf: the schema's plus Discard, Done, Reason, the Disagreement attribute
    of entities and the generated Disputed_<type> relation types (pipeline.campaign.conf.campaign_annotation_conf)."""
    return campaign_annotation_conf(annotation_conf(SCHEMA), PEOPLE)


def legacy_conf() -> str:
    """The annotation.conf of an older campaign: modality as Negated/Hypothetical attributes on relations."""
    return campaign_conf().rstrip("\n") + "\nNegated\tArg:<RELATION>\nHypothetical\tArg:<RELATION>\n"


def write_collection(directory: Path, docs: dict[str, str], conf: str | None = None) -> Path:
    """Documents ``name -> .ann content`` (texts from TEXTS) and a campaign annotation.conf."""
    directory.mkdir(parents=True, exist_ok=True)
    write_conf_files(directory, SCHEMA)
    (directory / "annotation.conf").write_text(conf if conf is not None else campaign_conf(), encoding="utf-8")
    for name, ann in docs.items():
        (directory / f"{name}.txt").write_text(TEXTS[name], encoding="utf-8")
        (directory / f"{name}.ann").write_text(ann, encoding="utf-8")
    return directory


ANN_100_1 = (
    f"T1\tGene_or_protein {span('100_1', 'CYP2D6')}\tCYP2D6\n"
    f"T2\tChemical {span('100_1', 'codeine')}\tcodeine\n"
    "R1\tmetabolizes Arg1:T1 Arg2:T2\t\n"
)
ANN_300_1 = (
    f"T1\tChemical {span('300_1', 'Tamoxifen')}\tTamoxifen\n"
    f"T2\tDisease {span('300_1', 'endometrial cancer')}\tendometrial cancer\n"
    "R1\tincreases Arg1:T1 Arg2:T2\t\n"
    "#1\tAnnotatorNotes R1\tneg\n"
)


def done(name: str, word: str) -> str:
    """A senior's sign-off: a ``Done`` marker on ``word`` of the text of ``name``."""
    return f"T99\tDone {span(name, word)}\t{word}\n"


def build_campaign(root: Path) -> Path:
    """A campaign in the middle of phase 2 (see the test module for what each document exercises)."""
    campaign = root / "campaign"
    phase1 = campaign / "phase1"
    # ann1 and ann2 annotated 100_1 and 300_1; ann2 missed the relation of 100_1
    # annotators mark finished sentences Done (part 1), on different words: no effect on agreement
    write_collection(phase1 / "ann1", {"100_1": ANN_100_1 + f"T3\tDone {span('100_1', 'codeine')}\tcodeine\n",
                                       "300_1": ANN_300_1, "100_2": ""})
    write_collection(phase1 / "ann2", {"100_1": ANN_100_1.split("R1")[0], "300_1": ANN_300_1, "200_1": ""})
    write_collection(phase1 / "ann3", {
        "100_2": "", "200_1": "",
        # ann3 discarded 200_2 (scope) and 300_2 (typo, and a second Discard without a reason)
        "200_2": f"T1\t{DISCARD_TYPE} 0 4\tGene\nA1\t{DISCARD_REASON} T1 scope\n",
        "300_2": (f"T1\t{DISCARD_TYPE} 0 7\tAspirin\nA1\t{DISCARD_REASON} T1 typo\n"
                  f"T2\t{DISCARD_TYPE} 8 11\tand\n"),
    })
    phase2 = campaign / "phase2"
    write_collection(phase2 / "senior1", {
        # signed off; a second relation that becomes a duplicate once metabolizes -> influences
        "100_1": ANN_100_1 + "R2\tinfluences Arg1:T1 Arg2:T2\t\n" + done("100_1", "poor"),
        # signed off with one disputed relation left: held back
        "100_2": (f"T1\tChemical {span('100_2', 'Warfarin')}\tWarfarin\n"
                  f"T2\tDisease {span('100_2', 'thrombosis')}\tthrombosis\n"
                  "R1\tDisputed_treats Arg1:T1 Arg2:T2\t\n"
                  "#1\tAnnotatorNotes R1\t[ann1: none; ann3: no relation]\n" + done("100_2", "treats")),
        # signed off, a broken line: held back
        "200_1": (f"T1\tChemical {span('200_1', 'Imatinib')}\tImatinib\nT2\tDisease 21 x\tCML\n"
                  + done("200_1", "given")),
    })
    write_collection(phase2 / "senior2", {
        # discarded by the senior: a finished decision, kept out with its reason
        "200_2": f"T1\t{DISCARD_TYPE} 0 4\tGene\nA1\t{DISCARD_REASON} T1 scope\n",
        # signed off; the Composite presentation attribute goes, the modality note stays
        "300_1": ANN_300_1 + "A2\tComposite T2\nT3\tDone 0 9\tTamoxifen\n",
    })
    rows = ["document,phase,annotator"]
    for doc, people, senior in (("100_1", "ann1 ann2", "senior1"), ("100_2", "ann1 ann3", "senior1"),
                                ("200_1", "ann2 ann3", "senior1"), ("200_2", "ann3 ann1", "senior2"),
                                ("300_1", "ann1 ann2", "senior2"), ("300_2", "ann3 ann2", "senior2")):
        rows += [f"{doc},1,{p}" for p in sorted(people.split())] + [f"{doc},2,{senior}"]
    (campaign / "manifest.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return campaign


def build_preannotation(root: Path) -> Path:
    """The pre-annotated collection the campaign started from (Table 10)."""
    return write_collection(root / "preannotation", {
        "100_1": f"T1\tGene_or_protein {span('100_1', 'CYP2D6')}\tCYP2D6\n",
        "300_1": (f"T1\tChemical {span('300_1', 'Tamoxifen')}\tTamoxifen\n"
                  f"T2\tDisease {span('300_1', 'cancer')}\tcancer\n"),
    }, conf=annotation_conf(SCHEMA))
