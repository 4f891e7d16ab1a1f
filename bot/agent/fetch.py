"""Reading one web page for the agent: a pinned, size- and time-bounded fetch, then its text."""

from __future__ import annotations

import asyncio
import logging
import ssl
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

import httpx
import trafilatura
from pydantic import BaseModel, ConfigDict, Field
from trafilatura.settings import Document

from bot.agent.netguard import NetGuard, Resolver, Target
from bot.errors import FetchRefused, ToolError

logger = logging.getLogger(__name__)

USER_AGENT = "research-bot/0.1 (+https://github.com/research-bot)"
MiB = 1024 * 1024
MAX_TITLE_CHARS = 300
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = _HTML_TYPES | {"text/plain", "text/markdown", "application/json"}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HEADERS = {
    "User-Agent": USER_AGENT,
    "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1",
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


class Page(BaseModel):
    """What `read_page` gives the model: the main text of one page."""

    url: str
    """The final URL, after redirects."""
    title: str
    text: str
    truncated: bool
    """True when `text` was cut at `FetchLimits.max_text_chars`."""


@dataclass(frozen=True)
class _Body:
    url: httpx.URL
    media_type: str
    charset: str | None
    data: bytes


class PageFetcher:
    """Fetches pages for the agent; create one, share it, close it (`async with`)."""

    def __init__(
        self,
        *,
        allow_hosts: Sequence[str] = (),
        resolver: Resolver | None = None,
        limits: FetchLimits | None = None,
        verify: ssl.SSLContext | None = None,
    ) -> None:
        """`verify` is the trust store for https (default: certifi's); tests pass a test CA."""
        self._guard = NetGuard(allow_hosts, resolver)
        self.limits = limits or FetchLimits()
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
            async with asyncio.timeout(deadline):
                body = await self._download(url)
                page = await asyncio.to_thread(_to_page, body, self.limits.max_text_chars)
        except TimeoutError as exc:
            raise ToolError(f"timed out: reading {url} took more than {deadline:g} s") from exc
        logger.info("fetched %s: %d bytes, %d chars", page.url, len(body.data), len(page.text))
        return page

    async def _download(self, url: str) -> _Body:
        current: str | httpx.URL = url
        for _ in range(self.limits.max_redirects + 1):
            target = await self._guard.check(current)
            result = await self._get(target)
            if isinstance(result, _Body):
                return result
            logger.debug("redirect %s -> %s", target.url, result)
            current = result
        raise FetchRefused(f"refused: more than {self.limits.max_redirects} redirects from {url}")

    async def _get(self, target: Target) -> _Body | httpx.URL:
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
                return await self._read(target.url, response)
            finally:
                await response.aclose()
        except httpx.TimeoutException as exc:
            raise ToolError(f"timed out: {target.url} did not answer in time") from exc
        except httpx.TransportError as exc:  # refused, reset, or not speaking HTTP/1.1
            reason = str(exc) or "the connection was closed or reset"
            detail = f"{exc.__class__.__name__}: {reason}"[:300]
            raise ToolError(f"could not fetch {target.url}: {detail}") from exc

    async def _read(self, url: httpx.URL, response: httpx.Response) -> _Body | httpx.URL:
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
        if media_type not in _TEXT_TYPES:
            kind = media_type or "a response without a content type"
            raise FetchRefused(f"refused: {url} is {kind}, not a text page")
        data = await self._read_body(url, response)
        return _Body(url=url, media_type=media_type, charset=response.charset_encoding, data=data)

    async def _read_body(self, url: httpx.URL, response: httpx.Response) -> bytes:
        cap = self.limits.max_raw_bytes
        too_big = FetchRefused(f"refused: {url} is larger than {cap:,} bytes")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise too_big
        encoding = response.headers.get("content-encoding", "identity")
        inflater = _Inflater(encoding, self.limits.max_decoded_bytes, url)
        parts: list[bytes] = []
        received = 0
        # aiter_raw, not aiter_bytes: httpx would inflate without any bound.
        async for chunk in response.aiter_raw():
            received += len(chunk)
            if received > cap:
                raise too_big
            parts.append(inflater.feed(chunk))
        parts.append(inflater.flush())
        return b"".join(parts)


class _Inflater:
    """Undoes Content-Encoding with zlib, never producing more than `cap` bytes in all."""

    def __init__(self, encoding: str, cap: int, url: httpx.URL) -> None:
        encoding = encoding.strip().lower()
        if encoding not in ("identity", "", "gzip", "x-gzip", "deflate"):
            raise FetchRefused(f"refused: {url} is sent with unsupported encoding {encoding!r}")
        self._encoding = encoding
        self._cap = cap
        self._url = url
        self._produced = 0
        self._zlib: zlib._Decompress | None = None

    def feed(self, data: bytes) -> bytes:
        if self._encoding in ("identity", "") or not data:
            return self._count(data)
        if self._zlib is None:
            # HTTP "deflate" should be zlib-wrapped, yet some servers send it raw (as httpx allows).
            raw = self._encoding == "deflate" and data[:1] != b"\x78"
            bits = zlib.MAX_WBITS | 16 if "gzip" in self._encoding else zlib.MAX_WBITS
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS if raw else bits)
        out: list[bytes] = []
        try:
            while data:
                # One byte over what is left, so reaching the cap is seen without holding more.
                out.append(self._count(self._zlib.decompress(data, self._cap - self._produced + 1)))
                data = self._zlib.unconsumed_tail
        except zlib.error as exc:
            raise ToolError(f"could not fetch {self._url}: broken {self._encoding} body") from exc
        return b"".join(out)

    def flush(self) -> bytes:
        return self._count(self._zlib.flush()) if self._zlib else b""

    def _count(self, data: bytes) -> bytes:
        self._produced += len(data)
        if self._produced > self._cap:
            raise FetchRefused(
                f"refused: {self._url} decompresses to more than {self._cap:,} bytes"
            )
        return data


