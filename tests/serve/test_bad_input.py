"""Bad input gets a clear answer, a log line without secrets, and changes no byte; a server that cannot
start says why before anything starts.

Covers: pipeline.campaign.users, pipeline.cli, pipeline.cli.serve_commands, pipeline.serve.app, pipeline.serve.server,
pipeline.serve.sessions
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.serve.app import ServeApp
from pipeline.serve.server import ServeError, ServeLock, check_campaign, serve
from pipeline.serve.sessions import SessionStore
from tests.serve.builders import Client, Demo, build_served_campaign, tree_digest

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def demo(tmp_path: Path) -> Demo:
    return build_served_campaign(tmp_path)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def assert_no_secret(demo: Demo, text: str) -> None:
    for password in demo.passwords.values():
        assert password not in text


def test_wrong_password_then_throttled(demo: Demo, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    clock = Clock()
    app = ServeApp(demo.root, sessions=SessionStore(max_failures=3, base_delay=10, clock=clock))
    client = Client(app)
    before = tree_digest(demo.root)
    for _ in range(3):  # the third failure starts the backoff
        reply = client.login("alice", "not-her-password")
        assert reply.json["exception"] == "invalidAuth" and reply.messages == ["Incorrect login and/or password"]
        assert client.cookie is None
    reply = client.login("alice", demo.passwords["alice"])  # the right password, but during the wait
    assert reply.json["exception"] == "invalidAuth" and "Too many failed logins" in reply.messages[0]
    assert client.cookie is None
    assert tree_digest(demo.root) == before
    assert "login of 'alice' from 127.0.0.1 failed" in caplog.text
    assert "not-her-password" not in caplog.text
    assert_no_secret(demo, caplog.text)
    clock.now += 10.5  # the wait is over: the right password is checked again
    assert not client.login("alice", demo.passwords["alice"]).json.get("exception")


def test_throttle_backoff_doubles_per_address_and_expiry(demo: Demo) -> None:
    clock = Clock()
    store = SessionStore(max_failures=2, address_failures=2, base_delay=10, max_delay=35, forget=600, idle=100,
                         lifetime=1000, clock=clock)
    app = ServeApp(demo.root, sessions=store)
    client = Client(app)
    client.login("nobody1", "x")
    client.login("nobody2", "x")  # the second failure of the address: 10 s to wait
    assert "Too many failed logins" in client.login("bob", demo.passwords["bob"]).messages[0]
    clock.now += 10.5
    assert client.login("nobody3", "x").messages == ["Incorrect login and/or password"]  # the third: 20 s
    clock.now += 10.5
    assert "Too many failed logins" in client.login("bob", demo.passwords["bob"]).messages[0]
    clock.now += 10
    assert client.login("nobody4", "x").messages == ["Incorrect login and/or password"]  # 40 s, capped at 35
    clock.now += 34
    assert "Too many failed logins" in client.login("bob", demo.passwords["bob"]).messages[0]
    clock.now += 1.5
    assert not client.login("bob", demo.passwords["bob"]).json.get("exception")
    assert client.ajax("whoami").json["user"] == "bob"
    clock.now += 101  # idle too long: the session has expired
    assert client.ajax("whoami").json["user"] is None
    reply = client.ajax("getDocument", collection="/phase1/bob/", document=demo.editable["bob"])
    assert reply.refused and reply.messages == ["Log in first (Login button, top right)."]
    clock.now += 600  # forgotten: the address has its free failures again
    client.login("nobody6", "x")
    assert not client.login("bob", demo.passwords["bob"]).json.get("exception")


def test_a_password_typed_as_the_user_name_is_not_logged(demo: Demo, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    client = Client(ServeApp(demo.root))
    assert client.login(demo.passwords["alice"], "alice").json["exception"] == "invalidAuth"
    assert "an unknown name" in caplog.text
    assert_no_secret(demo, caplog.text)


def test_new_people_and_collections_without_restart(demo: Demo) -> None:
    from pipeline.campaign.users import create_users

    app = ServeApp(demo.root)
    client = Client(app)
    client.login("bob", demo.passwords["bob"])
    assert client.ajax("whoami").json["user"] == "bob"
    password = create_users(demo.root, {"zoe": ["annotator", "senior"]})["zoe"]
    (demo.root / "phase1" / "zoe").mkdir()
    zoe = Client(app)
    assert not zoe.login("zoe", password).json.get("exception")
    # a collection is reached only once the campaign names its person (as the team commands do)
    assert zoe.ajax("getCollectionInformation", collection="/").json["items"] == []
    manifest = json.loads((demo.root / "campaign.json").read_text(encoding="utf-8"))
    manifest["people"].append({"id": "zoe", "role": "annotator", "phase1": True, "roster": True})
    (demo.root / "campaign.json").write_text(json.dumps(manifest) + "\n", encoding="utf-8")
    assert [i[2] for i in zoe.ajax("getCollectionInformation", collection="/").json["items"]] == ["phase1/zoe"]
    (demo.root / "phase2" / "zoe").mkdir()
    items = [i[2] for i in zoe.ajax("getCollectionInformation", collection="/").json["items"]]
    assert items == ["phase1/zoe", "phase2/zoe"]


def test_revoked_person_cannot_log_in(demo: Demo, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    client = Client(ServeApp(demo.root))
    reply = client.login("carol", demo.passwords["carol"])
    assert reply.json["exception"] == "invalidAuth" and client.cookie is None
    assert "login of 'carol' from 127.0.0.1 failed" in caplog.text
    assert_no_secret(demo, caplog.text)


@pytest.mark.parametrize("origin", [None, "http://evil.example", "https://localhost"])
def test_write_without_matching_origin(demo: Demo, origin: str | None, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    app = ServeApp(demo.root)
    client = Client(app)
    client.login("alice", demo.passwords["alice"])
    client.origin = origin
    before = tree_digest(demo.root)
    reply = client.ajax("createSpan", collection="/phase1/alice/", document=demo.editable["alice"],
                        offsets="[[9,14]]", type="Phenotype")
    assert reply.refused and "Origin does not match" in reply.messages[0]
    assert tree_digest(demo.root) == before
    assert "ajax createSpan refused for alice from 127.0.0.1: not a same-origin POST" in caplog.text


def test_write_by_get_is_refused(demo: Demo) -> None:
    client = Client(ServeApp(demo.root))
    client.login("alice", demo.passwords["alice"])
    before = tree_digest(demo.root)
    reply = client.request("GET", "/ajax.cgi", {"action": "createSpan", "collection": "/phase1/alice/",
                                                "document": demo.editable["alice"], "offsets": "[[9,14]]",
                                                "type": "Phenotype"})
    assert reply.refused and tree_digest(demo.root) == before


def test_unknown_action(demo: Demo, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    client = Client(ServeApp(demo.root))
    client.login("alice", demo.passwords["alice"])
    before = tree_digest(demo.root)
    reply = client.ajax("dropEverything", collection="/phase1/alice/")
    assert reply.refused and reply.messages == ["Unknown action dropEverything."]
    assert tree_digest(demo.root) == before
    assert "ajax dropEverything refused for alice" in caplog.text


def test_body_over_the_limit(demo: Demo, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    client = Client(ServeApp(demo.root, max_body=10_000))
    client.login("alice", demo.passwords["alice"])
    before = tree_digest(demo.root)
    reply = client.ajax("createComment", collection="/phase1/alice/", document=demo.editable["alice"], id="T1",
                        comment="x" * 20_000, type="AnnotatorNotes")
    assert reply.status.startswith("413") and "larger than 10000 bytes" in reply.messages[0]
    assert tree_digest(demo.root) == before
    assert "over the limit of 10000" in caplog.text and "xxxx" not in caplog.text


def test_save_the_parser_rejects_is_refused(demo: Demo) -> None:
    client = Client(ServeApp(demo.root))
    client.login("alice", demo.passwords["alice"])
    doc = demo.editable["alice"]
    before = tree_digest(demo.root)
    # brat trims the space at 14 off the span and would write the line 'T3 Phenotype 15 14'
    reply = client.ajax("createSpan", collection="/phase1/alice/", document=doc, offsets="[[14,15]]",
                        type="Phenotype")
    assert reply.json["exception"] == "annotationSaveRefused"
    assert f"{doc}.ann:3: cannot parse line" in reply.messages[0] and "previous version stays" in reply.messages[0]
    after = tree_digest(demo.root)
    assert {k: v for k, v in after.items() if not k.startswith("locks/")} == {
        k: v for k, v in before.items() if not k.startswith("locks/")}  # the lock file stays


# --- before anything starts ------------------------------------------------------------------------------

def test_missing_and_half_written_campaign(tmp_path: Path, demo: Demo) -> None:
    with pytest.raises(ServeError, match="no such campaign directory"):
        check_campaign(tmp_path / "nope")
    half = tmp_path / "half"
    half.mkdir()
    with pytest.raises(ServeError, match="no campaign manifest"):
        check_campaign(half)
    (demo.root / "access" / "users.json").rename(tmp_path / "users.json")
    with pytest.raises(ServeError, match="no users file"):
        check_campaign(demo.root)


def test_cli_errors_before_anything_starts(tmp_path: Path, demo: Demo, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["campaign", "serve", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip().startswith("pgx-corpus campaign serve: ")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        before = tree_digest(demo.root)
        assert cli.main(["campaign", "serve", str(demo.root), "--port", str(port)]) == 2
        err = capsys.readouterr().err
        assert f"port {port} on 127.0.0.1 is already in use" in err
        assert {k for k in tree_digest(demo.root) if k not in before} <= {"locks/serve.lock"}
    lock = ServeLock(demo.root)
    lock.acquire()
    try:
        with pytest.raises(ServeError, match="another campaign serve is running on this campaign"):
            serve(demo.root, port=0)
    finally:
        lock.release()


@pytest.mark.slow  # starts serve in a new interpreter
def test_serve_process_stops_cleanly_on_sigterm(demo: Demo) -> None:
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "campaign", "serve", str(demo.root), "--port", "0"],
                            cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        assert proc.stderr is not None
        while "serving" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
        assert "on http://127.0.0.1:" in line
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        second = subprocess.run([sys.executable, "-m", "pipeline", "campaign", "serve", str(demo.root), "--port",
                                 str(port + 1)], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and "another campaign serve is running" in second.stderr
        client = Client(None)
        del client
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            body = f"action=login&user=alice&password={demo.passwords['alice']}".encode()
            sock.sendall(b"POST /ajax.cgi HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: http://127.0.0.1:%d\r\n"
                         b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (port, port, len(body), body))
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert b"Hello, alice!" in answer and b"HttpOnly" in answer and b"SameSite=Strict" in answer
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "login alice from 127.0.0.1" in err and "stopped serving" in err
        assert_no_secret(demo, out + err + line)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
