"""A served campaign written with the project's own commands, and a small WSGI client.

``build_served_campaign`` makes: ``batches`` (alice, bob, carol annotators; dave senior), users
(alice, bob, carol annotators, dave senior, erin manager; carol then revoked), both annotators of one
document mark it Done and ``campaign review`` merges it into ``phase2/dave`` (read-only in phase 1 now),
dave signs it off (Done) and ``campaign finalize`` writes ``final/`` with it (read-only in phase 2 now),
then a second document is merged (editable by dave).  ``a..b_1`` (a name containing ``..``) is added to
alice's collection.  It is built once per test process and copied for each test (users' passwords are
hashed on purpose slowly: building it for every test took most of the fast loop's serve tests).
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import shutil
import tempfile
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.campaign.batches import prepare_batches
from pipeline.campaign.finalize import finalize
from pipeline.campaign.layout import read_campaign
from pipeline.campaign.review import review
from pipeline.campaign.users import create_users, revoke
from pipeline.schema import load_schema
from tests.campaign.test_campaign import make_collection

SCHEMA = load_schema()
PEOPLE = {"alice": ["annotator"], "bob": ["annotator"], "carol": ["annotator"], "dave": ["senior"],
          "erin": ["manager"]}
ORIGIN = "http://localhost"


@dataclass
class Demo:
    root: Path
    passwords: dict[str, str]
    finalized: str  # merged, then finalized (read-only to its annotators and to dave)
    merged: str  # merged, not finalized (read-only to its annotators, editable by dave)
    editable: dict[str, str]  # annotator -> a document of theirs not merged

    def files(self, person: str) -> list[str]:
        return sorted(p.stem for p in (self.root / "phase1" / person).glob("*.txt"))


def _mark_done(root: Path, person: str, name: str, phase: str = "phase1") -> None:
    ann = root / phase / person / f"{name}.ann"
    ann.write_text(ann.read_text(encoding="utf-8") + "T90\tDone 20 25\tlower\n", encoding="utf-8")


_TEMPLATE: list[tuple[Path, Demo]] = []


def build_served_campaign(tmp: Path) -> Demo:
    """The demo campaign in ``tmp`` (a copy of this process's template; ``tmp`` is new or empty)."""
    if not _TEMPLATE:
        base = Path(tempfile.mkdtemp(prefix="pgx-served-demo-"))
        atexit.register(shutil.rmtree, base, True)
        _TEMPLATE.append((base, _build_served_campaign(base)))
    base, demo = _TEMPLATE[0]
    shutil.copytree(base, tmp, symlinks=True, dirs_exist_ok=True)
    # the finalize record names FINAL by its absolute path: the copy's own
    record = tmp / "campaign" / "finalized.json"
    record.write_text(record.read_text(encoding="utf-8").replace(str(base), str(tmp)), encoding="utf-8")
    return Demo(tmp / "campaign", dict(demo.passwords), demo.finalized, demo.merged, dict(demo.editable))


def _build_served_campaign(tmp: Path) -> Demo:
    coll = make_collection(tmp / "coll")
    roster = tmp / "roster.csv"
    roster.write_text("id,role,phase1\nalice,annotator,yes\nbob,annotator,yes\ncarol,annotator,yes\n"
                      "dave,senior,no\n", encoding="utf-8")
    root = tmp / "campaign"
    prepare_batches(coll, roster, root, seed=5, counts=Counter())
    passwords = create_users(root, PEOPLE)
    revoke(root, "carol")
    docs = read_campaign(root)["documents"]
    pairs = [(d["document"], d["phase1"]) for d in docs if d["files"]]
    first, second = pairs[0], pairs[1]
    for person in first[1]:
        _mark_done(root, person, first[0])
    review(root, SCHEMA)
    _mark_done(root, "dave", first[0], "phase2")  # the senior signs it off: finalize takes it
    finalize(root, root / "final", SCHEMA)
    for person in second[1]:
        _mark_done(root, person, second[0])
    review(root, SCHEMA)
    merged = {first[0], second[0]}
    editable = {}
    for person in ("alice", "bob", "carol"):
        names = sorted(p.stem for p in (root / "phase1" / person).glob("*.txt") if p.stem not in merged)
        editable[person] = names[0]
    alice = root / "phase1" / "alice"
    for suffix in (".txt", ".ann"):
        shutil.copyfile(alice / f"{editable['alice']}{suffix}", alice / f"a..b_1{suffix}")
    return Demo(root, passwords, first[0], second[0], editable)


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256): a refused request must change none."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@dataclass
class Reply:
    status: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    @property
    def is_json(self) -> bool:
        return (self.header("Content-Type") or "").startswith("application/json")

    @property
    def refused(self) -> bool:
        return self.is_json and self.json.get("exception") is True

    @property
    def messages(self) -> list[str]:
        return [m[0] for m in self.json.get("messages", [])] if self.is_json else []


class Client:
    """Calls the WSGI app in process, keeping its session cookie like a browser."""

    def __init__(self, app: Any, origin: str | None = ORIGIN) -> None:
        self.app = app
        self.cookie: str | None = None
        self.origin = origin
        self.seen: list[bytes] = []  # every byte served (headers and bodies)

    def request(self, method: str, path: str, params: Mapping[str, str] | None = None, *,
                body: bytes | None = None, headers: Mapping[str, str] | None = None) -> Reply:
        data = body if body is not None else urllib.parse.urlencode(params or {}).encode()
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "localhost",
            "SERVER_PORT": "80", "HTTP_HOST": "localhost", "wsgi.url_scheme": "http", "REMOTE_ADDR": "127.0.0.1",
            "wsgi.input": io.BytesIO(data), "CONTENT_LENGTH": str(len(data)),
            "CONTENT_TYPE": "application/x-www-form-urlencoded",
        }
        if method == "GET" and params:
            environ["QUERY_STRING"] = urllib.parse.urlencode(params)
            environ["CONTENT_LENGTH"] = "0"
        if self.origin:
            environ["HTTP_ORIGIN"] = self.origin
        if self.cookie:
            environ["HTTP_COOKIE"] = f"pgx_session={self.cookie}"
        for key, value in (headers or {}).items():
            environ["HTTP_" + key.upper().replace("-", "_")] = value
        captured: dict[str, Any] = {}

        def start_response(status: str, hdrs: list[tuple[str, str]], exc_info: Any = None) -> None:
            captured["status"], captured["headers"] = status, hdrs

        chunks: Iterable[bytes] = self.app(environ, start_response)
        out = b"".join(chunks)
        reply = Reply(captured["status"], captured["headers"], out)
        for key, value in reply.headers:
            self.seen.append(f"{key}: {value}".encode())
            if key.lower() == "set-cookie" and value.startswith("pgx_session="):
                self.cookie = value.split(";", 1)[0].split("=", 1)[1] or None
        self.seen.append(out)
        return reply

    def ajax(self, action: str, **params: str) -> Reply:
        return self.request("POST", "/ajax.cgi", {"action": action, "protocol": "1", **params})

    def login(self, user: str, password: str) -> Reply:
        return self.ajax("login", user=user, password=password)
