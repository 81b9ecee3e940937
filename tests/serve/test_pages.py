"""What serve writes itself (issue 35, item 1 and item 7's guides): every message it writes is escaped, and
only through ``escape_message``; every answer carries the Content-Security-Policy; brat's page holds no
inline code (its inline scripts are served, unchanged, as same-origin files; brat's file is not changed);
the guides are rendered by the ``markdown`` package with raw HTML shown as text.

Covers: pipeline.campaign.guide, pipeline.serve.app, pipeline.serve.pages, pipeline.serve.sessions
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

import pipeline.serve.app as app_module
from pipeline.campaign.guide import GUIDE_FILE
from pipeline.serve.app import CONTENT_SECURITY_POLICY, SECURITY_HEADERS, ServeApp, escape_message
from pipeline.serve.pages import render_guide, rewrite_index, safe_url
from pipeline.serve.sessions import SessionStore
from tests.serve.builders import Client, Demo, Reply, build_served_campaign, tree_digest

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
MARKUP = '<img src="x" onerror="alert(1)"/>'


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return build_served_campaign(tmp_path_factory.mktemp("pages"))


def test_the_policy_is_the_issue_s_and_in_the_security_headers() -> None:
    assert CONTENT_SECURITY_POLICY == CSP
    assert ("Content-Security-Policy", CSP) in SECURITY_HEADERS


def test_every_answer_carries_the_policy(demo: Demo) -> None:
    app = ServeApp(demo.root, sessions=SessionStore(max_failures=2, base_delay=60), max_body=4096)
    client = Client(app)
    replies: dict[str, Reply] = {
        "page": client.request("GET", "/"),
        "index": client.request("GET", "/index.xhtml"),
        "script": client.request("GET", "/pgx/brat-1.js"),
        "own script": client.request("GET", "/pgx/campaign.js"),
        "static": client.request("GET", "/client/src/dispatcher.js"),
        "404": client.request("GET", "/nothing-here"),
        "405": client.request("PUT", "/"),
        "guide before login": client.request("GET", "/guide/"),
        "whoami": client.ajax("whoami"),
        "refused": client.ajax("getDocument", collection="/phase1/bob/", document="x"),
        "413": client.request("POST", "/ajax.cgi", body=b"action=whoami&x=" + b"a" * 5000),
        "wrong password": client.login("alice", "wrong"),
    }
    replies["throttled"] = client.login("alice", "wrong")
    replies["throttled again"] = client.login("alice", "wrong")
    other = Client(app)
    replies["login"] = other.login("bob", demo.passwords["bob"])
    replies["listing"] = other.ajax("getCollectionInformation", collection="/phase1/bob/")
    name = demo.editable["bob"]
    replies["document"] = other.ajax("getDocument", collection="/phase1/bob/", document=name)
    replies["download"] = other.ajax("downloadFile", collection="/phase1/bob/", document=name, extension="txt")
    replies["guides"] = other.request("GET", "/guide/")
    replies["guide"] = other.request("GET", "/guide/phase1/bob/")
    replies["logout"] = other.ajax("logout")
    assert replies["413"].status.startswith("413") and replies["download"].body
    for what, reply in replies.items():
        assert reply.header("Content-Security-Policy") == CSP, what


def test_brat_s_page_holds_no_inline_code(demo: Demo) -> None:
    app = ServeApp(demo.root)
    source = app.brat.root / "index.xhtml"
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    page = Client(app).request("GET", "/").body.decode("utf-8")
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert scripts and all(re.search(r'\ssrc="[^"]+"', s) for s in scripts)
    assert re.findall(r"<script\b[^>]*>(.*?)</script>", page, re.DOTALL) == [""] * len(scripts)
    assert not re.search(r"<[^>]*\son[a-z]+\s*=", re.sub(r"<!--.*?-->", "", page, flags=re.DOTALL))
    assert "javascript:" not in page
    # brat's inline scripts, moved as they are, in their order, and served from the page's own origin
    original = source.read_text(encoding="utf-8")
    inline = [body for attrs, body in re.findall(r"<script\b([^>]*)>(.*?)</script>", original, re.DOTALL)
              if "src=" not in attrs]
    assert len(inline) == 2 and "new Dispatcher()" in inline[0]
    client = Client(app)
    for number, body in enumerate(inline, 1):
        assert f'src="pgx/brat-{number}.js"' in page
        reply = client.request("GET", f"/pgx/brat-{number}.js")
        assert reply.status == "200 OK" and reply.body == body.encode("utf-8")
        assert reply.header("Content-Type") == "text/javascript; charset=utf-8"
    # the project's script after brat's boot script (its head.ready callback runs after brat's)
    assert page.index('src="pgx/brat-1.js"') < page.index('src="pgx/campaign.js"') < page.index("</head>")
    assert 'id="pgx_guide_link"' in page and "onclick" not in page
    for path in ("/pgx/brat-9.js", "/pgx/brat-1.js/", "/pgx/", "/pgx/../client/src/util.js"):
        assert client.request("GET", path).status == "404 Not Found", path
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before


def test_a_page_whose_inline_code_cannot_be_moved_is_refused() -> None:
    base = '<html><head></head><body><a id="help_link" href="x">Help</a></body></html>'
    with pytest.raises(RuntimeError, match="no Help link"):
        rewrite_index("<html><head></head></html>", "brat/index.xhtml")
    with pytest.raises(RuntimeError, match="inline code left"):
        rewrite_index(base.replace("<body>", '<body onload="go()">'), "brat/index.xhtml")
    with pytest.raises(RuntimeError, match="cannot be moved"):
        rewrite_index(base.replace("</head>", "<script>if (a &lt; b) go();</script></head>"), "brat/index.xhtml")
    page, scripts = rewrite_index(base.replace("</head>", "<script>go();</script></head>"))
    assert scripts["pgx/brat-1.js"] == b"go();" and "go();" not in page


def test_every_message_serve_writes_is_escaped(demo: Demo) -> None:
    """Markup in each request value a message of the project repeats (action, collection, document), as
    a logged-in annotator and as the manager; and the answers of login, logout, Origin and size refusals."""
    app = ServeApp(demo.root, sessions=SessionStore(max_failures=1, base_delay=60), max_body=4096)
    before = tree_digest(demo.root)
    doc = MARKUP.replace("/", "")
    shown: list[str] = []
    for person in ("alice", "erin"):
        client = Client(app)
        shown += client.login(person, demo.passwords[person]).messages
        coll = "/phase1/alice/"
        for reply in (client.ajax(MARKUP, collection=coll), client.ajax("tag", collection=coll),
                      client.ajax("getCollectionInformation", collection=f"/{MARKUP}/"),
                      client.ajax("getDocument", collection=f"/{MARKUP}/", document="x"),
                      client.ajax("getDocument", collection=coll, document=doc),
                      client.ajax("createSpan", collection=coll, document=doc, offsets="[[0,1]]", type="Chemical"),
                      client.ajax("whoami")):
            shown += reply.messages
        shown += client.ajax("logout").messages
    shown += Client(app, origin=f"http://{MARKUP}").ajax("createSpan", collection="/phase1/alice/").messages
    shown += Client(app).request("POST", "/ajax.cgi", body=b"action=x&y=" + b"<" * 5000).messages
    stranger = Client(app)
    shown += stranger.login(MARKUP, "x").messages + stranger.login(MARKUP, "x").messages
    assert any("Access denied: /&lt;img" in m for m in shown)
    assert any(f"There is no document {escape_message(doc)} in" in m for m in shown)
    assert any(m.startswith("Unknown action &lt;img") for m in shown)
    assert any(m.startswith("Too many failed logins") for m in shown)
    assert any("larger than 4096 bytes" in m for m in shown)
    assert any("Origin does not match" in m for m in shown)
    assert [m for m in shown if "<" in m or ">" in m] == []
    assert tree_digest(demo.root) == before


def test_escape_message_is_the_one_escaping_call() -> None:
    """One escaping function, called in one place (``ServeApp._say``), which every message the project
    writes goes through; brat's own messages (already escaped by brat's Messager) never do."""
    source = Path(app_module.__file__).read_text(encoding="utf-8")
    assert source.count("escape_message(") == 2  # its definition and its one call
    assert "html.escape(" not in source.split("def escape_message", 1)[0]
    assert re.findall(r'"messages": \[\[', source) == ['"messages": [[']  # built in _say only
    assert escape_message('<b a="1">&') == '&lt;b a="1"&gt;&amp;'


def test_brat_s_own_messages_are_not_escaped_twice(demo: Demo) -> None:
    """brat's message on a bad search expression, escaped once by brat's (patched) Messager."""
    app = ServeApp(demo.root)
    client = Client(app)
    client.login("alice", demo.passwords["alice"])
    reply = client.ajax("searchTextInDocument", collection="/phase1/alice/", document=demo.editable["alice"],
                        text="(", text_match="regex")
    assert reply.messages == ["Given string &quot;(&quot; is not a valid regular expression."]


# --- the guides ------------------------------------------------------------------------------------


GUIDE = """# Guide <script>window.x=1</script>

