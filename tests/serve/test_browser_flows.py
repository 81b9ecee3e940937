"""The campaign's annotator and senior flows (issue 22, point 3) done by a person in brat's own web client
(headless Debian Chromium driven by Selenium) against a live ``campaign serve`` of a campaign made with the
project's own commands; then ``campaign status``, ``review`` and ``finalize`` on what the served brat wrote.

- alice (annotator, phase 1), in the browser: retypes a pre-annotated entity in brat's span dialog, draws a
  discontiguous entity (Add Frag.), drags a relation, sets its modality in the relation dialog's Notes
  (``neg``), changes it (``hyp``), removes it, marks the document Done, and discards another with a Reason.
  bob, the second annotator, works through the same server over HTTP (brat's ajax protocol).
- dave (senior, phase 2, after ``review``), in the browser: sees the disputed relations and the entity
  disagreements, accepts one disputed relation by retyping it (and writes its modality), rejects the other
  by deleting it, accepts one entity version (removes its Disagreement) and rejects the other (deletes it),
  signs off with Done.  ``finalize`` takes exactly that document.
- erin (manager) opens every document of every collection of the campaign: 0 brat messages.

After each step: 0 brat error or warning messages.  The tests run in file order and share the campaign
(one browser per module).  Screenshots are saved in each test's tmp_path (``failure.png`` on failure).

Covers: pipeline.campaign.batches, pipeline.campaign.users, pipeline.cli, pipeline.cli.campaign_commands,
pipeline.cli.release_commands, pipeline.serve.app, pipeline.serve.policy
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.keys import Keys

from bench.serve_browser import login, open_all
from pipeline.campaign.batches import prepare_batches
from pipeline.campaign.users import UserStore, create_users
from pipeline.cli import main
from pipeline.serve.app import ServeApp
from pipeline.serve.policy import Policy
from tests.campaign.test_brat_client import collection
from tests.serve.browser import (
    ActionChains,
    By,
    WebDriverWait,
    ec,
    log_in,
    open_document,
    problems,
    renders,
    span_count,
    wait_for_file,
)
from tests.serve.live import HttpClient, LiveServer

pytestmark = pytest.mark.slow  # three whole flows in Chromium

PEOPLE = {"alice": ["annotator"], "bob": ["annotator"], "dave": ["senior"], "erin": ["manager"]}
# "Warfarin doses were lower in CYP2C9 carriers."; brat's chunks are its words
WARFARIN, DOSES, WERE, LOWER, IN = 0, 1, 2, 3, 4


class Campaign:
    def __init__(self, root: Path, passwords: dict[str, str]) -> None:
        self.root, self.passwords = root, passwords

    def ann(self, collection: str, document: str) -> Path:
        return self.root / collection / f"{document}.ann"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    tmp = tmp_path_factory.mktemp("flows")
    roster = tmp / "roster.csv"
    roster.write_text("id,role,phase1\nalice,annotator,yes\nbob,annotator,yes\ndave,senior,no\n", encoding="utf-8")
    root = tmp / "campaign"
    prepare_batches(collection(tmp / "coll"), roster, root, seed=5, counts=Counter())
    return Campaign(root, create_users(root, PEOPLE))


@pytest.fixture(scope="module")
def live(campaign: Campaign) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(campaign.root)) as server:
        yield server


# --- what a person does in brat's client -------------------------------------------------------------------

def word(driver: Any, chunk: int) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f"#svg tspan[data-chunk-id='{chunk}']")


def span(driver: Any, span_id: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f"#svg rect[data-span-id='{span_id}']")


def arc_label(driver: Any, origin: str, type_: str, target: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f"#svg [data-arc-role='{type_}'][data-arc-origin='{origin}']"
                                                f"[data-arc-target='{target}']")


def arcs(driver: Any) -> list[tuple[str, str, str]]:
    """The relations drawn: (origin, type, target) of each arc label."""
    return sorted({tuple(a) for a in driver.execute_script(
        "return $('#svg [data-arc-role]').map(function(){var e=$(this); return [[e.attr('data-arc-origin'), "
        "e.attr('data-arc-role'), e.attr('data-arc-target')]]}).get()")})


def double_click(driver: Any, element: Any) -> None:
    """On a word, left of its middle: brat's words carry their trailing space, and a double-click on the space
    selects nothing."""
    x = -int(element.rect["width"] / 4) if element.tag_name == "tspan" else 0
    ActionChains(driver).move_to_element_with_offset(element, x, 0).double_click().perform()


def span_dialog(driver: Any, wait: WebDriverWait, element: Any) -> None:
    """Double-click a word (a new span) or a span (edit it): brat's span dialog opens."""
    double_click(driver, element)
    wait.until(ec.visibility_of_element_located((By.ID, "span_form")))


