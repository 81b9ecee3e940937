"""Corpus statistics of a brat collection (PGxCorpus Tables 2-3) and of a pipeline run (Tables 6-7).

Input: a brat directory (``NAME.txt`` + ``NAME.ann``; one document per
sentence in PGxCorpus, named ``{PMID}_{k}``), offsets half-open into the
``.txt``.  Definitions (Legrand et al., Scientific Data 2020):

* **discontiguous**: the entity has more than one fragment.
* **nested** (the rule that reproduces every cell of Table 2 on the released
  corpus): entity E is nested when **one of its fragments wholly contains
  another entity** F of the same document (any type), i.e. every fragment of F
  lies inside that one fragment of E, and F is **not exactly that fragment**
  (F is not a single fragment with the same offsets).  So two entities on the
  same span do not make each other nested; crossing entities are not nested;
  an entity that lies in the gap of a discontiguous entity, or whose fragments
  are spread over two fragments of E, does not make E nested; an entity only
  *contained* in another one (``estrone`` inside ``levels of estrone``)
  encompasses nothing and is not nested by itself.
* each entity falls in exactly one class: ``simple`` (neither), ``nested``
  (nested only), ``discontiguous`` (discontiguous only) or ``both``; it is
  counted under its own type only (no roll-up to ancestors).
* relation **modality**: brat attributes named after the schema's
  ``relation_attributes`` (``Negated``, ``Hypothetical``) or the leading whole
  modality tokens of the relation's AnnotatorNotes, read with the project's one
  grammar ([`pipeline.brat.modality`][pipeline.brat.modality]: ``hyp``, ``hypo``, ``htp`` ->
  Hypothetical; ``neg``, ``not`` -> Negated; never a prefix match).  Every
  modality token is counted as written in ``modality_tokens``; the free text of
  the notes in ``comment_notes``.  ``relation_modality_paper`` counts the same
  relations by the rule of the paper's Table 3 (tokens *starting with* ``neg``
  or ``hyp``), so a datasheet can show both where they differ.
* **key groups**: an entity belongs to the group of its root type in the
  schema hierarchy (chemical = ``Chemical``, genomic factor =
  ``Genomic_factor`` and descendants, phenotype = ``Phenotype`` and
  descendants); a sentence "has all three" when each group occurs in it.
* **abstracts**: distinct PMIDs, the PMID being the document name up to the
  first ``_``.

* **provenance**: when the collection has a ``provenance.jsonl`` (written by
  the brat export, [`pipeline.brat.provenance`][pipeline.brat.provenance]), ``provenance`` gives
  how many entities are still as pre-annotated, edited or unknown to it, and
  the unchanged pre-annotated entities by source and type (Tables 6-7 read
  from the collection itself).

Unparseable ``.ann`` lines are reported (file:line) in ``parse_issues``.

Count keys: ``documents``, ``entities``, ``relations``, ``parse_issues``,
``text_mismatches`` (a text-bound whose recorded text differs from the
covered ``.txt`` text), ``relations_unknown_argument``.
"""

from __future__ import annotations

import csv
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.brat.modality import MODALITY_TOKENS, RelationNote, join_notes
from pipeline.brat.provenance import provenance_summary, read_provenance
from pipeline.brat.standoff import BratDocument, TextBound, read_directory
from pipeline.documents import Document, SentenceRecord, Span
from pipeline.schema import Schema
from pipeline.store import iter_directory, read_json

log = logging.getLogger(__name__)

CATEGORIES = ("simple", "nested", "discontiguous", "both")
KEY_GROUPS = {"Chemical": "chemical", "Genomic_factor": "genomic_factor", "Phenotype": "phenotype"}


def _contains(fragment: Span, other: TextBound) -> bool:
    """Whether every fragment of ``other`` lies inside ``fragment`` (half-open offsets)."""
    start, end = fragment
    return all(start <= s and e <= end for s, e in other.fragments)


def nested_ids(textbounds: Sequence[TextBound]) -> set[str]:
    """Find the nested entities of one document.

    An entity is nested when one of its fragments wholly contains another entity that is not
    exactly that fragment (see the module docstring).

    Args:
        textbounds: The text-bound annotations of one document; their fragments are half-open
            offsets into that document's ``.txt``, compared with each other only.

    Returns:
        The ids of the nested entities.
    """
    out = set()
    for t in textbounds:
        for fragment in t.fragments:
            if any(
                o is not t and _contains(fragment, o) and tuple(o.fragments) != (fragment,)
                for o in textbounds
            ):
                out.add(t.id)
                break
    return out


