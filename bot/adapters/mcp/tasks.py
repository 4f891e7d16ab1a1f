"""The MCP Tasks extension (`io.modelcontextprotocol/tasks`, as the 2026-07-28 revision defines
it) over the same runs service as the tools: a `research` call from a client that declares the
extension starts the run and answers at once with a task whose id is the run's; `tasks/get`
follows the run and, once it has ended, carries what `research` itself would have returned;
`tasks/cancel` cancels it as `cancel_research` does (`summarize_now` with the task id is how to
get an early report instead); `tasks/update` has nothing to take, as a research run never asks
for input. Every method resolves its caller as the tools do, so another workspace's task id is
answered exactly as an unknown one.

What the SDK can carry decides the revisions served: only a 2026-07-28 connection delivers a
result shaped `resultType: "task"` (the SDK's runner checks every older revision's `tools/call`
result against the core `CallToolResult`, and its client claims extension shapes on modern
revisions only), so on older revisions, and for clients that do not declare the extension,
`research` answers as it always has. That revision has no `tasks/result` or `tasks/list` (a
finished task's result is inlined in `tasks/get`; there is no list, so no caller can learn of
another's tasks) and no `execution.taskSupport` on tools: the server alone decides."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, Extension, MethodBinding, require_client_extension
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CancelTaskRequestParams,
    GetTaskRequestParams,
    RequestParams,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from bot.adapters.mcp.callers import Caller
from bot.adapters.mcp.models import RunState
from bot.adapters.mcp.results import FAILED_INSIDE, ended_result, tool_error
from bot.adapters.mcp.runs import McpRuns
from bot.domain import RunStatus
from bot.errors import BotError

log = logging.getLogger(__name__)
IDENTIFIER = "io.modelcontextprotocol/tasks"
TASK_TOOL = "research"
POLL_INTERVAL_MS = 2_000
"""What a client is told to wait between polls: a research run takes minutes."""
MAX_REMEMBERED = 1_000
TaskStatus = Literal["working", "completed", "failed", "cancelled"]
TASK_STATUS: dict[str, TaskStatus] = {
    RunStatus.QUEUED: "working",
    RunStatus.RUNNING: "working",
    RunStatus.INTERRUPTED: "working",  # recovery finishes it at the next start
    RunStatus.DONE: "completed",
    RunStatus.FAILED: "failed",
    RunStatus.CANCELLED: "cancelled",
}
CallerOf = Callable[[Context], Caller]
T = TypeVar("T")


class ResearchArgs(BaseModel):
    """`research`'s arguments, read here to start its run as a task."""

    topic: str
    mode: str = "company"
    depth: str = "quick"
    language: str | None = None


class UpdateTaskParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any] | None = None


