"""``pgx-corpus campaign serve CAMPAIGN_DIR``: the campaign's annotation server.

brat's web client, the project's logins and authorization; see [`pipeline.serve`][pipeline.serve].
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from pathlib import Path

from pipeline.cli.campaign_commands import add_campaign_command
from pipeline.cli.exitcodes import ExitCode
from pipeline.serve.server import ServeError


def run_serve(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign serve``: serve the campaign until SIGTERM or Ctrl-C.

    Prints the address on stderr once the port is bound
    ([`serve`][pipeline.serve.server.serve]).

    Args:
        args: The parsed arguments (``campaign_dir``, ``host``, ``port``, ``threads``, ``secure_cookies``,
            ``trusted_proxy``, ``public``, ``server_name``).

    Returns:
        ``ExitCode.OK`` stopped cleanly; ``ExitCode.REFUSED`` the old bare ``--trusted-proxy``, a missing or
            half-written campaign, no users file, a second serve on the campaign, a non-loopback address
            without ``--trusted-proxy ADDRESS`` or ``--public``, or the port in use (nothing started).
    """
    from pipeline.serve.server import is_loopback, serve

    if args.trusted_proxy is BARE:
        print("pgx-corpus campaign serve: --trusted-proxy now takes the proxy's address: --trusted-proxy ADDRESS "
              "(--trusted-proxy 127.0.0.1 for a proxy on this machine)", file=sys.stderr)
        return int(ExitCode.REFUSED)

    def ready(host: str, port: int) -> None:
        print(f"pgx-corpus campaign serve: serving {args.campaign_dir} on http://{host}:{port}/ "
              "(Ctrl-C or SIGTERM to stop)", file=sys.stderr, flush=True)
        if not is_loopback(host):
            print(f"pgx-corpus campaign serve: {host} is not loopback: the campaign must be reached through TLS "
                  "(an https reverse proxy in front), never by plain http", file=sys.stderr, flush=True)

    try:
        return serve(args.campaign_dir, args.host, args.port, secure_cookies=args.secure_cookies,
                     trusted_proxy=args.trusted_proxy, public=args.public, server_names=args.server_name or (),
                     threads=args.threads, ready=ready)
    except ServeError as exc:
        print(f"pgx-corpus campaign serve: {exc}", file=sys.stderr)
        return int(ExitCode.REFUSED)


BARE = "--trusted-proxy given without an address"
"""The value of a bare ``--trusted-proxy`` (its form before it took the proxy's address): refused."""


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0 to 65535)")
    return port


def _address(value: str) -> str:
    if value == BARE:
        return BARE  # argparse passes the constant of a bare flag through this too
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an IP address; give the proxy's address, as in "
                                         "--trusted-proxy 127.0.0.1") from None


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``campaign serve`` to the ``pgx-corpus`` parser.

    [`pipeline.cli.campaign_commands`][pipeline.cli.campaign_commands] must have created the ``campaign``
    group first.

    Handler: [`run_serve`][pipeline.cli.serve_commands.run_serve].

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = add_campaign_command(
        "serve",
        "serve the campaign in brat's own web client: each person logs in and reaches only their own "
        "collections (annotators phase1/<id>, seniors phase2/<id>, managers everything read-only); every save "
        "is journaled. Binds 127.0.0.1; put a TLS reverse proxy in front for remote annotators.",
    )
    p.add_argument("campaign_dir", type=Path, metavar="CAMPAIGN_DIR")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8001, help="port, 0 to 65535 (default 8001; 0: any free port)")
    p.add_argument("--threads", type=int, default=8, help="worker threads (default 8)")
    p.add_argument("--secure-cookies", action="store_true",
                   help="mark session cookies Secure (the server is reached through TLS)")
    p.add_argument("--trusted-proxy", nargs="?", const=BARE, type=_address, metavar="ADDRESS",
                   help="the IP address of the TLS reverse proxy in front (127.0.0.1 on this machine): waitress "
                   "takes the client's address and scheme from its X-Forwarded-For and X-Forwarded-Proto, "
                   "and from no one else")
    p.add_argument("--server-name", action="append", metavar="NAME",
                   help="a name this server answers to, as the Host header carries it (name or name:port; "
                   "repeatable; default the bound address and localhost, with the port): any other Host gets "
                   "400, and a change must come from a page of one of these names (its Origin)")
    p.add_argument("--public", action="store_true",
                   help="allow --host to be an address other than loopback without --trusted-proxy "
                   "(the campaign must still be reached through TLS)")
    p.set_defaults(func=run_serve)
