"""Relation pre-annotation: typed, directed relations between the mapped entities of each sentence.

Input: documents whose annotations carry schema types (after type mapping), with
sentences and, for the dependency rules, the sentence parses extension kept
(``Document.parses``, [`sentence_parse`][pipeline.nlp.extend.sentence_parse]).  Output: the
same documents with ``relations`` (indices into ``annotations``) and without
``parses`` (consumed here, never written further).  Offsets are
document-relative and half-open throughout; nothing is parsed here.

Proposals (``Relation.rule`` is ``<rule>:<type proposed before typing>``; the words come from
``config/relations.yaml``, [`load_rules`][pipeline.nlp.relations.rules.load_rules]):

``abbreviation``
    two entities of the same type written "A ( B )": ``isEquivalentTo`` with the
    short form B as Arg1 and the long form A as Arg2 (the PGxCorpus convention).
    Also "A gene ( B )", and each later member of a list of synonyms in the
    parentheses, "A ( B ; C )".
``path``
    a trigger word on the dependency path between the two entities' head
    tokens (conjuncts collapsed onto the first conjunct, so "levels of X, Y and
    Z" relates all three), at most ``max_path`` arcs: the trigger's type.
``modifier``
    a trigger modifying an entity's head ("**elevated** levels of X", "X-**induced**
    Y") when the path between the two entities is within ``max_path`` and holds
    no trigger itself.
``scorer``
    when the rule file names a learned scorer
    ([`RelationScorer`][pipeline.nlp.relations.rules.RelationScorer], trained by
    [`train_scorer`][pipeline.nlp.relations.training.train_scorer] / ``pgx-corpus
    train-relations``), it replaces ``path`` and ``modifier``: a logistic
    regression over the ordered pair's features
    (the pair features: entity types, the
    dependency path's labels, words and triggers, the words between and around,
    coordination, nesting, nearest candidates) gives the probability that
    annotators relate the pair in that direction, a context model rescores it
    from the scores of both arguments' other pairs in the sentence.  The pair is
    proposed in its more probable direction by the scorer's decision: with its
    most probable type when the proposal is expected to save the annotator an
    action (``actions``, the default of ``train-relations``), or when its
    probability reaches the scorer's threshold, with the most specific type the
    type model is sure enough of (``thresholds``).

``path`` and ``modifier`` keys propose only when listed in the rule file's
``selection`` (rule keys chosen on training data by ``bench/relations.py``).

The direction comes from the types (``argument_order``: the acting factor is
Arg1) and, between types of the same rank, from the syntax (the subject side,
else the entity written first).  The type is then checked against the argument
constraints (the schema's, narrowed by ``argument_types``): a type whose
constraints the pair does not meet is replaced by its nearest ancestor that
admits it, or the pair is dropped.  Modality: a negation cue (``neg``
dependents, "no", "lack", ...) or a hedge ("may", "whether", "is suggested",
"we investigated") on the path, among the trigger's dependents or the words
governing it.

PubTator3 relations (document-level, undirected concept pairs,
``Document.concept_relations``) become proposals between the mentions of both
concepts in one sentence (rule ``pubtator:<type>``), typed through
``source_types`` and directed by the argument constraints; a relation with no
sentence holding mentions of both concepts is counted and logged with the PMID.

Count keys: ``documents``, ``sentences``, ``sentences_without_parse``,
``relations``, ``relations_<rule>`` (per rule family), ``relations_<type>``,
``relations_negated``, ``relations_hypothetical``, ``pairs_considered``,
``dropped_argument_types`` (no type admits the pair), ``concept_relations``,
``concept_relations_unmapped_type``, ``concept_relations_no_mentions``,
``concept_relations_not_in_one_sentence``, ``entities_unaligned``.
"""
