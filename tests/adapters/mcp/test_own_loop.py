"""The MCP HTTP server serves from an event loop of its own: a `research_status` this server can
answer from memory does not wait for the bot's loop, however busy the runs keep it. Here that
loop is not just busy but blocked outright while another thread's client asks."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bot.compose import Services
from tests.adapters.mcp.conftest import TOKEN_A, TOKEN_B, client
from tests.fakes.anthropic_api import FakeAnthropic

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
