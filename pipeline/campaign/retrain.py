"""``campaign retrain``: the relation scorer and the entity model, learned from a campaign's finished documents.

The training data is every finished document of the campaign once
([`finished_documents`][pipeline.campaign.models.finished_documents]), then the documents of the finished brat
collections given with ``--also`` (a name already taken is left out and counted ``also_duplicates``).  They are
staged, as brat documents, in a temporary directory outside the campaign, which the project's training
functions read ([`brat_training`][pipeline.nlp.relations.training.brat_training],
[`brat_examples`][pipeline.nlp.learned_data.brat_examples]).

**Judgement** ([`judge`][pipeline.campaign.retrain.judge]).  The relation scorers are compared on the campaign's
documents given their final entities: each document's relations are removed, the scorer's suggestions are
added ([`suggest_relations`][pipeline.nlp.relations.suggest.suggest_relations], types the schema admits) and
the result is scored against the final document with the edit model
([`pipeline.brat.edits`][pipeline.brat.edits]: relation edits) and strictly (exact arguments, direction and
type: precision, recall).  The new scorer is measured out of fold: folds by PMID over the campaign's
documents, each fold's scorer trained, with the same options, on every training document whose PMID is not in
the fold (``--also`` documents included).  The current scorer is measured only on documents it was not trained
on: a campaign scorer lists its training documents in its meta, and the documents sharing a PMID with one of
them are left out; the shipped scorer lists none, so it is measured on every campaign document (said in the
report).  The two are compared on the documents both were measured on; fewer relation edits is better, a tie
keeps the current one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.brat import standoff
from pipeline.brat.edits import Edits, base_type, sentence_edits, without_relations
from pipeline.brat.standoff import BratDocument
from pipeline.campaign.finalize import strip_markers
from pipeline.campaign.layout import DISCARD_TYPE
from pipeline.campaign.models import FinishedDocument
from pipeline.nlp.folds import group_of, kfold_groups
from pipeline.nlp.relations.rules import RelationRules, RelationScorer
from pipeline.nlp.relations.suggest import schema_allowed, suggest_relations
from pipeline.nlp.relations.training import TrainingSentence, train_scorer
from pipeline.schema import Schema

log = logging.getLogger(__name__)

#: folds of the out-of-fold judgement (fewer when the campaign has fewer PMIDs)
JUDGEMENT_FOLDS = 5


@dataclass(frozen=True)
class StagedDocument:
    """One training document as staged.

    Attributes:
        name: The brat document name.
        source: ``final``, ``phase2/<senior>`` or ``also:<directory name>``.
        txt_sha256: The sha256 of the ``.txt`` read.
        ann_sha256: The sha256 of the ``.ann`` read.
        campaign: True for a campaign document (the judgement's documents).
    """

    name: str
    source: str
    txt_sha256: str
    ann_sha256: str
    campaign: bool


def stage(finished: Sequence[FinishedDocument], also: Sequence[Path], directory: Path,
          counts: Counter[str]) -> tuple[list[StagedDocument], dict[str, BratDocument]]:
    """Write the training documents as one flat brat collection (``NAME.txt``, ``NAME.ann``).

    Args:
        finished: The campaign's finished documents.
        also: Finished brat collections, in order of precedence after the campaign.
        directory: An empty directory (outside the campaign).
        counts: Updated with ``also_documents``, ``also_duplicates``, ``also_discarded`` (a ``Discard`` mark:
            left out; ``Done`` marks are removed), ``also_parse_issues`` (each issue is
            logged with its file and line; the lines that parse are read, as ``train-relations`` does).

    Returns:
        The documents staged, sorted by name, and the documents themselves by name.

    Raises:
        FileNotFoundError: If an ``--also`` directory is not one.
        BratTextError: If one of its files is not UTF-8.
    """
    docs: dict[str, BratDocument] = {}
    staged: dict[str, StagedDocument] = {}
    for f in finished:
        docs[f.name] = f.doc
        staged[f.name] = StagedDocument(f.name, f.source, f.txt_sha256, f.ann_sha256, True)
    for collection in also:
        found, issues = standoff.read_collection(collection)
        counts["also_parse_issues"] += len(issues)
        for issue in issues:  # as train-relations: the lines that parse are read, the others named
            log.warning("%s", issue)
        for bdoc in found:
            if bdoc.name in docs:
                counts["also_duplicates"] += 1
                continue
            if any(t.type == DISCARD_TYPE for t in bdoc.textbounds):  # a discarded sentence is no annotation
                counts["also_discarded"] += 1
                continue
            ann_path = Path(bdoc.path) if bdoc.path else Path(collection) / f"{bdoc.name}.ann"
            raw = ann_path.read_bytes() if ann_path.is_file() else b""
            docs[bdoc.name] = strip_markers(bdoc)
            staged[bdoc.name] = StagedDocument(bdoc.name, f"also:{Path(collection).name}",
                                               hashlib.sha256(bdoc.text.encode("utf-8")).hexdigest(),
                                               hashlib.sha256(raw).hexdigest(), False)
            counts["also_documents"] += 1
    for name, doc in docs.items():
        (directory / f"{name}.txt").write_text(doc.text, encoding="utf-8")
        (directory / f"{name}.ann").write_text(standoff.dumps(doc), encoding="utf-8")
    return [staged[n] for n in sorted(staged)], docs


def data_digest(directory: Path, staged: Iterable[StagedDocument]) -> str:
    """Give the sha256 of the staged training data: every document's name, text and annotation as staged.

    Args:
        directory: The staged collection.
        staged: Its documents.

    Returns:
        The hex digest.
    """
    h = hashlib.sha256()
    for s in sorted(staged, key=lambda s: s.name):
        for suffix in (".txt", ".ann"):
            data = (directory / f"{s.name}{suffix}").read_bytes()
            h.update(f"{s.name}{suffix}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


@dataclass(frozen=True)
class Figures:
    """A scorer's figures on some documents given their final entities.

    Attributes:
        documents: Documents measured.
        edits: Edit-model counts (relations only matter: the entities are the final ones).
        baseline: Relation edits with no suggestion (every final relation added).
        proposed: Relations suggested.
        correct: Suggested with the final's arguments, direction and type.
        final: Final relations between counted entities.
    """

    documents: int = 0
    edits: Edits = Edits()
    baseline: int = 0
    proposed: int = 0
    correct: int = 0
    final: int = 0

    def __add__(self, other: Figures) -> Figures:
        """Sum two sets of figures."""
        return Figures(self.documents + other.documents, self.edits + other.edits, self.baseline + other.baseline,
                       self.proposed + other.proposed, self.correct + other.correct, self.final + other.final)

    def as_dict(self) -> dict[str, Any]:
        """Give the figures as a JSON-ready mapping.

        Returns:
            The counts, and precision, recall and the share of relation edits saved in percent (1 decimal;
                None where the denominator is 0).
        """
        rel = self.edits.relation_edits
        return {"documents": self.documents, "relation_edits": rel, "relation_edits_without_suggestions":
                self.baseline, "saved_pct": round(100 * (self.baseline - rel) / self.baseline, 1) if self.baseline
                else None, "proposed": self.proposed, "correct": self.correct, "final_relations": self.final,
                "precision": round(100 * self.correct / self.proposed, 1) if self.proposed else None,
                "recall": round(100 * self.correct / self.final, 1) if self.final else None}


def measure(rules: RelationRules, docs: Sequence[BratDocument], schema: Schema, nlp: Any) -> Figures:
    """Measure the scorer of ``rules`` on documents given their final entities (see the module docstring).

    Args:
        rules: The relation rules with the scorer measured.
        docs: The final documents.
        schema: The corpus schema.
        nlp: The spaCy pipeline that parses (the build's).

    Returns:
        The figures.
    """
    allowed = schema_allowed(schema)
    total = Figures()
    for final in docs:
        given = without_relations(final)
        suggested, added = suggest_relations(given, rules, schema, nlp, allowed)
        entity_ids = {t.id for t in final.textbounds if t.type in schema.entity_parent}
        gold = {(r.arg("Arg1"), r.arg("Arg2"), base_type(r.type)) for r in final.relations
                if r.arg("Arg1") in entity_ids and r.arg("Arg2") in entity_ids}
        got = {(s.relation.arg("Arg1"), s.relation.arg("Arg2"), s.relation.type) for s in added}
        total = total + Figures(1, sentence_edits(suggested, final), sentence_edits(given, final).relation_edits,
                                len(got), len(got & gold), len(gold))
    return total


def trained_on(scorer: RelationScorer | None) -> set[str] | None:
    """Give the PMIDs a campaign scorer was trained on, from its meta's ``documents``.

    Args:
        scorer: A scorer.

    Returns:
        The PMIDs (``group_of`` each document name), or None when its meta lists no document (the shipped
            scorer).
    """
    if scorer is None:
        return set()
    names = scorer.meta.get("documents")
    if not isinstance(names, list):
        return None
    return {group_of(str(d.get("name", ""))) for d in names if isinstance(d, Mapping)}


@dataclass(frozen=True)
class Judgement:
    """The comparison of the new scorer with the current one.

    Attributes:
        new: The new scorer's out-of-fold figures on every campaign document (None: fewer than 2 PMIDs).
        new_common: The same on the documents the current scorer was measured on.
        current: The current scorer's figures on the documents it was not trained on.
        current_documents_known: False when the current scorer does not list its training documents.
        better: ``new``, ``current``, or None when nothing could be compared.
        folds: The number of folds.
    """

    new: Figures | None
    new_common: Figures | None
    current: Figures | None
    current_documents_known: bool
    better: str | None
    folds: int


def judge(examples: Sequence[TrainingSentence], campaign_docs: Mapping[str, BratDocument], base: RelationRules,
          current: RelationRules, schema: Schema, nlp: Any, *, seed: int, train_options: Mapping[str, Any]
          ) -> Judgement:
    """Compare, out of fold, a scorer trained like the new one with the current scorer.

    Args:
        examples: Every training sentence (campaign and ``--also``), parsed.
        campaign_docs: The campaign's finished documents by name (the documents measured).
        base: The relation rules without scorer (what the new scorer is trained with).
        current: The relation rules with the current scorer.
        schema: The corpus schema.
        nlp: The spaCy pipeline that parses.
        seed: Seed of the folds (and of each fold's training).
        train_options: Keyword options of [`train_scorer`][pipeline.nlp.relations.training.train_scorer].

    Returns:
        The judgement.
    """
    names = sorted(campaign_docs)
    pmids = sorted({group_of(n) for n in names})
    k = min(JUDGEMENT_FOLDS, len(pmids))
    new_by_doc: dict[str, Figures] = {}
    if k >= 2:
        for fold in kfold_groups(names, k, seed):
            held = {group_of(n) for n in fold}
            train = [e for e in examples if e.group not in held]
            if not train:
                continue
            scorer, _curve = train_scorer(train, base, schema, seed=seed, **train_options)
            rules = dataclasses.replace(base, scorer=scorer)
            for n in fold:
                new_by_doc[n] = measure(rules, [campaign_docs[n]], schema, nlp)
    seen = trained_on(current.scorer)
    measurable = [n for n in names if seen is None or group_of(n) not in seen]
    current_figures = measure(current, [campaign_docs[n] for n in measurable], schema, nlp) if measurable else None
    new = sum((new_by_doc[n] for n in names if n in new_by_doc), Figures()) if new_by_doc else None
    common = [n for n in measurable if n in new_by_doc]
    new_common = sum((new_by_doc[n] for n in common), Figures()) if common else None
    better = None
    if new_common is not None and current_figures is not None and len(common) == len(measurable):
        better = "new" if new_common.edits.relation_edits < current_figures.edits.relation_edits else "current"
    return Judgement(new, new_common, current_figures, seen is not None, better, k if k >= 2 else 0)