def arc_dialog(driver: Any, wait: WebDriverWait, label: Any) -> None:
    ActionChains(driver).double_click(label).perform()
    wait.until(ec.visibility_of_element_located((By.ID, "arc_form")))


def drag_arc(driver: Any, wait: WebDriverWait, origin: str, target: str) -> None:
    ActionChains(driver).move_to_element(span(driver, origin)).click_and_hold().move_by_offset(20, 0) \
        .move_to_element(span(driver, target)).release().perform()
    wait.until(ec.visibility_of_element_located((By.ID, "arc_form")))


def redrawn(wait: WebDriverWait, before: int) -> None:
    """brat answered the edit and drew the document again."""
    wait.until(lambda d: renders(d) > before)


def ok(driver: Any, wait: WebDriverWait, form: str) -> None:
    """OK in a dialog; returns once brat has saved and drawn the document again."""
    before = renders(driver)
    driver.find_element(By.ID, f"{form}-ok").click()
    wait.until(ec.invisibility_of_element_located((By.ID, form)))
    redrawn(wait, before)


def delete(driver: Any, wait: WebDriverWait, button: str) -> None:
    """Delete in a dialog, confirmed in brat's "Are you sure" box; returns once brat has drawn the document."""
    before = renders(driver)
    driver.find_element(By.ID, button).click()
    alert = wait.until(ec.alert_is_present())
    assert "delete this annotation" in alert.text
    alert.accept()
    redrawn(wait, before)


def set_notes(driver: Any, text: str) -> None:
    notes = driver.find_element(By.ID, "arc_notes")
    notes.clear()
    if text:
        notes.send_keys(text)


def choose(driver: Any, wait: WebDriverWait, attribute: str, value: str) -> None:
    """A multi-valued attribute in brat's span dialog is a combobox (an input after the hidden select): a click
    lists the values, a click on one picks it.  Its list has no "no value" entry (brat's ``?``): the person
    empties the box instead."""
    box = driver.find_element(By.CSS_SELECTOR, f"#entity_attr_{attribute} + input.ui-combobox-input")
    box.click()
    if value:
        def item(d: Any) -> Any:
            found = [li for li in d.find_elements(By.CSS_SELECTOR, "ul.ui-autocomplete li")
                     if li.is_displayed() and li.text.strip() == value]
            return found[0] if found else False

        wait.until(item).click()
    else:
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.BACKSPACE)
        driver.find_element(By.ID, "span_selected").click()  # the dialog's Text box: the combobox loses focus
    wait.until(lambda d: d.find_element(By.ID, f"entity_attr_{attribute}").get_attribute("value") == value)


def saved(path: Path, needle: str, present: bool = True) -> list[str]:
    """``path``'s lines once brat wrote ``needle`` in it (or removed it)."""
    text = wait_for_file(path, needle, present=present)
    assert (needle in text) == present, (needle, text)
    return text.splitlines()


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    """``pgx-corpus ARGS --json``: exit code and the JSON printed."""
    capsys.readouterr()
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def row(status: Any, person: str, phase: int) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in status["rows"] if r["person"] == person and r["phase"] == phase)
    return found


