"""A release of the 300 dev gold sentences read back the way its users read it: Hugging Face ``datasets`` offline,
spaCy ``DocBin`` and ``spacy convert``, BioC and BIO readers; the declared format table against those counts.

Covers: pipeline.brat.formats, pipeline.brat.modality, pipeline.brat.spacy_docbin, pipeline.brat.standoff,
pipeline.brat.validate, pipeline.campaign.release_data, pipeline.cli, pipeline.cli.corpus_commands,
pipeline.cli.import_commands, pipeline.cli.release_commands, pipeline.cli.train_commands
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bioc import biocxml

from pipeline.brat.modality import join_notes
from pipeline.brat.standoff import BratDocument, read_directory
from pipeline.campaign.release import tables
from pipeline.cli import main
from tests.campaign.conftest import PNG_SIGNATURE, built_once
from tests.conftest import shared_path

NAME = "pgxcorpus-dev"
PREFIX = "pgxcorpus_dev"


@pytest.fixture(scope="module")
def gold() -> list[BratDocument]:
    docs, issues = read_directory(shared_path("data", "pgxcorpus-dev", "gold"))
    assert issues == []
    return docs


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release of the dev gold, made once per session for every worker (the tests only read it)."""
    gold_dir = shared_path("data", "pgxcorpus-dev", "gold")

    def build(out: Path) -> None:
        with pytest.MonkeyPatch.context() as patch:  # no test here reads a chart (charts_not_drawn)
            patch.setattr(tables, "write_chart", lambda path, _title, _chart: path.write_bytes(PNG_SIGNATURE))
            assert main(["release", str(gold_dir), "--out", str(out), "--name", NAME, "--license", "CC-BY-NC-4.0",
                         "--release-version", "dev", "--date", "2026-11-25"]) == 0

    return built_once(tmp_path_factory, "pgxcorpus-dev-release", build)


def _modality(doc: BratDocument, rid: str) -> frozenset[str]:
    return join_notes(doc.notes_for(rid)).modality | {a.type for a in doc.attributes if a.target == rid}


