"""Logins and sessions of ``campaign serve`` (in memory: a restart logs everybody out).

* A session is a random id (``secrets.token_urlsafe(32)``) in a cookie that is ``HttpOnly``,
  ``SameSite=Strict``, ``Path=/``, and ``Secure`` behind TLS (``--secure-cookies``, or
  ``X-Forwarded-Proto: https`` from a trusted proxy).  It records the person's access state at login
  (see [`UserStore.access_state`][pipeline.campaign.users.UserStore.access_state]) and ends after ``idle``
  seconds without a request, ``lifetime`` seconds after login, at logout, or at the person's next request
  once their access state changed (revoked, password reset, ``campaign users logout``).  A person has at
  most ``max_sessions`` sessions: a login beyond that ends their least recently used one.
* Failed logins are throttled with exponential backoff, per (client address, name) pair and per client
  address: from the ``max_failures``-th failure of a pair (the ``address_failures``-th of an address,
  more, as people behind one NAT share it), each failure makes the next attempt wait, ``base_delay``
  first, then twice as long after each further failure, up to ``max_delay``; an attempt made during the
  wait is refused without its password being checked.  A name alone is never locked: failures for one
  name from any address only slow its attempts down, by ``name_delay`` at most (the attempt waits, then
  is checked), so the person can still log in from their own address.  Counters are forgotten
  ``forget`` seconds after their last failure.
* Memory is bounded whatever is typed: the counters are keyed by a 16-byte digest of the address and
  the name (never the name itself), each table holds at most ``max_entries`` entries (the least recently
  failed go first), and every kept field is a number.
* Nothing here logs or keeps a password; log lines name the person and the address only.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
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
        state: The person's access state at login (the session ends once it changes).
        data: brat's client options (``conf``) saved for this session.
    """

    sid: str
    person: str
    created: float
    last_seen: float
    state: str = ""
    data: dict[str, Any] = field(default_factory=dict)


class LoginThrottled(Exception):
    """Too many failed logins from this address, or for this name from this address.

    Args:
        retry_after: Seconds to wait before the next attempt is considered.

    Attributes:
        retry_after: Seconds to wait before the next attempt is considered.
    """

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many failed logins; try again in {int(retry_after) + 1} s")
        self.retry_after = retry_after


@dataclass
class _Failures:
    count: int  # failures since the counter was last forgotten
    last: float  # when the last one happened
    until: float  # no attempt is considered before this time


