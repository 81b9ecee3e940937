r"""Export a brat collection for training code: PubTator, BioC XML/JSON, CoNLL BIO, PMID-grouped splits.

Input: brat documents (``NAME.txt``/``NAME.ann``; PGxCorpus names sentences
``{PMID}_{k}``), offsets half-open into the ``.txt``.  Every export keeps
those offsets: a document's text is exported as it is (one BioC passage at
offset 0; the PubTator title line), so exported offsets equal brat offsets.

Relation post-processing (``config/export.yaml`` ``relation_map``): a training
view of ``pgx-corpus export`` only, declared in its summary (``relation_map`` and
the ``relations_mapped:FROM->TO`` counts): uncommon relation types are rewritten
to their parent (``metabolizes`` and ``transports`` -> ``influences``); a type
mapped to null is dropped.  ``campaign finalize`` and ``release`` never fold:
they keep the types as annotated.

Formats
* ``pubtator``: see [`pipeline.brat.pubtator`][pipeline.brat.pubtator] (the writer and its
  reverse).  ``pubtator_level: abstract`` (default; ``--pubtator-level``): one
  document per PMID with numeric id, title = sentence 1, the other sentences
  joined by a space as the abstract, document offsets, and the sentence map
  ``OUT.sentences.tsv`` beside ``OUT``; ``sentence``: one document per brat
  document.  Entities carry a 7th column ``{name}:{brat id}``; a
  discontiguous entity is one line per fragment sharing that key
  (``pubtator_discontiguous: split``, default) or is skipped and counted
  (``skip``); relations are ``DOC type key1 key2 modality`` lines; bare NCBI
  gene ids; ``-`` for no identifier.  What PubTator cannot hold (notes,
  attributes other than modality, events...) is counted and logged at WARNING.
* ``bioc-xml`` / ``bioc-json``: one BioC document per brat document, one
  passage (offset 0) holding the text, the entities (one location per
  fragment in ascending offset order, text joined in that order; when brat lists the fragments in another
  order, infon ``fragment_order`` gives it; infons ``type``, ``identifier``, ``note``/``note_2``...
  for AnnotatorNotes and one infon per brat attribute, e.g. ``Composite`` =
  ``true``) and the relations (infons ``type``, ``Negated``/``Hypothetical`` =
  ``true`` from brat attributes or AnnotatorNotes, notes and other attributes
  as for entities, nodes ``Arg1``/``Arg2``).  Read back with
  ``bioc.biocxml``/``bioc.biocjson``; [`from_bioc`][pipeline.brat.export.from_bioc] restores the brat
  documents (ids of notes, attributes and normalizations renumbered; fragments in brat's order).
* ``conll``: tokens are ``\w+`` runs and single other non-space characters;
  a document is a block of ``token<TAB>start<TAB>end<TAB>label...`` lines
  preceded by ``# NAME`` and followed by a blank line (labels last, as CoNLL
  readers expect).  Nested entities: ``outermost`` keeps, per token, the
  entity chosen first when entities are taken contiguous before
  discontiguous, then longest (most characters) first, then by start, skipping any entity that shares a token with one
  already taken; ``layers`` repeats that pass on the leftovers, one label
  column per pass, until every entity is placed.  A discontiguous entity
  labels the tokens of each of its fragments as a span of its own (``B-`` on
  the fragment's first token, ``I-`` on the others), so no ``I-`` ever follows
  ``O``; a BIO reader gets the fragments back, not their link (declared).  An entity boundary
  inside a token labels the whole token and is counted as misaligned.
* ``splits``: PMIDs (name before ``_``) are sorted, shuffled with
  ``random.Random(seed)`` and cut by the ratios (default 60/20/20; the train
  and dev sizes are rounded, test takes the rest), so all sentences of an
  abstract land in one split.  Writes ``pmids_train.txt``,
  ``pmids_dev.txt``, ``pmids_test.txt`` (one PMID per line, numeric order, as
  MedMentions ships ``corpus_pubtator_pmids_*.txt``), the brat documents of
  each split under ``train/``, ``dev/``, ``test/`` and ``splits.json``.

Count keys: ``documents``, ``entities``, ``relations``, ``relations_mapped``,
``relations_dropped``, ``conll_misaligned``, ``conll_not_in_first_layer``, ``conll_fragments_joined``,
``parse_issues``; the PubTator
export's keys are listed in [`to_pubtator_records`][pipeline.brat.pubtator.to_pubtator_records].
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import bioc
from bioc import biocjson, biocxml

from pipeline import resources, yamlfile
from pipeline.brat import pubtator
from pipeline.brat.standoff import Attribute, BratDocument, Normalization, Note, Relation, TextBound, write_document
from pipeline.brat.stats import relation_modality
from pipeline.documents import Span, pmid_sort_key
from pipeline.errors import InputError
from pipeline.schema import Schema
from pipeline.sources.pubtator_format import format_record
from pipeline.yamlfile import read_mapping

log = logging.getLogger(__name__)

DEFAULT_EXPORT_CONFIG = resources.config_file("export.yaml")
FORMATS = ("pubtator", "bioc-xml", "bioc-json", "conll", "splits")
TOKEN_RE = re.compile(r"\w+|[^\w\s]")


class ExportConfigError(InputError):
    """A bad export configuration; the message names the file."""


@dataclass(frozen=True)
class ExportConfig:
    """The export settings (``config/export.yaml``).

    Attributes:
        relation_map: Relation type -> the type it is rewritten to in the training view; None drops the
            relation (with its notes and attributes).
        pubtator_discontiguous: ``split`` (one PubTator line per fragment, shared key) or ``skip``.
        pubtator_level: ``abstract`` (one PubTator document per PMID, with the sidecar) or ``sentence``.
        conll_scheme: ``outermost`` (one label column) or ``layers`` (one column per pass, until every
            entity is placed).
        split_ratios: The train, dev and test ratios (any positive scale: ``(60, 20, 20)``).
        split_seed: The seed of the PMID shuffle.
        license: The corpus licence a release states (an SPDX id); ``""`` when none is given.
    """

    relation_map: dict[str, str | None] = field(default_factory=dict)
    pubtator_discontiguous: str = "split"
    pubtator_level: str = "abstract"
    conll_scheme: str = "outermost"
    split_ratios: tuple[float, float, float] = (60, 20, 20)
    split_seed: int = 13
    license: str = ""  # the corpus licence a release states (SPDX id); "" = none given (never guessed)


@yamlfile.checked_types(ExportConfigError)
def load_export_config(path: str | Path = DEFAULT_EXPORT_CONFIG) -> ExportConfig:
    """Read the export settings.

    Args:
        path: The settings file (``config/export.yaml`` by default).

    Returns:
        The settings, defaults filled in for what the file leaves out.

    Raises:
        ExportConfigError: If the file cannot be read or parsed, has an unknown key, or a value is out of
            range or of the wrong type (naming the file).
    """
    p = Path(path)
    data = read_mapping(p, ExportConfigError, "export config")
    unknown = set(data) - {
        "relation_map", "pubtator_discontiguous", "pubtator_level", "conll_scheme", "split_ratios", "split_seed",
        "license",
    }
    if unknown:
        raise ExportConfigError(f"{p}: unknown key(s) {sorted(unknown)}")
    cfg = ExportConfig(
        relation_map={str(k): (None if v is None else str(v)) for k, v in (data.get("relation_map") or {}).items()},
        pubtator_discontiguous=str(data.get("pubtator_discontiguous", "split")),
        pubtator_level=str(data.get("pubtator_level", "abstract")),
        conll_scheme=str(data.get("conll_scheme", "outermost")),
        split_ratios=parse_ratios(data.get("split_ratios", (60, 20, 20)), str(p)),
        split_seed=int(data.get("split_seed", 13)),
        license=str(data.get("license") or ""),
    )
    if cfg.pubtator_discontiguous not in ("skip", "split"):
        raise ExportConfigError(f"{p}: pubtator_discontiguous must be skip or split")
    if cfg.pubtator_level not in pubtator.LEVELS:
        raise ExportConfigError(f"{p}: pubtator_level must be abstract or sentence")
    if cfg.conll_scheme not in ("outermost", "layers"):
        raise ExportConfigError(f"{p}: conll_scheme must be outermost or layers")
    return cfg


def parse_ratios(value: Any, where: str = "ratios") -> tuple[float, float, float]:
    """Read split ratios.

    Args:
        value: ``"60,20,20"`` or a sequence of three numbers.
        where: The file or option named by errors.

    Returns:
        The three ratios (train, dev, test) as floats.

    Raises:
        ExportConfigError: If there are not three non-negative numbers with a positive sum.
    """
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        nums = tuple(float(x) for x in parts)
    except (TypeError, ValueError) as exc:
        raise ExportConfigError(f"{where}: bad ratios {value!r}") from exc
    if len(nums) != 3 or any(x < 0 for x in nums) or sum(nums) <= 0:
        raise ExportConfigError(f"{where}: ratios need three non-negative numbers, got {value!r}")
    return (nums[0], nums[1], nums[2])


# --- relation post-processing ---------------------------------------------------

def map_relations(
    docs: Iterable[BratDocument], relation_map: Mapping[str, str | None], counts: Counter[str] | None = None
) -> list[BratDocument]:
    """Rewrite relation types for the training view (``relation_map``).

    Args:
        docs: The brat documents; not modified.
        relation_map: Relation type -> new type; a type mapped to None is dropped with its notes and
            attributes.  Types not in the map are kept.
        counts: Updated in place when given: ``relations_mapped``, ``relations_mapped:FROM->TO``,
            ``relations_dropped``.

    Returns:
        Copies of the documents with the relations rewritten, in the order given.
    """
    counts = counts if counts is not None else Counter()
    out = []
    for doc in docs:
        relations: list[Relation] = []
        dropped: set[str] = set()
        for r in doc.relations:
            if r.type in relation_map:
                target = relation_map[r.type]
                if target is None:
                    dropped.add(r.id)
                    counts["relations_dropped"] += 1
                    continue
                counts["relations_mapped"] += 1
                counts[f"relations_mapped:{r.type}->{target}"] += 1
                r = replace(r, type=target)
            relations.append(r)
        out.append(
            replace(
                doc,
                relations=relations,
                notes=[n for n in doc.notes if n.target not in dropped],
                attributes=[a for a in doc.attributes if a.target not in dropped],
            )
        )
    return out


def _frags(t: TextBound) -> tuple[Span, ...]:
    return tuple(sorted((s, e) for s, e in t.fragments if e > s))


def _identifiers(doc: BratDocument) -> dict[str, str]:
    ids: dict[str, list[str]] = {}
    for n in doc.normalizations:
        ids.setdefault(n.target, []).append(f"{n.db}:{n.db_id}")
    return {k: ",".join(v) for k, v in ids.items()}


def _covered(doc: BratDocument, frags: Sequence[Span], fallback: str) -> str:
    return " ".join(doc.text[s:e] for s, e in frags) if doc.text else fallback


# --- PubTator ---------------------------------------------------------------------

def to_pubtator(
    docs: Iterable[BratDocument], schema: Schema, *, level: str = "abstract", discontiguous: str = "split",
    counts: Counter[str] | None = None, warn: bool = True,
) -> tuple[str, list[pubtator.SentenceSpan]]:
    """Write brat documents as PubTator text (see [`pipeline.brat.pubtator`][pipeline.brat.pubtator]).

    Args:
        docs: The brat documents, offsets half-open into each ``.txt``.
        schema: The corpus schema (modality attributes).
        level: ``abstract`` or ``sentence``.
        discontiguous: ``split`` or ``skip``.
        counts: Updated in place when given: the counts of
            [`to_pubtator_records`][pipeline.brat.pubtator.to_pubtator_records].
        warn: Log each kind of loss at WARNING (``False``: the caller reports them).

    Returns:
        The PubTator text, and the sentence map (half-open offsets of each brat document in its PubTator
            document) for the sidecar.

    Raises:
        ValueError: If ``level`` is unknown.
    """
    records, spans = pubtator.to_pubtator_records(docs, schema, level=level, discontiguous=discontiguous,
                                                  counts=counts, warn=warn)
    return "".join(format_record(r) for r in records), spans


def to_pubtator_plain(docs: Iterable[BratDocument], schema: Schema, counts: Counter[str] | None = None,
                      warn: bool = True) -> str:
    """Write brat documents in the plain PubTator flavour that readers of the six standard columns accept (``bconv``).

    One document per brat document (id ``{PMID}_{k}``, the sentence as title, an empty abstract), entity
    lines ``DOC start end text type identifier`` only, offsets equal to brat offsets.  No key column, so a
    discontiguous entity is one line per fragment that reads back as separate entities, and no relation
    lines (a relation needs the key column): relations, modality and notes are the declared losses of
    this flavour.

    Args:
        docs: The brat documents.
        schema: The corpus schema.
        counts: Updated in place when given: the counts of
            [`to_pubtator_records`][pipeline.brat.pubtator.to_pubtator_records].
        warn: Log each kind of loss at WARNING (``False``: the caller reports them).

    Returns:
        The PubTator text.
    """
    records, _ = pubtator.to_pubtator_records(docs, schema, level="sentence", discontiguous="split", counts=counts,
                                              warn=warn)
    plain = [replace(r, annotations=tuple(replace(a, extra=()) for a in r.annotations), relations=())
             for r in records]
    return "".join(format_record(r) for r in plain)


# --- BioC ---------------------------------------------------------------------------

#: infon of an annotation whose brat fragments are not in ascending order: for each brat fragment in brat's
#: order, the 1-based position of its location among the (ascending) locations, joined by ``,`` (``2,1``)
BIOC_ORDER_INFON = "fragment_order"
#: infon keys of annotations and relations that are not brat attributes
BIOC_RESERVED_INFONS = ("type", "identifier", BIOC_ORDER_INFON)
BIOC_NOTE_INFON = "note"
#: the key file the collection header names; ``bioc_key`` gives its text, shipped beside the collection
BIOC_KEY_FILE = "corpus.key"


def bioc_key(schema: Schema) -> str:
    """Write the BioC key file: what the collection's documents, passages, annotations and relations hold.

    Args:
        schema: The corpus schema, whose entity and relation types the key lists.

    Returns:
        The key file's text (shipped as ``corpus.key`` beside the collection).
    """
    entity_types = ", ".join(schema.entity_types())
    relation_types = ", ".join(schema.relation_types())
    return "\n".join([
        "pgx-corpus BioC key",
        "",
        "collection: one document per brat document (a sentence, id {PMID}_{k}); document infon pmid.",
        "passage: one per document, offset 0, type 'sentence'; its text is the brat .txt text, so every offset",
        "  is a character offset into the sentence (half-open; BioC lengths in characters).",
        f"annotation: a brat entity (id = brat id); infon type = the entity type ({entity_types});",
        "  infon identifier = normalizations DB:ID joined by ','; infons note, note_2... = AnnotatorNotes;",
        "  other infons = brat attributes ('true' for a binary one). Locations: one per fragment in ascending",
        "  offset order; the annotation text is the fragment texts joined by one space in that order.",
        f"  infon {BIOC_ORDER_INFON} (only where brat lists the fragments in another order): for each brat fragment,",
        "  in brat's order, the 1-based position of its location, joined by ',' ('2,1': the second location first).",
        "  A gapped (discontiguous) annotation has several locations: its text is not the span from the first",
        "  location to the last (readers that assume so, such as bioc.validate, report it as an error).",
        f"relation: a brat relation (id = brat id); infon type = the relation type as annotated ({relation_types});",
        "  infons Negated/Hypothetical = 'true' for its modality (pipeline/brat/modality.py); notes and attributes",
        "  as for annotations; nodes Arg1 and Arg2 refer to annotation ids of the same passage.",
        "",
    ])


def _note_key(i: int) -> str:
    return BIOC_NOTE_INFON if i == 0 else f"{BIOC_NOTE_INFON}_{i + 1}"


def _attribute_infons(doc: BratDocument, target: str) -> dict[str, str]:
    """The brat attributes of ``target`` as infons: binary -> ``"true"``, multi-valued -> the value."""
    return {a.type: "true" if a.value is None else a.value for a in doc.attributes if a.target == target}


def _note_infons(doc: BratDocument, target: str) -> dict[str, str]:
    return {_note_key(i): text for i, text in enumerate(doc.notes_for(target))}


def to_bioc(docs: Iterable[BratDocument], schema: Schema, counts: Counter[str] | None = None,
            source: str = "pgx-corpus") -> bioc.BioCCollection:
    """Convert brat documents to a BioC collection (see the module docstring).

    Each document is one passage at offset 0 holding the brat text, so BioC offsets equal brat offsets
    (half-open, into the ``.txt``). Entities keep their brat ids, fragments (one location each, in
    ascending offset order, as BioC readers such as bconv expect; brat's order, when it differs, in the
    infon ``fragment_order``: [`fragment_order`][pipeline.brat.export.fragment_order]) and type; their
    normalizations go to infon ``identifier`` (``DB:ID``, several joined by ``,``), their AnnotatorNotes to
    infons ``note``, ``note_2``..., their attributes
    (``Composite``...) to infons named after the attribute (``"true"`` for a binary one). Relations
    likewise, plus an infon ``"true"`` for each modality found in their AnnotatorNotes (``neg`` ->
    ``Negated``). Events and equivalences have no BioC form here: counted (``events_dropped``,
    ``equivalences_dropped``) and logged at WARNING. An entity without a non-empty fragment, and a
    relation to an entity not exported, are left out.

    Args:
        docs: The brat documents.
        schema: The corpus schema (modality attributes).
        counts: Updated in place when given: ``documents``, ``entities``, ``relations``,
            ``empty_entities_dropped``, ``relations_dropped_unknown_argument``, ``events_dropped``,
            ``equivalences_dropped``.
        source: The collection's ``source``.

    Returns:
        The collection, one BioC document per brat document in order; its ``key`` is ``corpus.key``
            ([`bioc_key`][pipeline.brat.export.bioc_key]).
    """
    counts = counts if counts is not None else Counter()
    collection = bioc.BioCCollection()
    collection.source = source
    collection.key = BIOC_KEY_FILE
    for doc in docs:
        counts["documents"] += 1
        bdoc = bioc.BioCDocument()
        bdoc.id = doc.name
        bdoc.infons["pmid"] = doc.pmid
        passage = bioc.BioCPassage()
        passage.offset = 0
        passage.text = doc.text
        passage.infons["type"] = "sentence" if "_" in doc.name else "document"
        ids = _identifiers(doc)
        known = set()
        for t in doc.textbounds:
            # ascending offsets (BioC readers such as bconv expect them), the text joined in that order
            annotated = [(s, e) for s, e in t.fragments if e > s]
            frags = tuple(sorted(annotated))
            if not frags:
                counts["empty_entities_dropped"] += 1
                continue
            counts["entities"] += 1
            ann = bioc.BioCAnnotation()
            ann.id = t.id
            ann.infons.update(_attribute_infons(doc, t.id))
            ann.infons.update(_note_infons(doc, t.id))
            ann.infons["type"] = t.type
            if annotated != list(frags):  # brat's order, which the ascending locations do not keep
                ann.infons[BIOC_ORDER_INFON] = fragment_order(annotated)
            if t.id in ids:
                ann.infons["identifier"] = ids[t.id]
            for s, e in frags:
                ann.add_location(bioc.BioCLocation(s, e - s))
            ann.text = _covered(doc, frags, t.text)
            passage.add_annotation(ann)
            known.add(t.id)
        unknown: Counter[str] = Counter()
        for r in doc.relations:
            if not all(ref in known for _, ref in r.args):
                log.warning("%s:%d: relation %s refers to an unknown entity: not exported", doc.path or doc.name,
                            r.line, r.id)
                counts["relations_dropped_unknown_argument"] += 1
                continue
            counts["relations"] += 1
            rel = bioc.BioCRelation()
            rel.id = r.id
            for mod in relation_modality(doc, r.id, schema, unknown):
                rel.infons[mod] = "true"
            rel.infons.update(_attribute_infons(doc, r.id))
            rel.infons.update(_note_infons(doc, r.id))
            rel.infons["type"] = r.type
            for role, ref in r.args:
                rel.add_node(bioc.BioCNode(ref, role))
            passage.add_relation(rel)
        counts["events_dropped"] += len(doc.events)
        counts["equivalences_dropped"] += len(doc.equivs)
        bdoc.add_passage(passage)
        collection.add_document(bdoc)
    for key in ("events_dropped", "equivalences_dropped", "empty_entities_dropped"):
        if counts[key]:
            log.warning("BioC export: %s: %d (no BioC form in this export)", key, counts[key])
    return collection


def from_bioc(
    collection: bioc.BioCCollection, schema: Schema, counts: Counter[str] | None = None
) -> list[BratDocument]:
    """Rebuild brat documents from a BioC collection written by [`to_bioc`][pipeline.brat.export.to_bioc].

    One brat document per BioC document, named by its id; the text is the passages' text placed at
    their offsets (gaps filled with spaces).  Entities and relations keep their ids; an entity's fragments
    are its locations, put back in brat's order by its ``fragment_order`` infon when it has one (its text
    column is their texts joined by one space in that order); infon
    ``identifier`` gives ``Reference`` normalization lines (``N1``... in order, text = the entity's
    text), ``note``/``note_N`` infons AnnotatorNotes, every other infon (but ``type``) a brat
    attribute (binary when ``"true"``).  A relation's modality infon that its restored notes already
    imply (``neg`` -> ``Negated``) is not added again as an attribute.  Note and attribute ids are
    numbered afresh.

    Args:
        collection: The BioC collection.
        schema: The corpus schema (modality attributes).
        counts: Updated in place when given: ``documents``, ``entities``, ``relations``, ``notes``,
            ``attributes``.

    Returns:
        The brat documents, in collection order, offsets half-open into the rebuilt text.

    Raises:
        ValueError: If a ``fragment_order`` infon is not an order of the annotation's locations (document and
            annotation named).
    """
    counts = counts if counts is not None else Counter()
    out: list[BratDocument] = []
    for bdoc in collection.documents:
        text = ""
        for passage in bdoc.passages:
            text = text.ljust(passage.offset) + (passage.text or "")
        doc = BratDocument(str(bdoc.id), text)
        pending_attrs: list[tuple[str, str, str, bool]] = []  # (target, name, value, is_relation)
        for passage in bdoc.passages:
            for ann in passage.annotations:
                frags = tuple((loc.offset, loc.offset + loc.length) for loc in ann.locations)
                if BIOC_ORDER_INFON in ann.infons:
                    frags = _in_brat_order(frags, ann.infons[BIOC_ORDER_INFON], f"document {bdoc.id!r}, "
                                           f"annotation {ann.id!r}")
                doc.textbounds.append(TextBound(ann.id, ann.infons.get("type", ""), frags,
                                                " ".join(text[s:e] for s, e in frags)))
                counts["entities"] += 1
                for ref in filter(None, (ann.infons.get("identifier") or "").split(",")):
                    db, _, db_id = ref.strip().partition(":")
                    doc.normalizations.append(Normalization(
                        f"N{len(doc.normalizations) + 1}", "Reference", ann.id, db, db_id,
                        " ".join(text[s:e] for s, e in frags)))
                _restore_infons(doc, ann.id, ann.infons, pending_attrs, False)
            for rel in passage.relations:
                doc.relations.append(Relation(rel.id, rel.infons.get("type", ""),
                                              tuple((n.role, n.refid) for n in rel.nodes)))
                counts["relations"] += 1
                _restore_infons(doc, rel.id, rel.infons, pending_attrs, True)
        unknown: Counter[str] = Counter()
        for target, name, value, is_relation in pending_attrs:
            if is_relation and value == "true" and name in relation_modality(doc, target, schema, unknown):
                continue  # carried by a restored note
            doc.attributes.append(Attribute(f"A{len(doc.attributes) + 1}", name, target,
                                            None if value == "true" else value))
            counts["attributes"] += 1
        counts["notes"] += len(doc.notes)
        counts["documents"] += 1
        out.append(doc)
    return out


def fragment_order(fragments: Sequence[Span]) -> str:
    """Give brat's order of an entity's fragments as the BioC infon ``fragment_order``.

    Args:
        fragments: The fragments in brat's order (non-empty, half-open offsets).

    Returns:
        For each fragment in that order, the 1-based position of its location among the locations sorted
            ascending, joined by ``,``: ``2,1`` for ``10 18;0 9``.
    """
    ascending = sorted(range(len(fragments)), key=lambda i: fragments[i])
    position = {i: rank for rank, i in enumerate(ascending, 1)}
    return ",".join(str(position[i]) for i in range(len(fragments)))


def _in_brat_order(frags: tuple[Span, ...], order: str, where: str) -> tuple[Span, ...]:
    """The locations ``frags`` in the order a ``fragment_order`` infon gives."""
    parts = order.split(",")
    if not all(p.strip().isdigit() for p in parts) or sorted(int(p) for p in parts) != list(range(1, len(frags) + 1)):
        raise ValueError(f"{where}: infon {BIOC_ORDER_INFON} {order!r} is not an order of its {len(frags)} "
                         "locations (their 1-based positions, each once, joined by ',')")
    return tuple(frags[int(p) - 1] for p in parts)


def _restore_infons(
    doc: BratDocument, target: str, infons: Mapping[str, str], pending: list[tuple[str, str, str, bool]],
    is_relation: bool,
) -> None:
    notes: dict[str, int] = {}
    for key in infons:
        suffix = key[len(BIOC_NOTE_INFON) + 1:]
        if key == BIOC_NOTE_INFON:
            notes[key] = 1
        elif key.startswith(BIOC_NOTE_INFON + "_") and suffix.isdigit():
            notes[key] = int(suffix)
    for key in sorted(notes, key=notes.__getitem__):
        doc.notes.append(Note(f"#{len(doc.notes) + 1}", "AnnotatorNotes", target, infons[key]))
    note_keys = set(notes)
    for key, value in infons.items():
        if key not in BIOC_RESERVED_INFONS and key not in note_keys:
            pending.append((target, key, value, is_relation))


# --- CoNLL -------------------------------------------------------------------------

def tokenize(text: str) -> list[Span]:
    r"""Tokenize a text for CoNLL.

    Args:
        text: The document text.

    Returns:
        The token spans, half-open character offsets into ``text``: ``\w+`` runs and single non-space,
            non-word characters, in order.
    """
    return [m.span() for m in TOKEN_RE.finditer(text)]


def conll_layers(
    tokens: Sequence[Span], entities: Sequence[tuple[tuple[Span, ...], str]], *, all_layers: bool,
    counts: Counter[str] | None = None,
) -> list[list[str]]:
    """Compute the BIO label columns (one per layer) of a document's tokens.

    Each pass takes, in priority order, every entity sharing no token with one already taken in the
    pass; each fragment opens with ``B-``, adjacent fragments too (only fragments sharing a token are one
    span, counted).

    Args:
        tokens: The tokens ([`tokenize`][pipeline.brat.export.tokenize]), half-open offsets into the text.
        entities: ``(fragments, type)`` in priority order ([`to_conll`][pipeline.brat.export.to_conll]
            passes contiguous before discontiguous, then longest first), fragments half-open offsets into
            the same text.
        all_layers: Repeat the pass on the leftovers until every entity is placed (``layers``); else
            one pass (``outermost``).
        counts: Updated in place when given: ``conll_misaligned`` (an entity boundary inside a token),
            ``conll_not_in_first_layer``.

    Returns:
        The label columns, one label per token each; at least one column (all ``O`` when there is no
            entity).
    """
    counts = counts if counts is not None else Counter()
    placed: list[tuple[list[list[int]], str]] = []  # per entity: the token indices of each fragment
    starts = {ts for ts, _ in tokens}
    ends = {te for _, te in tokens}
    for frags, type_ in entities:
        if any(s not in starts or e not in ends for s, e in frags):
            counts["conll_misaligned"] += 1
        groups = [[i for i, (ts, te) in enumerate(tokens) if ts < e and te > s] for s, e in sorted(frags)]
        groups = [g for g in groups if g]
        # each fragment keeps its own span, even with no token between two fragments (a gap of spaces): one
        # joined span would read back as a contiguous entity that was never annotated.  Only fragments that
        # share a token (a boundary inside a token) cannot be told apart in BIO: they are joined and counted.
        merged: list[list[int]] = []
        for g in groups:
            if merged and g[0] <= merged[-1][-1]:
                merged[-1].extend(k for k in g if k > merged[-1][-1])
                counts["conll_fragments_joined"] += 1
            else:
                merged.append(list(g))
        groups = merged
        if groups:
            placed.append((groups, type_))
    remaining = list(range(len(placed)))  # entities come in priority order
    layers: list[list[str]] = []
    while remaining:
        labels = ["O"] * len(tokens)
        used: set[int] = set()
        left = []
        for i in remaining:
            groups, type_ = placed[i]
            toks = {k for g in groups for k in g}
            if used & toks:
                left.append(i)
                continue
            used.update(toks)
            # each fragment opens with B-: a BIO reader never meets I- after O (a discontiguous entity
            # reads back as its fragments; the link between them is the declared loss of CoNLL)
            for g in groups:
                labels[g[0]] = f"B-{type_}"
                for k in g[1:]:
                    labels[k] = f"I-{type_}"
        layers.append(labels)
        if not layers[1:]:
            counts["conll_not_in_first_layer"] += len(left)
        remaining = left
        if not all_layers:
            break
    return layers or [["O"] * len(tokens)]


def to_conll(docs: Iterable[BratDocument], *, scheme: str = "outermost", counts: Counter[str] | None = None) -> str:
    """Write brat documents as CoNLL text (see the module docstring).

    Args:
        docs: The brat documents, offsets half-open into each ``.txt``.
        scheme: ``outermost`` (one label column) or ``layers`` (one column per pass).
        counts: Updated in place when given: ``documents``, ``entities``, ``conll_misaligned``,
            ``conll_not_in_first_layer``.

    Returns:
        One block per document: ``# NAME``, then ``token<TAB>start<TAB>end<TAB>label...`` lines (offsets
            into the document's text), blocks separated by a blank line.
    """
    counts = counts if counts is not None else Counter()
    blocks = []
    for doc in docs:
        counts["documents"] += 1
        tokens = tokenize(doc.text)
        entities = [(f, t.type) for t in doc.textbounds if (f := _frags(t))]
        counts["entities"] += len(entities)
        # contiguous before discontiguous (a discontiguous entity would hide the contiguous ones in its
        # gap), then longest (characters covered) first, then by start and type
        entities.sort(key=lambda x: (len(x[0]) > 1, -sum(e - s for s, e in x[0]), x[0][0][0], x[1]))
        layers = conll_layers(tokens, entities, all_layers=scheme == "layers", counts=counts)
        lines = [f"# {doc.name}"]
        for i, (s, e) in enumerate(tokens):
            lines.append("\t".join([doc.text[s:e], str(s), str(e), *(layer[i] for layer in layers)]))
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def to_conll_spacy(docs: Iterable[BratDocument], counts: Counter[str] | None = None) -> str:
    """Write the ``outermost`` CoNLL labels in the layout ``spacy convert -c ner`` reads.

    Each document opens with ``-DOCSTART- -X- O O``, then ``token<TAB>label`` lines and a blank line; no
    ``# NAME`` comment lines (spaCy reads them as tokens and fails with E177) and no offset columns.
    Documents are in the order given (the names are in the release's ``sentences.tsv``).

    Args:
        docs: The brat documents.
        counts: Updated in place when given: ``documents``, ``conll_misaligned``,
            ``conll_not_in_first_layer``.

    Returns:
        The CoNLL text.
    """
    counts = counts if counts is not None else Counter()
    blocks = []
    for doc in docs:
        tokens = tokenize(doc.text)
        entities = [(f, t.type) for t in doc.textbounds if (f := _frags(t))]
        entities.sort(key=lambda x: (len(x[0]) > 1, -sum(e - s for s, e in x[0]), x[0][0][0], x[1]))
        labels = conll_layers(tokens, entities, all_layers=False, counts=counts)[0]
        lines = ["-DOCSTART- -X- O O", ""] + [f"{doc.text[s:e]}\t{label}" for (s, e), label in zip(tokens, labels,
                                                                                                   strict=True)]
        counts["documents"] += 1
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


# --- splits ---------------------------------------------------------------------------

def split_pmids(pmids: Iterable[str], ratios: Sequence[float] = (60, 20, 20), seed: int = 13) -> dict[str, list[str]]:
    """Split PMIDs into train, dev and test, seeded.

    The distinct PMIDs are sorted, shuffled with ``random.Random(seed)`` and cut by the ratios: train
    and dev sizes are rounded, test takes the rest.

    Args:
        pmids: The PMIDs (duplicates allowed).
        ratios: The train, dev and test ratios (any positive scale).
        seed: The shuffle's seed.

    Returns:
        ``{"train", "dev", "test"}`` -> PMIDs, each list in numeric order.
    """
    unique = sorted(set(pmids), key=pmid_sort_key)
    rng = random.Random(seed)
    shuffled = list(unique)
    rng.shuffle(shuffled)
    total = sum(ratios)
    n_train = round(len(shuffled) * ratios[0] / total)
    n_dev = min(round(len(shuffled) * ratios[1] / total), len(shuffled) - n_train)
    parts = {"train": shuffled[:n_train], "dev": shuffled[n_train:n_train + n_dev], "test": shuffled[n_train + n_dev:]}
    return {k: sorted(v, key=pmid_sort_key) for k, v in parts.items()}


def write_splits(
    docs: Sequence[BratDocument], out_dir: str | Path, *, ratios: Sequence[float] = (60, 20, 20), seed: int = 13,
    counts: Counter[str] | None = None,
) -> dict[str, Any]:
    """Split documents by PMID and write each split.

    Writes under ``out_dir`` (in place, not atomically): ``pmids_train.txt``, ``pmids_dev.txt``,
    ``pmids_test.txt`` (one PMID per line, numeric order), the brat documents of each split under
    ``train/``, ``dev/``, ``test/``, and ``splits.json`` (the summary).

    Args:
        docs: The brat documents; all sentences of one PMID go to the same split.
        out_dir: The output directory, created if missing.
        ratios: The train, dev and test ratios.
        seed: The shuffle's seed.
        counts: Updated in place when given: ``documents``.

    Returns:
        The summary ``{"seed", "ratios", "splits": {name: {"pmids", "documents", "entities",
            "relations"}}}``.
    """
    counts = counts if counts is not None else Counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parts = split_pmids((d.pmid for d in docs), ratios, seed)
    where = {pmid: name for name, pmids in parts.items() for pmid in pmids}
    summary: dict[str, Any] = {"seed": seed, "ratios": list(ratios), "splits": {}}
    for name, pmids in parts.items():
        (out / f"pmids_{name}.txt").write_text("".join(p + "\n" for p in pmids), encoding="utf-8")
        members = [d for d in docs if where[d.pmid] == name]
        for d in members:
            write_document(out / name, d)
        counts["documents"] += len(members)
        summary["splits"][name] = {
            "pmids": len(pmids),
            "documents": len(members),
            "entities": sum(len(d.textbounds) for d in members),
            "relations": sum(len(d.relations) for d in members),
        }
    (out / "splits.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return summary


def export(
    docs: Sequence[BratDocument],
    fmt: str,
    out: str | Path,
    schema: Schema,
    *,
    config: ExportConfig | None = None,
    ratios: Sequence[float] | None = None,
    seed: int | None = None,
    counts: Counter[str] | None = None,
) -> dict[str, Any]:
    """Export brat documents in one format (see the module docstring).

    Relation types are first rewritten by the configuration's ``relation_map``
    ([`map_relations`][pipeline.brat.export.map_relations]).  The output file is written in place (not
    atomically), UTF-8 with Unix (LF) line ends; ``pubtator`` at abstract level also writes the sidecar
    ``OUT.sentences.tsv``.

    Args:
        docs: The brat documents, offsets half-open into each ``.txt``.
        fmt: One of ``pubtator``, ``bioc-xml``, ``bioc-json``, ``conll``, ``splits``.
        out: The output file, or the output directory for ``splits``; parent directories are created.
        schema: The corpus schema.
        config: The export settings; ``config/export.yaml`` when None.
        ratios: Overrides the configuration's split ratios.
        seed: Overrides the configuration's split seed.
        counts: Updated in place when given: the counts of the format's writer (see the module docstring).

    Returns:
        A summary ``{"format", "out", "relation_map", "counts", ...}``: with ``pubtator``, the level and
            (abstract level) the sidecar's path; with ``splits``, the split summary.

    Raises:
        ValueError: If ``fmt`` is not a known format.
        ExportConfigError: If ``config`` is None and the default settings file is invalid.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    config = config if config is not None else load_export_config()
    counts = counts if counts is not None else Counter()
    docs = map_relations(docs, config.relation_map, counts)
    path = Path(out)
    # the relation_map is this training view's own folding: declared in the summary it returns
    summary: dict[str, Any] = {"format": fmt, "out": str(path), "relation_map": dict(config.relation_map)}
    if fmt == "splits":
        summary.update(write_splits(docs, path, ratios=ratios or config.split_ratios,
                                    seed=config.split_seed if seed is None else seed, counts=counts))
    else:
        if fmt == "pubtator":
            payload, spans = to_pubtator(docs, schema, level=config.pubtator_level,
                                         discontiguous=config.pubtator_discontiguous, counts=counts)
            summary["pubtator_level"] = config.pubtator_level
            if config.pubtator_level == "abstract":
                path.parent.mkdir(parents=True, exist_ok=True)
                summary["sentences"] = str(pubtator.write_sidecar(spans, pubtator.sidecar_path(path)))
        elif fmt == "bioc-xml":
            payload = biocxml.dumps(to_bioc(docs, schema, counts))
        elif fmt == "bioc-json":
            payload = biocjson.dumps(to_bioc(docs, schema, counts), indent=2)
        else:
            payload = to_conll(docs, scheme=config.conll_scheme, counts=counts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(payload, encoding="utf-8", newline="\n")
    summary["counts"] = dict(sorted(counts.items()))
    return summary
