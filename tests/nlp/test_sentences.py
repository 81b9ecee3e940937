"""Tests of pipeline.nlp.sentences: splitter rules, exact offsets, invariants, sections, real data.

Covers: pipeline.documents, pipeline.nlp.sentences, pipeline.sources.pubmed_xml
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.documents import Annotation, Document, Section, Sentence
from pipeline.nlp.sentences import add_to_pipeline, split_documents, split_text
from tests.conftest import FIXTURES, shared_path

# --- splitter cases ------------------------------------------------------------
# (text, expected sentences); the sentences are checked as text[start:end].
CASES: list[tuple[str, list[str]]] = [
    # abbreviations
    ("Smith et al. reported this. We agree.", ["Smith et al. reported this.", "We agree."]),
    ("As shown by Smith et al. (2001), X binds Y. We agree.",
     ["As shown by Smith et al. (2001), X binds Y.", "We agree."]),
    ("This was described by Smith et al. The effect was large.",
     ["This was described by Smith et al.", "The effect was large."]),
    ("Mice were injected i.v. with 5 mg/kg. Controls received saline.",
     ["Mice were injected i.v. with 5 mg/kg.", "Controls received saline."]),
    ("The drug was given i.v. Mice were killed after 2 h. Blood was taken.",
     ["The drug was given i.v.", "Mice were killed after 2 h.", "Blood was taken."]),
    ("The dose was approx. 5 mg. It was safe.", ["The dose was approx. 5 mg.", "It was safe."]),
    ("Several inducers, e.g. rifampicin, were tested. None inhibited CYP2D6.",
     ["Several inducers, e.g. rifampicin, were tested.", "None inhibited CYP2D6."]),
    ("Poor metabolizers, i.e. carriers of two null alleles, were excluded. Others were not.",
     ["Poor metabolizers, i.e. carriers of two null alleles, were excluded.", "Others were not."]),
    ("Cases vs. controls were compared. No. 5 was the best batch.",
     ["Cases vs. controls were compared.", "No. 5 was the best batch."]),
    ("See Fig. 2 for details. Results are in Table 1.", ["See Fig. 2 for details.", "Results are in Table 1."]),
    ("The drug is approved in the U.S. The drug is widely used.",
     ["The drug is approved in the U.S.", "The drug is widely used."]),
    ("It was approved by the U.S. Food and Drug Administration in 2001. It is used.",
     ["It was approved by the U.S. Food and Drug Administration in 2001.", "It is used."]),
    ("Enzymes were from Sigma Chemical Co. St. Louis supplied the rest.",
     ["Enzymes were from Sigma Chemical Co. St. Louis supplied the rest."]),
    ("Doses were taken at 8 a.m. and 8 p.m. daily. Compliance was good.",
     ["Doses were taken at 8 a.m. and 8 p.m. daily.", "Compliance was good."]),
    ("Nitric oxide (NO) release was induced by NO. The effect was large.",
     ["Nitric oxide (NO) release was induced by NO.", "The effect was large."]),
    ("Many patients had CF. Because of this, doses were adjusted.",
     ["Many patients had CF.", "Because of this, doses were adjusted."]),
    # units and numbers
    ("Levels were 0.5 mg/ml. The effect was significant (p < 0.05). Next.",
     ["Levels were 0.5 mg/ml.", "The effect was significant (p < 0.05).", "Next."]),
    ("The difference was significant, p < 0.05. Both groups were small.",
     ["The difference was significant, p < 0.05.", "Both groups were small."]),
    ("Cells were incubated for 30 min. RNA was then extracted.",
     ["Cells were incubated for 30 min.", "RNA was then extracted."]),
    ("Cells were incubated for 24 h. after transfection.", ["Cells were incubated for 24 h. after transfection."]),
    ("The test was done at 37 degrees C. The result was clear.",
     ["The test was done at 37 degrees C.", "The result was clear."]),
    ("The value was 2. 5% of the total.", ["The value was 2. 5% of the total."]),
    ("Patients were followed for 5 years. 12 of them relapsed.",
     ["Patients were followed for 5 years.", "12 of them relapsed."]),
    # species names and initials
    ("E. coli and S. cerevisiae were used. Growth was normal.",
     ["E. coli and S. cerevisiae were used.", "Growth was normal."]),
    ("Survival of T. parva-infected cells was reduced.", ["Survival of T. parva-infected cells was reduced."]),
    ("Dr. J. Smith treated the patients. They recovered.", ["Dr. J. Smith treated the patients.", "They recovered."]),
    ("It is inhibited by cyclosporin A. The flow of information is blocked.",
     ["It is inhibited by cyclosporin A.", "The flow of information is blocked."]),
    ("Protein kinase C. Activation of PKC was measured.", ["Protein kinase C.", "Activation of PKC was measured."]),
    # gene names and lower-case starts
    ("Patients carried CYP2D6*4. Poor metabolizers were excluded.",
     ["Patients carried CYP2D6*4.", "Poor metabolizers were excluded."]),
    ("The mutation was found. p53 expression was reduced.", ["The mutation was found.", "p53 expression was reduced."]),
    ("The cells were treated. mRNA levels increased. c-Myc was induced.",
     ["The cells were treated.", "mRNA levels increased.", "c-Myc was induced."]),
    ("Receptors were studied. alpha 4 integrins mediate adhesion.",
     ["Receptors were studied.", "alpha 4 integrins mediate adhesion."]),
    ("It differs from NFATc. alpha in the first residues.", ["It differs from NFATc. alpha in the first residues."]),
    ("Wnt signalling was active. \u03b2-catenin accumulated.",
     ["Wnt signalling was active.", "\u03b2-catenin accumulated."]),
    ("Samples were taken in Jan. 2001 and Mar. 2002. Both were frozen.",
     ["Samples were taken in Jan. 2001 and Mar. 2002.", "Both were frozen."]),
    ("AP-1 contains Fos and Jun. Immunoblots confirmed this.",
     ["AP-1 contains Fos and Jun.", "Immunoblots confirmed this."]),
    # question marks, exclamation marks, quotes, brackets
    ("Is warfarin safe? A study of 100 patients.", ["Is warfarin safe?", "A study of 100 patients."]),
    ("Is this dosage ? a study on a cohort .", ["Is this dosage ? a study on a cohort ."]),
    ("What a result! The trial stopped early.", ["What a result!", "The trial stopped early."]),
    ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
    ("Results were positive (see text.) The end.", ["Results were positive (see text.)", "The end."]),
    ("Levels rose (to 5 mg/l. in two cases) during therapy. They fell later.",
     ["Levels rose (to 5 mg/l. in two cases) during therapy.", "They fell later."]),
    ("Doses were reduced [in 3 cases. See below] after week 2. It helped.",
     ["Doses were reduced [in 3 cases. See below] after week 2.", "It helped."]),
    ("Transactivation required IL-3. (ABSTRACT TRUNCATED AT 250 WORDS)",
     ["Transactivation required IL-3.", "(ABSTRACT TRUNCATED AT 250 WORDS)"]),
    ("Transactivation required IL-3.(ABSTRACT TRUNCATED AT 250 WORDS)",
     ["Transactivation required IL-3.", "(ABSTRACT TRUNCATED AT 250 WORDS)"]),
    ("The sequence CTTGG ... CCAAG is conserved.", ["The sequence CTTGG ... CCAAG is conserved."]),
    # enumerations
    ("Three steps were taken. (i) Cells were lysed. (ii) Proteins were purified.",
     ["Three steps were taken.", "(i) Cells were lysed.", "(ii) Proteins were purified."]),
    ("1. Danazol reduced the levels. 2. Danazol did not alter the rate.",
     ["1. Danazol reduced the levels.", "2. Danazol did not alter the rate."]),
    # pre-tokenized text (PGxCorpus style)
    ("Estrone was elevated ( +14.3 % , P = 0.01 ) . Smith et al . ( 2001 ) agree .",
     ["Estrone was elevated ( +14.3 % , P = 0.01 ) .", "Smith et al . ( 2001 ) agree ."]),
    ("Inhibiting CYP2A6 ( e.g. tranylcypromine , methoxsalen ) decreases smoking .",
     ["Inhibiting CYP2A6 ( e.g. tranylcypromine , methoxsalen ) decreases smoking ."]),
    ("The drug was given 5 mg i.v . twice daily .", ["The drug was given 5 mg i.v . twice daily ."]),
    ("Extracts of C. sappan L. and other plants were tested .",
     ["Extracts of C. sappan L. and other plants were tested ."]),
    ("Antigens were from Merieux , Lyon , France ) . [ Mutations in HFE ] are rare .",
     ["Antigens were from Merieux , Lyon , France ) .", "[ Mutations in HFE ] are rare ."]),
    # white space and edges
    ("  Leading and trailing space.  Next one.  ", ["Leading and trailing space.", "Next one."]),
    ("No final punctuation", ["No final punctuation"]),
    ("Title line without period\nAbstract sentence. Another one.",
     ["Title line without period", "Abstract sentence.", "Another one."]),
    ("", []),
    ("   \n  ", []),
]


def assert_invariants(text: str, spans: list[tuple[int, int]]) -> None:
    """Stripped, non-empty, sorted, non-overlapping, inside the text, covering every non-space character."""
    previous_end = 0
    covered = 0
    for start, end in spans:
        assert 0 <= previous_end <= start < end <= len(text), (start, end)
        sentence = text[start:end]
        assert sentence == sentence.strip() and sentence
        assert not text[previous_end:start].strip(), f"non-space text between sentences: {text[previous_end:start]!r}"
        covered += len(re.sub(r"\s+", "", sentence))
        previous_end = end
    assert not text[previous_end:].strip()
    assert covered == len(re.sub(r"\s+", "", text))


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[f"{i:02d}-{c[0][:30]}" for i, c in enumerate(CASES)])
def test_split_text(text: str, expected: list[str]) -> None:
    spans = split_text(text)
    assert [text[s:e] for s, e in spans] == expected
    assert_invariants(text, spans)


def test_offsets_are_exact_character_positions() -> None:
    text = "Warfarin (approx. 5 mg) was given. CYP2C9*3 carriers\u2014rare\u2014needed less."
    spans = split_text(text)
    assert spans == [(0, 34), (35, len(text))]
    assert text[35:] == "CYP2C9*3 carriers\u2014rare\u2014needed less."


def test_non_ascii_text_keeps_code_point_offsets() -> None:
    text = "Sjögren's syndrome was studied in 10 µg/ml. Krüppel-like factors bind DNA."
    spans = split_text(text)
    assert [text[s:e] for s, e in spans] == ["Sjögren's syndrome was studied in 10 µg/ml.",
                                             "Krüppel-like factors bind DNA."]


def test_invariants_hold_on_random_text() -> None:
    rng = random.Random(7)
    alphabet = ["a", "B", "p53", "e.g.", "al.", "E.", "(", ")", "[", "]", ".", "?", "!", " ", " ", "\n", "\u2026",
                "1.", "2", '"', "'", "CYP2D6*4.", "(ABSTRACT TRUNCATED AT 250 WORDS)", "i.v", "U.S.", "...", "\t"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) + rng.choice(["", " "]) for _ in range(rng.randint(0, 40)))
        assert_invariants(text, split_text(text))


def test_deterministic() -> None:
    text = " ".join(text for text, _ in CASES)
    assert split_text(text) == split_text(text)
    assert_invariants(text, split_text(text))


# --- documents -------------------------------------------------------------------


def make_document(pmid: str, title: str, parts: list[tuple[str | None, str]]) -> Document:
    """A Document laid out as the model says: title + "\\n" + sections "LABEL: text" joined by single spaces."""
    text = title + "\n"
    sections = []
    for label, body in parts:
        if len(text) > len(title) + 1:
            text += " "
        start = len(text)
        if label:
            text += f"{label}: "
        text_start = len(text)
        text += body
        sections.append(Section(start, len(text), text_start, label, label))
    if not parts:
        text = title
    return Document(pmid=pmid, title=title, text=text, sections=tuple(sections))


def read_fixture_abstracts(path: Path) -> list[tuple[Document, list[str]]]:
    """Parse tests/fixtures/sentences/abstracts.txt into documents and their expected sentences."""
    blocks: list[tuple[str, list[tuple[str, str]]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        tag, _, rest = line.partition(" ")
        if tag == "=":
            blocks.append((rest, []))
        else:
            assert tag in ("T", "L", "S"), f"{path}: bad line {line!r}"
            blocks[-1][1].append((tag, rest))
    out = []
    for name, lines in blocks:
        title = " ".join(rest for tag, rest in lines if tag == "T")
        parts: list[tuple[str | None, list[str]]] = []
        expected = [rest for tag, rest in lines if tag == "T"]
        label: str | None = None
        for tag, rest in lines:
            if tag == "L":
                label = rest
                parts.append((label, []))
            elif tag == "S":
                if not parts:
                    parts.append((None, []))
                if not parts[-1][1] and parts[-1][0]:
                    expected.append(f"{parts[-1][0]}: {rest}")
                else:
                    expected.append(rest)
                parts[-1][1].append(rest)
        doc = make_document(name, title, [(lab, " ".join(sents)) for lab, sents in parts])
        out.append((doc, expected))
    return out


FIXTURE_DOCS = read_fixture_abstracts(FIXTURES / "sentences" / "abstracts.txt")


@pytest.mark.parametrize(("doc", "expected"), FIXTURE_DOCS, ids=[d.pmid for d, _ in FIXTURE_DOCS])
def test_fixture_abstracts(doc: Document, expected: list[str]) -> None:
    counts: Counter[str] = Counter()
    (out,) = split_documents([doc], counts)
    assert [out.text[s.start : s.end] for s in out.sentences] == expected
    assert_invariants(out.text, [(s.start, s.end) for s in out.sentences])
    title_end = len(doc.title)
    assert all(s.end <= title_end or s.start > title_end for s in out.sentences), "sentence crosses the title"
    assert counts["documents"] == 1 and counts["sentences"] == len(expected)


def test_title_is_never_merged_with_the_abstract() -> None:
    doc = make_document("1", "Effect of CYP2D6 genotype on tamoxifen", [(None, "tamoxifen is a prodrug. It is used.")])
    counts: Counter[str] = Counter()
    (out,) = split_documents([doc], counts)
    assert [out.text[s.start : s.end] for s in out.sentences] == [
        "Effect of CYP2D6 genotype on tamoxifen", "tamoxifen is a prodrug.", "It is used."]
    assert out.sentences[0] == Sentence(0, len(doc.title))
    assert out.sentences[1].start == doc.abstract_start
    assert counts["title_sentences"] == 1 and counts["abstract_sentences"] == 2


def test_title_with_two_sentences_is_counted() -> None:
    doc = make_document("2", "Warfarin and CYP2C9. A cohort study.", [(None, "Doses varied.")])
    counts: Counter[str] = Counter()
    (out,) = split_documents([doc], counts)
    assert [out.text[s.start : s.end] for s in out.sentences] == [
        "Warfarin and CYP2C9.", "A cohort study.", "Doses varied."]
    assert counts["title_sentences"] == 2 and counts["title_multi_sentence"] == 1


def test_section_start_always_starts_a_sentence_and_label_stays() -> None:
    # The first section has no final period and the second starts with a lower-case word:
    # only the section boundary separates them.
    doc = make_document("3", "T.", [("BACKGROUND", "Doses were given i.v"), ("METHODS", "patients were genotyped.")])
    (out,) = split_documents([doc], Counter())
    assert [out.text[s.start : s.end] for s in out.sentences] == [
        "T.", "BACKGROUND: Doses were given i.v", "METHODS: patients were genotyped."]
    for sentence, section in zip(out.sentences[1:], doc.sections, strict=True):
        assert sentence.start == section.start
        assert sentence.end <= section.end


def test_label_with_period_is_not_split_from_its_text() -> None:
    doc = make_document("4", "Title.", [("PATIENTS AND METHODS. SETTING", "A clinic. It was small.")])
    (out,) = split_documents([doc], Counter())
    assert [out.text[s.start : s.end] for s in out.sentences] == [
        "Title.", "PATIENTS AND METHODS. SETTING: A clinic.", "It was small."]


def test_sentence_never_crosses_a_section_boundary() -> None:
    # Brackets opened in one section and closed in the next must not glue the sections.
    doc = make_document("5", "Title", [("RESULTS", "Levels rose (see below"), ("CONCLUSIONS", "and fell). Done.")])
    (out,) = split_documents([doc], Counter())
    ends = {s.end for s in out.sentences}
    assert doc.sections[0].end in ends
    assert [out.text[s.start : s.end] for s in out.sentences][1:] == [
        "RESULTS: Levels rose (see below", "CONCLUSIONS: and fell).", "Done."]


def test_invalid_sections_are_ignored_and_counted() -> None:
    doc = make_document("6", "Title.", [("AIM", "First. Second.")])
    bad = dataclasses.replace(doc, sections=(*doc.sections, Section(2, 4, 2, "BAD"), Section(10, 999, 10, "OUT")))
    counts: Counter[str] = Counter()
    (out,) = split_documents([bad], counts)
    assert [out.text[s.start : s.end] for s in out.sentences] == ["Title.", "AIM: First.", "Second."]
    assert counts["sections_invalid"] == 2 and counts["sections"] == 1


def test_document_without_abstract_and_empty_document() -> None:
    counts: Counter[str] = Counter()
    no_abstract = Document(pmid="7", title="Only a title. Really.", text="Only a title. Really.")
    empty = Document(pmid="8", title="", text="")
    out = list(split_documents([no_abstract, empty], counts))
    assert [(s.start, s.end) for s in out[0].sentences] == [(0, 13), (14, 21)]
    assert out[1].sentences == ()
    assert counts["documents"] == 2 and counts["documents_without_abstract"] == 2
    assert counts["documents_empty"] == 1


def test_text_not_starting_with_title_is_split_and_counted() -> None:
    doc = Document(pmid="9", title="A title", text="Another title\nFirst sentence. Second one.")
    counts: Counter[str] = Counter()
    (out,) = split_documents([doc], counts)
    assert [out.text[s.start : s.end] for s in out.sentences] == ["Another title", "First sentence.", "Second one."]
    assert counts["documents_title_mismatch"] == 1


def test_split_documents_replaces_sentences_and_keeps_everything_else() -> None:
    base = make_document("10", "Title.", [(None, "We studied warfarin. It works.")])
    start = base.text.index("warfarin")
    annotation = Annotation(fragments=((start, start + 8),), type="Chemical", source="pubtator", text="warfarin")
    doc = dataclasses.replace(base, sentences=(Sentence(0, 3),), annotations=(annotation,), year=2001)
    (out,) = split_documents([doc], Counter())
    assert dataclasses.replace(out, sentences=doc.sentences) == doc
    records, crossing = out.sentence_records()
    assert crossing == 0
    assert [r.text for r in records] == ["Title.", "We studied warfarin.", "It works."]
    assert records[1].annotations[0].covered(records[1].text) == "warfarin"


def test_split_documents_is_lazy() -> None:
    def docs() -> Iterator[Document]:
        yield make_document("11", "A.", [(None, "B.")])
        raise AssertionError("read too far")

    iterator = split_documents(docs(), Counter())
    assert next(iterator).pmid == "11"


def test_spacy_component_sets_the_same_sentences() -> None:
    spacy = pytest.importorskip("spacy")
    nlp = spacy.blank("en")
    add_to_pipeline(nlp)
    text = "Smith et al. reported this. E. coli grew at 37 degrees C. mRNA levels rose (p < 0.05). Done."
    doc = nlp(text)
    assert [s.text for s in doc.sents] == [text[s:e] for s, e in split_text(text)]
    assert len(list(doc.sents)) == 4


# --- real data -------------------------------------------------------------------


def _nonspace_ends(text: str, ends: list[int]) -> set[int]:
    return {len(re.sub(r"\s+", "", text[:end])) for end in ends}


@pytest.mark.slow
def test_genia_sample_boundary_f1() -> None:
    """On 200 GENIA abstracts whose text matches the gold (up to white space), internal boundaries F1 >= 0.99."""
    from pipeline.sources.pubmed_xml import iter_documents

    genia = shared_path("data", "genia")
    paths = sorted((genia / "pubmed-xml").glob("*.xml"))[:200]
    counts: Counter[str] = Counter()
    docs = [doc for path in paths for doc in iter_documents(path, counts)]
    tp = fp = fn = scored = 0
    for doc in split_documents(docs, Counter()):
        gold = [line.strip() for line in (genia / "sentences" / f"{int(doc.pmid)}.txt").read_text().splitlines()]
        gold = [line for line in gold if line]
        normalized = re.sub(r"\s+", "", doc.text)
        if normalized != "".join(re.sub(r"\s+", "", line) for line in gold):
            continue  # GENIA's text differs (notes, copyright lines): scored by bench/sentences.py
        scored += 1
        assert_invariants(doc.text, [(s.start, s.end) for s in doc.sentences])
        forced = {len(normalized), len(re.sub(r"\s+", "", doc.title))}
        predicted = _nonspace_ends(doc.text, [s.end for s in doc.sentences]) - forced
        expected = set()
        total = 0
        for line in gold:
            total += len(re.sub(r"\s+", "", line))
            expected.add(total)
        expected -= forced
        tp += len(predicted & expected)
        fp += len(predicted - expected)
        fn += len(expected - predicted)
    assert scored >= 150
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    f1 = 2 * precision * recall / (precision + recall)
    assert f1 >= 0.99, (precision, recall, f1)


def test_pgxcorpus_sentences_stay_whole() -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    paths = sorted(gold.glob("*.txt"))
    assert len(paths) >= 100
    kept = sum(len(split_text(path.read_text(encoding="utf-8"))) == 1 for path in paths)
    assert kept / len(paths) >= 0.99