def _key(*parts: str) -> bytes:
    """A fixed-size key for a table (a long name costs 16 bytes, not its length)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.digest()


class SessionStore:
    """In-memory sessions and the failed-login counters (thread-safe, bounded).

    Args:
        idle: Seconds without a request after which a session ends.
        lifetime: Seconds after login after which a session ends.
        max_sessions: Sessions per person; a login beyond ends their least recently used one.
        max_failures: The failure of an (address, name) pair that starts its backoff.
        address_failures: The failure of an address (any names) that starts its backoff.
        base_delay: The first wait of the backoff, in seconds; each further failure doubles it.
        max_delay: The longest wait of the backoff, in seconds.
        name_delay: The longest time an attempt for one name waits because of failures for that name
            from any address, in seconds.
        forget: Seconds after its last failure after which a counter is dropped.
        max_entries: The most entries kept in each table (addresses, pairs, names); the least
            recently failed are dropped first.
        clock: The clock, in seconds (injected by tests).
    """

    def __init__(self, *, idle: float = 8 * 3600, lifetime: float = 24 * 3600, max_sessions: int = 10,
                 max_failures: int = 5, address_failures: int = 20, base_delay: float = 1.0,
                 max_delay: float = 300.0, name_delay: float = 2.0, forget: float = 3600.0, max_entries: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle, self.lifetime, self.max_sessions = idle, lifetime, max_sessions
        self.max_failures, self.address_failures = max_failures, address_failures
        self.base_delay, self.max_delay = base_delay, max_delay
        self.name_delay, self.forget, self.max_entries = name_delay, forget, max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._addresses: OrderedDict[bytes, _Failures] = OrderedDict()
        self._pairs: OrderedDict[bytes, _Failures] = OrderedDict()
        self._names: OrderedDict[bytes, _Failures] = OrderedDict()

    # --- sessions --------------------------------------------------------------------------------

    def create(self, person: str, state: str = "") -> Session:
        """Open a new session for a person who has just logged in.

        When the person already has ``max_sessions`` sessions, the least recently used one ends.

        Args:
            person: The person's id (already authenticated).
            state: The person's access state at this login.

        Returns:
            The new session, with a fresh random id.
        """
        now = self._clock()
        session = Session(secrets.token_urlsafe(32), person, now, now, state)
        with self._lock:
            self._drop_expired(now)
            own = sorted((s for s in self._sessions.values() if s.person == person), key=lambda s: s.last_seen)
            for old in own[:max(0, len(own) - self.max_sessions + 1)]:
                del self._sessions[old.sid]
            self._sessions[session.sid] = session
        return session

    def _drop_expired(self, now: float) -> None:
        gone = [sid for sid, s in self._sessions.items()
                if now - s.last_seen > self.idle or now - s.created > self.lifetime]
        for sid in gone:
            del self._sessions[sid]

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

    def end_person(self, person: str, keep_state: str | None = None) -> int:
        """End the sessions of a person (revoked, reset, or logged out everywhere).

        Args:
            person: The person's id.
            keep_state: Keep the sessions that recorded this access state (the current one); None ends all.

        Returns:
            How many sessions were ended.
        """
        with self._lock:
            gone = [sid for sid, s in self._sessions.items()
                    if s.person == person and (keep_state is None or s.state != keep_state)]
            for sid in gone:
                del self._sessions[sid]
        return len(gone)

    def count(self, person: str | None = None) -> int:
        """Return how many sessions are open.

        Args:
            person: Count this person's only; None for everyone's.

        Returns:
            The number of sessions kept (expired ones not yet dropped included).
        """
        with self._lock:
            return sum(1 for s in self._sessions.values() if person is None or s.person == person)

    # --- throttling ------------------------------------------------------------------------------

    def _entry(self, table: OrderedDict[bytes, _Failures], key: bytes, now: float) -> _Failures | None:
        entry = table.get(key)
        if entry is not None and now - entry.last > self.forget:
            del table[key]
            return None
        return entry

    def _backoff(self, count: int, free: int) -> float:
        over = count - free
        if over < 0:
            return 0.0
        return float(min(self.base_delay * 2.0 ** min(over, 64), self.max_delay))

    def _record(self, table: OrderedDict[bytes, _Failures], key: bytes, now: float, delay: Callable[[int], float]
                ) -> None:
        entry = self._entry(table, key, now)
        count = entry.count + 1 if entry is not None else 1
        table[key] = _Failures(count, now, now + delay(count))
        table.move_to_end(key)
        while table and next(iter(table.values())).last < now - self.forget:
            table.popitem(last=False)  # expired: the oldest failures are first
        while len(table) > self.max_entries:
            table.popitem(last=False)

    def _name_wait(self, count: int) -> float:
        over = count - self.max_failures
        if over < 0:
            return 0.0
        return float(min(self.name_delay / 16 * 2.0 ** min(over, 64), self.name_delay))

    def check_throttle(self, person: str, address: str) -> float:
        """Refuse a login attempt from an address that is waiting out its backoff, or delay it.

        Called before the password is checked, so guessing gets no answer.

        Args:
            person: The person id typed.
            address: The client address.

        Returns:
            How long to wait before checking the password (at most ``name_delay`` seconds): failures for
                this name from any address slow its attempts down, never lock them.

        Raises:
            LoginThrottled: If the address, or the address for this name, is in its backoff.
        """
        now = self._clock()
        with self._lock:
            waits = [e.until - now for e in (self._entry(self._addresses, _key(address), now),
                                             self._entry(self._pairs, _key(address, person), now))
                     if e is not None and e.until > now]
            if waits:
                raise LoginThrottled(max(waits))
            name = self._entry(self._names, _key(person), now)
            if name is None or name.until <= now:
                return 0.0
            return min(name.until - now, self.name_delay)

    def failed(self, person: str, address: str) -> None:
        """Count a failed login against the address, the (address, name) pair and the name.

        Args:
            person: The person id typed.
            address: The client address.
        """
        now = self._clock()
        with self._lock:
            self._record(self._addresses, _key(address), now, lambda n: self._backoff(n, self.address_failures))
            self._record(self._pairs, _key(address, person), now, lambda n: self._backoff(n, self.max_failures))
            self._record(self._names, _key(person), now, self._name_wait)

    def succeeded(self, person: str, address: str = "") -> None:
        """Forget the failures of a name, and of the pair, after a successful login (the address's are kept).

        Args:
            person: The person's id.
            address: The client address.
        """
        with self._lock:
            self._names.pop(_key(person), None)
            self._pairs.pop(_key(address, person), None)

    def table_sizes(self) -> dict[str, int]:
        """Return how many entries each throttling table holds (for tests and benchmarks).

        Returns:
            ``{"addresses": n, "pairs": n, "names": n, "sessions": n}``.
        """
        with self._lock:
            return {"addresses": len(self._addresses), "pairs": len(self._pairs), "names": len(self._names),
                    "sessions": len(self._sessions)}


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
