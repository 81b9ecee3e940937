"""Scale: the whole build on N replicated records, rebuilds, and a second worker process on luigid.

Replicates the 1,699 real GENIA records (``../shared/data/genia/pubmed-xml``)
into N records with new PMIDs spread over 1..40,000,000 (seeded, so the same
N gives the same records), written as PubMed XML files of 500 records, and
runs ``pgx-corpus build`` on them with the local annotator and ``--sample
all`` (every other option at its default: build-time relations are off, so
the relation step's time is reported with ``--build-args=--relations``).  Prints:

* per stage: wall time (first task start to last task end), task time (sum
  over the stage's tasks) and sentences per task-second, from the build log;
* peak memory (max RSS) of each process;
* raw ``nlp.pipe`` over the same sentences (same model, batch size 256, one
  process) in the same run, and the build's ratio to it;
* the time of a rebuild adding 1% new records (a new XML file), and of a
  rebuild with no change;
* with ``--second-worker``: the same build on a fresh output directory with a
  central ``luigid`` on loopback and one extra ``pgx-corpus worker`` process,
  its time relative to the one-process build, whether the brat output is
  byte-identical, how many shard tasks each process ran, each process's task
  time and how long the worker took to load the lexicon and the model.

    python bench/scale.py --records 3000 --second-worker
    python bench/scale.py --records 10000 --rebuild [--repeat 5] [--no-raw]

The local annotator's lexicon is used in its lookup form (``--lexicon``,
default ``lexicon/lexicon.json.gz`` in the user cache directory; when its ``.lookup`` sidecar is
missing or has no ``lengths`` sections, a copy with a new sidecar is made in the work directory).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from pipeline import store  # noqa: E402
from pipeline.documents import Document  # noqa: E402
from pipeline.nlp.lexicon import DEFAULT_LEXICON  # noqa: E402
from pipeline.nlp.lexicon_lookup import lookup_path, write_lookup  # noqa: E402

GENIA = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared")) / "data" / "genia" / "pubmed-xml"
ARTICLE = re.compile(r"<PubmedArticle>.*?</PubmedArticle>", re.S)
PMID = re.compile(r'<PMID Version="\d+">\d+</PMID>')
ARTICLE_ID = re.compile(r'<ArticleId IdType="pubmed">\d+</ArticleId>')
LOG = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO luigi-interface: \[pid (\d+)\] Worker .*? "
    r"(running|done|new requirements) +((\w+)\(.*)$"
)
STAGE_OF = {
    "Documents": "documents", "SplitSentencesShard": "sentences", "Sentences": "sentences",
    "PreannotateShard": "preannotated", "Preannotated": "preannotated", "ExtendShard": "extended",
    "Extended": "extended", "MapShard": "mapped", "Mapped": "mapped", "FilterShard": "filtered",
    "Filtered": "filtered", "Sample": "sampled", "ExportBrat": "brat", "BuildCorpus": "final",
}
STAGES = ("documents", "sentences", "preannotated", "extended", "mapped", "filtered", "sampled", "brat", "final")
# logged by each MapShard with relations on: the relation step's own time (pipeline.tasks.engine.StepClock)
RELATION_STEP = re.compile(r"MapShard shard \d+: relation step: ([\d.]+) s")
PER_FILE = 500


# --- input ---------------------------------------------------------------------------------------


def genia_articles() -> list[str]:
    if not GENIA.is_dir():
        sys.exit(f"GENIA records not found: {GENIA} (put the shared/ folder beside the project)")
    articles = []
    for path in sorted(GENIA.glob("*.xml")):
        articles.extend(ARTICLE.findall(path.read_text(encoding="utf-8")))
    return articles


def pmids(n: int, extra: int, seed: int = 13) -> tuple[list[int], list[int]]:
    """n + extra distinct PMIDs spread over 1..40,000,000 (seeded)."""
    chosen = random.Random(seed).sample(range(1, 40_000_001), n + extra)
    return chosen[:n], chosen[n:]


def write_records(articles: list[str], ids: list[int], directory: Path, offset: int = 0) -> list[Path]:
    """Records ``articles[(offset + i) % len]`` with PMID ``ids[i]``, in files of PER_FILE records."""
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for start in range(0, len(ids), PER_FILE):
        body = []
        for i in range(start, min(start + PER_FILE, len(ids))):
            article = articles[(offset + i) % len(articles)]
            article = PMID.sub(f'<PMID Version="1">{ids[i]}</PMID>', article, count=1)
            article = ARTICLE_ID.sub(f'<ArticleId IdType="pubmed">{ids[i]}</ArticleId>', article, count=1)
            body.append(article)
        path = directory / f"part-{start // PER_FILE:04d}.xml"
        path.write_text("<?xml version=\"1.0\" ?>\n<PubmedArticleSet>\n" + "\n".join(body)
                        + "\n</PubmedArticleSet>\n", encoding="utf-8")
        files.append(path)
    return files


# --- running -------------------------------------------------------------------------------------


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PROJECT)}


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as fh:
        return subprocess.Popen([sys.executable, "-m", "pipeline", *args], cwd=PROJECT, env=env(),
                                stdout=subprocess.DEVNULL, stderr=fh)


def finish(proc: subprocess.Popen[bytes]) -> tuple[int, int]:
    """Wait for ``proc``: (exit status, max RSS in KiB of it and the descendants it waited for)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss


