"""Sweep every kill point of every writing command and print what a rerun leaves.

For each command of :mod:`tests.crash.scenarios` (``batches`` on a new and on a written campaign,
``campaign review``, ``campaign finalize``, ``decisions apply``, ``release``, ``campaign append``, the later
commands of a live campaign (``campaign users reset``/``revoke``, ``campaign history --restore``,
``campaign backup``, ``campaign replace``, ``add-person``, ``reassign``, ``import``, ``calibrate``,
``guideline``), and the demo ``build``), the command is killed with SIGKILL before each of its file-system
mutations in turn
(every open for writing, rename, remove, mkdir, rmdir, link and directory swap under its directory; see
:mod:`tests.crash.harness`), then run again; the whole directory is compared with an uninterrupted run's.
With ``--enospc`` every open for writing also fails once with ENOSPC (a full disk), then a rerun.

Printed per command: the kill points tried, how many left differences after one rerun, how many left
temporary files (leftovers), and how many left a published directory (FINAL, a release, ``OUT/brat``)
neither in its previous nor in its new state right after the kill.  Targets: 0, 0 and 0.

The build has about 1,400 kill points at 2-3 s each: ``--build-step N`` tries every N-th (default 10;
``--build-step 1`` for all of them, about an hour on 2 cores).  ``--size`` sets the campaign's sentences
per abstract (default 2: 6 sentences, 5 people).

    PYTHONPATH=. .venv/bin/python bench/crash.py [--enospc] [--build-step N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.crash.harness import Harness, Outcome  # noqa: E402
from tests.crash.scenarios import build_scenario, scenarios, team_scenarios  # noqa: E402


def sweep(harness: Harness, points: list[int], kind: str) -> list[Outcome]:
    return [harness.trial(p, kind) for p in points]


def summarize(name: str, kind: str, outcomes: list[Outcome], total: int, seconds: float) -> str:
    diff = [o for o in outcomes if o.differences]
    left = [o for o in outcomes if o.leftovers]
    partial = [o for o in outcomes if o.partial]
    line = (f"{name:16} {kind:6} points {len(outcomes):5} of {total:5}  differences {len(diff):3}  "
            f"leftovers {len(left):3}  partial {len(partial):3}  ({seconds:.0f} s)")
    for o in (diff + left + partial)[:5]:
        line += f"\n    at {o.point} ({o.status}): diff {o.differences[:3]} leftovers {o.leftovers[:3]} " \
                f"partial {o.partial}"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--enospc", action="store_true", help="also fail every open for writing once (ENOSPC)")
    parser.add_argument("--build-step", type=int, default=10, help="try every N-th kill point of the build")
    parser.add_argument("--no-build", action="store_true", help="leave the build out")
    parser.add_argument("--size", type=int, default=2, help="sentences per abstract of the campaign")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these commands only")
    args = parser.parse_args(argv)
    chosen = [(s, 1) for s in [*scenarios(args.size), *team_scenarios(args.size)]]
    if not args.no_build:
        chosen.append((build_scenario(), args.build_step))
    if args.only:
        chosen = [(s, step) for s, step in chosen if s.name in args.only]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="pgx-crash-") as work:
        for scenario, step in chosen:
            started = time.perf_counter()
            harness = Harness(scenario, Path(work))
            points = sorted({*range(1, harness.mutations + 1, step), *harness.exchanges, harness.mutations})
            outcomes = sweep(harness, points, "kill")
            print(summarize(scenario.name, "kill", outcomes, harness.mutations, time.perf_counter() - started),
                  flush=True)
            failed += sum(bool(o.differences or o.leftovers or o.partial) for o in outcomes)
            if args.enospc:
                started = time.perf_counter()
                writes = list(range(1, harness.writes + 1, step))
                outcomes = sweep(harness, writes, "enospc")
                print(summarize(scenario.name, "enospc", outcomes, harness.writes, time.perf_counter() - started),
                      flush=True)
                failed += sum(bool(o.differences or o.leftovers or o.partial) for o in outcomes)
    print(f"fault points with differences, leftovers or a partial publication: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
