"""Faults of the web and of search, end to end: a hostile page or a failing search provider
reaches the model as a short `is_error` tool result, and the run still ends `completed` with a
report.

Each drives the real bot (store, runs service, the real anthropic and tavily SDK clients)
against the fake Messages API, the fake Tavily and the local fake web, and asserts what the
model was told next, the ending and report, and the tool_finished event SQLite kept.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from bot.agent.events import Ending, ReportReady, RunFinished, ToolFinished
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Request, RunStatus
from tests.conftest import Recorder
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_HTML, FakeWeb, gzip_bomb

REPORT = "# Acme Robotics\n\n## TL;DR\nNothing could be read; no findings."
TOPIC = "Acme Robotics"
MiB = 1024 * 1024


@asynccontextmanager
async def bot(settings: Settings, **overrides: Any) -> AsyncIterator[Services]:
    async with open_services(settings.model_copy(update=overrides)) as services:
        yield services


@dataclass
class Told:
    """What one tool call came to: the tool_result the model got, and the finished run."""

    result: dict[str, Any]
    recorder: Recorder
    run_id: str

    @property
    def content(self) -> str:
        return str(self.result["content"])


async def call_tool(
    services: Services, anthropic_api: FakeAnthropic, tool: str, args: dict[str, Any]
) -> Told:
    """The model calls `tool` once, then writes REPORT; the run is waited for."""
    anthropic_api.script(reply_tools([(tool, args)]), reply_text(REPORT))
    recorder = Recorder()
    record = await services.runs.submit(Request(topic=TOPIC), recorder)
    await recorder.finished.wait()
    # The turn after the tool (a finish-guard check of the short report may follow it).
    [result] = anthropic_api.requests[1]["messages"][-1]["content"]
    return Told(result, recorder, record.run_id)


async def assert_told_and_completed(services: Services, told: Told, *, is_error: bool) -> None:
    """The model got a short result, the run completed with a report, and SQLite kept both."""
    assert told.result["type"] == "tool_result"
    assert told.result["is_error"] is is_error
    assert len(told.content) < 400, told.content
    last = told.recorder.events[-1]
    assert isinstance(last, RunFinished) and last.ending is Ending.COMPLETED, last
    assert any(isinstance(e, ReportReady) for e in told.recorder.events)
    assert "Nothing could be read" in told.recorder.outcome.markdown
    run = await services.store.get_run(told.run_id)
    assert run.status is RunStatus.DONE
    events = await services.store.events(told.run_id)
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(e.is_error, e.content) for e in finished] == [(is_error, told.content)]


async def read_page(services: Services, anthropic_api: FakeAnthropic, url: str) -> Told:
    told = await call_tool(services, anthropic_api, "read_page", {"url": url})
    await assert_told_and_completed(services, told, is_error=True)
    assert told.content.startswith("read_page failed: ") or "timed out" in told.content
    return told


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# --- the page reader ---


@pytest.mark.parametrize(
    ("reset", "error"), [(True, "ReadError"), (False, "RemoteProtocolError")], ids=["rst", "fin"]
)
async def test_a_connection_reset_mid_body(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb, reset: bool, error: str
) -> None:
    url = web.cut("/reset", ARTICLE_HTML.encode() * 20, after=2_000, reset=reset)

    told = await read_page(world, anthropic_api, url)

    assert f"could not fetch {url}: " in told.content
    assert "ReadError" in told.content or "RemoteProtocolError" in told.content


async def test_a_slow_drip_stops_at_the_tool_time_cap(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    url = web.drip("/drip", ARTICLE_HTML.encode())  # a byte every 10 ms: 17 s in all

    async with bot(settings, tool_timeout_s=1) as services:
        told = await read_page(services, anthropic_api, url)

    assert "read_page timed out" in told.content
    assert [r.path for r in web.requests] == ["/drip"]


async def test_a_redirect_loop(world: Services, anthropic_api: FakeAnthropic, web: FakeWeb) -> None:
    web.redirect("/ping", "/pong")
    web.redirect("/pong", "/ping")

    told = await read_page(world, anthropic_api, web.url + "/ping")

    assert "refused: more than 5 redirects from" in told.content
    assert len(web.requests) == 6


@pytest.mark.parametrize(
    ("location", "said", "paths"),
    [
        ("jar:http://127.0.0.1!/", "only http and https URLs are read, not jar:", ["/go"]),
        ("localhost:+11211aaa", "only http and https URLs are read, not localhost:", ["/go"]),
        # Same scheme, no host: a relative reference, so a path on the same (allowed) host.
        ("http:127.0.0.1/", "HTTP 404 Not Found", ["/go", "/127.0.0.1/"]),
    ],
)
async def test_a_redirect_with_a_scheme_but_no_host(
    world: Services,
    anthropic_api: FakeAnthropic,
    web: FakeWeb,
    location: str,
    said: str,
    paths: list[str],
) -> None:
    web.redirect("/go", location)

    told = await read_page(world, anthropic_api, web.url + "/go")

    assert said in told.content
    assert [r.path for r in web.requests] == paths


@pytest.mark.parametrize("content_type", ["application/octet-stream", "image/png"])
async def test_binary_content(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb, content_type: str
) -> None:
    url = web.page("/blob", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 100, content_type=content_type)

    told = await read_page(world, anthropic_api, url)

    assert f"refused: {url} is {content_type}, not a text page" in told.content


async def test_a_gzip_bomb(world: Services, anthropic_api: FakeAnthropic, web: FakeWeb) -> None:
    url = web.page("/bomb", gzip_bomb(32 * MiB), headers={"Content-Encoding": "gzip"})

    told = await read_page(world, anthropic_api, url)

    assert f"refused: {url} decompresses to more than 10,485,760 bytes" in told.content


async def test_a_charset_that_decodes_to_lone_surrogates(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    """utf-7 can spell a lone surrogate, which neither SQLite nor the next request can encode."""
    url = web.page("/utf7.txt", b"Acme +2AA- Robotics", content_type="text/plain; charset=utf-7")

    told = await call_tool(world, anthropic_api, "read_page", {"url": url})

    await assert_told_and_completed(world, told, is_error=False)
    assert "Acme ? Robotics" in told.content


# --- search ---


async def test_search_provider_answers_500(
    world: Services,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ddgs (the fallback) talks through primp, which pytest-socket cannot see: its documented
    # proxy setting points it at a closed local port, so it fails at once and offline.
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{closed_port()}")
    tavily.fail_next(500)

    told = await call_tool(world, anthropic_api, "web_search", {"query": "acme robotics"})

    await assert_told_and_completed(world, told, is_error=True)
    assert "search failed: tavily: HTTP 500; ddgs: " in told.content
    assert [r.status for r in tavily.requests] == [500]


async def test_search_provider_refuses_connections(
    settings: Settings, anthropic_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{closed_port()}")
    down = f"http://127.0.0.1:{closed_port()}"

    async with bot(settings, tavily_base_url=down) as services:
        told = await call_tool(services, anthropic_api, "web_search", {"query": "acme robotics"})
        await assert_told_and_completed(services, told, is_error=True)

    assert "search failed: tavily: network error" in told.content
    assert "; ddgs: " in told.content


async def test_search_provider_answers_garbage(
    world: Services,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{closed_port()}")
    tavily.answer_next("[]")  # tavily-python itself trips over an answer that is not an object

    told = await call_tool(world, anthropic_api, "web_search", {"query": "acme robotics"})

    await assert_told_and_completed(world, told, is_error=True)
    assert "tavily: unusable answer: the answer had an unexpected shape" in told.content


async def test_search_with_no_results(
    world: Services, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    tavily.results_for["acme robotics"] = []

    told = await call_tool(world, anthropic_api, "web_search", {"query": "acme robotics"})

    await assert_told_and_completed(world, told, is_error=False)
    assert told.content.startswith("No results for 'acme robotics'")
