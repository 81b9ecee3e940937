"""The one retry policy of the web clients (pipeline/sources/retry.py).

Covers: pipeline.sources.retry
"""

from __future__ import annotations

import pytest

from pipeline.sources.retry import RetriesExhausted, Retryable, RetryPolicy


def test_waits_grow_exponentially_within_equal_jitter_and_the_cap() -> None:
    policy = RetryPolicy(max_tries=8, backoff=1.0, max_backoff=8.0, seed=5)
    for attempt, base in enumerate([1.0, 2.0, 4.0, 8.0, 8.0], 1):
        assert base / 2 <= policy.delay(attempt) <= base


def test_retry_after_raises_the_wait_and_max_wait_caps_it() -> None:
    assert RetryPolicy(3, 0.1, 1.0, seed=1).delay(1, retry_after=7.0) == 7.0
    assert RetryPolicy(3, 0.1, 1.0, max_wait=2.0, seed=1).delay(1, retry_after=7.0) == 2.0


def test_the_same_seed_gives_the_same_waits() -> None:
    a, b = RetryPolicy(5, 1.0, 60.0, seed=3), RetryPolicy(5, 1.0, 60.0, seed=3)
    assert [a.delay(n) for n in range(1, 5)] == [b.delay(n) for n in range(1, 5)]


def test_call_retries_then_returns_and_reports_each_failure() -> None:
    outcomes: list[object] = [Retryable("HTTP 503"), Retryable("HTTP 429", retry_after=3.0), "ok"]
    slept: list[float] = []
    failures: list[tuple[int, str, float | None]] = []

    def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Retryable):
            raise outcome
        return str(outcome)

    result = RetryPolicy(5, 0.5, 10.0, seed=2).call(attempt, slept.append,
                                                    lambda n, exc, wait: failures.append((n, exc.reason, wait)))
    assert result == "ok"
    assert [f[:2] for f in failures] == [(1, "HTTP 503"), (2, "HTTP 429")]
    assert slept == [f[2] for f in failures] and 0.25 <= slept[0] <= 0.5 and slept[1] == 3.0


def test_call_gives_up_after_max_tries_without_waiting_after_the_last() -> None:
    slept: list[float] = []
    waits: list[float | None] = []

    def attempt() -> None:
        raise Retryable("timeout")

    with pytest.raises(RetriesExhausted) as info:
        RetryPolicy(3, 0.01, 1.0, seed=0).call(attempt, slept.append, lambda n, exc, wait: waits.append(wait))
    assert info.value.last.reason == "timeout" and info.value.tries == 3
    assert len(slept) == 2 and waits[-1] is None and waits[:2] == slept


def test_other_errors_end_the_call_at_once() -> None:
    calls = []

    def attempt() -> None:
        calls.append(1)
        raise KeyError("not retried")

    with pytest.raises(KeyError):
        RetryPolicy(5, 0.01, 1.0).call(attempt, lambda s: None)
    assert calls == [1]


def test_at_least_one_try() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RetryPolicy(0, 1.0, 1.0)
