"""Fault injection on whole builds (issue 10): faults, kill -9, a second build on the same --out.

A loopback stand-in for E-utilities and PubTator3 (tests/fixtures/faults.py)
serves the 17 demo records and PubTator3 documents for 14 of them (a batch of
3 PMIDs is unknown to PubTator: an empty collection in every run, cached and
reported missing; ``--no-fallback-local`` spares each build the lexicon load,
the fallback itself is tested in tests/nlp/test_preannotate.py).  Each build's published ``OUT/brat`` must be
byte-identical to the fault-free build's, after at most one rerun.
Timeouts, backoffs and tries are short (luigi.cfg sections set here).

Covers: pipeline.cli, pipeline.cli.build_commands, pipeline.corpus.outdir, pipeline.nlp.lexicon,
pipeline.sources.pubmed_xml
"""

from __future__ import annotations

import configparser
import hashlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import luigi
import pytest
from luigi.task_register import Register

from pipeline import cli, durable
from pipeline.corpus import outdir
from pipeline.nlp.lexicon import DEFAULT_LEXICON
from pipeline.sources.pubmed_xml import iter_documents
from tests.conftest import PROJECT
from tests.fixtures import faults
from tests.fixtures.eutils.fake_eutils import Corpus

pytestmark = pytest.mark.skipif(
    not DEFAULT_LEXICON.exists(), reason=f"local annotator lexicon missing ({DEFAULT_LEXICON}): run `make setup`"
)

TERM = "pharmacogenomics demo"
DATE = "2026-01-01"
TERMS = {m: ("Gene", m) for m in ("CYP2C9", "VKORC1", "CYP2C19", "CYP2D6", "SLCO1B1", "UGT1A1", "CYP3A5", "TPMT",
                                  "DPYD", "MTHFR", "ABCB1")}
TERMS.update({m: ("Chemical", f"MESH:{m}") for m in ("warfarin", "Warfarin", "clopidogrel", "Clopidogrel",
                                                     "tamoxifen", "codeine", "simvastatin", "tacrolimus")})
SETTINGS = {
    "ncbi": {"batch_size": "3", "timeout": "0.5", "max_tries": "3", "backoff": "0.01", "requests_per_second": "40"},
    "pubtator": {"batch_size": "3", "timeout": "0.5", "max_tries": "3", "backoff": "0.01",
                 "requests_per_second": "40"},
}


def demo_corpus() -> tuple[Corpus, dict[str, dict[str, object]]]:
    raw = (PROJECT / "data" / "demo" / "pubmed" / "demo.xml").read_bytes()
    docs = list(iter_documents(raw, Counter()))
    records: dict[str, bytes] = {}
    start = 0
    for doc in docs:  # the raw <PubmedArticle> of each record, in file order
        begin = raw.index(b"<PubmedArticle>", start)
        end = raw.index(b"</PubmedArticle>", begin) + len(b"</PubmedArticle>")
        records[doc.pmid] = raw[begin:end] + b"\n"
        start = end
    pmids = sorted(records)
    unknown = set(pmids[3:6])  # one whole PubTator batch: an empty collection
    pubtator = {d.pmid: faults.pubtator_document(d.pmid, d.title, d.abstract, TERMS) for d in docs
                if d.pmid not in unknown}
    return Corpus(terms={TERM: pmids}, records=records), pubtator


@pytest.fixture(scope="module")
def server() -> Iterator[faults.FaultServer]:
    corpus, pubtator = demo_corpus()
    srv = faults.start(corpus, pubtator, slow_seconds=1.2)
    config = luigi.configuration.get_config()
    values = {section: dict(keys) for section, keys in SETTINGS.items()}
    values["ncbi"]["base_url"] = srv.eutils_url
    values["pubtator"]["base_url"] = srv.pubtator_url
    saved = {(s, k): config.get(s, k, None) for s, keys in values.items() for k in keys}
    for section, keys in values.items():
        for key, value in keys.items():
            config.set(section, key, value)
    Register.clear_instance_cache()
    yield srv
    for (section, key), value in saved.items():
        if value is None:
            config.remove_option(section, key)
        else:
            config.set(section, key, value)
    Register.clear_instance_cache()
    faults.stop(srv)


def build_args(out: Path, extend: bool = False) -> list[str]:
    return ["build", "--out", str(out), "--query", TERM, "--date", DATE, "--annotator", "pubtator-api",
            "--sample", "all", "--no-fallback-local", "--email", "t@example.org", *([] if extend else ["--no-extend"])]


def build(out: Path, extend: bool = False) -> int:
    Register.clear_instance_cache()
    return cli.main(["--log-level", "WARNING", *build_args(out, extend)])


