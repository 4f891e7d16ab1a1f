"""`research` as an MCP task (the `io.modelcontextprotocol/tasks` extension), driven over HTTP on
127.0.0.1 by the SDK's own client with a client extension that claims the task result: created
at once, followed with `tasks/get` to its report, cancelled with `tasks/cancel`, closed to other
workspaces, and a plain `research` for a client that does not declare the extension.

Only the 2026-07-28 revision is driven: the SDK carries a `resultType: "task"` result on modern
revisions only (its client activates result claims there alone, `mcp/client/session.py`
`_claim_active`; its server checks an older revision's `tools/call` result against the core
`CallToolResult`, `mcp/server/runner.py` `_serialize`), so the 2025-11-25 in-core tasks cannot be
served or asked for with it. A client of an older revision gets the plain tools."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import pytest
from mcp.client.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolResult,
    CancelTaskRequestParams,
    EmptyResult,
    GetTaskRequestParams,
    Request,
    Result,
)

from bot.adapters.mcp.callers import Caller
from bot.compose import Services
from bot.domain import Request as RunRequest
from tests.adapters.mcp.conftest import REPORT, TOKEN_A, TOKEN_B, client
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.process import eventually

TASKS = "io.modelcontextprotocol/tasks"


class Task(Result):
    """A task as the extension's 2026-07-28 revision gives it."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class CreatedTask(Task):
    """The `CreateTaskResult`: what a `research` call declaring the extension answers."""

    result_type: Literal["task"] = "task"


class DetailedTask(Task):
    """What `tasks/get` answers: the task, with its result or error once it has ended."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class GetTask(Request[GetTaskRequestParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: GetTaskRequestParams
    name_param = "taskId"  # the revision routes tasks/* by the Mcp-Name header


class CancelTask(Request[CancelTaskRequestParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: CancelTaskRequestParams
    name_param = "taskId"


async def get_task(mcp: Client, task_id: str) -> DetailedTask:
    request = GetTask(params=GetTaskRequestParams(task_id=task_id))
    return await mcp.session.send_request(request, DetailedTask)


async def cancel_task(mcp: Client, task_id: str) -> EmptyResult:
    request = CancelTask(params=CancelTaskRequestParams(task_id=task_id))
    return await mcp.session.send_request(request, EmptyResult)


async def until_ended(mcp: Client, task_id: str) -> DetailedTask:
    """Polls `tasks/get` until the task ends: at the suite's pace rather than the server's
    suggested interval (two seconds, meant for runs of minutes), so the test stays quick."""
    last: list[DetailedTask] = []

    async def ended() -> bool:
        last.append(await get_task(mcp, task_id))
        return last[-1].status != "working"

    await eventually(ended, seen=lambda: last[-1] if last else None)
    return last[-1]


class Tasks(ClientExtension):
    """A client of the extension: a task result is followed to its end, and its result is
    what `call_tool` returns."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        async def resolve(task: CreatedTask, ctx: ClaimContext) -> CallToolResult:
            request = GetTask(params=GetTaskRequestParams(task_id=task.task_id))
            last: list[DetailedTask] = []

            async def ended() -> bool:
                last.append(await ctx.session.send_request(request, DetailedTask))
                return last[-1].status != "working"

            await eventually(ended)
            assert last[-1].result is not None, last[-1]
            return CallToolResult.model_validate(last[-1].result)

        return [ResultClaim(result_type="task", model=CreatedTask, resolve=resolve)]


async def test_research_is_a_task_at_once_followed_to_its_report(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, services = served
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics"})]),
        reply_text(REPORT),
    )
    gate = anthropic_api.hold()  # nothing can end before the task has been answered
    async with client(url, TOKEN_A, [Tasks()]) as mcp:
        created = await mcp.session.call_tool(
            "research", {"topic": "Acme Robotics"}, allow_claimed=True
        )
        assert isinstance(created, CreatedTask), created
        working = await get_task(mcp, created.task_id)
        gate.set()
        done = await until_ended(mcp, created.task_id)
        again = await get_task(mcp, created.task_id)
        anthropic_api.script(reply_tools([("web_search", {"query": "Beta"})]), reply_text(REPORT))
        followed = await mcp.call_tool("research", {"topic": "Beta"})  # the claim follows it

    assert (created.status, created.ttl_ms) == ("working", None)
    assert created.poll_interval_ms is not None and created.poll_interval_ms > 0
    stored = await services.store.get_run(created.task_id)  # the task id is the run's
    assert (stored.origin.platform, stored.origin.workspace) == ("mcp", "T0AAA")
    assert working.status == "working" and working.status_message, working
    assert working.created_at == created.created_at
    assert done.status == "completed" and done.result is not None, done
    result = CallToolResult.model_validate(done.result)
    assert not result.is_error and "## TL;DR" in result.content[0].text
    assert result.structured_content is not None
    assert result.structured_content["status"] == "done"
    assert result.structured_content["run_id"] == created.task_id
    assert again.result == done.result and again.last_updated_at == done.last_updated_at
    assert not followed.is_error and "## TL;DR" in followed.content[0].text
    assert followed.structured_content is not None
    assert followed.structured_content["topic"] == "Beta"


