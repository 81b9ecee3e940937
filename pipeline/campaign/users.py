"""The people of a campaign and their passwords: ``CAMPAIGN_DIR/access/users.json``.

The file lives outside every served directory (``access/`` is mode 0700, the file 0600) and is
replaced as a whole (written beside, flushed, renamed; see
[`pipeline.durable`][pipeline.durable]) under an advisory lock (``access/users.lock``), so
two commands never interleave their changes.  Format::

    {"format": "pgx-corpus users 1",
     "people": {"alice": {"roles": ["annotator"], "revoked": false,
                          "password": "scrypt:32768:8:1$<salt hex>$<key hex>"}}}

An entry may also hold ``"logouts": N`` (absent means 0): how many times ``campaign users logout``
ended the person's sessions.

Roles are a subset of [`ROLES`][pipeline.campaign.users.ROLES]: ``annotator`` (a phase-1 collection),
``senior`` (a phase-2 collection once ``campaign review`` wrote it) and ``manager`` (read-only access).
Passwords come from ``secrets``, are shown once to the manager by the command that creates or resets
them, and are stored only as scrypt hashes (``hashlib.scrypt``, a random salt per person, the
parameters stored with the hash).  Nothing here logs a password or a hash.  A revoked person keeps their entry
(their roles say what they had) but has no password until ``reset``.

[`UserStore`][pipeline.campaign.users.UserStore] is what ``campaign serve`` asks: it re-reads the file
whenever it changes (inode, size or mtime), so people added, reset or revoked take effect without a
restart.  A session records the person's *access state* at login
([`UserStore.access_state`][pipeline.campaign.users.UserStore.access_state], a digest of their password
hash and logout count): a reset, a revocation (with or without a reset after it) or a ``logout`` changes
it, so the session is refused at its next request, whatever serve saw in between.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.campaign.layout import ACCESS_DIR, ID_RE, USERS_FILE, USERS_LOCK
from pipeline.errors import InputError

log = logging.getLogger(__name__)

FORMAT = "pgx-corpus users 1"
"""The users file's ``format`` value."""
ROLES = frozenset({"annotator", "senior", "manager"})
"""The roles a person may hold."""

# scrypt with werkzeug's parameters (N=2**15, r=8, p=1: 32 MiB and a few tens of ms per check)
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
SALT_BYTES, KEY_BYTES = 16, 32
PASSWORD_BYTES = 12  # secrets.token_urlsafe: 16 characters, 96 bits


class UsersError(InputError):
    """A users file or request that cannot be honoured (the message names the file or person)."""


@dataclass(frozen=True)
class Person:
    """Someone who may log in to ``campaign serve``.

    Attributes:
        id: The person's id (a roster id: letters, digits, ``.``, ``_``, ``-``).
        roles: A non-empty subset of [`ROLES`][pipeline.campaign.users.ROLES].
        revoked: Whether their access has ended (they have no password until reset).
    """

    id: str
    roles: frozenset[str]
    revoked: bool = False


@dataclass(frozen=True)
class _Entry:
    person: Person
    password: str | None  # the stored hash, None once revoked
    logouts: int = 0  # how many times `campaign users logout` ended the person's sessions

    def state(self) -> str | None:
        """The access state a session records: None when nobody may log in as this person."""
        if self.person.revoked or self.password is None:
            return None
        return hashlib.sha256(f"{self.password}\0{self.logouts}".encode()).hexdigest()[:32]


def users_path(campaign_dir: Path) -> Path:
    """Return the users file of a campaign.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        ``CAMPAIGN_DIR/access/users.json``.
    """
    return Path(campaign_dir) / ACCESS_DIR / USERS_FILE


# --- hashing ---------------------------------------------------------------------------------------

def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8", "surrogatepass"), salt=salt, n=n, r=r, p=p, maxmem=132 * n * r * p,
                          dklen=KEY_BYTES)


def hash_password(password: str) -> str:
    """Hash a password with scrypt and a fresh random salt.

    Args:
        password: The clear password (never logged).

    Returns:
        ``scrypt:N:r:p$<salt hex>$<key hex>``.
    """
    salt = secrets.token_bytes(SALT_BYTES)
    key = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt:{SCRYPT_N}:{SCRYPT_R}:{SCRYPT_P}${salt.hex()}${key.hex()}"


