"""Tests of pipeline.brat.evaluate.

Covers: pipeline.brat.evaluate, pipeline.brat.standoff, pipeline.cli, pipeline.cli.corpus_commands
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.evaluate import evaluate, evaluate_collections, format_report, read_concepts_tsv
from pipeline.brat.standoff import parse_ann
from tests.conftest import FIXTURES, shared_path

PHARMACONER = FIXTURES / "corpus" / "pharmaconer"


def run_cli(*argv: str) -> int:
    return cli.main(list(argv))


def doc(name: str, ann: str, text: str = ""):  # type: ignore[no-untyped-def]
    d, issues = parse_ann(name, text, ann)
    assert not issues
    return d


def prf_tuple(m: dict) -> tuple[float, float, float]:  # type: ignore[type-arg]
    return (round(m["precision"], 4), round(m["recall"], 4), round(m["f1"], 4))


def test_pharmaconer_documented_example_intersection() -> None:
    r = evaluate(PHARMACONER / "gold", PHARMACONER / "system", intersection=True,
                 concepts_tsv=(PHARMACONER / "gold_tsv", PHARMACONER / "system_tsv"))
    assert r["documents"]["scored"] == 1
    assert prf_tuple(r["ner"]) == (1.0, 0.6667, 0.8)
    assert (r["ner"]["tp"], r["ner"]["fp"], r["ner"]["fn"]) == (2, 0, 1)
    assert prf_tuple(r["concepts"]) == (1.0, 0.6667, 0.8)
    assert r["documents"]["missing_in_system"] == ["S0004-06142005000700014-1"]
    assert r["documents"]["not_in_gold"] == ["S0004-06142005000900015-1"]
    assert r["ner"]["per_type"]["PROTEINAS"]["fn"] == 1


def test_missing_documents_count_as_false_negatives_by_default() -> None:
    r = evaluate(PHARMACONER / "gold", PHARMACONER / "system",
                 concepts_tsv=(PHARMACONER / "gold_tsv", PHARMACONER / "system_tsv"))
    assert r["documents"]["scored"] == 2
    assert (r["ner"]["tp"], r["ner"]["fp"], r["ner"]["fn"]) == (2, 0, 3)  # + the 2 mentions of the missing doc
    assert prf_tuple(r["ner"]) == (1.0, 0.4, 0.5714)
    assert (r["concepts"]["tp"], r["concepts"]["fn"]) == (2, 2)


def pharmaconer_reference(gold: dict, system: dict) -> tuple[float, float, float]:  # type: ignore[type-arg]
    """The PharmaCoNER script's subtrack-1 arithmetic, restated: sets of (tag, start, end), intersection of docs."""
    tp = fp = fn = 0
    for doc_id in sorted(set(system) & set(gold)):
        g, s = set(gold[doc_id]), set(system[doc_id])
        tp, fp, fn = tp + len(g & s), fp + len(s - g), fn + len(g - s)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def test_equals_pharmaconer_arithmetic_on_random_contiguous_data() -> None:
    rng = random.Random(3)
    for _ in range(50):
        gold_tags: dict[str, list[tuple[str, int, int]]] = {}
        sys_tags: dict[str, list[tuple[str, int, int]]] = {}
        for d in range(rng.randint(1, 4)):
            pool = [(rng.choice("AB"), s, s + rng.randint(1, 3)) for s in range(0, 30, 3)]
            if rng.random() < 0.8:
                gold_tags[f"d{d}"] = rng.sample(pool, rng.randint(0, 6))
            if rng.random() < 0.8:
                picked = rng.sample(pool, rng.randint(0, 6))
                sys_tags[f"d{d}"] = picked + picked[:1]  # a duplicate line collapses, as in the script's set()
        if not sys_tags:
            continue

        def to_docs(tags: dict) -> dict:  # type: ignore[type-arg]
            return {n: doc(n, "".join(f"T{i}\t{t} {s} {e}\tx\n" for i, (t, s, e) in enumerate(v, 1)))
                    for n, v in tags.items()}

        r = evaluate_collections(to_docs(gold_tags), to_docs(sys_tags), intersection=True)
        m = r["ner"]
        # the script reports 0.0 where a score is undefined; this project reports None there
        assert (m["precision"] is None) == (m["tp"] + m["fp"] == 0)
        assert (m["recall"] is None) == (m["tp"] + m["fn"] == 0)
        assert (m["f1"] is None) == (m["tp"] + m["fp"] + m["fn"] == 0)
        ours = tuple(0.0 if m[k] is None else m[k] for k in ("precision", "recall", "f1"))
        assert ours == pytest.approx(pharmaconer_reference(gold_tags, sys_tags))


