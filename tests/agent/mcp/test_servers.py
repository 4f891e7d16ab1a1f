"""McpServers against real MCP servers (the SDK's own server side), over stdio and Streamable
HTTP: results as the server sent them, calls in parallel, and every failure an McpCallError with
a reason, or a server shown as not answering; a server that dies is started again, and stopping
is bounded. One set of servers (two processes) serves the whole module."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import mcp.types
import pytest
import pytest_asyncio

from bot.agent.mcp.config import ServerConfig, ToolFilter
from bot.agent.mcp.servers import MAX_RESULT_CHARS, STOP_WITHIN_S, McpCallError, McpServers
from tests.fakes.mcp import STDIO_SERVER
from tests.fakes.mcp.catalog import INJECTION, RPC_ERROR, crm_server, rogue_server
from tests.fakes.mcp.http_server import HttpMcpServer

pytestmark = pytest.mark.asyncio(loop_scope="module")
QUICK = {"retry_first_s": 0.05, "retry_max_s": 0.2}
"""Retries in a few hundredths of a second: a test waits on the reconnection, never a timer."""


def _stdio(name: str, which: str, *flags: str, **own: object) -> ServerConfig:
    return ServerConfig.model_validate(
        {"name": name, "command": sys.executable, "args": [STDIO_SERVER, which, *flags], **own}
    )


@pytest.fixture(scope="module")
def crm_http() -> Iterator[HttpMcpServer]:
    with HttpMcpServer(crm_server) as fake:
        yield fake


@pytest.fixture(scope="module")
def rogue_http() -> Iterator[HttpMcpServer]:
    with HttpMcpServer(rogue_server) as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def servers(crm_http: HttpMcpServer, rogue_http: HttpMcpServer) -> AsyncIterator[McpServers]:
    configs = [
        _stdio("crm", "crm"),
        _stdio("rogue", "rogue", timeout_s=15),
        ServerConfig(name="impatient", url=rogue_http.url, timeout_s=0.3),
        ServerConfig(name="crm_http", url=crm_http.url, headers={"Authorization": "Bearer t-1"}),
        ServerConfig(
            name="wiki", url=crm_http.url, tools=ToolFilter(include=["search_wiki", "meet"])
        ),
        ServerConfig(name="nowiki", url=crm_http.url, tools=ToolFilter(exclude=["search_wiki"])),
    ]
    async with McpServers(configs, **QUICK) as started:
        await started.status()
        yield started


def _texts(result: mcp.types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, mcp.types.TextContent)]


@pytest.mark.parametrize("server", ["crm", "crm_http"])
async def test_results_come_as_the_server_sent_them(servers: McpServers, server: str) -> None:
    account = await servers.call(server, "lookup_company", {"name": "Acme Robotics"})
    wiki = await servers.call(server, "search_wiki", {"query": "Acme"})
    logo = await servers.call(server, "company_logo", {"name": "Acme"})
    missing = await servers.call(server, "missing_account", {"name": "Nobody"})

    assert account.structured_content is not None
    assert account.structured_content["url"] == "https://crm.example/accounts/acme-robotics"
    assert _texts(account) == [
        "Acme Robotics: account owner Dana Reyes, 120 employees, customer since 2023."
    ]
    kinds = [type(block) for block in wiki.content]
    assert kinds == [mcp.types.TextContent, mcp.types.ResourceLink, mcp.types.EmbeddedResource]
    link, embedded = wiki.content[1], wiki.content[2]
    assert isinstance(link, mcp.types.ResourceLink)
    assert str(link.uri) == "https://wiki.example/pages/acme"
    assert isinstance(embedded, mcp.types.EmbeddedResource)
    assert isinstance(embedded.resource, mcp.types.TextResourceContents)
    assert "Renewal due in March" in embedded.resource.text
    assert isinstance(logo.content[0], mcp.types.ImageContent)
    assert missing.is_error and _texts(missing) == ["No account named 'Nobody' in the CRM."]


async def test_a_remote_server_gets_the_configured_headers(
    servers: McpServers, crm_http: HttpMcpServer
) -> None:
    await servers.call("crm_http", "lookup_company", {"name": "Acme"})
    assert any(request.get("authorization") == "Bearer t-1" for request in crm_http.requests)


@pytest.mark.parametrize("server", ["crm", "crm_http"])
async def test_calls_to_one_server_run_in_parallel(servers: McpServers, server: str) -> None:
    # `meet` answers only once three calls are in at the same time: one at a time, none would.
    party = f"parallel-{server}"
    answers = await asyncio.wait_for(
        asyncio.gather(
            *(servers.call(server, "meet", {"party": party, "expected": 3}) for _ in range(3))
        ),
        timeout=10,
    )
    assert [_texts(answer) for answer in answers] == [[f"{party}: 3 met"]] * 3


async def test_tools_are_listed_once_and_filtered(servers: McpServers) -> None:
    every = ["lookup_company", "search_wiki", "company_logo", "missing_account", "meet"]
    assert [tool.name for tool in servers.tools("crm")] == every
    assert [tool.name for tool in servers.tools("wiki")] == ["search_wiki", "meet"]
    assert "search_wiki" not in [tool.name for tool in servers.tools("nowiki")]
    lookup = servers.tools("crm")[0]
    assert lookup.description and "CRM" in lookup.description
    assert lookup.input_schema["properties"]["name"]["type"] == "string"
    assert servers.tools("nobody") == []

    statuses = {status.name: status for status in await servers.status()}
    assert statuses["wiki"].answers and statuses["wiki"].tools == every
    assert statuses["wiki"].allowed == ["search_wiki", "meet"]
    assert (statuses["crm"].transport, statuses["crm_http"].transport) == ("stdio", "http")


async def test_a_tool_the_config_leaves_out_cannot_be_called(servers: McpServers) -> None:
    with pytest.raises(McpCallError, match="wiki does not allow the tool 'lookup_company'"):
        await servers.call("wiki", "lookup_company", {"name": "Acme"})
    with pytest.raises(McpCallError, match="No MCP server is named 'crn'"):
        await servers.call("crn", "lookup_company", {"name": "Acme"})


async def test_a_json_rpc_error_is_a_call_error(servers: McpServers) -> None:
    with pytest.raises(McpCallError) as raised:
        await servers.call("rogue", "rpc_error", {})
    assert str(raised.value) == f"rogue · rpc_error failed: JSON-RPC error -32050: {RPC_ERROR}"


async def test_a_call_past_the_timeout_is_a_call_error(servers: McpServers) -> None:
    started = time.monotonic()
    with pytest.raises(McpCallError, match=r"^impatient · hang timed out after 0\.3 s\.$"):
        await servers.call("impatient", "hang", {})
    assert time.monotonic() - started < 5
    answer = await servers.call("impatient", "hang", {"seconds": 0})  # still connected
    assert not answer.is_error


async def test_a_flood_is_refused_and_a_large_answer_is_not(servers: McpServers) -> None:
    with pytest.raises(McpCallError, match=r"rogue · flood answered [\d.]+ MiB, over the 4 MiB"):
        await servers.call("rogue", "flood", {"kib": MAX_RESULT_CHARS // 1024})
    large = await servers.call("rogue", "flood", {"kib": 512})
    assert len(_texts(large)[0]) == 512 * 1024


async def test_a_malformed_answer_is_a_call_error(servers: McpServers) -> None:
    with pytest.raises(McpCallError, match="rogue · malformed answered something malformed"):
        await servers.call("rogue", "malformed", {})


async def test_injected_text_is_returned_as_data(servers: McpServers) -> None:
    # Defusing is the tools' (fence, mentions): here it must arrive unchanged, and only as data.
    answer = await servers.call("rogue", "inject", {})
    assert _texts(answer) == [INJECTION] and not answer.is_error


async def test_a_local_server_that_dies_mid_call_is_started_again(servers: McpServers) -> None:
    with pytest.raises(McpCallError, match=r"^rogue · crash: the server exited during the call"):
        await servers.call("rogue", "crash", {})
    statuses = {status.name: status for status in await servers.status()}
    if not statuses["rogue"].answers:
        assert statuses["rogue"].reason == "the server exited" and servers.tools("rogue") == []

    await asyncio.wait_for(servers.connected("rogue"), timeout=20)
    answer = await servers.call("rogue", "hang", {"seconds": 0})
    assert _texts(answer) == ["answered after 0.0 s"]


class _Records(logging.Handler):
    """The servers' log, and an event once `wanted` retries have been logged."""

    def __init__(self, wanted: int) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.retried = asyncio.Event()
        self._wanted = wanted

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if sum("still" in r.getMessage() for r in self.records) >= self._wanted:
            self.retried.set()


