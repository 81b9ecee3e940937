"""Every document of given collections opened in brat's own web client (headless Debian Chromium) through
``campaign serve``, logged in as a manager; brat's messages counted per collection (issue 22).

``python bench/serve_browser.py CAMPAIGN_DIR --user MANAGER [--collections phase1/ann1 final ...]`` reads
the manager's password from the environment variable ``PGX_SERVE_PASSWORD`` (never from the command
line); without ``--collections``, every collection the manager reaches.  ``--demo`` writes the demo
campaign of ``tests/serve/builders.py`` (batches, users, review, finalize; erin is its manager) in a
temporary directory and measures that.  ``--collection-dir DIR`` measures any brat collection (e.g.
``../shared/data/pgxcorpus-dev/gold``): it is copied as ``final/`` of a throwaway campaign in a temporary
directory (with the project's brat configuration when it has none), whose manager the benchmark creates.

For each document the page's location is set to ``#/COLLECTION/DOCUMENT`` (brat's client loads it) and the
benchmark waits for brat's ``doneRendering`` event; brat keeps every message it showed in
``#messagepullup`` (one element per message, its class the kind: error, warning, comment).  Printed: per
collection, documents opened, error and warning messages (0 expected), other messages, seconds; and the
first messages met.  The served collections are checked byte for byte before and after (opening a
document must change nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.campaign.layout import MANIFEST_FORMAT

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,900")
HOOK_JS = ("window.__pgxRendered = 0; dispatcher.on('doneRendering', window, function() "
           "{ window.__pgxRendered += 1; });")
MESSAGES_JS = "return $('#messagepullup').children().map(function(){return [[this.className, this.textContent]]}).get()"


def digest(paths: list[Path]) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for d in paths for p in sorted(d.iterdir())
            if p.is_file()}


def throwaway_campaign(collection: Path, tmp: Path) -> tuple[Path, str, str]:
    """A campaign in ``tmp`` whose ``final/`` is a copy of ``collection``, and its manager's login."""
    import json
    import shutil

    from pipeline.brat.conf import write_conf_files
    from pipeline.campaign.users import create_users
    from pipeline.schema import load_schema

    campaign = tmp / "campaign"
    (campaign / "phase1").mkdir(parents=True)
    (campaign / "campaign.json").write_text(json.dumps({"format": MANIFEST_FORMAT, "people": [], "documents": []}),
                                            encoding="utf-8")
    final = campaign / "final"
    final.mkdir()
    for path in sorted(collection.iterdir()):
        if path.is_file() and path.suffix in (".txt", ".ann", ".conf"):
            shutil.copyfile(path, final / path.name)
    if not (final / "annotation.conf").exists():
        write_conf_files(final, load_schema())
    password = create_users(campaign, {"bench": ["manager"]})["bench"]
    return campaign, "bench", password


