"""What waitress answers itself, through the real server: its 400, 413 and 431 carry the security headers,
every oversized body is answered, a Host that is not one of the server's names gets 400 before the app
runs (and the Origin check uses those names), and the command line refuses a port out of range, the old
bare ``--trusted-proxy`` and a public address without a proxy or ``--public``.

Covers: pipeline.cli.serve_commands, pipeline.serve.app, pipeline.serve.server
"""

from __future__ import annotations

import http.client
import json
import logging
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.serve.app import SECURITY_HEADERS, ServeApp
from pipeline.serve.server import ServeError, serve
from tests.serve.builders import Demo, build_served_campaign, tree_digest
from tests.serve.live import HttpClient, LiveServer

PROJECT = Path(__file__).resolve().parents[2]
MAX_BODY = 4096


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return build_served_campaign(tmp_path_factory.mktemp("served"))


@pytest.fixture(scope="module")
def live(demo: Demo) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(demo.root, max_body=MAX_BODY)) as server:
        yield server


def raw(port: int, request: bytes, body_chunks: Iterator[bytes] | None = None) -> bytes:
    """Send bytes on a new connection and read the whole answer (the server closes after its error)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(request)
        for chunk in body_chunks or iter(()):
            sock.sendall(chunk)
        data = b""
        while True:
            got = sock.recv(65536)
            if not got:
                return data
            data += got


def head(answer: bytes) -> tuple[str, dict[str, str]]:
    lines = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return lines[0], headers


def assert_security_headers(headers: dict[str, str]) -> None:
    for key, value in SECURITY_HEADERS:
        assert headers.get(key.lower()) == value, (key, headers)


def test_waitress_400_and_431_carry_the_security_headers(live: LiveServer) -> None:
    status, headers = head(raw(live.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad header line\r\n\r\n"))
    assert status.split()[1] == "400"
    assert_security_headers(headers)
    big = b"X-Big: " + b"a" * 300_000 + b"\r\n"
    status, headers = head(raw(live.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + b"\r\n"))
    assert status.split()[1] == "431"
    assert_security_headers(headers)


@pytest.mark.parametrize("size", [MAX_BODY + 65536 + 1, 8 << 20])
def test_every_oversized_body_is_answered_413(live: LiveServer, demo: Demo, size: int) -> None:
    """Over waitress's limit (the app's ``max_body`` plus 64 KiB; under it, the app answers 413 itself):
    the client, sending the whole body before reading as http.client does, gets the answer, with the
    security headers, and no byte changes."""
    before = tree_digest(demo.root)
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=60)
    conn.request("POST", "/ajax.cgi", body=b"action=createSpan&x=" + b"a" * size,
                 headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": live.origin})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.status == 413
    assert_security_headers({k.lower(): v for k, v in resp.getheaders()})
    assert tree_digest(demo.root) == before


def test_an_oversized_chunked_body_is_answered_413(live: LiveServer) -> None:
    request = (f"POST /ajax.cgi HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\nTransfer-Encoding: chunked\r\n"
               "Content-Type: application/x-www-form-urlencoded\r\n\r\n").encode()
    chunk = b"%x\r\n%s\r\n" % (65536, b"a" * 65536)
    answer = raw(live.port, request, iter([chunk] * 64 + [b"0\r\n\r\n"]))
    status, headers = head(answer)
    assert status.split()[1] == "413"
    assert_security_headers(headers)


def test_another_host_gets_400_before_the_app(live: LiveServer, caplog: pytest.LogCaptureFixture) -> None:
    """A DNS-rebinding page (Origin and Host both the attacker's name) cannot log in, nor read anything."""
    caplog.set_level(logging.INFO)
    for path, host in (("/", "evil.example"), ("/ajax.cgi?action=whoami", f"evil.example:{live.port}"),
                       ("/", f"127.0.0.1:{live.port + 1}")):
        conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
        conn.request("GET", path, headers={"Host": host})
        resp = conn.getresponse()
        assert resp.status == 400 and resp.read() == b"unknown host name\n"
        assert_security_headers({k.lower(): v for k, v in resp.getheaders()})
        conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
    conn.request("POST", "/ajax.cgi", body="action=login&user=bob&password=x",
                 headers={"Host": f"evil.example:{live.port}", "Origin": f"http://evil.example:{live.port}",
                          "Content-Type": "application/x-www-form-urlencoded"})
    resp = conn.getresponse()
    assert resp.status == 400 and "set-cookie" not in {k.lower() for k, _ in resp.getheaders()}
    assert "login of" not in caplog.text  # the app never saw it
    for host in (f"127.0.0.1:{live.port}", f"localhost:{live.port}"):  # the default names
        conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
        conn.request("GET", "/", headers={"Host": host})
        assert conn.getresponse().status == 200
        conn.close()


def test_origin_is_checked_against_the_server_names(demo: Demo) -> None:
    app = ServeApp(demo.root)
    with LiveServer(app, server_names=["annotate.example.org"]) as server:
        assert app.server_names == ("annotate.example.org",)

        def login(host: str, origin: str) -> tuple[int, dict[str, object] | None]:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            conn.request("POST", "/ajax.cgi", body=f"action=login&user=bob&password={demo.passwords['bob']}",
                         headers={"Host": host, "Origin": origin,
                                  "Content-Type": "application/x-www-form-urlencoded"})
            resp = conn.getresponse()
            data = resp.read()
            conn.close()
            return resp.status, (None if resp.status != 200 else json.loads(data))

        status, _ = login(f"127.0.0.1:{server.port}", f"http://127.0.0.1:{server.port}")
        assert status == 400  # not one of the names given
        status, answer = login("annotate.example.org", "http://annotate.example.org")
        assert status == 200 and answer is not None and not answer.get("exception")
        status, answer = login("annotate.example.org", "http://other.example.org")
        assert status == 200 and answer is not None and answer.get("exception")


def test_forwarded_headers_from_anyone_but_the_proxy_are_ignored(demo: Demo,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """Without --trusted-proxy (or from another address than the proxy's), X-Forwarded-* change nothing:
    neither the logged address nor the scheme (no Secure cookie, an https Origin refused)."""
    caplog.set_level(logging.INFO)
    for kw in ({}, {"trusted_proxy": "127.0.0.9"}):
        app = ServeApp(demo.root)
        with LiveServer(app, **kw) as server:
            client = HttpClient(server.port)
            headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": server.origin,
                       "X-Forwarded-For": "10.1.2.3", "X-Forwarded-Proto": "https"}
            client.conn.request("POST", "/ajax.cgi", body=f"action=login&user=bob&password={demo.passwords['bob']}",
                                headers=headers)
            resp = client.conn.getresponse()
            resp.read()
            cookie = resp.getheader("Set-Cookie") or ""
            assert cookie.startswith("pgx_session=") and "secure" not in cookie.lower()
            client.close()
    assert "10.1.2.3" not in caplog.text
    assert "login bob from 127.0.0.1" in caplog.text


def serve_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``campaign serve`` in a process of its own: one that started serving would never return."""
    return subprocess.run([sys.executable, "-m", "pipeline", "campaign", "serve", *args], cwd=PROJECT,
                          capture_output=True, text=True, timeout=60)


def test_cli_refuses_a_port_out_of_range(demo: Demo) -> None:
    before = tree_digest(demo.root)
    done = serve_cli(str(demo.root), "--port", "99999")  # the kernel would take it modulo 65536
    assert done.returncode == 2 and "99999 is not a port" in done.stderr
    with pytest.raises(ServeError, match="a port is a number from 0 to 65535"):
        serve(demo.root, port=65536)
    assert tree_digest(demo.root) == before


def test_cli_refuses_the_bare_trusted_proxy_flag(demo: Demo) -> None:
    before = tree_digest(demo.root)
    done = serve_cli(str(demo.root), "--port", "0", "--trusted-proxy")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "--trusted-proxy ADDRESS" in done.stderr and "--trusted-proxy 127.0.0.1" in done.stderr
    done = serve_cli(str(demo.root), "--port", "0", "--trusted-proxy", "proxy.example")
    assert done.returncode == 2 and "--trusted-proxy 127.0.0.1" in done.stderr
    assert tree_digest(demo.root) == before


def test_a_public_address_needs_a_proxy_or_public(demo: Demo) -> None:
    before = tree_digest(demo.root)
    done = serve_cli(str(demo.root), "--port", "0", "--host", "0.0.0.0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "--trusted-proxy ADDRESS" in done.stderr and "--public" in done.stderr
    assert tree_digest(demo.root) == before


@pytest.mark.parametrize("flags", [
    ["--public"],
    # a second serve process (2-4 s) for the same message: out of the everyday loop, in make test and CI
    pytest.param(["--trusted-proxy", "127.0.0.1"], marks=pytest.mark.slow),
])
def test_a_public_address_prints_that_tls_is_needed(demo: Demo, flags: list[str]) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "campaign", "serve", str(demo.root), "--port", "0",
                             "--host", "0.0.0.0", *flags], cwd=PROJECT, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline() for _ in range(2)]
        while "(Ctrl-C or SIGTERM to stop)" not in lines[-2] and lines[-1]:  # log lines may come first
            lines.append(proc.stderr.readline())
        assert "on http://0.0.0.0:" in lines[-2], lines
        assert "must be reached through TLS" in lines[-1], lines
    finally:
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == 0
