"""The syntactic search of composite extension: from a key entity to the ontology terms around it.

[`pipeline.nlp.extend`][pipeline.nlp.extend] aligns each key entity of a sentence to its tokens and asks this
module for the composites it makes: up the key's head chain (at most
[`MAX_HOPS`][pipeline.nlp.extend_search.MAX_HOPS] hops), through a linker, down to the key's own dependents,
across coordinated modifiers, or with a term right after it ([`pipeline.nlp.extend`][pipeline.nlp.extend] lists
the rules). A composite's fragments stop at what never belongs to it (coordination, clause boundaries,
punctuation); one spanning more than [`MAX_SPAN_TOKENS`][pipeline.nlp.extend_search.MAX_SPAN_TOKENS] tokens
outside its key entity is dropped. Pure functions of a parsed sentence (a spaCy ``Doc``) and the ontology.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spacy.tokens import Doc, Token

from pipeline.documents import Annotation, Span
from pipeline.nlp.ontology import Ontology, OntologyClass, normalise

MAX_HOPS = 3
"""Hops up the head chain through noun modifiers when looking for a term."""
MAX_SPAN_TOKENS = 12
"""A composite spanning more tokens than this (first to last) outside its key entity is a parse accident."""
#: Dependency labels of a noun-modifier chain the search may climb through.
_CHAIN_DEPS = frozenset({"compound", "nmod", "amod", "npadvmod", "nummod", "dep"})
_CHAIN_POS = frozenset({"NOUN", "PROPN", "ADJ", "NUM", "X", "SYM", "VERB"})
#: Dependencies through which a composite may nest into a larger one.
_NESTING_DEPS = frozenset({"compound", "nmod", "npadvmod"})
#: Dependents that never belong to a composite spanning over them.
_BREAK_DEPS = frozenset({"conj", "cc", "preconj", "appos", "parataxis", "relcl", "advcl", "ccomp", "mark"})
_BREAK_PUNCT = frozenset({",", ";", ":", ".", "!", "?"})
#: Dependencies by which a key may hang on a linker ("warfarin-induced").
_LINKER_KEY_DEPS = frozenset({"npadvmod", "compound", "nmod", "amod", "advmod", "dep", "nsubj", "dobj", "nummod"})


@dataclass(frozen=True)
class _Key:
    annotation: Annotation
    type: str  # canonical key-entity type
    tokens: tuple[int, ...]
    head: int
    clip: Span | None  # the key's own sentence-relative bounds when sub-token expanded


@dataclass(frozen=True)
class _Occurrence:
    start: int
    end: int  # token range, half-open
    anchor: int
    words: tuple[str, ...] | None  # the term, or None for a key entity acting as term
    entity_type: str | None = None


@dataclass(frozen=True)
class _Composite:
    cls: OntologyClass
    rule: str
    key: _Key
    occurrence: _Occurrence
    fragments: tuple[Span, ...]  # sentence-relative


def _linker_forms(token: Token) -> tuple[str, ...]:
    """Lemma and surface form of a possible linker ("-mutated": "mutate", "mutated")."""
    text = normalise(token.text)
    lemma = normalise(token.lemma_) if token.lemma_ else text
    return (lemma, text) if lemma != text else (lemma,)


def _pick(
    ontology: Ontology, occ: _Occurrence, key: _Key, rel: str, linker: Sequence[str] | None = None
) -> OntologyClass | None:
    """The class a term occurrence forms with ``key`` through ``rel`` (and ``linker``), if any."""
    for cls in _candidates(ontology, occ):
        if key.type not in cls.modified_by:
            continue
        if linker is not None:
            if any(form in cls.linkers for form in linker):
                return cls
        elif rel in cls.relations:
            return cls
    return None


def _occurrences(
    i: int, key: _Key, occ_at: dict[int, _Occurrence], entity_at: dict[int, list[_Occurrence]]
) -> list[_Occurrence]:
    """Term occurrences (and other key entities) at token ``i``, never overlapping the key itself."""
    out = []
    occ = occ_at.get(i)
    if occ is not None and not any(occ.start <= t < occ.end for t in key.tokens):
        out.append(occ)
    for eocc in entity_at.get(i, ()):
        if not any(eocc.start <= t < eocc.end for t in key.tokens):
            out.append(eocc)
    return out


def _search(
    sdoc: Doc,
    key: _Key,
    ontology: Ontology,
    occ_at: dict[int, _Occurrence],
    entity_at: dict[int, list[_Occurrence]],
    counts: Counter[str],
    prefix_at: dict[int, _Occurrence] | None = None,
) -> list[_Composite]:
    found: list[_Composite] = []
    keyset = set(key.tokens)
    # Every key token whose head lies outside the key is a way out ("A2/A2": both A2 may attach);
    # the syntactic head first, then the others right to left (English noun phrases are right-headed).
    exits = [key.head] + [
        i for i in reversed(key.tokens) if i != key.head and sdoc[i].head.i != i and sdoc[i].head.i not in keyset
    ]
    _sibling(sdoc, key, ontology, occ_at, counts, found)
    if prefix_at and not found:
        _sibling(sdoc, key, ontology, prefix_at, counts, found)
    for start in exits:
        before = len(found)
        _climb(sdoc, key, start, ontology, occ_at, entity_at, counts, found)
        if len(found) > before:
            break
    if not found:
        _shared_head(sdoc, key, ontology, occ_at, entity_at, counts, found)

    # 2. Terms depending on the key ("mutant p53").
    head_tok = sdoc[key.head]
    for child in head_tok.children:
        if child.i in keyset:
            continue
        for occ in _occurrences(child.i, key, occ_at, entity_at):
            if occ.anchor != child.i:
                continue
            cls = next(
                (c for c in _candidates(ontology, occ) if key.type in c.modified_by and child.dep_ in c.governs),
                None,
            )
            if cls is not None:
                _emit(sdoc, key, cls, f"governs:{child.dep_}", occ, set(), set(), counts, found)
    return found


def _climb(
    sdoc: Doc,
    key: _Key,
    start: int,
    ontology: Ontology,
    occ_at: dict[int, _Occurrence],
    entity_at: dict[int, list[_Occurrence]],
    counts: Counter[str],
    found: list[_Composite],
) -> None:
    """Search up the head chain from key token ``start`` (through prepositions and linkers)."""
    keyset = set(key.tokens)
    # Coordination: a later conjunct takes the first conjunct's attachment.
    base = sdoc[start]
    blocked: set[int] = set()
    while base.dep_ == "conj" and base.head.i != base.i and base.head.i not in keyset:
        base = base.head
        blocked.add(base.i)
    coord = "+conj" if blocked else ""

    def emit(cls: OntologyClass, rule: str, occ: _Occurrence, path: Iterable[int]) -> None:
        _emit(sdoc, key, cls, rule + coord, occ, set(path), blocked, counts, found)

    cur = base
    path: list[int] = []
    for _ in range(MAX_HOPS):
        head = cur.head
        if head.i == cur.i:
            break
        hop_path: list[int] = []
        if cur.dep_ == "pobj" and head.dep_ in ("prep", "agent") and head.head.i != head.i:
            rel = f"prep:{normalise(head.lemma_ or head.text)}"
            hop_path = [head.i]
            target = head.head
        else:
            rel = cur.dep_
            target = head
        hit = False
        for occ in _occurrences(target.i, key, occ_at, entity_at):
            cls = _pick(ontology, occ, key, rel)
            if cls is not None:
                emit(cls, rel, occ, [*path, *hop_path])
                hit = True
        if rel in _LINKER_KEY_DEPS or rel == "prep:by":
            # A linker may also be a term itself: "EGFR-mutated" (Mutation) + "NSCLC" (a disease subtype).
            forms = _linker_forms(target)
            above = target.head
            if above.i != target.i:
                # The term is the linker's head, or a modifier of that head standing between them
                # ("EGFR-mutated NSCLC patients": linker and NSCLC both modify "patients").
                spots = [above.i] + [
                    t.i for t in above.lefts
                    if target.i < t.i < above.i and t.dep_ in ("compound", "nmod", "amod")
                ]
                for spot in spots:
                    for occ in _occurrences(spot, key, occ_at, entity_at):
                        cls = _pick(ontology, occ, key, rel, linker=forms)
                        if cls is not None:
                            emit(cls, f"linker:{forms[0]}", occ, [*path, *hop_path, target.i])
                            hit = True
        if not hit:
            # A linker hanging on the key itself: "HER2-positive breast cancer" (key -poss-> cancer,
            # "-positive" a dependent of the key).
            for child in cur.children:
                if child.i in keyset or child.i > target.i:
                    continue
                forms = _linker_forms(child)
                for occ in _occurrences(target.i, key, occ_at, entity_at):
                    cls = _pick(ontology, occ, key, rel, linker=forms)
                    if cls is not None:
                        emit(cls, f"linker:{forms[0]}", occ, [*path, *hop_path, child.i])
                        hit = True
        # Past a prepositional hop or a clause the vicinity ends; after a hit the chain may go on
        # through noun modifiers to a larger composite ("KIT exon 11" -> "KIT exon 11 mutation").
        if hop_path or cur.dep_ not in _CHAIN_DEPS or target.pos_ not in _CHAIN_POS:
            break
        if hit and (target.dep_ not in _NESTING_DEPS or target.head.i == target.i):
            break
        if target.i in blocked or target.i in keyset:
            break
        path.append(target.i)
        cur = target


def _sibling(
    sdoc: Doc,
    key: _Key,
    ontology: Ontology,
    occ_at: dict[int, _Occurrence],
    counts: Counter[str],
    found: list[_Composite],
) -> None:
    """A term right after the key, both modifying the same noun (flat "COX-2 mRNA suppression") or one before it."""
    head = sdoc[key.head]
    nxt = key.tokens[-1] + 1
    occ = occ_at.get(nxt)
    if occ is None or occ.start != nxt or occ.words is None or head.head.i == head.i:
        return
    anchor = sdoc[occ.anchor]
    # The term modifies the key's head noun, or a noun modifier of it standing before that head ("MGMT
    # promotor methylation status": "promotor" modifies "methylation", which modifies "status").
    between = anchor.head
    if anchor.i == head.head.i or anchor.dep_ not in ("compound", "amod", "nmod"):
        return
    if anchor.head.i != head.head.i and not (
            between.head.i == head.head.i and anchor.i < between.i < head.head.i
            and between.dep_ in ("compound", "nmod")):
        return
    cls = _pick(ontology, occ, key, head.dep_)
    if cls is not None:
        _emit(sdoc, key, cls, f"{head.dep_}+sibling", occ, set(), set(), counts, found)


#: Words a noun compound may hold between a gene and its variation term ("ADIPOQ gene polymorphism").
_ADJACENT_FILLERS = frozenset({"gene", "genes"})


def _adjacent(
    sdoc: Doc, key: _Key, ontology: Ontology, occ_at: dict[int, _Occurrence], counts: Counter[str]
) -> list[_Composite]:
    """Parse-robust fallback for a key the search found nothing for: a noun term right after it.

    "anaplastic lymphoma kinase translocation", "CYP3A5 genetic polymorphism",
    "adiponectin (ADIPOQ) gene polymorphism": in a noun compound the key
    modifies the term whatever the parser made of it, so a class taking the
    key as a ``compound`` modifier forms the composite even when the
    dependency path is broken (rule ``compound+adjacent``).  Between key and
    term may stand the key's parenthesised abbreviation and the word "gene".
    """
    nxt = key.tokens[-1] + 1
    path: set[int] = set()
    if nxt < len(sdoc) and sdoc[nxt].text == "(":
        close = next((i for i in range(nxt + 1, min(nxt + 6, len(sdoc))) if sdoc[i].text == ")"), None)
        if close is None or close == nxt + 1:
            return []
        path.update(range(nxt, close + 1))
        nxt = close + 1
    occ = occ_at.get(nxt)
    if (occ is None or occ.start != nxt) and nxt < len(sdoc) and sdoc[nxt].lower_ in _ADJACENT_FILLERS:
        path.add(nxt)
        nxt += 1
        occ = occ_at.get(nxt)
    if occ is None or occ.start != nxt or occ.words is None or sdoc[occ.anchor].pos_ not in ("NOUN", "PROPN"):
        return []
    last = sdoc[occ.end - 1]
    if not last.whitespace_ and occ.end < len(sdoc) and sdoc[occ.end].text.startswith("-"):
        return []  # the term is the first half of a hyphenated word ("dose-dependently")
    cls = _pick(ontology, occ, key, "compound")
    out: list[_Composite] = []
    if cls is not None:
        _emit(sdoc, key, cls, "compound+adjacent", occ, path, set(), counts, out)
        counts["composites_adjacent"] += len(out)
    return out


def _shared_head(
    sdoc: Doc,
    key: _Key,
    ontology: Ontology,
    occ_at: dict[int, _Occurrence],
    entity_at: dict[int, list[_Occurrence]],
    counts: Counter[str],
    found: list[_Composite],
) -> None:
    """Coordinated modifiers parsed as conjuncts of their shared head noun.

    In "CYP2C9 and SLCO1B1 polymorphisms" parsers often make "polymorphisms" a
    conjunct of "CYP2C9"; following the conjunct chain to the right (through
    other key entities) to a term gives the composite "CYP2C9 ... polymorphisms"
    (the words in between are left out).
    """
    cur = sdoc[key.head]
    keyset = set(key.tokens)
    for _ in range(8):
        nxt = next((c for c in cur.children if c.dep_ == "conj" and c.i > cur.i), None)
        if nxt is None:
            return
        for occ in _occurrences(nxt.i, key, occ_at, entity_at):
            if occ.words is None or occ.anchor != nxt.i:
                continue
            cls = _pick(ontology, occ, key, "compound")
            if cls is not None:
                between = set(range(key.tokens[-1] + 1, occ.start)) - keyset
                _emit(sdoc, key, cls, "compound+shared", occ, set(), between, counts, found)
                return
        if nxt.i not in entity_at:
            return  # only through other key entities ("MDR1, EPHX1 and ... variants")
        cur = nxt


def _emit(
    sdoc: Doc,
    key: _Key,
    cls: OntologyClass,
    rule: str,
    occ: _Occurrence,
    path: set[int],
    blocked: set[int],
    counts: Counter[str],
    found: list[_Composite],
) -> None:
    frags = _fragments(sdoc, key, occ, path, blocked, cls)
    if frags is None:
        return
    first = sdoc.char_span(frags[0][0], frags[0][1], alignment_mode="expand")
    last = sdoc.char_span(frags[-1][0], frags[-1][1], alignment_mode="expand")
    # A long key entity ("3-hydroxy-3-methylglutaryl-coenzyme A reductase", nine tokens) is no parse
    # accident: only the composite's tokens outside its key entity count against the limit.
    if first is not None and last is not None and last.end - first.start - len(key.tokens) > MAX_SPAN_TOKENS:
        counts["composites_too_long"] += 1
        return
    found.append(_Composite(cls, rule, key, occ, frags))


def _candidates(ontology: Ontology, occ: _Occurrence) -> list[OntologyClass]:
    """Classes a term occurrence (or a key entity acting as term) may form, highest priority first."""
    if occ.words is not None:
        return ontology.classes_for_term(occ.words)
    return sorted(
        (c for c in ontology.classes.values() if occ.entity_type in c.term_entities),
        key=lambda c: (-c.priority, c.name),
    )


def _term_extras(sdoc: Doc, occ: _Occurrence, cls: OntologyClass, keyset: set[int]) -> set[int]:
    """Tokens the term brings along: qualifiers on its left ("plasma"), a number on its right ("exon 11")."""
    extra: set[int] = set()
    if occ.words is None:
        return extra
    anchor = sdoc[occ.anchor]
    for child in anchor.lefts:
        if child.i in keyset or child.dep_ not in ("compound", "amod", "nmod"):
            continue
        if normalise(child.lemma_ or child.text) in cls.qualifiers or normalise(child.text) in cls.qualifiers:
            extra.add(child.i)
    nxt = occ.end
    if (
        nxt < len(sdoc)
        and sdoc[nxt].like_num
        and sdoc[nxt].head.i in (occ.anchor, sdoc[occ.anchor].head.i)
        and nxt not in keyset
    ):
        extra.add(nxt)
    return extra


def _fragments(
    sdoc: Doc, key: _Key, occ: _Occurrence, path: set[int], blocked: set[int], cls: OntologyClass
) -> tuple[Span, ...] | None:
    """Sentence-relative fragments of a composite: key + path + term + the words that belong in between."""
    core = set(key.tokens) | set(range(occ.start, occ.end)) | path
    core |= _term_extras(sdoc, occ, cls, set(key.tokens))
    lo, hi = min(core), max(core)
    first, last = key.tokens[0], key.tokens[-1]
    if (
        first > 0
        and last + 1 < len(sdoc)
        and sdoc[first - 1].text == "("
        and sdoc[last + 1].text == ")"
        and not (first - 1 <= occ.start and occ.end <= last + 2)
    ):
        # An abbreviation in parentheses: its long form, a key entity too, carries the composite.
        return None
    included = set(core)
    for i in range(lo, hi + 1):
        if i in included or i in blocked:
            continue
        # A word in between belongs when its head chain reaches the composite
        # without crossing a coordination, a clause boundary or a comma.
        cur = sdoc[i]
        ok = False
        for _ in range(hi - lo + 2):
            if cur.i in blocked or cur.dep_ in _BREAK_DEPS or cur.text in _BREAK_PUNCT:
                break
            head = cur.head
            if head.i in core:
                ok = True
                break
            if head.i == cur.i or not lo <= head.i <= hi:
                break
            cur = head
        if ok:
            included.add(i)
    # A parenthesised group between two parts of the composite belongs to it ("angiotensinogen (AGT) M253T").
    stack: list[int] = []
    for i in range(lo, hi + 1):
        if sdoc[i].text == "(":
            stack.append(i)
        elif sdoc[i].text == ")" and stack:
            opening = stack.pop()
            if opening - 1 in included and i + 1 in included:
                included.update(range(opening, i + 1))
    # An abbreviation in parentheses right after a key that ends the composite:
    # "resistance to nucleoside reverse transcriptase inhibitors (NRTIs)".
    if hi == last and hi + 2 < len(sdoc) and sdoc[hi + 1].text == "(":
        close = next((j for j in range(hi + 2, min(hi + 6, len(sdoc))) if sdoc[j].text in "()"), None)
        if close is not None and sdoc[close].text == ")" and close > hi + 2:
            included.update(range(hi + 1, close + 1))
    runs: list[list[int]] = []
    for i in sorted(included):
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    frags: list[Span] = []
    for run in runs:
        s = sdoc[run[0]].idx
        e = sdoc[run[-1]].idx + len(sdoc[run[-1]].text)
        frags.append((s, e))
    if key.clip is not None:
        ks, ke = key.clip
        if frags[0][0] < ks and sdoc[lo].i in key.tokens:
            frags[0] = (ks, frags[0][1])
        if frags[-1][1] > ke and sdoc[hi].i in key.tokens:
            frags[-1] = (frags[-1][0], ke)
    if any(s >= e for s, e in frags):
        return None
    return tuple(frags)


__all__ = ["MAX_HOPS", "MAX_SPAN_TOKENS"]
