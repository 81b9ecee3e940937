"""Crash-consistency harness: kill a writing command at its N-th file-system mutation, rerun it, compare.

A command runs in a forked child (so ``SIGKILL`` spares the test runner; the parent has imported
everything, so a child costs no import).  The child installs a Python audit hook
(:func:`sys.addaudithook`) that counts the *mutations* under the scenario's directory:

* ``open`` for writing (a mode with ``w``, ``a``, ``x`` or ``+``, or ``O_WRONLY``/``O_RDWR``/``O_CREAT``/
  ``O_TRUNC``/``O_APPEND`` flags), ``os.rename`` (also ``os.replace``), ``os.remove`` (also ``unlink``),
  ``os.mkdir``, ``os.rmdir``, ``os.link``, ``os.symlink``, ``os.truncate``;
* ``pgx.exchange``: the directory swap through ``ctypes`` (``renameat2``), raised by
  :func:`pipeline.durable.exchange` (ctypes calls raise no audit event of their own).

Paths given relative to a directory descriptor (``shutil.rmtree`` uses them) are resolved through
``/proc/self/fd``.  Mutations outside the scenario's directory are not counted.

* **Kill**: at mutation N the child sends itself ``SIGKILL`` *before* the operation (buffered writes of
  files it has open are lost, as with a real kill).
* **Full disk**: at the N-th open for writing the hook raises ``OSError(ENOSPC)`` (an injected full disk:
  no tmpfs can be mounted here without privileges); the command fails as it would.

After either, the command is run again without faults and the whole directory is compared with the one
an uninterrupted run left (:func:`snapshot`, :func:`differences`); :func:`leftovers` lists temporary
names left behind.  What is random or dated by design is listed in :data:`EXCLUDED` with its reason.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Excluded from the comparison, with the reason (path pattern relative to the scenario directory).
EXCLUDED: dict[str, str] = {
    r"(^|/)locks/[0-9a-f]+\.lock$": "per-document lock files (pipeline.campaign.locks): empty, created on first "
    "lock and never removed by design; a killed run may have locked a document the rerun does not need to",
    r"(^|/)\.build\.lock$": "the build's lock file records host, pid and start time of the build holding it",
    r"(^|/)cache/nochange\.json$": "the no-change record (pipeline.cli.nochange) holds the inode, size and mtime of "
    "the files a finished build left, which differ between any two runs by design; a build deletes it before it "
    "changes anything, so a killed build leaves none, and the check compares it with the files before trusting it",
}

#: access/users.json: passwords come from :mod:`secrets` and are stored as salted scrypt hashes (random by
#: design); compared with the hashes masked where the scenario's uninterrupted run generates them (people,
#: roles and revocations still compared; a scenario whose users exist beforehand compares them exactly: a
#: rerun must keep them).
PASSWORD_RE = re.compile(rb'("password": ")scrypt:[^"]*(")')

#: Times a command takes from the clock (no injectable clock on the command line): ISO-8601 instants of
#: ``pipeline.campaign.assignments.now`` (assignment history, people's joined/left, calibration rounds,
#: imports, guideline versions) and the ``time`` of journal lines (``time.time`` of ``Journal``); masked
#: where the scenario's command writes them (``mask_times``): the uninterrupted run and the rerun run at
#: different seconds.  What was recorded and in what order is still compared.  Also masked in paths: the
#: compact instant naming an archive of moved documents (``archive/2026-01-01T120000+0000``).
TIME_RES = (re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"),
            re.compile(rb'(?<="time": )\d+(?:\.\d+)?'),
            re.compile(rb"\d{4}-\d\d-\d\dT\d{6}[+-]\d{4}"))

TEMPORARY_NAME = re.compile(r"(^\..+\.(tmp-?|old-)\d+$)|(^\..+\.tmp-\d+-[0-9a-f]+$)|(-luigi-tmp-\d+)|(^\.tmp-)"
                            r"|(\.tmp\d+$)")

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: audit event -> (index of the path it changes, index of that path's dir_fd or None)
_TARGET: dict[str, tuple[int, int | None]] = {
    "os.rename": (0, 2), "os.remove": (0, 1), "os.mkdir": (0, 2), "os.rmdir": (0, 1), "os.link": (1, 3),
    "os.symlink": (1, 2), "os.truncate": (0, None), "pgx.exchange": (0, None),
}
_MUTATIONS = set(_TARGET)


@dataclass
class Scenario:
    """One writing command on a prepared directory.

    ``setup(root)`` writes the state before the command (deterministic); ``argv(root)`` is the command line
    of ``pipeline.cli.main``; ``mask_passwords``: mask the password hashes (access/users.json) the command generates;
    ``mask_times``: mask the clock times it writes (:data:`TIME_RES`).
    """

    name: str
    setup: Callable[[Path], None]
    argv: Callable[[Path], list[str]]
    mask_passwords: bool = False
    mask_times: bool = False  # mask clock times (TIME_RES) in every file
    published: tuple[str, ...] = ()  # directories that must be the old or the new version after any kill
    ok_codes: tuple[int, ...] = (0, 1, 3)  # the uninterrupted run's exit status must be one of these


@dataclass
class Outcome:
    """What one fault left, after the rerun."""

    point: int
    kind: str  # "kill" or "enospc"
    status: str  # how the faulty run ended
    differences: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)  # published directories neither old nor new after the fault


class _Hook:
    """The audit hook of a child: counts mutations under ``root``, kills or fails at the chosen one."""

    def __init__(self, root: Path, kill_at: int | None, enospc_at: int | None) -> None:
        self.root = str(root.resolve())
        self.kill_at, self.enospc_at = kill_at, enospc_at
        self.count = 0
        self.writes = 0
        self.exchanges: list[int] = []  # mutation numbers of the directory swaps
        self.busy = False

    def _inside(self, path: Any, dir_fd: Any = None) -> bool:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str | os.PathLike):
            return False
        path = os.fspath(path)
        if not os.path.isabs(path):
            base = os.readlink(f"/proc/self/fd/{dir_fd}") if isinstance(dir_fd, int) and dir_fd >= 0 else os.getcwd()
            path = os.path.join(base, path)
        path = os.path.normpath(path)
        return path == self.root or path.startswith(self.root + os.sep)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.busy:
            return
        self.busy = True
        try:
            self._event(event, args)
        finally:
            self.busy = False

    def _event(self, event: str, args: tuple[Any, ...]) -> None:
        is_write = False
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            writing = (any(c in mode for c in "wax+") if isinstance(mode, str)
                       else bool(isinstance(flags, int) and flags & _WRITE_FLAGS))
            if not writing or not self._inside(path):
                return
            is_write = True
        elif event in _MUTATIONS:
            where, fd_at = _TARGET[event]
            if not self._inside(args[where], args[fd_at] if fd_at is not None and fd_at < len(args) else None):
                return
        else:
            return
        self.count += 1
        if event == "pgx.exchange":
            self.exchanges.append(self.count)
        if self.kill_at is not None and self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if is_write:
            self.writes += 1
            if self.enospc_at is not None and self.writes == self.enospc_at:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(args[0]))


def run_child(root: Path, argv: list[str], *, kill_at: int | None = None, enospc_at: int | None = None,
              env: Mapping[str, str] | None = None) -> tuple[str, int, int, list[int]]:
    """Run ``pipeline.cli.main(argv)`` in a forked child with the fault hook; returns how it ended
    (``exit N``, ``killed``), how many mutations and opens for writing it made (-1 when killed) and the
    mutation numbers of its directory swaps."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            os.close(read_fd)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            sys.dont_write_bytecode = True
            os.environ.update(env or {})
            os.chdir(root)
            hook = _Hook(root, kill_at, enospc_at)
            sys.addaudithook(hook)
            from pipeline.cli import main

            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - a traceback is an outcome too (exit 1)
                code = 1
            os.write(write_fd, f"{hook.count} {hook.writes} {','.join(map(str, hook.exchanges))}\n".encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as fh:
        reported = fh.read().strip()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return ("killed" if os.WTERMSIG(status) == signal.SIGKILL else f"signal {os.WTERMSIG(status)}"), -1, -1, []
    count, writes, *swaps = (reported or "-1 -1").split(" ")
    return f"exit {os.WEXITSTATUS(status)}", int(count), int(writes), [int(x) for x in "".join(swaps).split(",") if x]


def snapshot(root: Path, *, mask_passwords: bool = False, mask_times: bool = False) -> dict[str, tuple[str, bytes]]:
    """Every entry under ``root``: relative path -> (kind, content): files by bytes, links by target,
    directories (so an empty directory counts); :data:`EXCLUDED` paths left out."""
    out: dict[str, tuple[str, bytes]] = {}
    excluded = [re.compile(p) for p in EXCLUDED]
    for here, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = Path(here) / name
            rel = path.relative_to(root).as_posix()
            if mask_times:
                for pattern in TIME_RES:
                    rel = pattern.sub(b"<time>", rel.encode()).decode()
            if any(p.search(rel) for p in excluded):
                continue
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path).encode())
            elif path.is_dir():
                out[rel] = ("dir", b"")
            else:
                data = path.read_bytes()
                if mask_passwords and name == "users.json":
                    data = PASSWORD_RE.sub(rb"\1<random>\2", data)
                if mask_times:
                    for pattern in TIME_RES:
                        data = pattern.sub(b"<time>", data)
                out[rel] = ("file", data)
        dirs[:] = [d for d in dirs if not (Path(here) / d).is_symlink()]
    return out


