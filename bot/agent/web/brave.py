"""Brave Search: the second keyed web search provider (`BRAVE_API_KEY`), between Tavily and the
key-less engine in the search chain."""

from __future__ import annotations

from html.parser import HTMLParser

from pydantic import BaseModel, Field

from bot.agent.report.model import Source
from bot.agent.web.api import ApiClient
from bot.agent.web.dates import Recency, iso_date
from bot.agent.web.listing import SNIPPET_CHARS, clip
from bot.errors import ConfigError

BRAVE_URL = "https://api.search.brave.com/res/v1"
BRAVE_MAX_RESULTS = 20
"""Brave's own upper bound for `count`."""
FRESHNESS: dict[Recency, str] = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}
"""Brave's `freshness` for each recency."""


class _Result(BaseModel):
    url: str
    title: str = ""
    description: str = ""
    page_age: str | None = None
    """When the page was published, ISO 8601 (`2023-08-16T10:26:04`)."""
    age: str | None = None
    """The same as written for people: `August 16, 2023`, or `2 days ago`."""


class _Web(BaseModel):
    results: list[_Result] = Field(default_factory=list)


class _Answer(BaseModel):
    web: _Web = Field(default_factory=_Web)
    """Absent when Brave found no web results."""


class BraveSearch:
    """Brave's web search API."""

    name = "brave"

    def __init__(
        self, api_key: str, base_url: str | None = None, *, timeout_s: float = 15.0
    ) -> None:
        if not api_key:
            raise ConfigError("BRAVE_API_KEY is empty")
        headers = {"Accept": "application/json", "X-Subscription-Token": api_key}
        self._api = ApiClient(
            "Brave Search", base_url or BRAVE_URL, timeout_s=timeout_s, headers=headers
        )

    async def search(
        self, query: str, max_results: int, recency: Recency | None = None
    ) -> list[Source]:
        params = {"q": query, "count": max(1, min(max_results, BRAVE_MAX_RESULTS))}
        if recency:
            params["freshness"] = FRESHNESS[recency]
        answer = await self._api.get_model("web/search", _Answer, params)
        return [
            Source(
                url=hit.url,
                title=clip(_text(hit.title), 200),
                snippet=clip(_text(hit.description), SNIPPET_CHARS),
                published=iso_date(hit.page_age) or iso_date(hit.age),
            )
            for hit in answer.web.results
        ]

    async def aclose(self) -> None:
        await self._api.aclose()


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _text(markup: str) -> str:
    """Brave marks matches with `<strong>` and escapes entities: the words, without markup."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return "".join(parser.parts)
