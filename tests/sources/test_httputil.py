"""The host-wide rate limiter and the body-length check (pipeline/sources/httputil.py).

Covers: pipeline.sources.httputil
"""

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


# --- a private rate-limit directory (issue 23, defect 11) -------------------------------------------

def test_the_directory_is_created_private(tmp_path: Path) -> None:
    import stat

    directory = tmp_path / "shared-tmp" / "pgx-corpus-ratelimit-1"
    HostRateLimiter("svc", 100, directory=directory).wait()
    st = os.lstat(directory)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
    assert stat.S_IMODE(os.lstat(directory / "svc.log").st_mode) == 0o600


def test_an_open_directory_of_ours_is_made_private(tmp_path: Path) -> None:
    import stat

    directory = tmp_path / "rl"
    directory.mkdir(mode=0o777)
    os.chmod(directory, 0o777)
    HostRateLimiter("svc", 100, directory=directory).wait()
    assert stat.S_IMODE(os.lstat(directory).st_mode) == 0o700


def test_a_symlinked_directory_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    from pipeline.sources.httputil import RateLimitError

    target = tmp_path / "victim"
    target.mkdir()
    link = tmp_path / "pgx-corpus-ratelimit-1"
    link.symlink_to(target, target_is_directory=True)
    with pytest.raises(RateLimitError, match=r"rate-limit directory .*pgx-corpus-ratelimit-1.*PGX_RATELIMIT_DIR"):
        HostRateLimiter("svc", 100, directory=link).wait()
    assert list(target.iterdir()) == []


def test_a_symlinked_log_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    from pipeline.sources.httputil import RateLimitError

    directory = tmp_path / "rl"
    directory.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    (directory / "svc.log").symlink_to(victim)
    with pytest.raises(RateLimitError, match=r"svc\.log.*symbolic link"):
        HostRateLimiter("svc", 100, directory=directory).wait()
    assert victim.read_text(encoding="utf-8") == "precious\n"


def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    from pipeline.sources.httputil import RateLimitError

    if os.getuid() != 0:
        pytest.skip("needs root to give a directory to another user")
    directory = tmp_path / "rl"
    directory.mkdir(mode=0o700)
    os.chown(directory, 12345, 12345)
    with pytest.raises(RateLimitError, match=r"belongs to uid 12345"):
        HostRateLimiter("svc", 100, directory=directory).wait()


def test_a_lock_held_by_another_process_ends_in_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from pipeline.sources import httputil

    directory = tmp_path / "rl"
    HostRateLimiter("svc", 100, directory=directory).wait()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time\n"
        f"fh = open({str(directory / 'svc.log')!r}, 'a')\n"
        "fcntl.flock(fh.fileno(), fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr(httputil, "LOCK_TIMEOUT", 0.5)
        started = time.monotonic()
        with pytest.raises(httputil.RateLimitError, match=r"svc\.log: its lock was not released within"):
            HostRateLimiter("svc", 100, directory=directory).wait()
        assert time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait()
