"""The demo build's outputs, byte for byte, against digests recorded before ``pipeline/tasks.py`` was thinned.

``tests/fixtures/luigi/demo_build_digests.json`` holds the SHA-256 of every file a full build
(``BuildCorpus`` on ``data/demo`` with the demo roster, as ``tests/test_tasks.py`` builds it, every
stage up to the campaign batches) writes under ``--out``: stage outputs, counts, params, the run
manifest, the published ``brat/`` and the caches.  Moving code out of the Luigi module must not
change one byte of them.

What depends on where and when the build runs is normalised before hashing, in names and contents:
the output directory (``<out>``), the cache directory (``<cache>``: the lexicon, see
``pipeline.resources.cache_dir``), the project directory (``<project>``: config paths),
and the parameter hashes in path components (``<hash>``), which hash absolute config paths and the
sizes and mtimes of the source files.  Which stages share a parameter hash is compared separately.
One file is left out: ``work/09_batches/<hash>/batches/access/users.json``, the campaign's scrypt
password hashes, whose salts are random by design (see ``PrepareBatches``).

The digests also follow the inputs a build legitimately depends on (``config/``, the lexicon, the
spaCy model, the demo data, the package version): after a deliberate change of one of them,
rewrite the fixture with ``PYTHONPATH=$PWD .venv/bin/python -m tests.test_tasks_outputs`` and
review the difference.

Covers: pipeline.nlp.lexicon, pipeline.tasks
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import luigi
import pytest

from pipeline import tasks
from pipeline.nlp.lexicon import DEFAULT_LEXICON
from pipeline.resources import cache_dir

PROJECT = Path(__file__).resolve().parent.parent
DEMO = PROJECT / "data" / "demo"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "luigi" / "demo_build_digests.json"

#: Files whose bytes are not a function of the build's inputs, relative to ``--out`` after normalisation.
NOT_DETERMINISTIC = {"work/09_batches/<hash>/batches/access/users.json": "scrypt password hashes with random salts"}

# a parameter or content hash used as a file or directory name (12, 16, 24 or 32 hex digits)
HASH_NAME = re.compile(r"^[0-9a-f]{12,}$")

pytestmark = pytest.mark.skipif(
    not DEFAULT_LEXICON.exists(), reason=f"local annotator lexicon missing ({DEFAULT_LEXICON}): run `make setup`"
)


def build(out: Path) -> None:
    """Run the full demo build (every stage up to the batches) into ``out``."""
    task = tasks.BuildCorpus(
        out=str(out), pubmed_xml=(str(DEMO / "pubmed"),), annotator="local", sample="all",
        roster=str(DEMO / "roster.tsv"),
    )
    assert luigi.build([task], local_scheduler=True, workers=1)


def _hash_names(out: Path) -> set[str]:
    names = set()
    for path in out.rglob("*"):
        for part in path.relative_to(out).parts:
            stem = part.split(".", 1)[0]
            if HASH_NAME.match(stem):
                names.add(stem)
    return names


def digests(out: Path) -> dict[str, object]:
    """Normalised digests of every file under ``out``, and the stages that share a parameter hash."""
    hashes = _hash_names(out)
    # longest first: a shorter name is never replaced inside a longer one
    pattern = re.compile("|".join(re.escape(h) for h in sorted(hashes, key=len, reverse=True)))
    # the cache directory (the lexicon) before the project: a checkout may keep its cache inside itself
    replacements = [(str(out).encode(), b"<out>"), (str(cache_dir()).encode(), b"<cache>"),
                    (str(PROJECT).encode(), b"<project>")]
    files: dict[str, list[str]] = {}
    for path in sorted(out.rglob("*")):
        if not path.is_file():
            continue
        name = pattern.sub("<hash>", str(path.relative_to(out)))
        if name in NOT_DETERMINISTIC:
            continue
        data = path.read_bytes()
        for old, new in replacements:
            data = data.replace(old, new)
        data = pattern.sub("<hash>", data.decode("latin-1")).encode("latin-1")
        # several cache files may share a normalised name (a content hash each): keep them all
        files.setdefault(name, []).append(hashlib.sha256(data).hexdigest())
    groups: dict[str, list[str]] = {}
    for stage_dir in sorted((out / "work").glob("*/*")):
        groups.setdefault(stage_dir.name, []).append(stage_dir.parent.name)
    return {
        # several digests of one name: space-separated, sorted
        "files": {name: " ".join(sorted(found)) for name, found in sorted(files.items())},
        "shared_stage_hashes": sorted(stages for stages in groups.values() if len(stages) > 1),
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One full demo build per module (read by one test, copied by the other)."""
    out = tmp_path_factory.mktemp("demo_build") / "out"
    build(out)
    return out


def test_the_build_writes_the_recorded_bytes(built: Path) -> None:
    found = digests(built)
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert found["shared_stage_hashes"] == expected["shared_stage_hashes"]
    missing = sorted(set(expected["files"]) - set(found["files"]))  # type: ignore[arg-type]
    extra = sorted(set(found["files"]) - set(expected["files"]))  # type: ignore[arg-type]
    changed = sorted(name for name, digest in expected["files"].items()
                     if name in found["files"] and found["files"][name] != digest)  # type: ignore[index,operator]
    assert (missing, extra, changed) == ([], [], []), (
        f"the demo build's outputs differ from {FIXTURE.name} (missing, extra, changed files); if an input "
        "changed deliberately, rewrite it with `python -m tests.test_tasks_outputs`"
    )


def test_normalisation_keeps_a_changed_byte(built: Path, tmp_path: Path) -> None:
    """A flipped byte in any output, or a file added, changes the digests (the comparison is not vacuous)."""
    out = tmp_path / "out"
    shutil.copytree(built, out, symlinks=True)  # a copy of the build: the module's build stays as it was
    before = digests(out)
    shard = next((out / "work" / "06_filtered").glob("*/shard-*.jsonl.gz"))
    data = bytearray(shard.read_bytes())
    data[-9] ^= 1  # inside the gzip trailer's CRC: the file still has its size
    shard.unlink()  # the reuse cache holds a hard link to the same file: change this one only
    shard.write_bytes(bytes(data))
    after = digests(out)
    assert after != before
    changed = [n for n in before["files"] if before["files"][n] != after["files"][n]]  # type: ignore[index,union-attr]
    assert changed == ["work/06_filtered/<hash>/" + shard.name]


def main() -> None:
    """Rewrite the fixture from a build of the current code (after a deliberate change of an input)."""
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp) / "out")
        recorded = digests(Path(tmp) / "out")
    FIXTURE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{FIXTURE}: {len(recorded['files'])} files")  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
