"""MCP servers as sources of real runs: the composition (runs service, store, engines, the SDK's
MCP client) against the fake Messages API and the SDK's own servers, one local (stdio) and two
remote (Streamable HTTP). The scripted model calls their tools by the names it was offered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.agent.events import Ending, ToolFinished
from bot.agent.fence import CLOSE
from bot.compose import open_services
from bot.config import Settings
from bot.domain import Depth, Origin, Request
from tests.conftest import Recorder, world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use
from tests.fakes.deep_script import DeepScript
from tests.fakes.mcp import http_entry, stdio_entry
from tests.fakes.mcp.catalog import PNG_1X1, RPC_ERROR, crm_server, rogue_server
from tests.fakes.mcp.http_server import HttpMcpServer
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb

CRM_LINK = "https://crm.example/accounts/acme-robotics"
REPORT = (
    "# Acme Robotics\n\n## TL;DR\n- Acme Robotics has 120 employees [1].\n\n"
    "## Overview\nIts account owner is Dana Reyes [1]; renewal is due in March [2].\n"
)


@pytest.fixture(scope="module")
def crm_http() -> Iterator[HttpMcpServer]:
    with HttpMcpServer(crm_server) as fake:
        yield fake


@pytest.fixture(scope="module")
def rogue_http() -> Iterator[HttpMcpServer]:
    with HttpMcpServer(rogue_server) as fake:
        yield fake


def _settings(tmp_path: Path, env: dict[str, str], servers: dict[str, Any]) -> Settings:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return Settings.from_mapping({**env, "RESEARCH_BOT_MCP_CONFIG": str(config)})


def _offered(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in body.get("tools", [])}


async def _judge_all_supported(body: dict[str, Any]) -> Any:
    """The claim judge, whenever it is asked: every claim supported."""
    assert "record_verdicts" in _offered(body), "an unscripted call that is not the judge"
    verdicts = [{"id": i, "verdict": "supported"} for i in range(1, 11)]
    return reply([tool_use("record_verdicts", {"claims": verdicts})], "tool_use")


async def test_a_run_asks_the_teams_servers_cites_them_and_goes_on_past_their_faults(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    crm_http: HttpMcpServer,
    rogue_http: HttpMcpServer,
) -> None:
    servers = {
        "crm": stdio_entry("crm"),
        "rogue": http_entry(rogue_http.url, timeout_s=0.5),
        "elsewhere": http_entry(crm_http.url, workspaces=["T9"]),  # another workspace's
    }
    settings = _settings(tmp_path, world_env(tmp_path, anthropic_api, tavily, web), servers)
    anthropic_api.script(
        reply_tools([("mcp__crm__lookup_company", {"name": "Acme Robotics"})]),
        reply_tools(
            [
                ("mcp__crm__search_wiki", {"query": "Acme"}),
                ("mcp__crm__company_logo", {"name": "Acme"}),
                ("mcp__crm__missing_account", {"name": "Nobody"}),
                ("mcp__rogue__hang", {"seconds": 60}),
                ("mcp__rogue__rpc_error", {}),
                ("mcp__elsewhere__lookup_company", {"name": "Acme Robotics"}),
                ("mcp__crm__lookup_company", {"name": "x" * 40_000}),
            ]
        ),
        # Its link is the wiki's: the same page, the same source (the first to name it titles it).
        reply_tools([("mcp__rogue__inject", {})]),
        reply_text(REPORT),
    )
    anthropic_api.responder = _judge_all_supported

    async with open_services(settings) as services:
        recorder = Recorder()
        record = await services.runs.submit(Request(topic="Acme Robotics"), recorder)
        await asyncio.wait_for(recorder.finished.wait(), 30)
        stored = await services.store.events(record.run_id)
        run_requests = list(anthropic_api.requests)
        # A follow-up in the same workspace is offered the same private tools.
        anthropic_api.script(
            reply([tool_use("answer", {"answer": "120 employees [1]."})], "tool_use")
        )
        asked = Recorder()
        await services.followups.ask(record.run_id, "How big?", Origin(), asked)
        await asyncio.wait_for(asked.finished.wait(), 30)

    outcome = recorder.outcome
    assert outcome.ending is Ending.COMPLETED
    offered = _offered(run_requests[0])
    lookup = offered["mcp__crm__lookup_company"]
    assert "Look a company up in the CRM" in lookup["description"]
    assert lookup["input_schema"]["properties"]["name"]["type"] == "string"
    assert {"mcp__rogue__hang", "mcp__crm__search_wiki", "web_search"} <= set(offered)
    assert not any(name.startswith("mcp__elsewhere__") for name in offered)
    assert "mcp__crm__lookup_company" in _offered(anthropic_api.requests[-1])

    # Each result is a source at the link its server gave, cited like a page.
    cited = [(source.title, source.url) for source in outcome.report.sources]
    assert cited == [
        ("crm · lookup_company", CRM_LINK),
        ("crm · search_wiki", "https://wiki.example/pages/acme"),
    ]
    results: dict[str, list[ToolFinished]] = {}
    for event in stored:
        if isinstance(event, ToolFinished):
            results.setdefault(event.name, []).append(event)
    first = {name: found[0] for name, found in results.items()}
    assert "120 employees" in first["mcp__crm__lookup_company"].content
    wiki = first["mcp__crm__search_wiki"].content
    assert "Renewal due in March" in wiki and "wiki.example/pages/acme" in wiki
    logo = first["mcp__crm__company_logo"]
    assert "(an image, image/png, not shown)" in logo.content and PNG_1X1 not in logo.content
    # Every fault is a tool error the model reads, and the run went on.
    missing, hang, rpc = (
        first[f"mcp__{n}"] for n in ("crm__missing_account", "rogue__hang", "rogue__rpc_error")
    )
    assert missing.is_error and "No account named 'Nobody'" in missing.content
    assert hang.is_error and "timed out after 0.5 s" in hang.content
    assert rpc.is_error and RPC_ERROR in rpc.content
    elsewhere = first["mcp__elsewhere__lookup_company"]
    assert elsewhere.is_error and "Unknown tool" in elsewhere.content
    oversized = results["mcp__crm__lookup_company"][1:]
    assert len(oversized) == 1 and oversized[0].is_error and "over 32,000" in oversized[0].content
    # What a server writes stays inside one fence: its closers are defused.
    injected = first["mcp__rogue__inject"]
    assert not injected.is_error
    assert injected.content.count(CLOSE) == 1 and injected.content.rstrip().endswith(CLOSE)


async def test_every_researcher_of_a_deep_run_of_a_workspace_is_offered_its_servers_alone(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    crm_http: HttpMcpServer,
) -> None:
    anthropic_api.responder = DeepScript(article_url=f"{web.url}{ARTICLE_PATH}")
    servers = {
        "crm": http_entry(crm_http.url, workspaces=["T1"]),
        "other": http_entry(crm_http.url, workspaces=["T2"], tools={"include": ["search_wiki"]}),
    }
    settings = _settings(tmp_path, world_env(tmp_path, anthropic_api, tavily, web), servers)
    origin = Origin(platform="slack", workspace="T1", channel="C1", user="U1")
    async with open_services(settings) as services:
        recorder = Recorder()
        request = Request(topic="Acme Robotics", depth=Depth.DEEP, origin=origin)
        await services.runs.submit(request, recorder)
        await asyncio.wait_for(recorder.finished.wait(), 30)

    researching = [
        set(_offered(r)) for r in anthropic_api.requests if "submit_finding" in _offered(r)
    ]
    assert len(researching) >= 3
    for tools in researching:
        assert {"mcp__crm__lookup_company", "mcp__crm__search_wiki", "web_search"} <= tools
        assert not any(name.startswith("mcp__other__") for name in tools)
