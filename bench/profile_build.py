"""Profile: where a build's time goes, per stage, on N replicated records (issue 39 item 1).

Makes the same input as ``bench/scale.py`` (the 1,699 GENIA records replicated into N records with
new PMIDs, local annotator, ``--sample all``) and runs ``pgx-corpus build`` twice on fresh output
directories, with build-time relations off (the build's default, or ``--no-relations``) or on
(``--build-args=--relations``):

1. **plain**: the build as ``bench/scale.py`` runs it; per stage its task-seconds (sum over the
   stage's tasks, from the build log) and the process's wall time;
2. **profiled**: the same build in a process that runs ``pipeline.cli.main`` with a ``cProfile``
   profiler switched on while each task runs (Luigi's ``START`` and ``SUCCESS``/``FAILURE`` task
   events; one worker runs its tasks in its own process).  Per stage it prints the profiled
   task-seconds and the inclusive time of: JSON encode (``json.dumps``) and decode (``json.loads``),
   the dataclass walk (``pipeline.documents.to_dict`` / ``from_dict``), gzip (zlib compression and
   CRC) and gunzip (zlib decompression), the parse (spaCy's ``Language.pipe``), the lexicon lookup
   (``LocalAnnotator._lexicon_matches``) and the whole local annotator (``annotate``), the relation
   step (``relate_sentence`` and ``concept_relations``), file I/O (``io``/``os`` calls that read,
   write, open, stat, rename or sync) and Luigi's own code called from inside the tasks.  Outside
   the tasks it prints the process's start-up (interpreter, imports and argument parsing, until
   ``main`` dispatches the command), the time from there to the first task (the build command's
   checks and Luigi's scheduling), the time between and after tasks (Luigi's own overhead and the
   build's bookkeeping), and the sum of the tasks.

The categories overlap only where one calls another (the lexicon lookup is inside the annotator;
file I/O is inside gzip's reads); the profiler slows Python code more than C code (the parse), so
the profiled shares are of the profiled run, and the plain run's task-seconds are the figures.

    python bench/profile_build.py --records 1000 [--build-args=--relations] [--work DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
PROJECT = BENCH.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(BENCH))

import scale  # noqa: E402

#: (category, file suffix or "~" for C functions, function-name test) -> inclusive seconds summed.
CATEGORIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("json encode", "json/__init__.py", ("dumps",)),
    ("json decode", "json/__init__.py", ("loads",)),
    ("dataclass walk: to_dict", "pipeline/documents.py", ("to_dict",)),
    ("dataclass walk: from_dict", "pipeline/documents.py", ("from_dict",)),
    ("gzip (compress, crc)", "~", ("<built-in method zlib.compress>", "<method 'compress' of 'zlib.Compress'",
                                   "<method 'flush' of 'zlib.Compress'", "<built-in method zlib.crc32>",
                                   "<built-in method zlib.compressobj>")),
    ("gunzip (decompress)", "~", ("<built-in method zlib.decompress>", "<method 'decompress' of 'zlib.Decompress'",
                                  "<method 'flush' of 'zlib.Decompress'")),
    ("parse (spaCy pipe)", "spacy/language.py", ("pipe",)),
    ("local annotator (annotate)", "pipeline/nlp/local_annotator.py", ("annotate",)),
    ("  of which lexicon lookup", "pipeline/nlp/local_annotator.py", ("_lexicon_matches",)),
    ("relation step", "pipeline/nlp/relations/documents.py", ("relate_sentence", "concept_relations")),
    ("lexicon load", "pipeline/nlp/local_annotator.py", ("load",)),
    ("spaCy model load", "pipeline/nlp/spacy_models.py", ("load_parser",)),
    ("file I/O", "~", ("<method 'read' of '_io.", "<method 'readinto' of '_io.", "<method 'write' of '_io.",
                       "<method 'readline' of '_io.", "<built-in method io.open>", "<built-in method _io.open>",
                       "<built-in method posix.stat>", "<built-in method posix.lstat>",
                       "<built-in method posix.replace>", "<built-in method posix.rename>",
                       "<built-in method posix.fsync>", "<built-in method posix.open>",
                       "<built-in method posix.scandir>", "<built-in method posix.listdir>",
                       "<built-in method posix.link>", "<built-in method posix.unlink>",
                       "<method 'close' of '_io.")),
)


# --- the profiled process ------------------------------------------------------------------------


def process_age() -> float:
    """Seconds since this process started (``/proc/self/stat``), so the interpreter's own start counts."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def child(argv: list[str], result_path: Path) -> int:
    """Run ``pgx-corpus`` ``argv`` with a profiler on while each task runs; write the figures to ``result_path``."""
    began = time.monotonic() - process_age()
    import luigi

    from pipeline import cli

    profiles: dict[str, pstats.Stats] = {}
    outside = cProfile.Profile()  # on whenever no task runs: start-up is before it, so from main on
    spans: list[tuple[str, float, float]] = []
    current: dict[str, Any] = {}

    @luigi.Task.event_handler(luigi.Event.START)
    def _start(task: luigi.Task) -> None:
        current["task"] = task.get_task_family()
        current["profiler"] = profiler = cProfile.Profile()
        current["began"] = time.monotonic()
        outside.disable()
        profiler.enable()

    def _end(task: luigi.Task, *_: Any) -> None:
        profiler = current.pop("profiler", None)
        if profiler is None:
            return
        profiler.disable()
        ended = time.monotonic()
        family = current.pop("task")
        spans.append((family, current.pop("began"), ended))
        stage = scale.STAGE_OF.get(family, family)
        if stage in profiles:
            profiles[stage].add(profiler)
        else:
            profiles[stage] = pstats.Stats(profiler)
        outside.enable()

    luigi.Task.event_handler(luigi.Event.SUCCESS)(_end)
    luigi.Task.event_handler(luigi.Event.FAILURE)(_end)

    dispatched: dict[str, float] = {}
    parse_args = cli.argparse.ArgumentParser.parse_args

    def timed_parse(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = parse_args(self, *args, **kwargs)
        dispatched.setdefault("at", time.monotonic())
        outside.enable()
        return out

    cli.argparse.ArgumentParser.parse_args = timed_parse  # type: ignore[method-assign]
    code = cli.main(argv)
    outside.disable()
    ended = time.monotonic()
    stages: dict[str, Any] = {}
    for stage, stats in profiles.items():
        entries = stats.stats  # type: ignore[attr-defined]
        seconds: dict[str, float] = defaultdict(float)
        luigi_own = 0.0
        for (filename, _line, name), (_cc, _nc, tt, ct, _callers) in entries.items():
            for category, suffix, names in CATEGORIES:
                if suffix == "~":
                    if filename == "~" and any(name.startswith(n) for n in names):
                        seconds[category] += ct
                elif filename.endswith(suffix) and name in names:
                    seconds[category] += ct
            if "/luigi/" in filename:
                luigi_own += tt  # Luigi's own code (its callees are counted where they are)
        seconds["luigi's own code"] = luigi_own
        task_spans = [(b, e) for f, b, e in spans if scale.STAGE_OF.get(f, f) == stage]
        stages[stage] = {"task_seconds": sum(e - b for b, e in task_spans), "tasks": len(task_spans),
                         "seconds": dict(seconds), "top": top_functions(stats)}
    first = min((b for _f, b, _e in spans), default=ended)
    in_tasks = sum(e - b for _f, b, e in spans)
    result = {
        "exit": code,
        "wall": ended - began,
        "start_up": dispatched.get("at", first) - began,
        "to_first_task": first - dispatched.get("at", first),
        "between_and_after_tasks": ended - first - in_tasks,
        "in_tasks": in_tasks,
        "stages": stages,
        "outside_top": top_functions(pstats.Stats(outside), 8),
        "outside_luigi_own": sum(v[2] for k, v in pstats.Stats(outside).stats.items()  # type: ignore[attr-defined]
                                 if "/luigi/" in k[0]),
    }
    result_path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return code


def top_functions(stats: pstats.Stats, n: int = 4) -> list[tuple[str, float, float]]:
    """The ``n`` functions with the most own time: (``file:function``, own seconds, inclusive seconds)."""
    entries = stats.stats  # type: ignore[attr-defined]
    ranked = sorted(entries.items(), key=lambda kv: -kv[1][2])[:n]
    return [(f"{Path(k[0]).name}:{k[2]}" if k[0] != "~" else k[2], v[2], v[3]) for k, v in ranked]


# --- the parent: input, both runs, the report ---------------------------------------------------


def profiled_build(out: Path, sources: list[Path], lexicon: Path, work: Path, extra: list[str]) -> dict[str, Any]:
    args = ["build", "--out", str(out), "--pubmed-xml", *map(str, sources), "--annotator", "local",
            "--lexicon", str(lexicon), "--sample", "all", *extra]
    result = work / "profile.json"
    with open(work / "build-profiled.log", "wb") as log:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(result), "--", *args],
                              cwd=PROJECT, env=scale.env(), stdout=subprocess.DEVNULL, stderr=log, check=False)
    if done.returncode != 0:
        sys.exit(f"profiled build failed ({done.returncode}); see {work / 'build-profiled.log'}")
    return json.loads(result.read_text(encoding="utf-8"))


