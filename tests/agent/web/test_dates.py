"""Dates and recency: each provider's date becomes the source's ISO date and shows in the result
line; a recent search sends each provider's own parameter on the wire (real clients against the
fakes; ddgs, which no HTTP fake can reach, through its engine seam); the page reader keeps a
page's own date, through the extraction workers too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.agent.report.model import Source, SourceRegistry
from bot.agent.web.brave import BraveSearch
from bot.agent.web.dates import iso_date
from bot.agent.web.extract import Body, extract_page
from bot.agent.web.extract_pool import Extractor
from bot.agent.web.fetch import PageFetcher
from bot.agent.web.keyless import DdgsSearch
from bot.agent.web.registry import Toolbox, ToolContext, research_tools
from bot.agent.web.search import SearchChain, TavilySearch
from tests.fakes.brave_api import FakeBrave, brave_result
from tests.fakes.tavily_api import FakeTavily, tavily_result
from tests.fakes.web import ARTICLE_HTML, ARTICLE_PATH, DATED_ON, DATED_PATH, FakeWeb

KEY = "tvly-test"


@pytest.fixture
async def tavily() -> AsyncIterator[FakeTavily]:
    async with FakeTavily(api_key=KEY, result_base="https://web.example") as fake:
        yield fake


@pytest.fixture
async def brave() -> AsyncIterator[FakeBrave]:
    async with FakeBrave(api_key="brave-test", result_base="https://web.example") as fake:
        yield fake


class ScriptedDdgs:
    """Stands in for `ddgs.DDGS` at the provider's engine seam (`engine=`, called as the class
    would be): answers with rows in ddgs's own shapes, records every call and its arguments."""

    def __init__(self, news_rows: list[dict[str, Any]] | None = None) -> None:
        self.news_rows = news_rows or []
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.timeouts: list[int] = []

    def __call__(self, *, timeout: int) -> ScriptedDdgs:
        self.timeouts.append(timeout)
        return self

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append(("text", query, kwargs))
        return [{"title": "Acme", "href": "https://acme.example/", "body": "Acme builds robots."}]

    def news(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append(("news", query, kwargs))
        return self.news_rows


@pytest.mark.parametrize(
    ("written", "iso"),
    [
        ("Thu, 02 May 2024 09:30:00 GMT", "2024-05-02"),  # Tavily news
        ("2024-05-02T23:30:00-07:00", "2024-05-02"),  # the writer's day, not shifted to UTC
        ("2023-08-16T10:26:04", "2023-08-16"),  # Brave page_age
        ("August 16, 2023", "2023-08-16"),  # Brave age
        ("16 Aug 2023", "2023-08-16"),
        ("2 days ago", None),
        ("yesterday", None),
        ("2024-02-30", None),
        ("0001-01-01T00:00:00", None),
        ("", None),
        (None, None),
    ],
)
def test_provider_dates_become_iso_dates_or_nothing(written: str | None, iso: str | None) -> None:
    assert iso_date(written) == iso


async def test_a_recent_tavily_search_asks_for_news_in_that_range_and_keeps_dates(
    tavily: FakeTavily,
) -> None:
    provider = TavilySearch(KEY, tavily.url, timeout_s=5)
    try:
        recent = await provider.search("acme", 3, "week")
        general = await provider.search("acme", 3)
    finally:
        await provider.aclose()

    assert [(r.topic, r.time_range) for r in tavily.requests] == [
        ("news", "week"),
        ("general", None),
    ]
    assert "time_range" not in tavily.requests[1].body
    assert [s.published for s in recent] == ["2024-05-02"] * 3
    assert [s.published for s in general] == [None] * 3


async def test_a_recent_brave_search_sends_freshness_and_dates_come_from_page_age(
    brave: FakeBrave,
) -> None:
    brave.results_for["acme"] = [
        brave_result("https://a.example/", "A", page_age="2024-03-02T09:00:00", age="2 days ago"),
        brave_result("https://b.example/", "B", age="January 5, 2024"),
        brave_result("https://c.example/", "C", age="3 hours ago"),
    ]
    provider = BraveSearch("brave-test", brave.url, timeout_s=5)
    try:
        sources = await provider.search("acme", 5, "month")
        await provider.search("acme", 5)
    finally:
        await provider.aclose()

    assert [s.published for s in sources] == ["2024-03-02", "2024-01-05", None]
    assert brave.requests[0].query == {"q": "acme", "count": "5", "freshness": "pm"}
    assert "freshness" not in brave.requests[1].query


async def test_a_recent_ddgs_search_asks_for_news_with_its_timelimit() -> None:
    engine = ScriptedDdgs([
        {"date": "2024-05-02T08:00:00+00:00", "title": "Acme", "body": "News.", "url": "https://n.example/1"},
        {"date": "5 hours ago", "title": "Acme 2", "body": "More.", "url": "https://n.example/2"},
    ])  # fmt: skip
    provider = DdgsSearch(timeout_s=3, engine=engine)

    news = await provider.search("acme", 4, "day")
    web = await provider.search("acme", 4)

    assert engine.timeouts == [3, 3]
    assert engine.calls == [
        ("news", "acme", {"max_results": 4, "timelimit": "d"}),
        ("text", "acme", {"max_results": 4}),
    ]
    assert [(s.url, s.published) for s in news] == [
        ("https://n.example/1", "2024-05-02"),
        ("https://n.example/2", None),
    ]
    assert [(s.url, s.published) for s in web] == [("https://acme.example/", None)]


async def test_web_search_offers_recency_and_shows_each_result_date(tavily: FakeTavily) -> None:
    tavily.results_for["acme"] = [
        tavily_result("https://a.example/", "Acme raises $40M", "Series B.", published_date="Thu, 02 May 2024 09:30:00 GMT"),
        tavily_result("https://b.example/", "Acme at a fair", "Undated."),
    ]  # fmt: skip
    registry = SourceRegistry()
    async with SearchChain([TavilySearch(KEY, tavily.url, timeout_s=5)]) as chain:
        tools = research_tools(chain, None, timeout_s=5)  # type: ignore[arg-type]  # no reads
        result = await tools.call(
            ToolContext(registry), "web_search", {"query": "acme", "recency": "week"}
        )
        wrong = await tools.call(
            ToolContext(registry), "web_search", {"query": "acme", "recency": "decade"}
        )

    assert result.output.heading == "Results from the past week for 'acme' (from tavily):"
    assert result.output.body.startswith(
        "[1] Acme raises $40M — published 2024-05-02\nhttps://a.example/\nSeries B."
    )
    assert "[2] Acme at a fair\nhttps://b.example/" in result.output.body
    assert [s.published for s in registry.sources] == ["2024-05-02", None]
    assert tavily.requests[0].time_range == "week"
    assert wrong.is_error and "recency" in wrong.output.heading
    [schema] = [s for s in tools.schemas() if s["name"] == "web_search"]
    recency = schema["input_schema"]["properties"]["recency"]
    assert "news and recent events" in recency["description"]
    assert ["day", "week", "month", "year"] in [o.get("enum") for o in recency["anyOf"]]


def tools_reading(fetcher: PageFetcher) -> Toolbox:
    return research_tools(SearchChain([DdgsSearch(engine=ScriptedDdgs())]), fetcher, timeout_s=5)


async def test_a_page_read_says_its_own_date_in_the_heading_and_keeps_it(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    registry = SourceRegistry()
    tools = tools_reading(fetcher)

    dated = await tools.call(ToolContext(registry), "read_page", {"url": web.url + DATED_PATH})
    undated = await tools.call(ToolContext(registry), "read_page", {"url": web.url + ARTICLE_PATH})

    assert dated.output.heading == (
        f"[1] The page's title, address and text (published {DATED_ON}):"
    )
    assert undated.output.heading == "[2] The page's title, address and text:"
    assert [s.published for s in registry.sources] == [DATED_ON, None]


async def test_a_page_without_a_date_keeps_its_search_results_date(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    registry = SourceRegistry()
    url = web.url + ARTICLE_PATH
    registry.add(Source(url=url, title="Acme", snippet="Series B.", published="2024-05-02"))

    read = await tools_reading(fetcher).call(ToolContext(registry), "read_page", {"url": url})

    assert read.output.heading == "[1] The page's title, address and text (published 2024-05-02):"
    assert registry.sources[0].read and registry.sources[0].published == "2024-05-02"


DATED_PAGES = [
    ('<meta name="date" content="2023-11-20">', "https://news.example/acme", "2023-11-20"),
    (
        '<script type="application/ld+json">{"@type": "NewsArticle", '
        '"datePublished": "2022-06-01T08:00:00Z"}</script>',
        "https://news.example/acme",
        "2022-06-01",
    ),
    ("", "https://news.example/2021/04/09/acme-robots", "2021-04-09"),
    ("", "https://news.example/acme", None),
]


async def test_the_page_date_comes_from_meta_tags_json_ld_or_the_address_in_the_workers() -> None:
    found = []
    async with Extractor(workers=1, timeout_s=5) as pool:
        for head, url, _ in DATED_PAGES:
            html = ARTICLE_HTML.replace("</head>", head + "</head>")
            body = Body(url, "news.example", "text/html", "utf-8", html.encode())
            page = await pool.extract(body, 40_000)
            assert page == extract_page(body, 40_000)
            found.append(page.published)

    assert found == [date for _, _, date in DATED_PAGES]


def test_sources_stored_before_dates_existed_still_load() -> None:
    stored = '{"url": "https://acme.example/", "title": "Acme", "snippet": "", "read": true}'

    assert Source.model_validate_json(stored).published is None
