"""End-to-end: the whole DAG on the offline demo, on a local scheduler.

Checks that the build publishes a brat collection that validates clean, that a
second build does nothing, that a rebuild elsewhere is byte-identical, and that
``luigi --module pipeline.tasks`` works too.

Covers: pipeline.brat.validate, pipeline.corpus.brat_export, pipeline.corpus.outdir, pipeline.corpus.stages,
pipeline.documents, pipeline.nlp.lexicon, pipeline.sources.pubmed_xml, pipeline.store, pipeline.tasks.build,
pipeline.tasks.engine, pipeline.tasks.sources, pipeline.tasks.stages, pipeline.tasks.targets
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import luigi
import pytest

from pipeline import durable, store
from pipeline.corpus.stages import STAGES
from pipeline.documents import Document, SentenceRecord
from pipeline.nlp.lexicon import DEFAULT_LEXICON
from pipeline.tasks import engine
from pipeline.tasks.build import STAGE_TASKS, BuildCorpus, BuildDocuments
from pipeline.tasks.engine import Progress
from pipeline.tasks.sources import Documents
from pipeline.tasks.stages import ExportBrat, Mapped, MapShard, SplitSentencesShard
from pipeline.tasks.targets import COMPLETE_MARKER, DirectoryTarget, output_dir

PROJECT = Path(__file__).resolve().parent.parent
DEMO = PROJECT / "data" / "demo"

pytestmark = pytest.mark.skipif(
    not DEFAULT_LEXICON.exists(), reason=f"local annotator lexicon missing ({DEFAULT_LEXICON}): run `make setup`"
)


def build_task(out: Path, **extra: object) -> BuildCorpus:
    params: dict[str, object] = {
        "out": str(out),
        "pubmed_xml": (str(DEMO / "pubmed"),),
        "annotator": "local",
        "sample": "all",
        "roster": str(DEMO / "roster.tsv"),
    }
    params.update(extra)
    return BuildCorpus(**params)


@pytest.fixture
def started() -> Iterator[list[str]]:
    """Task ids started while the fixture is active."""
    seen: list[str] = []

    def on_start(task: luigi.Task) -> None:
        seen.append(task.task_id)

    luigi.Task.event_handler(luigi.Event.START)(on_start)
    yield seen
    luigi.Task.remove_event_handler(luigi.Event.START, on_start)


@pytest.fixture(scope="module")
def demo_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    assert luigi.build([build_task(out)], local_scheduler=True, workers=1)
    return out


def test_build_publishes_a_valid_collection(demo_build: Path) -> None:
    from pipeline.brat.validate import validate_collection

    collection = demo_build / "brat"
    names = sorted(p.stem for p in collection.glob("*.txt"))
    assert names, "no sentence was exported"
    assert all(name.startswith("900000") and "_" in name for name in names)
    assert (collection / "annotation.conf").exists()
    assert validate_collection(collection) == []


def test_manifest_records_every_stage(demo_build: Path) -> None:
    manifest_path = build_task(demo_build).output().path
    manifest = store.read_json(manifest_path)
    assert set(manifest["outputs"]) == set(STAGES)
    assert manifest["stages"]["documents"]["documents"] >= 18
    assert manifest["seeds"] == {"sample": 13, "batches": 13}
    assert manifest["config_hashes"]["schema"] and manifest["config_hashes"]["lexicon"]
    assert manifest["failures"] == []
    mapped = list(store.iter_directory(manifest["outputs"]["mapped"], Document))
    assert any(a.source == "ontology" for d in mapped for a in d.annotations), "no composite entity built"
    sampled = list(store.iter_directory(manifest["outputs"]["sampled"], SentenceRecord))
    filtered = list(store.iter_directory(manifest["outputs"]["filtered"], SentenceRecord))
    assert len(sampled) == len(filtered) > 0


def test_second_build_does_nothing(demo_build: Path, started: list[str]) -> None:
    assert luigi.build([build_task(demo_build)], local_scheduler=True, workers=1)
    assert started == []


def test_rebuild_is_byte_identical(demo_build: Path, tmp_path: Path) -> None:
    assert luigi.build([build_task(tmp_path, until="mapped")], local_scheduler=True, workers=2)
    for stage in ("01_documents", "02_sentences", "03_preannotated", "04_extended", "05_mapped"):
        (first,) = (demo_build / "work" / stage).iterdir()
        (second,) = (tmp_path / "work" / stage).iterdir()
        assert first.name == second.name
        for shard in store.list_shards(first):
            assert shard.read_bytes() == (second / shard.name).read_bytes(), shard


def test_no_extend_skips_the_parser(demo_build: Path, started: list[str]) -> None:
    task = build_task(demo_build, extend=False, until="mapped")
    assert luigi.build([task], local_scheduler=True, workers=1)
    assert not any(t.startswith("ExtendShard") for t in started)
    manifest = store.read_json(task.output().path)
    mapped = store.iter_directory(manifest["outputs"]["mapped"], Document)
    assert all(a.source != "ontology" for d in mapped for a in d.annotations)


@pytest.fixture(scope="module")
def related_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo build up to the collection with build-time relations turned on (they are off by default)."""
    out = tmp_path_factory.mktemp("related")
    assert luigi.build([build_task(out, relations=True, until="brat", roster="")], local_scheduler=True, workers=1)
    return out


