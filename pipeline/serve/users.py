"""People who may log in to ``campaign serve``: ``CAMPAIGN_DIR/access/users.json`` (mode 0600).

Minimal local version written by serve-core so that serve can be tested before serve-state's branch is
merged; serve-state owns this module and its version replaces this one (same signatures).

The file holds ``{"people": {id: {"roles": [...], "revoked": bool, "salt": hex, "hash": hex}}}``:
scrypt hashes only, never a password.  It lives outside every served directory.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ACCESS_DIR = "access"
USERS_FILE = "users.json"
ROLES = frozenset({"annotator", "senior", "manager"})
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}


@dataclass(frozen=True)
class Person:
    id: str
    roles: frozenset[str]  # subset of {"annotator", "senior", "manager"}
    revoked: bool = False


def users_path(campaign_dir: Path) -> Path:
    return Path(campaign_dir) / ACCESS_DIR / USERS_FILE


def _hash(password: str, salt: bytes) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, **_SCRYPT)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"people": {}}
    return data if isinstance(data, dict) and isinstance(data.get("people"), dict) else {"people": {}}


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class UserStore:
    """The people of a campaign, read from ``access/users.json`` (reloaded when the file changes)."""

    def __init__(self, campaign_dir: Path) -> None:
        self._path = users_path(campaign_dir)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._people: dict[str, Any] = {}
        self._dummy_salt = secrets.token_bytes(16)

    def _load(self) -> dict[str, Any]:
        with self._lock:
            try:
                st = self._path.stat()
                stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_ino)
            except FileNotFoundError:
                stamp = None
            if stamp != self._stamp:
                self._people = _read(self._path)["people"]
                self._stamp = stamp
            return self._people

    def get(self, person: str) -> Person | None:
        entry = self._load().get(person)
        if not isinstance(entry, dict):
            return None
        return Person(person, frozenset(entry.get("roles", ())) & ROLES, bool(entry.get("revoked", False)))

    def verify(self, person: str, password: str) -> Person | None:
        """The person when ``password`` is theirs and they are not revoked (same work when unknown)."""
        entry = self._load().get(person)
        if isinstance(entry, dict):
            salt, expected = bytes.fromhex(entry["salt"]), bytes.fromhex(entry["hash"])
        else:
            salt, expected = self._dummy_salt, b"\0" * _SCRYPT["dklen"]
        ok = hmac.compare_digest(_hash(password, salt), expected)
        found = self.get(person)
        if not ok or found is None or found.revoked:
            return None
        return found


def create_users(campaign_dir: Path, people: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Add people (id -> roles) or update their roles; one-time passwords of the people created now."""
    path = users_path(campaign_dir)
    data = _read(path)
    created: dict[str, str] = {}
    for person, roles in people.items():
        wanted = sorted(set(roles))
        if not set(wanted) <= ROLES:
            raise ValueError(f"{person}: unknown role(s) {sorted(set(wanted) - ROLES)}")
        entry = data["people"].get(person)
        if entry is None:
            password = secrets.token_urlsafe(12)
            salt = secrets.token_bytes(16)
            data["people"][person] = {"roles": wanted, "revoked": False, "salt": salt.hex(),
                                      "hash": _hash(password, salt).hex()}
            created[person] = password
        else:
            entry["roles"] = wanted
    _write(path, data)
    return created


def reset_password(campaign_dir: Path, person: str) -> str:
    path = users_path(campaign_dir)
    data = _read(path)
    if person not in data["people"]:
        raise KeyError(person)
    password = secrets.token_urlsafe(12)
    salt = secrets.token_bytes(16)
    data["people"][person].update(salt=salt.hex(), hash=_hash(password, salt).hex(), revoked=False)
    _write(path, data)
    return password


def revoke(campaign_dir: Path, person: str) -> None:
    path = users_path(campaign_dir)
    data = _read(path)
    if person not in data["people"]:
        raise KeyError(person)
    data["people"][person]["revoked"] = True
    _write(path, data)