def login(driver: Any, origin: str, user: str, password: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{origin}/")
    wait = WebDriverWait(driver, 60)
    wait.until(lambda d: d.execute_script("return typeof dispatcher !== 'undefined'"))
    # brat's login request, from the page itself (the dialog is exercised by tests/serve/test_browser.py)
    driver.execute_script("dispatcher.post('ajax', [{action: 'login', user: arguments[0], password: arguments[1]}, "
                          "function(r) { window.__pgxLogin = r.exception ? 'refused' : 'ok'; }]);", user, password)
    wait.until(lambda d: d.execute_script("return window.__pgxLogin"))
    if driver.execute_script("return window.__pgxLogin") != "ok":
        raise SystemExit(f"login of {user} refused")
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")  # the page reloads
    time.sleep(1)
    wait.until(lambda d: d.execute_script("return typeof dispatcher !== 'undefined'"))
    for button in driver.find_elements(By.CSS_SELECTOR, "#tutorial-ok, #collection_browser-cancel"):
        if button.is_displayed():
            button.click()
    driver.execute_script(HOOK_JS)


def open_all(driver: Any, collection: str, names: list[str]) -> tuple[list[tuple[str, str, str]], float]:
    from selenium.webdriver.support.ui import WebDriverWait

    seen: list[tuple[str, str, str]] = []
    started = time.monotonic()
    for name in names:
        before_count = len(driver.execute_script(MESSAGES_JS))
        rendered = driver.execute_script("return window.__pgxRendered")
        driver.execute_script("window.location.hash = arguments[0]", f"#/{collection}/{name}")
        WebDriverWait(driver, 60).until(lambda d, r=rendered: d.execute_script("return window.__pgxRendered") > r)
        time.sleep(0.05)
        for kind, text in driver.execute_script(MESSAGES_JS)[before_count:]:
            seen.append((name, kind, text))
    return seen, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("campaign_dir", type=Path, nargs="?", metavar="CAMPAIGN_DIR")
    parser.add_argument("--user", help="a person with the manager role")
    parser.add_argument("--collections", nargs="+", help="campaign-relative collections (default: all)")
    parser.add_argument("--demo", action="store_true", help="measure the demo campaign (written in a temp dir)")
    parser.add_argument("--collection-dir", type=Path, help="measure this brat collection (served as final/)")
    args = parser.parse_args()
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        raise SystemExit(f"needs Debian's chromium and chromium-driver ({CHROMIUM}, {CHROMEDRIVER})")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from bench.serve_load import start_server
    from pipeline.campaign.users import UserStore
    from pipeline.serve.policy import Policy

    tmp = Path(tempfile.mkdtemp(prefix="serve-browser-"))
    if args.collection_dir is not None:
        campaign, user, password = throwaway_campaign(args.collection_dir, tmp)
    elif args.demo:
        from tests.serve.builders import build_served_campaign

        demo = build_served_campaign(tmp)
        campaign, user, password = demo.root, "erin", demo.passwords["erin"]
    else:
        if args.campaign_dir is None or not args.user:
            parser.error("CAMPAIGN_DIR and --user are required without --demo")
        campaign, user = args.campaign_dir, args.user
        password = os.environ.get("PGX_SERVE_PASSWORD", "")
        if not password:
            parser.error("set PGX_SERVE_PASSWORD to the manager's password")
    person = UserStore(campaign).get(user)
    if person is None or "manager" not in person.roles:
        raise SystemExit(f"{user} is not a manager of {campaign}")
    owned = Policy(campaign).collections(person)
    wanted = args.collections or sorted(owned)
    missing = [c for c in wanted if c not in owned]
    if missing:
        raise SystemExit(f"not collections of the campaign the manager reaches: {', '.join(missing)}")
    dirs = [owned[c].path for c in wanted]
    before = digest(dirs)
    proc, port = start_server(campaign)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={tmp / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    rows = []
    first: list[str] = []
    try:
        login(driver, f"http://127.0.0.1:{port}", user, password)
        for collection in wanted:
            names = sorted(p.stem for p in owned[collection].path.glob("*.txt"))
            seen, seconds = open_all(driver, collection, names)
            bad = [m for m in seen if m[1] in ("error", "warning")]
            rows.append((collection, len(names), len(bad), len(seen) - len(bad), seconds))
            first += [f"{collection}/{n}: {k}: {t}" for n, k, t in bad[:5]]
    finally:
        driver.quit()
        proc.terminate()
        proc.communicate(timeout=60)
    after = digest(dirs)
    print(f"brat's messages per collection, every document opened in Chromium through campaign serve ({campaign})")
    print(f"| {'collection':<16} | documents | errors+warnings | other messages | seconds |")
    print(f"|{'-' * 18}|-----------|-----------------|----------------|---------|")
    for collection, docs, bad_count, other, seconds in rows:
        print(f"| {collection:<16} | {docs:>9} | {bad_count:>15} | {other:>14} | {seconds:>7.1f} |")
    total = sum(r[2] for r in rows)
    print(f"total: {sum(r[1] for r in rows)} documents, {total} error/warning messages; "
          f"served files changed: {sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))}")
    for line in first[:20]:
        print(f"  {line}")


if __name__ == "__main__":
    main()
