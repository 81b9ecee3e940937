"""The data files of a release: every format, the Hugging Face dataset, folds, the sentence map.

Every format for the whole corpus and per split, the Hugging Face dataset (Parquet + card), spaCy
``DocBin`` files, cross-validation folds, the sentence map, the annotation scheme and the changelog.

Input: the released brat documents (offsets half-open into each ``.txt``), the export settings and the split
assignment; output: files under the release's staging directory (paths below are relative to it).  Everything
is a pure function of its inputs, so two runs write the same bytes.

* ``bioc/corpus.bioc.xml``, ``bioc/corpus.bioc.json``, ``bioc/corpus.key`` (the key file the header names);
  ``pubtator/corpus.pubtator`` (+ ``.sentences.tsv``), ``pubtator/corpus.bconv.pubtator`` (six standard
  columns, sentence level, entities only: what ``bconv`` reads); ``conll/corpus.conll`` (``outermost``: one label
  column), ``conll/corpus.layers.conll`` (``layers``: one column per nesting layer, every contiguous entity in
  some column), ``conll/corpus.spacy.conll`` (for ``spacy convert -c ner``); the same per split as
  ``{split}.bioc.xml`` ... beside them;
* ``hf/{name}_source/{train,validation,test}.parquet`` and ``hf/{name}_bigbio_kb/...``
  ([`pipeline.brat.bigbio`][pipeline.brat.bigbio]; split ``dev`` is called ``validation`` there, as Hugging Face
  expects);
* ``spacy/{train,dev,test}.spacy`` ([`pipeline.brat.spacy_docbin`][pipeline.brat.spacy_docbin]);
* ``splits/folds.tsv`` and ``splits/folds.json``: 10 folds grouped by PMID over the whole corpus
  ([`kfold_groups`][pipeline.nlp.folds.kfold_groups], seed 13), the paper's 10-fold evaluation;
* ``sentences.tsv``: document, PMID, sentence index, split, fold, length, and the offset of the sentence in
  its PubMed record when the build manifest's sentence records give it.

Relation types are written as annotated in every file (no ``relation_map``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bioc import biocjson, biocxml

from pipeline.brat import bigbio, spacy_docbin
from pipeline.brat import export as export_mod
from pipeline.brat import pubtator as pubtator_mod
from pipeline.brat.standoff import BratDocument
from pipeline.documents import SentenceRecord
from pipeline.nlp.folds import kfold_groups
from pipeline.schema import Schema
from pipeline.store import iter_directory

SPLITS = ("train", "dev", "test")
HF_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
N_FOLDS = 10
FOLD_SEED = 13


def config_name(name: str) -> str:
    """Make a BigBIO-style configuration prefix from the corpus name (``pgx-corpus`` -> ``pgx_corpus``).

    Args:
        name: The corpus name.

    Returns:
        The name lower-cased, each run of non-word characters replaced by ``_`` (``corpus`` when nothing
        is left).
    """
    return re.sub(r"\W+", "_", name).strip("_").lower() or "corpus"


def write_formats(docs: Sequence[BratDocument], out: Path, stem: str, schema: Schema, date: str, source: str,
                  cfg: export_mod.ExportConfig, counts: Counter[str] | None = None,
                  losses: dict[str, Counter[str]] | None = None) -> list[tuple[str, str, Path]]:
    """Write BioC XML/JSON, PubTator and the three CoNLL layouts of documents.

    Files are ``out/{bioc,pubtator,conll}/{stem}.*`` (see the module docstring), written directly (the
    caller writes into a staging directory); the PubTator sidecar is written at abstract level only.  The
    PubTator losses are not logged here: they are returned in ``losses`` for the caller to report once.

    Args:
        docs: The documents; offsets are half-open character offsets into each ``.txt``.
        out: The release's staging directory.
        stem: The file stem: ``corpus``, or a split's name.
        schema: The schema.
        date: The BioC collection date, written as given.
        source: The BioC collection source (the corpus name).
        cfg: The export configuration (PubTator level and discontiguous entities).
        counts: Counters updated in place with the outermost CoNLL layout's ``conll_misaligned`` and
            ``conll_not_in_first_layer``, the PubTator file's ``pubtator_documents`` and
            ``pubtator_empty_titles`` (read back from the file), and what ``bioc.validate`` says of the BioC
            XML file read back: ``bioc_annotations``, ``bioc_discontiguous``, ``bioc_validate_flagged``,
            ``bioc_validate_flagged_discontiguous``; a new one when ``None``.
        losses: Updated in place when given: per PubTator file (its path relative to ``out``), the counts
            of what it cannot hold (``DROP_KEYS`` of [`pipeline.brat.pubtator`][pipeline.brat.pubtator], non-zero only).

    Returns:
        ``(label, reader format, path)`` per file, for [`format_table`][pipeline.brat.formats.format_table].
    """
    counts = counts if counts is not None else Counter()
    losses = losses if losses is not None else {}
    collection = export_mod.to_bioc(docs, schema, counts=Counter(), source=source)
    collection.date = date
    bioc_dir, pub_dir, conll_dir = out / "bioc", out / "pubtator", out / "conll"
    for d in (bioc_dir, pub_dir, conll_dir):
        d.mkdir(parents=True, exist_ok=True)
    xml, js = bioc_dir / f"{stem}.bioc.xml", bioc_dir / f"{stem}.bioc.json"
    xml.write_text(biocxml.dumps(collection), encoding="utf-8", newline="\n")
    js.write_text(biocjson.dumps(collection, indent=2) + "\n", encoding="utf-8", newline="\n")
    counts.update(bioc_validation(xml))
    pub = pub_dir / f"{stem}.pubtator"
    lost: Counter[str] = Counter()
    text, spans = export_mod.to_pubtator(docs, schema, level=cfg.pubtator_level,
                                         discontiguous=cfg.pubtator_discontiguous, counts=lost, warn=False)
    pub.write_text(text, encoding="utf-8", newline="\n")
    _add_losses(losses, pub.relative_to(out).as_posix(), lost)
    titles = [m.group(1) for m in _PUBTATOR_TITLE.finditer(text)]
    counts["pubtator_documents"] += len(titles)
    counts["pubtator_empty_titles"] += sum(1 for t in titles if not t)
    if cfg.pubtator_level == "abstract":
        pubtator_mod.write_sidecar(spans, pubtator_mod.sidecar_path(pub))
    plain = pub_dir / f"{stem}.bconv.pubtator"
    lost = Counter()
    plain.write_text(export_mod.to_pubtator_plain(docs, schema, counts=lost, warn=False), encoding="utf-8",
                     newline="\n")
    _add_losses(losses, plain.relative_to(out).as_posix(), lost)
    outer, layers, spacy_conll = (conll_dir / f"{stem}.conll", conll_dir / f"{stem}.layers.conll",
                                  conll_dir / f"{stem}.spacy.conll")
    c_outer: Counter[str] = Counter()
    outer.write_text(export_mod.to_conll(docs, scheme="outermost", counts=c_outer), encoding="utf-8", newline="\n")
    c_layers: Counter[str] = Counter()
    layers.write_text(export_mod.to_conll(docs, scheme="layers", counts=c_layers), encoding="utf-8", newline="\n")
    spacy_conll.write_text(export_mod.to_conll_spacy(docs), encoding="utf-8", newline="\n")
    counts["conll_misaligned"] += c_outer["conll_misaligned"]
    counts["conll_not_in_first_layer"] += c_outer["conll_not_in_first_layer"]
    return [("BioC XML", "bioc", xml), ("BioC JSON", "bioc", js), ("PubTator", "pubtator", pub),
            ("PubTator, six columns (bconv)", "pubtator-plain", plain),
            ("CoNLL outermost", "conll", outer), ("CoNLL layers", "conll", layers),
            ("CoNLL for spacy convert (outermost)", "conll-spacy", spacy_conll)]


#: the title line of a PubTator document: ``ID|t|TITLE`` (the title may be empty)
_PUBTATOR_TITLE = re.compile(r"^[^|\n]+\|t\|(.*)$", re.M)


def _add_losses(losses: dict[str, Counter[str]], path: str, lost: Counter[str]) -> None:
    found = Counter({k: lost[k] for k in pubtator_mod.DROP_KEYS if lost[k]})
    if found:
        losses[path] = found


def bioc_validation(path: Path) -> Counter[str]:
    """Count what ``bioc.validate`` (the ``bioc`` package's validator) flags in a BioC XML file.

    The validator compares each annotation's text with the text from its first location's start to its
    last location's end; a discontiguous annotation whose text is its fragments joined by a space passes
    only when the gap between them is that one space.

    Args:
        path: The BioC XML file.

    Returns:
        ``bioc_annotations``, ``bioc_discontiguous`` (annotations with more than one location),
        ``bioc_validate_flagged`` and ``bioc_validate_flagged_discontiguous`` (of those, the ones flagged).
    """
    from bioc.validator import BioCValidator

    collection = biocxml.loads(path.read_text(encoding="utf-8"))
    flagged: list[str] = []

    def onerror(message: str, traceback: list[Any]) -> None:
        flagged.append(message)

    BioCValidator(onerror=onerror).validate(collection)
    out: Counter[str] = Counter()
    by_doc: dict[str, set[str]] = {}
    for m in flagged:
        head = m.split(":", 2)
        if len(head) == 3 and "Annotation text is incorrect" in head[2]:
            by_doc.setdefault(head[0], set()).add(head[1])
    for doc in collection.documents:
        for passage in doc.passages:
            for ann in passage.annotations:
                multi = len(ann.locations) > 1
                bad = ann.id in by_doc.get(doc.id, set())
                out["bioc_annotations"] += 1
                out["bioc_discontiguous"] += multi
                out["bioc_validate_flagged"] += bad
                out["bioc_validate_flagged_discontiguous"] += bad and multi
    return out


def split_of(docs: Sequence[BratDocument], parts: Mapping[str, Sequence[str]]) -> dict[str, list[BratDocument]]:
    """Group documents by split.

    Args:
        docs: The documents.
        parts: Split -> its PMIDs.

    Returns:
        Split (``train``, ``dev``, ``test``) -> its documents, in the order of ``docs``; a document whose
        PMID is in no split is in none.
    """
    where = {pmid: name for name, pmids in parts.items() for pmid in pmids}
    return {name: [d for d in docs if where.get(d.pmid) == name] for name in SPLITS}


def write_hf(by_split: Mapping[str, Sequence[BratDocument]], out: Path, prefix: str) -> dict[str, Any]:
    """Write the two Parquet configurations per split under ``out/hf/``.

    A split without documents gets no file (``datasets`` cannot load an empty split) and is left out of
    the card ([`hf_front_matter`][pipeline.campaign.release_data.hf_front_matter]); the datasheet names it.

    Args:
        by_split: Split (``train``, ``dev``, ``test``) -> its documents.
        out: The release's staging directory.
        prefix: The configuration prefix ([`config_name`][pipeline.campaign.release_data.config_name]).

    Returns:
        ``{"source": ..., "bigbio_kb": ...}``: per configuration, Hugging Face split name -> its counts.
    """
    summary: dict[str, Any] = {"source": {}, "bigbio_kb": {}}
    for split in SPLITS:
        docs = by_split[split]
        if not docs:
            continue
        kb_counts: Counter[str] = Counter()
        src_counts: Counter[str] = Counter()
        kb_rows = [bigbio.kb_row(d, kb_counts) for d in docs]
        src_rows = [bigbio.source_row(d, src_counts) for d in docs]
        hf = HF_SPLITS[split]
        bigbio.write_parquet(kb_rows, bigbio.KB_SCHEMA, out / "hf" / f"{prefix}_bigbio_kb" / f"{hf}.parquet")
        bigbio.write_parquet(src_rows, bigbio.SOURCE_SCHEMA, out / "hf" / f"{prefix}_source" / f"{hf}.parquet")
        summary["bigbio_kb"][hf] = dict(sorted(kb_counts.items()))
        summary["source"][hf] = dict(sorted(src_counts.items()))
    return summary


def hf_front_matter(prefix: str, license_id: str | None, pretty_name: str, splits: Sequence[str]) -> str:
    """Write the dataset card's YAML front matter.

    Args:
        prefix: The configuration prefix; the configurations are ``{prefix}_source`` (the default) and
            ``{prefix}_bigbio_kb``.
        license_id: The licence (SPDX id, written lower-cased); ``None`` for none stated.
        pretty_name: The dataset's display name.
        splits: The Hugging Face names of the non-empty splits.

    Returns:
        The front matter, between ``---`` lines.
    """
    lines = ["---", "language:", "- en"]
    if license_id:
        lines.append(f"license: {license_id.lower()}")
    lines += [f"pretty_name: {json.dumps(pretty_name)}", "tags:", "- biomedical", "- bigbio",
              "- named-entity-recognition", "- relation-extraction", "configs:"]
    for config, default in ((f"{prefix}_source", True), (f"{prefix}_bigbio_kb", False)):
        lines.append(f"- config_name: {config}")
        if default:
            lines.append("  default: true")
        lines.append("  data_files:")
        for hf in splits:
            lines += [f"  - split: {hf}", f"    path: hf/{config}/{hf}.parquet"]
    lines += ["---", ""]
    return "\n".join(lines) + "\n"


def write_spacy(by_split: Mapping[str, Sequence[BratDocument]], out: Path) -> dict[str, Any]:
    """Write one spaCy ``DocBin`` per split: ``out/spacy/{train,dev,test}.spacy``.

    Args:
        by_split: Split (``train``, ``dev``, ``test``) -> its documents.
        out: The release's staging directory.

    Returns:
        Split -> the counts [`write_docbin`][pipeline.brat.spacy_docbin.write_docbin] made.
    """
    summary = {}
    for split in SPLITS:
        counts: Counter[str] = Counter()
        spacy_docbin.write_docbin(by_split[split], out / "spacy" / f"{split}.spacy", counts)
        summary[split] = dict(sorted(counts.items()))
    return summary


def write_folds(docs: Sequence[BratDocument], out: Path, k: int = N_FOLDS, seed: int = FOLD_SEED) -> dict[str, Any]:
    """Write the cross-validation folds, grouped by PMID: ``splits/folds.tsv`` and ``splits/folds.json``.

    Args:
        docs: The released documents.
        out: The release's staging directory.
        k: The number of folds.
        seed: The seed of [`kfold_groups`][pipeline.nlp.folds.kfold_groups].

    Returns:
        What ``folds.json`` holds (``k``, ``seed``, ``grouped_by``, ``assignment``, ``folds`` with
        documents and PMIDs per fold) plus ``fold_of`` (document -> fold).  When the folds cannot be made
        (fewer PMIDs than folds), ``{"k", "seed", "error"}`` and no file is written; the datasheet says so.
    """
    names = [d.name for d in docs]
    try:
        folds = kfold_groups(names, k=k, seed=seed)
    except ValueError as exc:
        return {"k": k, "seed": seed, "error": str(exc)}
    fold_of = {n: i for i, f in enumerate(folds) for n in f}
    pmid = {d.name: d.pmid for d in docs}
    lines = ["document\tpmid\tfold"] + [f"{n}\t{pmid[n]}\t{fold_of[n]}" for n in names]
    (out / "splits").mkdir(parents=True, exist_ok=True)
    (out / "splits" / "folds.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    summary = {"k": k, "seed": seed, "grouped_by": "PMID", "assignment": "pipeline/nlp/folds.py kfold_groups",
               "folds": [{"fold": i, "documents": len(f), "pmids": len({pmid[n] for n in f})}
                         for i, f in enumerate(folds)]}
    (out / "splits" / "folds.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n",
                                               encoding="utf-8", newline="\n")
    summary["fold_of"] = fold_of
    return summary


def record_offsets(manifest: Path | None, docs: Sequence[BratDocument]) -> dict[str, int]:
    """Find each released sentence's character offset in its PubMed record text.

    The record text is the title, a newline, the abstract.  Offsets are read from the sentence records of
    the build the manifest names (its ``sampled`` stage, else ``filtered``; relative paths are relative
    to the manifest's directory).  Only a sentence whose record text equals the released text gets one;
    an offset is never guessed.

    Args:
        manifest: The build manifest; ``None`` gives no offsets.
        docs: The released documents.

    Returns:
        ``{document: start}``, the start of the sentence in its record text (a character offset, 0-based);
        empty without a manifest or those records.

    Raises:
        OSError: If the manifest cannot be read.
        ValueError: If the manifest is not JSON.
    """
    if manifest is None:
        return {}
    data = json.loads(manifest.read_text(encoding="utf-8"))
    outputs = data.get("outputs") or {}
    texts = {d.name: d.text for d in docs}
    for stage in ("sampled", "filtered"):
        value = outputs.get(stage)
        if not value:
            continue
        path = Path(value) if Path(value).is_absolute() else manifest.parent / value
        if not path.is_dir():
            continue
        out = {}
        for rec in iter_directory(path, SentenceRecord):
            name = f"{rec.pmid}_{rec.index + 1}"
            if texts.get(name) == rec.text:
                out[name] = rec.start
        return out
    return {}


def sentence_map(docs: Sequence[BratDocument], split_docs: Mapping[str, Sequence[BratDocument]],
                 fold_of: Mapping[str, int], offsets: Mapping[str, int] | None = None) -> str:
    """Write ``sentences.tsv``: one row per released sentence.

    Columns: document, PMID, sentence index (the ``k`` of ``{PMID}_{k}``), split, fold, characters, and
    the sentence's start in its PubMed record text (title, newline, abstract) when known (empty
    otherwise).

    Args:
        docs: The released documents, in row order.
        split_docs: Split -> its documents.
        fold_of: Document -> its fold.
        offsets: Document -> its start in the record text, from
            [`record_offsets`][pipeline.campaign.release_data.record_offsets].

    Returns:
        The TSV text, with a header row.
    """
    offsets = offsets or {}
    split_of_doc = {d.name: s for s, ds in split_docs.items() for d in ds}
    rows = ["document\tpmid\tsentence_index\tsplit\tfold\tcharacters\tstart_in_record"]
    for d in docs:
        index = d.name.split("_", 1)[1] if "_" in d.name else ""
        fold = fold_of.get(d.name)
        start = offsets.get(d.name)
        rows.append(f"{d.name}\t{d.pmid}\t{index}\t{split_of_doc.get(d.name, '')}\t"
                    f"{'' if fold is None else fold}\t{len(d.text)}\t{'' if start is None else start}")
    return "\n".join(rows) + "\n"


def changelog(docs: Sequence[BratDocument], previous: Path | None, version: str, previous_label: str = "") -> str:
    """Write ``CHANGELOG.md``: the documents added, removed and changed since a previous release.

    Document ids are the brat names (``{PMID}_{k}``), stable across releases; a document is *changed*
    when its text or any annotation line differs (the ``.ann`` is compared in the canonical order of
    [`dumps`][pipeline.brat.standoff.dumps]).

    Args:
        docs: The released documents.
        previous: The previous release's ``brat/`` directory; ``None`` for a first release (only the
            count of documents is given then).
        version: This release's version, the heading (``this release`` when empty).
        previous_label: The previous release's version (from its ``release.json``), said in the heading;
            empty when it has none (the heading then says "since the previous release").

    Returns:
        The Markdown text.
    """
    from pipeline.brat.standoff import dumps, read_directory

    current = {d.name: (d.text, dumps(d)) for d in docs}
    lines = ["# Changelog", "", "Document ids are the brat document names (`{PMID}_{k}`: PMID and sentence "
             "index); they stay the same across releases, so a document can be followed from one to the next.", ""]
    title = f"## {version or 'this release'}"
    if previous is None:
        lines += [title, "", f"First release: {len(current):,} documents.", ""]
        return "\n".join(lines)
    old_docs, _issues = read_directory(previous)
    old = {d.name: (d.text, dumps(d)) for d in old_docs}
    added = sorted(set(current) - set(old))
    removed = sorted(set(old) - set(current))
    changed = sorted(n for n in set(current) & set(old) if current[n] != old[n])
    lines += [title + (f" (since {previous_label})" if previous_label else " (since the previous release)"), "",
              f"{len(added):,} added, {len(removed):,} removed, {len(changed):,} with changed text or annotations, "
              f"{len(set(current) & set(old)) - len(changed):,} unchanged.", ""]
    for label, names in (("Added", added), ("Removed", removed), ("Changed", changed)):
        if names:
            lines += [f"### {label}", "", *(f"- {n}" for n in names), ""]
    return "\n".join(lines)


def annotation_scheme(conf_text: str, name: str, relation_counts: Mapping[str, int] | None = None,
                      pgxcorpus_method: bool = False) -> str:
    """Write ``GUIDELINES.md``: the annotation scheme of the release.

    As its ``annotation.conf`` configures it (entity type hierarchy, relation types and their argument
    types, modality attributes), and the conventions the release's files follow (offsets, nesting,
    discontiguous entities, the modality note grammar).

    Args:
        conf_text: The text of the release's ``annotation.conf``.
        name: The corpus name, in the title.
        relation_counts: Relation type -> its relations in the release; each type of the scheme is given its
            count, 0 included (a type the scheme allows but no sentence holds).
        pgxcorpus_method: The corpus follows the PGxCorpus method: its guidelines are named as those the
            annotators used.

    Returns:
        The Markdown text.
    """
    from pipeline.brat.modality import MODALITY_TOKENS
    from pipeline.brat.validate import OVERLAP_TYPES, parse_annotation_conf

    conf, _problems = parse_annotation_conf(conf_text, "annotation.conf")
    guidelines = ("those of the PGxCorpus method, Legrand et al., Scientific Data 7:3, 2020" if pgxcorpus_method
                  else "this release does not include them")
    counts = relation_counts or {}
    lines = [f"# {name}: annotation scheme", "",
             "Generated from `brat/annotation.conf`. It summarises the scheme the annotations follow; it does not "
             f"replace the guidelines the annotators used ({guidelines}).", "", "## Entity types", "",
             "Indented types are subtypes; an entity takes the most specific type the sentence supports.", ""]
    depth: dict[str, int] = {}
    for t in conf.entity_types:
        parent = conf.entity_parent.get(t)
        depth[t] = depth.get(parent, -1) + 1 if parent else 0
        lines.append("  " * depth[t] + f"- `{t}`")
    lines += ["", "## Relation types", "",
              "The last column counts the relations of each type in this release (0: the scheme allows the type, "
              "no sentence of the release holds one).", "",
              "| relation | Arg1 | Arg2 | relations |", "|---|---|---|---|"]
    for r in conf.relations:
        if r.type in OVERLAP_TYPES or len(r.types) != 2:
            continue
        lines.append(f"| `{r.type}` | " + " | ".join(", ".join(f"`{t}`" for t in arg) for arg in r.types)
                     + f" | {counts.get(r.type, 0):,} |")
    listed = {r.type for r in conf.relations}
    others = {t: n for t, n in counts.items() if t not in listed}
    if others:
        lines += ["", "Relations of types the configuration does not list: "
                  + ", ".join(f"`{t}` {n:,}" for t, n in sorted(others.items())) + "."]
    modality = [a.name for a in conf.attributes.values() if "<RELATION>" in a.targets]
    lines += ["", "## Modality of relations", "",
              "A relation stated as not holding, or only hypothesised, keeps its type; its modality is "
              + ("a brat attribute (" + ", ".join(f"`{m}`" for m in modality) + ") or " if modality else "")
              + "the leading whole tokens of its one AnnotatorNotes (pipeline/brat/modality.py); other note text "
              "is a free comment, and a token is never matched by prefix:", "",
              "| note token | modality |", "|---|---|"]
    lines += [f"| `{tok}` | {mod} |" for tok, mod in MODALITY_TOKENS.items()]
    lines += ["", "## Conventions of the files", "",
              "- Offsets are half-open character offsets into the sentence text (`.txt`).",
              "- A discontiguous entity has several fragments (`start end;start end` in brat).",
              "- Entities may nest: an entity is *nested* when one of its fragments wholly contains another "
              "entity (Table 2).",
              "- Relation types are as annotated in every file (no folding).", ""]
    return "\n".join(lines)
