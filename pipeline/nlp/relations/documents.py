"""Relations of whole documents: one sentence's proposals, PubTator3 concept relations, the build's stage."""

from __future__ import annotations

import bisect
import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pipeline.documents import MODALITIES, Annotation, Document, Relation, Sentence, SentenceParse
from pipeline.nlp.relations.proposals import _abbreviation, _Proposal, _syntactic, _typed
from pipeline.nlp.relations.rules import RelationRules, load_rules_file, rule_files
from pipeline.nlp.relations.scorer import _scored_sentence
from pipeline.nlp.relations.tree import _align, _Entity, _outer, _overlap, _Tree
from pipeline.schema import Schema

log = logging.getLogger(__name__)
HYPOTHETICAL, NEGATED = MODALITIES


def relate_sentence(
    text: str, entities: Sequence[tuple[int, Annotation, str]], parse: SentenceParse | None, rules: RelationRules,
    counts: Counter[str],
) -> list[Relation]:
    """Propose relations between the entities of one sentence.

    Args:
        text: The document text (annotation and parse offsets are half-open, document-relative).
        entities: The sentence's entities as (index in the document's annotations, annotation,
            schema type).
        parse: The sentence's parse (None: only the abbreviation rule applies).
        rules: The rule resources (and scorer).
        counts: Counter the stage's count keys are added to.

    Returns:
        Relations whose ``arg1``/``arg2`` are the entities' document indices, in a deterministic
        order; every unordered pair gets at most one proposal.
    """
    tree = _Tree(parse) if parse is not None and parse.tokens else None
    ents: list[_Entity] = []
    for index, ann, type_ in entities:
        tokens, head = _align(ann, tree) if tree is not None else (frozenset(), None)
        if tree is not None and head is None:
            counts["entities_unaligned"] += 1
        ents.append(_Entity(index, ann, type_, head, tokens, ann.start, ann.end))
    ents.sort(key=lambda e: (e.annotation.sort_key(), e.index))
    # An entity nested in another ("warfarin" in "warfarin sensitivity") is rarely an argument:
    # the outer one is (PGxCorpus dev: 154 of 828 nested entities are, 1,118 of 1,350 outer ones).
    outer = _outer(ents)
    scored = _scored_sentence(text, tree, ents, outer, rules) if tree is not None and rules.scorer else {}
    proposals: list[_Proposal] = []
    considered = 0  # counted here, added once: the stage's counter notes every key it is given
    for x, a in enumerate(ents):
        for b in ents[x + 1:]:
            if a.start < b.end and b.start < a.end and _overlap(a.annotation, b.annotation):
                continue
            considered += 1
            found = _abbreviation(text, a, b, rules, ents)
            if found is None and tree is not None and rules.scorer is not None:
                found = scored.get((a.index, b.index))
            elif found is None and tree is not None and a.index in outer and b.index in outer:
                found = _syntactic(a, b, tree, rules)
            if found is None:
                continue
            key = f"{found.rule}:{found.type}"
            if key in rules.disabled or (rules.enabled is not None and key not in rules.enabled
                                         and key.startswith(("path", "modifier"))):
                continue
            found = dataclasses.replace(found, type=rules.retype.get(key, found.type), rule=key)
            typed = _typed(found, rules, counts) if not key.startswith("abbreviation") else found
            if typed is not None:
                proposals.append(typed)
    if considered:
        counts["pairs_considered"] += considered
    out = []
    for prop in proposals:
        out.append(Relation(prop.type, prop.arg1.index, prop.arg2.index, prop.modality, "rules", prop.rule,
                            prop.trigger))
    return out


def _sentence_entities(doc: Document, sent: Sentence, schema: Schema) -> list[tuple[int, Annotation, str]]:
    return [
        (i, a, a.type) for i, a in enumerate(doc.annotations)
        if a.start >= sent.start and a.end <= sent.end and a.type in schema.entity_parent
    ]