def test_discontiguous_annotations() -> None:
    gold = {"d": doc("d", "T1\tPhenotype 0 3;10 15\tx\nT2\tChemical 20 25\ty\n")}
    same = {"d": doc("d", "T1\tPhenotype 10 15;0 3\tx\nT2\tChemical 20 25\ty\n")}  # fragment order irrelevant
    part = {"d": doc("d", "T1\tPhenotype 0 3\tx\nT2\tChemical 20 25\ty\n")}
    assert evaluate_collections(gold, same)["ner"]["f1"] == 1.0
    r = evaluate_collections(gold, part)
    assert (r["ner"]["tp"], r["ner"]["fp"], r["ner"]["fn"]) == (1, 1, 1)


def test_linking_mention_and_document_level() -> None:
    gold = {"d": doc("d", "T1\tChemical 0 8\tw\nT2\tChemical 20 28\tw\nT3\tGene 30 36\tg\n"
                          "N1\tReference T1 MESH:D014859\tw\nN2\tReference T2 MESH:D014859\tw\n"
                          "N3\tReference T3 NCBIGene:1559\tg\n")}
    system = {"d": doc("d", "T1\tChemical 0 8\tw\nT2\tGene 30 37\tg\nT3\tDisease 40 45\tz\n"
                            "N1\tReference T1 MESH:D014859\tw\nN2\tReference T2 NCBIGene:1559\tg\n"
                            "N3\tReference T3 MESH:D000001\tz\n")}
    r = evaluate_collections(gold, system)
    # mentions: (0,8)+D014859 right; (30,37) has the wrong span; (40,45) spurious; (20,28) and (30,36) missed
    assert (r["linking_mention"]["tp"], r["linking_mention"]["fp"], r["linking_mention"]["fn"]) == (1, 2, 2)
    assert r["linking_mention"]["per_type"]["Chemical"]["fn"] == 1
    # documents: concept sets {D014859, 1559} vs {D014859, 1559, D000001}
    assert (r["linking_document"]["tp"], r["linking_document"]["fp"], r["linking_document"]["fn"]) == (2, 1, 0)
    assert r["concepts"]["source"] == "normalizations" and r["concepts"]["tp"] == 2


def test_concepts_tsv_single_file_and_bad_lines(tmp_path: Path) -> None:
    f = tmp_path / "c.tsv"
    f.write_text("d1\tC1\nd1\tC2\nbroken line\nd2\tC1\n\n")
    issues: list = []  # type: ignore[type-arg]
    assert read_concepts_tsv(f, issues) == {"d1": {"C1", "C2"}, "d2": {"C1"}}
    assert len(issues) == 1 and issues[0].line == 3


def test_concepts_tsv_links_are_reported_not_followed(tmp_path: Path) -> None:
    """Issue 41: a link in a directory of concept files is never read (its lines would be reported)."""
    secret = tmp_path / "secret.tsv"
    secret.write_text("TOP SECRET\tC9\nsecond secret line\n", encoding="utf-8")
    concepts = tmp_path / "concepts"
    concepts.mkdir()
    (concepts / "d1.tsv").write_text("d1\tC1\n", encoding="utf-8")
    (concepts / "d2.tsv").symlink_to(secret)
    issues: list = []  # type: ignore[type-arg]
    assert read_concepts_tsv(concepts, issues) == {"d1": {"C1"}}
    assert [(i.file, i.line) for i in issues] == [(str(concepts / "d2.tsv"), 0)]
    assert "symbolic link" in issues[0].message and "SECRET" not in str(issues)


