"""No script from a link (issue 35, item 1), in brat's own web client (headless Debian Chromium, Selenium)
against a live ``campaign serve`` of the demo campaign.

A crafted link such as ``index.xhtml#/<img src="x" onerror="..."/>/x`` makes brat's client ask for a
collection or a document named by markup; serve refuses it and its refusal repeats the name, which brat's
client inserts as HTML.  Each link is opened as an annotator, the senior and the manager, on every
collection each of them has: ``img`` and ``svg`` with ``onerror``/``onload``, ``javascript:`` URLs, the
entity-encoded and pre-encoded forms, in the collection part and in the document part of the hash; markup
in the action, collection and document a request sends through brat's own ajax module.  For each: no
script ran, the markup is shown as text (no element made of it), 0 ``securitypolicyviolation`` events (a
listener installed before any script of the page runs), and no byte of the campaign changed.

Then each person opens every document of every collection they have: 0 brat error or warning messages and
0 policy violations, so the Content-Security-Policy leaves brat's client working.

Covers: pipeline.campaign.users, pipeline.serve.app, pipeline.serve.policy
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from bench.serve_browser import HOOK_JS, open_all
from pipeline.campaign.users import UserStore
from pipeline.serve.app import ServeApp
from pipeline.serve.policy import Policy
from tests.serve.browser import WebDriverWait, log_in, messages
from tests.serve.builders import Demo, build_served_campaign, tree_digest
from tests.serve.live import LiveServer

pytestmark = pytest.mark.slow

# runs in every new document before the page's own scripts (Chrome DevTools protocol)
PROBE_JS = """
window.__pgxRan = 0;
window.__pgxViolations = [];
document.addEventListener('securitypolicyviolation', function(e) {
  window.__pgxViolations.push([e.violatedDirective, e.blockedURI, e.sample].join(' '));
}, true);
"""
RAN = "window.__pgxRan=1"  # what a payload runs: no '/', '?' or '#', which brat's hash parsing would split on
# markup made of a payload: an element carrying an event handler, a frame, an object, a javascript: link
MADE_JS = ("return document.querySelectorAll('[onerror], [onload], [onclick], iframe, object, embed, "
           "a[href^=\"javascript\" i]').length")
# the collection part of the hash may hold '/' (then the markup can be well-formed XML, as brat's XHTML page needs)
IN_COLLECTION = [
    f'<img src="x" onerror="{RAN}"/>',
    f'<svg xmlns="http://www.w3.org/2000/svg" onload="{RAN}"/>',
    f'<img src="x" onerror="{RAN}"></img>',
    f'<iframe src="javascript:{RAN}"/>',
    f'<a href="javascript:{RAN}">click</a>',
    f'&lt;img src="x" onerror="{RAN}"/&gt;',
    f'&#60;img src="x" onerror="{RAN}"/&#62;',
    urllib.parse.quote(f'<img src="x" onerror="{RAN}"/>', safe=""),
    urllib.parse.quote(urllib.parse.quote(f'<img src="x" onerror="{RAN}"/>', safe=""), safe=""),
]
# a document name has no '/'
IN_DOCUMENT = [
    f'<img src="x" onerror="{RAN}">',
    f"<svg onload={RAN}>",
    f'<a href="javascript:{RAN}">click',
    f'&lt;img src="x" onerror="{RAN}"&gt;',
    urllib.parse.quote(f'<img src="x" onerror="{RAN}">', safe=""),
]
PEOPLE = ("alice", "dave", "erin")  # an annotator, the senior, the manager


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return build_served_campaign(tmp_path_factory.mktemp("xss"))


@pytest.fixture(scope="module")
def live(demo: Demo) -> Iterator[LiveServer]:
    with LiveServer(ServeApp(demo.root)) as server:
        yield server


@pytest.fixture(scope="module")
def probed(driver: Any) -> Any:
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PROBE_JS})
    return driver


def collections(demo: Demo, person: str) -> list[str]:
    return sorted(Policy(demo.root).collections(UserStore(demo.root).get(person)))


def violations(driver: Any) -> list[str]:
    return list(driver.execute_script("return window.__pgxViolations || ['probe missing']"))


def check_page(driver: Any, shown: str, where: str) -> None:
    """The refusal repeating ``shown`` is on the page as text; nothing ran, nothing was made of it."""
    def settled(d: Any) -> bool:
        return (any(shown in text for _, text in messages(d)) or d.execute_script("return window.__pgxRan") != 0
                or d.execute_script(MADE_JS) != 0)

    WebDriverWait(driver, 30).until(settled, message=f"{where}: {shown!r} not shown")
    time.sleep(0.3)  # an image's error or a frame's load comes after the message is inserted
    assert driver.execute_script("return window.__pgxRan") == 0, f"{where}: the link's script ran"
    assert driver.execute_script(MADE_JS) == 0, f"{where}: an element was made of the link's markup"
    assert violations(driver) == [], where
    assert any(shown in text for _, text in messages(driver)), f"{where}: {shown!r} not shown as text"


def echoed(collection: str) -> str:
    """A collection as serve's refusal repeats it: its non-empty components, between slashes."""
    return "/" + "/".join(p for p in collection.split("/") if p) + "/"


