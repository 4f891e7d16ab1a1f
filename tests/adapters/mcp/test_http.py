"""research-bot as an MCP server over Streamable HTTP on 127.0.0.1, driven by the SDK's own
client against the fake model and web: a run followed to its report with progress, a cancelled
call summarized, two tokens that cannot see each other's runs, and 401 for any other caller."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from bot.adapters.mcp.callers import Caller, Tokens
from bot.adapters.mcp.http import check_exposure
from bot.adapters.mcp.listing import PAGE
from bot.compose import Services
from bot.domain import Request
from bot.errors import ConfigError
from tests.adapters.mcp.conftest import REPORT, TOKEN_A, TOKEN_B, client
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use
from tests.process import eventually

REVISIONS = {"auto": "2026-07-28", "legacy": "2025-11-25"}
"""The revision each client mode speaks with this server: the current one and the one before."""


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_research_waits_for_the_report_with_a_progress_notification_per_step(
    served: tuple[str, Services], anthropic_api: FakeAnthropic, mode: str
) -> None:
    url, services = served
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics"})]), reply_text(REPORT)
    )
    steps: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        steps.append(message or "")

    async with client(url, TOKEN_A, mode=mode) as mcp:
        revision = mcp.protocol_version
        result = await mcp.call_tool("research", {"topic": "Acme Robotics"}, None, progress)
        run_id = result.structured_content["run_id"]
        listed = await mcp.call_tool("list_runs", {})
        report = await mcp.call_tool("get_report", {"run_id": run_id, "format": "html"})
        resources = await mcp.list_resources()
        uri = f"research-bot://runs/{run_id}/report"
        read = await mcp.read_resource(uri)
        anthropic_api.script(
            reply([tool_use("answer", {"answer": "They build robots [1]."})], "tool_use")
        )
        followup = await mcp.call_tool(
            "ask_followup", {"run_id": run_id, "question": "What do they make?"}
        )

    assert revision == REVISIONS[mode]
    assert not result.is_error, result.content
    state = result.structured_content
    assert state["status"] == "done" and state["ending"] == "completed"
    assert "## TL;DR" in result.content[0].text  # the report itself, as text
    assert any("Acme Robotics" in step for step in steps), steps
    assert [r["run_id"] for r in listed.structured_content["runs"]] == [state["run_id"]]
    assert report.structured_content["format"] == "html" and "<html" in report.content[0].text
    stored = await services.store.get_run(state["run_id"])
    assert (stored.origin.platform, stored.origin.workspace) == ("mcp", "T0AAA")
    assert [str(r.uri) for r in resources.resources] == [uri]
    assert resources.resources[0].mime_type == "text/markdown"
    assert "## TL;DR" in read.contents[0].text
    answer = followup.structured_content
    assert not followup.is_error and answer["asked_about"] == run_id, followup.content
    assert answer["status"] == "done" and "They build robots" in answer["answer"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_cancelled_call_summarizes_the_run_and_get_report_gives_it(
    served: tuple[str, Services], anthropic_api: FakeAnthropic, mode: str
) -> None:
    """Cancelled as each revision cancels: the handshake-era one with notifications/cancelled,
    the current one by closing the call's response stream."""
    url, _ = served
    anthropic_api.script(
        reply_tools([("web_search", {"query": "acme"})]),
        reply_text("never delivered"),
        reply_text(REPORT),
    )
    first = anthropic_api.hold()
    async with client(url, TOKEN_A, mode=mode) as mcp:
        assert mcp.protocol_version == REVISIONS[mode]
        call = asyncio.create_task(mcp.call_tool("research", {"topic": "Acme"}))
        await anthropic_api.wait_for_requests(1)
        first.set()
        second = anthropic_api.hold()
        await anthropic_api.wait_for_requests(2)
        call.cancel()
        await anthropic_api.wait_for_cancelled(1)  # the turn under way gave way to the write-up
        second.set()
        listed = await mcp.call_tool("list_runs", {})
        run_id = listed.structured_content["runs"][0]["run_id"]

        async def reported() -> bool:
            state = await mcp.call_tool("research_status", {"run_id": run_id})
            return state.structured_content["status"] == "done"

        await eventually(reported)
        report = await mcp.call_tool("get_report", {"run_id": run_id})

    assert report.structured_content["ending"] == "forced_synthesized"
    assert "## TL;DR" in report.content[0].text


