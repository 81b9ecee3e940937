"""brat's traps for people (issue 35, item 7), fixed by the project's one same-origin script
(``pgx/campaign.js``), shown in brat's own web client (headless Debian Chromium, Selenium) against a live
``campaign serve`` of the demo campaign:

- the State column follows a save that adds or removes ``Done`` or ``Discard``, without a reload;
- a second person who logs in on the same tab lands on their own first collection (not on "Access denied");
- the Login button is in sight whenever nobody is logged in (not only while the pointer is over the bar);
- the Guide link opens the collection's guide rendered (tables kept, raw HTML shown as text, comments
  dropped), with no script run and no policy violation.

Covers: pipeline.campaign.guide, pipeline.serve.app
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.campaign.guide import GUIDE_FILE
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
    show_browser,
    wait_for_file,
)
from tests.serve.builders import Demo, build_served_campaign
from tests.serve.live import LiveServer
from tests.serve.test_browser_flows import choose
from tests.serve.test_browser_xss import PROBE_JS, violations

pytestmark = pytest.mark.slow

GUIDE_EXTRA = """
## What the renderer keeps

<!-- a remark for the manager only -->
| Mark | Means |
|------|-------|
| `Done` | finished |

Raw markup stays text: <script>window.__pgxRan=1</script> and <img src="x" onerror="window.__pgxRan=1">.

[a link that runs nothing](javascript:window.__pgxRan=1)
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    demo = build_served_campaign(tmp_path_factory.mktemp("client"))
    guide = demo.root / "phase1" / "alice" / GUIDE_FILE
    guide.write_text(guide.read_text(encoding="utf-8") + GUIDE_EXTRA, encoding="utf-8")
    return demo


@pytest.fixture(scope="module")
def live(demo: Demo) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(demo.root)) as server:
        yield server


@pytest.fixture(scope="module")
def probed(driver: Any) -> Any:
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PROBE_JS})
    return driver


def state(driver: Any, wait: WebDriverWait, document: str, expected: str) -> str:
    """The State shown for a document in brat's collection browser, once it is ``expected`` (or after 10 s)."""
    show_browser(driver, wait)
    selector = f"#document_select tr[data-doc='{document}'] > *"  # brat's rows: th (icon), th (name), td ...

    def cell(d: Any) -> str:
        header = [th.text for th in d.find_elements(By.CSS_SELECTOR, "#document_select thead th")]
        cells = [td.text for td in d.find_elements(By.CSS_SELECTOR, selector)]
        column = header.index("State") if "State" in header else -1
        return cells[column] if 0 <= column < len(cells) else ""

    try:
        WebDriverWait(driver, 10).until(lambda d: cell(d) == expected)
    except Exception:  # noqa: BLE001 - the assertion below names what was shown
        pass
    shown = cell(driver)
    driver.find_element(By.ID, "collection_browser-cancel").click()
    wait.until(ec.invisibility_of_element_located((By.ID, "collection_browser")))
    return shown


def ok(driver: Any, wait: WebDriverWait, form: str) -> None:
    before = renders(driver)
    driver.find_element(By.ID, f"{form}-ok").click()
    wait.until(ec.invisibility_of_element_located((By.ID, form)))
    wait.until(lambda d: renders(d) > before)


def word_dialog(driver: Any, wait: WebDriverWait, chunk: int) -> None:
    word = driver.find_element(By.CSS_SELECTOR, f"#svg tspan[data-chunk-id='{chunk}']")
    x = -int(word.rect["width"] / 4)
    ActionChains(driver).move_to_element_with_offset(word, x, 0).double_click().perform()
    wait.until(ec.visibility_of_element_located((By.ID, "span_form")))


def test_the_state_column_follows_done_and_discard(probed: Any, live: LiveServer, demo: Demo,
                                                   shots: Callable[[str], Path]) -> None:
    driver = probed
    doc = demo.editable["alice"]
    ann = demo.root / "phase1" / "alice" / f"{doc}.ann"
    wait = log_in(driver, live, "alice", demo.passwords["alice"])
    open_document(driver, wait, "phase1/alice", doc)
    assert state(driver, wait, doc, "to do") == "to do"

    word_dialog(driver, wait, 1)
    driver.find_element(By.ID, "span_Done").click()
    ok(driver, wait, "span_form")
    text = wait_for_file(ann, "\tDone ")
    done_id = next(line.split("\t")[0] for line in text.splitlines() if "\tDone " in line)
    assert state(driver, wait, doc, "done") == "done"
    shots("done")

    # the mark removed again: to do
    before = renders(driver)
    ActionChains(driver).double_click(
        driver.find_element(By.CSS_SELECTOR, f"#svg rect[data-span-id='{done_id}']")).perform()
    wait.until(ec.visibility_of_element_located((By.ID, "span_form")))
    driver.find_element(By.ID, "span_form_delete").click()
    wait.until(ec.alert_is_present()).accept()
    wait.until(lambda d: renders(d) > before)
    wait_for_file(ann, "\tDone ", present=False)
    assert state(driver, wait, doc, "to do") == "to do"

    # discarded, with its Reason
    word_dialog(driver, wait, 1)
    driver.find_element(By.ID, "span_Discard").click()
    choose(driver, wait, "Reason", "scope")
    ok(driver, wait, "span_form")
    wait_for_file(ann, "\tDiscard ")
    assert state(driver, wait, doc, "discarded") == "discarded"
    shots("discarded")
    assert problems(driver) == [] and violations(driver) == []


