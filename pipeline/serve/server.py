"""Run ``campaign serve``: the WSGI app of :mod:`pipeline.serve.app` in waitress (threaded).

Before anything is served (each a :class:`ServeError`, exit status 2, nothing written but the lock file):

* the campaign directory must exist and be complete: ``campaign.json`` readable, ``phase1/`` present,
  the users file ``access/users.json`` present;
* one ``serve`` per campaign: an exclusive ``flock`` on ``CAMPAIGN_DIR/locks/serve.lock`` (held until the
  process ends, released by the kernel even after a crash);
* the port must be free (the socket is bound before the server starts).

It binds 127.0.0.1 unless told otherwise (remote annotators reach it through a TLS reverse proxy), stops
cleanly on SIGTERM or Ctrl-C, and picks up new people (the users file is reread when it changes) and new
collections (looked up per request) without a restart.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from waitress.server import create_server

from pipeline.campaign.layout import PHASE1_DIR
from pipeline.campaign.locks import LOCKS_DIR
from pipeline.campaign.phase1 import CampaignError, read_campaign
from pipeline.serve.app import ServeApp

log = logging.getLogger(__name__)

SERVE_LOCK = "serve.lock"
#: where the campaign's users are (pipeline/campaign/users.py, outside every served directory)
USERS_FILE = Path("access") / "users.json"


class ServeError(Exception):
    """The server cannot start; the message says why (exit status 2)."""


def check_campaign(campaign_dir: Path) -> Path:
    """The resolved campaign directory; ServeError when it is missing or half-written."""
    root = Path(campaign_dir)
    if not root.is_dir():
        raise ServeError(f"{root}: no such campaign directory")
    try:
        read_campaign(root)
    except CampaignError as exc:
        raise ServeError(f"{exc} (a half-written campaign directory?)") from exc
    if not (root / PHASE1_DIR).is_dir():
        raise ServeError(f"{root}: no {PHASE1_DIR}/ directory (a half-written campaign directory?)")
    if not (root / USERS_FILE).is_file():
        raise ServeError(f"{root / USERS_FILE}: no users file; create the campaign's users first "
                         "(pgx-corpus campaign users)")
    return root.resolve()


class ServeLock:
    """The one-serve-per-campaign lock (``locks/serve.lock``)."""

    def __init__(self, campaign_dir: Path) -> None:
        self.path = campaign_dir / LOCKS_DIR / SERVE_LOCK
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 64).decode("ascii", "replace").strip()
            os.close(fd)
            raise ServeError(f"{self.path.parent.parent}: another campaign serve is running on this campaign "
                             f"(pid {other or 'unknown'}); stop it first") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def make_server(app: ServeApp, host: str, port: int, threads: int = 8) -> Any:
    """A waitress server bound to ``host:port``; ServeError when the port is taken."""
    try:
        return create_server(app, host=host, port=port, threads=threads, ident="pgx-corpus",
                             expose_tracebacks=False, clear_untrusted_proxy_headers=True,
                             max_request_body_size=app.max_body + 65536)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(f"port {port} on {host} is already in use; choose another with --port") from exc
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


def serve(campaign_dir: Path, host: str = "127.0.0.1", port: int = 8001, *, secure_cookies: bool = False,
          trusted_proxy: bool = False, threads: int = 8,
          ready: Callable[[str, int], None] | None = None) -> int:
    """Serve the campaign until SIGTERM or Ctrl-C; 0.  ServeError before anything starts."""
    root = check_campaign(campaign_dir)
    lock = ServeLock(root)
    lock.acquire()
    try:
        app = ServeApp(root, secure_cookies=secure_cookies, trusted_proxy=trusted_proxy)
        server = make_server(app, host, port, threads)
        bound_port = int(server.effective_port)
        stop = _install_stop_handlers()
        log.info("serving %s on http://%s:%d/ with %d threads", root, host, bound_port, threads)
        if ready is not None:
            ready(host, bound_port)
        try:
            server.run()
        finally:
            server.close()
            stop()
        log.info("stopped serving %s", root)
        return 0
    finally:
        lock.release()


def _install_stop_handlers() -> Callable[[], None]:
    """SIGTERM ends waitress's loop as Ctrl-C does (SystemExit, which waitress stops on); restore after."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_term(signum: int, frame: FrameType | None) -> None:
        log.info("SIGTERM: stopping")
        raise SystemExit(0)

    previous = signal.signal(signal.SIGTERM, on_term)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
