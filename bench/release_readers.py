"""Benchmark (not a test): a release read by the tools of its users, with figures to compare to its format table.

Builds a release of ../shared/data/pgxcorpus-dev/gold (or reads ``--release DIR``) and prints

1. ``bconv`` (installed for manual checks only: it pins lxml<5, so it is no project dependency and no test
   imports it): BioC XML and JSON (entities read, entity texts equal to the document text at their
   offsets), ``corpus.pubtator`` (expected to be refused: a 7th key column) and ``corpus.bconv.pubtator``;
2. ``bioc`` 2.x: annotations, locations, relations, modality infons, notes, and ``bioc.validate`` errors
   (its first-to-last convention flags every gapped annotation, documented in the datasheet);
3. the release's own format table (release.json) for the same files.

Usage: ``python bench/release_readers.py [--release DIR]``
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from contextlib import redirect_stderr
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.cli import main  # noqa: E402

GOLD = ROOT.parent / "shared" / "data" / "pgxcorpus-dev" / "gold"


def bconv_figures(rel: Path) -> None:
    try:
        import bconv
    except ImportError:
        print("bconv: not installed; skipped")
        return
    for name, fmt in (("bioc/corpus.bioc.xml", "bioc_xml"), ("bioc/corpus.bioc.json", "bioc_json"),
                      ("pubtator/corpus.pubtator", "pubtator"), ("pubtator/corpus.bconv.pubtator", "pubtator")):
        try:
            coll = bconv.load(str(rel / name), fmt=fmt)
        except Exception as exc:  # noqa: BLE001 - reported, this is what the bench measures
            print(f"bconv {name}: refused ({type(exc).__name__}: {str(exc).splitlines()[0]})")
            continue
        ents = [(d, e) for d in coll for e in d.iter_entities()]
        bad = sum(1 for d, e in ents if d.text[e.start:e.end] != e.text) if fmt == "pubtator" else None
        print(f"bconv {name}: {len(coll)} documents, {len(ents)} entities"
              + (f", {bad} entity texts differing from the text at their offsets" if bad is not None else ""))


def bioc_figures(rel: Path) -> None:
    import bioc
    from bioc import biocxml

    collection = biocxml.loads((rel / "bioc" / "corpus.bioc.xml").read_text())
    anns = [a for d in collection.documents for p in d.passages for a in p.annotations]
    rels = [r for d in collection.documents for p in d.passages for r in p.relations]
    modality = sum(1 for r in rels if "Negated" in r.infons or "Hypothetical" in r.infons)
    notes = sum(1 for x in [*anns, *rels] for k in x.infons if k == "note" or k.startswith("note_"))
    print(f"bioc: {len(anns)} annotations, {sum(len(a.locations) for a in anns)} locations, {len(rels)} relations, "
          f"{modality} with modality infons, {notes} note infons")
    buf = io.StringIO()
    with redirect_stderr(buf):
        try:
            bioc.validate(collection, onerror=lambda msg, tb: print(msg, file=sys.stderr))  # type: ignore[arg-type]
        except TypeError:
            bioc.validate(collection)
    errors = [line for line in buf.getvalue().splitlines() if line.strip()]
    print(f"bioc.validate: {len(errors)} messages (gapped annotations: first-to-last convention)")


def main_(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", type=Path, help="an existing release directory (default: build one of the dev gold)")
    args = ap.parse_args(argv)
    rel = args.release
    if rel is None:
        if not GOLD.is_dir():
            print(f"{GOLD}: not available", file=sys.stderr)
            return 2
        rel = Path(tempfile.mkdtemp()) / "rel"
        code = main(["--log-level", "ERROR", "release", str(GOLD), "--out", str(rel), "--name", "pgxcorpus-dev",
                     "--license", "CC-BY-NC-4.0"])
        if code:
            return code
    bconv_figures(rel)
    bioc_figures(rel)
    table = json.loads((rel / "release.json").read_text())["formats"]
    for name, entry in table.items():
        lost = {f: r["lost"] for f, r in entry["features"].items() if r["lost"]}
        print(f"declared {name}: lost {lost or 'nothing'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