def test_relations_off_by_default_and_on_with_relations(demo_build: Path, related_build: Path,
                                                        tmp_path: Path) -> None:
    from pipeline.corpus.brat_export import read_settings

    assert BuildCorpus(out=str(tmp_path)).relations is False
    manifest = store.read_json(build_task(demo_build).output().path)
    off_mapped = list(store.iter_directory(manifest["outputs"]["mapped"], Document))
    assert off_mapped and not any(d.relations or d.parses for d in off_mapped)
    assert all(not d.parses for d in store.iter_directory(manifest["outputs"]["extended"], Document))
    assert read_settings(demo_build / "brat") == {"relations": False}
    assert not any(line.startswith("R") for ann in (demo_build / "brat").glob("*.ann")
                   for line in ann.read_text().splitlines())

    on = build_task(related_build, relations=True, until="brat", roster="")
    on_manifest = store.read_json(on.output().path)
    assert "related" not in on_manifest["outputs"]  # the relation step runs in the mapped stage's tasks
    mapped = list(store.iter_directory(on_manifest["outputs"]["mapped"], Document))
    assert all(not d.parses for d in mapped)  # consumed by the relation step, never written further
    assert sum(len(d.relations) for d in mapped) > 0
    counts = store.read_json(Path(on_manifest["outputs"]["mapped"]) / "counts.json")
    assert counts["relations"] == sum(len(d.relations) for d in mapped) and counts["mapped"] > 0
    assert read_settings(related_build / "brat") == {"relations": True}
    extended = list(store.iter_directory(on_manifest["outputs"]["extended"], Document))
    assert any(d.parses for d in extended)
    assert any(line.startswith("R") for ann in (related_build / "brat").glob("*.ann")
               for line in ann.read_text().splitlines())
    # byte-reproducible with relations on too
    again = tmp_path / "again"
    assert luigi.build([build_task(again, relations=True, until="brat", roster="")], local_scheduler=True,
                       workers=1)
    for ann in sorted((related_build / "brat").glob("*.ann")):
        assert ann.read_bytes() == (again / "brat" / ann.name).read_bytes()