@pytest.mark.slow  # loads the release with Hugging Face datasets
def test_huggingface_loads_offline_with_bigbio_checks(release_dir: Path, gold: list[BratDocument], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True, raising=False)

    source = datasets.load_dataset(str(release_dir), cache_dir=str(tmp_path / "c1"))
    kb = datasets.load_dataset(str(release_dir), f"{PREFIX}_bigbio_kb", cache_dir=str(tmp_path / "c2"))
    split_sizes = json.loads((release_dir / "release.json").read_text())["huggingface"]["splits"]
    assert set(source) == set(kb) == {k for k, v in split_sizes.items() if v} == {"train", "validation", "test"}
    assert sum(len(source[s]) for s in source) == sum(len(kb[s]) for s in kb) == len(gold) == 300

    # the default config is the source one: everything as annotated
    annotated_modality = sum(1 for d in gold for r in d.relations if _modality(d, r.id))
    assert annotated_modality == 262
    rows = [row for s in source for row in source[s]]
    assert sum(len(r["entities"]) for r in rows) == 2178
    assert sum(len(r["relations"]) for r in rows) == 920
    assert sum(1 for r in rows for rel in r["relations"] if rel["modality"]) == annotated_modality
    assert Counter(rel["type"] for r in rows for rel in r["relations"]) == Counter(
        r.type for d in gold for r in d.relations)
    assert sum(len(n) for r in rows for e in r["entities"] for n in [e["notes"]]) + sum(
        len(rel["notes"]) for r in rows for rel in r["relations"]) == sum(len(d.notes) for d in gold) == 266

    # bigbio_kb: what BigBIO's harness checks, as hard assertions with exact counts
    feats = kb["train"].features
    assert "offsets': List(List(Value('int32')))" in repr(feats["entities"])
    kb_rows = [row for s in kb for row in kb[s]]
    ids: list[str] = []
    for row in kb_rows:
        ids.append(row["id"])
        ids += [p["id"] for p in row["passages"]] + [e["id"] for e in row["entities"]]
        ids += [e["id"] for e in row["events"]] + [c["id"] for c in row["coreferences"]]
        ids += [r["id"] for r in row["relations"]]
    assert len(ids) == len(set(ids))  # globally unique over every split
    referenced = missing = 0
    for row in kb_rows:
        known = {e["id"] for e in row["entities"]} | {e["id"] for e in row["events"]}
        for rel in row["relations"]:
            for ref in (rel["arg1_id"], rel["arg2_id"]):
                referenced += 1
                missing += ref not in known
        for ev in row["events"]:
            for arg in ev["arguments"]:
                referenced += 1
                missing += arg["ref_id"] not in known
        for coref in row["coreferences"]:
            for ref in coref["entity_ids"]:
                referenced += 1
                missing += ref not in known
    assert (referenced, missing) == (2 * 658, 0)
    slices = mismatched = 0
    brat_order = {f"{d.name}_{t.id}": [list(f) for f in t.fragments] for d in gold for t in d.textbounds}
    for row in kb_rows:
        text = " ".join(t for p in row["passages"] for t in p["text"])  # BigBIO's get_example_text
        for p in row["passages"]:
            for ptext, (s, e) in zip(p["text"], p["offsets"], strict=True):
                slices += 1
                mismatched += text[s:e] != ptext
        for ent in row["entities"]:
            assert len(ent["text"]) == len(ent["offsets"])
            assert ent["offsets"] == brat_order[ent["id"]]  # brat's order, as BigBIO's brat converter keeps it
            for etext, (s, e) in zip(ent["text"], ent["offsets"], strict=True):
                slices += 1
                mismatched += text[s:e] != etext
    assert (slices, mismatched) == (300 + 2315, 0)
    assert sum(len(r["entities"]) for r in kb_rows) == 2178
    assert sum(1 for r in kb_rows for e in r["entities"] if len(e["offsets"]) > 1) == 134
    assert sum(len(e["normalized"]) for r in kb_rows for e in r["entities"]) == 0  # the card says: none
    # negated and hypothetical relations are excluded, never plain positive facts
    assert sum(len(r["relations"]) for r in kb_rows) == 920 - annotated_modality == 658
    with_modality = {f"{d.name}_{r.id}" for d in gold for r in d.relations if _modality(d, r.id)}
    assert not with_modality & {rel["id"] for r in kb_rows for rel in r["relations"]}
    card = (release_dir / "README.md").read_text()
    assert card.startswith("---\n")
    front = card.split("---\n")[1]
    assert f"- config_name: {PREFIX}_source\n  default: true\n" in front
    assert f"- config_name: {PREFIX}_bigbio_kb\n" in front and "license: cc-by-nc-4.0" in front
    assert "negated and hypothetical relations are **excluded** (262 of 920; 658 relations remain)" in card
    assert "There are **no normalizations** in this corpus" in card
    assert ("The annotations are distributed under Creative Commons Attribution Non Commercial 4.0 (`CC-BY-NC-4.0`, "
            "<http://creativecommons.org/licenses/by-nc/4.0/legalcode>). Its text is in `LICENSE.txt`") in card
    assert card.count("The licence does not cover the sentence texts") == 1
    assert (release_dir / "LICENSE.txt").read_text().startswith("Creative Commons Attribution-NonCommercial 4.0 "
                                                                "International\n")


def _decode(labels: list[str]) -> list[tuple[int, int, str]]:
    """BIO spans (token start, token end, type): written here again, independently of pipeline.brat.formats."""
    out, start, kind = [], None, None
    for i, label in enumerate([*labels, "O"]):
        if label.startswith("I-") and kind == label[2:]:
            continue
        if start is not None:
            out.append((start, i, kind))
        start, kind = (i, label[2:]) if label != "O" else (None, None)
    return out


def _conll_spans(path: Path) -> set[tuple[str, int, int, str]]:
    spans = set()
    for block in path.read_text().split("\n\n"):
        lines = [line for line in block.splitlines() if line]
        if not lines:
            continue
        name = lines[0][2:]
        rows = [line.split("\t") for line in lines[1:]]
        for k in range(3, len(rows[0])):
            for s, e, kind in _decode([r[k] for r in rows]):
                spans.add((name, int(rows[s][1]), int(rows[e - 1][2]), kind))
    return spans


