"""The writing commands of the crash harness, each on a campaign built in code (deterministic).

``size``: sentences per abstract in the source collection (the bench uses more than the tests).
A campaign: a brat collection exported from synthetic sentence records, a roster of three annotators
and two seniors, ``batches``; then annotators finish most documents in code (both agree on some, differ
on others, one discards one); ``review`` writes phase 2; seniors clear the marks; ``finalize`` writes FINAL.
"""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from pathlib import Path

from pipeline.cli import main
from pipeline.corpus.brat_export import export_collection
from pipeline.documents import Annotation, SentenceRecord
from pipeline.schema import load_schema
from tests.crash.harness import Scenario

SCHEMA = load_schema()
TEXT = "Warfarin doses were lower in CYP2C9 carriers."
CHEM = "T1\tChemical 0 8\tWarfarin"
GENE = "T2\tGene_or_protein 29 35\tCYP2C9"
DONE = "T90\tDone 20 25\tlower"
ROSTER = "id,role,phase1\nann1,annotator,yes\nann2,annotator,yes\nann3,annotator,yes\nsenior1,senior,no\n" \
         "senior2,senior,no\n"


def names(abstracts: range, size: int) -> list[str]:
    return [f"{pmid}_{i}" for pmid in abstracts for i in range(1, size + 1)]


def collection(directory: Path, docs: list[str], *, genes: bool = True) -> Path:
    """A brat collection of ``docs`` (pre-annotated chemical, and gene unless ``genes`` is false)."""
    gene = (Annotation(((29, 35),), "Gene_or_protein", "pubtator", text="CYP2C9"),) if genes else ()
    records = [
        SentenceRecord(name.split("_")[0], int(name.split("_")[1]) - 1, TEXT, annotations=(
            Annotation(((0, 8),), "Chemical", "pubtator", text="Warfarin"), *gene,
        ))
        for name in docs
    ]
    export_collection(records, directory, SCHEMA, Counter())
    return directory


def _quiet(root: Path, argv: list[str]) -> int:
    """``pgx-corpus ARGV`` run in ``root``, its output dropped."""
    with contextlib.chdir(root), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def _batches(root: Path, size: int) -> None:
    collection(root / "coll", names(range(100, 103), size))
    (root / "roster.csv").write_text(ROSTER, encoding="utf-8")
    assert _quiet(root, ["batches", "--collection", "coll", "--roster", "roster.csv", "--out", "campaign",
                   "--seed", "5"]) == 0


def _annotate(root: Path) -> None:
    """Phase 1 in code: every document finished by both, but the last of each abstract left pending; the
    second sentence of the first abstract discarded; annotators differ on the gene's type in one in three."""
    for ann in sorted((root / "campaign" / "phase1").glob("*/*.ann")):
        name = ann.stem
        if name.endswith("_1") and name.startswith("101"):
            continue  # pending
        lines = [CHEM, GENE, DONE]
        if name == "100_2" and ann.parent.name == "ann1":
            lines += ["T91\tDiscard 0 8\tWarfarin", "A9\tReason T91 scope"]
        if int(name.split("_")[1]) % 3 == 0 and ann.parent.name == "ann2":
            lines[1] = "T2\tGenomic_factor 29 35\tCYP2C9"
        ann.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _review(root: Path) -> None:
    assert _quiet(root, ["campaign", "review", "campaign"]) in (0, 1, 3)


def _clear_marks(root: Path) -> None:
    """The seniors accept every mark (remove the Disagreement attributes, retype disputed relations to their
    real type) and sign each document off with a Done marker on its first word."""
    for ann in sorted((root / "campaign" / "phase2").glob("*/*.ann")):
        text = ann.read_text(encoding="utf-8")
        lines = [line for line in text.splitlines() if "\tDisagreement " not in line]
        lines = [line.replace("\tDisputed_", "\t", 1) if line.startswith("R") else line for line in lines]
        body = ann.with_suffix(".txt").read_text(encoding="utf-8")
        word = body.split()[0]
        start = body.index(word)
        lines.append(f"T999\tDone {start} {start + len(word)}\t{word}")
        ann.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _finalize(root: Path) -> None:
    assert _quiet(root, ["campaign", "finalize", "campaign", "--out", "FINAL"]) in (0, 1, 3)


DECISIONS = ("retype:\n  - {term: CYP2C9, from: Gene_or_protein, to: Genomic_factor, why: harmonize}\n"
             "remove:\n  - {term: warfarin, type: Chemical}\n")


