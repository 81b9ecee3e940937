"""Smoke test in brat's own web client (headless Debian Chromium driven by Selenium) against a live
``campaign serve``: log in through brat's login dialog, open a document from brat's collection browser,
create an entity and a relation with a note in brat's dialogs, and check brat's messages (0 errors or
warnings) and the ``.ann`` written.  One browser per module; a screenshot is saved on failure.

Covers: pipeline.campaign.status, pipeline.serve.app
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.campaign.status import campaign_status
from pipeline.serve.app import ServeApp
from tests.serve.browser import (
    ActionChains,
    By,
    ec,
    log_in,
    open_document,
    problems,
    show_browser,
    wait_for_file,
)
from tests.serve.builders import Demo, build_served_campaign
from tests.serve.live import LiveServer


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return build_served_campaign(tmp_path_factory.mktemp("browser"))


@pytest.fixture(scope="module")
def live(demo: Demo) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(demo.root)) as server:
        yield server


@pytest.mark.slow  # Chromium (every browser test is slow; CI runs them)
def test_annotator_logs_in_annotates_and_sees_no_error(driver: Any, live: LiveServer, demo: Demo,
                                                        shots: Callable[[str], Path]) -> None:
    doc = demo.editable["alice"]
    ann = demo.root / "phase1" / "alice" / f"{doc}.ann"
    before = ann.read_text(encoding="utf-8")
    wait = log_in(driver, live, "alice", demo.passwords["alice"])
    # the login took the page to alice's first (and only) collection
    assert driver.execute_script("return window.location.hash") == "#/phase1/alice/"
    show_browser(driver, wait)
    wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, f"#document_select tr[data-doc='{doc}']")))
    header = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#document_select thead th")]
    assert header[1:3] == ["Document", "State"]
    shots("collection-browser")
    row = driver.find_element(By.CSS_SELECTOR, f"#document_select tr[data-doc='{doc}']")
    ActionChains(driver).double_click(row).perform()
    wait.until(lambda d: d.execute_script("return $('#svg rect[data-span-id]').length") > 0)
    assert ann.read_text(encoding="utf-8") == before  # opening changed no byte
    shots("document")

    # an entity: double-click a word, choose the type in brat's span dialog
    word = driver.find_element(By.CSS_SELECTOR, "#svg tspan[data-chunk-id='1']")  # "doses"
    ActionChains(driver).double_click(word).perform()
    wait.until(ec.visibility_of_element_located((By.ID, "span_form")))
    driver.find_element(By.ID, "span_Phenotype").click()
    driver.find_element(By.ID, "span_form-ok").click()
    wait.until(lambda d: d.execute_script("return $('#svg rect[data-span-id]').length") == 3)
    text = wait_for_file(ann, "Phenotype 9 14")
    assert "T3\tPhenotype 9 14\tdoses" in text

    # a relation: drag from Warfarin to doses, choose its type and write a note in brat's arc dialog
    source = driver.find_element(By.CSS_SELECTOR, "#svg rect[data-span-id='T1']")
    target = driver.find_element(By.CSS_SELECTOR, "#svg rect[data-span-id='T3']")
    ActionChains(driver).move_to_element(source).click_and_hold().move_by_offset(20, 0) \
        .move_to_element(target).release().perform()
    wait.until(ec.visibility_of_element_located((By.ID, "arc_form")))
    driver.find_element(By.ID, "arc_isAssociatedWith").click()
    driver.find_element(By.ID, "arc_notes").send_keys("hyp | seen in one cohort")
    shots("relation-dialog")
    driver.find_element(By.ID, "arc_form-ok").click()
    text = wait_for_file(ann, "AnnotatorNotes R1")
    shots("annotated")
    lines = text.splitlines()
    assert lines[: len(before.splitlines())] == before.splitlines()
    assert "R1\tisAssociatedWith Arg1:T1 Arg2:T3\t" in lines
    assert "#1\tAnnotatorNotes R1\thyp | seen in one cohort" in lines
    assert problems(driver) == []
    # the campaign commands read what the served brat wrote
    row = next(r for r in campaign_status(demo.root)["rows"] if r["person"] == "alice" and r["phase"] == 1)
    assert row["problems"] == [] and row["edited"] >= 1 and row["held_back"] == 0


@pytest.mark.slow  # a second flow in Chromium
def test_senior_signs_off_a_document(driver: Any, live: LiveServer, demo: Demo,
                                     shots: Callable[[str], Path]) -> None:
    ann = demo.root / "phase2" / "dave" / f"{demo.merged}.ann"
    wait = log_in(driver, live, "dave", demo.passwords["dave"])
    open_document(driver, wait, "phase2/dave", demo.merged)
    spans = driver.execute_script("return $('#svg rect[data-span-id]').length")
    word = driver.find_element(By.CSS_SELECTOR, "#svg tspan[data-chunk-id='3']")  # "lower"
    ActionChains(driver).double_click(word).perform()
    wait.until(ec.visibility_of_element_located((By.ID, "span_form")))
    driver.find_element(By.ID, "span_Done").click()
    shots("done-dialog")
    driver.find_element(By.ID, "span_form-ok").click()
    wait.until(lambda d: d.execute_script("return $('#svg rect[data-span-id]').length") == spans + 1)
    text = wait_for_file(ann, "\tDone 20 25\tlower")
    assert "\tDone 20 25\tlower" in text
    shots("signed-off")
    assert problems(driver) == []
    # the listing is fetched again after the save that added Done (pgx/campaign.js): no reload needed
    show_browser(driver, wait)
    selector = f"#document_select tr[data-doc='{demo.merged}']"
    wait.until(lambda d: "done" in d.find_element(By.CSS_SELECTOR, selector).text.split())
    status = next(r for r in campaign_status(demo.root)["rows"] if r["person"] == "dave" and r["phase"] == 2)
    assert status["problems"] == [] and status["done"] >= 1


@pytest.mark.slow  # opens every collection in Chromium
def test_manager_reads_every_collection_without_error(driver: Any, live: LiveServer, demo: Demo,
                                                      shots: Callable[[str], Path]) -> None:
    wait = log_in(driver, live, "erin", demo.passwords["erin"])
    before = {p: p.read_bytes() for p in demo.root.rglob("*.ann")}
    open_document(driver, wait, "phase2/dave", demo.merged)
    shots("phase2")
    assert problems(driver) == []
    assert {p: p.read_bytes() for p in demo.root.rglob("*.ann")} == before
