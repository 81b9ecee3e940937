"""The release's ``README.md``: a datasheet for the corpus, from what ``release.json`` holds."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.brat import formats as formats_mod
from pipeline.campaign import release_meta as meta_mod
from pipeline.campaign.release.tables import Table

log = logging.getLogger(__name__)


def _stage_line(counts: Mapping[str, Any]) -> str:
    items = [f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in sorted(counts.items())
             if isinstance(v, int | float | str)]
    return ", ".join(items[:12]) + (f", ... ({len(items) - 12} more in release.json)" if len(items) > 12 else "")


def datasheet(info: Mapping[str, Any], tables: Sequence[Table]) -> str:
    """Write the release's ``README.md``: a datasheet for the corpus.

    Args:
        info: What ``release.json`` holds (name, version, statistics, formats, campaign, provenance ...).
        tables: The tables, shown with their ``readme_rows``.

    Returns:
        The Markdown text.
    """
    sections = (_heading(info), _licence(info), _contents(info), _modality(info), _process(info),
                _tables(info, tables), _provenance(info), _decisions(info), _citation(info))
    return "\n".join(line for section in sections for line in section)


def _heading(info: Mapping[str, Any]) -> list[str]:
    """The title, the description, what made the corpus, its date and its authors."""
    name = info["name"] + (f" {info['version']}" if info["version"] else "")
    lines = [f"# {name}", ""]
    lines += [info["description"], ""] if info.get("description") else [
        "No description of the corpus was given (`release --description`, or `abstract` in `--citation`).", ""]
    lines += [_made_with(info), ""]
    if info.get("pgxcorpus_method"):
        lines += ["The corpus follows the PGxCorpus method (annotation scheme, guidelines and two-phase "
                  f"annotation): {meta_mod.PGXCORPUS_METHOD}", ""]
    if info["date"]:
        lines += [f"Release date: {info['date']}", ""]
    lines += ["## Authors", ""]
    if info.get("authors"):
        lines += [", ".join(info["authors"]) + ".", ""]
    else:
        lines += ["No authors were given (`release --author`, or `authors` in `--citation`), so none is stated "
                  "and this release has no `CITATION.cff`.", ""]
    return lines


def _licence(info: Mapping[str, Any]) -> list[str]:
    """The licence of the annotations, or that none was given."""
    lines: list[str] = []
    lines += ["## Licence", ""]
    if info.get("license"):
        text = (f" Its text is in `{info['license_file']}`, as the {info['license_list']} gives it."
                if info.get("license_file") else
                f" Its text is not shipped (the {info['license_list']} has none): read it at the URI.")
        lines += [f"The annotations are distributed under {info['license_name']} (`{info['license']}`, "
                  f"<{info['license_uri']}>).{text} The licence does not cover the sentence texts: they remain "
                  "under the terms of their source (for PubMed abstracts, their publishers' copyright and NLM's "
                  "terms of use).", ""]
    else:
        lines += ["No licence was given for this release (`release --license`, `license` in `--citation` or in "
                  "the export configuration), so none is stated and none is guessed: ask the corpus producers "
                  "before reuse.", ""]
    return lines


def _contents(info: Mapping[str, Any]) -> list[str]:
    """The files of the release and what each format holds."""
    s = info["stats"]
    ex = info["export"]
    hf = info["huggingface"]
    kb = hf["bigbio_kb"]
    prefix = hf["configs"][0].removesuffix("_source")
    lines: list[str] = []
    lines += [
        "## Contents", "",
        f"- {s['sentences']:,} sentences from {s['abstracts']:,} abstracts, {s['entities']:,} entities, "
        f"{s['relations']:,} relations.",
        "- `brat/` (and `brat.tar.gz`): brat standoff with its configuration files; offsets are half-open "
        "character offsets into each `.txt`.",
        "- `bioc/corpus.bioc.xml`, `bioc/corpus.bioc.json`: BioC, one document per sentence, one passage at "
        "offset 0, entities (one location per fragment, in ascending offset order, the text joined in that order) "
        "and relations (modality as `Negated`/`Hypothetical` infons, notes as `note` infons); `bioc/corpus.key` "
        "is the key file the collection header names. A gapped annotation's text is its fragments joined by a "
        "space, not the span from its first location to its last, which `bioc.validate` assumes: it flags "
        + _bioc_validate_sentence(ex["bioc_validate"]),
        f"- `pubtator/corpus.pubtator`: PubTator entities **and relations with their modality** (the 5th column of "
        f"a relation line), a 7th entity column `{{document}}:{{brat id}}` linking the lines of one entity "
        f"(discontiguous entities: one line per fragment, `pubtator_discontiguous: {ex['pubtator_discontiguous']}`)"
        + (". Level `abstract`: one PubTator document per PMID whose title is its sentence `{PMID}_1` "
           "when that sentence is released, else empty "
           f"({ex['pubtator_empty_titles']:,} of {ex['pubtator_documents']:,} documents have an empty title), and "
           "whose abstract is its other released sentences joined by a space, so its text is **not** PubMed's; "
           "`corpus.pubtator.sentences.tsv` maps each sentence to its span." if ex["pubtator_level"] == "abstract"
           else ".") + " Readers that accept only the six standard columns (`bconv`) cannot read it: "
        "`pubtator/corpus.bconv.pubtator` is the flavour they read (one document per sentence, the sentence as "
        "title; entity lines only, discontiguous entities as separate fragments; no relations, which need the "
        "key column).",
        "- `conll/corpus.conll`: CoNLL BIO, scheme `outermost` (one label column; `# NAME` before each sentence, "
        "columns token, start, end, label): nested and discontiguous entities are lost there, see the format "
        "table. `conll/corpus.layers.conll`: scheme `layers` (one label column per nesting layer, every "
        "contiguous entity in some column). `conll/corpus.spacy.conll`: the `outermost` labels for "
        "`python -m spacy convert -c ner` (`-DOCSTART-` lines, token and label only). In every CoNLL file each "
        "fragment of a discontiguous entity opens with `B-`, adjacent fragments too, so it reads back as separate "
        "fragments, never as one span joining them.",
        f"- `hf/`: the Hugging Face dataset (Parquet), configs `{prefix}_source` (default; everything as "
        f"annotated: modality, notes, attributes, relation types) and `{prefix}_bigbio_kb` (BigBIO `bigbio_kb` "
        f"schema), splits " + ", ".join(f"{k} ({v:,} sentences)" for k, v in hf["splits"].items() if v)
        + "".join(f"; {k} has no sentence and is not in the card" for k, v in hf["splits"].items() if not v)
        + f". Load with `datasets.load_dataset(\"path/to/release\")` or "
        f"`load_dataset(\"path/to/release\", \"{prefix}_bigbio_kb\")`. In `bigbio_kb`, negated and "
        f"hypothetical relations are **excluded** ({kb['relations_excluded_modality']:,} of {s['relations']:,}; "
        f"{kb['relations']:,} relations remain); the source config keeps them with their modality. "
        + ("There are **no normalizations** in this corpus (the `normalized` lists are empty)."
           if not info["formats"]["brat"]["features"]["normalizations"]["annotated"] else
           f"Normalizations: {info['formats']['brat']['features']['normalizations']['annotated']:,} "
           "(brat `N` lines), in `entities.normalized`."),
        "- `spacy/{train,dev,test}.spacy`: spaCy `DocBin` files: `doc.spans[\"sc\"]` holds every contiguous entity "
        "(nested included; spaCy `spancat`), `doc.spans[\"discontiguous\"]` the fragments of each discontiguous "
        "entity linked by `span.id_` (its brat id), `doc.ents` a flat view for `ner`"
        + _ents_sentence(info["spacy"]) + ". Train with "
        "`python -m spacy init config config.cfg --lang en --pipeline spancat` then `python -m spacy train "
        "config.cfg --paths.train spacy/train.spacy --paths.dev spacy/dev.spacy`.",
        f"- `splits/`: train/dev/test by PMID, ratios {info['splits']['ratios']}, seed {info['splits']['seed']}: "
        + ", ".join(f"{k} {v['pmids']} PMIDs / {v['documents']} sentences"
                    for k, v in info["splits"]["splits"].items())
        + "; each split folder holds its brat documents and `annotation.conf`, and every format is also written "
        "per split (`bioc/train.bioc.xml`, `pubtator/dev.pubtator`, `conll/test.conll`...).",
        ("- `splits/folds.tsv`, `splits/folds.json`: " + str(info["folds"]["k"]) + " cross-validation folds grouped "
         "by PMID over the whole corpus (pipeline/nlp/folds.py, seed " + str(info["folds"]["seed"]) + "), as the "
         "paper evaluated its corpus." if "folds" in info["folds"] else
         f"- No cross-validation folds: {info['folds'].get('error', '')}."),
        "- `sentences.tsv`: each sentence's PMID, sentence index, split, fold, length and its start in the PubMed "
        f"record text (title, newline, abstract): known for {info['sentence_offsets']:,} of {s['sentences']:,} "
        "sentences (from the sentence records of the build manifest; never guessed).",
        "- `GUIDELINES.md`: the annotation scheme (types, relations and their arguments with each type's count "
        "in this release, 0 included; modality) as configured; "
        + ("`CITATION.cff` (the authors above); " if info.get("citation_cff") else "no `CITATION.cff` (no authors "
           "were given); ")
        + (f"`{info['license_file']}` (the licence's text); " if info.get("license_file") else "")
        + "`CHANGELOG.md` (documents added, removed, changed since the previous release; "
        "document ids are stable); `tables/`: the tables below as Markdown, CSV and PNG.",
        "- `release.json`: these figures, machine-readable; `SHA256SUMS`: check with `sha256sum -c SHA256SUMS`.",
        "",
        "Relation types are kept as annotated in every file"
        + (" (the export configuration's `relation_map`, " + ", ".join(
            f"`{k}` -> `{v}`" if v else f"`{k}` dropped"
            for k, v in sorted(ex["relation_map_not_applied"].items()))
           + ", is a training view of `pgx-corpus export` and is not applied here)"
           if ex["relation_map_not_applied"] else "") + ": " + ", ".join(
            f"{t} {n:,}" for t, n in info["relation_types"].items()) + ".", "",
        "## What each format keeps", "",
        "Computed by reading every exported file back with an independent reader and finding each annotated "
        "feature again (nothing here is written by hand).", "",
        formats_mod.markdown(info["formats"]),
    ]
    return lines


def _modality(info: Mapping[str, Any]) -> list[str]:
    """How relation modality is read, and its counts by both rules."""
    lines: list[str] = []
    mod = info["modality"]
    lines += [
        "## Relation modality", "",
        "Modality is read from the relation's note with one grammar (pipeline/brat/modality.py): its leading whole "
        "tokens `hyp`, `hypo`, `htp` mean Hypothetical and `neg`, `not` Negated; other notes are free text, and "
        "a token is never matched by prefix (`hypertension` is not hypothetical). Tokens read: "
        + (", ".join(f"`{k}` ({v['modality']}) {v['relations']:,}" for k, v in mod["tokens"].items()) or "none")
        + ".",
        "Table 3 counts modality by the paper's rule (note tokens starting with `neg` or `hyp`): "
        + (", ".join(f"{k} {v:,}" for k, v in mod["paper_rule"].items()) or "none") + "; the normalization gives "
        + (", ".join(f"{k} {v:,}" for k, v in mod["normalized"].items()) or "none")
        + (" (the same)." if mod["paper_rule"] == mod["normalized"] else " (Table 3b)."), "",
    ]
    return lines


def _process(info: Mapping[str, Any]) -> list[str]:
    """The annotation process: the campaign, its discards and every assigned document."""
    lines = ["## Annotation process", ""]
    camp = info.get("campaign")
    if camp:
        lines += [
            f"Each sentence was annotated independently by two of {camp['annotators']} annotators (phase 1); a "
            f"senior annotator who had not annotated it ({camp['seniors']} seniors) compared and revised both "
            "annotations (phase 2)"
            + ("; annotations were then homogenized in bulk (phase 3, decisions below)." if info.get("decisions")
               else "; no homogenization decisions file was given (`--decisions`), so none is stated."),
        ]
        if camp.get("documents_assigned") is not None and not camp["discarded_phase1"]:
            lines.append(f"Of the {camp['documents_assigned']:,} sentences assigned, none was discarded in phase 1.")
        elif camp.get("documents_assigned") is not None:
            n = camp["discarded_phase1"]
            lines.append(f"Of the {camp['documents_assigned']:,} sentences assigned, {n:,} "
                         f"{'was' if n == 1 else 'were'} discarded in phase 1 by at least one annotator (" + (", ".join(
                             f"{k} {v}" for k, v in camp["discard_reasons"].items()) or "no reason given")
                         + ").")
        if camp.get("held_back") is not None:
            lines.append(f"At finalization {camp['held_back']} document(s) were held back (unresolved "
                         "disagreement or failed validation), "
                         f"{camp.get('pending_phase2', 0)} were not signed off by their senior and "
                         f"{camp.get('discarded_phase2', 0)} were discarded by their senior; none of them is "
                         "released.")
        lines.append("")
        lines += _accounting_lines(camp.get("accounting"))
    else:
        lines += ["No campaign directory was given: annotation-process figures are not reported.", ""]
    return lines


def _tables(info: Mapping[str, Any], tables: Sequence[Table]) -> list[str]:
    """The tables, with their ``readme_rows``, and whether relations were pre-annotated."""
    lines: list[str] = []
    lines += [PAPER_TABLES, ""]
    for t in tables:
        lines += [t.markdown(t.readme_rows)]
        if t.readme_rows is not None:
            lines += [f"Per annotator pair: `tables/{t.name}.md`.", ""]
    prov = info.get("provenance")
    relations_flag = str(((prov or {}).get("params") or {}).get("relations", "")).lower()
    if relations_flag == "true":
        lines += ["Relations were pre-annotated (rules of `config/relations.yaml` and, where the pre-annotation "
                  "came from PubTator3, its relations): annotators confirmed, retyped or deleted proposals and "
                  "drew the rest, so relation agreement is not comparable with the paper's Table 9, where every "
                  "relation was drawn by hand.", ""]
    elif relations_flag == "false":
        lines += ["Relations were not pre-annotated at build time: annotators drew them in brat, where `campaign "
                  "serve`'s *Suggest relations* button can propose relations on the entities a person has "
                  "corrected. The release does not record whether it was pressed, so relation agreement may not "
                  "be comparable with the paper's Table 9, where every relation was drawn by hand.", ""]
    return lines


def _provenance(info: Mapping[str, Any]) -> list[str]:
    """The build the sentences come from (the manifest), or that none was given."""
    lines: list[str] = []
    prov = info.get("provenance")
    lines += ["## Provenance", ""]
    if not prov:
        lines += ["No build manifest was given (`--manifest runs/<hash>/manifest.json`): provenance not recorded.",
                  ""]
    else:
        search = prov.get("search") or {}
        lines += [
            f"- build run: `{prov['run']}`",
            f"- query: `{search.get('query', 'n/a (offline sources)')}`" if search else
            "- query: none (offline sources: " + ", ".join(
                f"{k}={v}" for k, v in sorted(prov["params"].items()) if k in ("pubmed_xml", "pubtator")) + ")",
            f"- search date: {search.get('search_date', 'n/a')}; PubMed hits: {search.get('count', 'n/a')}",
            "- seeds: " + (", ".join(f"{k} {v}" for k, v in sorted(prov["seeds"].items())) or "n/a"),
            f"- failed fetch batches: {prov['failures']}",
            "", "### Counts per stage", "", "| stage | counts |", "|---|---|",
        ]
        lines += [f"| {stage} | {_stage_line(c) if isinstance(c, Mapping) else c} |"
                  for stage, c in prov["stages"].items()]
        lines += ["", "### Versions", "", "| package or model | version |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(prov["versions"].items())]
        lines += ["", "### Configuration (SHA-256)", "", "| file | sha256 |", "|---|---|"]
        lines += [f"| {k} | `{v}` |" for k, v in sorted(prov["config_hashes"].items())]
        lines += ["", "### Build parameters", "", "| parameter | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(prov["params"].items())]
        lines.append("")
    return lines


def _decisions(info: Mapping[str, Any]) -> list[str]:
    """The homogenization decisions applied, when any."""
    lines: list[str] = []
    if info.get("decisions"):
        lines += ["## Homogenization decisions", "",
                  "Applied in bulk to the final corpus (`pgx-corpus decisions apply`); the files are in "
                  "`decisions/`.", "", "| file | kind | term or relation | change | why |", "|---|---|---|---|---|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in info["decisions"]]
        lines.append("")
    return lines


def _citation(info: Mapping[str, Any]) -> list[str]:
    """How to cite the release, and the method when it follows PGxCorpus."""
    lines: list[str] = []
    lines += ["## How to cite", ""]
    if info.get("citation_cff"):
        lines += [f"Cite this release as `CITATION.cff` says (`{info['name']}`"
                  + (f", version {info['version']}" if info["version"] else "") + ", by the authors above"
                  + (f"; from `{info['citation_file']}` it also carries "
                     + ", ".join(f"`{k}`" for k in info["citation_carried"]) if info.get("citation_carried") else "")
                  + "), together with its `SHA256SUMS`.", ""]
    else:
        lines += ["No authors were given, so this release states no citation of its own; cite it by name"
                  + (f", version {info['version']}" if info["version"] else "") + " and `SHA256SUMS`.", ""]
    if info.get("pgxcorpus_method"):
        lines += ["Cite the method as well (in `CITATION.cff` `references`, when there is one):", "",
                  "```bibtex", "@article{legrand2020pgxcorpus,",
                  "  title   = {PGxCorpus, a manually annotated corpus for pharmacogenomics},",
                  "  author  = {" + " and ".join(f"{family}, {given}" for given, family in meta_mod.PAPER_AUTHORS)
                  + "},",
                  "  journal = {Scientific Data},", "  volume  = {7},", "  pages   = {3},", "  year    = {2020},",
                  "  doi     = {10.1038/s41597-019-0342-9}", "}", "```", ""]
    return lines


PAPER_TABLES = ("The tables are numbered, and their settings chosen, as in the paper that defined them, the "
                "PGxCorpus paper (Legrand et al., Scientific Data 7:3, 2020), which pgx-corpus reproduces; \"the "
                "paper\" in this file is that paper, whatever corpus is released.")
"""The datasheet's one sentence about the paper the tables follow: the tool's reference, not the corpus's."""


