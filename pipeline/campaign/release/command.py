"""``pgx-corpus release``: check every input, then write the release in a staging directory and swap it in."""

from __future__ import annotations

import json
import logging
import shutil
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.brat import export as export_mod
from pipeline.brat import formats as formats_mod
from pipeline.brat.conf import CONF_FILES, copy_conf_files, write_conf_files
from pipeline.brat.standoff import BratDocument, dumps
from pipeline.campaign import release_data as data_mod
from pipeline.campaign import release_meta as meta_mod
from pipeline.campaign.conf import relation_attribute_names
from pipeline.campaign.decisions import load_decisions
from pipeline.campaign.finalize import (
    check_output,
    publish_dir,
    relation_notes_in_corpus_form,
    staging_dir,
)
from pipeline.campaign.release.accounts import campaign_info
from pipeline.campaign.release.datasheet import datasheet
from pipeline.campaign.release.files import SUMS, sha256sums, write_tar_gz
from pipeline.campaign.release.read import (
    RELEASE_JSON,
    ReleaseError,
    ReleaseInputs,
    check_campaign,
    check_manifest,
    check_out_apart,
    decision_rows,
    decisions_not_applied,
    previous_version,
    provenance,
    read_final,
    without_machine_notes,
)
from pipeline.campaign.release.tables import Table, agreement_tables, corpus_tables, preannotation_table, write_tables
from pipeline.schema import Schema

log = logging.getLogger(__name__)

LICENSE_FILE = "LICENSE.txt"


def log_pubtator_losses(losses: Mapping[str, Counter[str]]) -> None:
    """Log each kind of PubTator loss once for the whole release, naming the files that have it.

    Args:
        losses: Per PubTator file (path in the release), what it could not hold
            (``write_formats``'s ``losses``).
    """
    kinds = sorted({k for c in losses.values() for k in c})
    for kind in kinds:
        files = [(path, c[kind]) for path, c in sorted(losses.items()) if c[kind]]
        log.warning("release: the PubTator format cannot hold them, %s: %s (see pipeline/brat/pubtator.py)", kind,
                    ", ".join(f"{path} {n}" for path, n in files))


@dataclass
class Checked:
    """What the checks of a release found, before anything is written.

    Attributes:
        docs: The documents of FINAL as released (modality as notes, no machine provenance notes).
        decisions: The datasheet's rows of the decisions files.
        meta: The corpus metadata (name, description, authors, licence id).
        lic: The licence, when one is stated.
        gaps: What the metadata lacks (authors, licence), each said in one sentence.
        prov: The provenance read from the build manifest, when one is given.
        preannotation: The pre-annotated collection for Table 10, when there is one.
        assigned: The documents the campaign assigns, when a campaign is given.
        counts: ``machine_notes_dropped`` and ``machine_notes_trimmed``.
    """
    docs: list[BratDocument]
    decisions: list[list[str]]
    meta: meta_mod.Metadata
    lic: meta_mod.Licence | None
    gaps: list[str]
    prov: dict[str, Any] | None
    preannotation: Path | None
    assigned: list[str] | None
    counts: Counter[str]


