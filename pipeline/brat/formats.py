"""What each export format keeps of a brat corpus, computed by reading the export back.

Input: the brat documents exported (the reference) and the documents an independent reader gets back from
one exported file ([`read_back`][pipeline.brat.formats.read_back] names the reader of each format).  Output: a
table per format, one row per feature of ``FEATURES``, each with the number annotated, the number found again
in the export, a status (``kept``, ``lost``, ``partly kept: K of N``, ``none annotated``) and how the format
carries it.  Nothing in the table is written by hand: a feature counts as kept only when the reader finds it again.

Features and what "found again" means (entities are compared by document, fragments in ascending order and
type, so ids may change; relations by document, type and their argument entities by role):

* ``entities``; ``discontiguous`` (entities of several fragments); ``nested`` (entities holding another,
  [`nested_ids`][pipeline.brat.stats.nested_ids]);
* ``relations``; ``relation types`` (the distinct types as annotated, found on some relation);
* ``modality``: relations with a modality ([`pipeline.brat.modality`][pipeline.brat.modality]) found with the
  same modality;
* ``notes``: free text of notes (an entity's note, the free part of a relation's note after its modality
  tokens) found on the same annotation, in a note or in the source row;
* ``attributes``: brat attributes other than modality (``Composite``...);
* ``normalizations``: (entity, database, identifier);
* ``sentence boundaries``: documents found again with their name and exact text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bioc import biocjson, biocxml

from pipeline.brat import bigbio, spacy_docbin
from pipeline.brat.export import from_bioc
from pipeline.brat.modality import MODALITIES, modality_label
from pipeline.brat.pubtator import read_pubtator_export
from pipeline.brat.standoff import BratDocument, TextBound, read_directory
from pipeline.brat.stats import nested_ids, relation_note
from pipeline.schema import Schema

FEATURES = ("entities", "discontiguous", "nested", "relations", "relation types", "modality", "notes",
            "attributes", "normalizations", "sentence boundaries")

EntityKey = tuple[str, tuple[tuple[int, int], ...], str]


def _ekey(doc: BratDocument, t: TextBound) -> EntityKey:
    return (doc.name, tuple(sorted((s, e) for s, e in t.fragments)), t.type)


def inventory(docs: Iterable[BratDocument]) -> dict[str, set[Any]]:
    """Collect the features of documents as sets of comparable keys.

    Entities are keyed by (document, sorted fragments, type), so ids may change between the reference
    and an export; relations by (document, type, arguments' entity keys by role).

    Args:
        docs: The documents (offsets half-open into each one's ``.txt``).

    Returns:
        Feature of ``FEATURES`` -> the set of its keys found in ``docs``.
    """
    inv: dict[str, set[Any]] = {f: set() for f in FEATURES}
    for doc in docs:
        keys = {t.id: _ekey(doc, t) for t in doc.textbounds}
        nested = nested_ids(doc.textbounds)
        for t in doc.textbounds:
            k = keys[t.id]
            inv["entities"].add(k)
            if len(t.fragments) > 1:
                inv["discontiguous"].add(k)
            if t.id in nested:
                inv["nested"].add(k)
        for n in doc.normalizations:
            if n.target in keys:
                inv["normalizations"].add((keys[n.target], n.db, n.db_id))
        rel_keys: dict[str, Any] = {}
        for r in doc.relations:
            args = tuple((role, keys.get(ref)) for role, ref in r.args)
            rk = (doc.name, r.type, args)
            rel_keys[r.id] = rk
            inv["relations"].add(rk)
            inv["relation types"].add(r.type)
            found = {a.type for a in doc.attributes if a.target == r.id and a.type in MODALITIES}
            note = relation_note(doc, r.id)
            found |= note.modality
            if found:
                inv["modality"].add((rk, modality_label(found)))
            if note.free:
                inv["notes"].add((rk, note.free))
        for line in doc.notes:
            if line.target in keys:
                inv["notes"].add((keys[line.target], line.text.strip()))
        for a in doc.attributes:
            target = keys.get(a.target) or rel_keys.get(a.target)
            if target is not None and not (a.target in rel_keys and a.type in MODALITIES):
                inv["attributes"].add((target, a.type, a.value))
        inv["sentence boundaries"].add((doc.name, doc.text))
    return inv


def declare(reference: Mapping[str, set[Any]], exported: Mapping[str, set[Any]],
            how: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Declare what an export keeps of each feature (see the module docstring).

    Args:
        reference: The [`inventory`][pipeline.brat.formats.inventory] of the brat documents exported.
        exported: The inventory of the documents read back from the export.
        how: Feature -> how the format carries it; ``FEATURE:lost`` -> what is said when nothing is found
            again (falls back to ``FEATURE``).

    Returns:
        Feature -> ``{"annotated", "kept", "lost", "status", "how"}``; ``status`` is ``kept``, ``lost``,
            ``partly kept: K of N`` or ``none annotated``.
    """
    how = how or {}
    rows = {}
    for f in FEATURES:
        n = len(reference[f])
        k = len(reference[f] & exported.get(f, set()))
        if n == 0:
            status = "none annotated"
        elif k == n:
            status = "kept"
        elif k == 0:
            status = "lost"
        else:
            status = f"partly kept: {k:,} of {n:,}"
        rows[f] = {"annotated": n, "kept": k, "lost": n - k, "status": status,
                   "how": how.get(f, "") if k else how.get(f + ":lost", how.get(f, ""))}
    return rows


# --- readers ------------------------------------------------------------------------------------

_LABEL = re.compile(r"^([BI])-(.+)$")


def decode_bio(tokens: Sequence[tuple[int, int]], labels: Sequence[str]) -> list[tuple[tuple[int, int], str]]:
    """Decode one BIO label column into spans.

    An ``I-`` that continues nothing (or continues another type) opens a span, as lenient readers do.

    Args:
        tokens: The tokens' half-open ``(start, end)`` character offsets, in order.
        labels: One label per token (``B-TYPE``, ``I-TYPE`` or anything else for outside).

    Returns:
        The contiguous ``((start, end), type)`` spans, in order; a span runs from its first token's
            start to its last token's end.
    """
    spans: list[tuple[tuple[int, int], str]] = []
    current: tuple[int, int, str] | None = None
    for (s, e), label in zip(tokens, labels, strict=True):
        m = _LABEL.match(label)
        if m is None:
            if current:
                spans.append(((current[0], current[1]), current[2]))
            current = None
            continue
        tag, type_ = m.groups()
        if tag == "I" and current is not None and current[2] == type_:
            current = (current[0], e, type_)
            continue
        if current:
            spans.append(((current[0], current[1]), current[2]))
        current = (s, e, type_)
    if current:
        spans.append(((current[0], current[1]), current[2]))
    return spans


def read_conll(path: str | Path) -> list[BratDocument]:
    """Read brat documents (entities only) back from a CoNLL file of [`to_conll`][pipeline.brat.export.to_conll].

    The file has ``# NAME`` lines and ``token start end label...`` rows: every label column is decoded,
    the text rebuilt from the tokens at their offsets (spaces between them).  An entity found in several
    label columns is kept once.

    Args:
        path: The CoNLL file.

    Returns:
        One document per block, in file order (named by its ``# NAME`` line, else its position), each
            entity a contiguous text-bound with fresh ``T`` ids; offsets half-open into the rebuilt text.
    """
    docs: list[BratDocument] = []
    blocks = Path(path).read_text(encoding="utf-8").split("\n\n")
    for block in blocks:
        lines = [line for line in block.splitlines() if line]
        if not lines:
            continue
        name = lines[0][2:] if lines[0].startswith("# ") else str(len(docs))
        rows = [line.split("\t") for line in lines if not line.startswith("# ")]
        tokens = [(int(r[1]), int(r[2])) for r in rows]
        text = ""
        for r, (s, _e) in zip(rows, tokens, strict=True):
            text = text.ljust(s) + r[0]
        docs.append(_with_spans(BratDocument(name, text), tokens, [[r[k] for r in rows]
                                                                   for k in range(3, len(rows[0]))] if rows else []))
    return docs


def read_conll_spacy(path: str | Path, reference: Sequence[BratDocument]) -> list[BratDocument]:
    """Read brat documents (entities only) back from the ``spacy convert`` flavour of CoNLL.

    The file has ``-DOCSTART-`` lines and ``token label`` rows; it holds neither names nor offsets, so
    documents are matched to ``reference`` by order and each token is placed at its next occurrence in
    the reference text.

    Args:
        path: The CoNLL file ([`to_conll_spacy`][pipeline.brat.export.to_conll_spacy]).
        reference: The brat documents exported, in the order of the file.

    Returns:
        One document per block (at most as many as ``reference``), named and texted as its reference
            document, its entities offsets half-open into that text.

    Raises:
        ValueError: If a token is not found in its reference text (naming the file and document).
    """
    chunks = Path(path).read_text(encoding="utf-8").split("-DOCSTART- -X- O O\n")
    docs = []
    for ref, chunk in zip(reference, [c for c in chunks if c.strip()], strict=False):
        rows = [line.split("\t") for line in chunk.splitlines() if line]
        tokens = []
        pos = 0
        for r in rows:
            start = ref.text.find(r[0], pos)
            if start < 0:
                raise ValueError(f"{path}: token {r[0]!r} not found in {ref.name}")
            tokens.append((start, start + len(r[0])))
            pos = start + len(r[0])
        docs.append(_with_spans(BratDocument(ref.name, ref.text), tokens, [[r[-1] for r in rows]]))
    return docs


def _with_spans(doc: BratDocument, tokens: Sequence[tuple[int, int]], columns: Sequence[Sequence[str]]) -> BratDocument:
    seen = set()
    for column in columns:
        for (s, e), type_ in decode_bio(tokens, column):
            if (s, e, type_) not in seen:
                seen.add((s, e, type_))
                doc.textbounds.append(TextBound(f"T{len(doc.textbounds) + 1}", type_, ((s, e),), doc.text[s:e]))
    return doc


def read_bioc(path: str | Path, schema: Schema) -> list[BratDocument]:
    """Read brat documents back from a BioC file written by the export.

    Args:
        path: A BioC JSON file (``.json``) or BioC XML file (any other suffix).
        schema: The corpus schema, passed to [`from_bioc`][pipeline.brat.export.from_bioc].

    Returns:
        The documents [`from_bioc`][pipeline.brat.export.from_bioc] rebuilds.
    """
    p = Path(path)
    with p.open(encoding="utf-8") as fh:
        collection = biocjson.load(fh) if p.suffix == ".json" else biocxml.load(fh)
    return from_bioc(collection, schema)


def read_parquet_docs(paths: Iterable[Path], config: str) -> list[BratDocument]:
    """Read brat documents back from the Parquet files of one Hugging Face config.

    Args:
        paths: The Parquet files (e.g. one per split), read in the order given.
        config: ``source`` (read with [`from_source_rows`][pipeline.brat.bigbio.from_source_rows]), else
            ``bigbio_kb`` ([`from_kb_rows`][pipeline.brat.bigbio.from_kb_rows]).

    Returns:
        The documents of all rows, in order.
    """
    rows = [row for p in paths for row in bigbio.read_rows(p)]
    return bigbio.from_source_rows(rows) if config == "source" else bigbio.from_kb_rows(rows)


#: how each format carries a feature (shown when the reader finds it; ``FEATURE:lost`` when it does not)
HOW: dict[str, dict[str, str]] = {
    "brat": {f: "standoff" for f in FEATURES},
    "bioc": {"entities": "annotations",
             "discontiguous": "one location per fragment (ascending; brat's order in infon fragment_order)",
             "nested": "overlapping annotations", "relations": "relations with nodes Arg1/Arg2",
             "relation types": "infon type", "modality": "infons Negated/Hypothetical",
             "notes": "infons note, note_2...", "attributes": "infons named after the attribute",
             "normalizations": "infon identifier", "sentence boundaries": "one document per sentence"},
    "pubtator": {"entities": "entity lines", "discontiguous": "one line per fragment sharing the key column",
                 "discontiguous:lost": "fragments without a key column read as separate entities",
                 "nested": "overlapping entity lines", "relations": "relation lines (key column)",
                 "relation types": "relation type column", "modality": "5th relation column",
                 "notes:lost": "no column for notes", "attributes:lost": "no column for attributes",
                 "normalizations": "identifier column", "sentence boundaries": "sidecar .sentences.tsv"},
    "pubtator-plain": {"entities": "entity lines (six columns)",
                       "discontiguous:lost": "fragments without a key column read as separate entities",
                       "nested": "overlapping entity lines", "relations:lost": "no relation lines (they need keys)",
                       "relation types:lost": "no relations", "modality:lost": "no relations",
                       "notes:lost": "no column for notes", "attributes:lost": "no column for attributes",
                       "normalizations": "identifier column", "sentence boundaries": "one document per sentence"},
    "conll": {"entities": "BIO columns", "discontiguous:lost": "fragments only (each opens with B-)",
              "nested": "label columns", "nested:lost": "one label column", "relations:lost": "no relations",
              "relation types:lost": "no relations", "modality:lost": "no relations", "notes:lost": "no notes",
              "attributes:lost": "no attributes", "normalizations:lost": "no identifiers",
              "sentence boundaries": "one block per sentence"},
    "bigbio_kb": {"entities": "entities", "discontiguous": "offsets: one pair per fragment",
                  "nested": "entities (overlapping offsets)", "relations": "relations",
                  "relations:lost": "relations", "relation types": "relation type",
                  "modality:lost": "negated/hypothetical relations excluded", "notes:lost": "no field",
                  "attributes:lost": "no field", "normalizations": "entities.normalized",
                  "sentence boundaries": "one row per sentence"},
    "source": {"entities": "entities", "discontiguous": "offsets (as annotated)", "nested": "entities",
               "relations": "relations.arguments", "relation types": "relations.type",
               "modality": "relations.modality", "notes": "notes, note_free_text", "attributes": "attributes",
               "normalizations": "entities.normalized", "sentence boundaries": "one row per sentence"},
    "spacy": {"entities": "doc.spans['sc'] and doc.spans['discontiguous']",
              "discontiguous": "doc.spans['discontiguous'], fragments linked by span.id_",
              "nested": "doc.spans['sc']", "relations:lost": "no relations", "relation types:lost": "no relations",
              "modality:lost": "no relations", "notes:lost": "no notes", "attributes:lost": "no attributes",
              "normalizations:lost": "no identifiers", "sentence boundaries": "one Doc per sentence"},
}


def read_back(fmt: str, path: Path, schema: Schema, reference: Sequence[BratDocument]) -> list[BratDocument]:
    """Read one exported file back with an independent reader.

    Args:
        fmt: The format: ``brat``, ``bioc``, ``pubtator``, ``pubtator-plain``, ``conll``, ``conll-spacy``,
            ``bigbio_kb``, ``source`` or ``spacy``.
        path: The exported file; a directory for ``brat``, for ``bigbio_kb`` and ``source`` (its
            ``*.parquet`` files) and for ``spacy`` (its ``*.spacy`` files).
        schema: The corpus schema (the BioC reader needs it).
        reference: The brat documents exported (the ``conll-spacy`` reader needs their names and texts).

    Returns:
        The documents the reader gets.

    Raises:
        KeyError: If ``fmt`` is not a known format.
    """
    readers: dict[str, Callable[[], list[BratDocument]]] = {
        "brat": lambda: read_directory(path)[0],
        "bioc": lambda: read_bioc(path, schema),
        "pubtator": lambda: read_pubtator_export(path),
        "pubtator-plain": lambda: read_pubtator_export(path),
        "conll": lambda: read_conll(path),
        "conll-spacy": lambda: read_conll_spacy(path, reference),
        "bigbio_kb": lambda: read_parquet_docs(sorted(path.glob("*.parquet")), "bigbio_kb"),
        "source": lambda: read_parquet_docs(sorted(path.glob("*.parquet")), "source"),
        "spacy": lambda: [d for p in sorted(path.glob("*.spacy")) for d in spacy_docbin.read_docbin(p)],
    }
    return readers[fmt]()


def format_table(reference: Sequence[BratDocument], exports: Sequence[tuple[str, str, Path]], schema: Schema,
                 root: Path) -> dict[str, dict[str, Any]]:
    """Compute the format table of a release: what each exported file keeps of the brat corpus.

    Args:
        reference: The brat documents exported.
        exports: ``(label, reader format, path)`` per exported file; the reader format is a ``fmt`` of
            [`read_back`][pipeline.brat.formats.read_back].
        schema: The corpus schema.
        root: The directory the paths are shown relative to (they must lie under it).

    Returns:
        ``{file: {"format": label, "features": declare(...)}}``, the file being ``path`` relative to
            ``root`` (POSIX form), in the order of ``exports``.
    """
    ref = inventory(reference)
    out: dict[str, dict[str, Any]] = {}
    for label, fmt, path in exports:
        got = inventory(read_back(fmt, path, schema, reference))
        how = HOW["conll" if fmt.startswith("conll") else fmt]
        out[path.relative_to(root).as_posix()] = {"format": label, "features": declare(ref, got, how)}
    return out


def markdown(table: Mapping[str, Mapping[str, Any]]) -> str:
    """Render the format table as one Markdown table.

    Args:
        table: A [`format_table`][pipeline.brat.formats.format_table] result.

    Returns:
        A row per exported file, a column per feature (status, and how the format carries it).
    """
    header = ["file", "format", *FEATURES]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for path, entry in table.items():
        cells = []
        for f in FEATURES:
            row = entry["features"][f]
            cell = row["status"] + (f" ({row['how']})" if row["how"] and row["status"] != "none annotated" else "")
            cells.append(cell.replace("|", "\\|"))
        lines.append(f"| `{path}` | {entry['format']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def totals(table: Mapping[str, Mapping[str, Any]]) -> dict[str, Counter[str]]:
    """Count what each exported file loses.

    Args:
        table: A [`format_table`][pipeline.brat.formats.format_table] result.

    Returns:
        ``{file: Counter(feature -> number lost)}``, only the features with a loss.
    """
    return {p: Counter({f: r["lost"] for f, r in e["features"].items() if r["lost"]}) for p, e in table.items()}