def entity_category(t: TextBound, nested: set[str]) -> str:
    """Classify an entity as simple, nested, discontiguous or both (see the module docstring).

    Args:
        t: The entity.
        nested: The ids of the nested entities of its document
            ([`nested_ids`][pipeline.brat.stats.nested_ids]).

    Returns:
        ``simple``, ``nested``, ``discontiguous`` (more than one fragment) or ``both``.
    """
    disc = len(t.fragments) > 1
    if t.id in nested:
        return "both" if disc else "nested"
    return "discontiguous" if disc else "simple"


def relation_note(doc: BratDocument, relation_id: str) -> RelationNote:
    """Read a relation's AnnotatorNotes with the project's grammar ([`pipeline.brat.modality`][pipeline.brat.modality]).

    Args:
        doc: The document holding the relation.
        relation_id: The relation's brat id (``R1``).

    Returns:
        Its notes folded into one ([`join_notes`][pipeline.brat.modality.join_notes]): the union of
            their modalities and their free texts.
    """
    return join_notes(doc.notes_for(relation_id))


def relation_modality(
    doc: BratDocument, relation_id: str, schema: Schema, tokens: Counter[str], comments: Counter[str] | None = None
) -> tuple[str, ...]:
    """Read the modality of a relation, counting the note tokens that state it.

    The modality is the brat attributes named in the schema's ``relation_attributes`` and the leading
    whole modality tokens of its AnnotatorNotes ([`pipeline.brat.modality`][pipeline.brat.modality]:
    ``hyp``, ``hypo``, ``htp`` -> Hypothetical; ``neg``, ``not`` -> Negated; never prefixes, so
    ``hypertension`` is free text).

    Args:
        doc: The document holding the relation.
        relation_id: The relation's brat id (``R1``).
        schema: The corpus schema, whose ``relation_attributes`` name the modality attributes.
        tokens: Updated in place: each modality token as written (lower-cased) is counted, so the
            normalization is reported per token.
        comments: Updated in place when given: counts the free text of the notes (what follows the
            modality tokens).

    Returns:
        The modality names, sorted (empty for a plain relation).
    """
    found = {a.type for a in doc.attributes if a.target == relation_id and a.type in schema.relation_attributes}
    note = relation_note(doc, relation_id)
    found.update(note.modality)
    tokens.update(note.tokens)
    if note.free and comments is not None:
        comments[note.free] += 1
    return tuple(sorted(found))


def paper_relation_modality(doc: BratDocument, relation_id: str, schema: Schema) -> tuple[str, ...]:
    """Read the modality of a relation by the rule of the first PGxCorpus tables.

    The rule: brat attributes, and every note token that *starts with* a schema attribute's note
    (``neg``, ``hyp``), anywhere in the note.  ``htp`` and ``not`` are not read and ``hypertension``
    would be.  Kept only to compute Table 3 the way the paper's figures were counted; every other use
    reads [`relation_modality`][pipeline.brat.stats.relation_modality].

    Args:
        doc: The document holding the relation.
        relation_id: The relation's brat id (``R1``).
        schema: The corpus schema, whose ``relation_attributes`` give each attribute's note prefix.

    Returns:
        The modality names, sorted (empty for a plain relation).
    """
    found = {a.type for a in doc.attributes if a.target == relation_id and a.type in schema.relation_attributes}
    notes = {str(spec.get("note")): name for name, spec in schema.relation_attributes.items() if spec.get("note")}
    for text in doc.notes_for(relation_id):
        found.update(name for tok in text.split() for note, name in notes.items() if tok.lower().startswith(note))
    return tuple(sorted(found))


