"""``campaign serve`` behind a real TLS reverse proxy: Debian's nginx, run by the test on loopback ports
with its own configuration in a temporary directory, as the serve how-to sets it up, in front of the real
waitress server with ``--trusted-proxy 127.0.0.1``.

Clients connect to nginx from distinct loopback addresses (127.0.0.2, 127.0.0.3): the login throttle is
per client, the log names each client, and the session cookie is ``Secure`` (the scheme is https from
the proxy's ``X-Forwarded-Proto``, without ``--secure-cookies``).

Covers: pipeline.serve.app
"""

from __future__ import annotations

import http.client
import json
import logging
import shutil
import socket
import ssl
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.serve.app import ServeApp
from tests.serve.builders import Demo, build_served_campaign, tree_digest
from tests.serve.live import LiveServer

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
OPENSSL = shutil.which("openssl")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(NGINX).is_file(), reason="nginx is not installed (apt-get install nginx; .ci/run "
                       "installs it)"),
    pytest.mark.skipif(OPENSSL is None, reason="openssl (the command) is needed for the proxy's test certificate"),
]

NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port} ssl;
        server_name 127.0.0.1;
        ssl_certificate {tmp}/cert.pem;
        ssl_certificate_key {tmp}/key.pem;
        client_max_body_size 10m;
        location / {{
            proxy_pass http://127.0.0.1:{backend};
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Proxy:
    """nginx terminating TLS on ``127.0.0.1:port`` in front of waitress on ``backend``."""

    def __init__(self, tmp: Path, backend: int, port: int) -> None:
        self.tmp, self.port = tmp, port
        assert OPENSSL is not None
        subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "cert.pem")],
                       check=True, capture_output=True)
        (tmp / "nginx.conf").write_text(NGINX_CONF.format(tmp=tmp, port=port, backend=backend), encoding="utf-8")
        self.proc = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e",
                                      str(tmp / "error.log")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    self.stop()
                    raise RuntimeError(f"nginx did not start: {err}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Browser:
    """An https client from one loopback address, through the proxy, sending the page's Origin."""

    def __init__(self, proxy: Proxy, address: str) -> None:
        self.proxy, self.address = proxy, address
        self.cookie: str | None = None
        self.set_cookie = ""

    @property
    def origin(self) -> str:
        return f"https://127.0.0.1:{self.proxy.port}"

    def ajax(self, action: str, **params: str) -> dict[str, Any]:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the test's own self-signed certificate
        conn = http.client.HTTPSConnection("127.0.0.1", self.proxy.port, timeout=60, context=context,
                                           source_address=(self.address, 0))
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": self.origin}
        if self.cookie:
            headers["Cookie"] = f"pgx_session={self.cookie}"
        conn.request("POST", "/ajax.cgi", body=urllib.parse.urlencode({"action": action, "protocol": "1", **params}),
                     headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        assert resp.status == 200, (resp.status, data[:200])
        cookie = resp.getheader("Set-Cookie")
        if cookie and cookie.startswith("pgx_session="):
            self.set_cookie = cookie
            self.cookie = cookie.split(";", 1)[0].split("=", 1)[1] or None
        result: dict[str, Any] = json.loads(data)
        return result


@pytest.fixture()
def proxied(tmp_path: Path) -> Iterator[tuple[Demo, Proxy]]:
    demo = build_served_campaign(tmp_path / "served")
    port = free_port()
    with LiveServer(ServeApp(demo.root), trusted_proxy="127.0.0.1",
                    server_names=[f"127.0.0.1:{port}"]) as live:
        (tmp_path / "nginx").mkdir()
        proxy = Proxy(tmp_path / "nginx", live.port, port)
        try:
            yield demo, proxy
        finally:
            proxy.stop()


def test_behind_nginx_the_throttle_and_the_log_are_per_client_and_cookies_secure(
        proxied: tuple[Demo, Proxy], caplog: pytest.LogCaptureFixture) -> None:
    demo, proxy = proxied
    caplog.set_level(logging.INFO)
    before = tree_digest(demo.root)
    attacker, bob = Browser(proxy, "127.0.0.2"), Browser(proxy, "127.0.0.3")
    throttled = False
    for i in range(40):  # failures from one client, until it is throttled
        reply = attacker.ajax("login", user=f"nobody{i}", password="wrong")
        assert reply.get("exception") == "invalidAuth"
        if "Too many" in reply["messages"][0][0]:
            throttled = True
            break
    assert throttled
    # another client, behind the same proxy, is not throttled: bob logs in, over https
    reply = bob.ajax("login", user="bob", password=demo.passwords["bob"])
    assert not reply.get("exception"), reply
    assert bob.cookie and "; secure" in bob.set_cookie.lower()
    assert bob.ajax("whoami")["user"] == "bob"
    # the log names each client, not the proxy
    logins = [r.getMessage() for r in caplog.records if "login" in r.getMessage()]
    assert any("127.0.0.2" in m and "failed" in m for m in logins), logins
    assert any("bob" in m and "127.0.0.3" in m and "failed" not in m for m in logins), logins
    assert not any("127.0.0.1" in m for m in logins), logins
    # a write from the https page passes the Origin check (the scheme is the proxy's)
    assert bob.ajax("logout").get("exception") is None
    assert tree_digest(demo.root) == before


def test_behind_nginx_a_forged_forwarded_for_is_not_the_client(proxied: tuple[Demo, Proxy],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """The client's own X-Forwarded-For is kept by nginx before the address it adds; waitress takes the
    last one only (trusted_proxy_count 1)."""
    demo, proxy = proxied
    caplog.set_level(logging.INFO)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", proxy.port, timeout=60, context=context,
                                       source_address=("127.0.0.4", 0))
    conn.request("POST", "/ajax.cgi", body="action=login&user=bob&password=wrong",
                 headers={"Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": "10.6.6.6",
                          "Origin": f"https://127.0.0.1:{proxy.port}"})
    assert conn.getresponse().status == 200
    conn.close()
    failed = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert failed and all("127.0.0.4" in m and "10.6.6.6" not in m for m in failed), failed
