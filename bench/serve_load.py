"""Load benchmark of ``campaign serve`` (issue 22): simulated annotators log in and save concurrently.

A campaign is written with the project's own commands (``batches`` over a synthetic collection: two
annotators per document, ``--annotators`` annotators and one senior; the campaign's users), then served by
``pgx-corpus campaign serve`` in its own process (waitress, 8 threads, 127.0.0.1).  Each simulated
annotator logs in through brat's ajax ``login`` and saves once every ``--interval`` seconds (default 2)
for ``--duration`` seconds (default 600): it alternately creates an entity on a word of one of its
documents (``createSpan``) and deletes it (``deleteSpan``), going round its documents, exactly as brat's
client does (same requests, the page's Origin, the session cookie).  With ``--press-every N`` (default
5), every Nth tick of an annotator is a press of the "Suggest relations" button on one of its documents
instead (brat's ``tag``), taken back at once with its undo token when it added relations, so that the
documents stay as the saves alone make them.

Printed: saves per second, p50/p95/p99/max save latency (measured by the client, request to answer),
the same for the presses (and their undos), failed saves, and the checks made once the server has stopped:

* lost or corrupted saves: each document's final ``.ann`` is parsed and its entities compared with what
  its client last saved (the pre-annotation plus the entity it created and has not deleted);
* the journal against the saves: as many journal entries per document as saves answered OK, each by the
  right person, the last one's sha256 equal to the final ``.ann``;
* the journal's size (entries, bytes on disk).

Usage: ``python bench/serve_load.py [--annotators 20] [--duration 600] [--interval 2] [--press-every 5]
[--keep DIR]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from pipeline.brat.standoff import parse_ann  # noqa: E402
from pipeline.campaign.batches import prepare_batches  # noqa: E402
from pipeline.campaign.journal import Journal, Version  # noqa: E402
from pipeline.campaign.users import create_users  # noqa: E402
from pipeline.corpus.brat_export import export_collection  # noqa: E402
from pipeline.documents import Annotation, SentenceRecord  # noqa: E402
from pipeline.schema import load_schema  # noqa: E402
from tests.serve.live import HttpClient  # noqa: E402

TEXT = "Warfarin doses were lower in CYP2C9 carriers."
WORDS = [(9, 14), (15, 19), (20, 25), (26, 28), (36, 44)]  # doses, were, lower, in, carriers


def build_campaign(root: Path, annotators: int, docs_per_annotator: int) -> tuple[Path, dict[str, str]]:
    n_docs = max(annotators * docs_per_annotator // 2, 2)
    records = [SentenceRecord(str(1000 + i), 0, TEXT, annotations=(
        Annotation(((0, 8),), "Chemical", "pubtator", text="Warfarin"),
        Annotation(((29, 35),), "Gene_or_protein", "pubtator", text="CYP2C9"),
    )) for i in range(n_docs)]
    export_collection(records, root / "coll", load_schema(), Counter())
    people = [f"ann{i:02d}" for i in range(1, annotators + 1)]
    roster = root / "roster.csv"
    roster.write_text("id,role,phase1\n" + "".join(f"{p},annotator,yes\n" for p in people)
                      + "senior1,senior,no\n", encoding="utf-8")
    campaign = root / "campaign"
    prepare_batches(root / "coll", roster, campaign, seed=13, counts=Counter())
    passwords = create_users(campaign, {p: ["annotator"] for p in people})
    return campaign, passwords


@dataclass
class Annotator:
    person: str
    password: str
    docs: list[str]
    port: int
    press_every: int = 0
    latencies: list[float] = field(default_factory=list)
    press_latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    saves: Counter[str] = field(default_factory=Counter)  # document -> saves answered OK
    alive: dict[str, tuple[str, int, int] | None] = field(default_factory=dict)  # doc -> (id, start, end)

    def __post_init__(self) -> None:
        self.client = HttpClient(self.port)

    def ajax(self, action: str, **params: str) -> dict[str, Any]:
        return self.client.ajax(action, **params)

    def save(self, i: int) -> None:
        doc = self.docs[(i // 2) % len(self.docs)]
        current = self.alive.get(doc)
        started = time.perf_counter()
        if current is None:
            start, end = WORDS[(i // 2 // len(self.docs)) % len(WORDS)]
            reply = self.ajax("createSpan", collection=f"/phase1/{self.person}/", document=doc,
                              offsets=json.dumps([[start, end]]), type="Phenotype")
        else:
            reply = self.ajax("deleteSpan", collection=f"/phase1/{self.person}/", document=doc, id=current[0])
        self.latencies.append(time.perf_counter() - started)
        if reply.get("exception") or reply.get("messages"):
            self.failures.append(f"{doc}: {reply.get('exception')} {reply.get('messages')}")
            return
        self.saves[doc] += 1
        if current is None:
            new = [e for e in reply["annotations"]["entities"] if e[1] == "Phenotype" and e[2] == [[start, end]]]
            self.alive[doc] = (new[0][0], start, end)
        else:
            self.alive[doc] = None

    def press(self, i: int) -> None:
        """Press the button on a document; take the press back (its undo token) when it added relations."""
        doc = self.docs[i % len(self.docs)]
        started = time.perf_counter()
        reply = self.ajax("tag", collection=f"/phase1/{self.person}/", document=doc, tagger="pgx-suggest-relations")
        self.press_latencies.append(time.perf_counter() - started)
        if reply.get("exception"):
            self.failures.append(f"press {doc}: {reply.get('exception')} {reply.get('messages')}")
            return
        if reply.get("edited"):
            self.saves[doc] += 1
            started = time.perf_counter()
            undone = self.ajax("undo", collection=f"/phase1/{self.person}/", document=doc, token=reply["undo"])
            self.press_latencies.append(time.perf_counter() - started)
            if undone.get("exception"):
                self.failures.append(f"undo {doc}: {undone.get('exception')} {undone.get('messages')}")
                return
            self.saves[doc] += 1

    def run(self, stop_at: float, interval: float, offset: float) -> None:
        reply = self.ajax("login", user=self.person, password=self.password)
        if reply.get("exception"):
            self.failures.append(f"login: {reply.get('messages')}")
            return
        tick = time.monotonic() + offset
        i = presses = 0
        while True:
            now = time.monotonic()
            if tick > now:
                time.sleep(tick - now)
            if time.monotonic() >= stop_at:
                break
            try:
                if self.press_every and (i + presses) % self.press_every == self.press_every - 1:
                    self.press(presses)
                    presses += 1
                else:
                    self.save(i)
                    i += 1
            except Exception as exc:  # a failed save is counted, not fatal
                self.failures.append(f"save {i}: {exc!r}")
                i += 1
            tick += interval
        self.client.close()


def start_server(campaign: Path) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "--log-level", "WARNING", "campaign", "serve",
                             str(campaign), "--port", "0"], cwd=PROJECT, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if "http://127.0.0.1:" not in line:
        proc.kill()
        raise SystemExit(f"serve did not start: {line}{proc.stderr.read()}")
    return proc, int(line.split("http://127.0.0.1:")[1].split("/")[0])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def check(campaign: Path, clients: list[Annotator]) -> dict[str, Any]:
    """Lost or corrupted saves, and the journal against the saves (after the server stopped)."""
    lost, corrupted, journal_problems = [], [], []
    entries: dict[str, list[Version]] = defaultdict(list)
    # the journal as pipeline/campaign/journal.py reads it back (its own reader checks every line)
    journal = Journal(campaign)
    readable = journal.log_path.is_file()
    if not readable:
        journal_problems.append(f"{journal.log_path}: not found (no journal: entries not checked)")
    lines = journal.entries() if readable else []
    for entry in lines:
        entries[entry.document].append(entry)
    for client in clients:
        for doc in client.docs:
            ann = campaign / "phase1" / client.person / f"{doc}.ann"
            data = ann.read_bytes()
            parsed, issues = parse_ann(doc, TEXT, data.decode("utf-8"), str(ann))
            if issues:
                corrupted.append(f"{ann}: {issues[0]}")
                continue
            got = sorted((t.type, t.fragments) for t in parsed.textbounds)
            want = [("Chemical", ((0, 8),)), ("Gene_or_protein", ((29, 35),))]
            alive = client.alive.get(doc)
            if alive is not None:
                want.append(("Phenotype", ((alive[1], alive[2]),)))
            if got != sorted(want):
                lost.append(f"{ann}: has {got}, its client last saved {sorted(want)}")
            if not readable:
                continue
            key = f"phase1/{client.person}/{doc}"
            mine = entries.get(key, [])
            if len(mine) != client.saves[doc]:
                journal_problems.append(f"{key}: {len(mine)} journal entries for {client.saves[doc]} saves")
            if any(e.person != client.person for e in mine):
                journal_problems.append(f"{key}: journaled under another person")
            if mine and mine[-1].sha256 != hashlib.sha256(data).hexdigest():
                journal_problems.append(f"{key}: last journal entry is not the final .ann")
            if mine and journal.content(mine[-1].sha256) != data:
                journal_problems.append(f"{key}: the journal's object differs from the final .ann")
    size = sum(p.stat().st_size for p in (campaign / "journal").rglob("*") if p.is_file())
    return {"lost": lost, "corrupted": corrupted, "journal_problems": journal_problems,
            "journal_entries": len(lines), "journal_bytes": size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of saving (default 600)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between two saves of one annotator")
    parser.add_argument("--docs-per-annotator", type=int, default=6)
    parser.add_argument("--press-every", type=int, default=5,
                        help="every Nth tick is a press of Suggest relations (0: none; default 5)")
    parser.add_argument("--keep", type=Path, help="write the campaign here and keep it (default: a temporary dir)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="serve-load-"))
    root.mkdir(parents=True, exist_ok=True)
    campaign, passwords = build_campaign(root, args.annotators, args.docs_per_annotator)
    proc, port = start_server(campaign)
    rng = random.Random(13)
    clients = []
    for person, password in sorted(passwords.items()):
        docs = sorted(p.stem for p in (campaign / "phase1" / person).glob("*.txt"))
        clients.append(Annotator(person, password, docs, port, args.press_every))
    started = time.monotonic()
    stop_at = started + args.duration
    threads = [threading.Thread(target=c.run, args=(stop_at, args.interval, rng.uniform(0, args.interval)))
               for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    proc.terminate()
    _, err = proc.communicate(timeout=60)
    latencies = [x for c in clients for x in c.latencies]
    failures = [f"{c.person}: {f}" for c in clients for f in c.failures]
    ok = sum(sum(c.saves.values()) for c in clients)
    result = check(campaign, clients)
    print(f"campaign serve load: {args.annotators} annotators, one save every {args.interval:g} s each, "
          f"{elapsed:.0f} s ({os.cpu_count()} cores)")
    print(f"  saves answered OK     {ok}  ({ok / elapsed:.2f} saves/s); failed {len(failures)}")
    if latencies:
        print(f"  save latency (ms)     p50 {percentile(latencies, 0.50) * 1000:.0f}  "
              f"p95 {percentile(latencies, 0.95) * 1000:.0f}  p99 {percentile(latencies, 0.99) * 1000:.0f}  "
              f"max {max(latencies) * 1000:.0f}  mean {statistics.mean(latencies) * 1000:.0f}")
    presses = [x for c in clients for x in c.press_latencies]
    if presses:
        print(f"  presses + undos (ms)  {len(presses)}: p50 {percentile(presses, 0.50) * 1000:.0f}  "
              f"p95 {percentile(presses, 0.95) * 1000:.0f}  p99 {percentile(presses, 0.99) * 1000:.0f}  "
              f"max {max(presses) * 1000:.0f}")
    print(f"  lost saves            {len(result['lost'])}")
    print(f"  corrupted documents   {len(result['corrupted'])}")
    print(f"  journal problems      {len(result['journal_problems'])}")
    print(f"  journal               {result['journal_entries']} entries, {result['journal_bytes'] / 1024:.0f} KiB")
    print(f"  server exit status    {proc.returncode}")
    for line in (failures + result["lost"] + result["corrupted"] + result["journal_problems"])[:20]:
        print(f"    {line}")
    if err.strip():
        print("  server stderr (last lines):\n    " + "\n    ".join(err.strip().splitlines()[-5:]))
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
