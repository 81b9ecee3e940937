"""Shared helpers of the browser tests: brat's own web client in headless Debian Chromium (Selenium), driven
as a person does (brat's dialogs, clicks, drags), against a live ``campaign serve``.

Importing this module skips the importing test module when Debian's ``chromium`` or ``chromium-driver`` is
missing (``.ci/run`` installs them)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.live import LiveServer

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    pytest.skip(f"browser tests need Debian's chromium and chromium-driver ({CHROMIUM}, {CHROMEDRIVER}); "
                ".ci/run installs them", allow_module_level=True)

from selenium import webdriver  # noqa: E402 - only once chromium is known to be there
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,900")
#: brat's client keeps every message it showed in #messagepullup, one div whose class is its kind
MESSAGES_JS = "return $('#messagepullup').children().map(function(){return [[this.className, this.textContent]]}).get()"
SPANS_JS = "return $('#svg rect[data-span-id]').length"
#: counts brat's ``doneRendering`` events (one per drawing of the document), in ``window.__pgxRendered``
RENDER_HOOK_JS = ("if (window.__pgxRendered === undefined) { window.__pgxRendered = 0; "
                  "dispatcher.on('doneRendering', window, function() { window.__pgxRendered += 1; }); }")

__all__ = ["ActionChains", "By", "WebDriverWait", "ec", "new_driver", "screenshots", "messages", "problems",
           "open_menu", "renders", "log_in", "show_browser", "open_document", "wait_for_file", "span_count"]


def new_driver(profile: Path) -> Any:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def screenshots(driver: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[str], Path]]:
    """Body of a ``shots`` fixture: ``shots(name)`` saves a screenshot in the test's tmp_path, and
    ``failure.png`` is saved when the test fails."""
    out = tmp_path / "screenshots"
    out.mkdir()
    print(f"screenshots in {out}")  # shown with a failure

    def shot(name: str) -> Path:
        path = out / f"{name}.png"
        driver.save_screenshot(str(path))
        return path

    failed_before = request.session.testsfailed
    yield shot
    if request.session.testsfailed > failed_before:
        shot("failure")


def messages(driver: Any) -> list[tuple[str, str]]:
    return [tuple(m) for m in driver.execute_script(MESSAGES_JS)]


def problems(driver: Any) -> list[tuple[str, str]]:
    """brat's error and warning messages shown so far in this page."""
    return [m for m in messages(driver) if m[0] in ("error", "warning")]


def span_count(driver: Any) -> int:
    return int(driver.execute_script(SPANS_JS))


def renders(driver: Any) -> int:
    """How many times brat drew the document since the page was loaded (see :func:`open_document`)."""
    return int(driver.execute_script("return window.__pgxRendered || 0"))


def open_menu(driver: Any) -> None:
    """brat's menu slides down when the pointer is over the header."""
    ActionChains(driver).move_to_element(driver.find_element(By.ID, "mainHeader")).perform()


def log_in(driver: Any, live: LiveServer, person: str, password: str) -> WebDriverWait:
    """Through brat's login dialog, from a fresh visit (brat's tutorial and collection browser closed)."""
    wait = WebDriverWait(driver, 30)
    driver.delete_all_cookies()
    driver.get(f"{live.origin}/")
    tutorial = wait.until(ec.visibility_of_element_located((By.ID, "tutorial-ok")))  # brat greets a visitor
    tutorial.click()
    wait.until(ec.element_to_be_clickable((By.ID, "collection_browser-cancel"))).click()
    wait.until(ec.invisibility_of_element_located((By.ID, "collection_browser")))
    open_menu(driver)
    wait.until(ec.element_to_be_clickable((By.ID, "auth_button"))).click()
    wait.until(ec.visibility_of_element_located((By.ID, "auth_user"))).send_keys(person)
    driver.find_element(By.ID, "auth_pass").send_keys(password)
    driver.find_element(By.ID, "auth_form-ok").click()
    # the page reloads once logged in; then brat greets the person back
    wait.until(lambda d: any("Welcome back" in m[1] for m in messages(d)))
    wait.until(lambda d: "Logout" in (d.find_element(By.ID, "auth_button").get_attribute("value") or ""))
    return wait


def show_browser(driver: Any, wait: WebDriverWait) -> None:
    """brat's collection browser (brat opens it by itself on a page without a document)."""
    time.sleep(0.5)
    if not driver.find_element(By.ID, "collection_browser").is_displayed():
        open_menu(driver)
        wait.until(ec.element_to_be_clickable((By.ID, "collection_browser_button"))).click()
    wait.until(ec.visibility_of_element_located((By.ID, "collection_browser")))


def open_document(driver: Any, wait: WebDriverWait, collection: str, document: str) -> None:
    """Through brat's collection browser: the person's collection (unless brat already shows it), then the
    document; from then on :func:`renders` counts brat's drawings of the page."""
    show_browser(driver, wait)
    driver.execute_script(RENDER_HOOK_JS)
    here = driver.find_elements(By.CSS_SELECTOR, f"#document_select tr[data-doc='{document}']")
    if not here and not driver.find_elements(By.CSS_SELECTOR, f"#document_select tr[data-doc='{collection}/']"):
        # another collection is shown (a login opens the person's first one): up to the root listing
        up = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, "#document_select tr[data-doc='../']")))
        ActionChains(driver).double_click(up).perform()
    if not here:
        row = wait.until(ec.element_to_be_clickable(
            (By.CSS_SELECTOR, f"#document_select tr[data-doc='{collection}/']")))
        ActionChains(driver).double_click(row).perform()
    row = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, f"#document_select tr[data-doc='{document}']")))
    ActionChains(driver).double_click(row).perform()
    wait.until(lambda d: span_count(d) > 0)


def wait_for_file(path: Path, needle: str, seconds: float = 20, present: bool = True) -> str:
    """``path``'s text once ``needle`` is in it (or, with ``present=False``, once it is gone)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = path.read_text(encoding="utf-8")
        if (needle in text) == present:
            return text
        time.sleep(0.1)
    return path.read_text(encoding="utf-8")