def differences(expected: Mapping[str, tuple[str, bytes]], got: Mapping[str, tuple[str, bytes]]) -> list[str]:
    """What differs between two snapshots: ``+path`` (extra), ``-path`` (missing), ``~path`` (content)."""
    diff = [f"-{p}" for p in sorted(set(expected) - set(got))]
    diff += [f"+{p}" for p in sorted(set(got) - set(expected))]
    diff += [f"~{p}" for p in sorted(set(expected) & set(got)) if expected[p] != got[p]]
    return diff


def leftovers(expected: Mapping[str, tuple[str, bytes]], got: Mapping[str, tuple[str, bytes]]) -> list[str]:
    """Extra entries with a temporary's name (``.NAME.tmpPID``, ``-luigi-tmp-``, staged directories)."""
    return [p for p in sorted(set(got) - set(expected)) if TEMPORARY_NAME.search(p.rsplit("/", 1)[-1])]


def _subtree(snap: Mapping[str, tuple[str, bytes]], prefix: str, without: str = "") -> dict[str, tuple[str, bytes]]:
    """The entries of ``snap`` at or under ``prefix`` (but ``prefix/WITHOUT``)."""
    return {k: v for k, v in snap.items()
            if (k == prefix or k.startswith(prefix + "/")) and not (without and k == f"{prefix}/{without}")}