<!-- a note for the manager
over two lines -->
Some *text* with <img src="x" onerror="alert(1)"> inline & an ampersand.

<div onclick="alert(1)">a raw block</div>

| Type | Means |
|------|-------|
| `Done` | signed off |

[ok](https://example.org/x) [rel](other.md) [bad](javascript:alert(1)) [bad2](JaVa&#x09;Script:alert(1))
![img](data:text/html,x)
"""


def test_a_guide_is_rendered_with_raw_html_as_text() -> None:
    out = render_guide(GUIDE)
    assert "<h1>Guide &lt;script&gt;window.x=1&lt;/script&gt;</h1>" in out
    assert "<em>text</em>" in out and "&lt;img src=" in out and "&amp; an ampersand" in out
    assert "&lt;div onclick=" in out and "<div" not in out and "<script" not in out and "<img src=\"x\"" not in out
    assert "manager" not in out and "<!--" not in out
    assert "<table>" in out and "<th>Type</th>" in out and "<td><code>Done</code></td>" in out
    assert '<a href="https://example.org/x">ok</a>' in out and '<a href="other.md">rel</a>' in out
    assert "javascript" not in out.lower() and "<a>bad</a>" in out and "<a>bad2</a>" in out
    assert 'src="data:' not in out
    assert safe_url("mailto:a@b.c") and safe_url("#top") and not safe_url(" javascript:x")


def test_the_guide_page_is_rendered_markdown(demo: Demo) -> None:
    app = ServeApp(demo.root)
    client = Client(app)
    client.login("dave", demo.passwords["dave"])
    text = (demo.root / "phase2" / "dave" / GUIDE_FILE).read_text(encoding="utf-8")
    reply = client.request("GET", "/guide/phase2/dave/")
    body = reply.body.decode("utf-8")
    assert reply.status == "200 OK" and reply.header("Content-Type") == "text/html; charset=utf-8"
    assert "<h1>Senior guide: dave, phase 2</h1>" in body and "<li>" in body and "<pre" not in body
    assert render_guide(text) in body
