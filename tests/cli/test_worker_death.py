"""A worker killed mid-task: with the project's ``luigi.cfg`` ``[scheduler]`` settings, ``luigid`` gives
the worker up and hands its task to another worker within about a minute (Luigi's defaults: 60 s, then
a 900 s retry delay).  Loopback only: ``luigid`` on 127.0.0.1, a free port.

Covers: none (the project's luigi.cfg, with Luigi's own worker and luigid)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_worker import LUIGID, free_port, wait_for_port

PROJECT = Path(__file__).resolve().parents[2]
FIXTURES = PROJECT / "tests" / "fixtures" / "luigi"

pytestmark = [pytest.mark.skipif(not LUIGID.exists(), reason=f"luigid not installed next to {sys.executable}"),
              pytest.mark.slow]


def _worker(root: Path, port: int, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``luigi --module dying_task Slow`` on the central scheduler (the task's first stakeholder)."""
    cmd = [sys.executable, "-m", "luigi", "--module", "dying_task", "Slow", "--root", str(root),
           "--scheduler-host", "127.0.0.1", "--scheduler-port", str(port), "--no-lock"]
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _assistant(root: Path, port: int, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A Luigi assistant (what ``pgx-corpus worker`` is): runs any pending task the scheduler holds."""
    code = ("import luigi, dying_task\n"
            "luigi.configuration.get_config().set('worker', 'keep_alive', 'true')\n"
            f"luigi.build([], assistant=True, scheduler_host='127.0.0.1', scheduler_port={port}, workers=1)\n")
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-c", code], cwd=root, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise TimeoutError(what)


def test_a_dead_workers_task_is_retried_within_a_minute(tmp_path: Path) -> None:
    env = dict(os.environ, LUIGI_CONFIG_PATH=str(PROJECT / "luigi.cfg"),
               PYTHONPATH=os.pathsep.join([str(FIXTURES), str(PROJECT)]))
    port = free_port()
    home = tmp_path / "luigid"
    (home / "logs").mkdir(parents=True)
    root = tmp_path / "work"
    root.mkdir()
    scheduler = subprocess.Popen(
        [str(LUIGID), "--port", str(port), "--address", "127.0.0.1", "--state-path", str(home / "state.pickle"),
         "--logdir", str(home / "logs")], cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        wait_for_port(port)
        first = _worker(root, port, tmp_path / "first.log", env)
        procs.append(first)
        _wait(lambda: any(root.glob("started-*")), 60, "the first worker never started the task")
        # a second worker joins; the task is RUNNING elsewhere, so it waits
        second = _assistant(root, port, tmp_path / "second.log", env)
        procs.append(second)
        time.sleep(2)
        os.killpg(first.pid, signal.SIGKILL)  # the whole first worker, mid-task
        killed = time.monotonic()
        first.wait(timeout=10)
        _wait(lambda: (root / "done").exists(), 120,
              "the task was not retried within 120 s:\n" + (tmp_path / "second.log").read_text(errors="replace"))
        elapsed = time.monotonic() - killed
        assert elapsed < 60, f"retried after {elapsed:.0f} s"
        assert len(list(root.glob("started-*"))) == 2
        assert (root / "done").read_text().strip() == str(second.pid)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        scheduler.terminate()
        scheduler.wait(timeout=30)