class TaskView(BaseModel):
    """A task as the revision's `Task` puts it on the wire (camelCase names)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    task_id: str
    status: TaskStatus
    status_message: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    """None: unlimited, as the run is kept in the history (and `tasks/get` reads it there)."""
    poll_interval_ms: int = POLL_INTERVAL_MS

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


@dataclass
class _Seen:
    created_at: datetime
    updated_at: datetime
    last: tuple[str, str]
    """The status and step last answered: a change moves `updated_at`."""


class TasksExtension(Extension):
    identifier = IDENTIFIER

    def __init__(self, service: McpRuns, caller_of: CallerOf) -> None:
        self._service = service
        self._caller_of = caller_of
        self._seen: OrderedDict[str, _Seen] = OrderedDict()
        """Tasks answered for lately, for their timestamps (the run's state has none)."""

    def methods(self) -> list[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [
            MethodBinding("tasks/get", GetTaskRequestParams, self._get, versions),
            MethodBinding("tasks/cancel", CancelTaskRequestParams, self._cancel, versions),
            MethodBinding("tasks/update", UpdateTaskParams, self._update, versions),
        ]

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        if params.name != TASK_TOOL or not _declared(ctx):
            return await call_next(ctx)
        try:
            args = ResearchArgs.model_validate(params.arguments or {})
        except ValidationError:
            return await call_next(ctx)  # the tool's own refusal, word for word
        try:
            caller = self._caller_of(Context(request_context=ctx))
            state, live = await self._service.start(
                caller, args.topic, args.mode, args.depth, args.language
            )
        except (BotError, ToolError) as error:
            return tool_error(str(error))
        except Exception:
            log.exception("starting a research task failed unexpectedly")
            return tool_error(FAILED_INSIDE)
        # `start` returns once the run is stored, so a `tasks/get` for it already resolves.
        assert live.record is not None
        created = live.record.created_at
        return {"resultType": "task", **self._view(state, created).wire()}

    async def _get(
        self, ctx: ServerRequestContext[Any, Any], params: GetTaskRequestParams
    ) -> HandlerResult:
        caller, state = await _answering(self._visible(ctx, params.task_id))
        known = state.run_id in self._seen
        view = self._view(state, None if known else await self._created_at(caller, state.run_id))
        answer = view.wire()
        if view.status == "completed":
            result = await _answering(ended_result(self._service, caller, state))
            answer["result"] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        elif view.status == "failed":
            answer["error"] = {
                "code": INTERNAL_ERROR,
                "message": state.error or view.status_message,
            }
        return answer

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: CancelTaskRequestParams
    ) -> HandlerResult:
        caller, state = await _answering(self._visible(ctx, params.task_id))
        if TASK_STATUS[state.status] != "working":
            return {}  # cancelling is cooperative: a task that has ended keeps its ending
        try:
            await self._service.control(caller, state.run_id, "cancel")
        except BotError as error:
            _, now = await _answering(self._visible(ctx, params.task_id))
            if TASK_STATUS[now.status] == "working":  # not one it may stop, not one that ended
                raise MCPError(code=INVALID_PARAMS, message=str(error)) from None
        return {}

    async def _update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> HandlerResult:
        await _answering(self._visible(ctx, params.task_id))
        return {}  # a research run never asks for input, so no response is outstanding

    async def _visible(
        self, ctx: ServerRequestContext[Any, Any], task_id: str
    ) -> tuple[Caller, RunState]:
        require_client_extension(ctx, IDENTIFIER)
        caller = self._caller_of(Context(request_context=ctx))
        return caller, await self._service.status(caller, task_id)

    async def _created_at(self, caller: Caller, run_id: str) -> datetime:
        # A task this server did not create (another replica's, a previous life's).
        return (await self._service.record(caller, run_id)).created_at

    def _view(self, state: RunState, created: datetime | None) -> TaskView:
        now = datetime.now(UTC)
        status = TASK_STATUS[state.status]
        step = state.step or state.status
        seen = self._seen.pop(state.run_id, None)
        if seen is None:
            first = created or now
            seen = _Seen(created_at=first, updated_at=first, last=(status, step))
        elif seen.last != (status, step):
            seen.updated_at, seen.last = now, (status, step)
        self._seen[state.run_id] = seen
        while len(self._seen) > MAX_REMEMBERED:
            self._seen.popitem(last=False)
        return TaskView(
            task_id=state.run_id,
            status=status,
            status_message=step,
            created_at=seen.created_at.isoformat(),
            last_updated_at=seen.updated_at.isoformat(),
        )


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """The client declared the extension on this very request (2026-07-28 declares per request,
    and only that revision can carry a task)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and IDENTIFIER in capabilities.extensions)


async def _answering(work: Awaitable[T]) -> T:
    """A task method's work: what the caller got wrong (an unknown task id above all) is the
    revision's invalid-params error, in one sentence; anything else is logged here."""
    try:
        return await work
    except MCPError:
        raise
    except (BotError, ToolError) as error:
        raise MCPError(code=INVALID_PARAMS, message=str(error)) from None
    except Exception:
        log.exception("a task method failed unexpectedly")
        raise MCPError(code=INTERNAL_ERROR, message=FAILED_INSIDE) from None