def build(out: Path, sources: list[Path], lexicon: Path, log: Path, extra: list[str] | None = None) -> dict[str, Any]:
    args = ["build", "--out", str(out), "--pubmed-xml", *map(str, sources), "--annotator", "local",
            "--lexicon", str(lexicon), "--sample", "all", *(extra or [])]
    began = time.monotonic()
    code, rss = finish(start(args, log))
    wall = time.monotonic() - began
    if code != 0:
        sys.exit(f"build failed ({code}); see {log}")
    return {"wall": wall, "rss_mib": rss / 1024, "log": log}


def stage_times(log: Path) -> dict[str, dict[str, float]]:
    """Per stage: wall (first start to last end) and task time (sum of task runs) from a build log."""
    running: dict[tuple[str, str], datetime] = {}
    spans: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = LOG.match(line)
        if not m or m.group(5) not in STAGE_OF:
            continue
        when = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
        key = (m.group(2), m.group(4))
        if m.group(3) == "running":
            running[key] = when
        elif key in running:
            spans[STAGE_OF[m.group(5)]].append((running.pop(key), when))
    out = {}
    for stage, pairs in spans.items():
        out[stage] = {
            "wall": (max(e for _, e in pairs) - min(s for s, _ in pairs)).total_seconds(),
            "task": sum((e - s).total_seconds() for s, e in pairs),
            "tasks": len(pairs),
        }
    return out


def relation_seconds(log: Path) -> float:
    """The relation step's own seconds, summed over the mapped shard tasks that logged it."""
    text = log.read_text(encoding="utf-8", errors="replace")
    return sum(float(m.group(1)) for m in RELATION_STEP.finditer(text))


def shard_tasks_run(log: Path) -> int:
    return sum(1 for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
               if (m := LOG.match(line)) and m.group(3) == "done" and m.group(5).endswith("Shard"))


def task_seconds(log: Path) -> float:
    """Time one process spent running tasks (every stage), from its log."""
    return sum(t["task"] for t in stage_times(log).values())


WARMED = re.compile(r"loaded what the build's shards need in ([\d.]+) s")