def modality_token_table(tokens: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """Tabulate the modality tokens counted.

    Args:
        tokens: Modality token (lower-cased, a key of
            [`MODALITY_TOKENS`][pipeline.brat.modality.MODALITY_TOKENS]) -> the number of relations
            whose notes use it.

    Returns:
        ``{token: {"modality": name, "relations": n}}``, in token order.
    """
    return {tok: {"modality": MODALITY_TOKENS[tok], "relations": n} for tok, n in sorted(tokens.items())}


def key_group(type_: str, schema: Schema) -> str | None:
    """Name the key group of an entity type: the group of its root type in the schema hierarchy.

    Args:
        type_: An entity type.
        schema: The corpus schema.

    Returns:
        ``chemical``, ``genomic_factor`` or ``phenotype``; None for a type outside the three groups or
            unknown to the schema.
    """
    chain = schema.ancestors(type_, include_self=True)
    return KEY_GROUPS.get(chain[-1]) if chain else None


def collection_stats(
    docs: Iterable[BratDocument], schema: Schema, counts: Counter[str] | None = None
) -> dict[str, Any]:
    """Compute the statistics of brat documents (see the module docstring).

    Args:
        docs: The documents (offsets half-open into each one's ``.txt``).
        schema: The corpus schema: type order, modality attributes, key groups.
        counts: Updated in place when given: ``documents``, ``entities``, ``relations``,
            ``text_mismatches``, ``relations_unknown_argument``.

    Returns:
        ``{"entities": {TYPE: {"simple","nested","discontiguous","both","total"}},
            "entity_totals": {...}, "relations": {TYPE: n}, "relation_total": n,
            "relation_modality": {TYPE: {MODALITY: n}}, "modality_totals": {MODALITY: n},
            "relation_modality_paper": {TYPE: {MODALITY: n}} and "modality_totals_paper" (the paper's rule),
            "modality_tokens": {token: {"modality", "relations"}}, "comment_notes": {note: n},
            "sentences": {"total", "with_all_key_groups", "without_relation", "with_relation"}, "abstracts": n,
            "text_mismatches": [...]}``.
            Types are in schema order, then unknown types alphabetically.  Modalities are ``none`` or
            attribute names joined by ``+`` (``Hypothetical+Negated``).  ``text_mismatches`` lists
            ``file:line: id recorded != covered`` for each text-bound whose text column differs from the
            ``.txt`` at its offsets (surrounding whitespace ignored).
    """
    counts = counts if counts is not None else Counter()
    entities: dict[str, Counter[str]] = {}
    relations: Counter[str] = Counter()
    modality: dict[str, Counter[str]] = {}
    paper: dict[str, Counter[str]] = {}
    modality_tokens: Counter[str] = Counter()
    comments: Counter[str] = Counter()
    sentences = Counter({"total": 0, "with_all_key_groups": 0, "without_relation": 0, "with_relation": 0})
    pmids: set[str] = set()
    mismatches: list[str] = []
    for doc in docs:
        counts["documents"] += 1
        sentences["total"] += 1
        pmids.add(doc.pmid)
        nested = nested_ids(doc.textbounds)
        groups = set()
        for t in doc.textbounds:
            counts["entities"] += 1
            entities.setdefault(t.type, Counter())[entity_category(t, nested)] += 1
            group = key_group(t.type, schema)
            if group:
                groups.add(group)
            if doc.text:
                covered = " ".join(doc.text[s:e] for s, e in t.fragments)
                # the PGxCorpus release pads some recorded texts with a trailing space
                if covered.strip() != t.text.strip():
                    counts["text_mismatches"] += 1
                    mismatches.append(f"{doc.path or doc.name}:{t.line}: {t.id} {t.text!r} != {covered!r}")
        if len(groups) == len(KEY_GROUPS):
            sentences["with_all_key_groups"] += 1
        ids = {t.id for t in doc.textbounds}
        for r in doc.relations:
            counts["relations"] += 1
            if any(ref not in ids for _, ref in r.args):
                counts["relations_unknown_argument"] += 1
            relations[r.type] += 1
            mod = relation_modality(doc, r.id, schema, modality_tokens, comments)
            modality.setdefault(r.type, Counter())["+".join(mod) or "none"] += 1
            old = paper_relation_modality(doc, r.id, schema)
            paper.setdefault(r.type, Counter())["+".join(old) or "none"] += 1
        sentences["with_relation" if doc.relations else "without_relation"] += 1
    ent_out = {}
    for type_ in _ordered(entities, schema.entity_types()):
        row = {c: entities[type_][c] for c in CATEGORIES}
        row["total"] = sum(row.values())
        ent_out[type_] = row
    totals = {c: sum(r[c] for r in ent_out.values()) for c in (*CATEGORIES, "total")}
    mod_totals: Counter[str] = Counter()
    for c in modality.values():
        mod_totals.update(c)
    paper_totals: Counter[str] = Counter()
    for c in paper.values():
        paper_totals.update(c)
    return {
        "entities": ent_out,
        "entity_totals": totals,
        "relations": {t: relations[t] for t in _ordered(relations, schema.relation_types())},
        "relation_total": sum(relations.values()),
        "relation_modality": {
            t: dict(sorted(modality[t].items())) for t in _ordered(modality, schema.relation_types())
        },
        "modality_totals": dict(sorted(mod_totals.items())),
        "relation_modality_paper": {
            t: dict(sorted(paper[t].items())) for t in _ordered(paper, schema.relation_types())
        },
        "modality_totals_paper": dict(sorted(paper_totals.items())),
        "modality_tokens": modality_token_table(modality_tokens),
        "comment_notes": dict(sorted(comments.items())),
        "sentences": dict(sentences),
        "abstracts": len(pmids),
        "text_mismatches": mismatches,
    }


def _ordered(present: Iterable[str], order: Sequence[str]) -> list[str]:
    """Schema order first, then unknown types alphabetically."""
    keys = set(present)
    return [t for t in order if t in keys] + sorted(keys - set(order))


def brat_stats(directory: str | Path, schema: Schema, counts: Counter[str] | None = None) -> dict[str, Any]:
    """Compute the statistics of a brat directory.

    Unparsable ``.ann`` lines are logged at WARNING and reported; when the directory has a
    ``provenance.jsonl``, its summary is added.

    Args:
        directory: The brat collection, read recursively.
        schema: The corpus schema.
        counts: Updated in place when given: the counts of
            [`collection_stats`][pipeline.brat.stats.collection_stats], plus ``parse_issues``.

    Returns:
        The result of [`collection_stats`][pipeline.brat.stats.collection_stats], plus
            ``parse_issues`` (``file:line: message``) and, with a sidecar, ``provenance``
            ([`provenance_summary`][pipeline.brat.provenance.provenance_summary]).

    Raises:
        FileNotFoundError: If ``directory`` is not a directory.
    """
    counts = counts if counts is not None else Counter()
    docs, issues = read_directory(directory)
    for issue in issues:
        log.warning("%s", issue)
    counts["parse_issues"] += len(issues)
    result = collection_stats(docs, schema, counts)
    result["parse_issues"] = [str(i) for i in issues]
    provenance = read_provenance(directory)
    if provenance is not None:
        result["provenance"] = provenance_summary(docs, provenance)
    return result


# --- pipeline run ------------------------------------------------------------

def pipeline_stats(run_dir: str | Path) -> dict[str, Any]:
    """Compute the figures of a pipeline run from its manifest and the stage outputs it names.

    ``abstracts`` are the documents retrieved (``outputs.documents``), ``sentences`` the sentences
    of ``outputs.sentences``, pre-annotations are read from ``outputs.mapped`` (schema types; per
    annotation source: pubtator, local, ontology), ``filtered``/``sampled`` count sentence records.
    An output named in the manifest but absent on disk is listed in ``missing`` (and logged at
    WARNING) and its figure is None.  Relative output paths are read from the manifest's directory.

    Args:
        run_dir: The run directory (its ``manifest.json`` is read) or the manifest file itself.

    Returns:
        ``{"manifest": path, "query", "search_date", "pubmed_hits" (from ``manifest["search"]``,
            None for offline builds), "abstracts": n, "sentences": n, "preannotations": {SOURCE:
            {TYPE: {"total", "discontiguous"}}}, "preannotation_original_types": {SOURCE: {ORIGINAL_TYPE ->
            TYPE: n}}, "filtered": n, "sampled": n, "stage_counts": manifest["stages"], "missing": [...]}``.

    Raises:
        FileNotFoundError: If there is no manifest.
    """
    run = Path(run_dir)
    manifest_path = run / "manifest.json" if run.is_dir() else run
    manifest = read_json(manifest_path)
    outputs: Mapping[str, str] = manifest.get("outputs", {}) or {}
    missing: list[str] = []

    def directory(stage: str) -> Path | None:
        value = outputs.get(stage)
        if not value:
            missing.append(stage)
            return None
        path = Path(value)
        if not path.is_absolute():
            path = manifest_path.parent / path
        if not path.is_dir():
            missing.append(stage)
            log.warning("%s: output %s of stage %s is missing", manifest_path, path, stage)
            return None
        return path

    abstracts = sentences = filtered = sampled = None
    if (d := directory("documents")) is not None:
        abstracts = sum(1 for _ in iter_directory(d, Document))
    if (d := directory("sentences")) is not None:
        sentences = sum(len(doc.sentences) for doc in iter_directory(d, Document))
    pre: dict[str, dict[str, Counter[str]]] = {}
    original: dict[str, Counter[str]] = {}
    if (d := directory("mapped")) is not None:
        for doc in iter_directory(d, Document):
            for a in doc.annotations:
                row = pre.setdefault(a.source, {}).setdefault(a.type, Counter())
                row["total"] += 1
                row["discontiguous"] += int(a.discontiguous)
                source_type = a.ontology_class or a.original_type or a.type
                original.setdefault(a.source, Counter())[f"{source_type} -> {a.type}"] += 1
    if (d := directory("filtered")) is not None:
        filtered = sum(1 for _ in iter_directory(d, SentenceRecord))
    if (d := directory("sampled")) is not None:
        sampled = sum(1 for _ in iter_directory(d, SentenceRecord))
    search = manifest.get("search") or {}
    return {
        "manifest": str(manifest_path),
        "query": search.get("query"),
        "search_date": search.get("search_date"),
        "pubmed_hits": search.get("count"),
        "abstracts": abstracts,
        "sentences": sentences,
        "preannotations": {
            s: {t: {"total": c["total"], "discontiguous": c["discontiguous"]} for t, c in sorted(types.items())}
            for s, types in sorted(pre.items())
        },
        "preannotation_original_types": {s: dict(sorted(c.items())) for s, c in sorted(original.items())},
        "filtered": filtered,
        "sampled": sampled,
        "stage_counts": manifest.get("stages", {}),
        "missing": missing,
    }


# --- rendering -----------------------------------------------------------------

def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in row) + " |" for row in rows]
    return lines


