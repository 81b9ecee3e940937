"""Request values as log lines show them: escaped and capped.

A value a client sends (a collection, a document, an action, an address from a header, a refusal that
echoes one) is written into one log line.  [`log_value`][pipeline.serve.logtext.log_value] makes it
printable on that line (control characters, line and paragraph separators and backslashes escaped,
so a newline cannot forge a second line) and short (at most ``limit`` characters are kept, followed by
the value's full length), so a 200 KB value costs a few hundred bytes of log.
"""

from __future__ import annotations

import unicodedata

LIMIT = 200
"""The characters of a value kept in a log line by default."""


def _escape(ch: str) -> str:
    if ch == "\\":
        return "\\\\"
    if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return ch


def log_value(value: object, limit: int = LIMIT) -> str:
    r"""Return a request value as one log line may show it.

    Args:
        value: The value (converted with ``str``); None is shown as ``-``.
        limit: The most characters of the value kept.

    Returns:
        The value's first ``limit`` characters, each control, format, separator or surrogate
            character and backslash written as a ``\xNN`` / ``\uNNNN`` / ``\\`` escape, followed by
            ``...[N characters]`` when the value was longer.
    """
    if value is None:
        return "-"
    text = str(value)
    shown = "".join(_escape(ch) for ch in text[:limit])
    return shown if len(text) <= limit else f"{shown}...[{len(text)} characters]"
