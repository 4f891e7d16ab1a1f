"""A client that goes away mid-run without cancelling leaves the run going: it is stored, ends
on its own, and its report can be fetched later. Over the handshake-era revision (2025-11-25)
only `notifications/cancelled` cancels, so closing the connection is a disconnect, not a cancel
(from 2026-07-28 on closing the response stream is how a client cancels: `test_http`)."""

from __future__ import annotations

import asyncio
import contextlib

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from bot.compose import Services
from tests.adapters.mcp.conftest import REPORT, TOKEN_A, client
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.process import eventually


async def test_a_client_that_disconnects_mid_run_leaves_it_going_to_its_report(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, services = served
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]), reply_text(REPORT))
    gate = anthropic_api.hold()
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN_A}"}, timeout=20)
    async with contextlib.AsyncExitStack() as leaving:
        gone = await leaving.enter_async_context(
            Client(streamable_http_client(url, http_client=http), cache=None, mode="legacy")
        )
        call = asyncio.create_task(gone.call_tool("research", {"topic": "Acme Robotics"}))
        await anthropic_api.wait_for_requests(1)
        await http.aclose()  # the connection drops: no notifications/cancelled is sent
        with contextlib.suppress(Exception):  # the call fails with its connection
            await call
    stored = await services.store.list_runs(platform="mcp", workspace="T0AAA", limit=5)
    assert [run.status.value for run in stored] == ["running"]
    run_id = stored[0].run_id
    gate.set()

    async with client(url, TOKEN_A) as mcp:

        async def done() -> bool:
            state = await mcp.call_tool("research_status", {"run_id": run_id})
            assert state.structured_content is not None
            return state.structured_content["status"] == "done"

        await eventually(done)
        report = await mcp.call_tool("get_report", {"run_id": run_id})

    assert report.structured_content is not None
    assert report.structured_content["ending"] == "completed"  # not summarized: it ran on
    assert "## TL;DR" in report.content[0].text
