"""``pgx-corpus campaign serve CAMPAIGN_DIR``: the campaign's annotation server.

brat's web client, the project's logins and authorization; see [`pipeline.serve`][pipeline.serve].
"""

from __future__ import annotations

import argparse
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
            ``trusted_proxy``).

    Returns:
        ``ExitCode.OK`` stopped cleanly; ``ExitCode.REFUSED`` a missing or half-written campaign, no users
            file, a second serve on the campaign, or the port in use (nothing started).
    """
    from pipeline.serve.server import serve

    def ready(host: str, port: int) -> None:
        print(f"pgx-corpus campaign serve: serving {args.campaign_dir} on http://{host}:{port}/ "
              "(Ctrl-C or SIGTERM to stop)", file=sys.stderr, flush=True)

    try:
        return serve(args.campaign_dir, args.host, args.port, secure_cookies=args.secure_cookies,
                     trusted_proxy=args.trusted_proxy, threads=args.threads, ready=ready)
    except ServeError as exc:
        print(f"pgx-corpus campaign serve: {exc}", file=sys.stderr)
        return int(ExitCode.REFUSED)


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
    p.add_argument("--port", type=int, default=8001, help="port (default 8001)")
    p.add_argument("--threads", type=int, default=8, help="worker threads (default 8)")
    p.add_argument("--secure-cookies", action="store_true",
                   help="mark session cookies Secure (the server is reached through TLS)")
    p.add_argument("--trusted-proxy", action="store_true",
                   help="trust X-Forwarded-Proto/-For from the reverse proxy in front (only behind one)")
    p.set_defaults(func=run_serve)
