"""The one URL normaliser: the key under which two spellings of a page count as the same page."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def normalize_url(url: str) -> str:
    """The URL as a de-duplication key: no fragment or trailing slash, lower-case scheme and host."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # `http://[::1/`, a netloc NFKC makes unsafe: a key all the same
        return url.strip()
    return urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, "")
    )


def is_web(url: str) -> bool:
    """An http(s) address: the only kind of link we pass on to people."""
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return False
    return scheme in {"http", "https"}
