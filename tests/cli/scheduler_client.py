"""Tests' settings of Luigi's scheduler client (``luigi.rpc.RemoteScheduler``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import luigi.configuration


@contextlib.contextmanager
def no_retry_wait() -> Iterator[None]:
    """The client's wait between its tries set to 0 s, for a test that reaches no scheduler.

    luigi.cfg's two tries stay (the second try still happens); only the 1 s between them, which tells a test
    nothing, goes.  The configuration's previous value is put back.
    """
    config = luigi.configuration.get_config()
    assert config.getint("core", "rpc_retry_attempts") == 2 and config.getint("core", "rpc_retry_wait") == 1, \
        "luigi.cfg's fail-fast client settings changed"
    config.set("core", "rpc_retry_wait", "0")
    try:
        yield
    finally:
        config.set("core", "rpc_retry_wait", "1")
