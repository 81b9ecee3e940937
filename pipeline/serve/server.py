"""Run ``campaign serve``: the WSGI app of [`pipeline.serve.app`][pipeline.serve.app] in waitress (threaded).

Before anything is served (each a [`ServeError`][pipeline.serve.server.ServeError], exit status 2, nothing
written but the lock file):

* the campaign directory must exist and be complete: ``campaign.json`` readable, ``phase1/`` present,
  the users file ``access/users.json`` present;
* one ``serve`` per campaign: an exclusive ``flock`` on ``CAMPAIGN_DIR/locks/serve.lock`` (held until the
  process ends, released by the kernel even after a crash);
* the port must be in 0..65535 and free (the socket is bound before the server starts);
* an address other than loopback is bound only with a trusted proxy or ``public`` (the campaign must
  then be reached through TLS).

It binds 127.0.0.1 unless told otherwise (remote annotators reach it through a TLS reverse proxy), stops
cleanly on SIGTERM or Ctrl-C, and picks up new people (the users file is reread when it changes) and new
collections (looked up per request) without a restart.

What waitress itself does for the campaign (its own features, configured here):

* **The proxy in front.** With ``trusted_proxy`` (the proxy's address), waitress takes the client's
  address from the last ``X-Forwarded-For`` entry and the scheme from ``X-Forwarded-Proto`` of requests
  coming from that address only (``REMOTE_ADDR`` and ``wsgi.url_scheme``, all the app reads); those
  headers are removed from every other request.
* **Host names.** A request whose ``Host`` is not one of the server's names
  ([`default_server_names`][pipeline.serve.server.default_server_names] unless given) is answered 400
  before the app runs; the app's Origin check compares against the same names.
* **Its own answers.** The 400, 413, 431 and 500 answers waitress writes itself carry the app's security
  headers (``SECURITY_HEADERS`` of [`pipeline.serve.app`][pipeline.serve.app]); a body over the limit is read to
  its end and dropped before the 413 is sent, so the client receives the answer instead of a reset
  connection.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import BaseWSGIServer, create_server
from waitress.task import ErrorTask
from waitress.utilities import RequestEntityTooLarge, RequestHeaderFieldsTooLarge

from pipeline import durable
from pipeline.campaign.layout import (
    ACCESS_DIR,
    LOCKS_DIR,
    PHASE1_DIR,
    SERVE_LOCK,
    USERS_FILE,
    CampaignError,
    read_campaign,
)
from pipeline.serve.app import SECURITY_HEADERS, ServeApp

log = logging.getLogger(__name__)

PROXY_HEADERS = frozenset({"x-forwarded-for", "x-forwarded-proto"})
"""The headers waitress takes from the trusted proxy (the client's address and the scheme)."""
MAX_PORT = 65535


class ServeError(Exception):
    """The server cannot start; the message says why (exit status 2)."""


def check_port(port: int) -> int:
    """Check a TCP port number.

    Args:
        port: The port (0: any free port).

    Returns:
        ``port``.

    Raises:
        ServeError: If it is not in 0..65535 (the kernel would silently take it modulo 65536).
    """
    if not 0 <= port <= MAX_PORT:
        raise ServeError(f"--port {port}: a port is a number from 0 to {MAX_PORT}")
    return port


def is_loopback(host: str) -> bool:
    """Tell whether an address to bind is on the loopback interface only.

    Args:
        host: An IP address or a host name (a name is resolved: all its addresses must be loopback).

    Returns:
        True for ``127.0.0.0/8``, ``::1`` and names resolving to those only.
    """
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def check_trusted_proxy(address: str) -> str:
    """Check the address given as the trusted proxy's.

    Args:
        address: The proxy's IP address, as it connects to this server (``127.0.0.1`` on the same host).

    Returns:
        The address, normalized (waitress compares it to the connection's peer address).

    Raises:
        ServeError: If it is not an IP address.
    """
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        raise ServeError(f"--trusted-proxy {address!r}: give the proxy's IP address, "
                         "as in --trusted-proxy 127.0.0.1") from None


def host_with_port(host: str, port: int) -> str:
    """Write ``host:port`` as a ``Host`` header does (an IPv6 address in brackets).

    Args:
        host: An address or a name.
        port: The port.

    Returns:
        ``host:port`` or ``[v6]:port``.
    """
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def default_server_names(host: str, port: int) -> tuple[str, ...]:
    """The server's names when none is given: the bound address and ``localhost``, with the port.

    Args:
        host: The bound address.
        port: The bound port.

    Returns:
        The names, lower-case, as a ``Host`` header carries them.
    """
    names = [host_with_port(host, port).lower(), f"localhost:{port}"]
    return tuple(dict.fromkeys(names))


class HostCheck:
    """WSGI middleware: a request whose ``Host`` is not one of the server's names gets 400, unseen by the app.

    Args:
        app: The application.
        names: The accepted ``Host`` values (compared lower-case).

    Attributes:
        app: As given.
        names: As given, lower-case.
    """

    def __init__(self, app: Any, names: Iterable[str]) -> None:
        self.app = app
        self.names = frozenset(n.lower() for n in names)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Answer 400 for another ``Host``, else pass the request to the app.

        Args:
            environ: The WSGI environment.
            start_response: The WSGI ``start_response`` callable.

        Returns:
            The answer's body.
        """
        host = str(environ.get("HTTP_HOST", "")).lower()
        if host not in self.names:
            log.warning("request refused: Host %s is not one of this server's names (--server-name)",
                        ascii(host[:100]))
            body = b"unknown host name\n"
            start_response("400 Bad Request", [("Content-Type", "text/plain; charset=utf-8"),
                                               ("Content-Length", str(len(body))), ("Cache-Control", "no-store"),
                                               *SECURITY_HEADERS])
            return [body]
        result: Iterable[bytes] = self.app(environ, start_response)
        return result


class _Sink:
    """A body buffer that keeps nothing (a too-large chunked body read to its end)."""

    def __init__(self) -> None:
        self.size = 0

    def append(self, data: bytes) -> None:
        self.size += len(data)

    def __len__(self) -> int:
        return self.size


class _Parser(HTTPRequestParser):  # type: ignore[misc]
    """waitress's parser, reading what is over a limit to its end (and dropping it) before the error is sent.

    waitress stops reading at its limit (a body's, or the headers') and closes the connection after its
    413 or 431: the kernel then resets the connection over the unread bytes, and the client, still
    sending, never reads the answer.  Here the rest of the body (fixed length or chunked), or of the
    headers, is read and dropped first; nothing of it is kept.
    """

    completed: bool
    _left: int | None = None  # bytes of a fixed-length body still to drop
    _tail = b""  # the last bytes of too-large headers, to find their end across reads
    _draining = ""  # what is being dropped: "", "body" or "headers"

    def received(self, data: bytes) -> int:
        if self._draining == "body":
            return self._drain_body(data)
        if self._draining == "headers":
            return self._drain_headers(data)
        before = bytes(self.header_plus[-3:])
        consumed = int(super().received(data))
        if not self.completed or self.expect_continue:
            return consumed  # a client waiting for "100 Continue" sends no body: answer at once
        if isinstance(self.error, RequestEntityTooLarge):
            if self.chunked and self.body_rcv is not None and not self.body_rcv.completed:
                self.body_rcv.buf = _Sink()
                self._draining, self.completed = "body", False
            elif not self.chunked and self.content_length > 0 and self.body_bytes_received == 0:
                self._left = self.content_length
                self._draining, self.completed = "body", False
        elif isinstance(self.error, RequestHeaderFieldsTooLarge) and not self.headers_finished:
            seen = before + data[:consumed]
            if b"\r\n\r\n" not in seen:
                self._tail = seen[-3:]
                self._draining, self.completed = "headers", False
        return consumed

    def _drain_body(self, data: bytes) -> int:
        if self._left is not None:
            n = min(len(data), self._left)
            self._left -= n
            done = self._left == 0
        else:
            n = int(self.body_rcv.received(data))
            done = bool(self.body_rcv.completed or self.body_rcv.error) or n == 0
        if done:
            self._draining, self.completed = "", True
        return n

    def _drain_headers(self, data: bytes) -> int:
        seen = self._tail + data
        end = seen.find(b"\r\n\r\n")
        if end < 0:
            self._tail = seen[-3:]
            return len(data)
        self._draining, self.completed = "", True
        return end + 4 - len(self._tail)


class _ErrorTask(ErrorTask):  # type: ignore[misc]
    """waitress's own error answers (400, 413, 431, 500), with the app's security headers."""

    def execute(self) -> None:
        self.response_headers.extend(SECURITY_HEADERS)
        super().execute()


class _Channel(HTTPChannel):  # type: ignore[misc]
    parser_class = _Parser
    error_task_class = _ErrorTask


def check_campaign(campaign_dir: Path) -> Path:
    """Check that a campaign directory is complete enough to serve.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        The resolved campaign directory.

    Raises:
        ServeError: If it does not exist, its ``campaign.json`` cannot be read, it has no ``phase1/``,
            or no users file (``access/users.json``).
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
    if not (root / ACCESS_DIR / USERS_FILE).is_file():
        raise ServeError(f"{root / ACCESS_DIR / USERS_FILE}: no users file; create the campaign's users first "
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
        if not durable.flock(fd, blocking=False):
            other = os.read(fd, 64).decode("ascii", "replace").strip()
            os.close(fd)
            raise ServeError(f"{self.path.parent.parent}: another campaign serve is running on this campaign "
                             f"(pid {other or 'unknown'}); stop it first") from None
        durable.write_lock_note(fd, f"{os.getpid()}\n".encode("ascii"))
        self.fd = fd

    def release(self) -> None:
        """Release the lock (closing the file); nothing happens if it is not held."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def make_server(app: ServeApp, host: str, port: int, threads: int = 8, *, trusted_proxy: str | None = None,
                server_names: Sequence[str] = ()) -> Any:
    """Create a waitress server for the app, bound to ``host:port`` (not yet running).

    Tracebacks are not exposed, proxy headers are taken from ``trusted_proxy`` only (and removed from
    every other request), the request body is limited to the app's ``max_body`` plus 64 KiB, a ``Host``
    that is not one of the server's names gets 400 ([`HostCheck`][pipeline.serve.server.HostCheck]), and
    waitress's own answers carry the security headers (see the module docstring).  The app's
    ``server_names`` are set to the server's names, for its Origin check.

    Args:
        app: The WSGI application.
        host: The address to bind.
        port: The port to bind (0: any free port).
        threads: Worker threads.
        trusted_proxy: The reverse proxy's IP address, or None (no proxy header is trusted).
        server_names: The ``Host`` values accepted (``name`` or ``name:port``); empty for
            [`default_server_names`][pipeline.serve.server.default_server_names] with the bound port.

    Returns:
        The waitress server.

    Raises:
        ServeError: If the port is out of range or taken, the address cannot be bound, or
            ``trusted_proxy`` is not an IP address.
    """
    check_port(port)
    proxy: dict[str, Any] = {}
    if trusted_proxy is not None:
        proxy = {"trusted_proxy": check_trusted_proxy(trusted_proxy), "trusted_proxy_count": 1,
                 "trusted_proxy_headers": set(PROXY_HEADERS)}
    check = HostCheck(app, ())
    try:
        server = create_server(check, host=host, port=port, threads=threads, ident="pgx-corpus",
                               expose_tracebacks=False, clear_untrusted_proxy_headers=True,
                               max_request_body_size=app.max_body + 65536, **proxy)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(f"port {port} on {host} is already in use; choose another with --port") from exc
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    listeners = [server] if isinstance(server, BaseWSGIServer) else [
        s for s in server.map.values() if isinstance(s, BaseWSGIServer)]
    for listener in listeners:
        listener.channel_class = _Channel
    names = tuple(n.lower() for n in server_names) or tuple(dict.fromkeys(
        n for listener in listeners for n in default_server_names(host, int(listener.effective_port))))
    check.names = frozenset(names)
    app.server_names = names
    return server


def serve(campaign_dir: Path, host: str = "127.0.0.1", port: int = 8001, *, secure_cookies: bool = False,
          trusted_proxy: str | None = None, public: bool = False, server_names: Sequence[str] = (),
          threads: int = 8, ready: Callable[[str, int], None] | None = None) -> int:
    """Serve the campaign until SIGTERM or Ctrl-C.

    Checks the campaign ([`check_campaign`][pipeline.serve.server.check_campaign]), takes the
    one-serve lock ([`ServeLock`][pipeline.serve.server.ServeLock]), binds the port, then runs
    waitress; the lock is released when it stops.  Start and stop are logged at INFO.

    Args:
        campaign_dir: The campaign directory.
        host: The address to bind (loopback by default: remote annotators go through a TLS proxy).
        port: The port to bind (0: any free port, given to ``ready``).
        secure_cookies: Mark session cookies ``Secure`` (served behind TLS).
        trusted_proxy: The IP address of the reverse proxy in front, whose ``X-Forwarded-For`` and
            ``X-Forwarded-Proto`` waitress takes; None for none.
        public: Allow binding an address other than loopback without a trusted proxy.
        server_names: The ``Host`` values accepted; empty for the default
            ([`default_server_names`][pipeline.serve.server.default_server_names]).
        threads: waitress worker threads.
        ready: Called with the host and the bound port once the socket is bound, before serving.

    Returns:
        0 once stopped.

    Raises:
        ServeError: Before anything is served, if the port is out of range, the proxy's address is not an
            IP address, a non-loopback address is asked for without ``trusted_proxy`` or ``public``, the
            campaign is incomplete, another serve holds its lock, or the port cannot be bound.
    """
    check_port(port)
    if trusted_proxy is not None:
        trusted_proxy = check_trusted_proxy(trusted_proxy)
    if not is_loopback(host) and trusted_proxy is None and not public:
        raise ServeError(f"--host {host} is not a loopback address: the campaign must be reached through a TLS "
                         "reverse proxy; give its address with --trusted-proxy ADDRESS (or --public to bind it "
                         "anyway)")
    root = check_campaign(campaign_dir)
    lock = ServeLock(root)
    lock.acquire()
    try:
        app = ServeApp(root, secure_cookies=secure_cookies)
        server = make_server(app, host, port, threads, trusted_proxy=trusted_proxy, server_names=server_names)
        bound_port = int(server.effective_port)
        stop = _install_stop_handlers()
        log.info("serving %s on http://%s:%d/ with %d threads (names %s; trusted proxy %s)", root, host, bound_port,
                 threads, ", ".join(app.server_names), trusted_proxy or "none")
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
