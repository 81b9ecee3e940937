"""The provenance sidecar as the tools read it: stats and agreement --preannotation.

Covers: pipeline.brat.agreement, pipeline.brat.provenance, pipeline.brat.standoff, pipeline.brat.stats, pipeline.cli,
pipeline.cli.corpus_commands, pipeline.corpus.brat_export, pipeline.schema
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.agreement import format_table10, preannotation_scores
from pipeline.brat.provenance import PROVENANCE_FILE, read_provenance
from pipeline.brat.standoff import read_document, write_document
from pipeline.brat.stats import brat_stats, format_markdown
from pipeline.corpus.brat_export import export_collection
from pipeline.schema import load_schema
from tests.corpus.test_brat_export import records

SCHEMA = load_schema()


@pytest.fixture
def collections(tmp_path: Path) -> tuple[Path, Path]:
    """A pre-annotated collection and its 'final' version: one composite deleted, one entity added."""
    pre = tmp_path / "pre"
    export_collection(records(), pre, SCHEMA, Counter())
    final = tmp_path / "final"
    shutil.copytree(pre, final)
    (final / PROVENANCE_FILE).unlink()  # annotators' collections need no sidecar
    doc, _ = read_document(final / "200_4.txt")
    gone = next(t for t in doc.textbounds if t.text == "lower doses")
    doc.textbounds = [t for t in doc.textbounds if t.id != gone.id]
    doc.attributes = [a for a in doc.attributes if a.target != gone.id]
    doc.notes = [n for n in doc.notes if n.target != gone.id]
    write_document(final, doc)
    return pre, final


def test_stats_reads_the_sidecar(collections: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    pre, final = collections
    r = brat_stats(pre, SCHEMA)
    assert r["provenance"]["entities"] == {"preannotated": 8, "edited": 0, "unknown": 0}
    assert r["provenance"]["by_source"]["pubtator"] == {"Chemical": 3, "Gene_or_protein": 2, "Limited_variation": 1}
    assert r["provenance"]["composites"] == 2
    md = format_markdown(r)
    assert "| ontology | Pharmacokinetic_phenotype | 1 |" in md and "| (preannotated) |  | 8 |" in md
    assert "provenance" not in brat_stats(final, SCHEMA)  # no sidecar, no section
    # the final collection with the pre-annotation's sidecar beside it: what survived unchanged
    shutil.copy(pre / PROVENANCE_FILE, final / PROVENANCE_FILE)
    assert cli.main(["stats", str(final), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["provenance"]["entities"] == {"preannotated": 7, "edited": 0, "unknown": 0}
    assert data["provenance"]["composites"] == 1


def test_agreement_preannotation_by_source(collections: tuple[Path, Path]) -> None:
    pre, final = collections
    assert read_provenance(pre) is not None
    result = preannotation_scores(pre, [final], SCHEMA)
    (r,) = result["results"]
    assert r["scores"]["exact_same"]["fp"] == 1 and r["scores"]["exact_same"]["tp"] == 7
    by = r["by_source"]
    assert sorted(by) == ["local", "ontology", "pubtator"]
    assert (by["ontology"]["exact_same"]["tp"], by["ontology"]["exact_same"]["fp"]) == (1, 1)
    assert by["pubtator"]["exact_same"]["precision"] == 1.0
    assert "| ontology | exact_same | 1 | 1 | 6 | 50.0 |" in format_table10(result)
    # without a sidecar: no per-source scores
    (pre / PROVENANCE_FILE).unlink()
    assert "by_source" not in preannotation_scores(pre, [final], SCHEMA)["results"][0]
