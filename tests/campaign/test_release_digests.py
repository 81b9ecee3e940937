"""The tutorial's campaign and release, byte for byte, against digests recorded before the release moved.

Covers ``pipeline.campaign.release`` (and through the tutorial's commands ``pipeline.campaign``'s
``batches``, ``simulate``, ``review``, ``finalize`` and ``decisions apply``).

``tests/fixtures/release/tutorial_digests.json`` holds the SHA-256 of every file that the tutorial's
runnable blocks 1-12 (``docs/tutorial.md``: build, batches, simulate phase 1, review, simulate phase 2,
finalize, decisions apply, release) write under ``out/campaign``, ``out/final`` and ``out/release``, and of
``out/decisions.diff``.  It was recorded before ``pipeline/campaign/release.py`` became a package: moving
code must not change one byte of them.

The commands run as the tutorial writes them, with ``.venv/bin/pgx-corpus`` replaced by this
interpreter's ``-m pipeline`` (so the checkout under test runs, not the virtualenv's editable install).
What depends on where and when the commands run is normalised before hashing: the working directory
(``<work>``) and the build's run id (``<run>``, the name of ``out/demo/runs/<run>``, which the tutorial
reads from ``out/demo/brat/.run``: it hashes the build's parameters, among them absolute paths and the
sizes and mtimes of the copied demo files; the release names it in ``release.json`` and ``README.md``, the
campaign in ``campaign.json``).  ``SHA256SUMS`` is checked against the files it lists, then hashed with
each listed file's normalised digest in place of its own.  One file is left out (``NOT_DETERMINISTIC``):
``out/campaign/access/users.json``, the campaign's scrypt password hashes, whose salts are random by
design.  Nothing else varies between two runs: none of these files records the clock's time (the release
date is the tutorial's ``--date 2026-12-01``).  The release itself (``out/release``) is compared whole.

After a deliberate change of an input (``config/``, the lexicon, the spaCy model, the demo data,
the package version), rewrite the fixture with
``PYTHONPATH=$PWD .venv/bin/python -m tests.campaign.test_release_digests`` and review the difference.

Covers: pipeline.nlp.lexicon
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pipeline.nlp.lexicon import DEFAULT_LEXICON
from tests.test_docs import runnable_blocks

PROJECT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "release" / "tutorial_digests.json"

#: the tutorial's runnable blocks that make the campaign, the final corpus and the release (1-based, inclusive)
LAST_BLOCK = 12

#: the outputs compared, relative to the working directory
COMPARED = ("out/campaign", "out/final", "out/release", "out/decisions.diff")

#: files (normalised names, regular expressions) whose bytes are not a function of the inputs, and why
NOT_DETERMINISTIC = {r"out/campaign/access/users\.json": "scrypt password hashes with random salts"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DEFAULT_LEXICON.exists(),
                       reason=f"local annotator lexicon missing ({DEFAULT_LEXICON}): run `make setup`"),
]


def run_tutorial(work: Path) -> None:
    """Run the tutorial's runnable blocks 1 to ``LAST_BLOCK`` in ``work`` (a fresh copy of the demo data)."""
    (work / "data").mkdir(parents=True)
    shutil.copytree(PROJECT / "data" / "demo", work / "data" / "demo")
    (work / "luigi.cfg").symlink_to(PROJECT / "luigi.cfg")
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    env.pop("LUIGI_CONFIG_PATH", None)
    command = f"{sys.executable} -m pipeline"
    blocks = runnable_blocks((PROJECT / "docs" / "tutorial.md").read_text(encoding="utf-8"))
    for n, block in enumerate(blocks[:LAST_BLOCK], 1):
        script = block.replace(".venv/bin/pgx-corpus", command)
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, f"tutorial block {n}:\n{block}\nexit {proc.returncode}\n{proc.stderr[-3000:]}"


def _normalised(path: Path, work: Path, run: str) -> bytes:
    return path.read_bytes().replace(str(work).encode(), b"<work>").replace(run.encode(), b"<run>")


def digests(work: Path) -> dict[str, str]:
    """Normalised SHA-256 of every compared file under ``work``, by path relative to ``work``."""
    skip = [re.compile(pattern) for pattern in NOT_DETERMINISTIC]
    run = (work / "out" / "demo" / "brat" / ".run").read_text(encoding="utf-8").strip()
    assert re.fullmatch(r"[0-9a-f]{12,}", run), run
    found: dict[str, str] = {}
    sums: list[Path] = []
    for top in COMPARED:
        root = work / top
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            name = path.relative_to(work).as_posix()
            if any(p.fullmatch(name) for p in skip):
                continue
            if path.name == "SHA256SUMS":
                sums.append(path)
                continue
            found[name] = hashlib.sha256(_normalised(path, work, run)).hexdigest()
    for path in sums:
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            digest, listed = line.split("  ", 1)
            assert hashlib.sha256((path.parent / listed).read_bytes()).hexdigest() == digest, f"{path}: {line}"
            lines.append(f"{found[(path.parent / listed).relative_to(work).as_posix()]}  {listed}\n")
        found[path.relative_to(work).as_posix()] = hashlib.sha256("".join(lines).encode()).hexdigest()
    return dict(sorted(found.items()))


def test_the_tutorial_release_writes_the_recorded_bytes(tmp_path: Path) -> None:
    work = tmp_path / "clone"
    run_tutorial(work)
    found = digests(work)
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert any(name.startswith("out/release/") for name in expected) and "out/release/SHA256SUMS" in expected
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    changed = sorted(name for name in expected if name in found and found[name] != expected[name])
    assert (missing, extra, changed) == ([], [], []), (
        f"the tutorial's campaign or release differs from {FIXTURE.name} (missing, extra, changed files); if an "
        "input changed deliberately, rewrite it with `python -m tests.campaign.test_release_digests`"
    )


def main() -> None:
    """Rewrite the fixture from a run of the current code (after a deliberate change of an input)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "clone"
        run_tutorial(work)
        recorded = digests(work)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{FIXTURE}: {len(recorded)} files")


if __name__ == "__main__":
    sys.exit(main())
