"""brat export: round trip, brat-safe fragments, dropped annotations, notes, normalizations, conf files.

Covers: pipeline.brat.conf, pipeline.brat.provenance, pipeline.brat.standoff, pipeline.brat.validate,
pipeline.campaign.batches, pipeline.corpus.brat_export, pipeline.corpus.sample, pipeline.corpus.select,
pipeline.documents, pipeline.schema, pipeline.store
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline.brat.conf import CONF_FILES, annotation_conf, kb_shortcuts_conf, visual_conf
from pipeline.brat.standoff import TextBound, read_collection, read_document, to_annotations
from pipeline.brat.validate import parse_annotation_conf, validate_collection
from pipeline.corpus.brat_export import brat_fragments, export_collection, normalize_identifier
from pipeline.documents import Annotation, SentenceRecord
from pipeline.schema import load_schema
from tests.conftest import FIXTURES, shared_path

SCHEMA = load_schema()
FIXTURES_ROSTER = FIXTURES / "brat" / "roster.csv"


def ann(text: str, mention: str, type_: str, source: str = "pubtator", occurrence: int = 0, **kw: object) -> Annotation:
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(mention, start + 1)
    return Annotation(((start, start + len(mention)),), type_, source, text=mention, **kw)  # type: ignore[arg-type]


TEXT = "Carriers of CYP2C9*3 needed lower warfarin doses; warfarin clearance was reduced in CYP2C9 carriers."


def records() -> list[SentenceRecord]:
    t = TEXT
    clearance = (t.index("warfarin clearance"), t.index("warfarin clearance") + len("warfarin clearance"))
    disc = ((t.index("lower"), t.index("lower") + 5), (t.index("doses"), t.index("doses") + 5))
    anns = (
        ann(t, "CYP2C9*3", "Limited_variation", identifier="RS#:1057910;CorrespondingGene:1559",
            original_type="Mutation"),
        ann(t, "warfarin", "Chemical", identifier="MESH:D014859", original_type="Chemical"),
        ann(t, "warfarin", "Chemical", "local", identifier="MESH:D014859"),  # exact duplicate, other source
        ann(t, "warfarin", "Chemical", occurrence=1, identifier="MESH:D014859"),
        ann(t, "CYP2C9", "Gene_or_protein", occurrence=1, identifier="1559", original_type="Gene"),
        Annotation((clearance,), "Pharmacokinetic_phenotype", "ontology", text="warfarin clearance",
                   ontology_class="PharmacokineticPhenotype", rule="noun_compound",
                   key=((clearance[0], clearance[0] + 8),)),
        Annotation(disc, "Pharmacodynamic_phenotype", "ontology", text="lower doses", ontology_class="Dose"),
    )
    second = "Rifampicin induces CYP3A4."
    return [
        SentenceRecord("200", 3, TEXT, annotations=anns),
        SentenceRecord("17", 0, second,
                       annotations=(ann(second, "Rifampicin", "Chemical"), ann(second, "CYP3A4", "Gene"))),
    ]


def test_round_trip_and_clean_validation(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    export_collection(records(), tmp_path, SCHEMA, counts)
    for name in CONF_FILES:
        assert (tmp_path / name).is_file()
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == ["17_1.txt", "200_4.txt"]
    assert validate_collection(tmp_path) == []
    docs, issues = read_collection(tmp_path)
    assert issues == []
    by_name = {d.name: d for d in docs}
    for record in records():
        doc = by_name[record.name]
        assert doc.text == record.text
        back = {(a.fragments, a.type) for a in to_annotations(doc)}
        expected = {(a.fragments, SCHEMA.map_type(a.source, a.type)) for a in record.annotations}
        assert back == expected
    assert counts["documents"] == 2 and counts["duplicates_merged"] == 1
    assert counts["entities"] == 8 and counts["composite_entities"] == 2


def test_ids_notes_attributes_normalizations(tmp_path: Path) -> None:
    # by default no note at all: machine provenance never goes into brat notes (provenance.jsonl has it)
    export_collection(records(), tmp_path / "default", SCHEMA, Counter())
    assert read_document(tmp_path / "default" / "200_4.txt")[0].notes == []
    export_collection(records(), tmp_path, SCHEMA, Counter(), notes="composites")
    doc, _ = read_document(tmp_path / "200_4.txt")
    starts = [(t.start, t.end, t.type) for t in doc.textbounds]
    assert starts == sorted(starts)
    assert [t.id for t in doc.textbounds] == [f"T{i}" for i in range(1, len(starts) + 1)]
    by_text = {t.text: t for t in doc.textbounds}
    disc = by_text["lower doses"]
    assert len(disc.fragments) == 2
    warfarin = next(t for t in doc.textbounds if t.text == "warfarin")
    assert doc.notes_for(warfarin.id) == []  # key entities carry no note: brat would highlight them all
    clearance = by_text["warfarin clearance"]
    (note,) = doc.notes_for(clearance.id)
    assert "source=ontology" in note and "class=PharmacokineticPhenotype" in note and "rule=noun_compound" in note
    composite_targets = {a.target for a in doc.attributes if a.type == "Composite"}
    assert composite_targets == {clearance.id, disc.id}
    assert {q.target for q in doc.notes} == composite_targets  # notes on composites only
    refs = {(doc.textbound(n.target).text, f"{n.db}:{n.db_id}") for n in doc.normalizations}  # type: ignore[union-attr]
    assert ("warfarin", "MESH:D014859") in refs
    assert ("CYP2C9*3", "dbSNP:rs1057910") in refs
    assert ("CYP2C9", "NCBIGene:1559") in refs
    assert sum(1 for n in doc.normalizations if n.target == warfarin.id) == 1  # duplicate sources: one N line


def test_export_is_byte_deterministic(tmp_path: Path) -> None:
    export_collection(records(), tmp_path / "a", SCHEMA, Counter())
    export_collection(list(reversed(records())), tmp_path / "b", SCHEMA, Counter())
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_bad_annotations_are_never_written(tmp_path: Path) -> None:
    text = "Tamoxifen response depends on CYP2D6."
    anns = (
        Annotation(((0, 9),), "Chemical", "pubtator", text="Tamoxifen"),
        Annotation(((30, 36),), "Gene", "pubtator", text="CYP2D7"),  # text mismatch
        Annotation(((30, 60),), "Gene", "pubtator", text="CYP2D6."),  # outside the sentence
        Annotation(((0, 9),), "Species", "pubtator", text="Tamoxifen"),  # mapped to nothing
        Annotation(((0, 9),), "Organelle", "pubtator", text="Tamoxifen"),  # unknown type
    )
    counts: Counter[str] = Counter()
    export_collection([SentenceRecord("5", 1, text, annotations=anns)], tmp_path, SCHEMA, counts)
    doc, _ = read_document(tmp_path / "5_2.txt")
    assert [(t.type, t.text) for t in doc.textbounds] == [("Chemical", "Tamoxifen")]
    assert counts["misaligned"] == 1 and counts["out_of_bounds"] == 1
    assert counts["unmapped_type"] == 1 and counts["unknown_type"] == 1
    assert validate_collection(tmp_path) == []


@pytest.mark.parametrize(
    ("text", "fragments", "expected", "split", "merged"),
    [
        ("abc def", [(0, 7)], [(0, 7)], 0, 0),
        ("abc\ndef", [(0, 7)], [(0, 3), (4, 7)], 1, 0),
        ("abc \n def", [(0, 9)], [(0, 3), (6, 9)], 1, 0),
        ("abc\n\ndef", [(0, 8)], [(0, 3), (5, 8)], 1, 0),
        ("abcdef", [(0, 3), (3, 6)], [(0, 6)], 0, 1),
        ("abcdef", [(2, 5), (0, 3)], [(0, 5)], 0, 1),
        (" \n ", [(0, 3)], [], 1, 0),
    ],
)
def test_brat_fragments(text: str, fragments: list[tuple[int, int]], expected: list[tuple[int, int]],
                        split: int, merged: int) -> None:
    counts: Counter[str] = Counter()
    assert list(brat_fragments(text, fragments, counts)) == expected
    assert counts["fragments_split_at_newline"] == split and counts["fragments_merged"] == merged


def test_newline_inside_a_mention_is_exported_as_fragments(tmp_path: Path) -> None:
    text = "Increased warfarin\nsensitivity was seen in carriers of CYP2C9 variants."
    a = Annotation(((10, 30),), "Pharmacodynamic_phenotype", "ontology", text=text[10:30])
    counts: Counter[str] = Counter()
    export_collection([SentenceRecord("8", 2, text, annotations=(a, ann(text, "CYP2C9", "Gene")))],
                      tmp_path, SCHEMA, counts)
    doc, _ = read_document(tmp_path / "8_3.txt")
    t = next(t for t in doc.textbounds if t.type == "Pharmacodynamic_phenotype")
    assert t.fragments == ((10, 18), (19, 30)) and t.text == "warfarin sensitivity"
    assert validate_collection(tmp_path) == []


@pytest.mark.parametrize(
    ("identifier", "type_", "expected"),
    [
        ("MESH:D014859", "Chemical", [("MESH", "D014859")]),
        ("mesh:D014859", "Chemical", [("MESH", "D014859")]),
        ("1559", "Gene", [("NCBIGene", "1559")]),
        ("1559;1565", "Gene", [("NCBIGene", "1559"), ("NCBIGene", "1565")]),
        ("9606", "Species", [("NCBITaxon", "9606")]),
        ("rs1057910", "SNP", [("dbSNP", "rs1057910")]),
        ("tmVar:p|SUB|I|359|L;HGVS:p.I359L;VariantGroup:0;CorrespondingGene:1559;RS#:1057910", "Mutation",
         [("dbSNP", "rs1057910")]),
        ("tmVar:c|SUB|C|430|T;HGVS:c.430C>T;VariantGroup:1", "Mutation", []),
        ("HGNC:HGNC:2623", "Gene_or_protein", [("HGNC", "2623")]),
        ("CHEBI:28119", "Chemical", [("CHEBI", "28119")]),
        ("OMIM:608547", "Disease", [("OMIM", "608547")]),
        ("-", "Chemical", []),
        ("", "Chemical", []),
        (None, "Chemical", []),
        ("12", "Chemical", []),
    ],
)
def test_normalize_identifier(identifier: str | None, type_: str, expected: list[tuple[str, str]]) -> None:
    assert normalize_identifier(identifier, type_) == expected


def test_generated_conf_files_parse_and_follow_the_schema() -> None:
    text = annotation_conf(SCHEMA)
    conf, problems = parse_annotation_conf(text)
    assert problems == []
    assert conf.entity_types == SCHEMA.entity_types()
    assert conf.entity_parent == SCHEMA.entity_parent
    assert conf.relation_types == set(SCHEMA.relation_types())
    # no attribute on relations (brat's client cannot show one): modality is the relation's note
    assert set(conf.attributes) == {"Composite"}
    assert conf.attributes["Composite"].targets == ("<ENTITY>",)
    assert "<RELATION>" not in text
    assert "\tinfluences\t" in text and "\t\tcauses\t" in text and "\tGene_or_protein\n" in text
    # every allowed (relation, Arg1 type, Arg2 type) triple of the schema is allowed by the conf, and only those
    for rel in SCHEMA.relation_types():
        a1 = set(SCHEMA.allowed_arguments(rel, "Arg1"))
        a2 = set(SCHEMA.allowed_arguments(rel, "Arg2"))
        for t1 in SCHEMA.entity_types():
            for t2 in SCHEMA.entity_types():
                assert conf.relation_allowed(rel, ("Arg1", "Arg2"), (t1, t2)) == (t1 in a1 and t2 in a2)
    visual = visual_conf(SCHEMA)
    assert "Composite\tdashArray:3-3" in visual and "[labels]" in visual and "[drawing]" in visual
    assert "C\tChemical" in kb_shortcuts_conf(SCHEMA)


def _records_from_brat(directory: Path, txt_dir: Path, source: str) -> list[SentenceRecord]:
    out = []
    for ann_path in sorted(directory.glob("*.ann")):
        txt = txt_dir / f"{ann_path.stem}.txt"
        doc, _ = read_document(txt) if directory == txt_dir else (None, None)
        if doc is None:
            from pipeline.brat.standoff import parse_ann

            doc, _ = parse_ann(ann_path.stem, txt.read_text(encoding="utf-8"), ann_path.read_text(encoding="utf-8"))
        pmid, _, k = ann_path.stem.partition("_")
        out.append(SentenceRecord(pmid, int(k), doc.text, annotations=tuple(to_annotations(doc, source))))
    return out


def test_real_pubtator_preannotations_export_validates(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    pubtator = shared_path("data", "pgxcorpus-dev", "pubtator")
    recs = _records_from_brat(pubtator, gold, "pubtator")
    counts: Counter[str] = Counter()
    export_collection(recs, tmp_path, SCHEMA, counts)
    assert counts["documents"] == 300
    assert validate_collection(tmp_path) == []


def test_real_gold_entities_export_validates(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    recs = _records_from_brat(gold, gold, "gold")
    counts: Counter[str] = Counter()
    export_collection(recs, tmp_path, SCHEMA, counts)
    assert counts["misaligned"] == 0 and counts["documents"] == 300
    assert validate_collection(tmp_path) == []


def test_filter_sample_export_batches_end_to_end(tmp_path: Path) -> None:
    """Real PGxCorpus sentences as documents -> filter (pgx) -> sample -> brat -> valid -> batches -> valid."""
    from pipeline.campaign.batches import prepare_batches
    from pipeline.corpus.sample import sample_sentences
    from pipeline.corpus.select import filter_sentences
    from pipeline.documents import Document, Sentence

    gold = shared_path("data", "pgxcorpus-dev", "gold")
    docs = []
    for txt in sorted(gold.glob("*.txt")):
        brat_doc, _ = read_document(txt)
        title = "A study of drug response."
        shift = len(title) + 1
        text = title + "\n" + brat_doc.text
        anns = [a.shifted(shift) for a in to_annotations(brat_doc, "gold")]
        docs.append(Document(pmid=txt.stem.replace("_", "0"), title=title, text=text,
                             sentences=(Sentence(0, len(title)), Sentence(shift, len(text))))
                    .with_annotations(anns))
    counts: Counter[str] = Counter()
    pool = list(filter_sentences(docs, "pgx", SCHEMA, counts))
    assert counts["documents"] == 300 and counts["dropped:no_chemical"] >= 300  # every title, at least
    assert 200 <= len(pool) <= 290
    sample = sample_sentences(pool, n=40, seed=11, per_abstract=1, counts=counts)
    assert len(sample) == 40
    export_collection(sample, tmp_path / "brat", SCHEMA, counts)
    assert validate_collection(tmp_path / "brat") == []
    prepare_batches(tmp_path / "brat", FIXTURES_ROSTER, tmp_path / "batches", seed=11, counts=counts)
    person_dirs = sorted(p for p in (tmp_path / "batches").glob("phase*/*") if p.is_dir())
    assert [p.parent.name for p in person_dirs] == ["phase1"] * len(person_dirs) and person_dirs
    for person_dir in person_dirs:
        assert validate_collection(person_dir) == []
    assert counts["assignments:phase1"] == 80 and counts["assignments:phase2"] == 40


def test_provenance_sidecar_for_every_entity(tmp_path: Path) -> None:
    from pipeline.brat.provenance import PROVENANCE_FILE, entity_provenance, provenance_summary, read_provenance

    counts: Counter[str] = Counter()
    export_collection(records(), tmp_path, SCHEMA, counts)
    prov = read_provenance(tmp_path)
    assert prov is not None and len(prov) == counts["entities"] == counts["provenance_rows"] == 8
    lines = (tmp_path / PROVENANCE_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["document"] for line in lines] == ["17_1"] * 2 + ["200_4"] * 6  # PMID order
    doc, _ = read_document(tmp_path / "200_4.txt")
    warfarin = next(t for t in doc.textbounds if t.text == "warfarin")
    row = prov[("200_4", warfarin.id)]
    assert row["sources"] == ["local", "pubtator"] and row["identifiers"] == ["MESH:D014859"]
    assert row["fragments"] == [list(f) for f in warfarin.fragments] and row["type"] == "Chemical"
    clearance = next(t for t in doc.textbounds if t.text == "warfarin clearance")
    crow = prov[("200_4", clearance.id)]
    assert (crow["classes"], crow["rules"], crow["keys"]) == (
        ["PharmacokineticPhenotype"], ["noun_compound"], [[[clearance.start, clearance.start + 8]]])
    # brat lists as documents only files ending in "txt" and skips hidden ones; our readers take .txt/.ann only
    assert not PROVENANCE_FILE.endswith("txt") and not PROVENANCE_FILE.startswith((".", "hidden_"))
    docs, issues = read_collection(tmp_path)
    assert len(docs) == 2 and issues == [] and validate_collection(tmp_path) == []
    # an annotator edits: one entity retyped, one deleted and its id re-used for a new one, one added
    edited = doc.textbounds[:]
    edited[0] = TextBound(edited[0].id, "Phenotype", edited[0].fragments, edited[0].text)
    status = entity_provenance(type(doc)(doc.name, doc.text, edited + [TextBound("T99", "Chemical", ((0, 8),),
                                                                                   "Carriers")]), prov)
    assert status[edited[0].id][0] == "edited" and status["T99"] == ("unknown", None)
    assert sum(1 for s, _ in status.values() if s == "preannotated") == len(edited) - 1
    summary = provenance_summary(docs, prov)
    assert summary["entities"] == {"preannotated": 8, "edited": 0, "unknown": 0}
    assert summary["by_source"]["ontology"] == {"Pharmacodynamic_phenotype": 1, "Pharmacokinetic_phenotype": 1}
    assert summary["by_source"]["local"] == {"Chemical": 1} and summary["composites"] == 2


def test_note_modes(tmp_path: Path) -> None:
    export_collection(records(), tmp_path / "all", SCHEMA, Counter(), notes="all")
    doc, _ = read_document(tmp_path / "all" / "200_4.txt")
    assert len(doc.notes) == len(doc.textbounds)
    export_collection(records(), tmp_path / "none", SCHEMA, Counter(), notes="none")
    doc, _ = read_document(tmp_path / "none" / "200_4.txt")
    assert doc.notes == []
    with pytest.raises(ValueError, match="notes must be one of"):
        export_collection(records(), tmp_path / "x", SCHEMA, Counter(), notes="some")


def test_reusing_an_earlier_export_gives_the_same_collection(tmp_path: Path) -> None:
    """Unchanged records are hard links to the earlier files; files, provenance and counts equal a fresh export."""
    import os

    from pipeline import store
    from pipeline.corpus.brat_export import export_collection_reusing

    def lines(recs: list[SentenceRecord]) -> list[bytes]:
        return [line + b"\n" for line in store.dumps_records(recs).splitlines()]

    def tree(d: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(d.iterdir())}

    old = records()
    text = "Warfarin and CYP2C9."
    extra = SentenceRecord("17", 4, text, annotations=(ann(text, "CYP2C9", "Gene"),))
    new = [*old, extra, old[0]]  # and a duplicate name
    first = export_collection_reusing(lines(old), tmp_path / "first", SCHEMA, Counter(), None)
    memo = json.loads(json.dumps(first))
    counts: Counter[str] = Counter()
    export_collection_reusing(lines(new), tmp_path / "second", SCHEMA, counts, memo)
    fresh_counts: Counter[str] = Counter()
    export_collection(new, tmp_path / "fresh", SCHEMA, fresh_counts)
    assert tree(tmp_path / "second") == tree(tmp_path / "fresh") and counts == fresh_counts
    assert counts["duplicate_names"] == 1
    assert os.stat(tmp_path / "second" / "200_4.ann").st_ino == os.stat(tmp_path / "first" / "200_4.ann").st_ino


def test_reusing_with_member_lines_of_a_store_file(tmp_path: Path) -> None:
    """Lines read from a store file carry their digests: the same collection, and unchanged lines stay compressed."""
    from pipeline import store
    from pipeline.corpus.brat_export import export_collection_reusing

    old = records()
    store.write_records(tmp_path / "old.jsonl.gz", old)
    first = export_collection_reusing(store.iter_member_lines(tmp_path / "old.jsonl.gz"), tmp_path / "first",
                                      SCHEMA, Counter(), None)
    text = "Warfarin and CYP2C9."
    new = [*old, SentenceRecord("17", 4, text, annotations=(ann(text, "CYP2C9", "Gene"),))]
    store.write_records(tmp_path / "new.jsonl.gz", new)
    items = list(store.iter_member_lines(tmp_path / "new.jsonl.gz"))
    assert all(isinstance(item, store.MemberLine) for item in items)
    counts: Counter[str] = Counter()
    export_collection_reusing(items, tmp_path / "second", SCHEMA, counts, json.loads(json.dumps(first)))
    fresh_counts: Counter[str] = Counter()
    export_collection(new, tmp_path / "fresh", SCHEMA, fresh_counts)
    assert {p.name: p.read_bytes() for p in (tmp_path / "second").iterdir()} == {
        p.name: p.read_bytes() for p in (tmp_path / "fresh").iterdir()}
    assert counts == fresh_counts


def _export_chain(tmp_path: Path, keep: tuple[Path, ...] = (), within: Path | None = None) -> dict[str, object]:
    """Three successive exports: ``a`` (three sentences), ``b`` (one added), ``c`` (one changed, one removed,
    one added), each from the previous one's memo; ``c`` must equal a fresh export, counts included."""
    from pipeline import store
    from pipeline.corpus.brat_export import export_collection_reusing

    def lines(recs: list[SentenceRecord]) -> list[bytes]:
        return [line + b"\n" for line in store.dumps_records(recs).splitlines()]

    old = records()
    text = "Warfarin and CYP2C9."
    third = SentenceRecord("300", 0, text, annotations=(ann(text, "CYP2C9", "Gene"),))
    pool_a = [*old, third]
    pool_b = [*pool_a, SentenceRecord("400", 1, "Imatinib and ABL1.", annotations=())]
    changed = SentenceRecord("17", 0, old[1].text, annotations=(ann(old[1].text, "CYP3A4", "Gene"),))
    pool_c = [changed, old[0], pool_b[3], SentenceRecord("500", 2, "Codeine and CYP2D6.", annotations=())]
    memos = {}
    memo = None
    counts: Counter[str] = Counter()
    for name, pool in (("a", pool_a), ("b", pool_b), ("c", pool_c)):
        counts = Counter()
        found = export_collection_reusing(lines(pool), tmp_path / "work" / name, SCHEMA, counts,
                                          memo, recycle_within=within, keep=keep)
        memo = memos[name] = json.loads(json.dumps(found))
        if name == "a":  # what publication and a brat server leave in a collection
            (tmp_path / "work" / "a" / ".run").write_text("run-a\n")
            (tmp_path / "work" / "a" / ".stats_cache").write_bytes(b"cache")
            (tmp_path / "work" / "a" / "sub").mkdir()
    fresh_counts: Counter[str] = Counter()
    export_collection(pool_c, tmp_path / "fresh", SCHEMA, fresh_counts)
    assert counts == fresh_counts
    return {"memos": memos}


