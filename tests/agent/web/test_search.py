"""Search providers and the chain: the real tavily-python client against the local fake Tavily."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
from ddgs import exceptions as ddgs_errors
from tavily import errors as tavily_errors

from bot.agent.report.model import Source, SourceRegistry
from bot.agent.web.registry import ToolContext, research_tools
from bot.agent.web.search import SNIPPET_CHARS, SearchChain, TavilySearch, build_search
from bot.config import Settings
from bot.errors import ToolError
from tests.fakes.tavily_api import FakeTavily, tavily_result

KEY = "tvly-test-key"


class ScriptedProvider:
    """A provider that answers from a list, or raises what it was given; records each query."""

    def __init__(self, name: str, answer: list[Source] | BaseException) -> None:
        self.name = name
        self.answer = answer
        self.queries: list[tuple[str, int]] = []

    async def search(self, query: str, max_results: int) -> list[Source]:
        self.queries.append((query, max_results))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return list(self.answer)


BACKUP_HIT = Source(url="https://backup.example/acme", title="Acme (backup)", snippet="from backup")


@pytest.fixture
async def tavily() -> AsyncIterator[FakeTavily]:
    async with FakeTavily(api_key=KEY, result_base="http://127.0.0.1:9/web") as fake:
        yield fake


@pytest.fixture
async def tavily_search(tavily: FakeTavily) -> AsyncIterator[TavilySearch]:
    provider = TavilySearch(KEY, tavily.url, timeout_s=5)
    yield provider
    await provider.aclose()


async def test_tavily_results_become_sources(
    tavily: FakeTavily, tavily_search: TavilySearch
) -> None:
    sources = await tavily_search.search("Acme Robotics", 5)

    expected = tavily.default_results("Acme Robotics")
    assert [(s.url, s.title, s.snippet) for s in sources] == [
        (r["url"], r["title"], r["content"]) for r in expected
    ]
    assert sources[0].url == "http://127.0.0.1:9/web/acme-robotics/1"
    [request] = tavily.requests
    assert request.query == "Acme Robotics"
    assert request.authorization == f"Bearer {KEY}"
    assert request.max_results == 5
    assert request.body["search_depth"] == "basic"
    assert request.status == 200


async def test_long_content_is_trimmed(tavily: FakeTavily, tavily_search: TavilySearch) -> None:
    tavily.results_for["long"] = [tavily_result("https://a.example/", "A", "word " * 1000)]

    [source] = await tavily_search.search("long", 3)

    assert len(source.snippet) <= SNIPPET_CHARS + 1
    assert source.snippet.endswith("…")


async def test_max_results_is_capped_to_tavily_limit(
    tavily: FakeTavily, tavily_search: TavilySearch
) -> None:
    await tavily_search.search("many", 50)

    assert tavily.requests[0].max_results == 20


async def test_wrong_key_is_refused_by_the_fake(tavily: FakeTavily) -> None:
    provider = TavilySearch("tvly-wrong", tavily.url, timeout_s=5)
    try:
        with pytest.raises(tavily_errors.InvalidAPIKeyError):
            await provider.search("Acme", 3)
    finally:
        await provider.aclose()
    assert tavily.requests[0].status == 401


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (401, "invalid API key"),
        (429, "rate or usage limit"),
        (432, "plan limit"),
        (500, "HTTP 500"),
    ],
)
async def test_tavily_failure_falls_through_to_next_provider(
    tavily: FakeTavily, tavily_search: TavilySearch, status: int, reason: str
) -> None:
    tavily.fail_next(status)
    backup = ScriptedProvider("backup", [BACKUP_HIT])

    sources = await SearchChain([tavily_search, backup]).search("Acme", 5)

    assert sources == [BACKUP_HIT]
    assert backup.queries == [("Acme", 5)]
    assert [r.status for r in tavily.requests] == [status]


async def test_fail_next_counts_down(tavily: FakeTavily, tavily_search: TavilySearch) -> None:
    tavily.fail_next(429, n=2)
    chain = SearchChain([tavily_search])

    for _ in range(2):
        with pytest.raises(ToolError):
            await chain.search("Acme", 3)
    assert len(await chain.search("Acme", 3)) == 3
    assert [r.status for r in tavily.requests] == [429, 429, 200]


async def test_all_failing_raises_tool_error_naming_each(
    tavily: FakeTavily, tavily_search: TavilySearch
) -> None:
    tavily.fail_next(432)
    backup = ScriptedProvider("ddgs", ddgs_errors.RatelimitException("202 Ratelimit"))

    with pytest.raises(ToolError) as caught:
        await SearchChain([tavily_search, backup]).search("Acme", 5)

    message = str(caught.value)
    assert message.startswith("search failed: tavily: forbidden or plan limit")
    assert "usage limit" in message
    assert "; ddgs: rate limited" in message


async def test_timeout_falls_through(tavily: FakeTavily) -> None:
    tavily.hang_next()
    slow = TavilySearch(KEY, tavily.url, timeout_s=0.1)
    backup = ScriptedProvider("backup", [BACKUP_HIT])
    try:
        sources = await SearchChain([slow, backup]).search("Acme", 5)
    finally:
        await slow.aclose()

    assert sources == [BACKUP_HIT]


async def test_malformed_answer_falls_through(
    tavily: FakeTavily, tavily_search: TavilySearch
) -> None:
    tavily.results_for["Acme"] = [{"title": "no url here"}]
    backup = ScriptedProvider("backup", [BACKUP_HIT])

    assert await SearchChain([tavily_search, backup]).search("Acme", 5) == [BACKUP_HIT]


async def test_empty_results_are_an_answer(tavily: FakeTavily, tavily_search: TavilySearch) -> None:
    tavily.results_for["nothing"] = []
    backup = ScriptedProvider("backup", [BACKUP_HIT])

    assert await SearchChain([tavily_search, backup]).search("nothing", 5) == []
    assert backup.queries == []


async def test_bugs_are_not_swallowed() -> None:
    broken = ScriptedProvider("broken", KeyError("results"))
    backup = ScriptedProvider("backup", [BACKUP_HIT])

    with pytest.raises(KeyError):
        await SearchChain([broken, backup]).search("Acme", 5)
    assert backup.queries == []


async def test_results_are_deduplicated_by_normalized_url() -> None:
    hits = [
        Source(url="https://Example.com/a", title="first"),
        Source(url="https://example.com/a/", title="trailing slash"),
        Source(url="https://example.com/a#section", title="fragment"),
        Source(url="https://example.com/a?page=2", title="other query"),
        Source(url="https://example.com/b", title="b"),
    ]
    provider = ScriptedProvider("dupes", hits)

    sources = await SearchChain([provider]).search("Acme", 10)

    assert [s.title for s in sources] == ["first", "other query", "b"]
    assert len(await SearchChain([provider]).search("Acme", 2)) == 2


async def test_build_search_puts_tavily_first(tavily: FakeTavily) -> None:
    settings = Settings.from_mapping({"TAVILY_API_KEY": KEY, "TAVILY_BASE_URL": tavily.url})

    async with build_search(settings) as chain:
        assert [p.name for p in chain.providers] == ["tavily", "ddgs"]
        sources = await chain.search("Acme", 2)

    assert [s.url for s in sources] == [r["url"] for r in tavily.default_results("Acme", 2)]
    assert tavily.requests[0].authorization == f"Bearer {KEY}"


async def test_build_search_without_key_uses_ddgs_only() -> None:
    async with build_search(Settings.from_mapping({})) as chain:
        assert [p.name for p in chain.providers] == ["ddgs"]


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        ("[]", 200, "unexpected shape"),
        ("null", 200, "unexpected shape"),
        ('"results"', 200, "unexpected shape"),
        ('{"results": null}', 200, "unexpected shape"),
        ('{"results": [{"url": 7}]}', 200, "unexpected shape"),
        ("<html>Bad gateway</html>", 200, "not JSON"),
        (b'{"results": "\xff\xfe"}', 200, "not JSON"),
        ("", 200, "not JSON"),
        ('{"results": []}', 201, "unexpected shape"),
        ("", 204, "unexpected shape"),
        ("<html>moved</html>", 301, "HTTP 301"),
        ("<html>Bad gateway</html>", 502, "HTTP 502"),
    ],
)
async def test_an_answer_tavily_should_never_give_falls_through(
    tavily: FakeTavily, tavily_search: TavilySearch, body: str | bytes, status: int, reason: str
) -> None:
    tavily.answer_next(body, status=status)
    broken_too = ScriptedProvider("ddgs", ddgs_errors.DDGSException("No results found."))

    with pytest.raises(ToolError) as caught:
        await SearchChain([tavily_search, broken_too]).search("Acme", 5)

    assert str(caught.value).startswith("search failed: tavily: ")
    assert reason in str(caught.value)
    assert "ddgs: failed: No results found." in str(caught.value)


async def test_a_dropped_or_refused_connection_falls_through(
    tavily: FakeTavily, tavily_search: TavilySearch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = TavilySearch(KEY, f"http://127.0.0.1:{probe.getsockname()[1]}", timeout_s=5)
    tavily.drop_next()
    backup = ScriptedProvider("backup", [BACKUP_HIT])
    try:
        for provider in (tavily_search, closed):
            assert await SearchChain([provider, backup]).search("Acme", 5) == [BACKUP_HIT]
    finally:
        await closed.aclose()

    assert [r.status for r in tavily.requests] == [0]
    assert len(backup.queries) == 2


async def test_result_urls_that_do_not_parse_are_kept_not_raised() -> None:
    hits = [
        Source(url="http://[::1/", title="broken IPv6"),
        Source(url="http://a\uff03b/", title="unsafe under NFKC"),
        Source(url="http://[::1/", title="the same again"),
        Source(url="https://example.com/a", title="fine"),
    ]

    sources = await SearchChain([ScriptedProvider("odd", hits)]).search("Acme", 10)

    assert [s.title for s in sources] == ["broken IPv6", "unsafe under NFKC", "fine"]


async def test_a_run_sends_each_search_once_and_a_repeat_gets_the_same_numbers_back() -> None:
    async with FakeTavily(api_key="tvly-test", result_base="https://web.example") as tavily:
        tavily.results_for["acme robotics"] = [
            tavily_result("https://a.example/", "Acme Robotics", "Warehouse robots.")
        ]
        shared = SourceRegistry()  # a deep run's researchers share it
        async with SearchChain([TavilySearch("tvly-test", tavily.url, timeout_s=5)]) as chain:
            tools = research_tools(chain, None, timeout_s=5)  # type: ignore[arg-type]  # no reads
            first = await tools.call(ToolContext(shared), "web_search", {"query": "acme robotics"})
            again = await tools.call(
                ToolContext(shared), "web_search", {"query": " Acme  ROBOTICS"}
            )
            recent = await tools.call(
                ToolContext(shared), "web_search", {"query": "acme robotics", "recency": "week"}
            )

    assert [r.query for r in tavily.requests] == ["acme robotics", "acme robotics"]
    assert not again.is_error
    assert again.output.heading.startswith("This run already searched for ' Acme  ROBOTICS'")
    assert again.output.body == first.output.body  # the same [1], not a new number
    assert [s.url for s in again.output.sources] == ["https://a.example/"]
    assert "already searched" not in recent.output.heading  # another search: it was sent