@pytest.mark.slow  # a release read back by every reader
def test_format_table_equals_independent_counts(release_dir: Path, gold: list[BratDocument]) -> None:
    info = json.loads((release_dir / "release.json").read_text())
    table: dict[str, Any] = info["formats"]
    contiguous = {(d.name, t.fragments[0][0], t.fragments[0][1], t.type) for d in gold for t in d.textbounds
                  if len(t.fragments) == 1}
    for name in ("conll/corpus.conll", "conll/corpus.layers.conll"):
        found = _conll_spans(release_dir / name)
        features = table[name]["features"]
        assert features["entities"]["kept"] == len(contiguous & found), name
        assert features["discontiguous"]["kept"] == 0 and features["relations"]["status"] == "lost"
    outer = table["conll/corpus.conll"]["features"]["entities"]
    assert (outer["annotated"], outer["kept"], outer["lost"]) == (2178, 1321, 857)
    layers = table["conll/corpus.layers.conll"]["features"]
    assert (layers["entities"]["kept"], layers["nested"]["kept"]) == (2178 - 134, 684 - 50)
    # BioC read with the bioc library: every annotation, location, relation, modality infon and note
    collection = biocxml.loads((release_dir / "bioc" / "corpus.bioc.xml").read_text())
    anns = [a for d in collection.documents for p in d.passages for a in p.annotations]
    rels = [r for d in collection.documents for p in d.passages for r in p.relations]
    bioc = table["bioc/corpus.bioc.xml"]["features"]
    assert len(anns) == bioc["entities"]["kept"] == 2178
    assert sum(len(a.locations) for a in anns) == 2315
    assert all([loc.offset for loc in a.locations] == sorted(loc.offset for loc in a.locations) for a in anns)
    assert len(rels) == bioc["relations"]["kept"] == 920
    assert sum(1 for r in rels if "Negated" in r.infons or "Hypothetical" in r.infons) == bioc["modality"]["kept"]
    assert collection.key == "corpus.key" and (release_dir / "bioc" / "corpus.key").is_file()
    pub = table["pubtator/corpus.pubtator"]["features"]
    assert pub["modality"]["status"] == "kept" and pub["relations"]["status"] == "kept"
    assert pub["notes"]["lost"] == 4  # the four free-text relation notes; modality travels in its column
    kb = table[f"hf/{PREFIX}_bigbio_kb"]["features"]
    assert (kb["relations"]["kept"], kb["modality"]["status"]) == (658, "lost")
    assert all(f["status"] in ("kept", "none annotated") for f in table[f"hf/{PREFIX}_source"]["features"].values())
    readme = (release_dir / "README.md").read_text()
    assert "| `conll/corpus.conll` | CoNLL outermost | partly kept: 1,321 of 2,178 (BIO columns) |" in readme
    assert "Tokens read: `htp` (Hypothetical) 1, `hyp` (Hypothetical) 205, `hypo` (Hypothetical) 1" in readme
    # relation types as annotated, Table 3 by the paper's rule and Table 3b by the normalization
    t3 = (release_dir / "tables" / "table3_relations.csv").read_text().splitlines()
    t3b = (release_dir / "tables" / "table3b_relations_normalized.csv").read_text().splitlines()
    assert t3[-1] == "Total,920,202,4,56,658" and t3b[-1] == "Total,920,202,5,55,658"
    for split in ("train", "dev", "test"):
        assert (release_dir / "splits" / split / "annotation.conf").is_file()
        for f in (f"bioc/{split}.bioc.xml", f"pubtator/{split}.pubtator", f"conll/{split}.conll",
                  f"spacy/{split}.spacy"):
            assert (release_dir / f).is_file(), f
    folds = json.loads((release_dir / "splits" / "folds.json").read_text())
    assert folds["k"] == 10 and sum(f["documents"] for f in folds["folds"]) == 300
    tsv = (release_dir / "splits" / "folds.tsv").read_text().splitlines()
    fold_of_pmid: dict[str, set[str]] = {}
    for line in tsv[1:]:
        _doc, pmid, fold = line.split("\t")
        fold_of_pmid.setdefault(pmid, set()).add(fold)
    assert all(len(f) == 1 for f in fold_of_pmid.values())  # grouped by PMID
    sentences = (release_dir / "sentences.tsv").read_text().splitlines()
    assert sentences[0] == "document\tpmid\tsentence_index\tsplit\tfold\tcharacters\tstart_in_record"
    assert len(sentences) == 301
    # no --author: no CITATION.cff, and the datasheet says why
    assert not (release_dir / "CITATION.cff").exists()
    assert "No authors were given (`release --author`, or `authors` in `--citation`)" in readme


