"""Re-align source annotations (PubTator, BioC) to the text of a [`Document`][pipeline.documents.Document].

PubTator/BioC text is not always PubMed's text: characters are ASCII-folded
(``α`` -> ``alpha`` or ``a``, ``µ`` -> ``u``/``micro``, accents stripped,
``±`` -> ``+/-``), structured-abstract labels are inlined in one and not in
the other, whitespace differs, the title separator is a space or a newline.
An annotation whose offsets point at the same text in both is kept as is;
otherwise it is moved to where its text is in the document, or dropped and
counted -- never shifted silently.

Input: annotations whose fragments are half-open offsets into the *source*
text (``source_text``; ``None`` or ``UNKNOWN`` characters of
[`pipeline.sources.bioc_io`][pipeline.sources.bioc_io] where the source gave
offsets without text).  Output: the same
annotations with fragments as half-open offsets into the *document* text and
``text`` = the covered document text (fragments joined by one space).

Method, per annotation (each fragment of a discontiguous one separately):

1. **exact**: the document has the source's characters at the same offsets
   (and the same characters around them, so that a shifted text cannot
   match by coincidence).
2. **normalized alignment**: both texts are mapped to a normalized character
   sequence (NFKD, combining marks stripped, casefolded, whitespace and
   format characters dropped, Greek letters spelled out, a few typographic
   characters folded; then Greek letter names and "micro" reduced to one
   letter, see [`fold`][pipeline.nlp.align.fold]), keeping for every normalized unit the
   range of original characters it came from.  The two sequences are aligned
   with ``difflib.SequenceMatcher`` (tokens first, then the characters of each
   differing stretch, see [`align_folded`][pipeline.nlp.align.align_folded]); fragment
   boundaries are projected through the matching blocks and mapped back to
   original offsets.  The projection is accepted only if the projected
   document text is [`equivalent`][pipeline.nlp.align.equivalent] to the source text.
3. **local search**: the folded annotation text is searched within
   ``window`` folded characters of the expected position; the nearest hit
   (earliest on ties) whose word boundaries agree with the source's is used.
4. otherwise the annotation is dropped with a reason.

Without source text (annotation-only stand-off) the annotation's own ``text``
is checked at its offsets, then searched nearby.

Count keys: ``exact``; ``exact_unverified`` (no source text and no annotation
text: offsets trusted as given); ``realigned`` (kept, offsets or text changed);
``dropped_offset_outside_text`` (a fragment ends past the source text, or past
the document text when there is no source text); ``dropped_text_mismatch``
(the annotation's own text is not the source text at its offsets: the source
is inconsistent); ``dropped_unalignable`` (no equivalent position found in the
document text).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from difflib import SequenceMatcher

from pipeline.documents import Annotation, Span
from pipeline.sources.bioc_io import UNKNOWN

logger = logging.getLogger(__name__)

REASONS = ("offset_outside_text", "unalignable", "text_mismatch")
"""Drop reasons (count key ``dropped_<reason>``)."""

#: Typographic characters folded the way ASCII-folding sources (PubTator) fold them.
_SPECIAL = {
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'", "`": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": "''",
    "\u00d7": "x", "\u00b1": "+/-", "\u2264": "<=", "\u2265": ">=", "\u2192": "->", "\u00b7": ".",
    "\u00f8": "o", "\u00d8": "o", "\u00e6": "ae", "\u00c6": "ae", "\u0153": "oe", "\u0152": "oe",
    "\u0142": "l", "\u0141": "l", "\u0111": "d", "\u0110": "d", "\u0131": "i", "\u00df": "ss",
    "\u2248": "~", "\u223c": "~", "\u2217": "*", "\u2215": "/", "\u2044": "/",
}

_GREEK_RE = re.compile(r"GREEK (?:SMALL|CAPITAL) LETTER (?:FINAL )?([A-Z]+)$")


@functools.lru_cache(maxsize=8192)
def _greek_name(ch: str) -> str | None:
    match = _GREEK_RE.match(unicodedata.name(ch, ""))
    return match.group(1).lower() if match else None


@functools.lru_cache(maxsize=65536)
def normalize_char(ch: str) -> str:
    """Normalize one character for alignment.

    NFKD, combining marks dropped, casefolded, Greek letters spelled out
    (``α`` -> ``alpha``), typographic characters folded as ASCII-folding
    sources fold them (``±`` -> ``+/-``, dashes -> ``-``).  Cached.

    Args:
        ch: One character.

    Returns:
        Its normalized form, possibly several characters; ``""`` for whitespace,
            combining marks, format characters and the ``UNKNOWN`` placeholder.
    """
    if ch < "\x80":
        return "" if ch.isspace() or ch == UNKNOWN else ch.lower()
    if ch in _SPECIAL:
        return _SPECIAL[ch]
    out = []
    for c in unicodedata.normalize("NFKD", ch):
        if unicodedata.combining(c) or c.isspace() or unicodedata.category(c) == "Cf":
            continue
        if c in _SPECIAL:
            out.append(_SPECIAL[c])
            continue
        greek = _greek_name(c)
        out.append(greek if greek else c.casefold())
    return "".join(out)


def normalize(text: str) -> tuple[str, list[int]]:
    """Normalize a text character by character, keeping where each character came from.

    Args:
        text: Any text.

    Returns:
        ``(normalized, origin)``: the concatenated
            [`normalize_char`][pipeline.nlp.align.normalize_char] forms, and for each
            normalized character the index into ``text`` of the original
            character it came from.
    """
    parts: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        norm = normalize_char(ch)
        if norm:
            parts.append(norm)
            origin.extend([i] * len(norm))
    return "".join(parts), origin


_LOOSE_NAMES = sorted(
    {
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
        "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega",
        "micro",
    },
    key=lambda s: (-len(s), s),
)
_LOOSE_RE = re.compile("|".join(_LOOSE_NAMES))


def _loose_letter(match: re.Match[str]) -> str:
    name = match.group()
    # µ is folded to "u" (ug/ml) or spelled "micro" (microg); every other
    # letter is folded to its Latin initial (TNF-a) or spelled out (TNF-alpha).
    return "u" if name in ("mu", "micro") else name[0]


def loose(norm: str) -> str:
    """Reduce Greek letter names and "micro" in a normalized string to one letter.

    Used only to compare two strings (applied to both), so that ``TNF-α``,
    ``TNF-alpha`` and ``TNF-a``, or ``µg``, ``ug`` and ``microg``, compare equal.

    Args:
        norm: A string already [`normalize`][pipeline.nlp.align.normalize]d.

    Returns:
        The string with each letter name replaced by its initial (``mu`` and
            ``micro`` by ``u``); offsets into it no longer match ``norm``.
    """
    return _LOOSE_RE.sub(_loose_letter, norm)


@dataclasses.dataclass(frozen=True)
class Folded:
    """A text in the alignment space, with index maps back to the original text.

    The folded text is [`loose`][pipeline.nlp.align.loose] of
    [`normalize`][pipeline.nlp.align.normalize] (except that a letter name
    spanning a dropped space, as in "Behcet and", is left alone).  Unit ``k``
    of ``text`` comes from original characters ``[starts[k], ends[k])`` (a
    spelled-out Greek letter reduced to one unit spans its whole name).

    Attributes:
        text: The folded text.
        starts: Per unit of ``text``, the start of its original characters
            (an offset into the original text).
        ends: Per unit of ``text``, the end (exclusive) of its original characters.
    """

    text: str
    starts: list[int]
    ends: list[int]


def fold(text: str) -> Folded:
    """Map a text to the alignment space.

    Args:
        text: The original text (a document or source text, or a mention).

    Returns:
        The [`Folded`][pipeline.nlp.align.Folded] text with its index maps back to ``text``.
    """
    norm, origin = normalize(text)
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for match in _LOOSE_RE.finditer(norm):
        ms, me = match.span()
        if any(origin[k + 1] - origin[k] > 1 for k in range(ms, me - 1)):
            continue  # spans a dropped space ("Behcet and" -> "behc|eta|nd"): not a letter name
        out.append(norm[pos:ms])
        starts.extend(origin[pos:ms])
        ends.extend(i + 1 for i in origin[pos:ms])
        out.append(_loose_letter(match))
        starts.append(origin[ms])
        ends.append(origin[me - 1] + 1)
        pos = me
    out.append(norm[pos:])
    starts.extend(origin[pos:])
    ends.extend(i + 1 for i in origin[pos:])
    return Folded("".join(out), starts, ends)


def equivalent(a: str, b: str) -> bool:
    """Say whether two texts are the same up to normalization (see the module docstring).

    Args:
        a: A text.
        b: Another text.

    Returns:
        True when their [`normalize`][pipeline.nlp.align.normalize]d forms are equal, or
            equal after [`loose`][pipeline.nlp.align.loose]; False when either is empty once
            normalized.
    """
    na, nb = normalize(a)[0], normalize(b)[0]
    if na == nb:
        return bool(na)
    return bool(na) and bool(nb) and loose(na) == loose(nb)


def _is_word(ch: str) -> bool:
    return bool(ch) and ch.isalnum()


Opcode = tuple[str, int, int, int, int]


def _tokens(folded: Folded) -> list[tuple[int, int]]:
    """Token spans of a folded text: runs of letters/digits, every other unit alone.

    A token also ends where the original text had dropped characters
    (whitespace) between two units.
    """
    spans: list[tuple[int, int]] = []
    text = folded.text
    start = 0
    for k in range(1, len(text) + 1):
        if k == len(text) or not (
            text[k].isalnum() and text[k - 1].isalnum() and folded.starts[k] <= folded.ends[k - 1]
        ):
            spans.append((start, k))
            start = k
    return spans


def _merge(ops: list[Opcode]) -> list[Opcode]:
    """Adjacent opcodes merged: equal with equal, any run of non-equal ones into one."""
    out: list[Opcode] = []
    for tag, i1, i2, j1, j2 in ops:
        if i1 == i2 and j1 == j2:
            continue
        if out and (out[-1][0] == "equal") == (tag == "equal"):
            _, a1, _, b1, _ = out[-1]
            if tag != "equal":
                tag = "replace" if (a1 < i2 and b1 < j2) else ("delete" if b1 == j2 else "insert")
            out[-1] = (tag, a1, i2, b1, j2)
        else:
            out.append((tag, i1, i2, j1, j2))
    return out


def align_folded(src: Folded, tgt: Folded) -> list[Opcode]:
    """Align two folded texts, returning character opcodes (difflib style).

    Two levels, for speed on whole abstracts: tokens are aligned first, then
    the characters inside each differing stretch of tokens.

    Args:
        src: The folded source text.
        tgt: The folded target text.

    Returns:
        ``(tag, i1, i2, j1, j2)`` opcodes as ``SequenceMatcher.get_opcodes``
            gives them: half-open ranges of units of ``src.text`` and
            ``tgt.text`` (folded offsets, not original ones), adjacent equal
            blocks merged and each run of differing blocks merged into one.
    """
    s_tok, t_tok = _tokens(src), _tokens(tgt)
    s_words = [src.text[a:b] for a, b in s_tok]
    t_words = [tgt.text[a:b] for a, b in t_tok]
    ops: list[Opcode] = []
    words = SequenceMatcher(None, s_words, t_words, autojunk=False)
    for tag, w1, w2, v1, v2 in words.get_opcodes():
        i1 = s_tok[w1][0] if w1 < len(s_tok) else len(src.text)
        i2 = s_tok[w2 - 1][1] if w2 > w1 else i1
        j1 = t_tok[v1][0] if v1 < len(t_tok) else len(tgt.text)
        j2 = t_tok[v2 - 1][1] if v2 > v1 else j1
        if tag == "equal" or i1 == i2 or j1 == j2:
            ops.append((tag, i1, i2, j1, j2))
            continue
        # autojunk would treat every frequent letter as junk.
        chars = SequenceMatcher(None, src.text[i1:i2], tgt.text[j1:j2], autojunk=False)
        ops.extend((t, a + i1, b + i1, c + j1, d + j1) for t, a, b, c, d in chars.get_opcodes())
    return _merge(ops)


class Aligner:
    """Maps spans of a source text onto a target (document) text; see the module docstring.

    Both texts are compared in the alignment space of [`fold`][pipeline.nlp.align.fold] (normalized,
    Greek letter names and "micro" reduced to one letter).  The character
    alignment is computed lazily, once, when a span is not exact.

    Args:
        source: The source text, or ``None`` for stand-off annotations without
            text.
        target: The target text (the document text).
        window: How far [`search`][pipeline.nlp.align.Aligner.search] looks, in folded
            characters either side of the expected position.

    Attributes:
        source: The source text, or ``None``.
        target: The target text.
        window: The search window, in folded characters.
    """

    def __init__(self, source: str | None, target: str, *, window: int = 300) -> None:
        self.source = source
        self.target = target
        self.window = window
        self._tgt: Folded | None = None
        self._src: Folded | None = None
        self._opcodes: list[Opcode] | None = None
        self._starts: list[int] = []

    # -- lazily built alignment -------------------------------------------
    @property
    def tgt(self) -> Folded:
        """The folded target text (computed on first use)."""
        if self._tgt is None:
            self._tgt = fold(self.target)
        return self._tgt

    @property
    def src(self) -> Folded:
        """The folded source text (``""`` folded when there is none; computed on first use)."""
        if self._src is None:
            self._src = fold(self.source or "")
        return self._src

    def opcodes(self) -> list[Opcode]:
        """Return the alignment of the folded source with the folded target.

        Computed on first call (by [`align_folded`][pipeline.nlp.align.align_folded], or one
        ``equal`` block when the folded texts are identical) and cached.

        Returns:
            The opcodes, ranges in folded units of ``src`` and ``tgt``.
        """
        if self._opcodes is None:
            src = self.src.text
            tgt = self.tgt.text
            if src == tgt:
                self._opcodes = [("equal", 0, len(src), 0, len(tgt))]
            else:
                self._opcodes = align_folded(self.src, self.tgt)
            self._starts = [op[1] for op in self._opcodes]
        return self._opcodes

    def _blocks_at(self, i: int) -> list[Opcode]:
        ops = self.opcodes()
        k = bisect.bisect_right(self._starts, i)
        return ops[max(0, k - 3) : k + 1]

    def _map_start(self, i: int) -> int | None:
        for tag, i1, i2, j1, j2 in self._blocks_at(i):
            if not i1 <= i < i2:
                continue
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                return j1 + i - i1
            if tag == "replace" and i == i1:
                return j1
            return None
        return None

    def _map_end(self, i: int) -> int | None:
        for tag, i1, i2, j1, j2 in self._blocks_at(i - 1):
            if not i1 < i <= i2:
                continue
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                return j1 + i - i1
            if tag == "replace" and i == i2:
                return j2
            return None
        return None

    def _expected(self, i: int) -> int:
        """Best guess of the folded target position of folded source position ``i``."""
        for tag, i1, i2, j1, j2 in self._blocks_at(i):
            if tag != "insert" and i1 <= i < i2:
                return j1 + min(i - i1, j2 - j1)
        return len(self.tgt.text)

    def _to_original(self, j1: int, j2: int) -> Span | None:
        if not 0 <= j1 < j2 <= len(self.tgt.text):
            return None
        return self.tgt.starts[j1], self.tgt.ends[j2 - 1]

    # -- public ---------------------------------------------------------------
    def project(self, start: int, end: int) -> Span | None:
        """Project a source span onto the target through the alignment.

        Needs a source text.

        Args:
            start: Start of the span, an offset into the source text.
            end: End of the span (exclusive), an offset into the source text.

        Returns:
            The aligned ``(start, end)`` span of the target text (half-open
                offsets into ``target``) when its text is
                [`equivalent`][pipeline.nlp.align.equivalent] to the source's; ``None`` when the
                span falls in a differing stretch or the texts are not equivalent.
        """
        assert self.source is not None
        i1 = bisect.bisect_left(self.src.starts, start)
        i2 = bisect.bisect_left(self.src.starts, end)
        if i1 >= i2:
            return None
        j1, j2 = self._map_start(i1), self._map_end(i2)
        if j1 is None or j2 is None or j1 >= j2:
            return None
        span = self._to_original(j1, j2)
        if span is None or not equivalent(self.target[span[0] : span[1]], self.source[start:end]):
            return None
        return span

    def search(self, needle: str, expected: int, context: tuple[str, str] | None = None) -> Span | None:
        """Find the occurrence of a text nearest to an expected position of the target.

        The comparison is done on folded texts; only hits within ``window``
        folded characters of the expected position are considered, and the
        nearest wins (the earliest on ties).

        Args:
            needle: The text searched (a mention's text).
            expected: Where it is expected: an offset into the target text.
            context: The characters just before and after the mention in the
                source (``""`` at an edge): a hit must not glue onto a word
                where the source did not.  ``None``: as if both were ``""``.

        Returns:
            The hit as a half-open ``(start, end)`` span of the target text,
                or ``None`` when there is none (or ``needle`` folds to nothing).
        """
        folded = fold(needle).text
        if not folded:
            return None
        centre = bisect.bisect_left(self.tgt.starts, expected)
        return self._search_folded(folded, centre, needle, context)

    def search_from_source(self, start: int, end: int) -> Span | None:
        """Search the target for a source span's text around its expected position.

        The expected position is projected through the alignment; the search is
        [`search`][pipeline.nlp.align.Aligner.search]'s, with the source's characters around
        the span as context.  Needs a source text.

        Args:
            start: Start of the span, an offset into the source text.
            end: End of the span (exclusive), an offset into the source text.

        Returns:
            The hit as a half-open ``(start, end)`` span of the target text, or ``None``.
        """
        assert self.source is not None
        centre = self._expected(bisect.bisect_left(self.src.starts, start))
        before = self.source[start - 1] if start > 0 else ""
        after = self.source[end] if end < len(self.source) else ""
        needle = self.source[start:end]
        folded = fold(needle).text
        if not folded:
            return None
        return self._search_folded(folded, centre, needle, (before, after))

    def _search_folded(self, folded: str, centre: int, needle: str, context: tuple[str, str] | None) -> Span | None:
        text = self.tgt.text
        lo = max(0, centre - self.window)
        hi = min(len(text), centre + self.window + len(folded))
        best: tuple[int, int] | None = None
        pos = text.find(folded, lo, hi)
        while pos != -1:
            span = self._to_original(pos, pos + len(folded))
            if span is not None and self._boundaries_ok(span, needle, context):
                distance = abs(pos - centre)
                if best is None or distance < best[0]:
                    best = (distance, pos)
            pos = text.find(folded, pos + 1, hi)
        if best is None:
            return None
        return self._to_original(best[1], best[1] + len(folded))

    def _boundaries_ok(self, span: Span, needle: str, context: tuple[str, str] | None) -> bool:
        start, end = span
        before = self.target[start - 1] if start > 0 else ""
        after = self.target[end] if end < len(self.target) else ""
        src_before, src_after = context if context is not None else ("", "")
        stripped = needle.strip()
        if not stripped:
            return False
        # A hit glued to a word ("BC" inside "ABC") is another word, unless the
        # source mention was glued the same way.
        if _is_word(stripped[0]) and _is_word(before) and not _is_word(src_before):
            return False
        if _is_word(stripped[-1]) and _is_word(after) and not _is_word(src_after):
            return False
        return True


def _consistent(parts: list[str], text: str) -> bool:
    """Whether an annotation's stated text is the source text at its fragments.

    A discontiguous mention's text is not always its fragments joined by a
    space ("breast and ovarian cancer"), so each fragment need only appear in
    the text, in order.
    """
    if equivalent(" ".join(parts), text):
        return True
    if len(parts) < 2:
        return False
    haystack = loose(normalize(text)[0])
    pos = 0
    for part in parts:
        needle = loose(normalize(part)[0])
        found = haystack.find(needle, pos) if needle else -1
        if found < 0:
            return False
        pos = found + len(needle)
    return True


def _same_in_context(source: str, target: str, start: int, end: int, context: int = 20) -> bool:
    """Same characters at ``[start, end)`` and ``context`` characters around it (unknown source characters match).

    The context guards against a coincidence: a short mention ("BC") whose
    text happens to be at the same offsets of a shifted document.
    """
    lo, hi = max(0, start - context), end + context
    a, b = source[lo:hi], target[lo:hi]
    if target[start:end] != source[start:end] or len(a) != len(b):
        return False
    return all(x == y or x == UNKNOWN for x, y in zip(a, b, strict=True))


def _drop(counts: Counter[str], reason: str, ann: Annotation, detail: str = "") -> None:
    counts[f"dropped_{reason}"] += 1
    logger.debug("dropped %s %r %s: %s %s", ann.type, ann.text, ann.fragments, reason, detail)


def _valid(fragments: list[Span]) -> bool:
    return all(s < e for s, e in fragments) and all(
        fragments[k][1] <= fragments[k + 1][0] for k in range(len(fragments) - 1)
    )


def realign_one(ann: Annotation, aligner: Aligner, counts: Counter[str]) -> Annotation | None:
    """Re-align one annotation to the aligner's target text.

    Follows the method of the module docstring, fragment by fragment.

    Args:
        ann: The annotation; its fragments are half-open offsets into the
            aligner's source text (into the target when there is no source
            text), its ``text`` what the source says it covers (may be empty).
        aligner: The [`Aligner`][pipeline.nlp.align.Aligner] of the annotation's source and
            document texts.
        counts: Counter incremented with one of the module's count keys.

    Returns:
        The annotation with half-open, document-relative fragments and
            ``text`` = the covered document text (fragments joined by one space),
            or ``None`` when it is dropped (counted as ``dropped_<reason>``, logged
            at debug level).
    """
    source, target = aligner.source, aligner.target
    frags = list(ann.fragments)
    has_source = source is not None and all(
        e <= len(source) and UNKNOWN not in source[s:e] for s, e in frags
    )
    # A source ending in UNKNOWN has an unknown tail (a last passage given
    # without text): offsets past its end are checked against the document.
    if source is not None and not source.endswith(UNKNOWN) and any(e > len(source) for _, e in frags):
        _drop(counts, "offset_outside_text", ann, f"source length {len(source)}")
        return None

    if has_source:
        assert source is not None
        src_parts = [source[s:e] for s, e in frags]
        if ann.text and not _consistent(src_parts, ann.text):
            _drop(counts, "text_mismatch", ann, f"source text {' '.join(src_parts)!r}")
            return None
        if all(_same_in_context(source, target, s, e) for s, e in frags):
            counts["exact"] += 1
            return dataclasses.replace(ann, text=ann.covered(target))
        new: list[Span] = []
        for s, e in frags:
            span = aligner.project(s, e) or aligner.search_from_source(s, e)
            if span is None:
                _drop(counts, "unalignable", ann)
                return None
            new.append(span)
    else:
        if any(e > len(target) for _, e in frags):
            _drop(counts, "offset_outside_text", ann, f"document length {len(target)}")
            return None
        covered = ann.covered(target)
        if not ann.text:
            counts["exact_unverified"] += 1
            return dataclasses.replace(ann, text=covered)
        if covered == ann.text:
            counts["exact"] += 1
            return ann
        if equivalent(covered, ann.text):
            counts["realigned"] += 1
            return dataclasses.replace(ann, text=covered)
        span = aligner.search(ann.text, frags[0][0]) if len(frags) == 1 else None
        if span is None:
            _drop(counts, "unalignable", ann, f"document text {covered!r}")
            return None
        new = [span]

    if not _valid(new):
        _drop(counts, "unalignable", ann, f"projected fragments {new}")
        return None
    if tuple(new) == ann.fragments and (source is None or all(target[s:e] == source[s:e] for s, e in new)):
        counts["exact"] += 1  # same offsets, same text: only the surroundings differed
        return dataclasses.replace(ann, text=ann.covered(target))
    counts["realigned"] += 1
    result = dataclasses.replace(ann, fragments=tuple(new))
    return dataclasses.replace(result, text=result.covered(target))


def realign(
    annotations: Iterable[Annotation],
    source_text: str | None,
    doc_text: str,
    counts: Counter[str],
    *,
    window: int = 300,
    dropped: list[tuple[str, Annotation]] | None = None,
) -> list[Annotation]:
    """Re-align annotations from ``source_text`` offsets to ``doc_text`` offsets.

    Args:
        annotations: Annotations whose fragments are half-open offsets into
            ``source_text`` (into ``doc_text`` when there is no source text).
        source_text: The text the annotations were made on; ``None`` (or only
            ``UNKNOWN`` placeholders) for annotation-only stand-off.
        doc_text: The document text (``Document.text``).
        counts: Counter incremented with the module's count keys.
        window: Bounds the local search: normalized characters either side of
            the expected position.
        dropped: When given, each dropped annotation is appended as
            ``(reason, annotation)`` (the annotation in source offsets, the
            reason one of [`REASONS`][pipeline.nlp.align.REASONS]), so the caller can report
            them by document.

    Returns:
        The kept annotations, in input order, with half-open, document-relative
            fragments and ``text`` = the covered document text.
    """
    if source_text is not None and not source_text.strip(UNKNOWN):
        source_text = None  # annotation-only stand-off: no source character is known
    aligner = Aligner(source_text, doc_text, window=window)
    out = []
    for ann in annotations:
        before = {reason: counts[f"dropped_{reason}"] for reason in REASONS}
        kept = realign_one(ann, aligner, counts)
        if kept is not None:
            out.append(kept)
        elif dropped is not None:
            reason = next((r for r in REASONS if counts[f"dropped_{r}"] > before[r]), "dropped")
            dropped.append((reason, ann))
    return out


__all__ = [
    "REASONS",
    "Aligner",
    "Folded",
    "align_folded",
    "equivalent",
    "fold",
    "loose",
    "normalize",
    "normalize_char",
    "realign",
    "realign_one",
]