async def test_two_tokens_see_only_their_own_workspace(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, _ = served
    anthropic_api.hold()  # the run stays queued or running: it is only looked at
    async with client(url, TOKEN_A) as a, client(url, TOKEN_B) as b:
        started = await a.call_tool("start_research", {"topic": "Acme Robotics"})
        run_id = started.structured_content["run_id"]
        seen_by_b = await b.call_tool("research_status", {"run_id": run_id})
        unknown = await b.call_tool("research_status", {"run_id": "r0000000000"})
        cancel_by_b = await b.call_tool("cancel_research", {"run_id": run_id})
        listed_by_b = await b.call_tool("list_runs", {})
        resources_of_b = await b.list_resources()
        resources_of_a = await a.list_resources()
        with pytest.raises(MCPError, match="not one this server gave"):
            await a.list_resources(cursor="999999")
        seen_by_a = await a.call_tool("research_status", {"run_id": run_id})

    assert started.structured_content["status"] in ("queued", "running")
    assert seen_by_b.is_error and unknown.is_error and cancel_by_b.is_error
    assert seen_by_b.content[0].text.replace(run_id, "ID") == unknown.content[0].text.replace(
        "r0000000000", "ID"
    )
    assert listed_by_b.structured_content["runs"] == []
    assert resources_of_b.resources == [] and resources_of_b.next_cursor is None
    assert [str(r.uri) for r in resources_of_a.resources] == [
        f"research-bot://runs/{run_id}/report"
    ]
    assert not seen_by_a.is_error and seen_by_a.structured_content["run_id"] == run_id


async def test_bad_arguments_are_one_sentence_each(served: tuple[str, Services]) -> None:
    url, _ = served
    async with client(url, TOKEN_A) as mcp:
        mode = await mcp.call_tool("start_research", {"topic": "Acme", "mode": "stocks"})
        empty = await mcp.call_tool("start_research", {"topic": "   "})
        long = await mcp.call_tool("start_research", {"topic": "x" * 2000})
        fmt = await mcp.call_tool("get_report", {"run_id": "r1", "format": "pdf"})
    said = [r.content[0].text for r in (mode, empty, long, fmt)]
    assert all(r.is_error for r in (mode, empty, long, fmt))
    assert "Unknown mode 'stocks'" in said[0] and "what to research" in said[1]
    assert "keep the topic under 300" in said[2] and "use md or html" in said[3]
    assert not any("Traceback" in text or "\n" in text for text in said)


async def test_a_missing_or_wrong_token_is_401_and_nothing_else(
    served: tuple[str, Services],
) -> None:
    url, _ = served
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient() as http:
        missing = await http.post(url, json=body)
        wrong = await http.post(url, json=body, headers={"Authorization": "Bearer nope"})
    for answer in (missing, wrong):
        assert answer.status_code == 401 and answer.content == b""


def test_without_tokens_only_a_loopback_address_is_served() -> None:
    check_exposure(Tokens({}), "127.0.0.1")
    check_exposure(Tokens({TOKEN_A: "T0AAA"}), "0.0.0.0")
    with pytest.raises(ConfigError, match="without RESEARCH_BOT_MCP_TOKENS"):
        check_exposure(Tokens({}), "0.0.0.0")


@pytest.mark.parametrize("served", ["0.2"], indirect=True)
async def test_a_call_past_the_wait_answers_with_the_id_and_summarize_now_writes_it_up(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, _ = served
    anthropic_api.script(
        reply_tools([("web_search", {"query": "acme"})]),
        reply_text("never delivered"),
        reply_text(REPORT),
    )
    first = anthropic_api.hold()  # the run cannot end before the 0.2 s wait does
    async with client(url, TOKEN_A) as mcp:
        waited = await mcp.call_tool("research", {"topic": "Acme"})
        run_id = waited.structured_content["run_id"]
        first.set()
        second = anthropic_api.hold()
        await anthropic_api.wait_for_requests(2)
        summarized = await mcp.call_tool("summarize_now", {"run_id": run_id})
        await anthropic_api.wait_for_cancelled(1)
        second.set()

        async def reported() -> bool:
            state = await mcp.call_tool("research_status", {"run_id": run_id})
            return state.structured_content["status"] == "done"

        await eventually(reported)
        report = await mcp.call_tool("get_report", {"run_id": run_id})
        again = await mcp.call_tool("summarize_now", {"run_id": run_id})

    assert not waited.is_error and waited.structured_content["status"] in ("queued", "running")
    assert "Still researching after 0.2 s" in waited.content[0].text
    assert not summarized.is_error and summarized.content[0].text.startswith("Summarizing")
    assert report.structured_content["ending"] == "forced_synthesized"
    assert again.is_error and again.content[0].text.endswith(
        f"Run {run_id} has already ended (done)."
    )


async def test_cancel_research_ends_a_running_run_without_a_report(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, _ = served
    anthropic_api.hold()
    async with client(url, TOKEN_A) as mcp:
        started = await mcp.call_tool("start_research", {"topic": "Acme"})
        run_id = started.structured_content["run_id"]
        await anthropic_api.wait_for_requests(1)
        cancelled = await mcp.call_tool("cancel_research", {"run_id": run_id})

        async def ended() -> bool:
            state = await mcp.call_tool("research_status", {"run_id": run_id})
            return state.structured_content["status"] == "cancelled"

        await eventually(ended)
        report = await mcp.call_tool("get_report", {"run_id": run_id})

    assert not cancelled.is_error and cancelled.content[0].text.startswith("Cancelling")
    assert report.is_error and f"Run {run_id} ended without a report" in report.content[0].text


async def test_the_report_resources_are_listed_newest_first_a_page_at_a_time(
    served: tuple[str, Services],
) -> None:
    url, services = served
    origin = Caller(workspace="T0AAA", label="T0AAA").origin()
    first = datetime(2026, 1, 1, tzinfo=UTC)
    stored = [
        await services.store.create_run(
            Request(topic=f"Company {n}", origin=origin), asked_at=first + timedelta(minutes=n)
        )
        for n in range(PAGE + 5)
    ]
    async with client(url, TOKEN_A) as mcp:
        page_1 = await mcp.list_resources()
        page_2 = await mcp.list_resources(cursor=page_1.next_cursor)

    listed = [str(r.uri) for r in [*page_1.resources, *page_2.resources]]
    newest_first = [f"research-bot://runs/{run.run_id}/report" for run in reversed(stored)]
    assert len(page_1.resources) == PAGE and page_2.next_cursor is None
    assert listed == newest_first