def test_new_relation_rules_rerun_mapping_not_extension(related_build: Path, tmp_path: Path,
                                                        started: list[str]) -> None:
    # the rules' content is significant from the mapped stage on: retraining the scorer never reparses
    rules = tmp_path / "relations.yaml"
    text = (PROJECT / "config" / "relations.yaml").read_text(encoding="utf-8")
    rules.write_text(text.replace("scorer: relation_scorer.json", "scorer: " + str(PROJECT / "config" /
                                                                                  "relation_scorer.json"))
                     .replace("max_path: 6", "max_path: 5"), encoding="utf-8")
    task = build_task(related_build, relations=True, relation_rules=str(rules), until="filtered", roster="")
    assert luigi.build([task], local_scheduler=True, workers=1)
    assert any(t.startswith("MapShard") for t in started)
    assert not any(t.startswith(("ExtendShard", "PreannotateShard")) for t in started)


def test_step_clock_counts_the_step_not_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.tasks.engine import StepClock

    # a clock that moves only when the source or the step works: 5 per item produced upstream, 1 per
    # item in the step itself
    now = [0.0]
    monkeypatch.setattr(engine.time, "perf_counter", lambda: now[0])

    def source() -> Iterator[int]:
        for i in range(3):
            now[0] += 5.0
            yield i

    def step(items: Iterator[int]) -> Iterator[int]:
        for i in items:
            now[0] += 1.0
            yield i * 2

    reported: list[float] = []
    clock = StepClock()
    assert list(clock.step(step(clock.source(source())), reported.append)) == [0, 2, 4]
    assert reported == [3.0] and clock.upstream == 15.0 and clock.total == 18.0


def test_luigi_module_entry_point(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    cmd = [
        sys.executable, "-m", "luigi", "--module", "pipeline.tasks", "BuildCorpus", "--local-scheduler",
        "--out", str(tmp_path), "--pubmed-xml", f'["{DEMO / "pubmed"}"]', "--until", "sentences",
    ]
    proc = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (stage,) = (tmp_path / "work" / "02_sentences").iterdir()
    docs = list(store.iter_directory(stage, Document))
    assert docs and all(d.sentences for d in docs)


def test_luigi_module_entry_point_exits_non_zero_on_failure(tmp_path: Path) -> None:
    """luigi.cfg [retcode]: Luigi's own defaults are 0 for every outcome, a failed build included."""
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    cmd = [
        sys.executable, "-m", "luigi", "--module", "pipeline.tasks", "BuildCorpus", "--local-scheduler",
        "--out", str(tmp_path / "out"), "--pubmed-xml", f'["{tmp_path / "missing.xml"}"]', "--until", "documents",
    ]
    proc = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:]


def test_luigi_module_entry_point_takes_the_out_lock(tmp_path: Path) -> None:
    """Plain luigi takes OUT/.build.lock as pgx-corpus build does: refused (2) while another build holds it."""
    from pipeline.corpus import outdir

    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    out = tmp_path / "out"
    cmd = [
        sys.executable, "-m", "luigi", "--module", "pipeline.tasks", "BuildCorpus", "--local-scheduler",
        "--out", str(out), "--pubmed-xml", f'["{DEMO / "pubmed"}"]', "--until", "documents",
    ]
    with outdir.acquire_lock(out):
        proc = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "is in use by another build" in proc.stderr
        assert not (out / "work").exists()
    proc = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "work" / "01_documents").is_dir() and not (out / outdir.LOCK_NAME).exists()