def report(plain: dict[str, Any], profiled: dict[str, Any], relations: bool) -> None:
    times = scale.stage_times(plain["log"])
    total_plain = sum(t["task"] for t in times.values())
    print(f"\nplain build (relations {'on' if relations else 'off'}): wall {plain['wall']:.1f} s, "
          f"{total_plain:.1f} task-seconds, peak RSS {plain['rss_mib']:.0f} MiB")
    relation = scale.relation_seconds(plain["log"])
    if relation:
        print(f"  relation step's own time (logged by the mapped tasks): {relation:.2f} s")
    print(f"  {'stage':13} {'task s':>8} {'tasks':>6} {'share':>6}")
    for stage in scale.STAGES:
        if stage in times:
            t = times[stage]
            print(f"  {stage:13} {t['task']:8.2f} {t['tasks']:6d} {100 * t['task'] / total_plain:5.1f}%")
    print(f"\nprofiled build: wall {profiled['wall']:.1f} s = start-up {profiled['start_up']:.2f} s "
          f"+ to the first task {profiled['to_first_task']:.2f} s + in tasks {profiled['in_tasks']:.1f} s "
          f"+ between and after tasks (Luigi and bookkeeping) {profiled['between_and_after_tasks']:.2f} s")
    names = [c for c, _s, _n in CATEGORIES] + ["luigi's own code"]
    for stage in scale.STAGES:
        if stage not in profiled["stages"]:
            continue
        s = profiled["stages"][stage]
        total = s["task_seconds"]
        parts = ", ".join(f"{name.strip()} {s['seconds'][name]:.2f} ({100 * s['seconds'][name] / total:.0f}%)"
                          for name in names if s["seconds"].get(name, 0) >= max(0.01, 0.005 * total))
        print(f"  {stage:13} {total:8.2f} s in {s['tasks']} tasks: {parts or '-'}")
        top = "; ".join(f"{name} {own:.2f}/{inclusive:.2f}" for name, own, inclusive in s["top"])
        print(f"  {'':13} most own time (own/inclusive s): {top}")
    overall: dict[str, float] = defaultdict(float)
    for s in profiled["stages"].values():
        for name, value in s["seconds"].items():
            overall[name] += value
    in_tasks = profiled["in_tasks"]
    parts = ", ".join(f"{name.strip()} {overall[name]:.2f} ({100 * overall[name] / in_tasks:.0f}%)"
                      for name in names if overall[name])
    print(f"  {'all stages':13} {in_tasks:8.2f} s: {parts}")
    outside = profiled["wall"] - profiled["start_up"] - in_tasks
    top = "; ".join(f"{name} {own:.2f}/{inclusive:.2f}" for name, own, inclusive in profiled["outside_top"])
    print(f"  outside the tasks, after start-up: {outside:.2f} s, of which Luigi's own code "
          f"{profiled['outside_luigi_own']:.2f} s; most own time (own/inclusive s): {top}")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[sys.argv.index("--") + 1 :], Path(sys.argv[2])))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1000, help="replicated records (default 1000)")
    parser.add_argument("--no-relations", action="store_true", help="build with --no-relations")
    parser.add_argument("--lexicon", type=Path, default=scale.DEFAULT_LEXICON)
    parser.add_argument("--work", type=Path, help="work directory (default: a temporary one, removed)")
    parser.add_argument("--build-args", default="", help="extra build options")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="pgx-profile-"))
    work.mkdir(parents=True, exist_ok=True)
    extra = [*args.build_args.split(), *(["--no-relations"] if args.no_relations else [])]
    relations = "--relations" in extra and not args.no_relations
    try:
        lexicon = scale.ensure_lookup(args.lexicon, work)
        base_ids, _ = scale.pmids(args.records, 1)
        sources = scale.write_records(scale.genia_articles(), base_ids, work / "input" / "base")
        print(f"{args.records:,} records, local annotator, --sample all{' --no-relations' if args.no_relations else ''}"
              f"; load average {os.getloadavg()[0]:.2f} at start")
        for out in (work / "out", work / "out-profiled"):  # a first build each, not a rebuild
            shutil.rmtree(out, ignore_errors=True)
        plain = scale.build(work / "out", sources, lexicon, work / "build-plain.log", extra)
        began = time.monotonic()
        profiled = profiled_build(work / "out-profiled", sources, lexicon, work, extra)
        report(plain, profiled, relations)
        print(f"\n(profiled run took {time.monotonic() - began:.1f} s; "
              f"load average {os.getloadavg()[0]:.2f} at the end)")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
