"""The MCP HTTP server serves from an event loop of its own: a `research_status` this server can
answer from memory does not wait for the bot's loop, however busy the runs keep it. Here that
loop is not just busy but blocked outright while another thread's client asks."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from bot.adapters.mcp.loops import SWITCH_INTERVAL_S, OwnLoopServer
from bot.compose import Services
from tests.adapters.mcp.conftest import TOKEN_A, TOKEN_B, client
from tests.fakes.anthropic_api import FakeAnthropic
from tests.process import eventually

BLOCKED_AT_MOST_S = 10


def _asked_from_a_thread(url: str, token: str, run_id: str) -> tuple[bool, dict[str, Any] | str]:
    async def ask() -> tuple[bool, dict[str, Any] | str]:
        async with client(url, token) as mcp:
            answer = await mcp.call_tool("research_status", {"run_id": run_id})
        if answer.is_error:
            return True, answer.content[0].text  # type: ignore[union-attr]
        assert answer.structured_content is not None
        return False, answer.structured_content

    return asyncio.run(ask())


async def test_research_status_answers_while_the_bots_loop_is_blocked(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, services = served
    anthropic_api.hold()
    async with client(url, TOKEN_A) as mcp:
        started = await mcp.call_tool("start_research", {"topic": "Acme Robotics"})
        assert started.structured_content is not None
        run_id = started.structured_content["run_id"]
        await anthropic_api.wait_for_requests(1)  # researching, its model call held

        async def researching() -> bool:  # the run's events reach its listener a moment later
            answer = await mcp.call_tool("research_status", {"run_id": run_id})
            return answer.structured_content is not None and (
                answer.structured_content["step"] == "researching"
            )

        await eventually(researching)

        with ThreadPoolExecutor(1) as elsewhere:
            # `.result()` blocks this loop, the bot's (its runs, store and fakes run here), until
            # the thread's client has its answer: on this loop the call could never be served.
            own = elsewhere.submit(_asked_from_a_thread, url, TOKEN_A, run_id)
            own_answer = own.result(timeout=BLOCKED_AT_MOST_S)
            other = elsewhere.submit(_asked_from_a_thread, url, TOKEN_B, run_id)
            other_answer = other.result(timeout=BLOCKED_AT_MOST_S)

        # With the loop free again, calls that need it (the store) are answered there.
        stored = await mcp.call_tool("list_runs", {})

    assert own_answer == (
        False,
        {
            "run_id": run_id,
            "topic": "Acme Robotics",
            "status": "running",
            "step": "researching",
            "sources": 0,
            "cost_usd": 0.0,
            "queue_position": None,
            "ending": None,
            "claims_supported": None,
            "claims_checked": None,
            "error": None,
        },
    )
    # Another workspace's caller is refused from memory as from the store: as an unknown id.
    assert other_answer[0] is True and run_id in str(other_answer[1])
    assert stored.structured_content is not None
    assert [run["run_id"] for run in stored.structured_content["runs"]] == [run_id]
    assert services.runs.get_active(run_id) is not None


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app that serves nothing: only the servers' own lifetimes matter here."""


@asynccontextmanager
async def _serving() -> AsyncIterator[OwnLoopServer]:
    server = OwnLoopServer(uvicorn.Config(_nothing, host="127.0.0.1", port=0, lifespan="off"))
    task = asyncio.create_task(server.serve())

    async def started() -> bool:
        return server.started

    await eventually(started)
    try:
        yield server
    finally:
        server.should_exit = True
        await task


async def test_the_lock_is_handed_over_sooner_while_a_server_serves_and_as_before_after() -> None:
    before = sys.getswitchinterval()
    assert before != SWITCH_INTERVAL_S
    async with _serving():
        assert sys.getswitchinterval() == SWITCH_INTERVAL_S
        async with _serving():  # overlapping servers: the first to stop leaves it to the other
            pass
        assert sys.getswitchinterval() == SWITCH_INTERVAL_S
    assert sys.getswitchinterval() == before
