"""Search failover: Tavily, then Brave, then the key-less engine, against the local fakes; which
provider answered is named in web_search's result, and thin results say how to refine."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from ddgs import exceptions as ddgs_errors

from bot.agent.report.model import Source, SourceRegistry
from bot.agent.web.brave import BraveSearch
from bot.agent.web.registry import ToolContext, research_tools
from bot.agent.web.search import SearchChain, TavilySearch, build_search
from bot.config import Settings
from bot.errors import ConfigError
from tests.agent.web.test_search import ScriptedProvider
from tests.fakes.brave_api import FakeBrave, brave_result
from tests.fakes.tavily_api import FakeTavily

TAVILY_KEY = "tvly-test"
BRAVE_KEY = "brave-test"
KEYLESS_HIT = Source(url="https://keyless.example/acme", title="Acme", snippet="from ddgs")


@pytest.fixture
async def tavily() -> AsyncIterator[FakeTavily]:
    async with FakeTavily(api_key=TAVILY_KEY, result_base="https://web.example") as fake:
        yield fake


@pytest.fixture
async def brave() -> AsyncIterator[FakeBrave]:
    async with FakeBrave(api_key=BRAVE_KEY, result_base="https://web.example") as fake:
        yield fake


@pytest.fixture
async def chain(tavily: FakeTavily, brave: FakeBrave) -> AsyncIterator[SearchChain]:
    keyless = ScriptedProvider("ddgs", [KEYLESS_HIT])
    providers = [
        TavilySearch(TAVILY_KEY, tavily.url, timeout_s=5),
        BraveSearch(BRAVE_KEY, brave.url, timeout_s=5),
        keyless,
    ]
    async with SearchChain(providers) as searcher:
        yield searcher


async def web_search(chain: SearchChain, query: str = "acme robotics") -> tuple[str, str, bool]:
    """(heading, body, is_error) of one web_search call, as the model would see them."""
    tools = research_tools(chain, None, timeout_s=5)  # type: ignore[arg-type]  # no page reads
    result = await tools.call(ToolContext(SourceRegistry()), "web_search", {"query": query})
    return result.output.heading, result.output.body, result.is_error


async def test_brave_results_become_sources_without_markup(brave: FakeBrave) -> None:
    brave.results_for["acme"] = [
        brave_result(
            "https://acme.example/", "Acme &amp; Co", "<strong>Acme</strong> builds robots &lt;3"
        )
    ]
    provider = BraveSearch(BRAVE_KEY, brave.url, timeout_s=5)
    try:
        [source] = await provider.search("acme", 30)
    finally:
        await provider.aclose()

    assert (source.url, source.title, source.snippet) == (
        "https://acme.example/",
        "Acme & Co",
        "Acme builds robots <3",
    )
    [request] = brave.requests
    assert request.path == "/res/v1/web/search"
    assert request.query == {"q": "acme", "count": "20"}  # Brave's own maximum
    assert request.headers["X-Subscription-Token"] == BRAVE_KEY


async def test_tavily_answers_first(chain: SearchChain, brave: FakeBrave) -> None:
    heading, _, _ = await web_search(chain)

    assert heading == "Results for 'acme robotics' (from tavily):"
    assert brave.requests == []


async def test_when_tavily_fails_brave_answers_and_the_heading_says_so(
    chain: SearchChain, tavily: FakeTavily, brave: FakeBrave
) -> None:
    tavily.fail_next(432)

    heading, body, is_error = await web_search(chain)

    assert not is_error
    assert heading == "Results for 'acme robotics' (from brave after tavily failed):"
    assert "[1] acme robotics - Brave result 1\nhttps://web.example/brave/acme-robotics/1" in body
    assert len(brave.requests) == 1


async def test_when_both_keyed_providers_fail_the_keyless_engine_answers(
    chain: SearchChain, tavily: FakeTavily, brave: FakeBrave
) -> None:
    tavily.fail_next(500)
    brave.fail_next(429)

    heading, body, _ = await web_search(chain)

    assert heading.startswith(
        "Only 1 useful result for 'acme robotics' (from ddgs after tavily, brave failed)."
    )
    assert "https://keyless.example/acme" in body


async def test_when_all_fail_the_error_names_each_in_chain_order(
    tavily: FakeTavily, brave: FakeBrave
) -> None:
    tavily.fail_next(401)
    brave.fail_next(503)
    keyless = ScriptedProvider("ddgs", ddgs_errors.RatelimitException("202 Ratelimit"))
    providers = [
        TavilySearch(TAVILY_KEY, tavily.url, timeout_s=5),
        BraveSearch(BRAVE_KEY, brave.url, timeout_s=5),
        keyless,
    ]
    async with SearchChain(providers) as failing:
        heading, body, is_error = await web_search(failing)

    assert is_error and heading == "web_search failed: (details below)"
    assert body.startswith("search failed: tavily: invalid API key (401)")
    assert (
        "; brave: Brave Search answered HTTP 503 (the service is failing); ddgs: rate limited"
        in body
    )


async def test_a_wrong_brave_key_falls_through(tavily: FakeTavily, brave: FakeBrave) -> None:
    tavily.fail_next(429)
    providers = [
        TavilySearch(TAVILY_KEY, tavily.url, timeout_s=5),
        BraveSearch("wrong", brave.url, timeout_s=5),
        ScriptedProvider("ddgs", [KEYLESS_HIT]),
    ]
    async with SearchChain(providers) as searcher:
        answer = await searcher.answer("acme", 5)

    assert (answer.provider, answer.failed) == ("ddgs", ["tavily", "brave"])


async def test_a_failure_is_logged_once_until_the_provider_recovers(
    chain: SearchChain, tavily: FakeTavily, caplog: pytest.LogCaptureFixture
) -> None:
    tavily.fail_next(432, n=3)

    with caplog.at_level(logging.DEBUG, logger="bot.agent.web.search"):
        for _ in range(4):
            await chain.answer("acme", 3)

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith("search provider tavily failed: forbidden")
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["search provider tavily answers again"]


async def test_no_results_say_so_and_suggest_refining(
    chain: SearchChain, tavily: FakeTavily
) -> None:
    tavily.results_for["zzqx"] = []

    heading, body, is_error = await web_search(chain, "zzqx")

    assert not is_error and body == ""
    assert heading.startswith("No results for 'zzqx' (from tavily). Try broader or different words")


async def test_results_without_anything_said_do_not_count_as_useful(
    chain: SearchChain, tavily: FakeTavily
) -> None:
    tavily.results_for["thin"] = [
        {"url": "https://a.example/", "title": "", "content": ""},
        {"url": "https://b.example/", "title": "B", "content": "About B."},
    ]

    heading, _, _ = await web_search(chain, "thin")

    assert heading.startswith("Only 1 useful result for 'thin' (from tavily).")


async def test_build_search_orders_tavily_brave_then_keyless(
    tavily: FakeTavily, brave: FakeBrave
) -> None:
    settings = Settings.from_mapping(
        {
            "TAVILY_API_KEY": TAVILY_KEY,
            "TAVILY_BASE_URL": tavily.url,
            "BRAVE_API_KEY": BRAVE_KEY,
            "BRAVE_API_URL": brave.url,
        }
    )
    async with build_search(settings) as built:
        assert [p.name for p in built.providers] == ["tavily", "brave", "ddgs"]
    async with build_search(Settings.from_mapping({"BRAVE_API_KEY": BRAVE_KEY})) as built:
        assert [p.name for p in built.providers] == ["brave", "ddgs"]


def test_a_timeout_for_a_tool_that_does_not_exist_stops_the_bot() -> None:
    with pytest.raises(ConfigError, match="RESEARCH_BOT_TOOL_TIMEOUTS names no tool: web_serch"):
        research_tools(
            ScriptedProvider("x", []),
            None,
            timeout_s=5,
            timeouts={"web_serch": 3},  # type: ignore[arg-type]
        )
