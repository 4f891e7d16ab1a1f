"""The MCP server over Streamable HTTP on a free port of 127.0.0.1, against the fake model and
web, and the SDK's own client that talks to it with a workspace's bearer token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.extension import ClientExtension
from mcp.client.streamable_http import streamable_http_client

from bot.adapters.mcp.callers import Tokens
from bot.adapters.mcp.http import http_server, mcp_app
from bot.adapters.mcp.runs import McpRuns
from bot.adapters.mcp.settings import load_mcp_settings
from bot.compose import Services, open_services
from bot.config import Settings
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import Cli, eventually
from tests.replica_world import free_port

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n\n## Overview\nFounded 2015 [1].\n"
TOKEN_A = "token-of-workspace-a-0123456789"
TOKEN_B = "token-of-workspace-b-9876543210"


@pytest.fixture
async def served(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
) -> AsyncIterator[tuple[str, Services]]:
    """The server on a free port; a test parametrizes it indirectly with RESEARCH_BOT_MCP_WAIT_S."""
    env = world_env(tmp_path, anthropic_api, tavily, web)
    async with mcp_server(env, wait_s=getattr(request, "param", "120")) as serving:
        yield serving


@asynccontextmanager
async def mcp_server(
    env: dict[str, str], *, wait_s: str = "120"
) -> AsyncIterator[tuple[str, Services]]:
    """The bot with `env`, served over HTTP on a free port with TOKEN_A and TOKEN_B: the /mcp
    address, and the services behind it."""
    settings = Settings.from_mapping(env)
    tokens_json = json.dumps({TOKEN_A: "T0AAA", TOKEN_B: "acme-agents"})
    mcp = load_mcp_settings(
        {"RESEARCH_BOT_MCP_TOKENS": tokens_json, "RESEARCH_BOT_MCP_WAIT_S": wait_s}
    )
    async with open_services(settings) as services:
        service = McpRuns(services.store, services.runs, services.followups)
        tokens = Tokens.parse(mcp.tokens)
        app = mcp_app(service, tokens, wait_s=mcp.wait_s, host="127.0.0.1")
        server = http_server(app, "127.0.0.1", 0)
        task = asyncio.create_task(server.serve())

        async def started() -> bool:
            return server.started

        await eventually(started)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}/mcp", services
        finally:
            server.should_exit = True
            await task


@asynccontextmanager
async def client(
    url: str,
    token: str,
    extensions: Sequence[ClientExtension] | None = None,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """`mode`: "auto", the current revision (2026-07-28), or "legacy", the handshake-era one
    before it (2025-11-25), as a client the SDK's previous releases made would speak."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=20) as http,
        Client(
            streamable_http_client(url, http_client=http),
            cache=None,
            extensions=extensions,
            mode=mode,
        ) as session,
    ):
        yield session


@asynccontextmanager
async def serving(cli: Cli) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """One `serve mcp` process, once it answers HTTP (401 without a token)."""
    port = free_port()
    process = await cli.start("serve", "mcp", "--port", str(port))
    url = f"http://127.0.0.1:{port}/mcp"

    async def answers() -> bool:
        try:
            async with httpx2.AsyncClient() as http:
                return (await http.post(url, json={})).status_code == 401
        except httpx2.TransportError:
            return False

    try:
        await eventually(answers, within_s=30, every_s=0.05)
        yield process, url
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()
