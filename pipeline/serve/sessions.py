"""Logins and sessions of ``campaign serve`` (in memory: a restart logs everybody out).

* A session is a random id (``secrets.token_urlsafe(32)``) in a cookie that is ``HttpOnly``,
  ``SameSite=Strict``, ``Path=/``, and ``Secure`` behind TLS (``--secure-cookies``, or
  ``X-Forwarded-Proto: https`` from a trusted proxy).  It ends after ``idle`` seconds without a request,
  ``lifetime`` seconds after login, at logout, or at the person's next request once they are revoked.
* Failed logins are throttled per person and per client address: after ``max_failures`` failures within
  ``window`` seconds, further attempts are refused until the window has passed (the password is not even
  checked, so guessing gets no answer).
* Nothing here logs or keeps a password; log lines name the person and the address only.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

COOKIE_NAME = "pgx_session"


@dataclass
class Session:
    sid: str
    person: str
    created: float
    last_seen: float
    data: dict[str, Any] = field(default_factory=dict)  # brat's client options ("conf")


class LoginThrottled(Exception):
    """Too many failed logins for this person or address; ``retry_after`` seconds to wait."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many failed logins; try again in {int(retry_after) + 1} s")
        self.retry_after = retry_after


class SessionStore:
    """In-memory sessions and the failed-login counters (thread-safe)."""

    def __init__(self, *, idle: float = 8 * 3600, lifetime: float = 24 * 3600, max_failures: int = 5,
                 window: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle, self.lifetime = idle, lifetime
        self.max_failures, self.window = max_failures, window
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._failures: dict[str, deque[float]] = {}

    # --- sessions --------------------------------------------------------------------------------

    def create(self, person: str) -> Session:
        now = self._clock()
        session = Session(secrets.token_urlsafe(32), person, now, now)
        with self._lock:
            self._sessions[session.sid] = session
        return session

    def get(self, sid: str | None) -> Session | None:
        """The live session of ``sid`` (its idle time restarts), or None (an expired one is dropped)."""
        if not sid:
            return None
        now = self._clock()
        with self._lock:
            session = self._sessions.get(sid)
            if session is None:
                return None
            if now - session.last_seen > self.idle or now - session.created > self.lifetime:
                del self._sessions[sid]
                return None
            session.last_seen = now
            return session

    def end(self, sid: str) -> None:
        with self._lock:
            self._sessions.pop(sid, None)

    def end_person(self, person: str) -> int:
        """End every session of ``person`` (revoked); how many."""
        with self._lock:
            gone = [sid for sid, s in self._sessions.items() if s.person == person]
            for sid in gone:
                del self._sessions[sid]
        return len(gone)

    # --- throttling ------------------------------------------------------------------------------

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._failures.setdefault(key, deque())
        while times and now - times[0] > self.window:
            times.popleft()
        return times

    def check_throttle(self, person: str, address: str) -> None:
        """LoginThrottled when either the person or the address failed too often recently."""
        now = self._clock()
        with self._lock:
            for key in (f"person:{person}", f"address:{address}"):
                times = self._recent(key, now)
                if len(times) >= self.max_failures:
                    raise LoginThrottled(self.window - (now - times[0]))

    def failed(self, person: str, address: str) -> None:
        now = self._clock()
        with self._lock:
            for key in (f"person:{person}", f"address:{address}"):
                self._recent(key, now).append(now)

    def succeeded(self, person: str) -> None:
        with self._lock:
            self._failures.pop(f"person:{person}", None)


def cookie_header(sid: str, *, secure: bool, max_age: int | None = None) -> tuple[str, str]:
    """The ``Set-Cookie`` header of a session (``sid`` empty and ``max_age`` 0 clear it)."""
    parts = [f"{COOKIE_NAME}={sid}", "Path=/", "HttpOnly", "SameSite=Strict"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if secure:
        parts.append("Secure")
    return ("Set-Cookie", "; ".join(parts))


def read_cookie(header: str | None) -> str | None:
    """The session id in a ``Cookie`` header, if any."""
    if not header:
        return None
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name == COOKIE_NAME and value:
            return value
    return None
