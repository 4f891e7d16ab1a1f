"""The key-less fallback search: the synchronous `ddgs` metasearch, run in a worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from ddgs import DDGS
from pydantic import BaseModel, ValidationError

from bot.agent.report.model import Source
from bot.agent.web.dates import Recency, iso_date
from bot.agent.web.listing import SNIPPET_CHARS, clip
from bot.agent.web.search_failures import SearchProviderError

TIMELIMITS: dict[Recency, str] = {"day": "d", "week": "w", "month": "m", "year": "y"}
"""ddgs's `timelimit` for each recency."""


class DdgsEngine(Protocol):
    """What the provider uses of `ddgs.DDGS` (the seam tests put a scripted engine in)."""

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]: ...

    def news(self, query: str, **kwargs: Any) -> list[dict[str, Any]]: ...


class _TextRow(BaseModel):
    href: str
    title: str = ""
    body: str = ""


class _NewsRow(BaseModel):
    url: str
    title: str = ""
    body: str = ""
    date: str | int | None = None
    """ISO 8601 from most engines; whatever the engine wrote from the others."""


class DdgsSearch:
    """Web results from ddgs's text search; news with their dates when a recency is asked."""

    name = "ddgs"

    def __init__(self, *, timeout_s: int = 10, engine: Callable[..., DdgsEngine] = DDGS) -> None:
        self._timeout_s = timeout_s
        self._engine = engine

    async def search(
        self, query: str, max_results: int, recency: Recency | None = None
    ) -> list[Source]:
        rows = await asyncio.to_thread(self._search_sync, query, max(1, max_results), recency)
        try:
            if recency is None:
                text = [_TextRow.model_validate(row) for row in rows]
                return [_source(hit.href, hit.title, hit.body) for hit in text]
            news = [_NewsRow.model_validate(row) for row in rows]
        except ValidationError as exc:
            raise SearchProviderError("the answer had an unexpected shape") from exc
        return [_source(hit.url, hit.title, hit.body, str(hit.date or "")) for hit in news]

    def _search_sync(
        self, query: str, max_results: int, recency: Recency | None
    ) -> list[dict[str, Any]]:
        # A fresh engine per call: it caches state that worker threads should not share.
        engine = self._engine(timeout=self._timeout_s)
        if recency is None:
            return engine.text(query, max_results=max_results)
        return engine.news(query, max_results=max_results, timelimit=TIMELIMITS[recency])


def _source(url: str, title: str, body: str, published: str = "") -> Source:
    return Source(
        url=url,
        title=clip(title, 200),
        snippet=clip(body, SNIPPET_CHARS),
        published=iso_date(published),
    )