def check_inputs(inputs: ReleaseInputs, out_dir: Path, schema: Schema) -> Checked:
    """Check everything the datasheet will state, before anything is written.

    Args:
        inputs: What the release is made from.
        out_dir: The release directory.
        schema: The schema.

    Returns:
        What the checks found, FINAL's documents as they will be released among it.

    Raises:
        ReleaseError, FinalizeError, DecisionsError, NotADirectoryError: As
            [`release`][pipeline.campaign.release.command.release] says; nothing is written.
    """
    check_out_apart(inputs.final, out_dir)
    check_output(out_dir, SUMS)
    # the small inputs first, so a typo there is reported before the corpus is read
    names = [p.name for p in inputs.decisions]
    if len(set(names)) != len(names):
        raise ReleaseError(f"decisions files need distinct names, got {names}")
    decisions = decision_rows(inputs.decisions, schema)
    try:
        meta = meta_mod.metadata(inputs.name or None, inputs.description or None, inputs.authors,
                                 inputs.license or None, inputs.citation, inputs.pgxcorpus_method,
                                 inputs.export_config.license)
        lic = meta_mod.licence(meta.license) if meta.license else None
    except meta_mod.MetadataError as exc:
        raise ReleaseError(f"{exc}; nothing released") from exc
    gaps = meta_mod.missing(meta)
    if gaps and inputs.strict_metadata:
        raise ReleaseError("--strict-metadata: " + "; ".join(gaps) + "; nothing released")
    prov = provenance(inputs.manifest) if inputs.manifest else None
    if inputs.previous is not None and not (inputs.previous / "brat").is_dir():
        raise NotADirectoryError(f"{inputs.previous}: not a release directory (no brat/ in it)")
    preannotation = inputs.preannotation
    if preannotation is None and inputs.manifest is not None:
        built = json.loads(inputs.manifest.read_text(encoding="utf-8")).get("outputs", {}).get("brat")
        preannotation = Path(built) if built and Path(built).is_dir() else None
    docs = read_final(inputs.final, schema)
    # what the datasheet will state is checked against FINAL before anything is written
    if inputs.decisions:
        not_applied = decisions_not_applied(docs, [(p.name, load_decisions(p, schema)) for p in inputs.decisions],
                                            schema)
        if not_applied:
            raise ReleaseError(f"{inputs.final}: --decisions not applied to FINAL, nothing released (run "
                               "`pgx-corpus decisions apply` on FINAL first): " + "; ".join(not_applied))
    assigned = check_campaign(docs, inputs.campaign) if inputs.campaign is not None else None
    if inputs.manifest is not None:
        check_manifest(docs, inputs.manifest)
    counts: Counter[str] = Counter()
    # a FINAL of an older campaign may hold modality as relation attributes: the release writes notes; the
    # machine's provenance notes (older brat exports) are never released
    docs = [without_machine_notes(relation_notes_in_corpus_form(d, counts), counts) for d in docs]
    return Checked(docs, decisions, meta, lic, gaps, prov, preannotation, assigned, counts)


def make_tables(inputs: ReleaseInputs, checked: Checked,
                schema: Schema) -> tuple[list[Table], dict[str, Any], dict[str, Any]]:
    """Make every table of the release (nothing written).

    Args:
        inputs: What the release is made from.
        checked: What the checks found.
        schema: The schema.

    Returns:
        The tables, the corpus statistics and the ``agreement`` and ``preannotation`` entries of
        ``release.json`` (when their inputs are given).
    """
    docs = checked.docs
    # relation types stay as annotated in every file: no relation_map here (it is `export`'s training view)
    tables, stats = corpus_tables(docs, schema)
    extra: dict[str, Any] = {}
    if inputs.campaign is not None:
        agree, extra["agreement"] = agreement_tables(inputs.campaign, {d.name for d in docs}, schema)
        tables += agree
    if checked.preannotation is not None:
        t10, extra["preannotation"] = preannotation_table(checked.preannotation, docs, schema)
        tables.append(t10)
    return tables, stats, extra


@dataclass
class Written:
    """What writing the corpus files reported, for ``release.json``.

    Attributes:
        exports: ``(label, format, path)`` of every exported collection, for the format table.
        fmt_counts: The format writers' counts (CoNLL, PubTator, BioC validation).
        losses: Per PubTator file, what it could not hold.
        splits: The splits' summary (ratios, seed, PMIDs and documents per split).
        by_split: The documents of each split.
        hf: The Hugging Face datasets' counts per config and split.
        spacy: The spaCy DocBin counts per split.
        folds: The cross-validation folds' summary.
        offsets: Each sentence's start in its PubMed record text, where known.
    """
    exports: list[tuple[str, str, Path]]
    fmt_counts: Counter[str]
    losses: dict[str, Counter[str]]
    splits: dict[str, Any]
    by_split: dict[str, list[BratDocument]]
    hf: dict[str, Any]
    spacy: dict[str, Any]
    folds: dict[str, Any]
    offsets: dict[str, int]