def test_spacy_docbin_counts_equal_the_brat(release_dir: Path, gold: list[BratDocument]) -> None:
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    docs = [d for split in ("train", "dev", "test")
            for d in DocBin().from_disk(release_dir / "spacy" / f"{split}.spacy").get_docs(nlp.vocab)]
    assert len(docs) == 300
    by_name = {d.name: d for d in gold}
    spans = fragments = 0
    linked: set[tuple[str, str]] = set()
    for sdoc in docs:
        bdoc = by_name[sdoc.user_data["name"]]
        assert sdoc.text == bdoc.text
        want = {(t.fragments[0], t.type) for t in bdoc.textbounds if len(t.fragments) == 1}
        assert {((s.start_char, s.end_char), s.label_) for s in sdoc.spans["sc"]} == want
        spans += len(sdoc.spans["sc"])
        fragments += len(sdoc.spans["discontiguous"])
        linked |= {(bdoc.name, s.id_) for s in sdoc.spans["discontiguous"]}
        ents = sorted((e.start, e.end) for e in sdoc.ents)
        assert all(a[1] <= b[0] for a, b in zip(ents, ents[1:], strict=False))  # a flat view
    assert spans == 2178 - 134
    assert len(linked) == 134 and fragments == sum(len(t.fragments) for d in gold for t in d.textbounds
                                                   if len(t.fragments) > 1)


@pytest.mark.slow  # a spaCy started in a subprocess; the release's own .spacy files are read in the fast loop
def test_spacy_convert_reads_the_conll_layout(release_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("spacy")
    src = release_dir / "conll" / "corpus.spacy.conll"
    out = tmp_path / "converted"
    out.mkdir()
    done = subprocess.run([sys.executable, "-m", "spacy", "convert", str(src), str(out), "-c", "ner", "-n", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    converted = list(DocBin().from_disk(out / "corpus.spacy.spacy").get_docs(nlp.vocab))
    n_b = sum(1 for line in src.read_text().splitlines() if "\tB-" in line)
    assert sum(len(d.ents) for d in converted) == n_b
    assert sum(len(d) for d in converted) == sum(1 for line in src.read_text().splitlines()
                                                 if line and not line.startswith("-DOCSTART-"))


@pytest.mark.parametrize("name", ["bioc/corpus.bioc.xml", "bioc/corpus.bioc.json", "pubtator/corpus.pubtator",
                                  f"hf/{PREFIX}_bigbio_kb", f"hf/{PREFIX}_source"])
def test_import_round_trip_loses_only_what_the_table_declares(release_dir: Path, gold: list[BratDocument],
                                                              tmp_path: Path, name: str) -> None:
    from pipeline.brat.formats import FEATURES, inventory
    from pipeline.brat.validate import validate_collection

    out = tmp_path / "back"
    assert main(["import", str(release_dir / name), "--out", str(out)]) == 0
    back, issues = read_directory(out)
    assert issues == [] and validate_collection(out) == []
    declared = json.loads((release_dir / "release.json").read_text())["formats"][name]["features"]
    want, got = inventory(gold), inventory(back)
    for feature in FEATURES:
        assert len(want[feature] - got[feature]) == declared[feature]["lost"], feature
        assert got[feature] <= want[feature], feature  # nothing invented
    assert main(["import", str(release_dir / name), "--out", str(out)]) == 2  # an existing output: refused


@pytest.mark.parametrize("name", ["bioc/corpus.bioc.xml", f"hf/{PREFIX}_bigbio_kb", f"hf/{PREFIX}_source/train.parquet",
                                  "pubtator/corpus.pubtator"])
def test_evaluate_reads_predictions_in_other_formats(release_dir: Path, name: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    assert main(["evaluate", str(gold), str(release_dir / name), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    ner = result["ner"]
    paper = result["paper_settings"]
    if name.endswith("train.parquet"):  # one split: the other gold documents are missed
        assert ner["precision"] == 1.0 and 0 < ner["recall"] < 1
    else:
        assert (ner["tp"], ner["fp"], ner["fn"]) == (2178, 0, 0)
        assert paper["entities"]["partial_any"]["f1"] == 1.0
    # relations in the paper's settings: bigbio_kb holds only the 658 relations without modality
    rel = paper["relations"]["exact_strict_directed"]
    if "bigbio_kb" in name:
        assert (rel["tp"], rel["fp"], rel["fn"]) == (658, 0, 262)
        assert paper["relation_modality"]["same_modality"] == 658  # all "none", as in the gold
    elif not name.endswith("train.parquet"):
        assert (rel["tp"], rel["fp"], rel["fn"]) == (920, 0, 0)
        assert paper["relation_modality"] == {"setting": "exact_strict_directed", "matched": 920,
                                              "same_modality": 920, "agreement": 1.0,
                                              "pairs": paper["relation_modality"]["pairs"]}


def test_evaluate_refuses_an_unknown_prediction_format(release_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    assert main(["evaluate", str(gold), str(release_dir / "conll" / "corpus.conll")]) == 2
    assert "cannot tell the format" in capsys.readouterr().err
