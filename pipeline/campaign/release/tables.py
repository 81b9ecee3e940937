"""The release's tables: the corpus (Tables 2, 3), agreement between annotators (8, 9), pre-annotation (10)."""

from __future__ import annotations

import csv
import io
import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.brat import agreement as agreement_mod
from pipeline.brat import stats as stats_mod
from pipeline.brat.standoff import BratDocument, read_directory
from pipeline.campaign.finalize import (
    DONE_TYPE,
)
from pipeline.campaign.layout import (
    DISAGREEMENT,
    DISCARD_TYPE,
    PHASE1_DIR,
)
from pipeline.campaign.release.charts import write_chart
from pipeline.campaign.release.read import phase1_assignments
from pipeline.schema import Schema

log = logging.getLogger(__name__)

POOLED = "all pairs"


@dataclass
class Table:
    """One table of the release: written as ``.md``, ``.csv`` and, with a chart, ``.png``.

    Attributes:
        name: The file name without extension (``table2_entities``).
        title: The title, the Markdown heading and the chart's title.
        header: The column names.
        rows: The rows; a float is a fraction shown in %, ``None`` an undefined score (``n/a``).
        chart: ``(y label, x labels, series name -> values)`` of a grouped bar chart; ``None`` for no chart.
        readme_rows: The rows the datasheet shows; all when ``None``.
    """
    name: str
    title: str
    header: list[str]
    rows: list[list[Any]]
    chart: tuple[str, list[str], dict[str, list[float]]] | None = None  # ylabel, x labels, series
    readme_rows: list[list[Any]] | None = None  # the rows the datasheet shows (None: all)

    def markdown(self, rows: list[list[Any]] | None = None) -> str:
        """Render the table as Markdown, under a ``##`` heading.

        Args:
            rows: The rows shown; all when ``None``.

        Returns:
            The Markdown text (fractions in %, integers with thousands separators, ``|`` escaped).
        """
        cells = [[_cell(v) for v in row] for row in (self.rows if rows is None else rows)]
        lines = [f"## {self.title}", "", "| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """Render the table as CSV.

        Returns:
            The CSV text, with a header row (fractions in %, integers without separators).
        """
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.header)
        writer.writerows([[_cell(v, csv=True) for v in row] for row in self.rows])
        return buf.getvalue()


def _pct(value: float | None) -> float:
    """A score in % for a chart; an undefined score (None: nothing to score) is NaN, drawn as no bar."""
    return math.nan if value is None else 100 * value


def _cell(value: Any, csv: bool = False) -> str:
    if value is None:
        # an undefined score (nothing to score), as `evaluate` and `agreement` print it
        return "n/a"
    if isinstance(value, float):
        return f"{100 * value:.1f}"
    if isinstance(value, int) and not csv:
        return f"{value:,}"
    return str(value).replace("|", "\\|") if not csv else str(value)


def corpus_tables(docs: Sequence[BratDocument], schema: Schema) -> tuple[list[Table], dict[str, Any]]:
    """Make Tables 2 (entities), 3 (relations) and the corpus summary.

    Counted by [`pipeline.brat.stats`][pipeline.brat.stats].

    Table 3's modality columns are counted by the paper's rule
    ([`paper_relation_modality`][pipeline.brat.stats.paper_relation_modality]); when the project's
    normalization ([`pipeline.brat.modality`][pipeline.brat.modality]: whole tokens, ``htp`` and ``not``
    included) gives other counts, Table 3b shows them beside it, and the modality tokens table says which
    tokens were read.

    Args:
        docs: The released documents.
        schema: The schema.

    Returns:
        The tables, and the statistics they come from
        ([`collection_stats`][pipeline.brat.stats.collection_stats]).
    """
    result = stats_mod.collection_stats(docs, schema)
    named = stats_mod.tables(result)
    ents_h, ents_r = named["entities"]
    corp_h, corp_r = named["corpus"]
    per_type = [r for r in ents_r if r[0] != "Total"]
    paper = result["relation_modality_paper"]
    pmods = sorted(result["modality_totals_paper"])
    rels_h = ["type", "total", *pmods]
    rels_r: list[list[Any]] = [[t, n, *(paper.get(t, {}).get(m, 0) for m in pmods)]
                               for t, n in result["relations"].items()]
    rels_r.append(["Total", result["relation_total"], *(result["modality_totals_paper"].get(m, 0) for m in pmods)])
    per_rel = rels_r[:-1]
    tables = [
        Table("table2_entities", "Table 2: entities by type (simple, nested, discontiguous, both)", ents_h, ents_r,
              ("entities", [r[0] for r in per_type],
               {c: [float(r[1 + i]) for r in per_type] for i, c in enumerate(stats_mod.CATEGORIES)})),
        Table("table3_relations", "Table 3: relations by type and modality (the paper's rule)", rels_h, rels_r,
              ("relations", [r[0] for r in per_rel], {m: [float(r[2 + i]) for r in per_rel]
                                                      for i, m in enumerate(pmods)})),
    ]
    if "relations_paper" in named:
        # the paper's rule and the normalization disagree: show the normalized counts too
        norm_h, norm_r = named["relations"]
        mods = norm_h[2:]
        per_norm = [r for r in norm_r if r[0] != "Total"]
        tables.append(Table("table3b_relations_normalized",
                            "Table 3b: relations by type and modality (normalized whole tokens)", norm_h, norm_r,
                            ("relations", [r[0] for r in per_norm], {m: [float(r[2 + i]) for r in per_norm]
                                                                     for i, m in enumerate(mods)})))
    if "modality_tokens" in named:
        tok_h, tok_r = named["modality_tokens"]
        tables.append(Table("modality_tokens", "Modality note tokens read (whole tokens, pipeline/brat/modality.py)",
                            tok_h, tok_r))
    tables.append(Table("corpus", "Corpus summary", corp_h, [r for r in corp_r if r[0] != "unparseable .ann lines"]))
    return tables, result


def _strip_campaign(doc: BratDocument) -> BratDocument:
    """A phase-1 document without the campaign's marker entities (Discard, Done) and Disagreement marks."""
    drop = {t.id for t in doc.textbounds if t.type in (DISCARD_TYPE, DONE_TYPE)}
    return replace(doc, textbounds=[t for t in doc.textbounds if t.id not in drop],
                   attributes=[a for a in doc.attributes if a.target not in drop and a.type != DISAGREEMENT])


def phase1_collections(campaign: Path, released: set[str]) -> dict[str, dict[str, BratDocument]]:
    """Read the phase-1 collections, restricted to released documents the campaign assigns each person.

    The calibration copies other annotators hold of a promoted document are not campaign work, and
    would count one document in many pairs.  Campaign markers (``Discard``, ``Done``) and
    ``Disagreement`` marks are removed; parse issues are logged.

    Args:
        campaign: The campaign directory ``CAMPAIGN_DIR``.
        released: The names of the released documents.

    Returns:
        Person -> ``{document: doc}``.

    Raises:
        FileNotFoundError: If the campaign has no ``phase1/`` directory.
    """
    out: dict[str, dict[str, BratDocument]] = {}
    root = campaign / PHASE1_DIR
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no phase-1 collections in the campaign directory")
    assigned = phase1_assignments(campaign)
    for person_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        docs, issues = read_directory(person_dir)
        for issue in issues:
            log.warning("%s", issue)
        mine = assigned.get(person_dir.name, set())
        out[person_dir.name] = {d.name: _strip_campaign(d) for d in docs if d.name in released and d.name in mine}
    return out


def agreement_tables(campaign: Path, released: set[str], schema: Schema) -> tuple[list[Table], dict[str, Any]]:
    """Make Tables 8 (entities), 9 (relations) and 9b (relation modality) between phase-1 annotators.

    Every pair of annotators is scored on the released documents both have; a pooled row sums every
    pair's counts.

    Args:
        campaign: The campaign directory ``CAMPAIGN_DIR``.
        released: The names of the released documents.
        schema: The schema.

    Returns:
        The tables, and the summary written to ``release.json`` (micro scores per pair, pooled scores).

    Raises:
        FileNotFoundError: If the campaign has no ``phase1/`` directory.
    """
    people = phase1_collections(campaign, released)
    pairs = []
    for a, b in itertools.combinations(sorted(people), 2):
        common = set(people[a]) & set(people[b])
        if common:
            # both restricted to the shared documents: the others are not a disagreement
            docs_a = {n: d for n, d in people[a].items() if n in common}
            docs_b = {n: d for n, d in people[b].items() if n in common}
            pairs.append(agreement_mod.compare_collections(docs_a, docs_b, schema, ref_label=a, pred_label=b))
    summary: dict[str, Any] = {"pairs": [
        {"pair": f"{p['reference']} vs {p['predicted']}", "documents": p["documents"]["common"],
         "entities": {k: v["micro"] for k, v in p["entities"].items()},
         "relations": {k: v["micro"] for k, v in p["relations"].items()}} for p in pairs]}
    tables = []
    for number, kind, title in ((8, "entities", "entity agreement"), (9, "relations", "relation agreement")):
        header = ["pair", "documents", "setting", "TP", "FP", "FN", "P", "R", "F1"]
        rows: list[list[Any]] = []
        settings = list(pairs[0][kind]) if pairs else []
        series: dict[str, list[float]] = {}
        for p in pairs:
            label = f"{p['reference']} vs {p['predicted']}"
            for setting in settings:
                m = p[kind][setting]["micro"]
                rows.append([label, p["documents"]["common"], setting, m["tp"], m["fp"], m["fn"],
                             m["precision"], m["recall"], m["f1"]])
            series[label] = [_pct(p[kind][s]["micro"]["f1"]) for s in settings]
        pooled: list[list[Any]] = []
        if pairs:
            # every pair's counts summed: the agreement of the campaign as a whole
            n_docs = sum(p["documents"]["common"] for p in pairs)
            for setting in settings:
                tp, fp, fn = (sum(p[kind][setting]["micro"][k] for p in pairs) for k in ("tp", "fp", "fn"))
                m = agreement_mod.prf(tp, fp, fn)
                pooled.append([POOLED, n_docs, setting, tp, fp, fn, m["precision"], m["recall"], m["f1"]])
            series[POOLED] = [_pct(r[-1]) for r in pooled]
            summary[f"pooled_{kind}"] = {r[2]: agreement_mod.prf(r[3], r[4], r[5]) for r in pooled}
        tables.append(Table(f"table{number}_{kind}_agreement",
                            f"Table {number}: {title} between phase-1 annotators (P, R, F1 in %)", header,
                            rows + pooled, ("F1 (%)", settings, series) if pairs else None,
                            readme_rows=pooled))
    # modality is not part of a relation match: its agreement on the matched relations is a figure of its own
    mod_rows: list[list[Any]] = []
    for p in pairs:
        m = p["relation_modality"]
        mod_rows.append([f"{p['reference']} vs {p['predicted']}", m["setting"], m["matched"], m["same_modality"],
                         m["agreement"]])
    if pairs:
        matched = sum(r[2] for r in mod_rows)
        same = sum(r[3] for r in mod_rows)
        pooled_mod: list[Any] = [POOLED, agreement_mod.MODALITY_SETTING, matched, same,
                                 same / matched if matched else None]
        summary["pooled_relation_modality"] = {"matched": matched, "same_modality": same,
                                               "agreement": pooled_mod[-1]}
        tables.append(Table("table9b_relation_modality_agreement",
                            "Table 9b: relation modality agreement on the relations both annotators have (%)",
                            ["pair", "setting", "matched relations", "same modality", "agreement"],
                            [*mod_rows, pooled_mod], readme_rows=[pooled_mod]))
    return tables, summary


def preannotation_table(preannotation: Path, docs: Sequence[BratDocument], schema: Schema) -> tuple[Table, Any]:
    """Make Table 10: the pre-annotation scored against the final annotation, in the settings of the paper.

    Relation rows are added when relations were pre-annotated
    ([`TABLE10_RELATION_SETTINGS`][pipeline.campaign.release.tables.TABLE10_RELATION_SETTINGS]).

    Args:
        preannotation: The pre-annotated brat collection (parse issues are logged).
        docs: The released documents (the reference); those without a pre-annotated version are left out.
        schema: The schema.

    Returns:
        The table, and what ``release.json`` records: ``documents``, ``scores`` per setting and, if any,
        ``relations``.
    """
    pre, issues = read_directory(preannotation)
    for issue in issues:
        log.warning("%s", issue)
    pre_by_name = {d.name: d for d in pre}
    pairs = [
        (list(agreement_mod.brat_entities(d).values()),
         list(agreement_mod.brat_entities(pre_by_name[d.name], schema=schema, source="pubtator").values()))
        for d in docs if d.name in pre_by_name
    ]
    scores = agreement_mod.table10_scores(pairs)
    settings = list(agreement_mod.TABLE10_SETTINGS)
    rows: list[list[Any]] = [[s, len(pairs), scores[s]["tp"], scores[s]["fp"], scores[s]["fn"],
                              scores[s]["precision"], scores[s]["recall"], scores[s]["f1"]] for s in settings]
    relations = _preannotated_relations(docs, pre_by_name, schema)
    for name, m in relations.items():
        rows.append([f"relations {name}", len(pairs), m["tp"], m["fp"], m["fn"], m["precision"], m["recall"], m["f1"]])
    table = Table("table10_preannotation", "Table 10: pre-annotation against the final annotation (P, R, F1 in %)",
                  ["setting", "documents", "TP", "FP", "FN", "P", "R", "F1"], rows,
                  ("%", settings, {k: [_pct(scores[s][key]) for s in settings]
                                   for k, key in (("P", "precision"), ("R", "recall"), ("F1", "f1"))}))
    extra: dict[str, Any] = {"documents": len(pairs), "scores": {s: scores[s] for s in settings}}
    if relations:
        extra["relations"] = relations
    return table, extra


TABLE10_RELATION_SETTINGS = (("exact", "strict", "directed"), ("exact", "hierarchy", "directed"),
                             ("partial", "strict", "directed"), ("partial", "hierarchy", "directed"),
                             ("partial", "any", "undirected"))
"""The relation rows of Table 10 when relations were pre-annotated: (span, type, direction) settings."""


def _preannotated_relations(docs: Sequence[BratDocument], pre_by_name: Mapping[str, BratDocument],
                            schema: Schema) -> dict[str, Any]:
    """Pre-annotated relations against the final ones ({} when the pre-annotation has none)."""
    tallies = {"_".join(k): agreement_mod.Tally() for k in TABLE10_RELATION_SETTINGS}
    proposed = 0
    for d in docs:
        pre = pre_by_name.get(d.name)
        if pre is None:
            continue
        final_rels = agreement_mod.brat_relations(d, agreement_mod.brat_entities(d))
        pre_rels = agreement_mod.brat_relations(pre, agreement_mod.brat_entities(pre, schema=schema, source="pubtator"))
        proposed += len(pre_rels)
        for span, types, direction in TABLE10_RELATION_SETTINGS:
            tallies["_".join((span, types, direction))].add(agreement_mod.relation_tally(
                final_rels, pre_rels, span=span, types=types, directed=direction == "directed", schema=schema))
    return {k: t.micro() for k, t in tallies.items()} if proposed else {}



def write_tables(tables: Sequence[Table], out: Path) -> None:
    """Write each table as ``.md`` and ``.csv``, and as ``.png`` when it has a chart with data.

    Args:
        tables: The tables.
        out: The directory, created if needed.
    """
    out.mkdir(parents=True, exist_ok=True)
    for t in tables:
        (out / f"{t.name}.md").write_text(t.markdown(), encoding="utf-8", newline="\n")
        (out / f"{t.name}.csv").write_text(t.csv(), encoding="utf-8", newline="\n")
        if t.chart is not None and t.chart[1]:
            write_chart(out / f"{t.name}.png", t.title, t.chart)
