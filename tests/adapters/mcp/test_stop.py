"""`research-bot serve mcp` stopped by SIGTERM (a deploy): a `research` call still waiting is
answered with its run's id, the process ends on its own terms (status 0, no traceback), and the
next start finishes the run, whose report is then fetched. And a port or address it cannot
listen on is one line, before anything is served."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from pathlib import Path
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send

from bot.adapters.mcp.http import http_server
from bot.errors import ConfigError
from tests.adapters.mcp.conftest import REPORT, TOKEN_A, client, serving
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import Cli, eventually


async def test_a_stop_answers_the_waiting_call_and_the_next_start_finishes_its_run(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    env = world_env(tmp_path, anthropic_api, tavily, web) | {
        "RESEARCH_BOT_MCP_TOKENS": json.dumps({TOKEN_A: "acme-agents"}),
    }
    cli = Cli(tmp_path, env)
    held = anthropic_api.hold()  # the run is researching when the stop comes
    async with serving(cli) as (process, url), client(url, TOKEN_A) as mcp:
        await mcp.list_tools()  # as agents do first: the answer is then checked without a call
        answering = asyncio.create_task(mcp.call_tool("research", {"topic": "Acme Robotics"}))
        await anthropic_api.wait_for_requests(1)
        process.send_signal(signal.SIGTERM)
        answer = await answering
        _, stderr = await process.communicate()

    assert process.returncode == 0
    assert b"Traceback" not in stderr
    assert not answer.is_error, answer.content
    assert answer.structured_content is not None
    run_id = answer.structured_content["run_id"]
    assert answer.content[0].text.splitlines()[-1] == (  # type: ignore[union-attr]
        "The server is stopping; the run is kept and finishes once it is back: "
        "research_status follows it."
    )

    async def report(body: dict[str, Any]) -> Any:
        return reply_text(REPORT)

    anthropic_api.responder = report
    held.set()
    async with serving(cli) as (_, url), client(url, TOKEN_A) as mcp:

        async def done() -> bool:
            state = await mcp.call_tool("research_status", {"run_id": run_id})
            return state.structured_content is not None and (
                state.structured_content["status"] == "done"
            )

        await eventually(done, within_s=20, every_s=0.05)
        kept = await mcp.call_tool("get_report", {"run_id": run_id})

    assert not kept.is_error, kept.content
    assert kept.structured_content is not None
    # Stopped at its first model call, it had no evidence yet: the next start researched anew.
    assert kept.structured_content["ending"] == "completed"
    assert "## TL;DR" in kept.content[0].text  # type: ignore[union-attr]


async def _nothing(scope: Scope, receive: Receive, send: Send) -> None:
    """Never called: the server is not served."""


def test_a_port_in_use_or_an_address_not_of_this_machine_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as in_use:
            http_server(_nothing, "127.0.0.1", port)
    with pytest.raises(ConfigError) as elsewhere:
        http_server(_nothing, "192.0.2.1", 0)  # TEST-NET-1: never this machine's

    assert str(in_use.value) == (
        f"port {port} is already in use: stop the other process, or serve MCP on another "
        "port (--port, RESEARCH_BOT_MCP_PORT)"
    )
    assert str(elsewhere.value).startswith("The MCP server cannot listen on 192.0.2.1:0 (")
    assert str(elsewhere.value).endswith(
        "use an address of this machine, such as 127.0.0.1 or 0.0.0.0."
    )


async def test_the_server_answers_without_waiting_for_the_clients_acknowledgement() -> None:
    server = http_server(_nothing, "127.0.0.1", 0)
    serving = asyncio.create_task(server.serve())

    async def started() -> bool:
        return server.started

    await eventually(started)
    try:
        # asyncio sets TCP_NODELAY on the connections of a listening socket that names TCP;
        # on one that does not, each small answer waited ~40 ms (bench/mcp_serve.py).
        assert server.servers[0].sockets[0].proto == socket.IPPROTO_TCP
    finally:
        server.should_exit = True
        await serving
