"""bench/preannotation_agreement.py's per-fold exact recall of chosen types (issue 37's phenotype targets).

Covers: pipeline.documents
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.documents import Annotation
from tests.bench_loader import load_bench

PROJECT = Path(__file__).resolve().parents[2]


def _bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_bench(monkeypatch, "preannotation_agreement")


def _a(start: int, end: int, type_: str) -> Annotation:
    return Annotation(((start, end),), type_, "test")


GOLD = {
    "1_1": [_a(0, 10, "Phenotype"), _a(20, 30, "Phenotype"), _a(40, 45, "Chemical")],
    "1_2": [_a(0, 12, "Pharmacodynamic_phenotype")],
    "2_1": [_a(5, 15, "Phenotype"), _a(30, 40, "Pharmacodynamic_phenotype")],
}
PREDICTED = {
    "1_1": [_a(0, 10, "Phenotype"),            # exact
            _a(20, 28, "Phenotype"),           # wrong boundary: not recalled
            _a(40, 45, "Chemical")],
    "1_2": [_a(0, 12, "Phenotype")],           # right span, wrong type: not recalled
    "2_1": [_a(5, 15, "Phenotype"), _a(30, 40, "Pharmacodynamic_phenotype")],
}
TYPES = ("Phenotype", "Pharmacodynamic_phenotype")


def test_exact_recall_counts_only_same_fragments_and_type_per_fold_then_overall(
        monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench(monkeypatch)
    rows = bench.exact_recall_by_fold(PREDICTED, GOLD, [["1_1", "1_2"], ["2_1"]], TYPES)
    assert rows == [
        ("1", {"Phenotype": (1, 2), "Pharmacodynamic_phenotype": (0, 1)}),
        ("2", {"Phenotype": (1, 1), "Pharmacodynamic_phenotype": (1, 1)}),
        ("all", {"Phenotype": (2, 3), "Pharmacodynamic_phenotype": (1, 2)}),
    ]


def test_a_type_absent_from_a_fold_has_no_figure(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench(monkeypatch)
    folds = [["1_1"], ["1_2", "2_1"]]
    rows = bench.exact_recall_by_fold(PREDICTED, GOLD, folds, TYPES)
    assert rows[0] == ("1", {"Phenotype": (1, 2), "Pharmacodynamic_phenotype": (0, 0)})
    bench.print_recall_by_fold([("rules", PREDICTED)], GOLD, folds, TYPES)
    out = capsys.readouterr().out
    assert "| 1 | 50.0% (1/2) | - |" in out
    assert "| all | 66.7% (2/3) | 50.0% (1/2) |" in out


def test_a_fold_name_without_predictions_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench(monkeypatch)
    with pytest.raises(KeyError):
        bench.exact_recall_by_fold({"1_1": []}, GOLD, [["1_1", "1_2"]], TYPES)