def _parse_hash(stored: str) -> tuple[int, int, int, bytes, bytes]:
    method, salt, key = stored.split("$")
    name, n, r, p = method.split(":")
    if name != "scrypt":
        raise ValueError(f"unknown password hash method {name!r}")
    return int(n), int(r), int(p), bytes.fromhex(salt), bytes.fromhex(key)


def check_password(stored: str, password: str) -> bool:
    """Check a password against a stored hash (compared in constant time).

    Args:
        stored: The hash, as [`hash_password`][pipeline.campaign.users.hash_password] makes it.
        password: The clear password typed.

    Returns:
        Whether it matches.

    Raises:
        ValueError: If ``stored`` is not a hash of this module (unknown method or malformed).
    """
    n, r, p, salt, key = _parse_hash(stored)
    return hmac.compare_digest(_scrypt(password, salt, n, r, p), key)


def _decoy_hash() -> str:
    """A hash of the default parameters that no password matches.

    Checked for unknown people, so that an unknown name costs the same scrypt as a known one.
    """
    return f"scrypt:{SCRYPT_N}:{SCRYPT_R}:{SCRYPT_P}${secrets.token_hex(SALT_BYTES)}${secrets.token_hex(KEY_BYTES)}"


# --- the file --------------------------------------------------------------------------------------

def _decode(data: bytes, where: Path) -> dict[str, _Entry]:
    """The entries of a users file; UsersError naming the file on anything malformed."""
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsersError(f"{where}: not a users file: {exc}") from exc
    if not isinstance(record, dict) or record.get("format") != FORMAT or not isinstance(record.get("people"), dict):
        raise UsersError(f"{where}: not a users file of format {FORMAT!r}")
    out: dict[str, _Entry] = {}
    for pid, entry in record["people"].items():
        roles = entry.get("roles") if isinstance(entry, dict) else None
        if not isinstance(roles, list) or not set(roles) <= ROLES or not ID_RE.match(pid):
            raise UsersError(f"{where}: bad entry for person {pid!r}")
        password = entry.get("password")
        if password is not None:
            try:
                _parse_hash(password)
            except (AttributeError, ValueError) as exc:
                raise UsersError(f"{where}: bad password hash for person {pid!r}") from exc
        revoked = bool(entry.get("revoked", False))
        logouts = entry.get("logouts", 0)
        if not isinstance(logouts, int) or isinstance(logouts, bool) or logouts < 0:
            raise UsersError(f"{where}: bad logout count for person {pid!r}")
        out[pid] = _Entry(Person(pid, frozenset(roles), revoked), None if revoked else password, logouts)
    return out


def _encode(people: Mapping[str, _Entry]) -> bytes:
    record: dict[str, Any] = {"format": FORMAT, "people": {
        pid: {"roles": sorted(e.person.roles), "revoked": e.person.revoked, "password": e.password,
              **({"logouts": e.logouts} if e.logouts else {})}
        for pid, e in sorted(people.items())
    }}
    return (json.dumps(record, indent=1, sort_keys=True) + "\n").encode("utf-8")


def _read(path: Path) -> dict[str, _Entry]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsersError(f"{path}: cannot read: {exc}") from exc
    return _decode(data, path)


@contextmanager
def _locked(campaign_dir: Path) -> Iterator[Path]:
    """Hold the users file's write lock (threads and processes); yields the file's path."""
    directory = durable.ensure_private_dir(Path(campaign_dir) / ACCESS_DIR)
    with durable.lock_path(directory / USERS_LOCK):
        # every writer holds this lock: a temporary of the users file here was left by a killed one
        durable.clean_leftovers(directory, USERS_FILE, owned=True)
        yield directory / USERS_FILE


def _update(campaign_dir: Path, change: Callable[[dict[str, _Entry]], None]) -> None:
    """Read, change and replace the users file under its lock; nothing is written if ``change`` raises."""
    with _locked(campaign_dir) as path:
        people = _read(path)
        change(people)
        durable.replace_file(path, _encode(people), mode=0o600, umask=False, durable=True)


