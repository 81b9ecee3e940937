"""Probes of brat's defects, run in a child process so that brat can be loaded with or without a patch:
``python -m tests.serve.brat_probe PROBE PATCHES_JSON COLLECTION_DIR DOCUMENT`` prints one JSON object.

Each probe drives the real brat code (loaded by :func:`pipeline.serve.brat_adapter.load_brat`) on a copy of a
campaign collection; ``tests/serve/test_brat_patches.py`` runs it without the patch (the defect shows) and
with it (the defect is gone).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.serve import brat_adapter
from pipeline.serve.brat_adapter import Brat, RequestSession, bound_request, load_brat


def _dispatch(brat: Brat, action: str, collection: Path, document: str | None, read_only: bool,
              **args: str) -> dict[str, Any]:
    params = {"collection": str(collection) + "/", **args}
    if document is not None:
        params["document"] = document
    response = brat.dispatch(action, params, session=RequestSession("probe", {"user": "alice"}),
                             read_only=read_only, campaign_dir=collection.parent.parent,
                             document=collection / document if document and not read_only else None)
    return response.json or {}


def probe_open(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """getDocument: the .ann bytes before and after."""
    ann = coll / f"{doc}.ann"
    before = ann.read_bytes()
    reply = _dispatch(brat, "getDocument", coll, doc, True)
    return {"before": before.decode(), "after": ann.read_bytes().decode(), "messages": reply.get("messages")}


def probe_edit(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """createSpan on a document with an N line: the .ann lines before and after."""
    ann = coll / f"{doc}.ann"
    before = ann.read_text(encoding="utf-8")
    reply = _dispatch(brat, "createSpan", coll, doc, False, offsets="[[9,14]]", type="Phenotype")
    return {"before": before, "after": ann.read_text(encoding="utf-8"), "messages": reply.get("messages")}


def probe_crash_mid_save(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """A disk failure in the middle of a save (half written, then an error): what is left of the .ann."""
    ann = coll / f"{doc}.ann"
    before = ann.read_bytes()

    def failing_copyfile(src: str, dst: str, *a: Any, **k: Any) -> None:  # brat's way of writing the .ann
        data = Path(src).read_bytes()
        Path(dst).write_bytes(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:  # the patched save's way: it fsyncs the new file before the rename
        raise OSError(28, "No space left on device")

    shutil.copyfile = failing_copyfile  # type: ignore[assignment]
    os.fsync = failing_fsync
    try:
        reply = _dispatch(brat, "createSpan", coll, doc, False, offsets="[[9,14]]", type="Phenotype")
    finally:
        os.fsync = real_fsync
    leftovers = sorted(p.name for p in coll.iterdir() if p.name.startswith("."))
    return {"before": before.decode(), "after": ann.read_bytes().decode(), "leftovers": leftovers,
            "exception": reply.get("exception")}


def probe_two_edits(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """Two edits of one document at once (both read it before either writes, unless a lock prevents it).

    The first edit to have read the document waits for the other to have read it too, or for the other to be
    waiting for the document's lock (then it can never read first: waiting longer proves nothing), at most 2 s.
    """
    ann_mod = brat.modules["annotation"]
    state = {"parsed": 0, "held": False, "blocked": False}
    changed = threading.Condition()
    original = ann_mod.Annotations._parse_ann_file
    real_lock = brat_adapter.document_lock

    def parse_then_wait(self: Any, input_files: Any) -> Any:
        result = original(self, input_files)
        with changed:
            state["parsed"] += 1
            changed.notify_all()
            # not met in time: the other edit cannot read now (it waits for the lock), go on alone
            changed.wait_for(lambda: state["parsed"] >= 2 or state["blocked"], timeout=2.0)
        return result

    @contextlib.contextmanager
    def watched_lock(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with changed:
            if state["held"]:
                state["blocked"] = True  # this edit is about to wait for the one holding the lock
                changed.notify_all()
        with real_lock(*args, **kwargs) as held:
            with changed:
                state["held"] = True
            try:
                yield held
            finally:
                with changed:
                    state["held"] = False

    ann_mod.Annotations._parse_ann_file = parse_then_wait
    brat_adapter.document_lock = watched_lock  # type: ignore[assignment]
    threads = [threading.Thread(target=_dispatch, args=(brat, "createSpan", coll, doc, False),
                                kwargs={"offsets": offsets, "type": "Phenotype"})
               for offsets in ("[[9,14]]", "[[36,44]]")]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        brat_adapter.document_lock = real_lock
    return {"after": (coll / f"{doc}.ann").read_text(encoding="utf-8")}


def probe_save_outside_lock(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """brat's create_span called without the document lock: is the save made?"""
    ann = coll / f"{doc}.ann"
    before = ann.read_bytes()
    error = None
    with bound_request({"user": "alice"}, root=coll.parent.parent):
        try:
            brat.modules["annotator"].create_span(str(coll) + "/", doc, "[[9,14]]", "Phenotype")
        except Exception as exc:  # the patched save refuses
            error = type(exc).__name__
    return {"changed": ann.read_bytes() != before, "error": error}


