"""Training data and out-of-fold predictions for the learned pre-annotation.

[`brat_examples`][pipeline.nlp.learned_data.brat_examples] makes the training examples of
[`pipeline.nlp.learned`][pipeline.nlp.learned] from finished brat collections (their annotations are the gold,
the rules' annotations are recomputed as ``build`` makes them);
[`out_of_fold`][pipeline.nlp.learned_data.out_of_fold] predicts every example with a model trained on the
other PMID-grouped folds.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.documents import Annotation, Document
from pipeline.nlp.folds import kfold_groups
from pipeline.nlp.learned import Example, TrainConfig, predict, train

logger = logging.getLogger(__name__)


# --- out-of-fold evaluation -----------------------------------------------------------------


def out_of_fold(
    examples: Sequence[Example],
    k: int = 5,
    seed: int = 13,
    config: TrainConfig | None = None,
    train_size: int | None = None,
) -> dict[str, list[Annotation]]:
    """Predict every example with a model trained on the other folds (grouped by PMID).

    Args:
        examples: The examples; their names give the PMID groups.
        k: Number of folds (see [`kfold_groups`][pipeline.nlp.folds.kfold_groups]).
        seed: Seed of the folds and of the subsamples.
        config: Training settings; ``None`` for the defaults.
        train_size: Train each fold's model on a nested, seeded subsample of
            about that many training sentences (learning curves; whole PMID
            groups); ``None``: all of them.

    Returns:
        ``{name: annotations}`` for all examples, offsets relative to each example's text.

    Raises:
        ValueError: If ``k < 2`` or there are fewer PMIDs than folds.
    """
    from pipeline.nlp.folds import subsample, train_test

    by_name = {ex.name: ex for ex in examples}
    folds = kfold_groups(by_name, k=k, seed=seed)
    out: dict[str, list[Annotation]] = {}
    for i in range(k):
        train_names, test_names = train_test(folds, i)
        if train_size is not None:
            train_names = subsample(train_names, train_size, seed=seed)
        model = train([by_name[n] for n in train_names], config)
        for n in test_names:
            out[n] = predict(model, by_name[n].text, by_name[n].rules)
    return out


# --- training data from brat collections ----------------------------------------------------


def brat_examples(
    directories: Sequence[str | Path],
    *,
    keys: dict[str, list[Annotation]] | None,
    annotate: Any = None,
    ontology_path: str | Path | None = None,
    model: str | None = None,
    schema_path: str | Path | None = None,
    counts: Counter[str] | None = None,
) -> list[Example]:
    """Make training examples from finished brat collections: gold = their annotations, rules = the pipeline's.

    Each ``NAME.txt``/``NAME.ann`` is one example (one sentence, as in the
    PGxCorpus release and this project's brat output).  The rules'
    annotations are recomputed on the text exactly as ``build`` makes them:
    key entities, composite extension with the ontology and the spaCy
    ``model``, type mapping with the schema.  Gold annotations of types
    outside the schema (e.g. a discard type) are dropped and counted
    (``gold_type_not_in_schema``); parse problems of the ``.ann`` files are
    logged with file and line and counted (``parse_issues``).  A name present
    in two directories: the first wins (counted as ``duplicate_names``).
    Documents with an empty text are skipped (``skipped_without_text``).

    Args:
        directories: brat collection directories, in order of precedence.
        keys: Key entities per document name (e.g. PubTator pre-annotations),
            offsets relative to the document's text; a name absent from it
            has none.  ``None``: ``annotate`` finds them.
        annotate: With ``keys=None``: a function ``annotate(text)`` returning
            the key entities of a text (e.g. the local annotator's ``annotate``).
        ontology_path: The ontology file; ``None`` for the default.
        model: The spaCy model name or directory; ``None`` for the default.
        schema_path: The schema file; ``None`` for the default.
        counts: Counter incremented with the count keys above and those of
            extension and type mapping; ``None``: not kept.

    Returns:
        The examples, sorted by name; all offsets relative to each example's text.

    Raises:
        ValueError: If ``keys`` and ``annotate`` are both ``None`` (and there
            is at least one document).
    """
    from pipeline.brat import standoff
    from pipeline.documents import Sentence
    from pipeline.nlp import extend, ontology, spacy_models, typemap
    from pipeline.schema import load_schema

    counts = counts if counts is not None else Counter()
    schema = load_schema(schema_path) if schema_path else load_schema()
    types = set(schema.entity_types())
    gold: dict[str, tuple[str, tuple[Annotation, ...]]] = {}
    for directory in directories:
        bdocs, issues = standoff.read_directory(directory)
        for issue in issues:
            logger.warning("%s", issue)
        counts["parse_issues"] += len(issues)
        for bdoc in bdocs:
            if not bdoc.text.strip():
                counts["skipped_without_text"] += 1
                continue
            if bdoc.name in gold:
                counts["duplicate_names"] += 1
                continue
            anns = standoff.to_annotations(bdoc, source="gold")
            kept = tuple(a for a in anns if a.type in types)
            counts["gold_type_not_in_schema"] += len(anns) - len(kept)
            gold[bdoc.name] = (bdoc.text, kept)
    docs = []
    for name, (text, _g) in sorted(gold.items()):
        if keys is not None:
            found = keys.get(name, [])
        elif annotate is not None:
            found = annotate(text)
        else:
            raise ValueError("brat_examples needs keys or an annotate function for the key entities")
        docs.append(Document(pmid=name, title=text, text=text, origin="brat", sentences=(Sentence(0, len(text)),),
                             annotations=tuple(found)))
    onto = ontology.load_ontology(ontology_path) if ontology_path else ontology.load_ontology()
    nlp = spacy_models.load_parser(model) if model else spacy_models.load_parser()
    extended = extend.extend_documents(docs, onto, nlp, counts)
    mapped = typemap.map_documents(extended, schema, counts, ontology=onto)
    return [Example(d.pmid, d.text, gold[d.pmid][1], d.annotations) for d in mapped]