def relate_documents(
    docs: Iterable[Document], rules: RelationRules, schema: Schema, counts: Counter[str], *,
    use_rules: bool = True,
) -> Iterator[Document]:
    """Propose relations in each sentence of each document and drop the parses.

    Streams one document at a time (the per-document memo's attribution contract holds).

    Args:
        docs: Documents with schema-typed annotations, sentences and (for the rules and the
            scorer) the parses extension kept.
        rules: The rule resources (and scorer).
        schema: The schema (entity types).
        counts: Counter the stage's count keys (module docstring) are added to.
        use_rules: False: only the source's relations (PubTator3) become proposals (the
            ``--no-relations`` build does not call this at all).

    Yields:
        Each document with its relations and without parses.
    """
    for doc in docs:
        counts["documents"] += 1
        parses = {(p.start, p.end): p for p in doc.parses}
        # the schema-typed entities by start, to find each sentence's without scanning them all
        typed = sorted((a.start, i, a.end) for i, a in enumerate(doc.annotations) if a.type in schema.entity_parent)
        starts = [t[0] for t in typed]
        relations: list[Relation] = []
        sentences = doc.sentences or ((Sentence(0, len(doc.text)),) if doc.text else ())
        if sentences:
            counts["sentences"] += len(sentences)
        for sent in sentences:
            parse = parses.get((sent.start, sent.end))
            entities = [(i, doc.annotations[i], doc.annotations[i].type) for i in sorted(
                i for _s, i, end in typed[bisect.bisect_left(starts, sent.start):bisect.bisect_left(starts, sent.end)]
                if end <= sent.end)]
            if len(entities) < 2:
                continue
            if parse is None:
                counts["sentences_without_parse"] += 1
            if use_rules:
                relations.extend(relate_sentence(doc.text, entities, parse, rules, counts))
        relations.extend(concept_relations(doc, sentences, rules, schema, counts, taken=relations))
        for rel in relations:
            counts["relations"] += 1
            counts[f"relations_{re.split('[:[]', rel.rule or 'none', maxsplit=1)[0]}"] += 1
            counts[f"relations_{rel.type}"] += 1
            counts["relations_hypothetical"] += HYPOTHETICAL in rel.modality
            counts["relations_negated"] += NEGATED in rel.modality
        yield dataclasses.replace(doc, parses=()).with_relations(relations)