def _new_password() -> tuple[str, str]:
    password = secrets.token_urlsafe(PASSWORD_BYTES)
    return password, hash_password(password)


def _check_person(person: str) -> None:
    if not ID_RE.match(person):
        raise UsersError(f"person {person!r}: an id is letters, digits, '.', '_' or '-'")


def create_users(campaign_dir: Path, people: Mapping[str, Iterable[str]], *, shown: bool = True) -> dict[str, str]:
    """Create the missing people and set the roles of existing ones.

    Existing people keep their password (and a revoked person stays revoked).  Everything is checked
    before anything is written; the file is replaced durably under its lock.  The number of people
    created is logged, never a password.

    Args:
        campaign_dir: The campaign directory.
        people: Person id -> roles (a non-empty subset of [`ROLES`][pipeline.campaign.users.ROLES]).
        shown: Whether the caller shows the new passwords to the manager; the log line says so either way
            (``build --roster`` shows none: the manager gives each person one with ``campaign users reset``).

    Returns:
        ``{person: password}`` for the people created by this call only; the passwords are for a
            one-time display to the manager and are stored hashed only.

    Raises:
        UsersError: If an id or a role set is invalid, or the users file is unreadable or malformed.
    """
    wanted: dict[str, frozenset[str]] = {}
    for person, roles in people.items():
        _check_person(person)
        role_set = frozenset(roles)
        if not role_set or not role_set <= ROLES:
            raise UsersError(f"person {person!r}: roles {sorted(role_set)} must be a non-empty subset of "
                             f"{sorted(ROLES)}")
        wanted[person] = role_set
    created: dict[str, str] = {}

    def change(current: dict[str, _Entry]) -> None:
        for person, roles in sorted(wanted.items()):
            old = current.get(person)
            if old is None:
                password, stored = _new_password()
                created[person] = password
                current[person] = _Entry(Person(person, roles), stored)
            elif old.person.roles != roles:
                current[person] = _Entry(Person(person, roles, old.person.revoked), old.password, old.logouts)

    _update(campaign_dir, change)
    if created:
        if shown:
            log.info("%s: %d new people (passwords shown once to the manager)", users_path(campaign_dir),
                     len(created))
        else:
            log.info("%s: %d new people, without a password shown: `pgx-corpus campaign users reset PERSON` "
                     "gives each one", users_path(campaign_dir), len(created))
    return created


def reset_password(campaign_dir: Path, person: str) -> str:
    """Give a person a new password, also lifting a revocation.

    The file is replaced durably under its lock; the reset is logged, never the password.

    Args:
        campaign_dir: The campaign directory.
        person: The person's id.

    Returns:
        The new clear password, for a one-time display (stored hashed only).

    Raises:
        UsersError: If the person is unknown or the users file is unreadable or malformed.
    """
    password, stored = _new_password()

    def change(current: dict[str, _Entry]) -> None:
        old = current.get(person)
        if old is None:
            raise UsersError(f"{users_path(campaign_dir)}: no person {person!r}")
        current[person] = _Entry(Person(person, old.person.roles), stored, old.logouts)

    _update(campaign_dir, change)
    log.info("%s: password of %s reset", users_path(campaign_dir), person)
    return password


def revoke(campaign_dir: Path, person: str) -> None:
    """End a person's access: their password hash is dropped, their roles kept.

    The file is replaced durably under its lock; the revocation is logged.  ``campaign serve`` ends
    their sessions at their next request.

    Args:
        campaign_dir: The campaign directory.
        person: The person's id.

    Raises:
        UsersError: If the person is unknown or the users file is unreadable or malformed.
    """

    def change(current: dict[str, _Entry]) -> None:
        old = current.get(person)
        if old is None:
            raise UsersError(f"{users_path(campaign_dir)}: no person {person!r}")
        current[person] = _Entry(Person(person, old.person.roles, revoked=True), None, old.logouts)

    _update(campaign_dir, change)
    log.info("%s: %s revoked", users_path(campaign_dir), person)


