"""A local fake of Tavily's search API (`POST /search`, bearer key) for tests.

    async with FakeTavily(api_key="tvly-test", result_base=web.url) as tavily:
        search = TavilySearch("tvly-test", tavily.url)          # or TAVILY_BASE_URL=tavily.url
        tavily.results_for["acme robotics"] = [tavily_result(f"{web.url}/about", "About Acme")]
        tavily.fail_next(429)          # the next request answers 429; fail_next(500, n=3): three
        tavily.hang_next()             # the next request answers only when the fake closes
        tavily.answer_next(b"[]")      # the next request gets these bytes (status, content type)
        tavily.drop_next()             # the next request gets its connection closed, no answer
        tavily.requests[0].query       # every request, in order, with its body and the status sent
        tavily.requests[0].time_range  # "week" … (None when not asked), .topic: "general"/"news"

A query with no entry in `results_for` gets `default_results(query, max_results)`: three
deterministic results whose URLs live under `result_base` (point it at a local web fake).
As with the real API, results carry `published_date` only for `topic="news"` (a default
result's is NEWS_DATE).
A wrong or missing key answers 401 like the real API; failures use Tavily's error body
`{"detail": {"error": "..."}}`.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web

DEFAULT_RESULTS = 3
NEWS_DATE = "Thu, 02 May 2024 09:30:00 GMT"
"""A default news result's `published_date`, written the way Tavily writes it."""
_HANG = 0
_DROP = -1
_MESSAGES = {
    400: "Bad request.",
    401: "Unauthorized: missing or invalid API key.",
    403: "Forbidden.",
    429: "Too many requests: rate limit exceeded.",
    432: "This request exceeds your plan's set usage limit.",
    433: "This request exceeds the pay-as-you-go limit.",
    500: "Internal server error.",
}


def tavily_result(
    url: str,
    title: str = "",
    content: str = "",
    score: float = 0.5,
    published_date: str | None = None,
) -> dict[str, Any]:
    """One result as Tavily sends it (`published_date` is sent for news searches only)."""
    result = {"url": url, "title": title, "content": content, "score": score, "raw_content": None}
    if published_date is not None:
        result["published_date"] = published_date
    return result


@dataclass(frozen=True)
class _Raw:
    """An answer sent as it is, for answers the real API should never give."""

    body: bytes
    status: int
    content_type: str


@dataclass
class TavilyRequest:
    """One request the fake received."""

    query: str
    body: dict[str, Any]
    authorization: str
    status: int

    @property
    def max_results(self) -> int | None:
        value = self.body.get("max_results")
        return value if isinstance(value, int) else None

    @property
    def topic(self) -> str | None:
        return self.body.get("topic")

    @property
    def time_range(self) -> str | None:
        return self.body.get("time_range")


@dataclass
class FakeTavily:
    """The fake server; `url` is its base URL once entered."""

    api_key: str = "tvly-test"
    result_base: str = "https://example.com"
    results_for: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[TavilyRequest] = field(default_factory=list, init=False)
    url: str = field(default="", init=False)
    _script: deque[int | _Raw] = field(default_factory=deque, init=False, repr=False)
    _closing: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _runner: web.AppRunner | None = field(default=None, init=False, repr=False)

    def fail_next(self, status: int, n: int = 1) -> None:
        """Answer the next `n` requests with `status` (401, 429, 432, 500 …) and an error body."""
        self._script.extend([status] * n)

    def hang_next(self, n: int = 1) -> None:
        """Hold the next `n` requests open until the fake closes (for client timeouts)."""
        self._script.extend([_HANG] * n)

    def answer_next(
        self, body: bytes | str, *, status: int = 200, content_type: str = "application/json"
    ) -> None:
        """Answer the next request with exactly `body` (a list, `null`, bytes that are not
        UTF-8, a 204 ...)."""
        data = body.encode() if isinstance(body, str) else body
        self._script.append(_Raw(data, status, content_type))

    def drop_next(self) -> None:
        """Close the next request's connection without answering."""
        self._script.append(_DROP)

    def default_results(
        self, query: str, max_results: int = DEFAULT_RESULTS
    ) -> list[dict[str, Any]]:
        """What an unscripted query gets: deterministic, derived from the query."""
        slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") or "q"
        base = self.result_base.rstrip("/")
        return [
            tavily_result(
                f"{base}/{slug}/{i}",
                f"{query} - result {i}",
                f"Result {i} about {query}: a deterministic snippet from the fake Tavily.",
                score=round(0.9 - i / 10, 2),
            )
            for i in range(1, min(max_results, DEFAULT_RESULTS) + 1)
        ]

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/search", self._search)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _search(self, request: web.Request) -> web.Response:
        authorization = request.headers.get("Authorization", "")
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self._record("", {}, authorization, 400)
        query = body.get("query")
        if authorization != f"Bearer {self.api_key}":
            return self._record(str(query or ""), body, authorization, 401)
        if not isinstance(query, str) or not query:
            return self._record("", body, authorization, 400)
        if self._script:
            step = self._script.popleft()
            if isinstance(step, _Raw):
                self.requests.append(TavilyRequest(query, body, authorization, step.status))
                headers = {"Content-Type": step.content_type}
                return web.Response(body=step.body, status=step.status, headers=headers)
            if step == _DROP:
                self.requests.append(TavilyRequest(query, body, authorization, 0))
                assert request.transport is not None
                request.transport.close()
                return web.Response()  # never sent: the connection is already closed
            if step == _HANG:
                await self._closing.wait()
                step = 503
            return self._record(query, body, authorization, step)
        return self._record(query, body, authorization, 200)

    def _record(
        self, query: str, body: dict[str, Any], authorization: str, status: int
    ) -> web.Response:
        self.requests.append(TavilyRequest(query, body, authorization, status))
        if status != 200:
            message = _MESSAGES.get(status, "Error.")
            return web.json_response({"detail": {"error": message}}, status=status)
        max_results = body.get("max_results", 5)
        news = body.get("topic") == "news"
        results = self.results_for.get(query)
        if results is None:
            results = self.default_results(query, max_results)
            if news:
                results = [{**r, "published_date": NEWS_DATE} for r in results]
        if not news:
            results = [{k: v for k, v in r.items() if k != "published_date"} for r in results]
        return web.json_response(
            {
                "query": query,
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "results": results[:max_results],
                "response_time": 0.01,
                "request_id": f"fake-{len(self.requests)}",
            }
        )
