"""NCBI E-utilities client (ESearch, EFetch) on ``requests``.

Inputs: a base URL (``https://eutils.ncbi.nlm.nih.gov/entrez/eutils/`` in
production, a loopback server in tests), ``tool``/``email``/``api_key``.
Outputs: parsed ESearch results, complete PMID lists for queries of any size,
raw EFetch ``PubmedArticleSet`` bytes.

Behaviour worth knowing:

* **Every request** carries ``tool``, ``email`` and (when set) ``api_key`` and is
  sent by POST, so the key never appears in a URL.  The key is redacted
  (``***``) from every log line and exception message, including NCBI's own
  JSON rate-limit body, which echoes it.
* **Rate limit**: at most 3 requests/s, 10/s with an API key, in any sliding
  second, enforced by a [`HostRateLimiter`][pipeline.sources.httputil.HostRateLimiter]
  shared by every client of every process on the host (NCBI counts per
  key/IP, not per client object or per build), with a 10% margin.
* **Retries** by the one policy of the web clients
  ([`RetryPolicy`][pipeline.sources.retry.RetryPolicy]: exponential backoff from ``backoff``, capped at
  ``max_backoff``, with equal jitter in [base/2, base]) on
  timeouts, connection errors (including a body cut off mid-transfer, a body
  shorter or longer than its ``Content-Length``, a reset), HTTP 429 (``Retry-After`` honoured), HTTP 5xx,
  and HTTP 200 bodies that are NCBI errors: a JSON ``{"error": ...}`` body
  (``API rate limit exceeded``), an ``<ERROR>`` element, or, for EFetch,
  truncated/unparseable XML.  Other 4xx statuses are not retried.  After the
  last try [`EutilsError`][pipeline.sources.eutils.EutilsError] is raised; for EFetch it names the batch
  (first and last PMID, size).
* **ESearch cap**: PubMed's ESearch returns at most the first 9,999 ids of a
  result (``retstart`` may not exceed 9998).
  [`EutilsClient.search_pmids`][pipeline.sources.eutils.EutilsClient.search_pmids]
  therefore splits a query whose Count is above the cap into publication-date
  ranges (``datetype``/``mindate``/``maxdate``, bisection on days) until every
  piece is under the cap, pages through each piece (``retstart``/``retmax``),
  and checks that the de-duplicated union has exactly the unsplit Count.  A
  record can fall into two ranges (PubMed's ``pdat`` covers both the print and
  the electronic date), hence the de-duplication.  If the union still differs
  from the Count (PubMed changed while we were paging, or records dated
  outside 1700-3000) the whole split search is retried once and then
  [`SearchIncompleteError`][pipeline.sources.eutils.SearchIncompleteError] is raised (``on_mismatch="warn"``
  logs a warning and returns the union instead).  A single day with more than 9,999
  hits cannot be split further and raises [`EutilsError`][pipeline.sources.eutils.EutilsError].
* Zero hits is not an error: ``Count`` is 0 and NCBI's ``ErrorList``
  (``PhraseNotFound``...) and ``WarningList`` are exposed on the result.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import requests
from lxml import etree

from pipeline import names
from pipeline.documents import pmid_sort_key
from pipeline.sources.httputil import HostRateLimiter, check_body_length, parse_retry_after, rate_limit_dir
from pipeline.sources.pubmed_xml import PubmedXmlError, count_records
from pipeline.sources.retry import RetriesExhausted, Retryable, RetryPolicy

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
#: ESearch cannot return ids beyond the first 9,999 of a result.
ESEARCH_CAP = 9999
RATE_WITHOUT_KEY = 3.0
RATE_WITH_KEY = 10.0
#: Whole-history default range for date splitting ("1700"[pdat] : "3000"[pdat]).
EARLIEST = dt.date(1700, 1, 1)
LATEST = dt.date(3000, 12, 31)

T = TypeVar("T")


class EutilsError(RuntimeError):
    """An E-utilities request that failed for good (after retries); the api_key is never in the message."""


class SearchIncompleteError(EutilsError):
    """The union of the date-split ESearch pieces does not have the unsplit Count."""


# --- rate limiting -----------------------------------------------------------


class RateLimiter:
    """At most ``rate`` calls per second across the threads of one process (evenly spaced slots).

    For tests and embedding; clients use the host-wide
    [`shared_limiter`][pipeline.sources.eutils.shared_limiter] by default.

    Args:
        rate: Calls per second, positive; slots are ``1 / rate`` seconds apart.

    Raises:
        ValueError: If ``rate`` is not positive.
    """

    def __init__(self, rate: float) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.interval = 1.0 / rate
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> float:
        """Block until the next slot, and take it.

        Args:
            sleep: How to wait.
            clock: The clock slots are measured on, in seconds.

        Returns:
            The time waited, in seconds (0 when a slot was free).
        """
        with self._lock:
            now = clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
        delay = slot - now
        if delay > 0:
            sleep(delay)
        return delay


_SHARED: dict[tuple[float, str], HostRateLimiter] = {}
_SHARED_LOCK = threading.Lock()


def shared_limiter(rate: float) -> HostRateLimiter:
    """Return the host-wide E-utilities limiter for a rate (one object per rate and directory).

    Every process on the host logs its E-utilities requests in the same
    file (see [`rate_limit_dir`][pipeline.sources.httputil.rate_limit_dir]), so two builds
    at once still make at most ``rate`` requests in any second between them.

    Args:
        rate: Requests per second (3 without an API key, 10 with one).

    Returns:
        The limiter of service ``eutils``, shared by every caller of this process with the same rate.
    """
    directory = rate_limit_dir()
    with _SHARED_LOCK:
        key = (rate, str(directory))
        if key not in _SHARED:
            _SHARED[key] = HostRateLimiter("eutils", rate, directory=directory)
        return _SHARED[key]


# --- results -----------------------------------------------------------------


@dataclass(frozen=True)
class ESearchResult:
    """One ESearch response.

    Attributes:
        count: The query's ``Count``: all hits, not only those returned.
        retmax: The ``RetMax`` of the response (ids returned).
        retstart: The ``RetStart`` of the response (index of the first id returned).
        ids: The PMIDs returned, in NCBI's order.
        query_key: The history ``QueryKey``, or None.
        webenv: The history ``WebEnv``, or None.
        query_translation: How PubMed read the term, or None.
        errors: NCBI's ``ErrorList`` (``PhraseNotFound`` ...): tag -> the texts.
        warnings: NCBI's ``WarningList``: tag -> the texts.
    """

    count: int
    retmax: int
    retstart: int
    ids: tuple[str, ...]
    query_key: str | None = None
    webenv: str | None = None
    query_translation: str | None = None
    errors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    warnings: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchPiece:
    """A date range searched on its own.

    Attributes:
        mindate: First day, ``YYYY/MM/DD``; None for the caller's bound (none).
        maxdate: Last day (inclusive), ``YYYY/MM/DD``; None for the caller's bound (none).
        count: The range's ``Count``.
    """

    mindate: str | None
    maxdate: str | None
    count: int


@dataclass(frozen=True)
class SearchResult:
    """All PMIDs of a query.

    Attributes:
        term: The query.
        count: The unsplit ``Count``.
        pmids: The PMIDs, sorted numerically and de-duplicated.
        pieces: The date ranges searched (one when the query was not split).
        query_translation: How PubMed read the term, or None.
        errors: NCBI's ``ErrorList`` of the unsplit search.
        warnings: NCBI's ``WarningList`` of the unsplit search.
    """

    term: str
    count: int
    pmids: tuple[str, ...]
    pieces: tuple[SearchPiece, ...] = ()
    query_translation: str | None = None
    errors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    warnings: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _fmt(day: dt.date) -> str:
    return f"{day.year:04d}/{day.month:02d}/{day.day:02d}"


def _parse_date(value: str | dt.date | None, *, end: bool) -> dt.date | None:
    """``YYYY``, ``YYYY/MM``, ``YYYY/MM/DD`` (or ``-``) -> date; a partial date covers its whole period."""
    if value is None or isinstance(value, dt.date):
        return value
    parts = [int(p) for p in re.split(r"[/-]", value.strip()) if p]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"bad E-utilities date {value!r} (expected YYYY, YYYY/MM or YYYY/MM/DD)")
    year, month, day = (parts + [0, 0])[:3]
    if len(parts) == 1:
        return dt.date(year, 12, 31) if end else dt.date(year, 1, 1)
    if len(parts) == 2:
        if not end:
            return dt.date(year, month, 1)
        nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
        return nxt - dt.timedelta(days=1)
    return dt.date(year, month, day)


# --- client --------------------------------------------------------------------


class EutilsClient:
    """ESearch/EFetch for PubMed with rate limiting, retries and the 9,999 cap handled.

    Every request is a POST with a timeout, through the rate limiter, retried as the module docstring
    says; the API key is redacted from every log line and message.

    Args:
        base_url: The E-utilities base URL (a loopback server in tests); a missing trailing ``/`` is added.
        tool: NCBI's ``tool`` parameter (a warning is logged when empty).
        email: NCBI's ``email`` parameter (a warning is logged when empty).
        api_key: NCBI API key, or None; raises the default rate to 10 requests/s.
        timeout: Timeout of each request, in seconds.
        max_tries: Tries per request, at least 1.
        backoff: Base delay of the exponential backoff, in seconds.
        session: The ``requests`` session to send through; None for a new one.
        sleep: Used for backoff and rate limiting (tests pass a no-op or a recorder).
        max_backoff: Cap of the backoff delay before jitter, in seconds.
        requests_per_second: Overrides the NCBI default (3, or 10 with an api_key).
        limiter: Replaces the shared limiter ([`shared_limiter`][pipeline.sources.eutils.shared_limiter]).
        page_size: The ESearch ``retmax`` used when paging, within 1..9,999.
        db: The Entrez database.
        seed: Seed of the backoff jitter, for reproducible tests; None for a random one.

    Attributes:
        requests_sent: Requests sent so far, retries included.

    Raises:
        ValueError: If ``max_tries`` is below 1 or ``page_size`` is outside 1..9,999.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        tool: str,
        email: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_tries: int = 5,
        backoff: float = 1.0,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_backoff: float = 60.0,
        requests_per_second: float | None = None,
        limiter: RateLimiter | HostRateLimiter | None = None,
        page_size: int = ESEARCH_CAP,
        db: str = "pubmed",
        seed: int | None = None,
    ) -> None:
        if max_tries < 1:
            raise ValueError("max_tries must be at least 1")
        if not 1 <= page_size <= ESEARCH_CAP:
            raise ValueError(f"page_size must be within 1..{ESEARCH_CAP}")
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.tool = tool
        self.email = email
        self._api_key = api_key or None
        self.timeout = timeout
        self.max_tries = max_tries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.session = session or requests.Session()
        self.sleep = sleep
        rate = requests_per_second or (RATE_WITH_KEY if self._api_key else RATE_WITHOUT_KEY)
        self.limiter: RateLimiter | HostRateLimiter = limiter or shared_limiter(rate)
        self.page_size = page_size
        self.db = db
        self.retry = RetryPolicy(max_tries, backoff, max_backoff, seed=seed)
        self.requests_sent = 0
        if not tool or not email:
            log.warning("E-utilities: NCBI asks every client to send 'tool' and 'email' (got tool=%r, email=%r)",
                        tool, email)

    def __repr__(self) -> str:  # never show the key
        key = "***" if self._api_key else None
        return f"EutilsClient({self.base_url!r}, tool={self.tool!r}, email={self.email!r}, api_key={key!r})"

    # -- plumbing --

    def redact(self, text: str) -> str:
        """Hide the API key in a text.

        Args:
            text: A message, URL or response body.

        Returns:
            ``text`` with the api_key (and any ``api_key=``/``"api-key":`` value) replaced by ``***``.
        """
        if self._api_key:
            text = text.replace(self._api_key, "***")
        text = re.sub(r"(api_key=)[^&\s'\"]+", r"\1***", text)
        return re.sub(r'("api[-_]key"\s*:\s*")[^"]*(")', r"\1***\2", text)

    def _params(self, extra: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = {"db": self.db, "tool": self.tool, "email": self.email}
        if self._api_key:
            params["api_key"] = self._api_key
        params.update({k: v for k, v in extra.items() if v is not None})
        return params

    def _call(self, endpoint: str, params: dict[str, Any], what: str, check: Callable[[requests.Response], T]) -> T:
        """POST ``endpoint`` with retries (``self.retry``); ``check`` validates a 200 response (raises Retryable)."""
        url = self.base_url + endpoint
        data = self._params(params)

        def attempt() -> T:
            self.limiter.wait(self.sleep)
            try:
                self.requests_sent += 1
                response = self.session.post(url, data=data, timeout=self.timeout)
            except requests.Timeout as exc:
                raise Retryable(f"timeout after {self.timeout}s ({self.redact(str(exc))})") from None
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.ContentDecodingError) as exc:
                # incl. a connection dropped in the middle of the body (truncated transfer)
                raise Retryable(f"connection error ({self.redact(str(exc))})") from None
            except requests.RequestException as exc:
                raise EutilsError(f"{what}: request failed: {self.redact(str(exc))}") from None
            status = response.status_code
            if status == 429 or status >= 500:
                raise Retryable(f"HTTP {status}: {self.redact(response.text[:200]).strip()}",
                                parse_retry_after(response.headers.get("Retry-After")))
            if status >= 400:
                raise EutilsError(f"{what}: HTTP {status}: {self.redact(response.text[:300]).strip()}")
            if (short := check_body_length(response.headers, response.content)) is not None:
                raise Retryable(f"incomplete body ({short})")
            try:
                return check(response)
            except Retryable as exc:
                raise Retryable(self.redact(exc.reason), exc.retry_after) from None

        def on_failure(n: int, exc: Retryable, wait: float | None) -> None:
            if wait is not None:
                log.warning("%s: %s; try %d/%d failed, retrying in %.2fs", what, exc.reason, n, self.max_tries, wait)

        try:
            return self.retry.call(attempt, self.sleep, on_failure)
        except RetriesExhausted as exc:
            raise EutilsError(f"{what}: failed after {self.max_tries} tries; last error: {exc.last.reason}") from None

    @staticmethod
    def _json_error(body: bytes) -> str | None:
        """NCBI's JSON error body (HTTP 200), e.g. ``{"error":"API rate limit exceeded",...}``."""
        head = body.lstrip()[:1]
        if head != b"{":
            return None
        try:
            payload = json.loads(body)
        except ValueError:
            return "unparseable JSON body"
        if isinstance(payload, dict) and payload.get("error"):
            return f"NCBI error: {json.dumps(payload, sort_keys=True)}"
        return None

    # -- ESearch --

    def esearch(
        self,
        term: str,
        *,
        retstart: int = 0,
        retmax: int = 0,
        usehistory: bool = True,
        datetype: str | None = None,
        mindate: str | None = None,
        maxdate: str | None = None,
    ) -> ESearchResult:
        """Send one ESearch request (``retmode=xml``); zero hits is a normal result with Count 0.

        Args:
            term: The PubMed query.
            retstart: Index of the first id to return, at most 9,998.
            retmax: Most ids to return (0: the Count only).
            usehistory: Ask for a history ``WebEnv``/``QueryKey``.
            datetype: Date field of the range (``pdat`` when a bound is given and this is None).
            mindate: First day of the range (``YYYY/MM/DD``, ``YYYY/MM`` or ``YYYY``); None for 1700.
            maxdate: Last day of the range; None for 3000.  Without either bound no range is sent.

        Returns:
            The parsed response.

        Raises:
            EutilsError: If ``retstart`` is beyond the cap, a returned id is not a PMID, or the request
                failed after its retries.
        """
        if retstart > ESEARCH_CAP - 1:
            raise EutilsError(f"esearch retstart {retstart} is beyond PubMed's cap ({ESEARCH_CAP - 1})")
        params: dict[str, Any] = {
            "term": term,
            "retstart": retstart,
            "retmax": retmax,
            "retmode": "xml",
            "usehistory": "y" if usehistory else None,
        }
        if mindate or maxdate:
            params.update(
                datetype=datetype or "pdat", mindate=mindate or _fmt(EARLIEST), maxdate=maxdate or _fmt(LATEST)
            )
        span = f" [{mindate or ''}..{maxdate or ''} {datetype or ''}]" if (mindate or maxdate) else ""
        what = f"esearch {term!r}{span} retstart={retstart}"
        return self._call("esearch.fcgi", params, what, self._check_esearch)

    def _check_esearch(self, response: requests.Response) -> ESearchResult:
        body = response.content
        error = self._json_error(body)
        if error:
            raise Retryable(error)
        try:
            root = etree.fromstring(body, etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False))
        except etree.XMLSyntaxError as exc:
            raise Retryable(f"unparseable ESearch response: {exc}") from None
        errors = [e.text or "" for e in root.iter("ERROR")]
        if root.tag == "ERROR" or errors:
            raise Retryable("NCBI <ERROR>: " + "; ".join(e.strip() for e in errors or [root.text or ""]))
        if root.tag != "eSearchResult" or root.find("Count") is None:
            raise Retryable(f"unexpected ESearch response (root <{root.tag}>)")

        def listing(tag: str) -> dict[str, tuple[str, ...]]:
            out: dict[str, list[str]] = {}
            for holder in root.iterfind(tag):
                for child in holder:
                    if isinstance(child.tag, str):
                        out.setdefault(child.tag, []).append((child.text or "").strip())
            return {k: tuple(v) for k, v in out.items()}

        def integer(tag: str) -> int:
            text = (root.findtext(tag) or "0").strip()
            return int(text) if text.isdigit() else 0

        ids = tuple((i.text or "").strip() for i in root.iterfind("IdList/Id"))
        for pmid in ids:
            if not names.is_pmid(pmid):
                # each PMID names files downstream: a response that is not PubMed's is refused, not retried
                raise EutilsError(f"ESearch response: PMID {pmid[:80]!r} refused: a PMID is 1 to 12 ASCII digits")
        return ESearchResult(
            count=integer("Count"),
            retmax=integer("RetMax"),
            retstart=integer("RetStart"),
            ids=ids,
            query_key=(root.findtext("QueryKey") or "").strip() or None,
            webenv=(root.findtext("WebEnv") or "").strip() or None,
            query_translation=(root.findtext("QueryTranslation") or "").strip() or None,
            errors=listing("ErrorList"),
            warnings=listing("WarningList"),
        )

    def _piece_ids(self, term: str, count: int, datetype: str, lo: str | None, hi: str | None) -> list[str]:
        """Page through one piece (Count <= cap) with retstart/retmax."""
        ids: list[str] = []
        for retstart in range(0, count, self.page_size):
            retmax = min(self.page_size, ESEARCH_CAP - retstart)
            page = self.esearch(term, retstart=retstart, retmax=retmax, datetype=datetype, mindate=lo, maxdate=hi)
            ids.extend(page.ids)
            if not page.ids:
                break
        return ids

    def search_pmids(
        self,
        term: str,
        *,
        datetype: str = "pdat",
        mindate: str | dt.date | None = None,
        maxdate: str | dt.date | None = None,
        on_mismatch: str = "error",
    ) -> SearchResult:
        """Find every PMID matching a query, whatever its Count.

        Splits by date when Count > 9,999 (see the module docstring).

        Args:
            term: The PubMed query.
            datetype: Date field the range and the splits use (``pdat``: publication date).
            mindate: First day (``YYYY``, ``YYYY/MM``, ``YYYY/MM/DD``, ``-`` separators allowed, or a date);
                a partial date starts its period.  None for no lower bound.
            maxdate: Last day, inclusive; a partial date ends its period.  None for no upper bound.
            on_mismatch: ``"error"`` to raise when the union of the pieces differs from the Count (after
                one retry), ``"warn"`` to log it and return the union.

        Returns:
            The sorted, de-duplicated PMIDs, the unsplit Count and the pieces searched.

        Raises:
            ValueError: If ``on_mismatch`` is not ``"error"`` or ``"warn"``, or a date is malformed.
            SearchIncompleteError: If the union still differs from the Count and ``on_mismatch="error"``.
            EutilsError: If a single day has more than 9,999 hits, or a request failed after its retries.
        """
        if on_mismatch not in ("error", "warn"):
            raise ValueError("on_mismatch must be 'error' or 'warn'")
        lo_s = _fmt(d) if (d := _parse_date(mindate, end=False)) else None
        hi_s = _fmt(d) if (d := _parse_date(maxdate, end=True)) else None
        first = self.esearch(term, retmax=0, datetype=datetype, mindate=lo_s, maxdate=hi_s)
        base = dict(term=term, query_translation=first.query_translation, errors=first.errors,
                    warnings=first.warnings)
        if first.count == 0:
            return SearchResult(count=0, pmids=(), pieces=(SearchPiece(lo_s, hi_s, 0),), **base)  # type: ignore[arg-type]
        if first.count <= ESEARCH_CAP:
            ids = self._piece_ids(term, first.count, datetype, lo_s, hi_s)
            pieces: list[SearchPiece] = [SearchPiece(lo_s, hi_s, first.count)]
            union = set(ids)
        else:
            union, pieces = self._split(term, datetype, lo_s, hi_s)
            if len(union) != first.count:
                log.warning("esearch %r: union of %d date pieces has %d PMIDs but Count is %d; retrying once",
                            term, len(pieces), len(union), first.count)
                first = self.esearch(term, retmax=0, datetype=datetype, mindate=lo_s, maxdate=hi_s)
                union, pieces = self._split(term, datetype, lo_s, hi_s)
        if len(union) != first.count:
            message = (f"esearch {term!r}: the de-duplicated union of {len(pieces)} piece(s) has {len(union)} PMIDs "
                       f"but the unsplit Count is {first.count}")
            if on_mismatch == "error":
                raise SearchIncompleteError(message)
            log.warning("%s (continuing with the union)", message)
        return SearchResult(count=first.count, pmids=tuple(sorted(union, key=pmid_sort_key)), pieces=tuple(pieces),
                            **base)  # type: ignore[arg-type]

    def _split(
        self, term: str, datetype: str, lo_s: str | None, hi_s: str | None
    ) -> tuple[set[str], list[SearchPiece]]:
        """Bisect [lo, hi] on days until each range has Count <= cap; union of their ids."""
        lo = _parse_date(lo_s, end=False) or EARLIEST
        hi = _parse_date(hi_s, end=True) or LATEST
        union: set[str] = set()
        pieces: list[SearchPiece] = []
        stack = [(lo, hi)]
        while stack:
            a, b = stack.pop()
            res = self.esearch(term, retmax=0, datetype=datetype, mindate=_fmt(a), maxdate=_fmt(b))
            if res.count == 0:
                continue
            if res.count <= ESEARCH_CAP:
                union.update(self._piece_ids(term, res.count, datetype, _fmt(a), _fmt(b)))
                pieces.append(SearchPiece(_fmt(a), _fmt(b), res.count))
                continue
            if a >= b:
                raise EutilsError(
                    f"esearch {term!r}: {res.count} hits on the single day {_fmt(a)} ({datetype}); "
                    f"more than ESearch's cap of {ESEARCH_CAP} and cannot be split by date"
                )
            mid = a + (b - a) // 2
            # Push the later half first so pieces come out in chronological order.
            stack.append((mid + dt.timedelta(days=1), b))
            stack.append((a, mid))
        log.info("esearch %r split into %d date piece(s), %d PMIDs", term, len(pieces), len(union))
        return union, pieces

    # -- EFetch --

    def efetch(self, pmids: Sequence[str]) -> bytes:
        """Fetch the raw ``PubmedArticleSet`` XML of a batch of PMIDs (POST, ``retmode=xml``).

        The body is checked to be a complete, well-formed PubmedArticleSet;
        NCBI error bodies and truncated XML are retried.  PMIDs absent from the
        answer (deleted records) are not an error here.

        Args:
            pmids: The PMIDs; blank entries are dropped.

        Returns:
            The response body, as received.

        Raises:
            ValueError: If no PMID is left.
            EutilsError: Naming the batch (first/last PMID, size), if the request failed after its retries
                or got a 4xx status other than 429.
        """
        ids = [str(p).strip() for p in pmids if str(p).strip()]
        if not ids:
            raise ValueError("efetch needs at least one PMID")
        what = f"efetch batch of {len(ids)} PMID(s) {ids[0]}..{ids[-1]}"

        def check(response: requests.Response) -> bytes:
            body = response.content
            error = self._json_error(body)
            if error:
                raise Retryable(error)
            if b"<ERROR>" in body[:2000] and b"<PubmedArticle" not in body[:2000]:
                text = re.sub(rb"\s+", b" ", body[:500]).decode("utf-8", "replace")
                raise Retryable(f"NCBI <ERROR> body: {text}")
            try:
                count_records(body, name="efetch response")
            except PubmedXmlError as exc:
                raise Retryable(f"truncated or unparseable PubMed XML: {exc}") from None
            return body

        return self._call("efetch.fcgi", {"id": ",".join(ids), "retmode": "xml"}, what, check)


__all__ = [
    "DEFAULT_BASE_URL",
    "ESEARCH_CAP",
    "ESearchResult",
    "EutilsClient",
    "EutilsError",
    "RateLimiter",
    "SearchIncompleteError",
    "SearchPiece",
    "SearchResult",
    "shared_limiter",
]
