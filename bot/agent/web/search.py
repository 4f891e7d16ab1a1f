"""Web search behind one interface: Tavily, Brave (bot/agent/web/brave.py), the key-less ddgs
fallback (bot/agent/web/keyless.py), and the chain of them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

import httpx
from pydantic import BaseModel, Field, ValidationError
from tavily import AsyncTavilyClient

from bot.agent.report.model import Source
from bot.agent.urls import normalize_url
from bot.agent.web.brave import BraveSearch
from bot.agent.web.dates import Recency, iso_date
from bot.agent.web.keyless import DdgsSearch
from bot.agent.web.listing import SNIPPET_CHARS, clip
from bot.agent.web.search_failures import FAILURES, SearchProviderError, describe_failure
from bot.config import Settings
from bot.errors import ConfigError, ToolError

log = logging.getLogger(__name__)

TAVILY_URL = "https://api.tavily.com"
TAVILY_MAX_RESULTS = 20
"""Tavily's own upper bound for `max_results`."""


class SearchProvider(Protocol):
    """One search engine. Expected failures raise the typed errors in `FAILURES`."""

    name: str

    async def search(
        self, query: str, max_results: int, recency: Recency | None = None
    ) -> list[Source]:
        """Up to `max_results` sources; `recency`: only those of the past day, week, month or
        year (news, where the engine keeps news apart)."""
        ...


@runtime_checkable
class _Closable(Protocol):
    async def aclose(self) -> None: ...


def dedupe(sources: Iterable[Source]) -> list[Source]:
    """The first source for each normalized URL, in order."""
    seen: set[str] = set()
    kept: list[Source] = []
    for source in sources:
        key = normalize_url(source.url)
        if key not in seen:
            seen.add(key)
            kept.append(source)
    return kept


class _TavilyResult(BaseModel):
    url: str
    title: str = ""
    content: str = ""
    published_date: str | None = None
    """Sent for `topic="news"` only."""


class _TavilyAnswer(BaseModel):
    results: list[_TavilyResult] = Field(default_factory=list)


class TavilySearch:
    """Tavily's search API through tavily-python's async client."""

    name = "tavily"

    def __init__(
        self, api_key: str, base_url: str | None = None, *, timeout_s: float = 15.0
    ) -> None:
        if not api_key:
            raise ConfigError("TAVILY_API_KEY is empty")
        base = (base_url or TAVILY_URL).rstrip("/")
        self._timeout_s = timeout_s
        # Our own pool, created once: connections are reused and we decide when it closes.
        self._http = httpx.AsyncClient(base_url=base, timeout=timeout_s)
        self._client = AsyncTavilyClient(api_key=api_key, api_base_url=base, client=self._http)

    async def search(
        self, query: str, max_results: int, recency: Recency | None = None
    ) -> list[Source]:
        try:
            raw = await self._client.search(
                query,
                search_depth="basic",
                # News carries each result's date; `time_range` limits either topic.
                topic="news" if recency else "general",
                time_range=recency,
                max_results=max(1, min(max_results, TAVILY_MAX_RESULTS)),
                timeout=self._timeout_s,
            )
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SearchProviderError("the answer was not JSON") from exc
        except (AttributeError, TypeError) as exc:
            # tavily-python 0.8.5 calls `.get` on the decoded answer (AttributeError when it
            # is not a JSON object) and `raise`s what raise_for_status() returns (TypeError
            # on a 2xx other than 200).
            raise SearchProviderError("the answer had an unexpected shape") from exc
        try:
            answer = _TavilyAnswer.model_validate(raw)
        except ValidationError as exc:
            raise SearchProviderError("the answer had an unexpected shape") from exc
        return [
            Source(
                url=hit.url,
                title=clip(hit.title, 200),
                snippet=clip(hit.content, SNIPPET_CHARS),
                published=iso_date(hit.published_date),
            )
            for hit in answer.results
        ]

    async def aclose(self) -> None:
        await self._http.aclose()


class SearchAnswer(BaseModel):
    sources: list[Source]
    provider: str
    """The provider that answered."""
    failed: list[str] = Field(default_factory=list)
    """The providers tried before it, in chain order."""


class SearchChain:
    """Tries each provider in order; the first that answers (even with nothing) wins.

    A provider's failure is logged once, as a warning, until it answers again (then once, as
    info): a revoked key or a spent quota does not flood the log with one line per search."""

    def __init__(self, providers: Sequence[SearchProvider]) -> None:
        if not providers:
            raise ValueError("a search chain needs at least one provider")
        self.providers: tuple[SearchProvider, ...] = tuple(providers)
        self.name = "+".join(provider.name for provider in self.providers)
        self._failing: dict[str, str] = {}

    async def search(
        self, query: str, max_results: int, recency: Recency | None = None
    ) -> list[Source]:
        """Up to `max_results` unique sources; `ToolError` naming each failure if none answer."""
        return (await self.answer(query, max_results, recency)).sources

    async def answer(
        self, query: str, max_results: int, recency: Recency | None = None
    ) -> SearchAnswer:
        """The sources, and which provider gave them after which failed."""
        failures: list[str] = []
        failed: list[str] = []
        for provider in self.providers:
            try:
                found = await _search(provider, query, max_results, recency)
            except FAILURES as exc:
                reason = describe_failure(exc)
                self._failed(provider.name, reason)
                failures.append(f"{provider.name}: {reason}")
                failed.append(provider.name)
                continue
            if self._failing.pop(provider.name, None) is not None:
                log.info("search provider %s answers again", provider.name)
            return SearchAnswer(
                sources=dedupe(found)[:max_results], provider=provider.name, failed=failed
            )
        raise ToolError("search failed: " + "; ".join(failures))

    def _failed(self, name: str, reason: str) -> None:
        if self._failing.get(name) == reason:
            log.debug("search provider %s failed again: %s", name, reason)
            return
        self._failing[name] = reason
        log.warning("search provider %s failed: %s (the next provider is tried)", name, reason)

    async def aclose(self) -> None:
        for provider in self.providers:
            if isinstance(provider, _Closable):
                await provider.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def _search(
    provider: SearchProvider, query: str, max_results: int, recency: Recency | None
) -> list[Source]:
    # Without a recency, called as before it existed: a provider written then still works.
    if recency is None:
        return await provider.search(query, max_results)
    return await provider.search(query, max_results, recency)


def as_chain(provider: SearchProvider) -> SearchChain:
    """A provider as a chain (of itself, when it is not one already)."""
    return provider if isinstance(provider, SearchChain) else SearchChain([provider])


def build_search(settings: Settings) -> SearchChain:
    """Tavily and Brave when their keys are set, then ddgs. Close it with `aclose()` or
    `async with`."""
    providers: list[SearchProvider] = []
    tavily = settings.tavily_api_key.get_secret_value() if settings.tavily_api_key else ""
    brave = settings.brave_api_key.get_secret_value() if settings.brave_api_key else ""
    # Each provider's share of the tool's timeout leaves the next one time to answer in the
    # same call.
    timeout_s = settings.tool_timeout_s / (1 + bool(tavily) + bool(brave))
    if tavily:
        providers.append(TavilySearch(tavily, settings.tavily_base_url, timeout_s=timeout_s))
    if brave:
        providers.append(BraveSearch(brave, settings.brave_api_url, timeout_s=timeout_s))
    providers.append(DdgsSearch(timeout_s=max(1, round(timeout_s))))
    return SearchChain(providers)
