"""The one retry policy of the web clients (E-utilities, PubTator3).

A try that may succeed later raises [`Retryable`][pipeline.sources.retry.Retryable] (a timeout, a
connection error or a cut body, HTTP 429 or 5xx, an error in a 200 body).
[`RetryPolicy.call`][pipeline.sources.retry.RetryPolicy.call] makes up to ``max_tries`` tries and waits
between them with exponential backoff and "equal jitter": the wait after try ``n`` is drawn uniformly in
``[base/2, base]`` where ``base = min(max_backoff, backoff * 2**(n-1))``, so it never exceeds the cap; a
server's ``Retry-After`` raises it to that many seconds; ``max_wait``, when set, caps the whole wait.
The jitter is drawn from a ``random.Random(seed)``: a seed makes the waits reproducible.  Waiting goes
through the injected ``sleep``, so tests and the fault benchmark do not wait.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Retryable(Exception):
    """A failed try that may succeed later.

    Attributes:
        reason: What failed (already redacted of secrets by the client).
        retry_after: The server's ``Retry-After`` in seconds, if it sent one.
    """

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class RetriesExhausted(Exception):
    """Every try failed; ``last`` is the last try's [`Retryable`][pipeline.sources.retry.Retryable]."""

    def __init__(self, last: Retryable, tries: int) -> None:
        super().__init__(f"failed after {tries} tries: {last.reason}")
        self.last = last
        self.tries = tries


class RetryPolicy:
    """How many tries, and how long to wait between them (see the module docstring).

    Args:
        max_tries: Tries per call, at least 1.
        backoff: Base delay of the exponential backoff, in seconds.
        max_backoff: Cap of the backoff before ``Retry-After``, in seconds.
        max_wait: Cap of one wait, ``Retry-After`` included, in seconds; ``None`` for none.
        seed: Seed of the jitter; ``None`` for a random one.

    Raises:
        ValueError: If ``max_tries`` is below 1.
    """

    def __init__(self, max_tries: int, backoff: float, max_backoff: float, max_wait: float | None = None,
                 seed: int | None = None) -> None:
        if max_tries < 1:
            raise ValueError("max_tries must be at least 1")
        self.max_tries = max_tries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_wait = max_wait
        self._rng = random.Random(seed)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Return the wait after failed try ``attempt`` (1-based).

        Args:
            attempt: The try that failed.
            retry_after: The server's ``Retry-After``, if any.

        Returns:
            Seconds to wait: the jittered backoff, at least ``retry_after``, at most ``max_wait``.
        """
        base = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        delay = base / 2 + self._rng.uniform(0, base / 2)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay if self.max_wait is None else min(delay, self.max_wait)

    def call(self, attempt: Callable[[], T], sleep: Callable[[float], None],
             on_failure: Callable[[int, Retryable, float | None], None] | None = None) -> T:
        """Call ``attempt`` until it returns, at most ``max_tries`` times.

        Args:
            attempt: One try; raises [`Retryable`][pipeline.sources.retry.Retryable] when it may succeed
                later (any other exception ends the call at once).
            sleep: How to wait between tries.
            on_failure: Called after each failed try with its number, its error and the wait before the
                next try (``None`` after the last), e.g. to log it.

        Returns:
            What the first successful try returned.

        Raises:
            RetriesExhausted: If every try failed.
        """
        last: Retryable | None = None
        for n in range(1, self.max_tries + 1):
            try:
                return attempt()
            except Retryable as exc:
                last = exc
                wait = self.delay(n, exc.retry_after) if n < self.max_tries else None
                if on_failure is not None:
                    on_failure(n, exc, wait)
                if wait is not None:
                    sleep(wait)
        assert last is not None
        raise RetriesExhausted(last, self.max_tries)