def tree_digest(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def temporaries(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if durable.is_temporary(p.name)]


@pytest.fixture(scope="module")
def reference(server: faults.FaultServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    server.plan = faults.FaultPlan()
    out = tmp_path_factory.mktemp("reference")
    assert build(out) == 0
    digest = tree_digest(out / "brat")
    assert len([n for n in digest if n.endswith(".txt")]) >= 5  # the sentences the pgx filter keeps
    return digest


def alternating(kinds: list[str]) -> list[str | None]:
    """Each request fails once with the next kind, its retry succeeds."""
    return [x for kind in kinds for x in (kind, None)]


@pytest.mark.parametrize("kinds", [faults.FAULTS[:6], faults.FAULTS[6:]], ids=["status-and-bodies", "rest"])
def test_every_fault_kind_on_both_services_gives_the_same_collection(
        server: faults.FaultServer, reference: dict[str, str], tmp_path: Path, kinds: tuple[str, ...]) -> None:
    server.plan = faults.FaultPlan(first={"eutils": alternating(list(kinds)), "pubtator": alternating(list(kinds))})
    before = len(server.requests())
    runs = 1
    code = build(tmp_path)
    if code != 0:
        runs, code = 2, build(tmp_path)
    assert code == 0 and runs <= 2
    met = {(s.service, s.fault) for s in server.requests()[before:] if s.fault}
    assert met == {(service, kind) for service in faults.SERVICES for kind in kinds}
    assert tree_digest(tmp_path / "brat") == reference
    assert temporaries(tmp_path) == []


def test_failed_build_keeps_the_published_collection_and_one_rerun_completes(
        server: faults.FaultServer, reference: dict[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # every try of the second efetch batch and of the first PubTator batch fails: the build fails
    server.plan = faults.FaultPlan(first={"eutils": [None, None, "500", "reset", "503"],
                                          "pubtator": ["429", "lying", "502"]})
    assert build(tmp_path) == 1
    err = capsys.readouterr().err
    assert not (tmp_path / "brat").exists()
    assert f"no collection was published to {tmp_path / 'brat'}; this build's partial output is under" in err
    assert temporaries(tmp_path) == []
    server.plan = faults.FaultPlan()
    assert build(tmp_path) == 0
    assert tree_digest(tmp_path / "brat") == reference


def _subprocess_build(out: Path, server: faults.FaultServer, rate_dir: Path, extend: bool = False
                      ) -> subprocess.Popen[bytes]:
    config = out.parent / f"{out.name}-luigi.cfg"
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(PROJECT / "luigi.cfg")
    for section, keys in SETTINGS.items():
        for key, value in keys.items():
            parser.set(section, key, value)
    parser.set("ncbi", "base_url", server.eutils_url)
    parser.set("pubtator", "base_url", server.pubtator_url)
    with config.open("w") as fh:
        parser.write(fh)
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "LUIGI_CONFIG_PATH": str(config),
           "PGX_RATELIMIT_DIR": str(rate_dir)}
    return subprocess.Popen([sys.executable, "-m", "pipeline", "--log-level", "WARNING", *build_args(out, extend)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow  # builds killed at random points and rerun
def test_kill_9_at_random_points_then_rerun(server: faults.FaultServer, tmp_path: Path) -> None:
    """kill -9 a build subprocess (with extension) at seeded random moments, under faults, then rerun:
    the same collection as an uninterrupted build, no temporary file, the killed builds' lock taken over."""
    server.plan = faults.FaultPlan()
    assert build(tmp_path / "reference", extend=True) == 0
    reference = tree_digest(tmp_path / "reference" / "brat")
    rng = random.Random(10)
    out = tmp_path / "out"
    server.plan = faults.FaultPlan(every=3)
    killed = []
    for _ in range(4):
        proc = _subprocess_build(out, server, tmp_path / "rate", extend=True)
        # builds load once per process and reuse finished shards, so a rerun can finish in a second or two:
        # kill early enough that the kills land in different stages of the first, unfinished builds
        delay = rng.uniform(0.3, 2.0)
        start = time.monotonic()
        while time.monotonic() < start + delay and proc.poll() is None:
            time.sleep(0.02)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stages = sorted(p.parent.parent.name for p in (out / "work").glob("*/*/params.json")) if out.exists() else []
        killed.append((round(delay, 2), proc.returncode, stages[-1] if stages else None))
    print("kills (delay, return code, last stage done):", killed)
    assert sum(code == -signal.SIGKILL for _, code, _ in killed) >= 1
    server.plan = faults.FaultPlan()
    final = _subprocess_build(out, server, tmp_path / "rate", extend=True)
    _, err = final.communicate(timeout=240)
    assert final.returncode == 0, err.decode()[-2000:]
    assert tree_digest(out / "brat") == reference
    assert temporaries(out) == []
    assert not (out / outdir.LOCK_NAME).exists()


def test_concurrent_second_build_is_refused(server: faults.FaultServer, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    server.plan = faults.FaultPlan()
    first = _subprocess_build(out, server, tmp_path / "rate")
    try:
        deadline = time.monotonic() + 60
        while not (out / outdir.LOCK_NAME).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the holder has written its name
        assert build(out) == 2  # REFUSED: --out is locked
        err = capsys.readouterr().err
        assert f"{out} is in use by another build (pid {first.pid} on host {socket.gethostname()}" in err
    finally:
        first.kill()
        first.wait()