def tables(result: Mapping[str, Any]) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """Lay out statistics as named tables (shared by the Markdown and CSV output).

    Args:
        result: A [`brat_stats`][pipeline.brat.stats.brat_stats] (or
            [`collection_stats`][pipeline.brat.stats.collection_stats]) result, optionally with a
            ``pipeline`` entry from [`pipeline_stats`][pipeline.brat.stats.pipeline_stats].

    Returns:
        ``{name: (header, rows)}``: ``entities``, ``relations``, ``corpus`` always; ``modality_tokens``,
            ``relations_paper`` (only where the paper's rule differs), ``provenance``, ``pipeline`` and
            ``preannotations`` when the result has them.  Each table ends with its total row where it has one.
    """
    out: dict[str, tuple[list[str], list[list[Any]]]] = {}
    ents = result["entities"]
    out["entities"] = (
        ["type", *CATEGORIES, "total"],
        [[t, *(row[c] for c in CATEGORIES), row["total"]] for t, row in ents.items()]
        + [["Total", *(result["entity_totals"][c] for c in CATEGORIES), result["entity_totals"]["total"]]],
    )
    mods = sorted(result["modality_totals"])
    out["relations"] = (
        ["type", "total", *mods],
        [
            [t, n, *(result["relation_modality"].get(t, {}).get(m, 0) for m in mods)]
            for t, n in result["relations"].items()
        ]
        + [["Total", result["relation_total"], *(result["modality_totals"][m] for m in mods)]],
    )
    tok = result.get("modality_tokens") or {}
    if tok:
        out["modality_tokens"] = (["token", "modality", "relations"],
                                  [[t, v["modality"], v["relations"]] for t, v in tok.items()])
    paper = result.get("relation_modality_paper")
    if paper is not None and paper != result["relation_modality"]:
        pmods = sorted(result["modality_totals_paper"])
        out["relations_paper"] = (
            ["type", "total", *pmods],
            [[t, n, *(paper.get(t, {}).get(m, 0) for m in pmods)] for t, n in result["relations"].items()]
            + [["Total", result["relation_total"], *(result["modality_totals_paper"][m] for m in pmods)]],
        )
    s = result["sentences"]
    out["corpus"] = (
        ["figure", "value"],
        [
            ["sentences", s["total"]],
            ["abstracts (distinct PMIDs)", result["abstracts"]],
            ["sentences with chemical, genomic factor and phenotype", s["with_all_key_groups"]],
            ["sentences without relation", s["without_relation"]],
            ["relations", result["relation_total"]],
            ["entities", result["entity_totals"]["total"]],
            ["unparseable .ann lines", len(result.get("parse_issues", []))],
        ],
    )
    prov = result.get("provenance")
    if prov:
        out["provenance"] = (
            ["source", "type", "entities"],
            [[s, t, n] for s, types in prov["by_source"].items() for t, n in types.items()]
            + [[f"({status})", "", n] for status, n in prov["entities"].items()],
        )
    pipe = result.get("pipeline")
    if pipe:
        out["pipeline"] = (
            ["figure", "value"],
            [
                [k, "n/a" if pipe.get(k) is None else pipe[k]]
                for k in ("query", "search_date", "pubmed_hits", "abstracts", "sentences", "filtered", "sampled")
            ],
        )
        out["preannotations"] = (
            ["source", "type", "total", "discontiguous"],
            [
                [s, t, c["total"], c["discontiguous"]]
                for s, types in pipe["preannotations"].items()
                for t, c in types.items()
            ],
        )
    return out


