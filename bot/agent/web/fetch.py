"""Reading one web page for the agent: a pinned, size- and time-bounded fetch, then its text."""

from __future__ import annotations

import asyncio
import logging
import ssl
import zlib
from collections.abc import Sequence
from types import TracebackType

import httpx
from pydantic import BaseModel, ConfigDict, Field

from bot.agent.web.budget import Allowance, ReadBudget
from bot.agent.web.extract import HTML_TYPES, Body, Page, extract_page
from bot.agent.web.extract_pool import Extractor
from bot.agent.web.netguard import NetGuard, Resolver, Target
from bot.agent.web.pdf import PDF_TYPE, is_pdf
from bot.errors import FetchRefused, ToolError

__all__ = ["USER_AGENT", "FetchLimits", "Page", "PageFetcher"]

logger = logging.getLogger(__name__)

USER_AGENT = "research-bot/0.1 (+https://github.com/research-bot)"
MiB = 1024 * 1024
INFLATE_CHUNK = 64 * 1024
"""Most bytes one inflate step makes: a bomb never holds more than the cap plus this."""
INLINE_TEXT_BYTES = 256 * 1024
"""Plain text, Markdown and JSON up to this size are decoded right here: no worker needed."""
_INLINE_TYPES = frozenset({"text/plain", "text/markdown", "application/json"})
_TEXT_TYPES = HTML_TYPES | _INLINE_TYPES
_PDF_TYPES = frozenset({PDF_TYPE, "application/x-pdf"})
_UNTYPED = frozenset({"", "application/octet-stream", "binary/octet-stream"})
"""Content types that say nothing: the body is read, and kept only if it is a PDF."""
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HEADERS = {
    "User-Agent": USER_AGENT,
    "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.1",
    # Only encodings we can inflate with a bound (see _Inflater).
    "Accept-Encoding": "gzip, deflate",
}


class FetchLimits(BaseModel):
    """Bounds on one `fetch`, redirects included."""

    model_config = ConfigDict(frozen=True)

    max_redirects: int = Field(default=5, ge=0)
    """Redirects followed (each one checked like the first URL) before giving up."""
    deadline_s: float = Field(default=20.0, gt=0)
    """Wall-clock time for the whole fetch: lookups, redirects, body and extraction."""
    connect_timeout_s: float = Field(default=5.0, gt=0)
    read_timeout_s: float = Field(default=10.0, gt=0)
    """Longest wait for any one read; the deadline bounds a body that drips in."""
    max_raw_bytes: int = Field(default=5 * MiB, gt=0)
    """Bytes on the wire (compressed) accepted for one response body."""
    max_decoded_bytes: int = Field(default=10 * MiB, gt=0)
    """Bytes after gzip/deflate: a compression bomb stops here."""
    max_text_chars: int = Field(default=40_000, gt=0)
    """Extracted text longer than this is cut, with a visible marker."""