class Harness:
    """One scenario: its pre-state (set up once, copied per trial), its uninterrupted result, its faults."""

    def __init__(self, scenario: Scenario, workdir: Path) -> None:
        self.scenario = scenario
        self.template = workdir / f"{scenario.name}.template"
        self.root = workdir / scenario.name
        if self.template.exists():
            shutil.rmtree(self.template)
        self.template.mkdir(parents=True)
        scenario.setup(self.template)
        self.before = self._snapshot(self.template)
        self.published_before = {p: self._published(self.template, p) for p in scenario.published}
        self.fresh()
        status, self.mutations, self.writes, self.exchanges = run_child(self.root, scenario.argv(self.root))
        if status not in {f"exit {c}" for c in scenario.ok_codes}:
            raise RuntimeError(f"{scenario.name}: the uninterrupted run ended with {status}")
        self.status = status
        self.expected = self._snapshot(self.root)
        self.published_expected = {p: self._published(self.root, p) for p in scenario.published}

    def _snapshot(self, root: Path) -> dict[str, tuple[str, bytes]]:
        return snapshot(root, mask_passwords=self.scenario.mask_passwords, mask_times=self.scenario.mask_times)

    def _published(self, root: Path, prefix: str) -> dict[str, tuple[str, bytes]] | None:
        """What a reader of the published directory ``prefix`` sees (through a symbolic link), None if absent."""
        path = root / prefix
        return self._snapshot(path.resolve()) if path.exists() else None

    def fresh(self) -> None:
        """The scenario's directory as it was before the command."""
        if self.root.exists():
            shutil.rmtree(self.root)
        shutil.copytree(self.template, self.root, symlinks=True)

    def trial(self, point: int, kind: str = "kill") -> Outcome:
        """Fault at ``point`` (a mutation number for ``kill``, a write number for ``enospc``), rerun, compare."""
        self.fresh()
        argv = self.scenario.argv(self.root)
        status, _, _, _ = run_child(self.root, argv, **({"kill_at": point} if kind == "kill" else {"enospc_at": point}))
        after_fault = self._snapshot(self.root)
        partial = []
        for prefix in self.scenario.published:  # a reader sees the previous version or the new one
            now = self._published(self.root, prefix)
            if now != self.published_before[prefix] and now != self.published_expected[prefix]:
                partial.append(prefix if now is not None else f"{prefix} (absent)")
        for key in after_fault:  # a Luigi directory target with its completion marker is whole
            prefix = key[: -len("/.complete")]
            if key.endswith("/.complete") and not TEMPORARY_NAME.search(prefix.rsplit("/", 1)[-1]):
                # (a staging copy, marker written and not yet renamed, is nobody's output)
                # (but for the publication marker .run, written when the build publishes it, later)
                now, new, old = (_subtree(snap, prefix, without=".run")
                                 for snap in (after_fault, self.expected, self.before))
                if now not in (new, old):
                    partial.append(prefix)
        run_child(self.root, argv)
        got = self._snapshot(self.root)
        return Outcome(point, kind, status, differences(self.expected, got), leftovers(self.expected, got), partial)


def sample_points(total: int, k: int, always: list[int] | tuple[int, ...] = ()) -> list[int]:
    """About ``k`` points of ``1..total`` evenly spread (first and last included), plus ``always``."""
    if total <= 0:
        return sorted(set(always))
    step = max(1, (total - 1) // max(1, k - 1))
    return sorted({*range(1, total + 1, step), total, *(p for p in always if 1 <= p <= total)})