def format_markdown(result: Mapping[str, Any]) -> str:
    """Render statistics as Markdown: one titled table per [`tables`][pipeline.brat.stats.tables] entry.

    Args:
        result: A [`brat_stats`][pipeline.brat.stats.brat_stats] result (optionally with ``pipeline``).

    Returns:
        The Markdown text, followed by the free-text relation notes and the parse issues, if any.
    """
    titles = {
        "entities": "Entities by type (each counted within its own type)",
        "relations": "Relations by type and modality",
        "modality_tokens": "Modality note tokens (whole tokens, pipeline/brat/modality.py)",
        "relations_paper": "Relations by type and modality, by the paper's rule (note tokens starting with neg/hyp)",
        "corpus": "Corpus",
        "pipeline": "Pipeline run",
        "preannotations": "Pre-annotations by source and type (Tables 6-7)",
        "provenance": "Entities by pre-annotation source (provenance.jsonl; unchanged pre-annotations)",
    }
    lines: list[str] = []
    for name, (header, rows) in tables(result).items():
        lines += [f"## {titles[name]}", "", *_table(header, rows), ""]
    if result.get("comment_notes"):
        lines.append("Free-text AnnotatorNotes on relations (no modality): " + ", ".join(
            f"{k!r} ({v})" for k, v in result["comment_notes"].items()))
    for issue in result.get("parse_issues", []):
        lines.append(f"- parse issue: {issue}")
    return "\n".join(lines).rstrip() + "\n"


