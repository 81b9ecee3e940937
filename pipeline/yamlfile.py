"""One reader for the versioned YAML files of ``config/`` and the campaign's decisions files.

Every document is checked before it is built into Python objects, so a hostile or broken file is refused
quickly, with little memory, and with a message naming the file:

* **size**: at most [`MAX_BYTES`][pipeline.yamlfile.MAX_BYTES] characters (the largest config file
  is about 25 kB);
* **depth**: collections nested at most [`MAX_DEPTH`][pipeline.yamlfile.MAX_DEPTH] levels;
* **aliases**: at most [`MAX_ALIASES`][pipeline.yamlfile.MAX_ALIASES] aliases, and the document
  *as expanded* (each alias counted with the size of what it stands for) at most
  [`MAX_NODES`][pipeline.yamlfile.MAX_NODES] nodes.  A "billion laughs" file (nine anchors of nine
  aliases each) is a few hundred bytes that expands to 10^9 nodes: PyYAML builds it as shared
  references, and the first ``str()`` or walk over it took 5.5 GB.

The limits are checked on the parser's event stream (libyaml's when PyYAML was built with it), before any
object is constructed.  [`YamlLimitError`][pipeline.yamlfile.YamlLimitError] is a ``yaml.YAMLError``,
so callers that already report a ``YAMLError`` with their file name report these too.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it, else PyYAML's.

The ontology, schema and filter files are read by every build, and the pure-Python loader took about
0.3 s of a one-second rebuild step.
"""

MAX_BYTES = 5_000_000
"""The most characters a YAML text may hold."""
MAX_DEPTH = 64
"""The deepest nesting of collections."""
MAX_ALIASES = 1_000
"""The most aliases a document may use."""
MAX_NODES = 1_000_000
"""The most nodes a document may hold once its aliases are expanded."""


class YamlLimitError(yaml.YAMLError):
    """A YAML text over one of the limits of this module (the message says which, and where)."""


def _at(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f"line {mark.line + 1}: " if mark is not None else ""


def check_limits(text: str) -> None:
    """Refuse a YAML text over the size, depth, alias or expanded-size limits, before it is built.

    Walks the parser's events once: each collection's expanded size is the sum of its children's, an
    alias weighs what its anchor weighed, so a bomb is caught after a few hundred events.

    Args:
        text: The YAML text.

    Raises:
        YamlLimitError: If a limit is exceeded; the message says which and, when known, the line.
        yaml.YAMLError: If the text cannot be parsed.
    """
    if len(text) > MAX_BYTES:
        raise YamlLimitError(f"{len(text)} characters, more than the {MAX_BYTES} a YAML file may hold here")
    weights: dict[str, int] = {}
    stack: list[list[Any]] = [[None, 0]]  # [anchor, expanded size] per open collection; bottom: the stream
    aliases = 0
    for event in yaml.parse(text, Loader=SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise YamlLimitError(f"{_at(event)}more than {MAX_ALIASES} aliases")
            stack[-1][1] += weights.get(event.anchor or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                weights[event.anchor] = 1
            stack[-1][1] += 1
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            if len(stack) > MAX_DEPTH:
                raise YamlLimitError(f"{_at(event)}collections nested more than {MAX_DEPTH} levels deep")
            stack.append([event.anchor, 1])
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            anchor, weight = stack.pop()
            if anchor is not None:
                weights[anchor] = weight
            stack[-1][1] += weight
        else:
            continue
        if stack[-1][1] > MAX_NODES:
            raise YamlLimitError(f"{_at(event)}the document expands to more than {MAX_NODES} nodes "
                                 "(aliases repeating aliases: refused)")


def safe_load(text: str, loader: Any = None) -> Any:
    """Load a YAML text with a safe loader after [`check_limits`][pipeline.yamlfile.check_limits].

    Args:
        text: The YAML text.
        loader: A subclass of [`SafeLoader`][pipeline.yamlfile.SafeLoader] (e.g. one that records
            line numbers); None for ``SafeLoader`` itself (libyaml's when available).

    Returns:
        The document as Python objects (None for an empty text), as ``yaml.safe_load`` gives it.

    Raises:
        yaml.YAMLError: If the text is not valid YAML, or over a limit
            ([`YamlLimitError`][pipeline.yamlfile.YamlLimitError]).
    """
    check_limits(text)
    return yaml.load(text, Loader=loader or SafeLoader)  # noqa: S506 - a safe loader


def compose(text: str) -> yaml.Node | None:
    """Compose a YAML text into its node graph (with line marks) after [`check_limits`][pipeline.yamlfile.check_limits].

    For readers that report the line of a bad value: the nodes keep their ``start_mark``.

    Args:
        text: The YAML text.

    Returns:
        The root node, or None for an empty text.

    Raises:
        yaml.YAMLError: If the text is not valid YAML, or over a limit
            ([`YamlLimitError`][pipeline.yamlfile.YamlLimitError]).
    """
    check_limits(text)
    return yaml.compose(text, Loader=SafeLoader)


F = TypeVar("F", bound=Callable[..., Any])


def checked_types(error: type[Exception]) -> Callable[[F], F]:
    """Make a YAML loader report values of the wrong type or shape as its own error, naming the file.

    The decorated loader ``fn(path, ...)`` raises ``error`` naming the file (its first argument)
    instead of a ``TypeError``/``AttributeError``/``ValueError``/``KeyError`` traceback from deep inside
    the loader, for a value of the wrong type or shape (a list where a name is expected, a mapping where
    a number is).  ``error`` itself (the loader's own checks) passes through unchanged.

    Args:
        error: The loader's error class (e.g. [`SchemaError`][pipeline.schema.SchemaError]); called
            with one message.

    Returns:
        The decorator.
    """

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def load(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except error:
                raise
            except (TypeError, AttributeError, ValueError, KeyError) as exc:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                path = next(iter(bound.arguments.values()), "?")
                raise error(f"{path}: a value has the wrong type or shape ({type(exc).__name__}: {exc})") from exc

        return load  # type: ignore[return-value]

    return decorate


def read_mapping(path: Path, error: type[Exception], what: str, shape: str = "a mapping") -> dict[str, Any]:
    """Read the top-level mapping of a YAML file, so every caller reports bad files the same way.

    Args:
        path: The YAML file (UTF-8).
        error: The exception class raised for a bad file, called with one message naming ``path``.
        what: What the file is, for the message (``"cannot read {what}"``).
        shape: What the top level must be, for the message (``"top level must be {shape}"``).

    Returns:
        The top-level mapping; ``{}`` for an empty file.

    Raises:
        Exception: ``error``, if the file cannot be read, is not UTF-8, is not valid YAML, is over
            a limit of this module, or its top level is not a mapping.
    """
    try:
        data = safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path}: cannot read {what}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        raise error(f"{path}: cannot read {what}: {exc}") from exc
    if not isinstance(data, dict):
        raise error(f"{path}: top level must be {shape}")
    return data
