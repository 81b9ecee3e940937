"""Small HTTP helpers shared by the network clients (no requests are made here)."""

from __future__ import annotations

import datetime as dt
import email.utils
import time


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date); None if absent or bad.

    ``now`` (epoch seconds) defaults to the current time; a date in the past gives 0.
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        # An HTTP date is GMT by definition even when the zone is left out.
        when = when.replace(tzinfo=dt.timezone.utc)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)