async def test_tasks_cancel_ends_the_run_cancelled_without_a_report(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, _ = served
    anthropic_api.hold()
    async with client(url, TOKEN_A, [Tasks()]) as mcp:
        created = await mcp.session.call_tool("research", {"topic": "Acme"}, allow_claimed=True)
        assert isinstance(created, CreatedTask), created
        await anthropic_api.wait_for_requests(1)
        ack = await cancel_task(mcp, created.task_id)
        ended = await until_ended(mcp, created.task_id)
        cancelled_again = await cancel_task(mcp, created.task_id)
        report = await mcp.call_tool("get_report", {"run_id": created.task_id})

    assert ack.result_type == cancelled_again.result_type == "complete"  # empty acknowledgements
    assert ended.status == "cancelled" and ended.result is None and ended.error is None
    assert report.is_error and "ended without a report" in report.content[0].text


async def test_another_workspace_task_id_answers_as_an_unknown_one(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, _ = served
    anthropic_api.hold()
    async with client(url, TOKEN_A, [Tasks()]) as a, client(url, TOKEN_B, [Tasks()]) as b:
        created = await a.session.call_tool("research", {"topic": "Acme"}, allow_claimed=True)
        assert isinstance(created, CreatedTask), created
        refusals = []
        for ask in (get_task, cancel_task):
            for task_id in (created.task_id, "r0000000000"):
                with pytest.raises(MCPError) as refused:
                    await ask(b, task_id)
                refusals.append(refused.value.error)
        still = await get_task(a, created.task_id)

    assert all(error.code == INVALID_PARAMS for error in refusals)
    said = {e.message.replace(created.task_id, "ID").replace("r0000000000", "ID") for e in refusals}
    assert said == {"No run ID here."}
    assert still.status == "working"  # B's cancel reached nothing


async def test_a_bad_argument_is_one_sentence_and_starts_nothing(
    served: tuple[str, Services],
) -> None:
    url, _ = served
    async with client(url, TOKEN_A, [Tasks()]) as mcp:
        mode = await mcp.session.call_tool(
            "research", {"topic": "Acme", "mode": "stocks"}, allow_claimed=True
        )
        empty = await mcp.session.call_tool("research", {"topic": "  "}, allow_claimed=True)
        listed = await mcp.call_tool("list_runs", {})

    for refused in (mode, empty):
        assert isinstance(refused, CallToolResult) and refused.is_error, refused
        assert "\n" not in refused.content[0].text
    assert isinstance(mode, CallToolResult) and "Unknown mode 'stocks'" in mode.content[0].text
    assert listed.structured_content == {"runs": []}


async def test_a_client_without_the_extension_gets_the_plain_result(
    served: tuple[str, Services], anthropic_api: FakeAnthropic
) -> None:
    url, _ = served
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics"})]), reply_text(REPORT)
    )
    async with client(url, TOKEN_A) as mcp:
        result = await mcp.call_tool("research", {"topic": "Acme Robotics"})
        advertised = mcp.server_capabilities.extensions or {}
        assert result.structured_content is not None
        with pytest.raises(MCPError) as refused:
            await get_task(mcp, result.structured_content["run_id"])

    assert TASKS in advertised
    assert not result.is_error and "## TL;DR" in result.content[0].text
    assert result.structured_content["status"] == "done"
    assert refused.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_a_run_that_fails_is_a_failed_task_with_its_error(
    served: tuple[str, Services],
) -> None:
    url, _ = served  # nothing scripted: the model answers every call with a 500
    async with client(url, TOKEN_A, [Tasks()]) as mcp:
        created = await mcp.session.call_tool("research", {"topic": "Acme"}, allow_claimed=True)
        assert isinstance(created, CreatedTask), created
        ended = await until_ended(mcp, created.task_id)

    assert ended.status == "failed" and ended.result is None, ended
    assert ended.error is not None and ended.error["code"] == INTERNAL_ERROR
    assert "Anthropic API" in ended.error["message"]


async def test_a_task_this_server_did_not_create_is_dated_from_its_stored_run(
    served: tuple[str, Services],
) -> None:
    """Another replica's run, or one from before a restart: `tasks/get` finds its record."""
    url, services = served
    asked_at = datetime(2026, 1, 1, 9, 30, tzinfo=UTC)
    origin = Caller(workspace="T0AAA", label="T0AAA").origin()
    stored = await services.store.create_run(
        RunRequest(topic="Acme", origin=origin), asked_at=asked_at
    )
    async with client(url, TOKEN_A, [Tasks()]) as mcp:
        task = await get_task(mcp, stored.run_id)

    assert (task.task_id, task.status) == (stored.run_id, "working")
    assert datetime.fromisoformat(task.created_at) == asked_at