def ajax_ok(client: HttpClient, action: str, **params: str) -> None:
    answer = client.ajax(action, **params)
    assert not answer.get("exception") and [m for m in answer.get("messages", []) if m[1] != "comment"] == [], \
        answer


def no_problem(driver: Any, step: str) -> None:
    assert problems(driver) == [], step


# --- the tests ---------------------------------------------------------------------------------------------

def test_annotator_flow(driver: Any, live: LiveServer, campaign: Campaign, shots: Callable[[str], Path],
                        capsys: pytest.CaptureFixture[str]) -> None:
    ann = campaign.ann("phase1/alice", "100_1")
    wait = log_in(driver, live, "alice", campaign.passwords["alice"])
    open_document(driver, wait, "phase1/alice", "100_1")
    shots("01-opened")
    no_problem(driver, "open")

    # correct a pre-annotated entity: CYP2C9 carriers is a Limited_variation
    span_dialog(driver, wait, span(driver, "T3"))
    driver.find_element(By.ID, "span_Limited_variation").click()
    shots("02-retype-dialog")
    ok(driver, wait, "span_form")
    saved(ann, "T3\tLimited_variation 29 44")
    no_problem(driver, "retype")

    # a discontiguous entity: "doses", then Add Frag. and "lower"
    span_dialog(driver, wait, word(driver, DOSES))
    driver.find_element(By.ID, "span_Phenotype").click()
    ok(driver, wait, "span_form")
    saved(ann, "Phenotype 9 14")
    wait.until(lambda d: span_count(d) == 4)
    span_dialog(driver, wait, span(driver, "T4"))
    shots("03-add-fragment-dialog")
    driver.find_element(By.ID, "span_form_add_fragment").click()
    wait.until(ec.invisibility_of_element_located((By.ID, "span_form")))
    before = renders(driver)
    double_click(driver, word(driver, LOWER))
    redrawn(wait, before)
    saved(ann, "T4\tPhenotype 20 25;9 14\tlower doses")  # brat writes the fragment added last first
    no_problem(driver, "discontiguous")
    shots("04-discontiguous")

    # a pointer over a pre-annotated entity with a reference: brat's popup shows it (and asks the server
    # nothing: no normalization database, see config/brat/tools.conf)
    ActionChains(driver).move_to_element(span(driver, "T1")).perform()
    wait.until(ec.visibility_of_element_located((By.ID, "commentpopup")))
    assert "MESH:D014859" in driver.find_element(By.ID, "commentpopup").text
    time.sleep(0.5)  # a refused request would have shown its message by now
    no_problem(driver, "hover")
    # its span dialog (the reference shown in it) opened and cancelled
    span_dialog(driver, wait, span(driver, "T1"))
    time.sleep(0.5)
    shots("01b-reference-dialog")
    driver.find_element(By.ID, "span_form-cancel").click()
    wait.until(ec.invisibility_of_element_located((By.ID, "span_form")))
    no_problem(driver, "dialog of an entity with a reference")

    # a relation, dragged from Warfarin to CYP2C9, negated in its Notes
    drag_arc(driver, wait, "T1", "T2")
    driver.find_element(By.ID, "arc_isAssociatedWith").click()
    set_notes(driver, "neg")
    shots("05-relation-dialog")
    ok(driver, wait, "arc_form")
    saved(ann, "AnnotatorNotes R1\tneg")
    no_problem(driver, "relation")
    # its modality changed, then removed, in the relation dialog
    wait.until(lambda d: arcs(d) == [("T1", "isAssociatedWith", "T2")])
    arc_dialog(driver, wait, arc_label(driver, "T1", "isAssociatedWith", "T2"))
    assert driver.find_element(By.ID, "arc_notes").get_attribute("value") == "neg"
    set_notes(driver, "hyp")
    ok(driver, wait, "arc_form")
    saved(ann, "AnnotatorNotes R1\thyp")
    no_problem(driver, "modality changed")
    arc_dialog(driver, wait, arc_label(driver, "T1", "isAssociatedWith", "T2"))
    set_notes(driver, "")
    ok(driver, wait, "arc_form")
    saved(ann, "AnnotatorNotes", present=False)
    no_problem(driver, "modality removed")

    # Done
    span_dialog(driver, wait, word(driver, IN))
    driver.find_element(By.ID, "span_Done").click()
    ok(driver, wait, "span_form")
    lines = saved(ann, "\tDone 26 28\tin")
    shots("06-done")
    no_problem(driver, "done")
    assert lines == [
        "T1\tChemical 0 8\tWarfarin",
        "T2\tGene_or_protein 29 35\tCYP2C9",
        "T3\tLimited_variation 29 44\tCYP2C9 carriers",
        "A1\tComposite T3",
        "N1\tReference T1 MESH:D014859\tWarfarin",
        "N2\tReference T2 NCBIGene:1559\tCYP2C9",
        "T4\tPhenotype 20 25;9 14\tlower doses",
        "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t",
        "T5\tDone 26 28\tin",
    ]

    # another document discarded, with its Reason
    discarded = campaign.ann("phase1/alice", "100_3")
    open_document(driver, wait, "phase1/alice", "100_3")
    span_dialog(driver, wait, word(driver, WARFARIN))
    driver.find_element(By.ID, "span_Discard").click()
    choose(driver, wait, "Reason", "scope")
    shots("07-discard-dialog")
    ok(driver, wait, "span_form")
    lines = saved(discarded, "Discard 0 8")
    shots("08-discarded")
    no_problem(driver, "discard")
    assert lines[-2:] == ["T4\tDiscard 0 8\tWarfarin", "A2\tReason T4 scope"]

    # bob, the second annotator, through the same server (brat's ajax protocol, his own session)
    bob = HttpClient(live.port)
    try:
        assert not bob.login("bob", campaign.passwords["bob"]).get("exception")
        coll = "/phase1/bob/"
        # the discontiguous entity as brat's client makes it: one fragment, then the span edited with both
        # (brat's createSpan of a new span with several fragments shifts the later ones; its client never asks)
        ajax_ok(bob, "createSpan", collection=coll, document="100_1", offsets="[[9,14]]", type="Phenotype",
                attributes="{}")
        ajax_ok(bob, "createSpan", collection=coll, document="100_1", offsets="[[9,14],[20,25]]", type="Phenotype",
                attributes="{}", id="T4")
        ajax_ok(bob, "createArc", collection=coll, document="100_1", origin="T1", target="T2",
                type="isAssociatedWith", comment="hyp")
        ajax_ok(bob, "createArc", collection=coll, document="100_1", origin="T2", target="T1",
                type="isAssociatedWith")
        for name in ("100_1", "100_3"):
            ajax_ok(bob, "createSpan", collection=coll, document=name, offsets="[[26,28]]", type="Done",
                    attributes="{}")
    finally:
        bob.close()

    # the campaign commands on what the served brat wrote
    code, status = cli(capsys, "campaign", "status", str(campaign.root))
    assert code == 0
    counts = ("in_collection", "untouched", "edited", "done", "discarded", "held_back", "entities_added",
              "entities_retyped", "relations_added", "discarded_by_reason", "problems")
    assert [row(status, "alice", 1)[c] for c in counts] == [6, 4, 2, 1, 1, 0, 1, 1, 1, {"scope": 1}, []]
    assert [row(status, "bob", 1)[c] for c in counts] == [6, 4, 2, 2, 0, 0, 1, 0, 2, {}, []]
    code, report = cli(capsys, "campaign", "review", str(campaign.root))
    assert code == 3  # four documents still pending
    assert report["documents"] == {"assigned": 6, "ready": 1, "discarded": 1, "held_back": 0, "pending": 4}
    assert report["discarded"] == [{"by": {"alice": ["scope"]}, "document": "100_3", "file": "100_3"}]
    (merged,) = report["phase2"]
    # the retyped entity is a disagreement (both versions marked); the discontiguous one and Warfarin, CYP2C9
    # agreed; both relations disputed, one for its modality
    assert (merged["document"], merged["entities_agreed"], merged["entities_marked"], merged["relations_agreed"],
            merged["relations_marked"], merged["relations_modality_differs"]) == ("100_1", 3, 2, 0, 2, 1)