class PageFetcher:
    """Fetches pages for the agent; create one, share it, close it (`async with`)."""

    def __init__(
        self,
        *,
        allow_hosts: Sequence[str] = (),
        resolver: Resolver | None = None,
        limits: FetchLimits | None = None,
        verify: ssl.SSLContext | None = None,
        extractor: Extractor | None = None,
        budget: ReadBudget | None = None,
    ) -> None:
        """`verify` is the trust store for https (default: certifi's); tests pass a test CA.
        `extractor` is the process pool pages are extracted in (None: a thread of this
        process, for tests and one-off use); `budget` is shared by every fetcher of the
        process (None: one of its own)."""
        self._guard = NetGuard(allow_hosts, resolver)
        self.limits = limits or FetchLimits()
        self._extractor = extractor
        self.budget = budget or ReadBudget()
        # Pinning: each request goes to the checked IP in the URL, with the real name in the
        # Host header and in httpcore's `sni_hostname` extension, so TLS still verifies the
        # certificate against the name. Nothing resolves the name again (no DNS rebinding),
        # and no custom network backend is needed. Keep-alive is off because the pool keys
        # connections by IP: a TLS connection verified for one name must not serve another.
        # For the same reason the transport is built here, never passed in.
        # Requests go to the transport itself, not through an AsyncClient: we follow redirects,
        # and a client turns each Location into its next request first (even when it will not
        # follow it), raising InvalidURL or IDNAError on hostile ones (`jar:http://x!/`,
        # `http:127.0.0.1/`) that we only need to refuse. Nor does it bring cookies or proxies.
        self._transport = httpx.AsyncHTTPTransport(
            verify=True if verify is None else verify,
            trust_env=False,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self._timeouts = httpx.Timeout(
            self.limits.read_timeout_s, connect=self.limits.connect_timeout_s
        ).as_dict()

    async def __aenter__(self) -> PageFetcher:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def fetch(self, url: str) -> Page:
        """The main text of `url`; FetchRefused or ToolError (readable by the model) on failure."""
        deadline = self.limits.deadline_s
        try:
            async with asyncio.timeout(deadline), self.budget.slot() as allowance:
                body = await self._download(url, allowance)
                page = await self._extract(body)
        except TimeoutError as exc:
            raise ToolError(f"timed out: reading {url} took more than {deadline:g} s") from exc
        logger.info("fetched %s: %d bytes, %d chars", page.url, len(body.data), len(page.text))
        return page

    async def _extract(self, body: Body) -> Page:
        max_chars = self.limits.max_text_chars
        if body.media_type in _INLINE_TYPES and len(body.data) <= INLINE_TEXT_BYTES:
            return extract_page(body, max_chars)  # the fast path: decoding only, microseconds
        if self._extractor is None:
            return await asyncio.to_thread(extract_page, body, max_chars)
        return await self._extractor.extract(body, max_chars)

    async def _download(self, url: str, allowance: Allowance) -> Body:
        current: str | httpx.URL = url
        for _ in range(self.limits.max_redirects + 1):
            target = await self._guard.check(current)
            result = await self._get(target, allowance)
            if isinstance(result, Body):
                return result
            logger.debug("redirect %s -> %s", target.url, result)
            current = result
        raise FetchRefused(f"refused: more than {self.limits.max_redirects} redirects from {url}")

    async def _get(self, target: Target, allowance: Allowance) -> Body | httpx.URL:
        """The body, or the URL a redirect points to."""
        extensions: dict[str, object] = {"timeout": self._timeouts}
        if target.url.scheme == "https":
            extensions["sni_hostname"] = target.host
        request = httpx.Request(
            "GET",
            target.pinned_url(),
            headers={**_HEADERS, "Host": target.host_header},
            extensions=extensions,
        )
        try:
            response = await self._transport.handle_async_request(request)
            try:
                return await self._read(target.url, response, allowance)
            finally:
                await response.aclose()
        except httpx.TimeoutException as exc:
            raise ToolError(f"timed out: {target.url} did not answer in time") from exc
        except httpx.TransportError as exc:  # refused, reset, or not speaking HTTP/1.1
            reason = str(exc) or "the connection was closed or reset"
            detail = f"{exc.__class__.__name__}: {reason}"[:300]
            raise ToolError(f"could not fetch {target.url}: {detail}") from exc

    async def _read(
        self, url: httpx.URL, response: httpx.Response, allowance: Allowance
    ) -> Body | httpx.URL:
        status = response.status_code
        if status in _REDIRECTS and "location" in response.headers:
            try:
                return url.join(response.headers["location"])
            except (httpx.InvalidURL, ValueError) as exc:
                # A bad port, IPv6 literal or IDNA label (UnicodeError is a ValueError).
                raise FetchRefused(f"refused: {url} redirects to an invalid URL") from exc
        if not 200 <= status < 300:
            raise ToolError(f"HTTP {status} {response.reason_phrase} from {url}")
        media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        kind = media_type or "a response without a content type"
        if media_type not in _TEXT_TYPES | _PDF_TYPES | _UNTYPED:
            raise FetchRefused(f"refused: {url} is {kind}, not a text page or a PDF")
        data = await self._read_body(url, response, allowance)
        # A PDF by its declared type or by its signature (servers often send PDFs untyped).
        if media_type in _PDF_TYPES or is_pdf(data):
            media_type = PDF_TYPE
        elif media_type in _UNTYPED:
            raise FetchRefused(f"refused: {url} is {kind}, not a text page or a PDF")
        return Body(
            url=str(url),
            # raw_host: `host` would decode IDNA, and raise on a bogus `xn--` label.
            host=url.raw_host.decode("ascii"),
            media_type=media_type,
            charset=response.charset_encoding,
            data=data,
        )

    async def _read_body(
        self, url: httpx.URL, response: httpx.Response, allowance: Allowance
    ) -> bytearray:
        cap = self.limits.max_raw_bytes
        too_big = FetchRefused(f"refused: {url} is larger than {cap:,} bytes")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise too_big
        encoding = response.headers.get("content-encoding", "identity")
        inflater = _Inflater(encoding, self.limits.max_decoded_bytes, url, allowance)
        received = 0
        try:
            # aiter_raw, not aiter_bytes: httpx would inflate without any bound.
            async for chunk in response.aiter_raw():
                received += len(chunk)
                if received > cap:
                    raise too_big
                if inflater.compressed:
                    # Inflating a bomb's chunk is milliseconds of CPU: a thread (zlib lets go
                    # of the GIL while it inflates), never the event loop.
                    await asyncio.to_thread(inflater.feed, chunk)
                else:
                    inflater.feed(chunk)
            inflater.flush()
        except BaseException:
            # Freed now, as its bytes go back to the budget: the exception's traceback holds
            # this frame, and a traceback in a reference cycle lives until the collector's
            # next full pass, megabytes of a refused body with it.
            inflater.body = bytearray()
            raise
        return inflater.body


class _Inflater:
    """Undoes Content-Encoding into `body`, at most INFLATE_CHUNK bytes a step, never holding
    more than `cap` (plus one step) and counting every byte against the process budget."""

    def __init__(self, encoding: str, cap: int, url: httpx.URL, allowance: Allowance) -> None:
        encoding = encoding.strip().lower()
        if encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
            raise FetchRefused(f"refused: {url} is sent with unsupported encoding {encoding!r}")
        self._encoding = encoding
        self.compressed = encoding not in ("identity", "")
        self._cap = cap
        self._url = url
        self._allowance = allowance
        self._zlib: zlib._Decompress | None = None
        self.body = bytearray()

    def feed(self, data: bytes) -> None:
        if not self.compressed or not data:
            self._keep(data)
            return
        if self._zlib is None:
            # HTTP "deflate" should be zlib-wrapped, yet some servers send it raw (as httpx allows).
            raw = self._encoding == "deflate" and data[:1] != b"\x78"
            bits = zlib.MAX_WBITS | 16 if "gzip" in self._encoding else zlib.MAX_WBITS
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS if raw else bits)
        try:
            while data:
                # One byte over what is left, so reaching the cap is seen without holding more.
                room = min(INFLATE_CHUNK, self._cap - len(self.body) + 1)
                self._keep(self._zlib.decompress(data, room))
                data = self._zlib.unconsumed_tail
        except zlib.error as exc:
            raise ToolError(f"could not fetch {self._url}: broken {self._encoding} body") from exc

    def flush(self) -> None:
        if self._zlib is not None:
            self._keep(self._zlib.flush())  # the tail of one step, at most

    def _keep(self, data: bytes) -> None:
        if len(self.body) + len(data) > self._cap:
            raise FetchRefused(
                f"refused: {self._url} decompresses to more than {self._cap:,} bytes"
            )
        self._allowance.take(len(data))
        self.body += data