def login_button_in_sight(driver: Any) -> bool:
    """brat's Login button is shown, in the top bar, with the pointer away from the bar."""
    ActionChains(driver).move_to_element(driver.find_element(By.TAG_NAME, "body")).perform()
    time.sleep(1.5)  # brat slides its menu up 0.5 s after the pointer leaves the bar
    button = driver.find_element(By.ID, "auth_button")
    return bool(button.is_displayed() and button.get_attribute("value") == "Login"
                and driver.execute_script("return $('#auth_button').closest('#mainHeader').length") == 1)


def test_a_second_person_on_the_same_tab_lands_on_their_collection(probed: Any, live: LiveServer, demo: Demo,
                                                                   shots: Callable[[str], Path]) -> None:
    driver = probed
    wait = log_in(driver, live, "alice", demo.passwords["alice"])
    assert driver.execute_script("return window.location.hash") == "#/phase1/alice/"
    # while someone is logged in, the button (Logout) is back in brat's menu
    assert driver.execute_script("return $('#auth_button').closest('#pulldown').length") == 1
    open_document(driver, wait, "phase1/alice", demo.editable["alice"])
    open_menu(driver)
    wait.until(ec.element_to_be_clickable((By.ID, "auth_button"))).click()  # Logout alice
    wait.until(lambda d: d.find_element(By.ID, "auth_button").get_attribute("value") == "Login")
    assert login_button_in_sight(driver)
    shots("logged-out")

    # bob, on the same tab: the Login button is clicked without going over the menu
    driver.find_element(By.ID, "auth_button").click()
    wait.until(ec.visibility_of_element_located((By.ID, "auth_user"))).send_keys("bob")
    driver.find_element(By.ID, "auth_pass").send_keys(demo.passwords["bob"])
    driver.find_element(By.ID, "auth_form-ok").click()
    wait.until(lambda d: d.execute_script("return window.location.hash") == "#/phase1/bob/")
    wait.until(lambda d: any('Welcome back, user "bob"' in m[1] for m in messages(d)))
    show_browser(driver, wait)
    row = f"#document_select tr[data-doc='{demo.editable['bob']}']"
    assert wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, row))
    shots("bob")
    time.sleep(0.5)
    assert problems(driver) == [] and violations(driver) == []


def test_the_login_button_is_in_sight_for_a_visitor(probed: Any, live: LiveServer) -> None:
    driver = probed
    driver.delete_all_cookies()
    driver.get(f"{live.origin}/")
    wait = WebDriverWait(driver, 30)
    wait.until(ec.visibility_of_element_located((By.ID, "tutorial-ok"))).click()
    wait.until(ec.element_to_be_clickable((By.ID, "collection_browser-cancel"))).click()
    assert login_button_in_sight(driver)
    assert violations(driver) == []


def test_the_guide_link_opens_the_rendered_guide(probed: Any, live: LiveServer, demo: Demo,
                                                 shots: Callable[[str], Path]) -> None:
    driver = probed
    wait = log_in(driver, live, "alice", demo.passwords["alice"])
    open_document(driver, wait, "phase1/alice", demo.editable["alice"])
    page = driver.current_window_handle
    open_menu(driver)
    wait.until(ec.element_to_be_clickable((By.ID, "pgx_guide_link"))).click()
    wait.until(lambda d: len(d.window_handles) == 2)
    driver.switch_to.window(next(h for h in driver.window_handles if h != page))
    try:
        wait.until(ec.visibility_of_element_located((By.TAG_NAME, "h1")))
        href = driver.current_url
        assert href == f"{live.origin}/guide/phase1/alice/"
        assert driver.find_element(By.TAG_NAME, "h1").text == "Annotator guide: alice, phase 1"
        last = driver.find_elements(By.TAG_NAME, "table")[-1]  # the annotator guide has its own tables first
        assert [td.text for td in last.find_elements(By.TAG_NAME, "td")] == ["Done", "finished"]
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "<script>window.__pgxRan=1</script>" in body and '<img src="x" onerror="window.__pgxRan=1">' in body
        assert "a remark for the manager" not in driver.page_source
        link = driver.find_element(By.LINK_TEXT, "a link that runs nothing")
        assert link.get_attribute("href") is None
        assert driver.execute_script("return document.querySelectorAll('script, img, [onerror]').length") == 0
        shots("guide")
    finally:
        driver.close()
        driver.switch_to.window(page)
    # the same page in the probed tab: no script ran, no policy violation
    driver.get(href)
    wait.until(ec.visibility_of_element_located((By.TAG_NAME, "table")))
    assert driver.execute_script("return window.__pgxRan") == 0 and violations(driver) == []