def test_pubtator_file_annotations_from_a_dump(tmp_path: Path) -> None:
    """--annotations: a gzip PubTator dump is split once by shard and re-aligned onto the documents."""
    import gzip
    from collections import Counter

    from pipeline.sources.pubmed_xml import iter_documents

    docs = list(iter_documents(DEMO / "pubmed" / "demo.xml", Counter()))
    blocks = []
    for doc in docs:
        # PubTator's own text: title and abstract joined by a space, ASCII-folded like the dumps
        lines = [f"{doc.pmid}|t|{doc.title}", f"{doc.pmid}|a|{doc.abstract}"]
        start = doc.text.lower().find("warfarin")
        if start >= 0:
            lines.append(f"{doc.pmid}\t{start}\t{start + 8}\t{doc.text[start:start + 8]}\tChemical\tMESH:D014859")
        blocks.append("\n".join(lines) + "\n\n")
    blocks.append("99999999|t|Not one of ours.\n99999999|a|Skipped.\n\n")
    dump = tmp_path / "bioconcepts2pubtator_offsets.gz"
    dump.write_bytes(gzip.compress("".join(blocks).encode()))
    out = tmp_path / "out"
    task = build_task(out, annotator="pubtator-file", annotation_files=(str(dump),), fallback_local=False,
                      until="preannotated")
    assert luigi.build([task], local_scheduler=True, workers=1)
    manifest = store.read_json(task.output().path)
    annotated = list(store.iter_directory(manifest["outputs"]["preannotated"], Document))
    expected = {d.pmid for d in docs if "warfarin" in d.text.lower()}
    found = {d.pmid for d in annotated if any(a.source == "pubtator" and a.type == "Chemical" for a in d.annotations)}
    assert expected and found == expected
    (split,) = (out / "work" / "03_annotation_files").iterdir()
    assert store.read_json(split / "counts.json")["split_skipped_records"] == 1


@pytest.mark.slow  # a build over many shards
def test_many_shards_in_parallel_give_the_same_corpus(demo_build: Path, tmp_path: Path) -> None:
    """PMID blocks of 5: the demo spreads over 5 shards run by 2 workers; records equal the 1-shard build."""
    task = build_task(tmp_path, shard_size=5, until="sampled")
    assert luigi.build([task], local_scheduler=True, workers=2)
    manifest = store.read_json(task.output().path)
    assert manifest["stages"]["mapped"]["shards"] == 5
    ref = store.read_json(build_task(demo_build).output().path)
    for stage, cls in (("mapped", Document), ("filtered", SentenceRecord), ("sampled", SentenceRecord)):
        ours = list(store.iter_directory(manifest["outputs"][stage], cls))
        theirs = list(store.iter_directory(ref["outputs"][stage], cls))
        assert ours == theirs, stage


def test_stratified_sample_from_trigger_phrases(demo_build: Path, tmp_path: Path) -> None:
    triggers = tmp_path / "triggers.txt"
    triggers.write_text("# abstracts about cytochrome P450 genes\nCYP2D6\nCYP2C19\n")
    task = build_task(demo_build, sample="6", triggers=str(triggers), trigger_fraction=0.5, until="sampled")
    assert luigi.build([task], local_scheduler=True, workers=1)
    counts = store.read_json(task.output().path)["stages"]["sampled"]
    assert counts["sampled"] == 6
    assert counts["sampled_triggered"] == 3 and counts["sampled_other"] == 3
    assert counts["pool_triggered"] >= 3 and counts["pool_other"] >= 3


def test_rebuild_with_more_documents_reuses_unchanged_shards(tmp_path: Path) -> None:
    """A scheduled rebuild is a new run, but PMID blocks whose documents did not change are not parsed again."""
    first = build_task(tmp_path, pubmed_xml=(str(DEMO / "pubmed" / "demo.xml"),), shard_size=10, until="mapped")
    assert luigi.build([first], local_scheduler=True, workers=1)
    grown = build_task(tmp_path, shard_size=10, until="mapped")  # demo.xml + demo_update.xml.gz (PMIDs 18-20)
    assert luigi.build([grown], local_scheduler=True, workers=1)
    before = store.read_json(first.output().path)["stages"]
    after = store.read_json(grown.output().path)["stages"]
    assert before["extended"]["shards"] == 2 and after["extended"]["shards"] == 3
    # block 90000000-09 is unchanged; 90000010-19 gained PMIDs 18 and 19; 90000020 is new
    for stage in ("sentences", "preannotated", "extended", "mapped"):
        assert after[stage].get("reused_shards") == 1, stage
    fresh = build_task(tmp_path / "fresh", shard_size=10, until="mapped")
    assert luigi.build([fresh], local_scheduler=True, workers=1)
    reused = store.read_json(grown.output().path)["outputs"]["mapped"]
    rebuilt = store.read_json(fresh.output().path)["outputs"]["mapped"]
    assert list(store.iter_directory(reused, Document)) == list(store.iter_directory(rebuilt, Document))


