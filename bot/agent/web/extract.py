"""A page's main text, title and date from its bytes: decoding, a fast path for text, trafilatura
(with its readability/justext cascade only when its own extractor finds little), and pypdf for
PDFs (bot/agent/web/pdf.py).

Pure and synchronous: it runs in the extraction workers (bot/agent/web/extract_pool.py), never on
the event loop.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from bot.agent.web.dates import iso_date
from bot.agent.web.pdf import PDF_TYPE, pdf_text
from bot.errors import ToolError

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 300
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
FAST_PATH_MIN_CHARS = 1_000
"""trafilatura's own extractor alone (`fast=True`) is kept when it finds at least this much
text; shorter or messier pages get the full cascade (readability, then justext)."""


@dataclass(frozen=True, slots=True)
class Page:
    """What `read_page` gives the model: the main text of one page. A plain dataclass, not a
    pydantic model: the workers import this module, and pydantic would be 10 MB more in each."""

    url: str
    """The final URL, after redirects."""
    title: str
    text: str
    truncated: bool
    """True when `text` was cut at `FetchLimits.max_text_chars`."""
    published: str | None = None
    """When the page says it was published (YYYY-MM-DD); None when it does not say."""


@dataclass(frozen=True)
class Body:
    """A downloaded response body, and what is needed to turn it into a `Page`."""

    url: str
    host: str
    """The page's host, the title when the page has none."""
    media_type: str
    charset: str | None
    data: bytes | bytearray


def extract_page(body: Body, max_chars: int) -> Page:
    """Main text and title: sync CPU work, for a worker process (or a thread in tests)."""
    title, published = "", None
    if body.media_type in HTML_TYPES:
        # Without a declared charset trafilatura reads the bytes and finds the encoding itself.
        html = decode(body.data, body.charset) if body.charset else bytes(body.data)
        text, title, published = _trafilatura(html, body.url)
    elif body.media_type == PDF_TYPE:
        text, title = pdf_text(body.data, body.url, max_chars)
    else:
        text = decode(body.data, body.charset)
    text = text.strip()
    if not text:
        raise ToolError(f"no readable text at {body.url}")
    truncated = len(text) > max_chars
    if truncated:
        text = (
            text[:max_chars]
            + f"\n\n[… text cut here: the page is longer than {max_chars:,} characters]"
        )
    title = title.strip()[:MAX_TITLE_CHARS] or body.host
    return Page(url=body.url, title=title, text=text, truncated=truncated, published=published)


def _trafilatura(html: str | bytes, url: str) -> tuple[str, str, str | None]:
    """The page's text, title and date. The page is parsed once; its title and date are found
    the way trafilatura's metadata finds them, without the rest of `with_metadata` (authors,
    categories, htmldate's text search), which costs five times the extraction itself."""
    # Only where pages are extracted: the workers keep these out of the bot.
    import trafilatura
    from trafilatura.settings import Document
    from trafilatura.utils import load_html

    tree = load_html(html)
    if tree is None:
        return "", "", None
    title, published = _title(tree), _date(tree, url)
    text = ""
    for fast in (True, False):  # trafilatura's own extractor first, the full cascade if short
        doc = trafilatura.bare_extraction(
            tree,  # copied by trafilatura: the second pass starts from the same tree
            url=url,
            fast=fast,
            include_comments=False,
            include_links=False,
            with_metadata=False,
        )
        text = (doc.text or "") if isinstance(doc, Document) else ""
        if len(text) >= FAST_PATH_MIN_CHARS:
            break
    return text, title, published


def _title(tree: Any) -> str:
    """trafilatura's `extract_metadata` title steps, and only those."""
    from trafilatura.metadata import examine_meta, extract_meta_json, extract_title

    meta = examine_meta(tree)
    # trafilatura guards this call the same way (bugs in its JSON-LD reader).
    with contextlib.suppress(Exception):
        meta = extract_meta_json(tree, meta)
    return meta.title or extract_title(tree) or ""


def _date(tree: Any, url: str) -> str | None:
    """The publication date by htmldate's first steps, as trafilatura's metadata runs them (a
    date in the address, then meta tags, then JSON-LD), and only those: they take 0.02 ms, the
    text search after them 1-16 ms, and a news page says its date in its meta tags."""
    from htmldate.core import examine_header
    from htmldate.extractors import extract_url_date, json_search
    from htmldate.utils import Extractor
    from htmldate.validators import get_max_date, get_min_date

    # Not extensive (no dateparser), the original date (not the last change), ISO days.
    options = Extractor(False, get_max_date(None), get_min_date(None), True, "%Y-%m-%d")
    found = (
        extract_url_date(url, options)
        or examine_header(tree, options)
        or json_search(tree, options)
    )
    return iso_date(found)


def decode(data: bytes | bytearray, charset: str | None) -> str:
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