def manifest(out: Path) -> dict[str, Any]:
    runs = sorted((out / "runs").glob("*/manifest.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(runs[-1].read_text(encoding="utf-8"))


def sentence_texts(out: Path) -> list[str]:
    directory = manifest(out)["outputs"]["sentences"]
    return [d.text[s.start : s.end] for d in store.iter_directory(directory, Document) for s in d.sentences]


RAW_PARSE = """
import json, sys, time
sys.path.insert(0, {project!r})
from pipeline.nlp.spacy_models import load_parser
texts = json.load(open({texts!r}, encoding="utf-8"))
nlp = load_parser()
began = time.monotonic()
for _ in nlp.pipe(texts, batch_size=256):
    pass
print(time.monotonic() - began)
"""


def raw_parse(texts: list[str], work: Path) -> float:
    path = work / "sentences.json"
    path.write_text(json.dumps(texts), encoding="utf-8")
    code = RAW_PARSE.format(project=str(PROJECT), texts=str(path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def with_second_worker(out: Path, sources: list[Path], lexicon: Path, work: Path) -> dict[str, Any]:
    port = free_port()
    home = work / "luigid"
    (home / "logs").mkdir(parents=True, exist_ok=True)
    luigid = subprocess.Popen(
        [str(Path(sys.executable).with_name("luigid")), "--port", str(port), "--address", "127.0.0.1",
         "--state-path", str(home / "state.pickle"), "--logdir", str(home / "logs")],
        cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        scheduler = ["--scheduler-host", "127.0.0.1", "--scheduler-port", str(port)]
        worker_log = work / "worker.log"
        began = time.monotonic()
        worker = start(["worker", *scheduler, "--exit-when-idle", "3"], worker_log)
        result = build(out, sources, lexicon, work / "build-two.log", scheduler)
        result["wall"] = time.monotonic() - began  # from the worker's start: its model load counts
        code, rss = finish(worker)
        warmed = WARMED.search(worker_log.read_text(encoding="utf-8", errors="replace"))
        result.update(worker_rss_mib=rss / 1024, worker_status=code,
                      shards_build=shard_tasks_run(work / "build-two.log"), shards_worker=shard_tasks_run(worker_log),
                      tasks_build=task_seconds(work / "build-two.log"), tasks_worker=task_seconds(worker_log),
                      worker_load=float(warmed.group(1)) if warmed else None)
        return result
    finally:
        luigid.terminate()
        luigid.wait()


def ensure_lookup(lexicon: Path, work: Path) -> Path:
    """The lexicon, or a copy of it in ``work`` with a current sidecar when its own is missing or older.

    A sidecar without the ``lengths`` sections (written before they existed) is read, slower: it would
    measure the former lookup.
    """
    sidecar = lookup_path(lexicon)
    if sidecar.is_file():
        with open(sidecar, "rb") as fh:
            sections = [name for name, _size in json.loads(fh.readline()).get("sections", [])]
        if "folded.lengths" in sections:
            return lexicon
    copy = work / "lexicon" / lexicon.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(lexicon, copy)
    write_lookup(copy)
    return copy


# --- report --------------------------------------------------------------------------------------


def report_stages(title: str, result: dict[str, Any], sentences: int) -> None:
    times = stage_times(result["log"])
    print(f"\n{title}: wall {result['wall']:.1f} s, peak RSS {result['rss_mib']:.0f} MiB, "
          f"{sentences:,} sentences, {sentences / result['wall']:.0f} sentences/s overall")
    print(f"  {'stage':13} {'wall s':>8} {'task s':>8} {'tasks':>6} {'sent/task-s':>12}")
    for stage in STAGES:
        if stage in times:
            t = times[stage]
            rate = f"{sentences / t['task']:.0f}" if t["task"] > 0 and stage not in ("final",) else "-"
            print(f"  {stage:13} {t['wall']:8.2f} {t['task']:8.2f} {t['tasks']:6d} {rate:>12}")
    relation = relation_seconds(result["log"])
    if relation:
        total = sum(t["task"] for t in times.values())
        print(f"  relation stage (its own time in the mapped tasks): {relation:.2f} of {total:.2f} task-seconds "
              f"({100 * relation / total:.1f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=3000, help="replicated records (default 3000)")
    parser.add_argument("--rebuild", action="store_true", help="time a rebuild with 1%% new records and one with none")
    parser.add_argument("--second-worker", action="store_true", help="time the build with a second worker on luigid")
    parser.add_argument("--lexicon", type=Path, default=DEFAULT_LEXICON)
    parser.add_argument("--work", type=Path, help="work directory (default: a temporary one, removed)")
    parser.add_argument("--build-args", default="", help="extra build options, e.g. '--workers 2'")
    parser.add_argument("--repeat", type=int, default=0, metavar="N",
                        help="with --rebuild: N more rebuilds, each adding another 1%% of new records to a copy of "
                        "the grown output (cp -a), and their median")
    parser.add_argument("--no-raw", action="store_true", help="skip the raw nlp.pipe parse (no build / raw ratio)")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="pgx-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        lexicon = ensure_lookup(args.lexicon, work)
        articles = genia_articles()
        base_ids, new_ids = pmids(args.records, max(1, args.records // 100))
        sources = write_records(articles, base_ids, work / "input" / "base")
        print(f"{args.records:,} records ({len(articles):,} GENIA records replicated), PMIDs over 1..40M, "
              f"{len(sources)} XML files; load average {os.getloadavg()[0]:.2f} at start")
        one = build(work / "out", sources, lexicon, work / "build-one.log", args.build_args.split())
        texts = sentence_texts(work / "out")
        raw = 0.0 if args.no_raw else raw_parse(texts, work)
        report_stages("one process", one, len(texts))
        counts = manifest(work / "out")["stages"]
        print(f"  sentences parsed {counts['extended'].get('sentences_parsed', 0):,}, "
              f"skipped as unable to pass the filter {counts['extended'].get('skipped_cannot_pass', 0):,}, "
              f"kept by the filter {counts['filtered'].get('kept', 0):,}")
        if raw:
            print(f"raw nlp.pipe over the same {len(texts):,} sentences: {raw:.1f} s ({len(texts) / raw:.0f} "
                  f"sentences/s); build / raw = {one['wall'] / raw:.2f}")
        if args.second_worker:
            two = with_second_worker(work / "out-two", sources, lexicon, work)
            same = tree(work / "out-two" / "brat") == tree(work / "out" / "brat")
            print(f"\nbuild + 1 worker on luigid: wall {two['wall']:.1f} s = {two['wall'] / one['wall']:.2f} x one "
                  f"process (speed-up {one['wall'] / two['wall']:.2f}); brat output byte-identical: {same}; "
                  f"shard tasks: build {two['shards_build']}, worker {two['shards_worker']}; peak RSS build "
                  f"{two['rss_mib']:.0f} MiB, worker {two['worker_rss_mib']:.0f} MiB")
            load = "not logged" if two["worker_load"] is None else f"{two['worker_load']:.1f} s"
            print(f"  task time: build {two['tasks_build']:.1f} s, worker {two['tasks_worker']:.1f} s "
                  f"(one process: {task_seconds(one['log']):.1f} s); worker loading lexicon and model before "
                  f"its first task: {load}; worker exit status {two['worker_status']}")
        if args.rebuild:
            extra = write_records(articles, new_ids, work / "input" / "update", offset=args.records)
            grown = build(work / "out", [*sources, *extra], lexicon, work / "build-grown.log", args.build_args.split())
            times = stage_times(grown["log"])
            detail = ", ".join(f"{s} {times[s]['task']:.1f} s/{times[s]['tasks']} tasks" for s in STAGES if s in times)
            print(f"\nrebuild adding {len(new_ids):,} records (1%): {grown['wall']:.1f} s ({detail})")
            same = build(work / "out", [*sources, *extra], lexicon, work / "build-same.log", args.build_args.split())
            print(f"rebuild with no change: {same['wall']:.2f} s")
            walls = []
            for i in range(args.repeat):
                # another 1%: new PMIDs (distinct from every earlier one), on a copy of the grown output
                taken = set(base_ids) | set(new_ids)
                rng = random.Random(1000 + i)
                more: list[int] = []
                while len(more) < len(new_ids):
                    pmid = rng.randrange(1, 40_000_001)
                    if pmid not in taken:
                        taken.add(pmid)
                        more.append(pmid)
                again = write_records(articles, more, work / "input" / f"again-{i}", offset=args.records + 7 * i)
                copy = work / f"out-again-{i}"
                subprocess.run(["cp", "-a", str(work / "out"), str(copy)], check=True)
                # the copy's half-gigabyte of dirty pages would otherwise be written back during the
                # rebuild it is made for: a scheduled rebuild does not start right after such a copy
                os.sync()
                result = build(copy, [*sources, *extra, *again], lexicon, work / f"build-again-{i}.log",
                               args.build_args.split())
                shutil.rmtree(copy, ignore_errors=True)
                times = stage_times(result["log"])
                detail = ", ".join(f"{s} {times[s]['task']:.1f} s/{times[s]['tasks']}" for s in STAGES if s in times)
                print(f"rebuild adding another {len(more):,} records (copy {i + 1}): {result['wall']:.1f} s "
                      f"({detail}); load average {os.getloadavg()[0]:.2f}")
                walls.append(result["wall"])
            if walls:
                print(f"median of {len(walls)} rebuilds adding 1%: {sorted(walls)[len(walls) // 2]:.1f} s "
                      f"(min {min(walls):.1f}, max {max(walls):.1f})")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