def write_corpus(tmp: Path, inputs: ReleaseInputs, checked: Checked, schema: Schema) -> Written:
    """Write the corpus in every format, its splits and folds into the staging directory.

    Args:
        tmp: The staging directory.
        inputs: What the release is made from.
        checked: What the checks found.
        schema: The schema.

    Returns:
        What the writers reported.
    """
    docs, name = checked.docs, checked.meta.name
    brat = tmp / "brat"
    brat.mkdir()
    final_conf = inputs.final / "annotation.conf"
    if final_conf.is_file() and not relation_attribute_names(final_conf.read_text(encoding="utf-8")):
        copy_conf_files(inputs.final, brat, CONF_FILES)
    else:
        write_conf_files(brat, schema)
    for d in docs:
        (brat / f"{d.name}.txt").write_text(d.text, encoding="utf-8", newline="\n")
        (brat / f"{d.name}.ann").write_text(dumps(d), encoding="utf-8", newline="\n")
    write_tar_gz(brat, tmp / "brat.tar.gz", name)
    plain = replace(inputs.export_config, relation_map={})
    fmt_counts: Counter[str] = Counter()
    losses: dict[str, Counter[str]] = {}
    exports = [("brat", "brat", brat)]
    exports += data_mod.write_formats(docs, tmp, "corpus", schema, inputs.date, name, plain, fmt_counts, losses)
    (tmp / "bioc" / export_mod.BIOC_KEY_FILE).write_text(export_mod.bioc_key(schema), encoding="utf-8",
                                                         newline="\n")
    splits = export_mod.export(docs, "splits", tmp / "splits", schema, config=plain)
    parts = {split: (tmp / "splits" / f"pmids_{split}.txt").read_text(encoding="utf-8").split()
             for split in data_mod.SPLITS}
    by_split = data_mod.split_of(docs, parts)
    for split in data_mod.SPLITS:
        split_dir = tmp / "splits" / split
        split_dir.mkdir(exist_ok=True)
        copy_conf_files(brat, split_dir, CONF_FILES)
        data_mod.write_formats(by_split[split], tmp, split, schema, inputs.date, name, plain, losses=losses)
    log_pubtator_losses(losses)
    prefix = data_mod.config_name(name)
    hf = data_mod.write_hf(by_split, tmp, prefix)
    exports += [("Hugging Face bigbio_kb (Parquet, all splits)", "bigbio_kb", tmp / "hf" / f"{prefix}_bigbio_kb"),
                ("Hugging Face source (Parquet, all splits)", "source", tmp / "hf" / f"{prefix}_source")]
    spacy_counts = data_mod.write_spacy(by_split, tmp)
    exports.append(("spaCy DocBin (all splits)", "spacy", tmp / "spacy"))
    folds = data_mod.write_folds(docs, tmp)
    fold_of = folds.pop("fold_of", {})
    offsets = data_mod.record_offsets(inputs.manifest, docs)
    (tmp / "sentences.tsv").write_text(data_mod.sentence_map(docs, by_split, fold_of, offsets),
                                       encoding="utf-8", newline="\n")
    return Written(exports, fmt_counts, losses, splits, by_split, hf, spacy_counts, folds, offsets)