def _to_page(body: _Body, max_chars: int) -> Page:
    """Main text and title (sync CPU work: run in a thread)."""
    title = ""
    if body.media_type in _HTML_TYPES:
        # Without a declared charset trafilatura reads the bytes and finds the encoding itself.
        html = _decode(body.data, body.charset) if body.charset else body.data
        doc = trafilatura.bare_extraction(
            html, url=str(body.url), include_comments=False, include_links=False, with_metadata=True
        )
        if isinstance(doc, Document):
            text, title = doc.text or "", doc.title or ""
        else:
            text = ""
    else:
        text = _decode(body.data, body.charset)
    text = text.strip()
    if not text:
        raise ToolError(f"no readable text at {body.url}")
    truncated = len(text) > max_chars
    if truncated:
        text = (
            text[:max_chars]
            + f"\n\n[… text cut here: the page is longer than {max_chars:,} characters]"
        )
    # raw_host: `host` would decode IDNA, and raise on a bogus `xn--` label.
    title = title.strip()[:MAX_TITLE_CHARS] or body.url.raw_host.decode("ascii")
    return Page(url=str(body.url), title=title, text=text, truncated=truncated)


def _decode(data: bytes, charset: str | None) -> str:
    """Text in any charset the server names; utf-8 when it names nothing we can use."""
    try:
        text = data.decode(charset or "utf-8", "replace")
    except (LookupError, ValueError):
        # An unknown codec, one that is not for text ("zlib"), or one that rejects "replace"
        # ("idna", "undefined"); a charset with a NUL in it is a ValueError too.
        text = data.decode("utf-8", "replace")
    # utf-7 and unicode_escape can yield lone surrogates, which no utf-8 encoder (SQLite,
    # the JSON of the next model request) accepts: make them "?".
    return text.encode("utf-8", "replace").decode("utf-8")
