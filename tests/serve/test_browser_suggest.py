"""The "Suggest relations" button in brat's own web client (headless Debian Chromium, Selenium) against a
live ``campaign serve``: an annotator corrects an entity, presses the button in brat's Data dialog and sees
the suggestions drawn at once; Ctrl-Z takes the press back; pressed again, the suggestions come back; the
annotator retypes one and deletes the other, presses again and nothing is suggested again.  After each
step: 0 brat error or warning messages and 0 ``securitypolicyviolation`` events.  The ``.ann`` is checked
line by line after each step, then the journal and the suggestion records.

Covers: pipeline.campaign.journal, pipeline.campaign.status, pipeline.campaign.suggestions, pipeline.documents,
pipeline.serve.app
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.keys import Keys

from pipeline.campaign.journal import Journal
from pipeline.campaign.status import campaign_status
from pipeline.campaign.suggestions import read_records, records_path
from pipeline.documents import Annotation
from pipeline.serve.app import ServeApp
from tests.serve.browser import (
    ActionChains,
    By,
    WebDriverWait,
    ec,
    log_in,
    messages,
    open_document,
    open_menu,
    problems,
    renders,
)
from tests.serve.live import LiveServer
from tests.serve.test_browser_flows import arc_dialog, arc_label, arcs, delete, ok, span, span_dialog
from tests.serve.test_browser_xss import PROBE_JS, violations
from tests.serve.test_suggest import TEXT, Camp, build_suggest_campaign

pytestmark = pytest.mark.slow

# the build typed rs1045642 as a gene; simvastatin and myopathy are right
PRE = (Annotation(((12, 21),), "Gene_or_protein", "pubtator", text="rs1045642"),
       Annotation(((43, 51),), "Disease", "pubtator", text="myopathy"),
       Annotation(((57, 68),), "Chemical", "pubtator", text="simvastatin"))
ENTITIES = ["T1\tGenomic_variation 12 21\trs1045642", "T2\tDisease 43 51\tmyopathy",
            "T3\tChemical 57 68\tsimvastatin"]
SUGGESTED = ["R1\tincreases Arg1:T1 Arg2:T2\t", "R2\ttreats Arg1:T3 Arg2:T2\t"]


@pytest.fixture(scope="module")
def camp(tmp_path_factory: pytest.TempPathFactory) -> Camp:
    return build_suggest_campaign(tmp_path_factory.mktemp("suggest"), PRE)


@pytest.fixture(scope="module")
def live(camp: Camp) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(camp.root)) as server:
        yield server


def press(driver: Any, wait: WebDriverWait) -> None:
    """brat's Data dialog, its "Suggest relations" button; returns once brat drew the answer."""
    open_menu(driver)
    wait.until(ec.element_to_be_clickable((By.ID, "data_button"))).click()
    wait.until(ec.visibility_of_element_located((By.ID, "data_form")))
    assert driver.find_element(By.CSS_SELECTOR, "#tagger_buttons .optionLabel").text == "Relations"
    before = renders(driver)
    button = driver.find_element(By.ID, "tag_pgx-suggest-relations_button")
    assert button.get_attribute("value") == "Suggest relations"
    button.click()
    wait.until(lambda d: renders(d) > before)
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    wait.until(ec.invisibility_of_element_located((By.ID, "data_form")))


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def clean(driver: Any, step: str) -> None:
    assert problems(driver) == [], step
    assert violations(driver) == [], step


def test_annotator_presses_the_button(driver: Any, live: LiveServer, camp: Camp,
                                      shots: Callable[[str], Path]) -> None:
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PROBE_JS})
    doc = camp.doc["alice"]
    ann = camp.root / "phase1" / "alice" / f"{doc}.ann"
    wait = log_in(driver, live, "alice", camp.passwords["alice"])
    open_document(driver, wait, "phase1/alice", doc)
    clean(driver, "open")

    # the annotator corrects the entity the build mistyped
    span_dialog(driver, wait, span(driver, "T1"))
    driver.find_element(By.ID, "span_Genomic_variation").click()
    ok(driver, wait, "span_form")
    assert lines(ann) == ENTITIES
    clean(driver, "retype the entity")

    # the button: the suggestions are drawn at once
    press(driver, wait)
    shots("01-suggested")
    wait.until(lambda d: arcs(d) == [("T1", "increases", "T2"), ("T3", "treats", "T2")])
    assert lines(ann) == ENTITIES + SUGGESTED
    assert any(m == ("comment", "2 relations suggested.") for m in messages(driver))
    clean(driver, "press")

    # Ctrl-Z takes the press back
    before = renders(driver)
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("z").key_up(Keys.CONTROL).perform()
    wait.until(lambda d: renders(d) > before)
    wait.until(lambda d: arcs(d) == [])
    assert lines(ann) == ENTITIES
    clean(driver, "Ctrl-Z")

    # pressed again, the suggestions come back; one retyped, the other deleted
    press(driver, wait)
    wait.until(lambda d: arcs(d) == [("T1", "increases", "T2"), ("T3", "treats", "T2")])
    assert lines(ann) == ENTITIES + SUGGESTED
    arc_dialog(driver, wait, arc_label(driver, "T1", "increases", "T2"))
    driver.find_element(By.ID, "arc_isAssociatedWith").click()
    ok(driver, wait, "arc_form")
    assert lines(ann) == [*ENTITIES, "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t", "R2\ttreats Arg1:T3 Arg2:T2\t"]
    clean(driver, "retype a suggestion")
    arc_dialog(driver, wait, arc_label(driver, "T3", "treats", "T2"))
    delete(driver, wait, "arc_form_delete")
    after_edits = lines(ann)
    assert after_edits == [*ENTITIES, "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t"]
    clean(driver, "delete a suggestion")
    shots("02-retyped-deleted")

    # pressed again: nothing suggested again, no byte changed
    journal = Journal(camp.root)
    n_lines = len(journal.entries())
    press(driver, wait)
    assert any(m == ("comment", "No new relation to suggest here.") for m in messages(driver))
    assert arcs(driver) == [("T1", "isAssociatedWith", "T2")]
    assert lines(ann) == after_edits
    clean(driver, "press again")
    shots("03-no-repeat")

    # the journal: one line per write, the presses with the scorer's version
    entries = journal.entries()
    assert len(entries) == n_lines
    key = f"phase1/alice/{doc}"
    mine = [e for e in entries if e.document == key]
    assert [e.action for e in mine] == ["createSpan", "tag", "undo", "tag", "createArc", "deleteArc"]
    raw = [json.loads(x) for x in journal.log_bytes().splitlines()]
    scorers = [x.get("scorer") for x in raw if x["document"] == key]
    version = live.app.suggester.version
    assert scorers == [None, version, version, version, None, None]
    assert journal.content(mine[-1].sha256).decode().splitlines() == after_edits
    # the records: the first press taken back, the second's two suggestions
    recs = read_records(records_path(camp.root, "phase1/alice", doc))
    assert [(r["type"], r["arg1"], r["arg2"], r["scorer"]) for r in recs] == [
        ("increases", (((12, 21),), "Genomic_variation"), (((43, 51),), "Disease"), version),
        ("treats", (((57, 68),), "Chemical"), (((43, 51),), "Disease"), version)]
    assert {r["sha256"] for r in recs} == {mine[3].sha256}
    alice = next(r for r in campaign_status(camp.root)["rows"] if r["person"] == "alice" and r["phase"] == 1)
    assert alice["suggestions"] == {"kept": 0, "retyped": 1, "deleted": 1}
    assert TEXT in (camp.root / "phase1" / "alice" / f"{doc}.txt").read_text(encoding="utf-8")