def concept_relations(
    doc: Document, sentences: Sequence[Sentence], rules: RelationRules, schema: Schema, counts: Counter[str],
    taken: Sequence[Relation] = (),
) -> list[Relation]:
    """Turn the document's PubTator3 relations into sentence-level proposals.

    A pair already related by ``taken`` (the rules) keeps the rules' proposal.  Relations whose
    type maps to nothing, whose concepts have no mention among the document's entities, or whose
    concepts never share a sentence are counted and logged with the PMID, never written.

    Args:
        doc: The document (``concept_relations``, schema-typed annotations with identifiers).
        sentences: Its sentences (half-open, document-relative).
        rules: The rule resources (``source_types``, argument constraints and order).
        schema: The schema (entity types).
        counts: Counter the ``concept_relations*`` keys are added to.
        taken: Relations already proposed in the document.

    Returns:
        The proposals (rule ``pubtator:<type>``), arguments as indices into ``doc.annotations``.
    """
    out: list[Relation] = []
    pairs = {frozenset((r.arg1, r.arg2)) for r in taken}
    for cr in doc.concept_relations:
        counts["concept_relations"] += 1
        if cr.type not in rules.source_types:
            counts["concept_relations_unmapped_type"] += 1
            log.warning("PMID %s: PubTator relation type %r is not in %s source_types; not written",
                        doc.pmid, cr.type, rules.path)
            continue
        type_ = rules.source_types[cr.type]
        if type_ is None:
            counts["concept_relations_dropped_type"] += 1
            continue
        mentions1 = _mentions(doc, cr.concept1, schema)
        mentions2 = _mentions(doc, cr.concept2, schema)
        if not mentions1 or not mentions2:
            counts["concept_relations_no_mentions"] += 1
            log.info("PMID %s: PubTator relation %s %s %s: no mention of %s among the document's entities; "
                     "not written", doc.pmid, cr.type, cr.concept1, cr.concept2,
                     " and ".join(c for c, m in ((cr.concept1, mentions1), (cr.concept2, mentions2)) if not m))
            continue
        written = 0
        for sent in sentences:
            in1 = [i for i in mentions1 if _within(doc.annotations[i], sent)]
            in2 = [i for i in mentions2 if _within(doc.annotations[i], sent)]
            for i in in1:
                for j in in2:
                    if i == j or frozenset((i, j)) in pairs or _overlap(doc.annotations[i], doc.annotations[j]):
                        continue
                    a, b = doc.annotations[i], doc.annotations[j]
                    first, second = (i, j), (j, i)
                    ra, rb = rules.rank.get(a.type, 99), rules.rank.get(b.type, 99)
                    order = [first, second] if ra <= rb else [second, first]
                    chosen = None
                    for x, y in order:
                        fitting = rules.fitting_type(type_, doc.annotations[x].type, doc.annotations[y].type)
                        if fitting is not None:
                            chosen = (fitting, x, y)
                            break
                    if chosen is None:
                        counts["dropped_argument_types"] += 1
                        continue
                    pairs.add(frozenset((i, j)))
                    out.append(Relation(chosen[0], chosen[1], chosen[2], (), "pubtator", f"pubtator:{cr.type}"))
                    written += 1
        if not written:
            counts["concept_relations_not_in_one_sentence"] += 1
            log.info("PMID %s: PubTator relation %s %s %s: no sentence holds mentions of both concepts; not written",
                     doc.pmid, cr.type, cr.concept1, cr.concept2)
    return out


def _within(ann: Annotation, sent: Sentence) -> bool:
    return ann.start >= sent.start and ann.end <= sent.end


def _mentions(doc: Document, concept: str, schema: Schema) -> list[int]:
    wanted = _concept_ids(concept)
    return [i for i, a in enumerate(doc.annotations)
            if a.identifier and a.type in schema.entity_parent and wanted & _concept_ids(a.identifier)]


def _concept_ids(identifier: str) -> set[str]:
    """The comparable forms of an identifier: ``MESH:D014859`` -> {``mesh:d014859``, ``d014859``}.

    PubTator3 relation ids name genes by number, chemicals and diseases by ``MESH:``, variants by
    ``RS#:``/HGVS forms, mentions carry the same.
    """
    out: set[str] = set()
    for part in re.split(r"[;,|]", identifier):
        part = part.strip().lower()
        if not part or part == "-":
            continue
        out.add(part)
        if ":" in part:
            out.add(part.split(":", 1)[1])
    return out


def relate_from_files(docs: Iterable[Document], counts: Counter[str], *, rules_path: Path,
                      schema_path: Path) -> Iterator[Document]:
    """Pre-annotate relations with the rules and the schema read from files, loaded once per process and content.

    Args:
        docs: Documents with typed entities and their sentences' parses.
        counts: Updated with the relation stage's counts.
        rules_path: The relation rule file (it names its scorer file, whose content counts too).
        schema_path: The schema file.

    Returns:
        The documents, as [`relate_documents`][pipeline.nlp.relations.documents.relate_documents] returns them.
    """
    from pipeline.process_cache import loaded
    from pipeline.schema import load_schema
    from pipeline.store import content_digest

    schema = loaded(load_schema, schema_path)
    # the scorer's content is part of the cache key too (the rule file only names it)
    scorer = tuple(content_digest(f) for f in rule_files(rules_path)[1:])
    rules = loaded(load_rules_file, rules_path, schema_path, extra=scorer)
    return relate_documents(docs, rules, schema, counts)