def _tree(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_recycling_the_export_before_the_last_gives_the_same_collection(tmp_path: Path) -> None:
    """The spare collection becomes the new one: unchanged files stay (same inodes), the rest is redone."""
    import os

    chain = _export_chain(tmp_path, within=tmp_path / "work")
    memos = chain["memos"]
    assert isinstance(memos, dict)
    assert not (tmp_path / "work" / "a").exists()  # renamed into c
    assert _tree(tmp_path / "work" / "c") == _tree(tmp_path / "fresh")
    assert memos["c"]["spare"]["collection"] == str(tmp_path / "work" / "b")
    # b, the previous export, is intact: the changed sentence's files were replaced in c, not rewritten
    b_doc, _ = read_document(tmp_path / "work" / "b" / "17_1.txt")
    assert {t.type for t in b_doc.textbounds} == {"Chemical", "Gene_or_protein"}
    assert (tmp_path / "work" / "b" / "400_2.txt").is_file()
    work = tmp_path / "work"
    assert os.stat(work / "c" / "200_4.ann").st_ino == os.stat(work / "b" / "200_4.ann").st_ino


def test_recycling_skips_a_kept_or_foreign_spare(tmp_path: Path) -> None:
    """The published collection (``keep``) and a spare outside ``recycle_within`` are never moved."""
    _export_chain(tmp_path / "kept", keep=(tmp_path / "kept" / "work" / "a",), within=tmp_path / "kept" / "work")
    assert (tmp_path / "kept" / "work" / "a" / ".run").is_file()
    assert _tree(tmp_path / "kept" / "work" / "c") == _tree(tmp_path / "kept" / "fresh")
    _export_chain(tmp_path / "foreign", within=tmp_path / "elsewhere")
    assert (tmp_path / "foreign" / "work" / "a").is_dir()
    assert _tree(tmp_path / "foreign" / "work" / "c") == _tree(tmp_path / "foreign" / "fresh")


@pytest.mark.parametrize("pmids", [("200", "17"), ("200", "x17")])  # numeric; with shard -1 (no memo)
def test_export_shards_equals_a_plain_export_and_links_unchanged_sentences(
    tmp_path: Path, pmids: tuple[str, str]
) -> None:
    """A stage's export from its shards: the plain export's bytes plus settings, the memo written and used."""
    import dataclasses
    import os

    from pipeline import store
    from pipeline.corpus.brat_export import ExportMemo, export_shards, read_settings

    recs = [dataclasses.replace(r, pmid=p) for r, p in zip(records(), pmids, strict=True)]
    out = tmp_path / "out"
    store.write_shards(tmp_path / "pool", recs, shard_size=1000)
    memo_path = out / "cache" / "memo" / "08_brat" / "k.json"

    def export(name: str) -> tuple[Path, Counter[str]]:
        collection = out / "work" / "08_brat" / name / "collection"
        memo = ExportMemo(path=memo_path, out=out, collection=collection, recycle_within=out / "work" / "08_brat",
                          keep=(out / "brat",))
        counts: Counter[str] = Counter()
        export_shards(tmp_path / "pool", collection, SCHEMA, counts, relations=True, memo=memo)
        return collection, counts

    first, counts = export("h1")
    fresh_counts: Counter[str] = Counter()
    export_collection(recs, tmp_path / "fresh", SCHEMA, fresh_counts)
    assert counts == fresh_counts and read_settings(first) == {"relations": True}
    assert {p.name: p.read_bytes() for p in first.iterdir() if p.name != "preannotation.json"} == {
        p.name: p.read_bytes() for p in (tmp_path / "fresh").iterdir()}
    numeric = pmids[1].isdigit()
    assert memo_path.exists() is numeric
    if numeric:
        assert store.read_json(memo_path)["collection"] == "work/08_brat/h1/collection"  # relative to --out
        second, _ = export("h2")
        name = f"{pmids[0]}_4.ann"  # sentence names count from 1
        assert os.stat(second / name).st_ino == os.stat(first / name).st_ino