def write_documentation(tmp: Path, inputs: ReleaseInputs, checked: Checked,
                        relation_counts: Mapping[str, int]) -> str | None:
    """Write the guidelines, the changelog, the citation and the licence's text.

    Args:
        tmp: The staging directory, whose ``brat/annotation.conf`` is written.
        inputs: What the release is made from.
        checked: What the checks found.
        relation_counts: The count of each relation type, for the guidelines.

    Returns:
        The ``CITATION.cff`` text written, or ``None`` when there is none (no authors).
    """
    meta, lic = checked.meta, checked.lic
    (tmp / "GUIDELINES.md").write_text(
        data_mod.annotation_scheme((tmp / "brat" / "annotation.conf").read_text(encoding="utf-8"), meta.name,
                                   relation_counts, meta.pgxcorpus_method),
        encoding="utf-8", newline="\n")
    previous_brat = inputs.previous / "brat" if inputs.previous is not None else None
    (tmp / "CHANGELOG.md").write_text(data_mod.changelog(checked.docs, previous_brat, inputs.version,
                                                         previous_version(inputs.previous)),
                                      encoding="utf-8", newline="\n")
    cff = meta_mod.citation_cff(meta, inputs.version, inputs.date, lic)
    if cff is not None:
        (tmp / "CITATION.cff").write_text(cff, encoding="utf-8", newline="\n")
    if lic is not None and lic.text is not None:
        (tmp / LICENSE_FILE).write_text(lic.text.rstrip("\n") + "\n", encoding="utf-8", newline="\n")
    return cff


def release_info(inputs: ReleaseInputs, checked: Checked, written: Written, stats: Mapping[str, Any],
                 declared: dict[str, dict[str, Any]], cff: str | None) -> dict[str, Any]:
    """Gather what ``release.json`` holds, except the tables and the agreement and pre-annotation entries.

    Args:
        inputs: What the release is made from.
        checked: What the checks found.
        written: What writing the corpus files reported.
        stats: The corpus statistics ([`corpus_tables`][pipeline.campaign.release.tables.corpus_tables]).
        declared: The format table (what each exported file keeps).
        cff: The ``CITATION.cff`` written, if any.

    Returns:
        The figures of the datasheet, by key (see ``release.json``).
    """
    meta, lic, cfg, docs = checked.meta, checked.lic, inputs.export_config, checked.docs
    fmt_counts, hf = written.fmt_counts, written.hf
    prefix = data_mod.config_name(meta.name)
    kb_total: Counter[str] = Counter()
    for c in hf["bigbio_kb"].values():
        kb_total.update(c)
    return {
        "name": meta.name,
        "version": inputs.version,
        "date": inputs.date,
        "description": meta.description,
        "authors": meta_mod.author_names(meta),
        "citation_cff": cff is not None,
        "citation_file": meta.citation_file or None,
        "citation_carried": sorted(meta.carried),
        "pgxcorpus_method": meta.pgxcorpus_method,
        "license": lic.id if lic else None,
        "license_name": lic.name if lic else None,
        "license_uri": lic.uri if lic else None,
        "license_file": LICENSE_FILE if lic is not None and lic.text is not None else None,
        "license_list": lic.source if lic else None,
        "metadata_missing": checked.gaps,
        "stats": {"sentences": len(docs), "abstracts": stats["abstracts"],
                  "entities": stats["entity_totals"]["total"], "relations": stats["relation_total"]},
        "relation_types": dict(stats["relations"]),
        "modality": {"tokens": stats["modality_tokens"], "normalized": stats["modality_totals"],
                     "paper_rule": stats["modality_totals_paper"]},
        "export": {"relation_map": {}, "relation_map_not_applied": cfg.relation_map,
                   "pubtator_level": cfg.pubtator_level, "pubtator_discontiguous": cfg.pubtator_discontiguous,
                   "conll_scheme": cfg.conll_scheme, "conll_outermost_misaligned": fmt_counts["conll_misaligned"],
                   "conll_outermost_not_in_first_layer": fmt_counts["conll_not_in_first_layer"],
                   "pubtator_documents": fmt_counts["pubtator_documents"],
                   "pubtator_empty_titles": fmt_counts["pubtator_empty_titles"],
                   "pubtator_losses": {k: dict(sorted(v.items())) for k, v in sorted(written.losses.items())},
                   "bioc_validate": {k.removeprefix("bioc_"): fmt_counts[k] for k in (
                       "bioc_annotations", "bioc_discontiguous", "bioc_validate_flagged",
                       "bioc_validate_flagged_discontiguous")}},
        "formats": declared,
        "huggingface": {"configs": [f"{prefix}_source", f"{prefix}_bigbio_kb"], "default": f"{prefix}_source",
                        "splits": {data_mod.HF_SPLITS[k]: len(v) for k, v in written.by_split.items()},
                        "bigbio_kb": {"entities": kb_total["entities"], "relations": kb_total["relations"],
                                      "relations_excluded_modality": kb_total["relations_excluded_modality"],
                                      "relations_excluded_arguments": kb_total["relations_excluded_arguments"]},
                        "per_split": hf},
        "spacy": written.spacy,
        "splits": {"ratios": written.splits["ratios"], "seed": written.splits["seed"],
                   "splits": written.splits["splits"]},
        "folds": written.folds,
        "sentence_offsets": len(written.offsets),
        "campaign": campaign_info(inputs.campaign, inputs.final, checked.assigned or [], [d.name for d in docs]),
        "machine_notes": {"dropped": checked.counts["machine_notes_dropped"],
                          "trimmed": checked.counts["machine_notes_trimmed"]},
        "provenance": checked.prov,
        "decisions": checked.decisions,
    }


