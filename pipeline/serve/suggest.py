"""The "Suggest relations" button of ``campaign serve``: brat's ``tag`` action, answered in-process.

brat's client lists one button per tagger that ``getCollectionInformation`` names in ``ner_taggers``
(its Data dialog, "Automatic annotation") and posts ``tag`` with the tagger's id when it is pressed.
serve names one tagger, [`TAGGER`][pipeline.serve.suggest.TAGGER], in the listing of the person's own
writable phase-1 collection only ([`add_tagger`][pipeline.serve.suggest.RelationSuggester.add_tagger];
``tools.conf`` is not changed, so builds, FINAL and releases are as before).  The press never reaches
brat's ``tag.py`` (which posts the text to a URL):
[`press`][pipeline.serve.suggest.RelationSuggester.press] runs
[`suggest_relations`][pipeline.nlp.relations.suggest.suggest_relations] on the document's current
entities, under the document's lock, and saves like any edit: the new content is checked by the
project's parser, written beside the ``.ann`` and renamed over it
([`write_beside`][pipeline.serve.brat_adapter.write_beside]), and journaled with the scorer's version.

* **No repeats.**  A pair of entities (by offsets and type) that a suggestion was made on, in either
  direction, gets none again on that document; once one of its entities changes it is a new pair.  A
  press that adds nothing writes nothing and journals nothing.
* **Records.**  Each suggestion is recorded in ``CAMPAIGN_DIR/suggestions/<collection>/<doc>.jsonl``
  ([`pipeline.campaign.suggestions`][pipeline.campaign.suggestions]), outside every served directory.
* **The answer** is brat's edit answer (``edited`` with the new relation ids, ``annotations`` with the
  whole document as brat's ``_json_from_ann`` builds it, and an ``undo`` token), so brat's client draws
  the suggestions at once and can take the press back:
  [`undo`][pipeline.serve.suggest.RelationSuggester.undo] removes the relations and notes of that press
  that are still as they were suggested, journals the change and marks the press taken back in the
  records (its suggestions may then be made again).

The rules, the scorer the rule file names, the schema and the spaCy parser are loaded once, when serve
starts ([`load_resources`][pipeline.serve.suggest.load_resources]).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import resource
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.brat.standoff import BratDocument, BratTextError, parse_ann, read_text
from pipeline.campaign import suggestions as records
from pipeline.campaign.documents import load_conf
from pipeline.campaign.journal import Journal
from pipeline.campaign.layout import MODELS_RELATIONS_DIR
from pipeline.campaign.locks import document_lock
from pipeline.campaign.models import SHIPPED, models_dir, select_scorer
from pipeline.nlp.relations.rules import DEFAULT_RULES, RelationRules, load_rules, rule_files
from pipeline.nlp.relations.suggest import Allowed, schema_allowed, suggest_relations
from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser
from pipeline.schema import Schema, load_schema
from pipeline.serve.brat_adapter import Brat, bound_request, write_beside
from pipeline.serve.policy import TAGGER_ID, Collection

log = logging.getLogger(__name__)

TAGGER = [TAGGER_ID, "Relations", "Suggest relations", ""]
"""The tagger serve lists in ``ner_taggers``: id, name (the row's label), model (the button's label), URL
(none: the press is answered by serve itself)."""
UNDO_ACTION = TAGGER_ID
"""The ``action`` of the undo token a press answers with (the app reads it before importing this module)."""


class SuggestRefused(Exception):
    """A press or an undo that cannot be carried out; the message says why and nothing was written."""


@dataclass(frozen=True)
class Resources:
    """What a press needs, loaded once.

    Attributes:
        rules: The relation rules with the scorer the rule file names.
        schema: The corpus schema.
        nlp: The spaCy parser.
        version: The scorer's version: its file name and the first 12 hex digits of its sha256
            (the rule file's, when it names no scorer).
        seconds: How long loading took.
    """

    rules: RelationRules
    schema: Schema
    nlp: Any
    version: str
    seconds: float


@functools.lru_cache(maxsize=2)
def load_resources(rules_path: Path = DEFAULT_RULES, model: str = DEFAULT_MODEL) -> Resources:
    """Load the rules, their scorer, the schema and the spaCy parser (once per process and arguments).

    Args:
        rules_path: The relation rule file (``config/relations.yaml``, the build's default).
        model: The spaCy model (the build's default).

    Returns:
        The loaded resources.

    Raises:
        RelationRulesError: If the rule file or its scorer does not load (the file is named).
        ModelNotAvailableError: If the spaCy model is not installed.
    """
    started = time.monotonic()
    schema = load_schema()
    rules = load_rules(rules_path, schema)
    nlp = load_parser(model)
    files = rule_files(rules_path)
    versioned = Path(files[-1])
    version = f"{versioned.name}@{hashlib.sha256(versioned.read_bytes()).hexdigest()[:12]}"
    seconds = time.monotonic() - started
    log.info("relation suggestions: scorer %s and spaCy model %s loaded in %.1f s (process peak memory %.0f MB)",
             version, model, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return Resources(rules, schema, nlp, version, seconds)


def campaign_resources(campaign_dir: Path, shipped: Resources, rules_path: Path = DEFAULT_RULES) -> Resources:
    """Put the campaign's own scorer in the resources: the newest ``models/relations/NNN.json`` that loads.

    The choice is [`select_scorer`][pipeline.campaign.models.select_scorer]'s: a newer scorer that does not
    load is logged with its file and skipped, the version in use is written to
    ``models/relations/IN_USE``, and without a campaign scorer the shipped one stays.  serve never refuses
    to start because of a campaign scorer.

    Args:
        campaign_dir: The campaign directory.
        shipped: The build's resources ([`load_resources`][pipeline.serve.suggest.load_resources]).
        rules_path: The rule file the shipped resources were loaded from.

    Returns:
        The resources with the chosen scorer and its version (file name and sha256 prefix).
    """
    shipped_file = Path(rule_files(rules_path)[-1])
    # IN_USE only in a campaign that has retrained: serve writes nothing else into a campaign at start
    retrained = (models_dir(campaign_dir) / MODELS_RELATIONS_DIR).is_dir()
    choice = select_scorer(campaign_dir, shipped.schema, shipped.rules.scorer, shipped_file,
                           write_in_use=retrained)
    if choice.path is None or choice.version == SHIPPED:
        return shipped
    version = f"{choice.path.name}@{hashlib.sha256(choice.path.read_bytes()).hexdigest()[:12]}"
    log.info("relation suggestions: the campaign's scorer %s (version %s) replaces the shipped one", version,
             choice.version)
    return dataclasses.replace(shipped, rules=dataclasses.replace(shipped.rules, scorer=choice.scorer),
                               version=version)


@dataclass
class Answer:
    """A press's or an undo's answer.

    Attributes:
        json: brat's edit answer (``action``, ``edited``, ``annotations``, ``undo`` when there is one).
        message: What the person is told (plain text; the app escapes it).
        changed: Whether the ``.ann`` changed.
    """

    json: dict[str, Any]
    message: str
    changed: bool


def _relation_line(rel_id: str, type_: str, arg1: str, arg2: str) -> str:
    # the form brat's createArc writes (its tail is a tab)
    return f"{rel_id}\t{type_} Arg1:{arg1} Arg2:{arg2}\t\n"


def _note_line(note_id: str, target: str, text: str) -> str:
    return f"{note_id}\tAnnotatorNotes {target}\t{text}\n"


class RelationSuggester:
    """Answers the button's presses and their undos for one campaign (see the module docstring).

    Args:
        campaign_dir: The campaign directory.
        journal: The campaign's journal.
        brat: brat's server code (its ``_json_from_ann`` builds the answer's document).
        resources: What a press needs; None to load the build's
            ([`load_resources`][pipeline.serve.suggest.load_resources]).
    """

    def __init__(self, campaign_dir: Path, journal: Journal, brat: Brat, resources: Resources | None = None) -> None:
        self.root = Path(campaign_dir).resolve()
        self.journal = journal
        self.brat = brat
        self.resources = resources or campaign_resources(self.root, load_resources())
        self._model_lock = threading.Lock()  # one spaCy pipeline shared by waitress's threads

    @property
    def version(self) -> str:
        """The scorer's version, as journaled and recorded."""
        return self.resources.version

    @staticmethod
    def offered(collection: Collection) -> bool:
        """Tell whether the button is offered on a collection: the person's own writable phase-1 one.

        Args:
            collection: A collection the person reaches.

        Returns:
            True for a writable ``phase1/<id>`` collection.
        """
        return collection.writable and collection.name.startswith("phase1/")

    def add_tagger(self, listing: dict[str, Any], collection: Collection) -> None:
        """Add [`TAGGER`][pipeline.serve.suggest.TAGGER] to a collection's listing where it is offered.

        Args:
            listing: brat's ``getCollectionInformation`` answer, changed in place.
            collection: The collection listed.
        """
        if self.offered(collection):
            listing["ner_taggers"] = [*(listing.get("ner_taggers") or []), list(TAGGER)]

    # --- reading and answering -------------------------------------------------------------------

    def _read(self, document: Path) -> tuple[str, str, BratDocument]:
        ann = document.with_name(document.name + ".ann")
        try:
            text = read_text(document.with_name(document.name + ".txt"))
            content = ann.read_bytes().decode("utf-8") if ann.exists() else ""
        except (OSError, BratTextError, UnicodeDecodeError) as exc:
            raise SuggestRefused(f"{document.name} cannot be read ({exc}); nothing was changed") from exc
        doc, issues = parse_ann(document.name, text, content, ann.name)
        if issues:
            raise SuggestRefused(f"{issues[0]}; nothing was suggested")
        return text, content, doc

    def _allowed(self, collection: Collection) -> Allowed:
        conf_path = collection.path / "annotation.conf"
        if not conf_path.is_file():
            return schema_allowed(self.resources.schema)
        conf = load_conf(conf_path)
        return lambda type_, arg1, arg2: conf.relation_allowed(type_, ("Arg1", "Arg2"), (arg1, arg2))

    def _brat_reads(self, document: Path) -> None:
        """SuggestRefused unless brat's own reader accepts the document (the answer is built by it)."""
        try:
            with bound_request(read_only=True, root=self.root):
                self.brat.modules["annotation"].TextAnnotations(str(document), read_only=True)
        except Exception as exc:  # brat's reader raises its own classes for each kind of bad line
            raise SuggestRefused(f"brat cannot read {document.name} as it is ({type(exc).__name__}); "
                                 "nothing was suggested") from exc

    def _brat_answer(self, document: Path, edited: list[list[str]], undo: str | None) -> dict[str, Any]:
        m = self.brat.modules
        with bound_request(read_only=True, root=self.root):
            ann_obj = m["annotation"].TextAnnotations(str(document), read_only=True)
            answer: dict[str, Any] = {"action": "tag", "edited": edited,
                                      "annotations": m["annotator"]._json_from_ann(ann_obj)}
            if undo is not None:
                answer["undo"] = undo
            return dict(m["message"].Messager.output_json(answer))

    def _save(self, person: str, key: str, document: Path, content: str, action: str) -> str:
        ann = document.with_name(document.name + ".ann")
        text = read_text(document.with_name(document.name + ".txt"))
        _, issues = parse_ann(document.name, text, content, ann.name)
        if issues:  # what this module writes always parses; a failure here is a bug, and nothing is written
            raise SuggestRefused(f"{issues[0]}; the change was not saved and the previous version stays")
        data = content.encode("utf-8")
        write_beside(ann, data)
        return self.journal.record(person, key, data, action, scorer=self.version)

    # --- the press -------------------------------------------------------------------------------

    def press(self, person: str, collection: Collection, document: Path, key: str) -> Answer:
        """Add suggested relations to a document, under its lock; record, journal and answer them.

        Args:
            person: Who pressed.
            collection: The document's collection (offered: see
                [`offered`][pipeline.serve.suggest.RelationSuggester.offered]).
            document: The document's absolute path without extension.
            key: Its campaign-relative key (``phase1/alice/100_1``).

        Returns:
            brat's edit answer; nothing is written, journaled or recorded when nothing is suggested.

        Raises:
            SuggestRefused: If the collection is not one the button is offered on, or the document does
                not read or parse (nothing is written).
        """
        if not self.offered(collection):
            raise SuggestRefused(f"Relation suggestions are offered in your phase-1 collection only, not in "
                                 f"/{collection.name}/.")
        path = records.records_path(self.root, collection.name, document.name)
        with document_lock(self.root, document):
            _, content, doc = self._read(document)
            self._brat_reads(document)
            seen = {records.pair_key(r["arg1"], r["arg2"]) for r in records.read_records(path)}
            allowed = self._allowed(collection)
            with self._model_lock:
                _, added = suggest_relations(doc, self.resources.rules, self.resources.schema, self.resources.nlp,
                                             allowed)
            by_id = {t.id: t for t in doc.textbounds}
            fresh = []
            for s in added:
                a1, a2 = by_id[s.relation.arg("Arg1") or ""], by_id[s.relation.arg("Arg2") or ""]
                arg1, arg2 = records.argument(a1), records.argument(a2)
                if records.pair_key(arg1, arg2) not in seen:
                    fresh.append((s, a1.id, a2.id, arg1, arg2))
            if not fresh:
                return Answer(self._brat_answer(document, [], None), "No new relation to suggest here.", False)
            # the ids after the largest, as suggest_relations numbers them, without the pairs left out
            next_r = max([0, *(_number(r.id) for r in doc.relations)])
            next_note = max([0, *(_number(n.id) for n in doc.notes)])
            lines: list[str] = []
            made: list[tuple[str, str, str, str, tuple[str, ...], Any, Any, str | None]] = []
            for s, id1, id2, arg1, arg2 in fresh:
                next_r += 1
                rel_id = f"R{next_r}"
                lines.append(_relation_line(rel_id, s.relation.type, id1, id2))
                note_id = None
                if s.note is not None:
                    next_note += 1
                    note_id = f"#{next_note}"
                    lines.append(_note_line(note_id, rel_id, s.note.text))
                made.append((rel_id, s.relation.type, id1, id2, s.modality, arg1, arg2, note_id))
            new = content + ("\n" if content and not content.endswith("\n") else "") + "".join(lines)
            sha = self._save(person, key, document, new, "tag")
            press = uuid.uuid4().hex  # the same content may be written by several presses: not its sha
            records.append_records(path, [records.suggestion_line(press, sha, person, self.version, rel_id, type_,
                                                                  modality, arg1, arg2)
                                          for rel_id, type_, _, _, modality, arg1, arg2, _ in made])
            token = json.dumps({"action": UNDO_ACTION, "press": press,
                                "relations": [[r, t, a, b] for r, t, a, b, *_ in made],
                                "notes": [[n, r] for r, *_, n in made if n is not None]})
            answer = self._brat_answer(document, [[r] for r, *_ in made], token)
        log.info("relation suggestions by %s on %s: %d added (scorer %s)", person, key, len(made), self.version)
        return Answer(answer, f"{len(made)} relation{'s' if len(made) != 1 else ''} suggested.", True)

    # --- taking a press back ---------------------------------------------------------------------

    def undo(self, person: str, collection: Collection, document: Path, key: str, token: Mapping[str, Any]) -> Answer:
        """Take a press back: remove its relations and notes that are still as suggested.

        Args:
            person: Who asked.
            collection: The document's collection.
            document: The document's absolute path without extension.
            key: Its campaign-relative key.
            token: The press's undo token (``action``, ``press``, ``relations``, ``notes``).

        Returns:
            brat's edit answer.

        Raises:
            SuggestRefused: If the token names no press of this document that is not already taken back.
        """
        press = str(token.get("press", ""))
        path = records.records_path(self.root, collection.name, document.name)
        def known() -> bool:
            return any(r["press"] == press for r in records.read_records(path))

        if not known():  # refused before the lock: a forged token makes not even a lock file
            raise SuggestRefused("There is no relation suggestion of this document to undo.")
        with document_lock(self.root, document):
            if not known():
                raise SuggestRefused("There is no relation suggestion of this document to undo.")
            _, content, doc = self._read(document)
            self._brat_reads(document)
            try:
                wanted = {tuple(str(x) for x in item) for item in token.get("relations", [])}
                notes = {tuple(str(x) for x in item) for item in token.get("notes", [])}
            except TypeError as exc:
                raise SuggestRefused("The undo token is malformed; nothing was changed.") from exc
            gone = {r.id for r in doc.relations if (r.id, r.type, r.arg("Arg1"), r.arg("Arg2")) in wanted}
            gone |= {n.id for n in doc.notes if n.target in gone and (n.id, n.target) in notes}
            kept = [line for line in content.splitlines(keepends=True) if line.split("\t", 1)[0] not in gone]
            changed = bool(gone)
            if changed:
                self._save(person, key, document, "".join(kept), "undo")
            records.append_records(path, [{"undone": press}])
            answer = self._brat_answer(document, [], None)
        log.info("relation suggestions by %s on %s taken back: %d lines removed", person, key, len(gone))
        return Answer(answer, "Suggestions taken back." if changed else "The suggestions were already gone.", changed)


def _number(ident: str) -> int:
    digits = "".join(ch for ch in ident if ch.isdigit())
    with contextlib.suppress(ValueError):
        return int(digits)
    return 0


__all__ = ["TAGGER", "UNDO_ACTION", "Answer", "RelationSuggester", "Resources", "SuggestRefused",
           "load_resources"]