def _made_with(info: Mapping[str, Any]) -> str:
    """Say what pgx-corpus did: released the collection given, and with a campaign or a build, more."""
    if info.get("campaign"):
        return ("Annotated in a pgx-corpus campaign (two annotators and a senior per sentence; see the annotation "
                "process below) and released with `pgx-corpus release`.")
    built = ", whose sentences a pgx-corpus build selected (see the provenance below)" if info.get("provenance") else ""
    return (f"Released with `pgx-corpus release` from the brat collection given to it{built}. No campaign directory "
            "was given, so this release does not say how the corpus was annotated.")


def _bioc_validate_sentence(v: Mapping[str, int]) -> str:
    """What ``bioc.validate`` flags in ``bioc/corpus.bioc.xml``, as counted at release time."""
    if not v.get("discontiguous"):
        return "nothing here, since no annotation is discontiguous."
    passed = v["discontiguous"] - v["validate_flagged_discontiguous"]
    return (f"{v['validate_flagged_discontiguous']:,} of the {v['discontiguous']:,} discontiguous annotations "
            + (f"(the other {passed:,} have fragments one space apart, so their joined text equals the span) "
               if passed else "")
            + f"and {v['validate_flagged'] - v['validate_flagged_discontiguous']:,} other annotations.")


def _ents_sentence(spacy: Mapping[str, Mapping[str, int]]) -> str:
    """How many entities ``doc.ents`` holds over the DocBin files, and why the others are not in it."""
    total = sum(c.get("entities", 0) for c in spacy.values())
    out = sum(c.get("entities_not_in_ents", 0) for c in spacy.values())
    disc = sum(c.get("entities_discontiguous", 0) for c in spacy.values())
    over = sum(c.get("entities_overlapping_not_in_ents", 0) for c in spacy.values())
    return (f" ({total - out:,} of the {total:,} entities; not in it: the {disc:,} discontiguous ones and {over:,} "
            "contiguous ones overlapping a longer one)")