def test_unchanged_shards_of_a_rebuild_cost_no_task(tmp_path: Path, started: list[str]) -> None:
    """Shards whose input is unchanged are filled from the reuse cache while Luigi checks the DAG: no task runs."""
    first = build_task(tmp_path, pubmed_xml=(str(DEMO / "pubmed" / "demo.xml"),), shard_size=10, until="mapped")
    assert luigi.build([first], local_scheduler=True, workers=1)
    started.clear()
    grown = build_task(tmp_path, shard_size=10, until="mapped")  # demo_update.xml.gz adds PMIDs 18-20
    assert luigi.build([grown], local_scheduler=True, workers=1)
    ran = [t.split("_")[0] for t in started]
    shard_tasks = [t for t in ran if t.endswith("Shard")]
    # block 0 is unchanged (no task); blocks 1 and 2 changed: 4 stages each
    assert sorted(shard_tasks) == sorted(["SplitSentencesShard", "PreannotateShard", "ExtendShard", "MapShard"] * 2)
    # demo.xml was parsed by the first build and read back from the parse cache by the second
    assert len(list((tmp_path / "cache" / "sources").glob("*.counts.json"))) == 2


def test_with_the_documents_written_first_the_wrappers_require_their_shards(tmp_path: Path, started: list[str]) -> None:
    """As `build --scheduler-host` does: the documents first, then every stage wrapper lists its shard tasks as
    requirements (decided once per task instance), and a rebuild still runs only the changed shards."""
    first = build_task(tmp_path, pubmed_xml=(str(DEMO / "pubmed" / "demo.xml"),), shard_size=10, until="mapped")
    documents = first.clone(Documents)
    early = first.clone(Mapped)
    assert early.requires() == [documents]  # not written yet: the wrapper yields its shards when it runs
    assert luigi.build([first.clone(BuildDocuments)], local_scheduler=True, workers=1)
    assert early.requires() == [documents]  # the same instance keeps its first answer
    assert luigi.build([first], local_scheduler=True, workers=1)
    started.clear()
    grown = build_task(tmp_path, shard_size=10, until="mapped")  # demo_update.xml.gz adds PMIDs 18-20
    assert luigi.build([grown.clone(BuildDocuments)], local_scheduler=True, workers=1)
    mapped = grown.clone(Mapped).requires()
    assert mapped[0] == grown.clone(Documents)
    assert [type(t) for t in mapped[1:]] == [MapShard] * 3
    assert [t.shard for t in mapped[1:]] == store.shard_ids(grown.clone(Documents).output().path)
    assert luigi.build([grown], local_scheduler=True, workers=1)
    shard_tasks = [t.split("_")[0] for t in started if t.split("_")[0].endswith("Shard")]
    # block 0 is unchanged (filled from the cache while the DAG is checked: no task)
    assert sorted(shard_tasks) == sorted(["SplitSentencesShard", "PreannotateShard", "ExtendShard", "MapShard"] * 2)
    assert store.read_json(grown.output().path)["stages"]["mapped"]["shards"] == 3


def test_progress_is_counted_over_the_shard_not_per_transform_call() -> None:
    """The per-document memo calls a transform once per document: one status message (an HTTP request on a
    central scheduler) per document would cost more than the work; messages come every N records of the shard."""
    task = SplitSentencesShard(out="/nonexistent", shard=1)
    messages: list[str] = []
    task.set_status_message = messages.append
    progress = Progress(task, every=3)
    for _ in range(4):
        assert list(progress(iter(["a", "b"]))) == ["a", "b"]
    assert messages == ["SplitSentencesShard shard: 3 records", "SplitSentencesShard shard: 6 records"]