def write_outputs(result: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Write statistics as CSV files (one per table) and PNG bar charts.

    Files are written in place (not atomically): ``NAME.csv`` for each of
    [`tables`][pipeline.brat.stats.tables], ``entities.png`` (by type and category) and
    ``relations.png`` (by type) when there are entities and relations.  The PNGs carry no
    ``Software`` metadata (no matplotlib version in the bytes).

    Args:
        result: A [`brat_stats`][pipeline.brat.stats.brat_stats] result (optionally with ``pipeline``).
        out_dir: The output directory, created if missing.

    Returns:
        The paths written, CSV files first.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (header, rows) in tables(result).items():
        path = out / f"{name}.csv"
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)
        written.append(path)

    ents = result["entities"]
    if ents:
        fig, ax = plt.subplots(figsize=(10, 5))
        bottom = [0] * len(ents)
        for cat in CATEGORIES:
            values = [ents[t][cat] for t in ents]
            ax.bar(list(ents), values, bottom=bottom, label=cat)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_ylabel("entities")
        ax.set_title("Entities by type")
        ax.legend()
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
        fig.tight_layout()
        path = out / "entities.png"
        fig.savefig(path, dpi=100, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    rels = result["relations"]
    if rels:
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.bar(list(rels), list(rels.values()))
        ax.set_ylabel("relations")
        ax.set_title("Relations by type")
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
        fig.tight_layout()
        path = out / "relations.png"
        fig.savefig(path, dpi=100, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written
