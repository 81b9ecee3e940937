"""Login-flood benchmark of ``campaign serve`` (issue 35, item 4): memory kept after many failed logins.

A small campaign is written with the project's own commands (the one of ``bench/serve_load.py``) and
served by ``pgx-corpus campaign serve`` in its own process (waitress, 127.0.0.1).  After a warm-up
(from 127.0.0.2: one failed and one successful login, a listing), one client at 127.0.0.3 makes
``--attempts`` sequential login attempts (default 10,000) on one keep-alive connection, each with a
distinct user name of ``--name-kib`` KiB (default 256) and a wrong password, as brat's page sends them.

Printed: the server's resident memory (``VmRSS`` of ``/proc/PID/status``) before the attempts and
``--settle`` seconds (default 5) after the last answer, and their difference (the goal: <= 5 MiB);
the answers (failed, throttled); attempts per second; the longest line the server logged (values are
escaped and capped in log lines) and that a real person, from another address, still logs in.

Usage: ``python bench/login_flood.py [--attempts 10000] [--name-kib 256] [--settle 5] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

from serve_load import build_campaign, start_server  # noqa: E402

from tests.serve.live import HttpClient  # noqa: E402


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=10_000)
    parser.add_argument("--name-kib", type=int, default=256)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--keep", type=Path, help="build the campaign here and keep it")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="login-flood-"))
    campaign, passwords = build_campaign(root, 2, 2)
    proc, port = start_server(campaign)
    log_lines, longest = [0], [0]
    assert proc.stderr is not None
    stderr = proc.stderr

    def drain() -> None:  # the server's log: counted and measured, never left to fill the pipe
        for line in stderr:
            log_lines[0] += 1
            longest[0] = max(longest[0], len(line.rstrip("\n")))

    threading.Thread(target=drain, daemon=True).start()
    try:
        person = sorted(passwords)[0]
        warm = HttpClient(port, source="127.0.0.2")
        warm.login(person, "wrong")
        assert warm.login(person, passwords[person]).get("exception") is None
        warm.ajax("getCollectionInformation", collection="/")
        time.sleep(1)
        before = rss_kib(proc.pid)
        client = HttpClient(port, source="127.0.0.3")
        answers: Counter[str] = Counter()
        size = args.name_kib * 1024
        started = time.perf_counter()
        for i in range(args.attempts):
            stem = f"flood{i:08d}"
            name = stem + "x" * (size - len(stem))
            reply = client.ajax("login", user=name, password="wrong")
            text = " ".join(str(m[0]) for m in reply.get("messages", []))
            answers["throttled" if "Too many failed logins" in text else
                    "failed" if reply.get("exception") == "invalidAuth" else "other"] += 1
        elapsed = time.perf_counter() - started
        client.close()
        time.sleep(args.settle)
        after = rss_kib(proc.pid)
        other = HttpClient(port, source="127.0.0.4")
        ok = other.login(person, passwords[person]).get("exception") is None
        other.close()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"campaign serve login flood: {args.attempts} sequential login attempts from one address, each with a "
          f"distinct {args.name_kib} KiB name")
    print(f"  RSS before            {before} KiB")
    print(f"  RSS {args.settle:g} s after        {after} KiB")
    print(f"  kept                  {after - before} KiB ({(after - before) / 1024:.2f} MiB; goal <= 5 MiB)")
    print(f"  answers               {dict(sorted(answers.items()))}")
    print(f"  attempts per second   {args.attempts / elapsed:.0f}")
    print(f"  log lines, longest    {log_lines[0]}, {longest[0]} characters")
    print(f"  a person from another address then logs in: {'yes' if ok else 'NO'}")
    return 0 if ok and answers["other"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