@pytest.fixture
def records() -> Iterator[_Records]:
    handler = _Records(wanted=4)
    logger = logging.getLogger("bot.agent.mcp.servers")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


async def test_a_server_unreachable_at_start_is_logged_once_and_retried(
    records: _Records, tmp_path: Path
) -> None:
    configs = [
        ServerConfig(name="gone", command=str(tmp_path / "no-such-server")),
        ServerConfig(name="down", url="http://127.0.0.1:9/mcp", timeout_s=2),
    ]
    async with McpServers(configs, **QUICK) as servers:
        statuses = await servers.status()
        with pytest.raises(McpCallError, match=r"MCP server gone is not connected \(cannot start"):
            await servers.call("gone", "lookup_company", {"name": "Acme"})
        await asyncio.wait_for(records.retried.wait(), timeout=10)

    assert [(s.name, s.answers, s.tools) for s in statuses] == [
        ("gone", False, []),
        ("down", False, []),
    ]
    assert "no-such-server" in statuses[0].reason and "No such file" in statuses[0].reason
    assert "ConnectError" in statuses[1].reason
    assert servers.tools("gone") == [] and servers.tools("down") == []
    warnings = [r.getMessage() for r in records.records if r.levelno == logging.WARNING]
    assert sorted(warnings) == sorted(
        f"MCP server {s.name}: {s.reason}; retrying" for s in statuses
    )


async def test_a_remote_server_that_goes_away_is_reconnected() -> None:
    with HttpMcpServer(rogue_server) as fake:
        async with McpServers([ServerConfig(name="web", url=fake.url)], **QUICK) as servers:
            await servers.connected("web")
            with pytest.raises(McpCallError, match=r"^web · crash failed: JSON-RPC error"):
                await servers.call("web", "crash", {})
            fake.stop()
            gone = r"^(web · hang: the server disconnected during|MCP server web is not connected)"
            with pytest.raises(McpCallError, match=gone):
                await servers.call("web", "hang", {"seconds": 0})
            [status] = await servers.status()
            assert not status.answers and status.tools == []

            fake.start()
            await asyncio.wait_for(servers.connected("web"), timeout=20)
            answer = await servers.call("web", "hang", {"seconds": 0})
            assert _texts(answer) == ["answered after 0.0 s"]


async def test_stopping_ends_a_server_that_ignores_its_stdin_closing(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    config = _stdio("stubborn", "crm", "--stubborn", env={"MCP_FAKE_PIDFILE": str(pidfile)})
    async with McpServers([config], **QUICK) as servers:
        await asyncio.wait_for(servers.connected("stubborn"), timeout=20)
        pid = int(pidfile.read_text())
        started = time.monotonic()

    assert time.monotonic() - started < STOP_WITHIN_S
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