def scenarios(size: int = 2) -> list[Scenario]:
    """Every writing command of the campaign (and ``train`` on its FINAL), on a campaign of ``3 * size``
    sentences."""

    def setup_batches(root: Path) -> None:
        collection(root / "coll", names(range(100, 103), size))
        (root / "roster.csv").write_text(ROSTER, encoding="utf-8")

    def setup_rebatch(root: Path) -> None:
        _batches(root, size)
        collection(root / "coll2", names(range(100, 104), size))  # a rebuild with one more abstract

    def setup_rebatch_changed(root: Path) -> None:
        _batches(root, size)
        # a rebuild before the campaign started: fewer abstracts, every pre-annotation changed
        collection(root / "coll3", names(range(100, 102), size), genes=False)

    def setup_review(root: Path) -> None:
        _batches(root, size)
        _annotate(root)

    def setup_finalize(root: Path) -> None:
        setup_review(root)
        _review(root)
        _finalize(root)  # an earlier FINAL (every document held back by its marks), replaced
        _clear_marks(root)

    def setup_decisions(root: Path) -> None:
        setup_finalize(root)
        _finalize(root)
        (root / "decisions.yaml").write_text(DECISIONS, encoding="utf-8")

    def setup_release(root: Path) -> None:
        setup_decisions(root)
        assert _quiet(root, ["release", "FINAL", "--out", "release", "--date", "2026-01-01"]) == 0
        assert _quiet(root, ["decisions", "apply", "FINAL", "decisions.yaml"]) == 0

    def setup_append(root: Path) -> None:
        _batches(root, size)
        collection(root / "coll2", names(range(100, 105), size))

    def train_argv(seed: int) -> list[str]:
        return ["train", "FINAL", "--keys", "campaign/preannotation", "--out", "model", "--c", "1",
                "--seed", str(seed)]

    def setup_train(root: Path) -> None:
        setup_decisions(root)
        # an earlier model, replaced; run here, it also loads the parser in this process, which every
        # forked child of the harness then shares
        assert _quiet(root, train_argv(7)) == 0

    return [
        Scenario("batches", setup_batches, lambda r: ["batches", "--collection", "coll", "--roster", "roster.csv",
                                                      "--out", "campaign", "--seed", "5"], mask_passwords=True),
        Scenario("batches-rerun", setup_rebatch, lambda r: ["batches", "--collection", "coll2", "--roster",
                                                            "roster.csv", "--out", "campaign", "--seed", "5",
                                                            "--previous", "campaign/manifest.csv"]),
        Scenario("batches-changed", setup_rebatch_changed, lambda r: ["batches", "--collection", "coll3",
                                                                      "--roster", "roster.csv", "--out",
                                                                      "campaign", "--seed", "5"]),
        Scenario("review", setup_review, lambda r: ["campaign", "review", "campaign"]),
        Scenario("finalize", setup_finalize, lambda r: ["campaign", "finalize", "campaign", "--out", "FINAL"],
                 published=("FINAL",)),
        Scenario("decisions-apply", setup_decisions, lambda r: ["decisions", "apply", "FINAL", "decisions.yaml"],
                 published=("FINAL",)),
        Scenario("release", setup_release, lambda r: ["release", "FINAL", "--out", "release", "--date",
                                                      "2026-01-01"], published=("release",)),
        Scenario("append", setup_append, lambda r: ["campaign", "append", "campaign", "--collection", "coll2",
                                                    "--roster", "roster.csv", "--seed", "5"]),
        Scenario("train", setup_train, lambda r: train_argv(3), published=("model",)),
    ]


def by_name(size: int = 2) -> dict[str, Scenario]:
    return {s.name: s for s in [*scenarios(size), *team_scenarios(size)]}



DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def build_scenario() -> Scenario:
    """``pgx-corpus build`` of the demo data (every stage, batches included) into ``OUT``: an earlier build
    of the first 17 abstracts is there, this one adds the update file (3 more), so every stage is
    rebuilt and ``OUT/brat`` is replaced."""

    def argv(extra: list[str]) -> list[str]:
        return ["build", "--pubmed-xml", *extra, "--annotator", "local", "--sample", "all",
                "--roster", str(DEMO / "roster.tsv"), "--out", "OUT", "--workers", "1", "--no-extend"]

    def setup(root: Path) -> None:
        assert _quiet(root, argv([str(DEMO / "pubmed" / "demo.xml")])) == 0

    return Scenario("build", setup, lambda r: argv([str(DEMO / "pubmed")]), mask_passwords=True,
                    published=("OUT/brat",))