def test_a_concepts_tsv_that_is_not_utf8_is_refused_with_its_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "c.tsv"
    bad.write_bytes(b"d1\tC1\n\xff\xfe\tC2\n")
    assert run_cli("evaluate", str(PHARMACONER / "gold"), str(PHARMACONER / "system"), "--concepts-tsv",
                   str(bad), str(bad)) == 2
    err = capsys.readouterr().err
    assert f"pgx-corpus evaluate: {bad}:2: not valid UTF-8" in err and "UnicodeDecodeError" not in err


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("evaluate", str(PHARMACONER / "gold"), str(PHARMACONER / "system"), "--intersection", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert round(data["ner"]["f1"], 4) == 0.8
    assert run_cli("evaluate", str(PHARMACONER / "gold"), str(PHARMACONER / "system"), "--concepts-tsv",
                   str(PHARMACONER / "gold_tsv"), str(PHARMACONER / "system_tsv")) == 0
    out = capsys.readouterr().out
    assert "| **Total (micro)** | 2 | 0 | 3 | 1.0000 | 0.4000 | 0.5714 |" in out
    assert "from tsv" in out


def test_dev_subset_gold_against_itself() -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    r = evaluate(gold, gold)
    assert r["ner"]["f1"] == 1.0 and r["ner"]["tp"] == 2178  # no duplicate (type, fragments) in the dev subset


def test_read_directory_ann_only_duplicates_and_bad_bytes(tmp_path: Path) -> None:
    from pipeline.brat.standoff import read_directory

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "1_0.txt").write_text("warfarin")
    (tmp_path / "a" / "1_0.ann").write_text("T1\tChemical 0 8\twarfarin\n")
    (tmp_path / "b" / "1_0.ann").write_text("T1\tDisease 0 8\twarfarin\n")  # same stem elsewhere: reported
    (tmp_path / "b" / "2_0.ann").write_bytes(b"T1\tChemical 0 3\tabc\nT2\tChemical 4 6\t\xff\xfe\n")  # no .txt
    (tmp_path / "annotation.conf").write_text("[entities]\n")
    (tmp_path / ".run").write_text("x\n")
    docs, issues = read_directory(tmp_path)
    assert [(d.name, d.text, [t.type for t in d.textbounds]) for d in docs] == [
        ("1_0", "warfarin", ["Chemical"]), ("2_0", "", ["Chemical", "Chemical"])]
    assert [(Path(i.file).relative_to(tmp_path).as_posix(), i.line) for i in issues] == [("b/1_0.ann", 0),
                                                                                         ("b/2_0.ann", 2)]
    assert "duplicate document name '1_0'" in issues[0].message and "not valid UTF-8" in issues[1].message


def test_undefined_scores_are_null_and_na(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = {"d": doc("d", "")}
    found = {"d": doc("d", "T1\tChemical 0 3\tx\n")}
    r = evaluate_collections(empty, empty)  # nothing to score
    assert prf_tuple_raw(r["ner"]) == (None, None, None) and r["ner"]["per_type"] == {}
    assert prf_tuple_raw(r["linking_document"]) == (None, None, None)
    r = evaluate_collections(found, empty)  # the system found nothing: P undefined, R and F1 are 0
    assert prf_tuple_raw(r["ner"]) == (None, 0.0, 0.0)
    r = evaluate_collections(empty, found)  # nothing to find: R undefined
    assert prf_tuple_raw(r["ner"]) == (0.0, None, 0.0)
    md = format_report(evaluate_collections(empty, empty))
    assert "| **Total (micro)** | 0 | 0 | 0 | n/a | n/a | n/a |" in md
    for name in ("gold", "sys"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "d.txt").write_text("abc", encoding="utf-8")
        (tmp_path / name / "d.ann").write_text("", encoding="utf-8")
    assert cli.main(["evaluate", str(tmp_path / "gold"), str(tmp_path / "sys"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["ner"]["precision"], data["ner"]["recall"], data["ner"]["f1"]) == (None, None, None)
    assert data["concepts"]["f1"] is None and data["linking_mention"]["f1"] is None


def prf_tuple_raw(m: dict) -> tuple:  # type: ignore[type-arg]
    return (m["precision"], m["recall"], m["f1"])
