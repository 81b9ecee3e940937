"""release: formats, tables, datasheet with provenance, SHA256SUMS, byte-identical across runs.

Covers: pipeline.brat.standoff, pipeline.campaign.finalize, pipeline.campaign.release.accounts,
pipeline.campaign.release.charts, pipeline.campaign.release.files, pipeline.campaign.release.read,
pipeline.campaign.release.tables, pipeline.campaign.release_data, pipeline.cli, pipeline.cli.release_commands,
pipeline.documents, pipeline.schema
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from bioc import biocjson, biocxml

from pipeline.campaign.finalize import finalize
from pipeline.campaign.release.charts import write_chart
from pipeline.cli import main
from pipeline.documents import SentenceRecord, to_dict
from tests.campaign.builders import SCHEMA, TEXTS, build_campaign, build_preannotation
from tests.campaign.test_finalize import tree
from tests.conftest import PROJECT


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    return build_inputs(tmp_path)


def build_inputs(tmp_path: Path) -> dict[str, Path]:
    """The demo campaign, its final corpus, pre-annotation, build manifest and decisions file under tmp_path."""
    campaign = build_campaign(tmp_path)
    ann = campaign / "phase2" / "senior1" / "100_2.ann"
    ann.write_text(ann.read_text().replace("Disputed_treats", "treats"))  # the senior accepts the relation
    final = tmp_path / "final"
    finalize(campaign, final, SCHEMA)
    pre = build_preannotation(tmp_path)
    run = tmp_path / "out" / "runs" / "abc123"
    run.mkdir(parents=True)
    # the build's sampled sentences: every document of the campaign (the pre-annotation has only two)
    sampled = tmp_path / "out" / "sampled_build"
    sampled.mkdir(parents=True)
    with gzip.open(sampled / "shard-000000.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(to_dict(SentenceRecord(n.split("_")[0], int(n.split("_")[1]) - 1, text,
                                                           start=0))) + "\n" for n, text in TEXTS.items()))
    manifest = run / "manifest.json"
    manifest.write_text(json.dumps({
        "params": {"out": str(tmp_path / "out"), "sample": "all", "seed": 13},
        "search": {"query": "pharmacogenomics[MeSH]", "search_date": "2026-01-05", "count": 1234, "pmids": 1234},
        "stages": {"documents": {"documents": 1200}, "sampled": {"sentences": 6}},
        "outputs": {"brat": str(pre), "sampled": str(sampled)},
        "versions": {"python": "3.11.9", "spacy": "3.7.5", "model:en_core_web_sm": "3.7.1"},
        "config_hashes": {"schema": "ab" * 32},
        "seeds": {"sample": 13, "batch": 13},
        "failures": [],
    }))
    decisions = tmp_path / "phase3.yaml"
    decisions.write_text("retype:\n  - {term: thrombosis, from: Disease, to: Disease, why: kept as Disease}\n"
                         "relations:\n  - {from: transports, to: influences, arg1: Gene_or_protein}\n"
                         "remove:\n  - {pattern: 'patients?', why: 'not a phenotype | guideline 2'}\n")
    return {"campaign": campaign, "final": final, "manifest": manifest, "pre": pre, "decisions": decisions}


AUTHORS = ("--author", "Doe, Jane", "--author", "Smaïl-Tabbone, Malika", "--author", "Demo Annotation Team")


def run_release(inputs: dict[str, Path], out: Path, *extra: str, metadata: tuple[str, ...] = (
        *AUTHORS, "--license", "CC-BY-4.0")) -> int:
    return main(["release", str(inputs["final"]), "--out", str(out), "--campaign", str(inputs["campaign"]),
                 "--manifest", str(inputs["manifest"]), "--name", "pgx-demo", "--release-version", "1.0",
                 "--date", "2026-02-01", "--decisions", str(inputs["decisions"]), *metadata, *extra])


@pytest.mark.slow  # two releases of a campaign, compared byte for byte
def test_release_is_complete_and_byte_identical(inputs: dict[str, Path], tmp_path: Path) -> None:
    first, second = tmp_path / "rel1", tmp_path / "rel2"
    assert run_release(inputs, first) == 0
    assert run_release(inputs, second) == 0
    files = tree(first)
    assert files == tree(second)
    # a rerun into the same directory replaces it with the same bytes
    assert run_release(inputs, first) == 0
    assert tree(first) == files

    sums = files["SHA256SUMS"].decode().splitlines()
    listed = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in sums}
    assert set(listed) == set(files) - {"SHA256SUMS"}
    assert all(hashlib.sha256(files[p]).hexdigest() == h for p, h in listed.items())

    for name in ("brat/100_1.ann", "brat/100_2.ann", "brat/300_1.ann", "brat/annotation.conf", "brat/visual.conf",
                 "GUIDELINES.md", "CITATION.cff", "CHANGELOG.md", "sentences.tsv", "bioc/corpus.key",
                 "pubtator/corpus.bconv.pubtator", "conll/corpus.layers.conll", "conll/corpus.spacy.conll",
                 "hf/pgx_demo_source/train.parquet", "hf/pgx_demo_bigbio_kb/test.parquet", "spacy/train.spacy",
                 "splits/train/annotation.conf", "bioc/train.bioc.xml",
                 "brat.tar.gz", "bioc/corpus.bioc.xml", "bioc/corpus.bioc.json", "pubtator/corpus.pubtator",
                 "conll/corpus.conll", "splits/pmids_train.txt", "splits/pmids_dev.txt", "splits/pmids_test.txt",
                 "splits/splits.json", "README.md", "release.json"):
        assert name in files, name
    for table in ("table2_entities", "table3_relations", "table8_entities_agreement",
                  "table9_relations_agreement", "table10_preannotation"):
        for ext in ("md", "csv", "png"):
            assert f"tables/{table}.{ext}" in files, (table, ext)
    assert files["tables/table2_entities.png"].startswith(b"\x89PNG")
    assert b"Software" not in files["tables/table2_entities.png"]
    assert b"matplotlib" not in files["tables/table8_entities_agreement.png"]

    # the same documents and annotations in every format
    collection = biocxml.loads(files["bioc/corpus.bioc.xml"].decode())
    assert collection.date == "2026-02-01"
    assert [d.id for d in collection.documents] == ["100_1", "100_2", "300_1"]
    rel = collection.documents[2].passages[0].relations[0]
    assert rel.infons["type"] == "increases" and rel.infons["Negated"] == "true"
    assert [d.id for d in biocjson.loads(files["bioc/corpus.bioc.json"].decode()).documents] == ["100_1", "100_2",
                                                                                               "300_1"]
    # abstract level: numeric PMID, document offsets, the brat document and id in the last column
    assert "300\t39\t57\tendometrial cancer\tDisease\t-\t300_1:T2\n" in files["pubtator/corpus.pubtator"].decode()
    assert "endometrial\t39\t50\tB-Disease" in files["conll/corpus.conll"].decode()
    split = json.loads(files["splits/splits.json"])
    assert sum(s["documents"] for s in split["splits"].values()) == 3
    assert split["ratios"] == [60.0, 20.0, 20.0]
    with tarfile.open(first / "brat.tar.gz") as tar:
        members = tar.getmembers()
        assert {m.name for m in members} >= {"pgx-demo", "pgx-demo/100_1.ann", "pgx-demo/annotation.conf"}
        assert all(m.mtime == 0 and m.uname == "" for m in members)
        member = tar.extractfile("pgx-demo/300_1.ann")
        assert member is not None and member.read() == files["brat/300_1.ann"]

    # tables
    t2 = files["tables/table2_entities.csv"].decode().splitlines()
    assert t2[0] == "type,simple,nested,discontiguous,both,total"
    assert "Chemical,3,0,0,0,3" in t2 and t2[-1] == "Total,6,0,0,0,6"
    t3 = files["tables/table3_relations.csv"].decode().splitlines()
    assert t3[0] == "type,total,Negated,none"
    # relation types as annotated: metabolizes is not folded into influences
    assert {"influences,1,0,1", "metabolizes,1,0,1", "increases,1,1,0", "treats,1,0,1"} <= set(t3)
    t8 = files["tables/table8_entities_agreement.csv"].decode().splitlines()
    assert "ann1 vs ann2,2,exact_strict,4,0,0,100.0,100.0,100.0" in t8
    assert "all pairs,3,exact_strict,4,0,0,100.0,100.0,100.0" in t8
    t9 = files["tables/table9_relations_agreement.csv"].decode().splitlines()
    # ann2 missed the relation of 100_1: ann1 has 2 relations, ann2 1
    assert "ann1 vs ann2,2,exact_strict_directed,1,0,1,100.0,50.0,66.7" in t9
    # modality agreement on the matched relations, a figure of its own
    t9b = files["tables/table9b_relation_modality_agreement.csv"].decode().splitlines()
    assert t9b[0] == "pair,setting,matched relations,same modality,agreement"
    assert "all pairs,exact_strict_directed,1,1,100.0" in t9b
    t10 = files["tables/table10_preannotation.csv"].decode().splitlines()
    # final: 4 entities in 100_1 and 300_1 (2 in 100_2 without pre-annotation); pre: CYP2D6, Tamoxifen, cancer
    assert "exact_same,2,2,1,2,66.7,50.0,57.1" in t10
    assert "partial_same,2,3,0,1,100.0,75.0,85.7" in t10

    readme = files["README.md"].decode()
    assert readme.startswith("---\n") and "\n# pgx-demo 1.0\n" in readme
    for expected in ("Release date: 2026-02-01", "3 sentences from 2 abstracts, 6 entities, 4 relations",
                     "query: `pharmacogenomics[MeSH]`", "search date: 2026-01-05; PubMed hits: 1234",
                     "seeds: batch 13, sample 13", "| sampled | sentences 6 |", "| spacy | 3.7.5 |",
                     "| model:en_core_web_sm | 3.7.1 |", "| out | out |", "two of 3 annotators",
                     "is a training view of `pgx-corpus export` and is not applied here",
                     "influences 1, increases 1, metabolizes 1, treats 1", "sha256sum -c SHA256SUMS",
                     "## Table 8: entity agreement",
                     "| all pairs | 3 | exact_strict_directed | 1 | 0 | 1 | 100.0 | 50.0 | 66.7 |",
                     "1 document(s) were held back (unresolved disagreement or failed validation), 0 were not "
                     "signed off by their senior and 1 were discarded by their senior",
                     "Of the 6 sentences assigned, 2 were discarded in phase 1 by at least one annotator "
                     "(scope 1, typo 1, unspecified 1)"):
        assert expected in readme, expected
    assert "| ann1 vs ann2 |" not in readme  # per pair: in tables/ only
    assert files["decisions/phase3.yaml"] == inputs["decisions"].read_bytes()
    guide = files["GUIDELINES.md"].decode()
    assert "| `metabolizes` | `Gene_or_protein` | `Chemical` |" in guide and "| `not` | Negated |" in guide
    assert "| phase3.yaml | retype | thrombosis | Disease -> Disease | kept as Disease |" in readme
    assert "| phase3.yaml | remove | /patients?/ | any type removed | not a phenotype \\| guideline 2 |" in readme
    assert "| phase3.yaml | relations | transports (Gene_or_protein -> *) | -> influences |  |" in readme
    assert str(tmp_path) not in readme and str(tmp_path) not in files["release.json"].decode()


def test_a_chart_is_the_same_bytes_for_the_same_input(tmp_path: Path) -> None:
    """The charts' determinism in the everyday loop (the releases of the other fast tests write no chart
    but test_release_without_campaign_or_manifest's; whole releases are compared byte for byte in the slow
    tests above): two series, a NaN drawn as no bar, rotated value labels."""
    chart = ("F1 (%)", [f"pair {i}" for i in range(13)],
             {"exact": [100.0, float("nan"), *range(11)], "partial": [50.0, 66.7, *range(11)]})
    first, second, other = tmp_path / "a.png", tmp_path / "b.png", tmp_path / "c.png"
    write_chart(first, "Table 8: entity agreement", chart)
    write_chart(second, "Table 8: entity agreement", chart)
    write_chart(other, "Table 8: entity agreement", (chart[0], chart[1], {"exact": chart[2]["exact"]}))
    data = first.read_bytes()
    assert data == second.read_bytes() and data != other.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and b"Software" not in data and b"matplotlib" not in data


def test_release_refuses_campaign_marks_and_invalid_documents(inputs: dict[str, Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    final = inputs["final"]
    with open(final / "300_1.ann", "a") as fh:
        fh.write("A9\tDisagreement T1 ann1\n")
    (final / "100_1.ann").write_text("T1\tChemical 0 6\tCYP2D7\n")
    assert main(["release", str(final), "--out", str(tmp_path / "rel")]) == 2  # REFUSED: nothing written
    err = capsys.readouterr().err
    assert f"{final}/300_1.ann:5: T1 still carries Disagreement=ann1" in err
    assert f"{final}/100_1.ann:1:" in err and "nothing released" in err
    assert not (tmp_path / "rel").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text("retype:\n  - {term: x, to: Drug}\n")
    assert main(["release", str(final), "--out", str(tmp_path / "rel"), "--decisions", str(bad)]) == 2
    assert "'Drug' is not an entity type" in capsys.readouterr().err
    assert not (tmp_path / "rel").exists()


def test_release_without_campaign_or_manifest(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "rel"
    assert main(["release", str(inputs["final"]), "--out", str(out)]) == 0
    names = {p.name for p in (out / "tables").iterdir()}
    assert "table2_entities.md" in names and not any(n.startswith(("table8", "table10")) for n in names)
    readme = (out / "README.md").read_text()
    assert "provenance not recorded" in readme and "annotation-process figures are not reported" in readme


@pytest.mark.slow  # two releases
def test_changelog_and_demo_dataset(inputs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "rel1", tmp_path / "rel2"
    assert run_release(inputs, first) == 0
    assert "First release: 3 documents." in (first / "CHANGELOG.md").read_text()
    ann = inputs["final"] / "300_1.ann"
    ann.write_text(ann.read_text().replace("A1\tNegated R1\n", "").replace("#1\tAnnotatorNotes R1\tneg\n", ""))
    # the build's sentence records give each sentence's offset in its PubMed record (when the text matches)
    sampled = tmp_path / "out" / "sampled"
    sampled.mkdir(parents=True)
    records = [SentenceRecord("100", 1, (inputs["final"] / "100_2.txt").read_text(), start=57),
               SentenceRecord("300", 0, "not the released text", start=0)]
    with gzip.open(sampled / "shard-000000.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(to_dict(r)) + "\n" for r in records))
    manifest = json.loads(inputs["manifest"].read_text())
    manifest["outputs"]["sampled"] = str(sampled)
    inputs["manifest"].write_text(json.dumps(manifest))
    assert run_release(inputs, second, "--previous", str(first)) == 0
    rows = [line.split("\t") for line in (second / "sentences.tsv").read_text().splitlines()]
    assert rows[0][-1] == "start_in_record"
    assert {r[0]: r[-1] for r in rows[1:]} == {"100_1": "", "100_2": "57", "300_1": ""}
    log = (second / "CHANGELOG.md").read_text()
    assert "## 1.0 (since 1.0)" in log and "0 added, 0 removed, 1 with changed text or annotations, 2 unchanged" in log
    assert "### Changed\n\n- 300_1\n" in log
    assert run_release(inputs, tmp_path / "rel3", "--previous", str(tmp_path)) == 2
    assert "not a release directory" in capsys.readouterr().err
    # the demo release loads with datasets: its empty dev split is left out of the card
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True, raising=False)
    loaded = datasets.load_dataset(str(second), cache_dir=str(tmp_path / "cache"))
    assert {k: len(v) for k, v in loaded.items()} == {"train": 2, "test": 1}
    kb = datasets.load_dataset(str(second), "pgx_demo_bigbio_kb", cache_dir=str(tmp_path / "cache"))
    # 4 relations annotated; R1 of 300_1 lost its Negated attribute above, so none is excluded now
    assert sum(len(r["relations"]) for s in kb for r in kb[s]) == 4
    info = json.loads((second / "release.json").read_text())
    assert info["formats"]["hf/pgx_demo_bigbio_kb"]["features"]["relations"]["status"] == "kept"
    assert info["formats"]["hf/pgx_demo_source"]["features"]["relation types"]["kept"] == 4
    assert info["license"] == "CC-BY-4.0" and info["authors"] == ["Jane Doe", "Malika Smaïl-Tabbone",
                                                                  "Demo Annotation Team"]


@pytest.mark.slow  # releases in two interpreters
def test_release_is_byte_identical_across_processes(inputs: dict[str, Path], tmp_path: Path) -> None:
    """Two interpreters with different hash seeds (set and dict orders of strings differ) write the same bytes."""
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"rel{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(PROJECT)}
        subprocess.run([sys.executable, "-m", "pipeline", "--log-level", "WARNING", "release", str(inputs["final"]),
                        "--out", str(out), "--campaign", str(inputs["campaign"]), "--manifest",
                        str(inputs["manifest"])], check=True, env=env, cwd=tmp_path, capture_output=True)
        outputs.append(tree(out))
    assert outputs[0] == outputs[1]
    assert "tables/table10_preannotation.png" in outputs[0]


def test_release_of_an_older_final_writes_modality_as_notes(inputs: dict[str, Path], tmp_path: Path,
                                                            charts_not_drawn: list[str]) -> None:
    """A FINAL written before modality moved to notes (Negated/Hypothetical attributes on relations)."""
    final = inputs["final"]
    ann = final / "300_1.ann"
    ann.write_text(ann.read_text().replace("#1\tAnnotatorNotes R1\tneg\n", "A1\tNegated R1\n"))
    conf = final / "annotation.conf"
    conf.write_text(conf.read_text().rstrip("\n") + "\nNegated\tArg:<RELATION>\nHypothetical\tArg:<RELATION>\n")
    out = tmp_path / "rel"
    assert main(["release", str(final), "--out", str(out)]) == 0
    assert (out / "brat" / "300_1.ann").read_text().endswith("R1\tincreases Arg1:T1 Arg2:T2\t\n"
                                                             "#1\tAnnotatorNotes R1\tneg\n")
    assert "<RELATION>" not in (out / "brat" / "annotation.conf").read_text()


def test_release_refuses_a_symlink_in_final(inputs: dict[str, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 23, defect 9: a link in FINAL is never followed into the release."""
    final = inputs["final"]
    secret = tmp_path / "secret.txt"
    secret.write_text(final.joinpath("100_1.txt").read_text(encoding="utf-8"), encoding="utf-8")
    (final / "100_1.txt").unlink()
    (final / "100_1.txt").symlink_to(secret)
    assert main(["release", str(final), "--out", str(tmp_path / "rel")]) == 2
    err = capsys.readouterr().err
    assert f"{final}/100_1.txt: symbolic link inside the collection, not followed" in err
    assert not (tmp_path / "rel").exists()