def stage_files(task: BuildCorpus) -> dict[str, bytes]:
    """Every stage output file of a build (shards, counts, brat files, batches), by path under its stage."""
    files = {}
    for stage in task.stages():
        root = task.clone(STAGE_TASKS[stage]).stage_dir()
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.name in ("params.json", "users.json"):
                continue
            data = path.read_bytes()
            if path.name.endswith("counts.json"):  # how a shard was obtained is not part of the result
                counts = store.read_json(path)
                counts.pop("reused_shards", None)
                data = store.dumps_json(counts).encode()
            files[f"{stage}/{path.relative_to(root)}"] = data
    return files


def published_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out / "brat")): p.read_bytes()
            for p in sorted((out / "brat").rglob("*")) if p.is_file() and p.name != ".run"}


@pytest.mark.slow  # an incremental and a fresh build
def test_incremental_rebuild_is_byte_identical_to_a_fresh_build(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Adding records to existing blocks reuses earlier documents' results; every output equals a fresh build's."""
    first = build_task(tmp_path / "inc", pubmed_xml=(str(DEMO / "pubmed" / "demo.xml"),), shard_size=10)
    assert luigi.build([first], local_scheduler=True, workers=1)
    grown = build_task(tmp_path / "inc", shard_size=10)  # demo_update.xml.gz adds PMIDs 18-20
    with caplog.at_level(logging.INFO, logger="pipeline.tasks"):
        assert luigi.build([grown], local_scheduler=True, workers=1)
    fresh = build_task(tmp_path / "fresh", shard_size=10)
    assert luigi.build([fresh], local_scheduler=True, workers=1)
    incremental, rebuilt = stage_files(grown), stage_files(fresh)
    assert len(rebuilt) > 20 and incremental.keys() == rebuilt.keys()
    for name, data in rebuilt.items():
        assert incremental[name] == data, name
    assert published_files(tmp_path / "inc") == published_files(tmp_path / "fresh")
    # block 90000010-19 gained PMIDs 18 and 19: its earlier documents were not computed again, in any shard stage
    reused = [r.getMessage() for r in caplog.records if "documents reused" in r.getMessage()]
    for family in ("SplitSentencesShard", "PreannotateShard", "ExtendShard", "MapShard", "FilterShard"):
        assert f"{family} shard 9000001: 8 documents reused, 2 computed" in reused, family
    # the brat export linked the unchanged sentences' files to the first build's
    before = Path(output_dir(first.clone(ExportBrat).output()))
    after = Path(output_dir(grown.clone(ExportBrat).output()))
    shared = sorted(p.name for p in before.glob("*.ann") if (after / p.name).exists())
    assert shared and all((before / n).stat().st_ino == (after / n).stat().st_ino for n in shared)


@pytest.mark.slow  # three builds
def test_a_third_build_recycles_the_first_builds_collection(tmp_path: Path) -> None:
    """The brat export before the previous one becomes the new export (one rename, then only what changed):
    the result equals a fresh build's, the previous (published) collection is untouched."""
    import gzip

    extra = tmp_path / "extra.xml"
    text = gzip.decompress((DEMO / "pubmed" / "demo_update.xml.gz").read_bytes()).decode("utf-8")
    extra.write_text(text.replace(">900000", ">900001"), encoding="utf-8")  # PMIDs 90000118-20, a new block
    sources = [str(DEMO / "pubmed" / "demo.xml"), str(DEMO / "pubmed" / "demo_update.xml.gz")]
    builds = [build_task(tmp_path / "inc", pubmed_xml=tuple(sources[:n]), shard_size=10) for n in (1, 2)]
    builds.append(build_task(tmp_path / "inc", pubmed_xml=(*sources, str(extra)), shard_size=10))
    collections = []
    for task in builds:
        assert luigi.build([task], local_scheduler=True, workers=1)
        collections.append(Path(output_dir(task.clone(ExportBrat).output())))
        if len(collections) == 2:
            second = {p.name: p.read_bytes() for p in collections[1].iterdir()}
    assert not collections[0].exists()  # recycled into the third
    assert {p.name: p.read_bytes() for p in collections[1].iterdir()} == second
    fresh = build_task(tmp_path / "fresh", pubmed_xml=(*sources, str(extra)), shard_size=10)
    assert luigi.build([fresh], local_scheduler=True, workers=1)
    assert published_files(tmp_path / "inc") == published_files(tmp_path / "fresh")
    incremental, rebuilt = stage_files(builds[2]), stage_files(fresh)
    assert incremental == rebuilt
    # the first build's outputs are still complete but for the collection: asking for it again makes it again
    assert luigi.build([builds[0]], local_scheduler=True, workers=1)
    assert collections[0].is_dir() and (tmp_path / "inc" / "brat").resolve() == collections[0].resolve()


def test_output_paths_follow_config_contents_for_the_same_task_instance(tmp_path: Path) -> None:
    """The parameter hash is remembered per task instance, but not across a change of a config file's content."""
    ontology = tmp_path / "ontology.yaml"
    ontology.write_bytes((PROJECT / "config" / "ontology.yaml").read_bytes())
    task = build_task(tmp_path / "out", ontology=str(ontology)).clone(Mapped)
    first = task.stage_dir()
    assert task.stage_dir() == first and task.clone(Mapped) is task  # Luigi's instance cache
    ontology.write_bytes(ontology.read_bytes() + b"\n# edited\n")
    os.utime(ontology, ns=(1, 1))  # even with an old modification time the size differs
    assert task.stage_dir() != first


@pytest.mark.slow  # two builds
def test_an_unreadable_brat_memo_is_a_missing_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A damaged brat export memo is ignored with a warning naming it; the collection equals a fresh build's."""
    first = build_task(tmp_path / "inc", pubmed_xml=(str(DEMO / "pubmed" / "demo.xml"),), shard_size=10)
    assert luigi.build([first], local_scheduler=True, workers=1)
    memos = list((tmp_path / "inc" / "cache" / "memo" / "08_brat").glob("*.json"))
    assert len(memos) == 1
    memos[0].write_text("{broken", encoding="utf-8")
    grown = build_task(tmp_path / "inc", shard_size=10)
    with caplog.at_level(logging.WARNING, logger="pipeline.corpus.brat_export"):
        assert luigi.build([grown], local_scheduler=True, workers=1)
    assert any(str(memos[0]) in r.getMessage() and "not readable" in r.getMessage() for r in caplog.records)
    fresh = build_task(tmp_path / "fresh", shard_size=10)
    assert luigi.build([fresh], local_scheduler=True, workers=1)
    assert published_files(tmp_path / "inc") == published_files(tmp_path / "fresh")


def test_an_empty_directory_target_is_not_complete_and_is_replaced(tmp_path: Path) -> None:
    """LocalFileSystem.move created the target directory before renaming into it: a kill between them left
    an empty directory that Luigi took for a complete output.  A directory target needs its marker."""
    target = DirectoryTarget(str(tmp_path / "07_sampled" / "h") + "/")
    Path(target.path).mkdir(parents=True)  # what a killed move left
    assert not target.exists()
    with target.temporary_path() as tmp:
        assert tmp.endswith("/") and durable.is_temporary(Path(tmp).name) and Path(tmp).is_dir()
        (Path(tmp) / "shard-000090.jsonl.gz").write_bytes(b"x")
    assert target.exists()
    assert sorted(p.name for p in Path(target.path).iterdir()) == [COMPLETE_MARKER, "shard-000090.jsonl.gz"]
    assert sorted(p.name for p in (tmp_path / "07_sampled").iterdir()) == ["h"]  # no staging or old copy left
