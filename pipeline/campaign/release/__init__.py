"""``pgx-corpus release``: a citable, byte-reproducible package of a final corpus.

Input: ``FINAL`` (a brat collection written by ``campaign finalize``, possibly edited by ``decisions
apply``; offsets half-open into each ``.txt``), optionally the campaign directory (phase-1 collections for
Tables 8-9), the pre-annotated collection (Table 10) and the build manifest (provenance).  The release
refuses a collection that does not validate or still holds campaign marks (``Disagreement`` attributes,
``Discard`` entities): every problem is reported as ``file:line: message``.

The release states nothing it has not checked against FINAL (each refusal writes nothing):

* ``--decisions``: every entry has taken effect in FINAL (applied again as a dry run, it changes nothing;
  [`decisions_not_applied`][pipeline.campaign.release.read.decisions_not_applied]); without a decisions file
  the datasheet states no homogenization;
* ``--campaign``: every FINAL document is a document the campaign assigns (``campaign.json``, else the
  ``manifest.csv`` of an older campaign); ``--manifest``: every FINAL document is a sentence of that build with
  the same text (its ``brat`` collection, or the sentence records of its ``sampled``/``filtered`` stages);
* the datasheet accounts for every assigned document
  ([`accounting`][pipeline.campaign.release.accounts.accounting]: released, discarded in phase 1 or 2 by
  reason, held back, pending), from the campaign and FINAL's ``finalize.json``;
* the machine's provenance notes (``source=...; class=...`` of older brat exports) are not released
  ([`without_machine_notes`][pipeline.campaign.release.read.without_machine_notes], counted in ``release.json``
  ``machine_notes``);
* ``--out`` inside FINAL, or FINAL inside ``--out``, is refused
  ([`check_out_apart`][pipeline.campaign.release.read.check_out_apart]).

Output ``DIR`` (built beside itself and swapped in whole):

* ``brat/``: the documents and ``annotation.conf``, ``visual.conf``, ``tools.conf``, ``kb_shortcuts.conf``;
  ``brat.tar.gz``: the same as one archive;
* ``bioc/corpus.bioc.xml``, ``bioc/corpus.bioc.json``, ``pubtator/corpus.pubtator``,
  ``conll/corpus.conll`` ([`pipeline.brat.export`][pipeline.brat.export]; relation types as annotated);
* ``splits/``: 60/20/20 PMID-grouped splits (``pmids_*.txt``, brat per split, ``splits.json``);
* ``tables/``: Table 2 (entities), Table 3 (relations), the corpus summary, and when the inputs are given
  Table 8 (entity agreement between the phase-1 annotators), Table 9 (relation agreement) and Table 10
  (pre-annotation against the final annotation), each as ``.md``, ``.csv`` and ``.png``;
* ``decisions/``: the homogenization decisions files given (``decisions``), listed in the datasheet;
* ``README.md``: the datasheet (the user's description, authors and licence, contents, counts, annotation
  process, provenance from the build manifest: query, search date, counts per stage, model and package
  versions, configuration hashes, seeds), opened by the Hugging Face dataset card;
* ``CITATION.cff`` (only when authors are given: none is made up) and ``LICENSE.txt`` (the licence's text
  from the SPDX License List), see [`pipeline.campaign.release_meta`][pipeline.campaign.release_meta];
  ``GUIDELINES.md`` (the annotation scheme, each relation type's count) and ``CHANGELOG.md``;
* ``release.json`` (the figures of the datasheet, machine-readable) and ``SHA256SUMS`` (every other file,
  ``sha256sum -c`` format, sorted by path).

Byte reproducibility: nothing records the time or the machine (the BioC collection date is the ``date``
argument, empty by default; absolute paths of the build manifest are reduced to file names); the archive
has fixed member metadata (mtime 0, uid/gid 0, no owner names, sorted members) and a gzip header without
name or time; PNG files are written without the ``Software`` text chunk (matplotlib writes no time).

Agreement (Tables 8-9) is computed between every pair of phase-1 annotators on the released documents
both of them annotated (the phase-1 copies of a released document were, by construction, not discarded);
Discard and Done marker entities and the ``Composite`` presentation attribute are ignored.

The package, in the order a release runs:

* [`read`][pipeline.campaign.release.read]: the inputs (``ReleaseInputs``) and every check against FINAL,
  the campaign, the build manifest and the decisions (``ReleaseError``);
* [`accounts`][pipeline.campaign.release.accounts]: where every assigned document went;
* [`tables`][pipeline.campaign.release.tables] and [`charts`][pipeline.campaign.release.charts]: the tables
  and their PNG charts;
* [`datasheet`][pipeline.campaign.release.datasheet]: ``README.md``;
* [`files`][pipeline.campaign.release.files]: the archive and ``SHA256SUMS``;
* [`command`][pipeline.campaign.release.command]: [`release`][pipeline.campaign.release.command.release],
  checking everything, then writing beside ``DIR`` and swapping it in.

The corpus formats, splits, folds and Hugging Face files are written by
[`pipeline.campaign.release_data`][pipeline.campaign.release_data], the citation and licence by
[`pipeline.campaign.release_meta`][pipeline.campaign.release_meta].
"""
