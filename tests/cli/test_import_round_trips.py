"""Issue 40 item 3: ``pgx-corpus import`` gives back what the export claims to keep.

* A PubTator file without its key column (six columns) cannot say which lines are the fragments of one
  entity: refused (exit 2, nothing written) unless ``--no-key-column``, which says on stderr that each line
  came back as one entity.
* BioC and ``bigbio_kb`` keep brat's fragment order: the ``.ann`` line of every entity comes back identical.

Covers: pipeline.brat.bigbio, pipeline.brat.export, pipeline.brat.standoff, pipeline.cli,
pipeline.cli.corpus_commands, pipeline.cli.import_commands, pipeline.schema
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.brat.export import to_pubtator_plain
from pipeline.brat.standoff import BratDocument, parse_ann
from pipeline.cli import main
from pipeline.schema import load_schema

SCHEMA = load_schema()
TEXT = "Levels of warfarin were decreased by CYP2C9 *3 ."
# T2 is discontiguous, its fragments in brat's (non-ascending) order
ANN = ("T1\tChemical 10 18\twarfarin\nT2\tPharmacokinetic_phenotype 10 18;0 9\twarfarin Levels of\n"
       "T3\tGene_or_protein 37 43\tCYP2C9\n")


def brat_doc() -> BratDocument:
    doc, issues = parse_ann("1559_3", TEXT, ANN)
    assert issues == []
    return doc


def six_columns(tmp_path: Path) -> Path:
    src = tmp_path / "corpus.bconv.pubtator"
    src.write_text(to_pubtator_plain([brat_doc()], SCHEMA), encoding="utf-8")
    assert all(len(line.split("\t")) == 6 for line in src.read_text().splitlines() if "\t" in line)
    return src


def test_a_pubtator_file_without_its_key_column_is_refused(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    src = six_columns(tmp_path)
    out = tmp_path / "out"
    assert main(["import", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pgx-corpus import: {src}:3: ") and "no key column" in err and "--no-key-column" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [src.name]


def test_no_key_column_reads_each_line_as_one_entity_and_says_so(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    src = six_columns(tmp_path)
    out = tmp_path / "out"
    assert main(["import", str(src), "--out", str(out), "--no-key-column"]) == 0
    captured = capsys.readouterr()
    # three entities in brat, four lines: the discontiguous T2 comes back as two entities
    assert "1 documents, 4 entities, 0 relations" in captured.out
    assert "4 entity lines without a key column" in captured.err
    assert "a discontiguous entity comes back as one entity per line" in captured.err
    ann = (out / "1559_3.ann").read_text()
    assert sorted(line.split("\t")[1] for line in ann.splitlines()) == [
        "Chemical 10 18", "Gene_or_protein 37 43", "Pharmacokinetic_phenotype 0 9", "Pharmacokinetic_phenotype 10 18"]


def test_the_release_six_column_file_of_dev_is_refused_then_read_with_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.brat.standoff import read_directory
    from tests.conftest import shared_path

    docs, issues = read_directory(shared_path("data", "pgxcorpus-dev", "gold"))
    assert issues == []
    src = tmp_path / "dev.bconv.pubtator"
    src.write_text(to_pubtator_plain(docs, SCHEMA), encoding="utf-8")
    assert main(["import", str(src), "--out", str(tmp_path / "refused")]) == 2
    assert not (tmp_path / "refused").exists()
    capsys.readouterr()
    assert main(["import", str(src), "--out", str(tmp_path / "out"), "--no-key-column"]) == 0
    captured = capsys.readouterr()
    fragments = sum(len([f for f in t.fragments if f[1] > f[0]]) for d in docs for t in d.textbounds)
    assert fragments > sum(len(d.textbounds) for d in docs)  # dev has discontiguous entities
    assert f"{fragments} entity lines without a key column" in captured.err
    assert f"{fragments} entities" in captured.out


def entity_lines(docs: list[BratDocument]) -> dict[tuple[str, str], str]:
    """(document, entity id) -> its ``.ann`` line, the text column right-stripped.

    The PGxCorpus gold pads some text columns with a trailing space (the covered text does not have it);
    an import writes the covered text, which is the text column brat itself writes.
    """
    out = {}
    for d in docs:
        for t in d.textbounds:
            frags = ";".join(f"{s} {e}" for s, e in t.fragments)
            out[(d.name, t.id)] = f"{t.id}\t{t.type} {frags}\t{t.text.rstrip()}"
    return out


@pytest.mark.parametrize("corpus", ["pgxcorpus-dev", "pgxcorpus-more"])
@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json", "bigbio_kb"])
def test_bioc_and_bigbio_kb_round_trips_give_back_every_entity_line(tmp_path: Path, corpus: str, fmt: str) -> None:
    from pipeline.brat import bigbio
    from pipeline.brat.standoff import read_directory
    from tests.conftest import shared_path

    gold = shared_path("data", corpus, "gold")
    docs, issues = read_directory(gold)
    assert issues == []
    assert any(list(t.fragments) != sorted(t.fragments) for d in docs for t in d.textbounds)  # what is tested
    if fmt == "bigbio_kb":  # as the release writes its hf/ config
        src = bigbio.write_parquet([bigbio.kb_row(d) for d in docs], bigbio.KB_SCHEMA, tmp_path / "kb.parquet")
    else:
        src = tmp_path / ("corpus.xml" if fmt == "bioc-xml" else "corpus.json")
        assert main(["export", str(gold), "--format", fmt, "--out", str(src), "--no-relation-map"]) == 0
    out = tmp_path / "back"
    assert main(["import", str(src), "--out", str(out)]) == 0
    back, issues = read_directory(out)
    assert issues == []
    want, got = entity_lines(docs), entity_lines(back)
    assert len(want) > 2000 and got == want


@pytest.mark.parametrize("order", ["1,1", "3,1", "a,b"])
def test_a_bioc_fragment_order_that_is_no_order_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          order: str) -> None:
    src = tmp_path / "corpus.xml"
    from pipeline.brat.standoff import write_document

    write_document(tmp_path / "brat", brat_doc())
    assert main(["export", str(tmp_path / "brat"), "--format", "bioc-xml", "--out", str(src)]) == 0
    xml = src.read_text(encoding="utf-8")
    assert xml.count('<infon key="fragment_order">2,1</infon>') == 1  # T2 only
    src.write_text(xml.replace('<infon key="fragment_order">2,1</infon>',
                               f'<infon key="fragment_order">{order}</infon>'), encoding="utf-8")
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["import", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{src}:" in err and "document 1 (id '1559_3')" in err and "annotation 'T2': infon fragment_order" in err
    assert not out.exists() and not list(tmp_path.glob(".out*"))
