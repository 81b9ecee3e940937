"""Issue 41, ``pgx-corpus import``: files that come from outside are hostile until checked.

Each case is a small input made here.  For each: the exit code; the message names the input file and the
record (or line); nothing is written outside the output; no partial output is left (no ``--out``, no
``.OUT.import-tmp``).  The size cases run in a child process, whose peak memory (under 1 GiB) and time
(under 60 s) are measured.

Covers: pipeline.brat.bigbio, pipeline.brat.intake, pipeline.brat.standoff, pipeline.cli, pipeline.cli.import_commands
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.brat import bigbio
from pipeline.brat.standoff import BratDocument, Note, Relation, TextBound
from pipeline.cli import main
from tests.conftest import PROJECT

TEXT = "Warfarin doses were lower in CYP2C9 carriers."
CHEM = '<annotation id="T1"><infon key="type">Chemical</infon>{extra}<location offset="0" length="8"/>' \
       "<text>Warfarin</text></annotation>"
GENE = '<annotation id="T2"><infon key="type">Gene_or_protein</infon><location offset="29" length="6"/>' \
       "<text>CYP2C9</text></annotation>"
REL = '<relation id="R1"><infon key="type">influences</infon><node refid="T2" role="Arg1"/>' \
      '<node refid="{arg2}" role="Arg2"/></relation>'


def bioc_doc(doc_id: str | None = "1_1", *, text: str = TEXT, offset: int = 0, chem_extra: str = "",
             chem: str | None = None, rel_arg2: str = "T1") -> str:
    id_element = f"<id>{doc_id}</id>" if doc_id is not None else ""
    chem = CHEM.format(extra=chem_extra) if chem is None else chem
    return (f"<document>{id_element}<passage><offset>{offset}</offset><text>{text}</text>{chem}{GENE}"
            f"{REL.format(arg2=rel_arg2)}</passage></document>")


def bioc_xml(*docs: str) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<collection><source>test</source><date>2026</date>'
            "<key>corpus.key</key>\n" + "\n".join(docs) + "\n</collection>\n")


def brat_doc(name: str = "1_1") -> BratDocument:
    doc = BratDocument(name, TEXT)
    doc.textbounds = [TextBound("T1", "Chemical", ((0, 8),), "Warfarin"),
                      TextBound("T2", "Gene_or_protein", ((29, 35),), "CYP2C9")]
    doc.relations = [Relation("R1", "influences", (("Arg1", "T2"), ("Arg2", "T1")))]
    doc.notes = [Note("#1", "AnnotatorNotes", "T1", "a drug")]
    return doc


def source_rows(*names: str) -> list[dict]:
    return [bigbio.source_row(brat_doc(n)) for n in names]


def write_source(path: Path, rows: list[dict]) -> Path:
    return bigbio.write_parquet(rows, bigbio.SOURCE_SCHEMA, path)


def write_kb(path: Path, rows: list[dict]) -> Path:
    return bigbio.write_parquet(rows, bigbio.KB_SCHEMA, path)


def tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): (p.stat().st_size if p.is_file() else -1) for p in root.rglob("*")}


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], src: Path, *needles: str,
            extra: list[str] | None = None) -> str:
    """Import ``src`` into ``tmp_path/work/out``: refused (2), the message names ``src`` and each needle,
    nothing written anywhere (no output, no temporary)."""
    out = tmp_path / "work" / "out"
    out.parent.mkdir(exist_ok=True)
    before = tree(tmp_path)
    code = main(["import", str(src), "--out", str(out), *(extra or [])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"pgx-corpus import: {src}"), err
    for needle in needles:
        assert needle in err, (needle, err)
    assert "Traceback" not in err
    assert tree(tmp_path) == before, "something was written (or left) on a refusal"
    return err


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str], src: Path, extra: list[str] | None = None) -> Path:
    out = tmp_path / "work" / "out"
    out.parent.mkdir(exist_ok=True)
    before = tree(tmp_path)
    code = main(["import", str(src), "--out", str(out), *(extra or [])])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    added = set(tree(tmp_path)) - set(before)
    assert all(p.startswith("work/out") for p in added), added
    return out


# --- the baseline imports -------------------------------------------------------------------------------

def test_a_sound_bioc_file_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(bioc_doc("1_1"), bioc_doc("1_2", chem_extra='<infon key="note">a drug</infon>')))
    out = imported(tmp_path, capsys, src)
    assert (out / "1_2.ann").read_text().splitlines() == [
        "T1\tChemical 0 8\tWarfarin", "T2\tGene_or_protein 29 35\tCYP2C9", "R1\tinfluences Arg1:T2 Arg2:T1\t",
        "#1\tAnnotatorNotes T1\ta drug"]
    assert not list(out.parent.glob(".out*"))


# --- item 2: brat line injection --------------------------------------------------------------------------

@pytest.mark.parametrize(("chem", "needle"), [
    (CHEM.format(extra='<infon key="note">x&#10;T9\tChemical 0 8\tWarfarin</infon>'), "text of #1"),
    (CHEM.format(extra='<infon key="identifier">MESH:D1&#9;x&#10;T9\tChemical 0 8\tWarfarin</infon>'),
     "identifier of N1"),
    (CHEM.format(extra="").replace(">Chemical<", ">Chemical 0 8&#9;Warfarin&#10;T9&#9;Chemical<"), "type of T1"),
    (CHEM.format(extra="").replace('id="T1"', 'id="T1&#9;Chemical 0 8&#9;W&#10;T9"'), "annotation id"),
    (CHEM.format(extra='<infon key="Composite">a b&#10;T9</infon>'), "value of A1"),
])
def test_a_tab_or_newline_in_a_bioc_field_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], chem: str,
                                                     needle: str) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(bioc_doc("1_1"), bioc_doc("1_2", chem=chem)))
    refused(tmp_path, capsys, src, f"{src}:4: document 2 (id '1_2')", needle, "refused")


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("type", "Chemical 0 8\tWarfarin\nT9\tChemical", "type of T1"),
    ("notes", ["x\nT9\tChemical 0 8\tWarfarin"], "text of #1"),
])
def test_a_tab_or_newline_in_a_parquet_field_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        field: str, value: object, needle: str) -> None:
    rows = source_rows("1_1", "1_2")
    rows[1]["entities"][0][field] = value
    src = write_source(tmp_path / "train.parquet", rows)
    refused(tmp_path, capsys, src, f"{src}: row 2 (id '1_2')", needle, "refused")


# --- item 4: size, memory, time ---------------------------------------------------------------------------

def measured(tmp_path: Path, argv: list[str]) -> tuple[int, str, int, float]:
    """``pgx-corpus ARGV`` in a child: exit code, stderr, peak resident memory (bytes), seconds."""
    peak = tmp_path / "peak"
    script = ("import resource, sys\nfrom pipeline.cli import main\ncode = main(sys.argv[1:])\n"
              f"open({str(peak)!r}, 'w').write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
              "sys.exit(code)\n")
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    seconds = time.monotonic() - start
    return done.returncode, done.stderr, int(peak.read_text()) * 1024, seconds


def refused_measured(tmp_path: Path, src: Path, *needles: str, extra: list[str] | None = None) -> None:
    out = tmp_path / "work" / "out"
    out.parent.mkdir(exist_ok=True)
    before = tree(tmp_path)
    code, err, peak, seconds = measured(tmp_path, ["import", str(src), "--out", str(out), *(extra or [])])
    assert code == 2, err
    assert err.startswith(f"pgx-corpus import: {src}"), err
    for needle in needles:
        assert needle in err, (needle, err)
    assert peak < 2**30, f"peak memory {peak / 2**20:.0f} MiB"
    assert seconds < 60, f"{seconds:.1f} s"
    assert {k: v for k, v in tree(tmp_path).items() if k != "peak"} == before


@pytest.mark.slow
def test_a_466_byte_bioc_file_with_a_far_passage_offset_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "far.xml"
    src.write_text(bioc_xml(bioc_doc("1_1", offset=300_000_000)))
    assert src.stat().st_size < 1000
    refused_measured(tmp_path, src, "document 1 (id '1_1')", "passage offset 300,000,000", "--max-text-chars")


@pytest.mark.slow
def test_a_small_parquet_file_with_a_far_passage_offset_is_refused(tmp_path: Path) -> None:
    row = bigbio.kb_row(brat_doc())
    row["passages"][0]["offsets"] = [[300_000_000, 300_000_045]]
    src = write_kb(tmp_path / "kb.parquet", [row])
    assert src.stat().st_size < 10_000
    refused_measured(tmp_path, src, "row 1 (id '1_1')", "passage offset 300,000,000", "--max-text-chars")


@pytest.mark.slow
def test_a_gzip_pubtator_bomb_is_streamed_and_refused(tmp_path: Path) -> None:
    src = tmp_path / "bomb.pubtator"
    chunk = b"a" * 2**20
    with gzip.open(src, "wb", compresslevel=9) as fh:
        fh.write(b"1|t|")
        for _ in range(400):  # one title line of 400 MiB
            fh.write(chunk)
        fh.write(b"\n1|a|\n\n")
    assert src.stat().st_size < 2 * 2**20
    refused_measured(tmp_path, src, f"{src}:1:", "--max-text-chars")


@pytest.mark.slow
def test_a_pubtator_file_past_the_size_limit_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "many.pubtator"
    with gzip.open(src, "wt", encoding="utf-8") as fh:
        for pmid in range(1, 40_001):
            fh.write(f"{pmid}|t|{TEXT}\n{pmid}|a|\n{pmid}\t0\t8\tWarfarin\tChemical\t-\t{pmid}:T1\n\n")
    refused_measured(tmp_path, src, "bytes once decompressed", "--max-input-mb", extra=["--max-input-mb", "1"])


@pytest.mark.slow
def test_a_pubtator_block_past_the_annotation_limit_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "lines.pubtator"
    with gzip.open(src, "wt", encoding="utf-8") as fh:
        fh.write(f"1|t|{TEXT}\n1|a|\n")
        for _ in range(2_000_000):
            fh.write("1\t0\t8\tWarfarin\tChemical\t-\t1:T1\n")
        fh.write("\n")
    refused_measured(tmp_path, src, "document 1 (line 1)", "10,000 annotation", "--max-annotations")


def test_each_limit_has_an_option_that_raises_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(bioc_doc("1_1"), bioc_doc("1_2")))
    refused(tmp_path, capsys, src, "document 1 (id '1_1')", "text length 45", "--max-text-chars",
            extra=["--max-text-chars", "40"])
    refused(tmp_path, capsys, src, "document 1 (id '1_1')", "annotations 3", "--max-annotations",
            extra=["--max-annotations", "2"])
    imported(tmp_path, capsys, src, ["--max-text-chars", "45", "--max-annotations", "3", "--max-input-mb", "1"])


def test_the_input_size_limit_counts_bioc_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "big.xml"
    src.write_text(bioc_xml(*(bioc_doc(f"1_{k}") for k in range(1, 3000))))
    assert src.stat().st_size > 2**20
    refused(tmp_path, capsys, src, "input size (bytes)", "--max-input-mb", extra=["--max-input-mb", "1"])


def test_an_offset_beyond_the_text_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(bioc_doc("1_1", chem=CHEM.format(extra="").replace('length="8"', 'length="80"'))))
    refused(tmp_path, capsys, src, "document 1 (id '1_1'), annotation 'T1'", "beyond the document's text")


# --- item 6: silent overwrites ------------------------------------------------------------------------------

def test_duplicate_bioc_ids_are_refused_with_both_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(bioc_doc("1_1"), bioc_doc("1_2"), bioc_doc("1_1")))
    refused(tmp_path, capsys, src, f"{src}:5: document 3 (id '1_1')", f"{src}:3: document 1 (id '1_1')")


def test_ids_differing_only_in_case_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.json"
    docs = [{"id": i, "infons": {}, "relations": [], "passages": [
        {"offset": 0, "text": TEXT, "infons": {}, "sentences": [], "annotations": [], "relations": []}]}
        for i in ("ab_1", "AB_1")]
    src.write_text(json.dumps({"source": "", "date": "", "key": "", "infons": {}, "documents": docs}))
    refused(tmp_path, capsys, src, "document 2 (id 'AB_1')", "document 1 (id 'ab_1')")


def test_a_missing_bioc_id_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(bioc_doc("1_1"), bioc_doc(None)))
    refused(tmp_path, capsys, src, f"{src}:4: document 2", "document id is missing")


def test_a_null_parquet_id_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = source_rows("1_1", "1_2")
    rows[1]["id"] = None
    src = write_source(tmp_path / "train.parquet", rows)
    refused(tmp_path, capsys, src, f"{src}: row 2 (id None)", "id is missing")


def test_one_id_in_two_parquet_splits_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "hf"
    src.mkdir()
    write_source(src / "test.parquet", source_rows("1_1", "1_2"))
    write_source(src / "train.parquet", source_rows("1_3", "1_1"))
    refused(tmp_path, capsys, src, f"{src / 'train.parquet'}: row 2 (id '1_1')", f"{src / 'test.parquet'}: row 1")


def test_two_pmids_with_one_sentence_name_in_the_sidecar_are_refused(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "corpus.pubtator"
    src.write_text(f"1|t|{TEXT}\n1|a|\n1\t0\t8\tWarfarin\tChemical\t-\tX_1:T1\n\n"
                   f"2|t|{TEXT}\n2|a|\n2\t0\t8\tWarfarin\tChemical\t-\tX_1:T1\n\n")
    side = tmp_path / "corpus.pubtator.sentences.tsv"
    side.write_text("document\tsentence\tstart\tend\n1\tX_1\t0\t45\n2\tX_1\t0\t45\n")
    err = refused(tmp_path, capsys, src, f"{side}:3", "line 2", "'X_1'")
    assert "two documents of one name" in err


def test_a_pmid_twice_in_a_pubtator_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "corpus.pubtator"
    src.write_text(f"1|t|{TEXT}\n1|a|\n\n1|t|Another text.\n1|a|\n\n")
    refused(tmp_path, capsys, src, f"{src}:4:", "first at line 1")


# --- item 7: the rest ---------------------------------------------------------------------------------

def test_a_refusal_after_some_documents_leaves_nothing_and_names_the_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(*(bioc_doc(f"1_{k}") for k in range(1, 5)), bioc_doc("1_5", rel_arg2="T9")))
    err = refused(tmp_path, capsys, src, f"{src}:7: document 5 (id '1_5')")
    assert ".out.tmp-" not in err and "import-tmp" not in err


def test_an_existing_temporary_is_named_before_it_is_removed(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(bioc_doc("1_1")))
    (tmp_path / "work").mkdir()
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious.txt").write_text("x")
    (tmp_path / "work" / ".out.import-tmp").symlink_to(keep)  # a link: removed, its target untouched
    out = tmp_path / "work" / "out"
    assert main(["import", str(src), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"removing {tmp_path / 'work' / '.out.import-tmp'}" in err
    assert (keep / "precious.txt").read_text() == "x"
    assert not (tmp_path / "work" / ".out.import-tmp").exists() and (out / "1_1.ann").is_file()


@pytest.mark.parametrize(("doc", "needle"), [
    (bioc_doc(chem=CHEM.format(extra="").replace(">Chemical<", ">Unknown_type<")), "Unknown_type is not a known"),
    (bioc_doc(rel_arg2="T9"), "refers to undefined id T9"),
    (bioc_doc(chem=CHEM.format(extra="").replace("<location", '<location offset="3" length="2"/><location')),
     "overlap"),
])
def test_what_validate_rejects_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: str,
                                          needle: str) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(doc))
    refused(tmp_path, capsys, src, f"{src}:3: document 1 (id '1_1')", "would not validate", needle)


@pytest.mark.parametrize(("change", "needle"), [
    (lambda row: row["entities"][0].update(type=None), "type of T1"),
    (lambda row: row.update(text=None), "text is missing"),
    (lambda row: row["entities"][0].update(offsets=[[30, 99]]), "offset 99 exceeds the text length"),
])
def test_none_and_bad_offsets_in_parquet_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     change: Callable[[dict], None], needle: str) -> None:
    rows = source_rows("1_1")
    change(rows[0])
    src = write_source(tmp_path / "train.parquet", rows)
    refused(tmp_path, capsys, src, f"{src}: row 1 (id '1_1')", needle)


def _json(tmp_path: Path, documents: object) -> Path:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"source": "", "date": "", "key": "", "infons": {}, "documents": documents}))
    return src


def _json_doc(**passage: object) -> dict:
    base = {"offset": 0, "text": TEXT, "infons": {}, "sentences": [], "relations": [], "annotations": [
        {"id": "T1", "infons": {"type": "Chemical"}, "text": "Warfarin", "locations": [{"offset": 0, "length": 8}]}]}
    base.update(passage)
    return {"id": "1_1", "infons": {}, "relations": [], "passages": [base]}


@pytest.mark.parametrize(("documents", "needle"), [
    ([_json_doc(offset="0")], "passage offset is str '0', not an integer"),
    ([_json_doc(annotations=[{"id": "T1", "infons": ["type"], "locations": []}])], "infons is list"),
    ([_json_doc(annotations=[{"id": 1, "infons": {}, "locations": []}])], "annotation id is int 1"),
    ([_json_doc(text="Warfarin \ud800 doses")], "lone surrogate"),
    ([_json_doc(), "x"], "document 2: document is str"),
])
def test_malformed_json_is_refused_with_its_record(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   documents: object, needle: str) -> None:
    refused(tmp_path, capsys, _json(tmp_path, documents), "document", needle)


def test_deep_json_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "deep.json"
    src.write_text('{"documents": ' + "[" * 100_000 + "]" * 100_000 + "}")
    refused(tmp_path, capsys, src, "nested too deeply")


def test_running_out_of_memory_is_a_refusal_naming_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"documents": [_json_doc()]}))

    def exhausted(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(json, "load", exhausted)
    refused(tmp_path, capsys, src, "does not fit in memory")


def test_an_xml_file_that_is_not_bioc_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "pubmed.xml"
    src.write_text("<?xml version='1.0'?>\n<PubmedArticleSet><PubmedArticle/></PubmedArticleSet>\n")
    refused(tmp_path, capsys, src, "not a BioC XML collection", "<PubmedArticleSet>")


@pytest.mark.parametrize("tag", ["sentence", "annotation"])
def test_bioc_content_import_does_not_read_is_refused_not_lost(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              tag: str) -> None:
    doc = bioc_doc()
    if tag == "sentence":
        doc = doc.replace("</passage>", "<sentence><offset>0</offset><text>x</text></sentence></passage>")
    else:
        doc = doc.replace("</document>", CHEM.format(extra="") + "</document>")
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(doc))
    refused(tmp_path, capsys, src, "document 1 (id '1_1')", "refused rather than lost")


def test_parents_made_for_a_refused_output_are_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.xml"
    src.write_text(bioc_xml(bioc_doc("1_1", rel_arg2="T9")))
    assert main(["import", str(src), "--out", str(tmp_path / "a" / "b" / "out")]) == 2
    assert f"pgx-corpus import: {src}:3: document 1" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.xml"]


def test_what_pubtator_cannot_place_is_counted_in_the_summary(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "corpus.pubtator.gz"
    with gzip.open(src, "wt", encoding="utf-8") as fh:
        fh.write(f"1|t|{TEXT} Again.\n1|a|\n1\t0\t8\tWarfarin\tChemical\t-\t1_1:T1\n"
                 "1\t46\t51\tAgain\tChemical\t-\t1_9:T1\n\n")
    (tmp_path / "corpus.pubtator.gz.sentences.tsv").write_text("document\tsentence\tstart\tend\n1\t1_1\t0\t45\n")
    out = tmp_path / "work" / "out"
    out.parent.mkdir()
    assert main(["import", str(src), "--out", str(out)]) == 0
    summary = capsys.readouterr().out
    assert "1 documents, 1 entities, 0 relations; not imported: 1 entities unplaced" in summary, summary