def test_table10_gains_relation_rows_when_relations_were_preannotated(tmp_path: Path) -> None:
    from pipeline.brat.standoff import parse_ann
    from pipeline.campaign.release.tables import preannotation_table
    from pipeline.schema import load_schema

    text = "Warfarin dosing depends on VKORC1 ."
    final, _ = parse_ann("1_1", text, "T1\tChemical 0 8\tWarfarin\nT2\tGene_or_protein 27 33\tVKORC1\n"
                         "R1\tinfluences Arg1:T2 Arg2:T1\t\n")
    pre = tmp_path / "pre"
    pre.mkdir()
    (pre / "1_1.txt").write_text(text)
    (pre / "1_1.ann").write_text("T1\tChemical 0 8\tWarfarin\nT2\tGene_or_protein 27 33\tVKORC1\n"
                                 "R1\tisAssociatedWith Arg1:T2 Arg2:T1\t\n")
    table, extra = preannotation_table(pre, [final], load_schema())
    rows = {r[0]: r for r in table.rows}
    assert rows["relations exact_strict_directed"][2:5] == [0, 1, 1]
    # the agreement's hierarchy setting expands both sides to their ancestors: the shared
    # isAssociatedWith is a TP, the final relation's own influences a FN
    assert rows["relations exact_hierarchy_directed"][2:5] == [1, 0, 1]
    assert set(extra["relations"]) == {r[len("relations "):] for r in rows if r.startswith("relations ")}
    # no relation pre-annotated: no relation row, as before
    (pre / "1_1.ann").write_text("T1\tChemical 0 8\tWarfarin\n")
    table, extra = preannotation_table(pre, [final], load_schema())
    assert not any(str(r[0]).startswith("relations") for r in table.rows) and "relations" not in extra


