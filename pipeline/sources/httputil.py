"""Small HTTP helpers shared by the network clients (no requests are made here).

* [`parse_retry_after`][pipeline.sources.httputil.parse_retry_after] reads a ``Retry-After`` header;
* [`HostRateLimiter`][pipeline.sources.httputil.HostRateLimiter] keeps a request rate for a whole host: every
  process and every build on the machine that talks to one service (E-utilities,
  PubTator3) shares one file-locked log of its last request times;
* [`check_body_length`][pipeline.sources.httputil.check_body_length] catches a body shorter (or longer) than its
  ``Content-Length``, the one truncation ``requests`` may let through.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import math
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pipeline import durable

logger = logging.getLogger(__name__)

#: Environment variable naming the host-wide directory of rate-limit logs.
RATE_LIMIT_DIR_ENV = "PGX_RATELIMIT_DIR"
#: Default safety margin: requests are spaced 10% wider than 1/rate.
DEFAULT_MARGIN = 0.1
#: A logged time this far ahead of the clock comes from before a reboot (monotonic clock reset).
_STALE_AHEAD = 5.0


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Read the seconds to wait from a ``Retry-After`` header.

    Args:
        value: The header's value, delta-seconds (``"120"``) or an HTTP date; None when the header is absent.
            A date without a zone is read as GMT.
        now: The current time in epoch seconds, to measure an HTTP date against; None for ``time.time()``.

    Returns:
        The seconds to wait (0.0 for a date in the past), or None if the header is absent or unparseable.
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        # An HTTP date is GMT by definition even when the zone is left out.
        when = when.replace(tzinfo=dt.timezone.utc)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def check_body_length(headers: object, body: bytes) -> str | None:
    """Say why a response body does not match its ``Content-Length``.

    With a ``Content-Encoding`` the header counts encoded bytes, not the decoded
    ``body``, so nothing is checked; urllib3 checks those itself.

    Args:
        headers: The response headers, a case-insensitive mapping (``response.headers``); an object without
            ``get`` is not checked.
        body: The body as received (decoded bytes).

    Returns:
        A short reason (``"body of 10 bytes but Content-Length 12"``, or an unparseable header), or None when
        the lengths agree or cannot be checked (no header, an encoded body).
    """
    get = getattr(headers, "get", None)
    if get is None:
        return None
    declared = get("Content-Length")
    if declared is None or get("Content-Encoding") not in (None, "", "identity"):
        return None
    try:
        expected = int(str(declared).strip())
    except ValueError:
        return f"unparseable Content-Length {declared!r}"
    if expected != len(body):
        return f"body of {len(body)} bytes but Content-Length {expected}"
    return None


def rate_limit_dir() -> Path:
    """Return the host-wide directory of rate-limit logs (not created here).

    Returns:
        ``$PGX_RATELIMIT_DIR`` when set; else ``$XDG_RUNTIME_DIR/pgx-corpus-ratelimit``
        (per user, on tmpfs) when that directory exists; else ``<tmp>/pgx-corpus-ratelimit-<uid>``.
    """
    configured = os.environ.get(RATE_LIMIT_DIR_ENV)
    if configured:
        return Path(configured)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "pgx-corpus-ratelimit"
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"pgx-corpus-ratelimit-{uid}"


#: longest wait for another process's lock on a rate-limit log; a holder keeps it about a second per
#: request, so a minute means a queue of dozens of processes, or a lock held on purpose
LOCK_TIMEOUT = 60.0


class RateLimitError(RuntimeError):
    """The rate-limit directory or log is not private to this user, or its lock was not released in time."""


def _private_directory(directory: Path) -> int:
    """An ``O_DIRECTORY`` descriptor of ``directory``, created ``0700`` when missing (its parents normally).

    Refuses (``RateLimitError``) a directory that is a symbolic link, is not a directory, belongs to
    another user, or that others can write to: under cron or systemd (no ``XDG_RUNTIME_DIR``) the default
    lives in the shared ``/tmp``, where another local user could create it first, link it elsewhere, or
    hold a lock in it to hang every build.  Group and other permissions of a directory of ours are removed.
    """
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise RateLimitError(f"rate-limit directory {directory}: {exc.strerror or exc} (a symbolic link or not a "
                             f"directory?); set {RATE_LIMIT_DIR_ENV} to a private directory") from exc
    st = os.fstat(fd)
    uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
    if st.st_uid != uid:
        os.close(fd)
        raise RateLimitError(f"rate-limit directory {directory} belongs to uid {st.st_uid}, not to this user "
                             f"(uid {uid}): refused; remove it or set {RATE_LIMIT_DIR_ENV} to a private directory")
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o700)
    return fd


class HostRateLimiter:
    """At most ``rate`` request starts in any sliding second, for every process of the host.

    The last ``ceil(rate)`` start times of ``service`` live in
    ``<directory>/<service>.log`` (one float per line, ``clock`` seconds).  A
    caller takes an exclusive ``flock`` on the file, waits until both

    * ``spacing = (1 + margin) / rate`` seconds have passed since the last start, and
    * ``1 + margin`` seconds have passed since the ``ceil(rate)``-th last start,

    then appends its own start time and releases the lock.  The lock is held
    while waiting, so processes take turns.  The second rule alone keeps any
    one-second window at ``ceil(rate)`` starts; the spacing keeps it at
    ``floor(rate)`` for integer rates and smooths bursts.

    ``clock`` must be the same for every process: ``time.monotonic``
    (``CLOCK_MONOTONIC``, system-wide on Linux) is the default; logged times
    far ahead of it (a reboot) are dropped.  Without ``flock``, or when the
    directory cannot be created, the limit holds within the process only
    (logged once).  ``wait`` is thread-safe.  The directory must be private
    (``0700``, this user's, not a link; see ``_private_directory``) and
    the log is opened without following a link; a lock another process holds
    for more than ``LOCK_TIMEOUT`` (60) seconds ends the wait: both raise
    [`RateLimitError`][pipeline.sources.httputil.RateLimitError] with what to do.

    Args:
        service: Name of the service (``"eutils"``, ``"pubtator"``); names the log ``<service>.log``.
        rate: Most request starts per second, positive.
        directory: Directory of the logs; None for [`rate_limit_dir`][pipeline.sources.httputil.rate_limit_dir].
        margin: Safety margin, non-negative: requests are spaced ``(1 + margin) / rate`` seconds apart.
        clock: Clock of the logged start times, in seconds, the same for every process.
        sleep: How to wait (tests pass a fake).

    Attributes:
        waited: Total seconds this limiter has waited so far.
        last_start: The start time (``clock`` seconds) logged by the last
            [`wait`][pipeline.sources.httputil.HostRateLimiter.wait], or None.

    Raises:
        ValueError: If ``rate`` is not positive or ``margin`` is negative.
    """

    def __init__(
        self,
        service: str,
        rate: float,
        *,
        directory: Path | None = None,
        margin: float = DEFAULT_MARGIN,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        if margin < 0:
            raise ValueError("margin must not be negative")
        self.service = service
        self.rate = rate
        self.interval = 1.0 / rate
        self.spacing = (1.0 + margin) / rate
        self.window = 1.0 + margin
        self.capacity = max(1, math.ceil(rate))
        self.directory = Path(directory) if directory is not None else rate_limit_dir()
        self.path = self.directory / f"{service}.log"
        self._clock = clock
        self._sleep = sleep
        self._thread_lock = threading.Lock()
        self._local: list[float] = []  # the log when no file can be shared
        self._shared = durable.CAN_LOCK
        self.waited = 0.0
        self.last_start: float | None = None  # the start time logged by the last wait()

    def __repr__(self) -> str:
        return f"HostRateLimiter({self.service!r}, {self.rate}, directory={str(self.directory)!r})"

    def _next_start(self, times: list[float], now: float) -> float:
        times = [t for t in times if t <= now + _STALE_AHEAD]
        if not times:
            return now
        at = max(now, times[-1] + self.spacing)
        if len(times) >= self.capacity:
            at = max(at, times[-self.capacity] + self.window)
        return at

    def _take(self, times: list[float], sleep: Callable[[float], None], clock: Callable[[], float]) -> tuple[
            list[float], float]:
        now = clock()
        at = self._next_start(times, now)
        waited = 0.0
        if at > now:
            waited = at - now
            sleep(waited)
        start = max(clock(), at)
        self.last_start = start
        kept = [t for t in times if t <= now + _STALE_AHEAD] + [start]
        return kept[-self.capacity :], waited

    def wait(self, sleep: Callable[[float], None] | None = None, clock: Callable[[], float] | None = None) -> float:
        """Block until a request may start, and record its start in the host-wide log.

        Args:
            sleep: How to wait for this call; None for the limiter's own.
            clock: Clock for this call; None for the limiter's own.

        Returns:
            The seconds waited (0.0 when the request could start at once).

        Raises:
            RateLimitError: If the rate-limit directory or log is not private to this user, or another
                process held the log's lock for more than ``LOCK_TIMEOUT`` seconds.
        """
        sleep = sleep or self._sleep
        clock = clock or self._clock
        with self._thread_lock:
            if self._shared:
                try:
                    waited = self._wait_shared(sleep, clock)
                    self.waited += waited
                    return waited
                except OSError as err:
                    logger.warning("rate limit for %s not shared across processes (%s: %s)",
                                   self.service, self.path, err)
                    self._shared = False
            self._local, waited = self._take(self._local, sleep, clock)
            self.waited += waited
            return waited

    def _open_log(self) -> int:
        """The log, opened in the private directory without following a link, and owned by this user."""
        dir_fd = _private_directory(self.directory)
        try:
            fd = os.open(self.path.name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        except OSError as exc:
            raise RateLimitError(f"rate-limit log {self.path}: {exc.strerror or exc} (a symbolic link?)") from exc
        finally:
            os.close(dir_fd)
        st = os.fstat(fd)
        if st.st_uid != (os.getuid() if hasattr(os, "getuid") else st.st_uid) or not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise RateLimitError(f"rate-limit log {self.path} is not a regular file of this user: refused")
        return fd

    def _lock(self, fd: int) -> None:
        """``flock`` within ``LOCK_TIMEOUT`` seconds (real time), or ``RateLimitError``."""
        deadline = time.monotonic() + LOCK_TIMEOUT
        pause = 0.005
        while True:
            if durable.flock(fd, blocking=False):
                return
            if time.monotonic() >= deadline:
                raise RateLimitError(
                    f"rate-limit log {self.path}: its lock was not released within {LOCK_TIMEOUT:.0f} s "
                    "(another process holds it); stop that process, or remove the file if none is running"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _wait_shared(self, sleep: Callable[[float], None], clock: Callable[[], float]) -> float:
        with os.fdopen(self._open_log(), "r+", encoding="ascii") as fh:
            self._lock(fh.fileno())
            try:
                fh.seek(0)
                times: list[float] = []
                for line in fh.read().split():
                    try:
                        times.append(float(line))
                    except ValueError:  # a torn line from a killed writer: ignore it
                        continue
                kept, waited = self._take(times, sleep, clock)
                fh.seek(0)
                fh.truncate()
                fh.write("".join(f"{t!r}\n" for t in kept))
                fh.flush()
            finally:
                durable.unlock(fh.fileno())
        return waited


def max_in_window(times: list[float], window: float = 1.0) -> int:
    """Count the most ``times`` that fall within one window.

    Args:
        times: Request start times, in seconds, in any order.
        window: Length of the window, in seconds; the window is a closed interval.

    Returns:
        The largest number of ``times`` within any closed interval of length ``window``.
    """
    ordered = sorted(times)
    best = 0
    lo = 0
    for hi, t in enumerate(ordered):
        while t - ordered[lo] > window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


__all__ = [
    "DEFAULT_MARGIN",
    "LOCK_TIMEOUT",
    "RATE_LIMIT_DIR_ENV",
    "HostRateLimiter",
    "RateLimitError",
    "check_body_length",
    "max_in_window",
    "parse_retry_after",
    "rate_limit_dir",
]