def _accounting_lines(acc: Mapping[str, Any] | None) -> list[str]:
    """The datasheet's table of where every assigned document went (``accounting``)."""
    if not acc:
        return []

    def reasons(key: str) -> str:
        return ", ".join(f"{k} {v:,}" for k, v in acc[key].items())

    rows = [("released", acc["released"], ""),
            ("discarded in phase 1 (by an annotator, never reviewed)", acc["discarded_phase1"],
             reasons("discard_reasons_phase1")),
            ("discarded in phase 2 (by the senior)", acc["discarded_phase2"], reasons("discard_reasons_phase2")),
            ("held back (unresolved or invalid)", acc["held_back"], ""),
            ("pending: not signed off by the senior", acc["pending_signoff"], ""),
            ("pending: not in phase 2 yet", acc["pending_phase2"], "")]
    if acc["not_accounted_for"]:
        rows.append(("not accounted for" + ("" if acc["finalize_report"] else " (FINAL has no finalize.json)"),
                     acc["not_accounted_for"], ", ".join(acc["not_accounted_for_documents"])))
    lines = ["### Every assigned document", "", "| documents | count | reasons |", "|---|---|---|"]
    lines += [f"| {label} | {n:,} | {why} |" for label, n, why in rows]
    lines += [f"| **assigned** | **{acc['assigned']:,}** |  |", ""]
    return lines
