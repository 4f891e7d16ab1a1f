"""Search results as the model reads them: clipped titles and snippets, numbered entries, and a
plain note when a search found too little to go on (seed 002's sparse results)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.agent.report.model import Source
from bot.agent.urls import is_web

SNIPPET_CHARS = 500
"""Longest snippet kept per web result; the page itself is for the page reader."""
MIN_USEFUL = 2
"""A search with fewer useful results than this says so and suggests how to refine it."""


def clip(text: str, limit: int) -> str:
    """Whitespace collapsed, cut at a word boundary near `limit` characters, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.8:
        cut = cut[:space]
    return cut.rstrip() + "…"


def useful(sources: Sequence[Source]) -> int:
    """Results worth a look: a web address and something said about it."""
    return sum(1 for s in sources if is_web(s.url) and (s.title.strip() or s.snippet.strip()))


def heading(what: str, query: str, sources: Sequence[Source], refine: str, via: str = "") -> str:
    """Our own words above a listing: what was searched, where, and (when it found too little)
    that it did and how to refine. `via` names the provider chain (never text from the web)."""
    found = useful(sources)
    if not sources:
        return f"No {what} for {query!r}{via}. {refine}"
    line = f"{what[:1].upper()}{what[1:]} for {query!r}{via}:"
    if found < MIN_USEFUL:
        noun = "result" if found == 1 else "results"
        line = f"Only {found} useful {noun} for {query!r}{via}. {refine}\n{line}"
    return line


def entry(number: int, title: str, url: str, *details: str, published: str | None = None) -> str:
    """One numbered result: `[n] title` (and when it was published), its address, then any detail
    lines that are not empty."""
    first = f"[{number}] {title}" + (f" — published {published}" if published else "")
    return "\n".join([first, url, *(d for d in details if d)])