def release(inputs: ReleaseInputs, out: str | Path, schema: Schema) -> dict[str, Any]:
    """Write the release of FINAL (see [`pipeline.campaign.release`][pipeline.campaign.release]).

    Everything the datasheet will state is checked before anything is written
    ([`check_inputs`][pipeline.campaign.release.command.check_inputs]); the release is built in a staging
    directory beside ``out`` and swapped in whole.

    Args:
        inputs: What the release is made from.
        out: The release directory: absent, empty, or an earlier release.
        schema: The schema.

    Returns:
        What ``release.json`` holds.

    Raises:
        ReleaseError: If FINAL cannot be released as it is, the decisions are not applied to it, it holds
            documents the campaign does not assign or that are not sentences of the build, ``out`` and
            FINAL overlap, an input cannot be read, the licence is not an SPDX id, or (``strict_metadata``)
            the authors or the licence are missing; nothing is written then.
        FinalizeError: If ``out`` is an unrelated non-empty directory.
        DecisionsError: If a decisions file cannot be applied.
        NotADirectoryError: If ``previous`` is not a release directory.
    """
    out_dir = Path(out)
    checked = check_inputs(inputs, out_dir, schema)
    for gap in checked.gaps:
        log.warning("release: %s", gap)
    tables, stats, extra = make_tables(inputs, checked, schema)
    tmp = staging_dir(out_dir)
    try:
        written = write_corpus(tmp, inputs, checked, schema)
        cff = write_documentation(tmp, inputs, checked, stats["relations"])
        declared = formats_mod.format_table(checked.docs, written.exports, schema, tmp)
        write_tables(tables, tmp / "tables")
        if inputs.decisions:
            (tmp / "decisions").mkdir()
            for path in inputs.decisions:
                (tmp / "decisions" / path.name).write_bytes(path.read_bytes())
        info = release_info(inputs, checked, written, stats, declared, cff)
        info["tables"] = [t.name for t in tables]
        info.update(extra)
        card = data_mod.hf_front_matter(data_mod.config_name(checked.meta.name), info["license"], checked.meta.name,
                                        list(written.hf["bigbio_kb"]))
        (tmp / "README.md").write_text(card + datasheet(info, tables), encoding="utf-8", newline="\n")
        (tmp / RELEASE_JSON).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8",
                                        newline="\n")
        (tmp / SUMS).write_text(sha256sums(tmp), encoding="utf-8", newline="\n")
        publish_dir(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info