@pytest.mark.parametrize(("flag", "expected"), [("True", "Relations were pre-annotated"),
                                                ("False", "Relations were not pre-annotated")])
def test_datasheet_says_whether_relations_were_preannotated(inputs: dict[str, Path], tmp_path: Path, flag: str,
                                                            expected: str, charts_not_drawn: list[str]) -> None:
    manifest = json.loads(inputs["manifest"].read_text())
    manifest["params"]["relations"] = flag
    inputs["manifest"].write_text(json.dumps(manifest))
    assert run_release(inputs, tmp_path / "rel") == 0
    readme = (tmp_path / "rel" / "README.md").read_text()
    assert expected in readme
    after = readme.split(expected, 1)[1][:400]
    assert "Table 9" in after  # either way, relation agreement is not said to be comparable with the paper's
    # without build-time proposals, the button that may have proposed relations in brat is named
    assert ("Suggest relations" in after) == (flag == "False")


def test_calibration_copies_of_a_promoted_document_are_not_campaign_work(tmp_path: Path) -> None:
    """A calibration document the manager promoted stays in every calibration annotator's collection; Tables
    8-9 and the phase-1 discards count only the two annotators the campaign assigns it (found by the months
    test in tests/campaign/test_team.py)."""
    from pipeline.campaign.release.accounts import campaign_info
    from pipeline.campaign.release.read import phase1_assignments
    from pipeline.campaign.release.tables import agreement_tables

    campaign = tmp_path / "campaign"
    text = "Warfarin doses were lower in CYP2C9 carriers."
    anns = {"ann1": "T1\tChemical 0 8\tWarfarin\n", "ann2": "T1\tChemical 0 8\tWarfarin\n",
            # ann3 annotated it in the calibration round only, and discarded it there
            "ann3": "T1\tGene_or_protein 29 35\tCYP2C9\nT2\tDiscard 0 8\tWarfarin\nA1\tReason T2 ambiguous\n"}
    for person, ann in anns.items():
        coll = campaign / "phase1" / person
        coll.mkdir(parents=True)
        (coll / "900_1.txt").write_text(text, encoding="utf-8")
        (coll / "900_1.ann").write_text(ann, encoding="utf-8")
    (campaign / "campaign.json").write_text(json.dumps({"documents": [
        {"document": "900_1", "files": ["900_1"], "phase1": ["ann1", "ann2"], "phase2": "sen1"}]}),
        encoding="utf-8")
    assert phase1_assignments(campaign) == {"ann1": {"900_1"}, "ann2": {"900_1"}}
    _tables, summary = agreement_tables(campaign, {"900_1"}, SCHEMA)
    assert [(p["pair"], p["documents"]) for p in summary["pairs"]] == [("ann1 vs ann2", 1)]
    assert all(m["f1"] == 1.0 for m in summary["pooled_entities"].values())
    final = tmp_path / "final"
    final.mkdir()
    info = campaign_info(campaign, final, ["900_1"], ["900_1"])
    assert info is not None and info["discarded_phase1"] == 0 and info["discard_reasons"] == {}


