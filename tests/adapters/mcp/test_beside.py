"""`research-bot serve` with RESEARCH_BOT_MCP_TOKENS: the MCP server at /mcp beside the Slack
bot, in one process on one runs service; SIGTERM (serve's own, not uvicorn's) stops both, and
an MCP `research` call still waiting is answered with its run's id."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from tests.adapters.mcp.conftest import client
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import Cli
from tests.replica_world import free_port, replicas

SECRET = "beside-secret"
TOKEN = "token-of-the-beside-test-0123"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
def beside(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb, slack: FakeSlack
) -> tuple[Cli, str]:
    """`serve` with the Slack bot and MCP beside it, against the fakes, and its /mcp address."""
    port = free_port()
    env = world_env(tmp_path, anthropic_api, tavily, web) | {
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.api_url,
        "RESEARCH_BOT_MCP_TOKENS": json.dumps({TOKEN: "acme-agents"}),
        "RESEARCH_BOT_MCP_PORT": str(port),
    }
    return Cli(tmp_path, env), f"http://127.0.0.1:{port}/mcp"


async def test_serve_answers_mcp_beside_slack_behind_its_tokens(beside: tuple[Cli, str]) -> None:
    cli, url = beside
    async with replicas(cli, 1, SECRET) as [bot]:
        assert await bot.sender.command("Acme Robotics") == (200, "")
        async with httpx2.AsyncClient() as http:
            refused = await http.post(url, json={})
        async with client(url, TOKEN) as mcp:
            listed = await mcp.call_tool("list_runs", {})

    assert refused.status_code == 401 and refused.content == b""
    assert not listed.is_error and listed.structured_content is not None
    assert bot.process.returncode == 0  # stopped by serve's own SIGTERM handling


async def test_a_stop_answers_the_mcp_call_still_waiting_for_its_run(
    beside: tuple[Cli, str], anthropic_api: FakeAnthropic
) -> None:
    cli, url = beside
    anthropic_api.hold()  # the run is researching when the deploy stops the bot
    async with replicas(cli, 1, SECRET) as [bot]:
        async with client(url, TOKEN) as mcp:
            await mcp.list_tools()
            answering = asyncio.create_task(mcp.call_tool("research", {"topic": "Acme Robotics"}))
            await anthropic_api.wait_for_requests(1)
            bot.process.send_signal(signal.SIGTERM)
            answer = await answering
        await bot.process.wait()

    assert bot.process.returncode == 0
    assert not answer.is_error, answer.content
    assert answer.content[0].text.splitlines()[-1] == (  # type: ignore[union-attr]
        "The server is stopping; the run is kept and finishes once it is back: "
        "research_status follows it."
    )
    assert not [line for line in bot.lines if "Traceback" in line]