def open_link(driver: Any, live: LiveServer, fragment: str) -> None:
    driver.get("about:blank")  # a new document each time (only the hash differs between links)
    driver.get(f"{live.origin}/index.xhtml#{fragment}")


@pytest.mark.parametrize("person", PEOPLE)
def test_a_crafted_link_runs_no_script(probed: Any, live: LiveServer, demo: Demo, person: str) -> None:
    driver = probed
    before = tree_digest(demo.root)
    log_in(driver, live, person, demo.passwords[person])
    assert violations(driver) == []
    checked = 0
    for payload in IN_COLLECTION:
        decoded = urllib.parse.unquote(payload)  # brat's client decodes the hash (decodeURIComponent)
        # the issue's own link: a collection at the root, then one under each of the person's collections
        for prefix in ["", *collections(demo, person)]:
            base = f"/{prefix}" if prefix else ""
            open_link(driver, live, f"{base}/{payload}/x")
            check_page(driver, f"Access denied: {echoed(f'{base}/{decoded}/')} is not one of your collections.",
                       f"{person} {base}/{payload}/x")
            checked += 1
    for payload in IN_DOCUMENT:
        decoded = urllib.parse.unquote(payload)
        for coll in collections(demo, person):
            open_link(driver, live, f"/{coll}/{payload}")
            check_page(driver, f"There is no document {decoded} in /{coll}/.", f"{person} /{coll}/{payload}")
            checked += 1
    assert checked == len(IN_COLLECTION) * (1 + len(collections(demo, person))) \
        + len(IN_DOCUMENT) * len(collections(demo, person))
    assert tree_digest(demo.root) == before


@pytest.mark.parametrize("person", PEOPLE)
def test_markup_in_every_echoed_value_is_shown_as_text(probed: Any, live: LiveServer, demo: Demo,
                                                       person: str) -> None:
    """The action, collection and document of a request sent through brat's own ajax module (as brat's
    client sends every request), each holding markup; every refusal that repeats one is shown as text."""
    driver = probed
    before = tree_digest(demo.root)
    log_in(driver, live, person, demo.passwords[person])
    coll = f"/{collections(demo, person)[0]}/"
    markup = f'<img src="x" onerror="{RAN}"/>'
    requests = [
        ({"action": markup, "collection": coll}, f"Unknown action {markup}."),
        ({"action": "getCollectionInformation", "collection": f"/{markup}/"},
         f"Access denied: /{markup}/ is not one of your collections."),
        ({"action": "getDocument", "collection": coll, "document": markup.replace("/", "")},
         f"There is no document {markup.replace('/', '')} in {coll}."),
        ({"action": "createSpan", "collection": coll, "document": markup.replace("/", ""), "offsets": "[[0,1]]",
          "type": "Chemical", "attributes": "{}"}, f"There is no document {markup.replace('/', '')} in {coll}."),
    ]
    for params, shown in requests:
        driver.execute_script("dispatcher.post('ajax', [arguments[0], function() {}]);", params)
        check_page(driver, shown, f"{person} {params}")
    assert tree_digest(demo.root) == before


@pytest.mark.parametrize("person", ["alice", "bob", "dave", "erin"])
def test_every_collection_opens_under_the_policy_without_message(probed: Any, live: LiveServer, demo: Demo,
                                                                 person: str) -> None:
    """Every document of every collection the person has, opened in brat's client: 0 error or warning
    messages, 0 policy violations, no byte changed."""
    driver = probed
    before = tree_digest(demo.root)
    log_in(driver, live, person, demo.passwords[person])
    driver.execute_script(HOOK_JS)
    opened = 0
    for coll in collections(demo, person):
        names = sorted(p.stem for p in (demo.root / coll).glob("*.txt"))
        seen, _ = open_all(driver, coll, names)
        assert [m for m in seen if m[1] in ("error", "warning")] == [], (person, coll)
        opened += len(names)
    assert opened > 0
    assert [m for m in messages(driver) if m[0] in ("error", "warning")] == []
    assert violations(driver) == []
    assert tree_digest(demo.root) == before