def test_guidelines_counts_and_pubtator_losses_logged_once(inputs: dict[str, Path], tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture,
                                                           charts_not_drawn: list[str]) -> None:
    """GUIDELINES.md gives every relation type's count, 0 included; each PubTator loss is one log line naming
    the files that have it (not one line per file written)."""
    ann = inputs["final"] / "100_1.ann"
    ann.write_text(ann.read_text() + "#7\tAnnotatorNotes T1\ta free comment\n")
    out = tmp_path / "rel"
    assert run_release(inputs, out) == 0
    guide = (out / "GUIDELINES.md").read_text()
    assert "| `transports` | `Gene_or_protein` | `Chemical` | 0 |" in guide
    assert "| `metabolizes` | `Gene_or_protein` | `Chemical` | 1 |" in guide
    assert "| `treats` |" in guide and "| 1 |" in guide.split("| `treats` |", 1)[1].splitlines()[0]
    lines = [r.getMessage() for r in caplog.records if "PubTator" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "notes_dropped: pubtator/corpus.bconv.pubtator 1, pubtator/corpus.pubtator 1, " in lines[0]
    losses = json.loads((out / "release.json").read_text())["export"]["pubtator_losses"]
    assert losses["pubtator/corpus.pubtator"] == {"notes_dropped": 1}
