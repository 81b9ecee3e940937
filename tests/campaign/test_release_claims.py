"""Issue 40, item 2: what a release's README says about each file holds when recounted with the peer tools.

Released from the dev and the more PGxCorpus gold sentences (``../shared/data/pgxcorpus-{dev,more}``), each
statement of the datasheet that code can check is counted again here, independently of the release code:
the PubTator titles (read from the file), ``bioc.validate`` (the ``bioc`` package's validator, run here),
the CoNLL ``layers`` spans (decoded here), spaCy's ``doc.ents`` (the ``DocBin`` loaded with spaCy), the
relation counts of ``GUIDELINES.md`` (from the brat files), and the PubTator losses logged once per release.

Covers: pipeline.brat.standoff, pipeline.cli, pipeline.cli.release_commands, pipeline.cli.train_commands
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bioc import biocxml
from bioc.validator import BioCValidator

from pipeline.brat.standoff import read_directory
from pipeline.cli import main
from tests.conftest import shared_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["dev", "more"])
def released(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    gold = shared_path("data", f"pgxcorpus-{request.param}", "gold")
    out = tmp_path_factory.mktemp(request.param) / "rel"
    handler = _Collect()
    logging.getLogger("pipeline").addHandler(handler)
    try:
        assert main(["release", str(gold), "--out", str(out), "--name", f"PGxCorpus-{request.param}",
                     "--license", "CC-BY-NC-4.0", "--author", "Legrand, Joël"]) == 0
    finally:
        logging.getLogger("pipeline").removeHandler(handler)
    docs, issues = read_directory(gold)
    assert issues == []
    return {"out": out, "docs": docs, "log": handler.messages,
            "readme": (out / "README.md").read_text(encoding="utf-8"),
            "info": json.loads((out / "release.json").read_text(encoding="utf-8"))}


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_pubtator_titles_as_the_readme_says(released: dict[str, Any]) -> None:
    text = (released["out"] / "pubtator" / "corpus.pubtator").read_text(encoding="utf-8")
    titles = dict(re.findall(r"^([^|\n]+)\|t\|(.*)$", text, re.M))
    by_name = {d.name: d for d in released["docs"]}
    # the title is sentence {PMID}_1 when it is released, else empty
    assert titles == {pmid: by_name[f"{pmid}_1"].text if f"{pmid}_1" in by_name else "" for pmid in titles}
    assert set(titles) == {d.pmid for d in released["docs"]}
    empty = sum(1 for t in titles.values() if not t)
    assert 0 < empty < len(titles)
    assert (f"whose title is its sentence `{{PMID}}_1` when that sentence is released, else empty ({empty:,} of "
            f"{len(titles):,} documents have an empty title)") in released["readme"]


def test_bioc_validate_flags_what_the_readme_says(released: dict[str, Any]) -> None:
    collection = biocxml.loads((released["out"] / "bioc" / "corpus.bioc.xml").read_text(encoding="utf-8"))
    flagged: list[str] = []
    BioCValidator(onerror=lambda message, _traceback: flagged.append(message)).validate(collection)
    anns = {(d.id, a.id): a for d in collection.documents for p in d.passages for a in p.annotations}
    bad = {tuple(m.split(":", 2)[:2]) for m in flagged}
    assert len(bad) == len(flagged) and bad <= set(anns)
    discontiguous = {k for k, a in anns.items() if len(a.locations) > 1}
    gold = sum(1 for d in released["docs"] for t in d.textbounds if len(t.fragments) > 1)
    assert len(discontiguous) == gold
    assert bad <= discontiguous and bad
    passed = len(discontiguous) - len(bad)  # fragments one space apart: the joined text is the span's
    assert passed == sum(1 for k in discontiguous if anns[k].text == _span_text(collection, k))
    assert (f"it flags {len(bad):,} of the {len(discontiguous):,} discontiguous annotations "
            + (f"(the other {passed:,} have fragments one space apart" if passed else "and 0 other")) \
        in released["readme"]


def _span_text(collection: Any, key: tuple[str, str]) -> str:
    doc = next(d for d in collection.documents if d.id == key[0])
    ann = next(a for p in doc.passages for a in p.annotations if a.id == key[1])
    text = doc.passages[0].text
    return str(text[ann.total_span.offset:ann.total_span.end])


def _spans(path: Path) -> dict[str, set[tuple[int, int, str]]]:
    """Every BIO span of every label column of a CoNLL file with offsets, per document (decoded here)."""
    out: dict[str, set[tuple[int, int, str]]] = {}
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = [line for line in block.splitlines() if line]
        if not lines:
            continue
        name = lines[0].removeprefix("# ")
        rows = [line.split("\t") for line in lines[1:]]
        found: set[tuple[int, int, str]] = set()
        for col in range(3, len(rows[0])):
            start = end = None
            kind = ""
            for row in [*rows, ["", "-1", "-1", "O"] + ["O"] * len(rows[0])]:
                label = row[col]
                if label.startswith("I-") and label[2:] == kind:
                    end = int(row[2])
                    continue
                if start is not None:
                    found.add((start, end or 0, kind))
                start, end, kind = ((int(row[1]), int(row[2]), label[2:]) if label != "O" else (None, None, ""))
        out[name] = found
    return out


def test_conll_layers_never_join_fragments(released: dict[str, Any]) -> None:
    spans = _spans(released["out"] / "conll" / "corpus.layers.conll")
    for d in released["docs"]:
        contiguous = {(t.fragments[0][0], t.fragments[0][1], t.type) for t in d.textbounds if len(t.fragments) == 1}
        fragments = {(s, e, t.type) for t in d.textbounds if len(t.fragments) > 1 for s, e in t.fragments}
        # every span read back is an entity or a fragment of one, never fragments joined into a span
        assert spans[d.name] <= contiguous | fragments, d.name
        assert contiguous <= spans[d.name], d.name  # every contiguous entity in some column
    assert released["info"]["formats"]["conll/corpus.layers.conll"]["features"]["entities"]["kept"] == sum(
        1 for d in released["docs"] for t in d.textbounds if len(t.fragments) == 1)


def test_spacy_ents_as_release_json_and_the_readme_say(released: dict[str, Any]) -> None:
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    ents = 0
    for split in ("train", "dev", "test"):
        for sdoc in DocBin().from_disk(released["out"] / "spacy" / f"{split}.spacy").get_docs(nlp.vocab):
            ents += len(sdoc.ents)
    entities = sum(len(d.textbounds) for d in released["docs"])
    discontiguous = sum(1 for d in released["docs"] for t in d.textbounds if len(t.fragments) > 1)
    counted = Counter[str]()
    for c in released["info"]["spacy"].values():
        counted.update(c)
    assert counted["entities"] == entities
    assert counted["entities_not_in_ents"] == entities - ents  # every entity not in doc.ents, discontiguous included
    assert counted["entities_discontiguous"] == discontiguous
    assert counted["entities_overlapping_not_in_ents"] == entities - ents - discontiguous
    assert (f"`doc.ents` a flat view for `ner` ({ents:,} of the {entities:,} entities; not in it: the "
            f"{discontiguous:,} discontiguous ones and {entities - ents - discontiguous:,} contiguous ones "
            "overlapping a longer one)") in released["readme"]


def test_guidelines_count_every_relation_type(released: dict[str, Any]) -> None:
    guide = (released["out"] / "GUIDELINES.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \| .* \| ([\d,]+) \|$", guide, re.M))
    counted = Counter(r.type for d in released["docs"] for r in d.relations)
    assert {t: int(n.replace(",", "")) for t, n in rows.items()} == {t: counted.get(t, 0) for t in rows}
    assert rows["metabolizes"] == rows["transports"] == "0"  # in the schema, in no sentence
    assert set(counted) <= set(rows)


def test_pubtator_losses_are_logged_once_naming_the_files(released: dict[str, Any]) -> None:
    lines = [m for m in released["log"] if "PubTator" in m]
    notes = [m for m in lines if "notes_dropped" in m]
    assert len(notes) == 1, lines  # once per release, not once per file written
    losses = released["info"]["export"]["pubtator_losses"]
    assert "pubtator/corpus.pubtator" in losses and "pubtator/corpus.bconv.pubtator" in losses
    for path, counts in losses.items():
        assert f"{path} {counts['notes_dropped']}" in notes[0]
    # the four free-text notes the format cannot hold, as the format table declares
    assert losses["pubtator/corpus.pubtator"]["notes_dropped"] == \
        released["info"]["formats"]["pubtator/corpus.pubtator"]["features"]["notes"]["lost"]


def test_the_old_untrue_statements_are_gone(released: dict[str, Any]) -> None:
    readme = released["readme"]
    assert readme.count("`bioc.validate`") == 1
    assert "reports every discontiguous annotation" not in readme
    assert "whose title is its first released sentence" not in readme