def logout_everywhere(campaign_dir: Path, person: str) -> None:
    """End every session of a person ("log out everywhere"); their password stays.

    The person's logout count goes up by one, which changes their access state: ``campaign serve``
    refuses each of their sessions at its next request (running or restarted; sessions do not outlive a
    restart anyway).  The file is replaced durably under its lock; the logout is logged.

    Args:
        campaign_dir: The campaign directory.
        person: The person's id.

    Raises:
        UsersError: If the person is unknown or the users file is unreadable or malformed.
    """

    def change(current: dict[str, _Entry]) -> None:
        old = current.get(person)
        if old is None:
            raise UsersError(f"{users_path(campaign_dir)}: no person {person!r}")
        current[person] = _Entry(old.person, old.password, old.logouts + 1)

    _update(campaign_dir, change)
    log.info("%s: every session of %s ended", users_path(campaign_dir), person)


def list_people(campaign_dir: Path) -> list[Person]:
    """List everyone in a campaign's users file.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        The people, by id; empty when there is no users file.

    Raises:
        UsersError: If the file is unreadable or malformed.
    """
    return [e.person for _, e in sorted(_read(users_path(campaign_dir)).items())]


class UserStore:
    """The users of one campaign for ``campaign serve``: thread-safe, re-read when the file changes.

    A users file that cannot be read or parsed denies everyone (logged once per change of the file).

    Args:
        campaign_dir: The campaign directory.
    """

    def __init__(self, campaign_dir: Path) -> None:
        self._path = users_path(campaign_dir)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int, int, int] | None = None
        self._people: dict[str, _Entry] = {}
        self._decoy = _decoy_hash()

    def _current(self) -> dict[str, _Entry]:
        with self._lock:
            try:
                fd = os.open(self._path, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError:
                self._stamp, self._people = None, {}
                return self._people
            except OSError as exc:
                log.error("%s: cannot open the users file (%s); nobody may log in", self._path, exc)
                self._stamp, self._people = None, {}
                return self._people
            try:
                st = os.fstat(fd)
                stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                if stamp != self._stamp:
                    with os.fdopen(os.dup(fd), "rb") as fh:
                        data = fh.read()
                    try:
                        self._people = _decode(data, self._path)
                    except UsersError as exc:
                        log.error("%s; nobody may log in until it is mended", exc)
                        self._people = {}
                    self._stamp = stamp
            finally:
                os.close(fd)
            return self._people

    def get(self, person: str) -> Person | None:
        """Look a person up (the file is re-read if it changed).

        Args:
            person: The person's id.

        Returns:
            The person (revoked or not), or None when unknown.
        """
        entry = self._current().get(person)
        return entry.person if entry else None

    def access_state(self, person: str) -> str | None:
        """Return the person's access state, which a session records at login.

        It changes with every password reset, revocation and ``campaign users logout``; a session whose
        recorded state differs from the current one has ended.

        Args:
            person: The person's id.

        Returns:
            An opaque digest (not the password hash); None when the person is unknown or revoked.
        """
        entry = self._current().get(person)
        return entry.state() if entry is not None else None

    def verify(self, person: str, password: str) -> Person | None:
        """Check a login.

        Unknown and revoked people cost one scrypt check too, so timing does not tell who exists.

        Args:
            person: The person id typed.
            password: The clear password typed (never logged).

        Returns:
            The person if the password is theirs and they are not revoked, else None.
        """
        checked = self.login(person, password)
        return checked[0] if checked is not None else None

    def login(self, person: str, password: str) -> tuple[Person, str] | None:
        """Check a login and return the access state the new session records (one reading of the file).

        Unknown and revoked people cost one scrypt check too, so timing does not tell who exists.

        Args:
            person: The person id typed.
            password: The clear password typed (never logged).

        Returns:
            The person and their [access state][pipeline.campaign.users.UserStore.access_state] if the
                password is theirs and they are not revoked, else None.
        """
        entry = self._current().get(person)
        stored = entry.password if entry is not None and entry.password is not None else self._decoy
        try:
            ok = check_password(stored, password)
        except ValueError:  # unreadable parameters in the file: nobody gets in with it
            ok = False
        state = entry.state() if entry is not None else None
        if entry is None or state is None or not ok:
            return None
        return entry.person, state