def test_senior_flow(driver: Any, live: LiveServer, campaign: Campaign, shots: Callable[[str], Path],
                     capsys: pytest.CaptureFixture[str]) -> None:
    ann = campaign.ann("phase2/dave", "100_1")
    lines = ann.read_text(encoding="utf-8").splitlines()
    assert "T4\tGenomic_variation 29 44\tCYP2C9 carriers" in lines and "A3\tDisagreement T4 bob" in lines
    assert "T5\tLimited_variation 29 44\tCYP2C9 carriers" in lines and "A4\tDisagreement T5 alice" in lines
    wait = log_in(driver, live, "dave", campaign.passwords["dave"])
    open_document(driver, wait, "phase2/dave", "100_1")
    shots("01-opened")
    no_problem(driver, "open")
    # what is disputed is on the screen: two "≠" arcs, and each entity version marked with its annotator
    assert arcs(driver) == [("T1", "Disputed_isAssociatedWith", "T3"), ("T3", "Disputed_isAssociatedWith", "T1")]
    drawn = driver.find_element(By.ID, "svg").text
    assert "≠alice" in drawn and "≠bob" in drawn and "≠ is associated with" in drawn

    # accept the modality-disputed relation: retyped to its real type, the modality decided in its Notes
    arc_dialog(driver, wait, arc_label(driver, "T1", "Disputed_isAssociatedWith", "T3"))
    assert driver.find_element(By.ID, "arc_notes").get_attribute("value") == "[alice: none; bob: hyp]"
    driver.find_element(By.ID, "arc_isAssociatedWith").click()
    set_notes(driver, "hyp")
    shots("02-accept-relation")
    ok(driver, wait, "arc_form")
    saved(ann, "R1\tisAssociatedWith Arg1:T1 Arg2:T3")
    no_problem(driver, "relation accepted")
    # reject the other: deleted
    arc_dialog(driver, wait, arc_label(driver, "T3", "Disputed_isAssociatedWith", "T1"))
    delete(driver, wait, "arc_form_delete")
    saved(ann, "Disputed_", present=False)
    no_problem(driver, "relation rejected")

    # what the senior guide says: Escape in the Disagreement box cancels the whole dialog (nothing saved);
    # emptying the box is the way to accept
    guide = (campaign.root / "phase2" / "dave" / "guide.md").read_text(encoding="utf-8")
    assert "empty it" in guide and "Escape, in that box or anywhere in the dialog, cancels the whole dialog" in guide
    before_escape = ann.read_bytes()
    span_dialog(driver, wait, span(driver, "T5"))
    box = driver.find_element(By.CSS_SELECTOR, "#entity_attr_Disagreement + input.ui-combobox-input")
    box.click()
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACKSPACE)
    box.send_keys(Keys.ESCAPE)
    wait.until(ec.invisibility_of_element_located((By.ID, "span_form")))
    time.sleep(0.5)
    assert ann.read_bytes() == before_escape
    no_problem(driver, "escape")

    # accept alice's version of the entity (its Disagreement removed), reject bob's (deleted)
    span_dialog(driver, wait, span(driver, "T5"))
    choose(driver, wait, "Disagreement", "")
    shots("03-accept-entity")
    ok(driver, wait, "span_form")
    saved(ann, "Disagreement T5", present=False)
    no_problem(driver, "entity accepted")
    span_dialog(driver, wait, span(driver, "T4"))
    delete(driver, wait, "span_form_delete")
    saved(ann, "Genomic_variation", present=False)
    no_problem(driver, "entity rejected")

    # sign off
    span_dialog(driver, wait, word(driver, IN))
    driver.find_element(By.ID, "span_Done").click()
    ok(driver, wait, "span_form")
    lines = saved(ann, "\tDone 26 28\tin")
    shots("04-signed-off")
    no_problem(driver, "signed off")
    assert lines == [
        "T1\tChemical 0 8\tWarfarin",
        "T2\tPhenotype 20 25;9 14\tlower doses",
        "T3\tGene_or_protein 29 35\tCYP2C9",
        "T5\tLimited_variation 29 44\tCYP2C9 carriers",
        "R1\tisAssociatedWith Arg1:T1 Arg2:T3\t",
        "A2\tComposite T5",
        "N1\tReference T1 MESH:D014859\tWarfarin",
        "N2\tReference T3 NCBIGene:1559\tCYP2C9",
        "#1\tAnnotatorNotes R1\thyp",
        "T4\tDone 26 28\tin",
    ]
    code, status = cli(capsys, "campaign", "status", str(campaign.root))
    dave = row(status, "dave", 2)
    assert (dave["in_collection"], dave["done"], dave["disagreements_left"], dave["entities_deleted"],
            dave["relations_deleted"], dave["problems"]) == (1, 1, 0, 1, 2, [])

    # finalize takes exactly the signed-off document; four documents never reached phase 2 (exit 3)
    final = campaign.root / "final"
    code, out = cli(capsys, "campaign", "finalize", str(campaign.root), "--out", str(final))
    assert code == 3
    assert (out["documents"], out["held_back"], out["pending"], out["discarded_in_phase1"], out["not_in_phase2"]) \
        == (1, [], [], ["100_3"], ["100_2", "101_1", "101_2", "101_3"])
    assert sorted(p.name for p in final.glob("*.ann")) == ["100_1.ann"]
    # FINAL: the accepted relation in its real type, its modality as a PGxCorpus note; no campaign mark
    assert (final / "100_1.ann").read_text(encoding="utf-8").splitlines() == [
        "T1\tChemical 0 8\tWarfarin",
        "T2\tPhenotype 20 25;9 14\tlower doses",
        "T3\tGene_or_protein 29 35\tCYP2C9",
        "T5\tLimited_variation 29 44\tCYP2C9 carriers",
        "R1\tisAssociatedWith Arg1:T1 Arg2:T3\t",
        "N1\tReference T1 MESH:D014859\tWarfarin",
        "N2\tReference T3 NCBIGene:1559\tCYP2C9",
        "#1\tAnnotatorNotes R1\thyp",
    ]


def test_manager_opens_every_collection_without_message(driver: Any, live: LiveServer, campaign: Campaign,
                                                         shots: Callable[[str], Path]) -> None:
    """Every document of every collection the campaign now has (both annotators' phase 1, phase 2, final),
    opened in brat's client as the manager, with bench/serve_browser.py's own functions."""
    erin = UserStore(campaign.root).get("erin")
    owned = Policy(campaign.root).collections(erin)
    assert sorted(owned) == ["final", "phase1/alice", "phase1/bob", "phase2/dave"]
    before = {p: p.read_bytes() for p in campaign.root.rglob("*.ann")}
    driver.delete_all_cookies()
    login(driver, live.origin, "erin", campaign.passwords["erin"])
    opened = {}
    for name, coll in sorted(owned.items()):
        documents = sorted(p.stem for p in coll.path.glob("*.txt"))
        seen, _ = open_all(driver, name, documents)
        opened[name] = len(documents)
        assert [m for m in seen if m[1] in ("error", "warning")] == [], name
    shots("last-document")
    assert opened == {"final": 1, "phase1/alice": 6, "phase1/bob": 6, "phase2/dave": 1}
    assert {p: p.read_bytes() for p in campaign.root.rglob("*.ann")} == before  # opening changed no byte
