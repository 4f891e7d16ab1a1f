"""A run started over MCP is held to the same limits as any other: the workspace's daily budget
refuses it with the same message as chat and the terminal, before any model call; the per-run
cost limit writes it up from what it found; and `usage` counts it under its workspace, `mcp`."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.adapters.mcp.callers import Caller
from bot.agent.events import Usage, UsageRecorded
from bot.domain import Request
from tests.adapters.mcp.conftest import REPORT, TOKEN_A, TOKEN_B, client, mcp_server
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb

COSTLY = 100_000
"""Output tokens of a turn that costs $1.50 at the fake world's research-model price."""


async def test_a_spent_daily_budget_refuses_mcp_runs_of_that_workspace_only(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    env = world_env(tmp_path, anthropic_api, tavily, web) | {"RESEARCH_BOT_DAILY_BUDGET_USD": "1"}
    async with mcp_server(env) as (url, services):
        spent = await services.store.create_run(
            Request(topic="Earlier", origin=Caller(workspace="T0AAA", label="T0AAA").origin())
        )
        used = Usage(input_tokens=10, cost_usd=1.0)
        await services.store.append_event(
            spent.run_id, UsageRecorded(turn=1, model="m", usage=used)
        )
        async with client(url, TOKEN_A) as a, client(url, TOKEN_B) as b:
            started = await a.call_tool("start_research", {"topic": "Acme Robotics"})
            waited = await a.call_tool("research", {"topic": "Acme Robotics"})
            refused_requests = list(anthropic_api.requests)
            anthropic_api.hold()
            other = await b.call_tool("start_research", {"topic": "Acme Robotics"})

    said = "Today's research budget here ($1.00) is spent: $1.00 so far. It resets at midnight UTC"
    for refused in (started, waited):
        # The SDK names the tool before the bot's sentence: "Error executing tool research: ...".
        assert refused.is_error and said in refused.content[0].text, refused.content
        assert "Traceback" not in refused.content[0].text
    assert refused_requests == []  # refused before any model call
    assert not other.is_error and other.structured_content is not None
    assert other.structured_content["status"] in ("queued", "running")


async def test_the_run_cost_limit_writes_an_mcp_run_up_and_usage_counts_it_under_mcp(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    env = world_env(tmp_path, anthropic_api, tavily, web) | {"RESEARCH_BOT_MAX_RUN_COST_USD": "1"}
    costly = dataclasses.replace(
        reply_tools([("web_search", {"query": "acme"})]), output_tokens=COSTLY
    )
    anthropic_api.script(costly, reply_text(REPORT))
    async with mcp_server(env) as (url, services), client(url, TOKEN_A) as mcp:
        result = await mcp.call_tool("research", {"topic": "Acme Robotics"})
        rows = await services.store.usage(since=datetime.now(UTC) - timedelta(days=1))

    assert not result.is_error and result.structured_content is not None
    state = result.structured_content
    assert (state["status"], state["ending"]) == ("done", "budget_synthesized")
    assert state["cost_usd"] >= 1.0 and "## TL;DR" in result.content[0].text
    assert [(r.platform, r.workspace, r.runs, r.cost_usd) for r in rows] == [
        ("mcp", "T0AAA", 1, state["cost_usd"])
    ]
