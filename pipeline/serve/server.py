"""Run ``campaign serve``: the WSGI app of [`pipeline.serve.app`][pipeline.serve.app] in waitress (threaded).

Before anything is served (each a [`ServeError`][pipeline.serve.server.ServeError], exit status 2, nothing
written but the lock file):

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
"""The lock file's name in the campaign's ``locks/`` directory."""
USERS_FILE = Path("access") / "users.json"
"""Where the campaign's users are, relative to the campaign directory (outside every served directory).

See [`pipeline.campaign.users`][pipeline.campaign.users].
"""


class ServeError(Exception):
    """The server cannot start; the message says why (exit status 2)."""


def check_campaign(campaign_dir: Path) -> Path:
    """Check that a campaign directory is complete enough to serve.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        The resolved campaign directory.

    Raises:
        ServeError: If it does not exist, its ``campaign.json`` cannot be read, it has no ``phase1/``,
            or no users file ([`USERS_FILE`][pipeline.serve.server.USERS_FILE]).
    """
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
    """The one-serve-per-campaign lock (``locks/serve.lock``).

    An exclusive ``flock`` held while the process runs (the kernel releases it even after a crash);
    the file holds the holder's pid, for the message of the next one.

    Args:
        campaign_dir: The campaign directory.

    Attributes:
        path: The lock file.
        fd: The open lock file while held, else None.
    """

    def __init__(self, campaign_dir: Path) -> None:
        self.path = campaign_dir / LOCKS_DIR / SERVE_LOCK
        self.fd: int | None = None

    def acquire(self) -> None:
        """Take the lock without waiting, creating ``locks/`` (0700) and the file (0600) if needed.

        Raises:
            ServeError: If another ``campaign serve`` holds it; the message gives its pid.
        """
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
        """Release the lock (closing the file); nothing happens if it is not held."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def make_server(app: ServeApp, host: str, port: int, threads: int = 8) -> Any:
    """Create a waitress server for the app, bound to ``host:port`` (not yet running).

    Tracebacks are not exposed, untrusted proxy headers are cleared, and the request body is limited
    to the app's ``max_body`` plus 64 KiB.

    Args:
        app: The WSGI application.
        host: The address to bind.
        port: The port to bind (0: any free port).
        threads: Worker threads.

    Returns:
        The waitress server.

    Raises:
        ServeError: If the port is taken or the address cannot be bound.
    """
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
    """Serve the campaign until SIGTERM or Ctrl-C.

    Checks the campaign ([`check_campaign`][pipeline.serve.server.check_campaign]), takes the
    one-serve lock ([`ServeLock`][pipeline.serve.server.ServeLock]), binds the port, then runs
    waitress; the lock is released when it stops.  Start and stop are logged at INFO.

    Args:
        campaign_dir: The campaign directory.
        host: The address to bind (loopback by default: remote annotators go through a TLS proxy).
        port: The port to bind (0: any free port, given to ``ready``).
        secure_cookies: Mark session cookies ``Secure`` (served behind TLS).
        trusted_proxy: Trust ``X-Forwarded-Proto``/``X-Forwarded-For`` from the proxy in front.
        threads: waitress worker threads.
        ready: Called with the host and the bound port once the socket is bound, before serving.

    Returns:
        0 once stopped.

    Raises:
        ServeError: Before anything is served, if the campaign is incomplete, another serve holds its
            lock, or the port cannot be bound.
    """
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
