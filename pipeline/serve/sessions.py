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
"""The name of the session cookie."""


@dataclass
class Session:
    """One logged-in person's session.

    Times are in seconds of the store's clock (``time.monotonic`` by default), not wall-clock time.

    Attributes:
        sid: The session id, the cookie's value (random, URL-safe).
        person: The person's id.
        created: When the person logged in.
        last_seen: When the session was last used (its idle time restarts then).
        data: brat's client options (``conf``) saved for this session.
    """

    sid: str
    person: str
    created: float
    last_seen: float
    data: dict[str, Any] = field(default_factory=dict)


class LoginThrottled(Exception):
    """Too many failed logins for this person or address.

    Args:
        retry_after: Seconds to wait before the next attempt is considered.

    Attributes:
        retry_after: Seconds to wait before the next attempt is considered.
    """

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many failed logins; try again in {int(retry_after) + 1} s")
        self.retry_after = retry_after


class SessionStore:
    """In-memory sessions and the failed-login counters (thread-safe).

    Args:
        idle: Seconds without a request after which a session ends.
        lifetime: Seconds after login after which a session ends.
        max_failures: Failed logins (per person, and per client address) within ``window`` after
            which further attempts are refused.
        window: The throttling window, in seconds.
        clock: The clock, in seconds (injected by tests).
    """

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
        """Open a new session for a person who has just logged in.

        Args:
            person: The person's id (already authenticated).

        Returns:
            The new session, with a fresh random id.
        """
        now = self._clock()
        session = Session(secrets.token_urlsafe(32), person, now, now)
        with self._lock:
            self._sessions[session.sid] = session
        return session

    def get(self, sid: str | None) -> Session | None:
        """Return the live session of a session id, restarting its idle time.

        Args:
            sid: The id from the request's cookie, or None.

        Returns:
            The session; None when there is none or it expired (an expired one is dropped).
        """
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
        """End a session (logout); an unknown id is ignored.

        Args:
            sid: The session id.
        """
        with self._lock:
            self._sessions.pop(sid, None)

    def end_person(self, person: str) -> int:
        """End every session of a person (when they are revoked).

        Args:
            person: The person's id.

        Returns:
            How many sessions were ended.
        """
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
        """Refuse a login attempt when the person or the address failed too often recently.

        Called before the password is checked, so guessing gets no answer.

        Args:
            person: The person id typed.
            address: The client address.

        Raises:
            LoginThrottled: If ``max_failures`` failures of either fall within the window.
        """
        now = self._clock()
        with self._lock:
            for key in (f"person:{person}", f"address:{address}"):
                times = self._recent(key, now)
                if len(times) >= self.max_failures:
                    raise LoginThrottled(self.window - (now - times[0]))

    def failed(self, person: str, address: str) -> None:
        """Count a failed login against the person and the address.

        Args:
            person: The person id typed.
            address: The client address.
        """
        now = self._clock()
        with self._lock:
            for key in (f"person:{person}", f"address:{address}"):
                self._recent(key, now).append(now)

    def succeeded(self, person: str) -> None:
        """Forget a person's failed logins after a successful one (the address's are kept).

        Args:
            person: The person's id.
        """
        with self._lock:
            self._failures.pop(f"person:{person}", None)


def cookie_header(sid: str, *, secure: bool, max_age: int | None = None) -> tuple[str, str]:
    """Build the ``Set-Cookie`` header of a session.

    The cookie is ``HttpOnly``, ``SameSite=Strict``, ``Path=/``.

    Args:
        sid: The session id; empty, with ``max_age`` 0, to clear the cookie.
        secure: Add ``Secure`` (served behind TLS).
        max_age: The cookie's ``Max-Age`` in seconds; None for a browser-session cookie.

    Returns:
        The header's name and value.
    """
    parts = [f"{COOKIE_NAME}={sid}", "Path=/", "HttpOnly", "SameSite=Strict"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if secure:
        parts.append("Secure")
    return ("Set-Cookie", "; ".join(parts))


def read_cookie(header: str | None) -> str | None:
    """Find the session id in a ``Cookie`` header.

    Args:
        header: The request's ``Cookie`` header, or None.

    Returns:
        The value of the [`COOKIE_NAME`][pipeline.serve.sessions.COOKIE_NAME] cookie, or None.
    """
    if not header:
        return None
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name == COOKIE_NAME and value:
            return value
    return None
