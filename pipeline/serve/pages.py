"""The pages ``campaign serve`` writes itself: brat's page without inline code, its scripts, the guides.

brat's ``index.xhtml`` boots from inline scripts, which the served Content-Security-Policy
(``script-src 'self'``, no ``'unsafe-inline'``) does not run.  [`rewrite_index`][pipeline.serve.pages.rewrite_index]
moves each inline ``<script>`` of brat's page, unchanged, into a same-origin script file
(``pgx/brat-1.js``, ``pgx/brat-2.js`` ...) loaded from the same place in the page, adds the Guide link
beside brat's Help link, puts back brat's Undo button (commented out in brat's page; brat's client
takes back the last change whose answer carried an undo entry: a new entity, a relation suggestion) and
loads the project's own script, ``pgx/campaign.js``
([`CAMPAIGN_SCRIPT`][pipeline.serve.pages.CAMPAIGN_SCRIPT]).  All of it happens in memory: brat's
installed files are never changed.

The project's script (``pipeline/serve/client/campaign.js``) makes brat's client fit the campaign:

* the Guide link opens the guide of the collection shown;
* brat's Login button stays in the top bar whenever nobody is logged in (brat shows it only while the
  pointer is over the bar);
* after a login in the page, the page is loaded again at the first collection of the person's own
  listing (brat's client keeps what it fetched before the login, e.g. another person's collection);
* after a save that adds or removes a ``Done`` or ``Discard`` mark, the collection's listing is fetched
  again, so its State column is up to date;
* Ctrl-Z (Cmd-Z on a Mac), outside a text field, presses brat's Undo button.

[`render_guide`][pipeline.serve.pages.render_guide] renders a collection's ``guide.md`` with the
``markdown`` package: raw HTML is shown as text, HTML comments are dropped, tables are kept, and a link or
image whose URL has a scheme other than ``http``, ``https`` or ``mailto`` loses that URL.
"""

from __future__ import annotations

import html
import re
from importlib import resources
from typing import Any
from xml.etree.ElementTree import Element

import markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

SCRIPT_DIR = "pgx"
"""The URL directory (under the page's) of the scripts serve writes."""
CAMPAIGN_SCRIPT = f"{SCRIPT_DIR}/campaign.js"
"""The URL path (relative to the page) of the project's own script."""
HELP_ANCHOR = '<a id="help_link"'
UNDO_BUTTON = '<!--<input id="undo_button" type="button" class="login" value="Undo" tabindex="-1"/>-->'
"""brat's Undo button, commented out in brat's page: serve puts it back (brat's client already handles it)."""
GUIDE_LINK = '<a id="pgx_guide_link" target="pgx_guide" href="guide/" title="The guide of this collection">Guide</a> '
_SCRIPT_RE = re.compile(r"<script\b([^>]*?)(?:/>|>(.*?)</script\s*>)", re.DOTALL | re.IGNORECASE)
_EVENT_ATTR_RE = re.compile(r"""<[^>]*\son[a-z]+\s*=|javascript:""", re.IGNORECASE)
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


def _script_tag(src: str) -> str:
    return f'<script type="text/javascript" src="{src}"></script>'


def campaign_script() -> bytes:
    """Return the project's script for brat's page (``pipeline/serve/client/campaign.js``).

    Returns:
        Its bytes (UTF-8 JavaScript).
    """
    return resources.files("pipeline.serve").joinpath("client", "campaign.js").read_bytes()


def rewrite_index(page: str, origin: str = "index.xhtml") -> tuple[str, dict[str, bytes]]:
    """Rewrite brat's page so that it holds no inline code (see the module docstring).

    Args:
        page: brat's ``index.xhtml``, as text.
        origin: The page's file, named in errors.

    Returns:
        The rewritten page, and the scripts it loads from serve by URL path relative to the page
            (``pgx/brat-1.js`` ..., ``pgx/campaign.js``), as bytes.

    Raises:
        RuntimeError: If the page has no Help link to put the Guide link beside, if an inline script
            holds an XML entity, markup or CDATA (moved as they are, they would not be the same code), or
            if an event-handler attribute or a ``javascript:`` URL is left (the policy would block it).
    """
    if HELP_ANCHOR not in page:
        raise RuntimeError(f"{origin}: no Help link to put the Guide link beside")
    scripts: dict[str, bytes] = {}

    def move(match: re.Match[str]) -> str:
        attrs, body = match.group(1), match.group(2)
        if re.search(r"\ssrc\s*=", attrs):
            return match.group(0)
        body = body or ""
        if "&" in body or "<" in body:
            raise RuntimeError(f"{origin}: an inline script holds '&' or '<'; it cannot be moved as it is")
        name = f"{SCRIPT_DIR}/brat-{len(scripts) + 1}.js"
        scripts[name] = body.encode("utf-8")
        return _script_tag(name)

    page = _SCRIPT_RE.sub(move, page)
    page = page.replace(HELP_ANCHOR, GUIDE_LINK + HELP_ANCHOR, 1)
    page = page.replace(UNDO_BUTTON, UNDO_BUTTON[4:-3].replace("/>", ' title="Undo the last change (Ctrl-Z)"/>'), 1)
    # after brat's boot script: its head.ready callback (which creates brat's dispatcher) runs first
    page = page.replace("</head>", _script_tag(CAMPAIGN_SCRIPT) + "\n  </head>", 1)
    left = _EVENT_ATTR_RE.search(_COMMENT_RE.sub("", page))
    if left is not None:
        raise RuntimeError(f"{origin}: inline code left in the page ({left.group(0)[:60]!r})")
    scripts[CAMPAIGN_SCRIPT] = campaign_script()
    return page, scripts


# --- guides ----------------------------------------------------------------------------------------


def safe_url(url: str) -> bool:
    """Tell whether a guide's link or image URL may be kept.

    Args:
        url: The ``href`` or ``src`` as written.

    Returns:
        True for a URL without a scheme (relative, ``#anchor``) or with ``http``, ``https`` or ``mailto``;
            browsers ignore control characters and spaces in a scheme, so they are ignored here too.
    """
    squeezed = re.sub(r"[\x00-\x20\x7f]", "", html.unescape(url)).lower()
    match = re.match(r"^([a-z][a-z0-9+.-]*):", squeezed)
    return match is None or match.group(1) in _SAFE_SCHEMES


class _DropUnsafeUrls(Treeprocessor):
    def run(self, root: Element) -> None:
        for element in root.iter():
            for attr in ("href", "src"):
                value = element.get(attr)
                if value is not None and not safe_url(value):
                    del element.attrib[attr]


class _GuideExtension(Extension):
    """Raw HTML shown as text (no HTML block or inline HTML), unsafe URLs dropped."""

    def extendMarkdown(self, md: Any) -> None:  # noqa: N802 - the markdown package's name
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        md.treeprocessors.register(_DropUnsafeUrls(md), "pgx_drop_unsafe_urls", 0)


def render_guide(text: str) -> str:
    """Render a guide's Markdown as HTML (the ``markdown`` package, with its ``tables`` extension).

    HTML comments are dropped before rendering (also inside code, where a guide has none); any other raw
    HTML is escaped, so it shows as text; links and images with an unsafe URL
    ([`safe_url`][pipeline.serve.pages.safe_url]) lose it.

    Args:
        text: The guide's Markdown (``guide.md``).

    Returns:
        The HTML of the guide's body.
    """
    return markdown.markdown(_COMMENT_RE.sub("", text), extensions=["tables", _GuideExtension()],
                             output_format="html")
