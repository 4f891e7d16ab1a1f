"""Two `research-bot serve mcp` replicas on one PostgreSQL: a run started on one that is killed
with kill -9 mid-run is finished by the other, and fetched from it over MCP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.adapters.mcp.conftest import serving
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import Cli, eventually

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n"
TOKEN = "token-of-the-replica-test-0123"


@asynccontextmanager
async def client(url: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=20) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as session,
    ):
        yield session


async def test_a_run_of_a_killed_replica_is_finished_by_the_other_and_fetched_from_it(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    pg_url: str,
) -> None:
    env = world_env(tmp_path, anthropic_api, tavily, web) | {
        "RESEARCH_BOT_DATABASE_URL": pg_url,
        "RESEARCH_BOT_RUN_LEASE_S": "3",
        "RESEARCH_BOT_MCP_TOKENS": json.dumps({TOKEN: "acme-agents"}),
    }
    cli = Cli(tmp_path, env)
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]))
    hang = asyncio.Event()

    async def hang_then_report(body: dict[str, Any]) -> Any:
        if not hang.is_set():
            await asyncio.Event().wait()
        return reply_text(REPORT)

    anthropic_api.responder = hang_then_report
    async with serving(cli) as (first, first_url), serving(cli) as (_, second_url):
        async with client(first_url) as mcp:
            started = await mcp.call_tool("start_research", {"topic": "Acme Robotics"})
            run_id = started.structured_content["run_id"]

            async def found_something() -> bool:
                state = await mcp.call_tool("research_status", {"run_id": run_id})
                return bool(state.structured_content["sources"])

            await eventually(found_something, within_s=20)
        hang.set()
        first.kill()
        await first.wait()

        async with client(second_url) as mcp:

            async def done() -> bool:
                state = await mcp.call_tool("research_status", {"run_id": run_id})
                return state.structured_content["status"] == "done"

            await eventually(done, within_s=20, every_s=0.1)
            report = await mcp.call_tool("get_report", {"run_id": run_id})

    assert not report.is_error, report.content
    assert report.structured_content["ending"] == "interrupted_synthesized"
    assert "## TL;DR" in report.content[0].text
