"""A local fake of Brave's web search API (`GET /res/v1/web/search`, `X-Subscription-Token`).

    async with FakeBrave(api_key="brave-test", result_base=web.url) as brave:   # BRAVE_API_URL
        brave.results_for["acme"] = [brave_result("https://acme.example/", "Acme", "<strong>Acme</strong> …")]
        brave_result(url, page_age="2024-03-02T09:00:00", age="March 2, 2024")   # a dated result
        brave.requests[-1].query["freshness"]                                     # "pw" …

A query with no entry gets two deterministic results under `result_base`, undated; a wrong or
missing key answers 401. Failures: see tests/fakes/api_server.py.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from tests.fakes.api_server import FakeApi


def brave_result(
    url: str,
    title: str = "",
    description: str = "",
    *,
    page_age: str | None = None,
    age: str | None = None,
) -> dict[str, Any]:
    """One web result as Brave sends it (descriptions mark matches with <strong>); `page_age`
    (ISO 8601) and `age` (`March 2, 2024`, `2 days ago`) when Brave knows the page's date."""
    result: dict[str, Any] = {
        "type": "search_result",
        "url": url,
        "title": title,
        "description": description,
        "is_source_local": False,
        "language": "en",
        "family_friendly": True,
    }
    if page_age is not None:
        result["page_age"] = page_age
    if age is not None:
        result["age"] = age
    return result


class FakeBrave(FakeApi):
    def __init__(
        self, api_key: str = "brave-test", result_base: str = "https://example.com"
    ) -> None:
        super().__init__("/res/v1")
        self.api_key = api_key
        self.result_base = result_base.rstrip("/")
        self.results_for: dict[str, list[dict[str, Any]]] = {}

    def routes(self) -> dict[str, Handler]:
        return {"/web/search": self._search}

    async def _search(self, request: web.Request) -> web.Response:
        if request.headers.get("X-Subscription-Token") != self.api_key:
            error = {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}
            return web.json_response(error, status=401)
        query = request.query.get("q", "")
        results = self.results_for.get(query)
        if results is None:
            slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") or "q"
            results = [
                brave_result(
                    f"{self.result_base}/brave/{slug}/{i}",
                    f"{query} - Brave result {i}",
                    f"Result {i} about <strong>{query}</strong> from the fake Brave.",
                )
                for i in (1, 2)
            ]
        count = int(request.query.get("count", "20"))
        answer: dict[str, Any] = {"type": "search", "query": {"original": query}}
        if results:
            answer["web"] = {"type": "search", "results": results[:count]}
        return web.json_response(answer)
