"""``pgx-corpus worker``: a second process joins a build through a central scheduler (luigid on loopback).

The build and the worker share the shard tasks; the published brat collection
is byte-identical to a one-process build.  A worker that cannot import the
project, cannot reach the scheduler or sees other configuration contents than
the build refuses with a message saying why.

Covers: pipeline, pipeline.cli, pipeline.cli.build_commands, pipeline.cli.worker_commands,
pipeline.corpus.config_record, pipeline.nlp.lexicon, pipeline.nlp.lexicon_lookup, pipeline.tasks.build,
pipeline.tasks.params, pipeline.tasks.run, pipeline.tasks.sources, pipeline.tasks.stages
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.cli import build_commands
from pipeline.corpus.config_record import ConfigMismatchError
from pipeline.nlp import lexicon as lx
from pipeline.nlp.lexicon_lookup import write_lookup
from pipeline.tasks.build import BuildCorpus
from pipeline.tasks.params import record_config, verify_config
from pipeline.tasks.sources import Documents
from pipeline.tasks.stages import ExtendShard, SplitSentencesShard
from tests.cli.scheduler_client import no_retry_wait
from tests.nlp.test_local_annotator import TABLES

PROJECT = Path(__file__).resolve().parents[2]
DEMO = PROJECT / "data" / "demo" / "pubmed"
LUIGID = Path(sys.executable).with_name("luigid")
SHARD_DONE = re.compile(r"INFO luigi-interface: \[pid \d+\] Worker .* done +(\w+Shard)\(")

pytestmark = pytest.mark.skipif(not LUIGID.exists(), reason=f"luigid not installed next to {sys.executable}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"luigid did not listen on 127.0.0.1:{port}")


@pytest.fixture
def luigid(tmp_path: Path) -> Iterator[int]:
    """A central scheduler on loopback, with its own state file and log directory."""
    port = free_port()
    home = tmp_path / "luigid"
    (home / "logs").mkdir(parents=True)
    proc = subprocess.Popen(
        [str(LUIGID), "--port", str(port), "--address", "127.0.0.1",
         "--state-path", str(home / "state.pickle"), "--logdir", str(home / "logs")],
        cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def lexicon(tmp_path: Path) -> Path:
    """A small lexicon in lookup form (loads instantly; the full one is not needed here)."""
    path = tmp_path / "lexicon.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({"format": lx.LEXICON_FORMAT, "wheels": lx.WHEELS, "tables": TABLES}, fh)
    write_lookup(path)
    return path


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PROJECT)}


def build_args(out: Path, lexicon: Path) -> list[str]:
    return ["build", "--out", str(out), "--pubmed-xml", str(DEMO), "--sample", "all", "--shard-size", "3",
            "--lexicon", str(lexicon)]


def pgx(*args: str) -> list[str]:
    return [sys.executable, "-m", "pipeline", *args]


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow  # two builds, one with a worker
def test_a_worker_process_shares_the_shards_and_the_output_is_the_same(
    luigid: int, lexicon: Path, tmp_path: Path
) -> None:
    one = subprocess.run(pgx(*build_args(tmp_path / "one", lexicon)), cwd=PROJECT, env=env(),
                         capture_output=True, text=True, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    scheduler = ["--scheduler-host", "127.0.0.1", "--scheduler-port", str(luigid)]
    # The worker waits for the build to appear, loads what its shards need and registers; the build,
    # its tasks on the scheduler, waits for that registration before running any: from then on both
    # ask for work (an idle worker asks again within 0.3 s), so neither can run every shard alone
    # merely because the other was not there yet.
    # The worker's log goes to a file: a pipe nobody reads until the build ends fills up (Luigi logs
    # every task check) and blocks the worker in the middle of a task the build then waits for.
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log_file:
        worker = subprocess.Popen(pgx("worker", *scheduler, "--exit-when-idle", "6"), cwd=PROJECT, env=env(),
                                  stdout=subprocess.DEVNULL, stderr=log_file)
    try:
        build = subprocess.run(pgx(*build_args(tmp_path / "two", lexicon), *scheduler, "--wait-for-workers", "1",
                                   "--wait-timeout", "120"),
                               cwd=PROJECT, env=env(), capture_output=True, text=True, timeout=600)
        worker.wait(timeout=120)
    finally:
        if worker.poll() is None:
            worker.kill()
    worker_log = log_path.read_text(encoding="utf-8", errors="replace")
    assert build.returncode == 0, build.stderr[-3000:]
    assert worker.returncode == 0, worker_log[-3000:]
    assert tree(tmp_path / "two" / "brat") == tree(tmp_path / "one" / "brat")
    by_build = SHARD_DONE.findall(build.stderr)
    by_worker = SHARD_DONE.findall(worker_log)
    assert "1 other worker(s) registered: running" in build.stderr, build.stderr[-3000:]
    assert by_build and by_worker, (len(by_build), len(by_worker))
    # every shard task ran exactly once, in one process or the other
    assert len(by_build) + len(by_worker) == len(SHARD_DONE.findall(one.stderr))


def test_a_worker_with_other_configuration_contents_is_refused(luigid: int, lexicon: Path, tmp_path: Path) -> None:
    from luigi.rpc import RemoteScheduler

    ontology = tmp_path / "ontology.yaml"
    shutil.copyfile(PROJECT / "config" / "ontology.yaml", ontology)
    params = build_commands.build_params(cli.make_parser().parse_args(
        [*build_args(tmp_path / "out", lexicon), "--ontology", str(ontology)]))
    params["config_digest"] = record_config(BuildCorpus(**params))
    build = BuildCorpus(**params)
    # the build is on the scheduler (registered, not run) ...
    RemoteScheduler(f"http://127.0.0.1:{luigid}/").add_task(
        worker="the-build", task_id=build.task_id, status="PENDING", runnable=True, family=build.task_family,
        module=build.task_module, params=build.to_str_params(),
    )
    # ... and this host sees another ontology at the same path
    ontology.write_text(ontology.read_text(encoding="utf-8") + "\n# edited on this host\n", encoding="utf-8")
    proc = subprocess.run(pgx("worker", "--scheduler-host", "127.0.0.1", "--scheduler-port", str(luigid)),
                          cwd=PROJECT, env=env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "refusing to join" in proc.stderr and f"{ontology}: sha256" in proc.stderr
    with pytest.raises(ConfigMismatchError, match=re.escape(str(ontology))):
        verify_config(build.clone(ExtendShard, shard=30))
    assert not (tmp_path / "out" / "work").exists()  # nothing was written where the build writes


def test_a_worker_that_cannot_reach_the_scheduler_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()  # nothing listens there
    # ERROR (1): a service that did not answer
    with no_retry_wait():
        assert cli.main(["worker", "--scheduler-host", "127.0.0.1", "--scheduler-port", str(port)]) == 1
    assert f"cannot reach the Luigi scheduler at http://127.0.0.1:{port}/" in capsys.readouterr().err


def test_a_worker_that_cannot_import_the_project_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pipeline

    monkeypatch.delattr(pipeline, "tasks")
    monkeypatch.setitem(sys.modules, "pipeline.tasks", None)  # import pipeline.tasks now raises ImportError
    assert cli.main(["worker", "--scheduler-host", "127.0.0.1", "--scheduler-port", "1"]) == 2
    assert "cannot import the pipeline (pipeline.tasks)" in capsys.readouterr().err


def test_a_build_record_on_another_filesystem_is_reported(tmp_path: Path, lexicon: Path) -> None:
    task = ExtendShard(out=str(tmp_path / "elsewhere"), pubmed_xml=(str(DEMO),), lexicon=str(lexicon),
                             shard=1, config_digest="0123456789abcdef")
    with pytest.raises(ConfigMismatchError, match="shared filesystem"):
        verify_config(task)


def test_the_worker_loads_what_the_builds_root_task_says(tmp_path: Path, lexicon: Path) -> None:
    from pipeline.cli.worker_commands import warm_sample

    build = BuildCorpus(out=str(tmp_path), pubmed_xml=(str(DEMO),), lexicon=str(lexicon), model="some_model")
    listed = {
        t.task_id: {"name": t.task_family, "params": t.to_str_params()}
        for t in (build.clone(Documents), build.clone(SplitSentencesShard, shard=1), build)
    }
    listed["other"] = {"name": "NotOurs", "params": {}}
    sample = warm_sample(listed)
    assert isinstance(sample, BuildCorpus) and sample.model == "some_model" and sample.lexicon == str(lexicon)
    assert warm_sample({}) is None


def test_a_worker_waiting_for_a_build_stops_when_told(luigid: int) -> None:
    import threading

    from pipeline.cli.worker_commands import wait_for_build
    from pipeline.tasks.run import registered_workers, scheduler_url, wait_for_workers

    url = scheduler_url("127.0.0.1", luigid)
    stop = threading.Event()
    threading.Timer(0.6, stop.set).start()
    began = time.monotonic()
    assert wait_for_build(url, stop, interval=0.1) == {}  # no build came: stopped, nothing returned
    assert 0.5 < time.monotonic() - began < 10
    assert registered_workers(url) == []
    assert wait_for_workers(url, "me", 1, timeout=0.3, interval=0.1) == 0  # nobody joined: gives up
