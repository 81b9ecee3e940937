"""A live ``campaign serve`` app on a threaded waitress server (127.0.0.1, a free port), and an HTTP client
that keeps its cookies and sends the page's Origin as a browser does."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from typing import Any

from waitress import wasyncore

from pipeline.serve.app import ServeApp
from pipeline.serve.server import make_server


class LiveServer:
    def __init__(self, app: ServeApp, threads: int = 8, **server_kw: Any) -> None:
        self.app = app
        self.server = make_server(app, "127.0.0.1", 0, threads=threads, **server_kw)
        self.port = int(self.server.effective_port)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        # waitress's own loop, a pass at a time, ended by a flag rather than by a thunk sent through the
        # trigger pipe: stopping needs no descriptor, and the channels are closed by the loop's own thread
        # (no socket closed under its poll())
        channels = self.server._map
        adj = self.server.adj
        while not self._stop.is_set() and channels:
            wasyncore.loop(timeout=0.05, map=channels, use_poll=adj.asyncore_use_poll, count=1)
        for channel in list(channels.values()):
            channel.close()  # the server, its trigger and the connections

    def __enter__(self) -> LiveServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self.thread.join(timeout=10)
        self.server.task_dispatcher.shutdown()


class HttpClient:
    """One browser tab (or several sharing ``cookie``)."""

    def __init__(self, port: int, cookie: str | None = None, source: str | None = None) -> None:
        self.port = port
        self.cookie = cookie
        self.source = (source, 0) if source else None  # another loopback address (127.0.0.N): another client
        self.conn = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60, source_address=self.source)

    def ajax(self, action: str, **params: str) -> dict[str, Any]:
        body = urllib.parse.urlencode({"action": action, "protocol": "1", **params})
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://127.0.0.1:{self.port}"}
        if self.cookie:
            headers["Cookie"] = f"pgx_session={self.cookie}"
        try:
            self.conn.request("POST", "/ajax.cgi", body=body, headers=headers)
            resp = self.conn.getresponse()
        except (OSError, http.client.HTTPException):
            self.conn.close()  # a keep-alive connection the server dropped: once more on a new one
            self.conn = self._connect()
            self.conn.request("POST", "/ajax.cgi", body=body, headers=headers)
            resp = self.conn.getresponse()
        data = resp.read()
        for key, value in resp.getheaders():
            if key.lower() == "set-cookie" and value.startswith("pgx_session="):
                self.cookie = value.split(";", 1)[0].split("=", 1)[1] or None
        result: dict[str, Any] = json.loads(data)
        return result

    def login(self, user: str, password: str) -> dict[str, Any]:
        return self.ajax("login", user=user, password=password)

    def close(self) -> None:
        self.conn.close()