def _start(root: Path, person: str, finished: tuple[str, ...], started: tuple[str, ...]) -> None:
    """``person`` finishes ``finished`` (Done) and starts ``started`` (an entity, no Done) in phase 1."""
    for name, lines in [*((n, [CHEM, GENE, DONE]) for n in finished), *((n, [CHEM]) for n in started)]:
        ann = root / "campaign" / "phase1" / person / f"{name}.ann"
        ann.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _journal(root: Path) -> None:
    """Two versions of ann1's 100_1 journaled (as serve would, at fixed times), the second current."""
    from pipeline.campaign.journal import Journal

    journal = Journal(root / "campaign", clock=lambda: 1_700_000_000.0)
    ann = root / "campaign" / "phase1" / "ann1" / "100_1.ann"
    for lines in ([CHEM], [CHEM, GENE, DONE]):
        content = "".join(line + "\n" for line in lines).encode("utf-8")
        journal.record("ann1", "phase1/ann1/100_1", content, "createSpan")
        ann.write_bytes(content)


def _finished_copy(root: Path, source: str, target: str, gene: str) -> None:
    """A finished brat directory: the collection ``source`` with the gene typed ``gene`` and Done."""
    import shutil

    shutil.copytree(root / source, root / target)
    for ann in sorted((root / target).glob("*.ann")):
        lines = [CHEM, GENE.replace("Gene_or_protein", gene), DONE]
        ann.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def team_scenarios(size: int = 2) -> list[Scenario]:
    """The later writing commands of a live campaign: ``campaign users`` (reset, revoke), ``campaign history
    --restore``, ``campaign backup`` and the team commands (replace, add-person, reassign, import,
    calibrate, guideline).  New passwords are masked like the users file; times the commands take from the
    clock are masked (:data:`tests.crash.harness.TIME_RES`)."""

    def setup_live(root: Path) -> None:
        _batches(root, size)
        _annotate(root)
        _journal(root)

    def setup_replace(root: Path) -> None:
        _batches(root, size)
        # ann3 finished one document, started another, left the rest unstarted
        held = sorted(p.stem for p in (root / "campaign" / "phase1" / "ann3").glob("*.ann"))
        _start(root, "ann3", (held[0],), (held[1],))

    def setup_import(root: Path) -> None:
        collection(root / "coll", names(range(100, 103), size))
        _finished_copy(root, "coll", "work1", "Gene_or_protein")
        _finished_copy(root, "coll", "work2", "Genomic_factor")

    def setup_calibrate(root: Path) -> None:
        _batches(root, size)
        collection(root / "extra", names(range(200, 202), size))

    common = {"mask_passwords": True, "mask_times": True}
    return [
        Scenario("users-reset", setup_live, lambda r: ["campaign", "users", "campaign", "reset", "ann1"], **common),
        Scenario("users-revoke", setup_live, lambda r: ["campaign", "users", "campaign", "revoke", "ann2"],
                 **common),
        Scenario("history-restore", setup_live, lambda r: ["campaign", "history", "campaign", "phase1/ann1/100_1",
                                                           "--restore", "1"], **common),
        Scenario("backup", setup_live, lambda r: ["campaign", "backup", "campaign", "backup.tar.gz"], **common),
        Scenario("replace", setup_replace, lambda r: ["campaign", "replace", "campaign", "ann3", "ann4",
                                                      "--started", "move"], **common),
        Scenario("add-person", lambda r: _batches(r, size), lambda r: ["campaign", "add-person", "campaign", "ann4",
                                                                         "--role", "annotator"], **common),
        Scenario("reassign", lambda r: _batches(r, size), lambda r: ["campaign", "reassign", "campaign", "100_1",
                                                                      "--from", "ann1", "--to", "ann2"], **common),
        Scenario("import", setup_import, lambda r: ["campaign", "import", "imported", "--work", "ann1=work1",
                                                    "--work", "ann2=work2", "--reference", "coll", "--senior",
                                                    "senior1", "--senior", "senior2"], **common),
        Scenario("calibrate", setup_calibrate, lambda r: ["campaign", "calibrate", "campaign", "extra", "200_1",
                                                          "201_1"], **common),
        Scenario("guideline", lambda r: _batches(r, size), lambda r: ["campaign", "guideline", "campaign", "2",
                                                                       "Genes in a variant name are Genomic_factor"],
                 **common),
    ]
