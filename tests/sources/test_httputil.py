"""The host-wide rate limiter and the body-length check (pipeline/sources/httputil.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.sources.httputil import HostRateLimiter, check_body_length, max_in_window, rate_limit_dir

WORKER = """
import json, sys
from pathlib import Path
from pipeline.sources.httputil import HostRateLimiter
limiter = HostRateLimiter("svc", float(sys.argv[2]), directory=Path(sys.argv[1]))
times = []
for _ in range(int(sys.argv[3])):
    limiter.wait()
    times.append(limiter.last_start)  # the start time the limiter logged (shared by the processes)
print(json.dumps(times))
"""


def test_rate_is_shared_by_processes_with_margin(tmp_path: Path) -> None:
    """Three processes at once, 5 requests each, rate 10/s: never more than 10 starts in any second."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), "10", "5"], stdout=subprocess.PIPE,
                              text=True, env=env) for _ in range(3)]
    times = sorted(t for p in procs for t in json.loads(p.communicate(timeout=60)[0]))
    assert len(times) == 15
    assert max_in_window(times, 1.0) <= 10
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.11 - 1e-9  # 1/rate plus the 10% margin
    assert len((tmp_path / "svc.log").read_text().split()) == 10  # the last ceil(rate) starts


def test_sliding_window_with_a_fake_clock(tmp_path: Path) -> None:
    now = [50.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    limiter = HostRateLimiter("x", 3, directory=tmp_path, clock=lambda: now[0], sleep=sleep)
    starts = []
    for _ in range(10):
        limiter.wait()
        starts.append(now[0])
    assert max_in_window(starts, 1.0) == 3
    assert all(b - a == pytest.approx(1.1 / 3) for a, b in zip(starts, starts[1:], strict=False))
    # a torn line (a writer killed mid-write) is ignored
    (tmp_path / "x.log").write_text("garbage\n")
    limiter.wait()


def test_rate_limit_dir_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PGX_RATELIMIT_DIR", str(tmp_path / "mine"))
    assert rate_limit_dir() == tmp_path / "mine"
    monkeypatch.delenv("PGX_RATELIMIT_DIR")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert rate_limit_dir() == tmp_path / "pgx-corpus-ratelimit"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert rate_limit_dir().name == f"pgx-corpus-ratelimit-{os.getuid()}"


def test_check_body_length() -> None:
    assert check_body_length({"Content-Length": "10"}, b"0123456789") is None
    assert check_body_length({"Content-Length": "10"}, b"01234") == "body of 5 bytes but Content-Length 10"
    assert check_body_length({"Content-Length": "10", "Content-Encoding": "gzip"}, b"01234") is None
    assert check_body_length({}, b"x") is None
    assert "unparseable" in (check_body_length({"Content-Length": "ten"}, b"x") or "")


def test_max_in_window() -> None:
    assert max_in_window([]) == 0
    assert max_in_window([0.0, 0.33, 0.66, 0.99]) == 4  # the case: 4 starts within 0.992 s
    assert max_in_window([0.0, 0.367, 0.734, 1.101]) == 3