def probe_sessions(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """Two requests of two people interleaved on two threads: whose session and messages each one sees."""
    session_mod = brat.modules["session"]
    messager = brat.modules["message"].Messager
    patched = "request_session" in brat.patches
    step1, step2, step3 = threading.Barrier(2), threading.Barrier(2), threading.Barrier(2)
    seen: dict[str, Any] = {}

    def request(person: str, first: bool) -> None:
        def start() -> None:
            if not patched:
                session_mod.init_session(f"10.0.0.{len(person)}")  # what brat's server.py does per request
                session_mod.get_session()["user"] = person

        def answer() -> None:
            seen[person] = {"user": session_mod.get_session().get("user"),
                            "messages": [m[0] for m in messager.output_json({})["messages"]]}

        def body() -> None:
            if first:  # alice's request starts, posts a message, and answers after bob's request
                start()
                messager.error(f"message for {person}")
                step1.wait()
                step2.wait()
                step3.wait()
                answer()
            else:  # bob's request starts once alice's has begun, and answers first
                step1.wait()
                start()
                step2.wait()
                answer()
                step3.wait()

        if patched:
            with bound_request({"user": person}):
                body()
        else:
            body()

    threads = [threading.Thread(target=request, args=("alice", True)),
               threading.Thread(target=request, args=("bob", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return seen


def probe_missing_ann(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """getDocument of a .txt without .ann: is an .ann created?"""
    (coll / f"{doc}.ann").unlink()
    reply = _dispatch(brat, "getDocument", coll, doc, True)
    return {"created": (coll / f"{doc}.ann").exists(), "entities": reply.get("entities"),
            "exception": reply.get("exception")}


def probe_listing(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """getCollectionInformation: which new files appear in the collection."""
    before = {p.name for p in coll.iterdir()}
    reply = _dispatch(brat, "getCollectionInformation", coll, None, True)
    return {"new_files": sorted({p.name for p in coll.iterdir()} - before), "items": len(reply.get("items", [])),
            "messages": reply.get("messages")}


def probe_save_reads(brat: Brat, coll: Path, doc: str) -> dict[str, Any]:
    """A save, then an edit brat refuses: how often each read and parsed the .ann, and what changed."""
    import builtins
    import io

    import pipeline.serve.brat_adapter as adapter

    ann = coll / f"{doc}.ann"
    counts = {"reads": 0, "parses": 0, "brat_parses": 0}
    real_open, real_io_open, real_parse = builtins.open, io.open, adapter.parse_ann
    ann_mod = brat.modules["annotation"]
    real_brat_parse = ann_mod.Annotations._parse_ann_file

    def counting_open(file: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
        if str(file).endswith(ann.name) and not any(c in mode for c in "wax+"):
            counts["reads"] += 1
        return real_open(file, mode, *a, **k)

    def counting_parse(*a: Any, **k: Any) -> Any:
        counts["parses"] += 1
        return real_parse(*a, **k)

    def counting_brat_parse(self: Any, input_files: Any) -> Any:
        counts["brat_parses"] += 1
        return real_brat_parse(self, input_files)

    changes: list[bytes] = []
    results = []
    builtins.open = io.open = counting_open  # type: ignore[assignment]
    adapter.parse_ann = counting_parse  # type: ignore[assignment]
    ann_mod.Annotations._parse_ann_file = counting_brat_parse
    try:
        for action, args in (("createSpan", {"offsets": "[[9,14]]", "type": "Phenotype"}),
                             ("deleteSpan", {"id": "T999"})):
            before = ann.read_bytes()
            counts.update(reads=0, parses=0, brat_parses=0)
            response = brat.dispatch(action, {"collection": str(coll) + "/", "document": doc, **args},
                                     session=RequestSession("probe", {"user": "alice"}), read_only=False,
                                     campaign_dir=coll.parent.parent, document=coll / doc,
                                     on_change=changes.append)
            seen = dict(counts)  # before the probe's own read
            after = ann.read_bytes()
            results.append({**seen, "changed": response.changed, "file_changed": after != before,
                            "exception": (response.json or {}).get("exception")})
    finally:
        builtins.open, io.open, adapter.parse_ann = real_open, real_io_open, real_parse  # type: ignore[assignment]
        ann_mod.Annotations._parse_ann_file = real_brat_parse
    return {"save": results[0], "refused": results[1], "changes": len(changes),
            "journaled_is_file": bool(changes) and changes[0] == ann.read_bytes()}


PROBES = {name[len("probe_"):]: func for name, func in globals().items() if name.startswith("probe_")}


def main(argv: list[str]) -> None:
    name, patches, coll, doc = argv
    brat = load_brat(frozenset(json.loads(patches)))
    print(json.dumps(PROBES[name](brat, Path(coll), doc)))


if __name__ == "__main__":
    main(sys.argv[1:])
