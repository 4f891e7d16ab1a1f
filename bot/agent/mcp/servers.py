"""The operator's MCP servers, each connected once for the whole process with the official SDK's
client (`stdio_client` for a local server, `streamable_http_client` for a remote one), each in
a background task of its own that reconnects with backoff whenever the connection ends. A call
is one request on that connection (many run at once) and fails only as an McpCallError."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any, Literal, Self

import anyio
import httpx2
import mcp.types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from bot import __version__
from bot.agent.mcp.config import ServerConfig
from bot.errors import ToolError

log = logging.getLogger(__name__)
MAX_RESULT_CHARS = 4 * 2**20
"""A result larger than this (as JSON) is refused whole: the caps and condensing downstream
handle long results, this keeps an endless one out of memory."""
STOP_WITHIN_S = 8.0
"""Every server stopped within this: the SDK closes a local server's stdin, then terminates
and kills it after two seconds each (inside `serve`'s own bound)."""
CONNECT_WITHIN_S = 30.0
"""Least time a server gets to start and list its tools (a local one may install itself first)."""
_LIST_PAGES = 20
_CLIENT = mcp.types.Implementation(name="research-bot", version=__version__)


class McpCallError(ToolError):
    """A call that got no result: the message is a short reason the model can read."""


class ServerStatus(BaseModel):
    """What `research-bot mcp list` shows of one server."""

    name: str
    transport: Literal["stdio", "http"]
    answers: bool
    reason: str = ""
    """Why it does not answer (empty when it does)."""
    tools: list[str] = []
    """Every tool it lists."""
    allowed: list[str] = []
    """Those runs may call (`tools` include / exclude)."""
    workspaces: list[str] | None = None


class _EndWatch:
    """A transport's read stream that says when it ends (the server exited, the connection
    dropped): the SDK's session then wakes the calls waiting, but tells no one else."""

    def __init__(self, inner: Any, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._ended.set()
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Server:
    """One server's connection, kept up by `keep` (its background task)."""

    def __init__(self, config: ServerConfig, retry_s: tuple[float, float]) -> None:
        self.config = config
        self.client: Client | None = None
        self.listed: list[mcp.types.Tool] = []
        self.reason = "not connected yet"
        self.up = asyncio.Event()
        """Set while connected."""
        self.tried = asyncio.Event()
        """Set once the first attempt to connect has succeeded or failed."""
        self._retry_s = retry_s
        self._connects = 0
        self.ended = anyio.Event()
        """Set when the current connection has ended."""

    async def keep(self) -> None:
        first, most = self._retry_s
        delay, down_logged = first, False
        while True:
            connects = self._connects
            try:
                await self._connected()
            except Exception as error:  # a server's failure, whatever it is, is a reason
                self.reason = _reason(error, self.config)
            self.tried.set()
            if self._connects != connects:  # it was up: a new outage, retried quickly again
                delay, down_logged = first, False
            if not down_logged:
                log.warning("MCP server %s: %s; retrying", self.config.name, self.reason)
                down_logged = True
            else:
                log.debug("MCP server %s: still %s", self.config.name, self.reason)
            await asyncio.sleep(delay)
            delay = min(delay * 2, most)

    async def _connected(self) -> None:
        """Connect and list the tools within the timeout, then hold the connection until it
        ends. One scope around it all, disarmed once connected: the SDK's task groups open
        inside it and must close inside it."""
        self.ended = ended = anyio.Event()
        with anyio.fail_after(max(self.config.timeout_s, CONNECT_WITHIN_S)) as connecting:
            async with AsyncExitStack() as stack:
                transport = _watched(await self._transport(stack), ended)
                client = Client(
                    transport,
                    read_timeout_seconds=self.config.timeout_s,
                    client_info=_CLIENT,
                    cache=None,  # the listing is kept here; calls are never cached
                )
                await stack.enter_async_context(client)
                listed = await _all_tools(client)
                connecting.deadline = math.inf
                self.client, self.listed = client, listed
                self._connects += 1
                self.up.set()
                self.tried.set()
                log.info("MCP server %s: connected, %d tools", self.config.name, len(listed))
                try:
                    await ended.wait()
                finally:
                    self.up.clear()
                    self.client, self.reason = None, self._gone()

    def _gone(self) -> str:
        return "the server exited" if self.config.transport == "stdio" else "disconnected"

    async def _transport(self, stack: AsyncExitStack) -> Any:
        config = self.config
        if config.command is not None:
            parameters = StdioServerParameters(
                command=config.command, args=config.args, env=config.env
            )
            return stdio_client(parameters)
        assert config.url is not None
        http = httpx2.AsyncClient(
            headers=config.headers,
            timeout=httpx2.Timeout(config.timeout_s, read=max(config.timeout_s, 300)),
        )
        await stack.enter_async_context(http)
        return streamable_http_client(config.url, http_client=http)

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp.types.CallToolResult:
        client, name, timeout = self.client, self.config.name, self.config.timeout_s
        if client is None:
            raise McpCallError(f"MCP server {name} is not connected ({self.reason}).")
        if not self.config.allows_tool(tool):
            raise McpCallError(f"MCP server {name} does not allow the tool {tool!r}.")
        try:
            with anyio.fail_after(timeout + 1):  # past the SDK's own timeout, for its retries
                result = await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except TimeoutError:
            raise McpCallError(f"{name} · {tool} timed out after {timeout:g} s.") from None
        except MCPError as error:
            gone = error.code == mcp.types.CONNECTION_CLOSED and self.ended.is_set()
            raise McpCallError(_rpc_failure(error, self.config, tool, gone)) from None
        except (ValidationError, RuntimeError) as error:
            # A result that is not a tool result, or not the one its output schema promised.
            why = _first_line(error)
            raise McpCallError(f"{name} · {tool} answered something malformed ({why}).") from None
        size = len(result.model_dump_json())
        if size > MAX_RESULT_CHARS:
            raise McpCallError(
                f"{name} · {tool} answered {size / 2**20:.1f} MiB, over the "
                f"{MAX_RESULT_CHARS // 2**20} MiB a result may be."
            )
        return result

    def status(self) -> ServerStatus:
        config = self.config
        connected = self.client is not None
        names = [tool.name for tool in self.listed] if connected else []
        return ServerStatus(
            name=config.name,
            transport=config.transport,
            answers=connected,
            reason="" if connected else self.reason,
            tools=names,
            allowed=[name for name in names if config.allows_tool(name)],
            workspaces=config.workspaces,
        )


class McpServers:
    """One per process: `async with McpServers(configs) as servers:`. Entering never waits on
    a server and never fails for one; runs see a server's tools while it is connected."""

    def __init__(
        self,
        configs: list[ServerConfig],
        *,
        retry_first_s: float = 1.0,
        retry_max_s: float = 60.0,
    ) -> None:
        self.configs = configs
        self._servers = {c.name: _Server(c, (retry_first_s, retry_max_s)) for c in configs}
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Self:
        self._tasks = [
            asyncio.create_task(server.keep(), name=f"mcp-{name}")
            for name, server in self._servers.items()
        ]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=STOP_WITHIN_S)
            for task in pending:
                log.error("MCP: %s did not stop within %g s", task.get_name(), STOP_WITHIN_S)
        self._tasks = []

    def tools(self, server: str) -> list[mcp.types.Tool]:
        """The tools runs may call on `server` now: [] while it is not connected."""
        kept = self._servers.get(server)
        if kept is None or kept.client is None:
            return []
        return [tool for tool in kept.listed if kept.config.allows_tool(tool.name)]

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any]
    ) -> mcp.types.CallToolResult:
        """The tool's result (one with isError true included); McpCallError when there is none."""
        kept = self._servers.get(server)
        if kept is None:
            raise McpCallError(f"No MCP server is named {server!r}.")
        return await kept.call(tool, arguments)

    async def connected(self, server: str) -> None:
        """Returns once `server` is connected (at once if it is)."""
        await self._servers[server].up.wait()

    async def first_tries(self, within_s: float) -> None:
        """Returns once every server's first attempt to connect has ended, or after `within_s`:
        a run that starts at once (the terminal's) sees the tools of those that answered."""
        with anyio.move_on_after(within_s):
            await asyncio.gather(*(server.tried.wait() for server in self._servers.values()))

    async def status(self) -> list[ServerStatus]:
        """Each server as it is once its first attempt to connect has ended."""

        async def settled(server: _Server) -> None:
            with anyio.move_on_after(max(server.config.timeout_s, CONNECT_WITHIN_S) + 1):
                await server.tried.wait()

        await asyncio.gather(*(settled(server) for server in self._servers.values()))
        return [server.status() for server in self._servers.values()]


@asynccontextmanager
async def _watched(transport: Any, ended: anyio.Event) -> AsyncIterator[Any]:
    async with transport as (read_stream, write_stream):
        yield _EndWatch(read_stream, ended), write_stream


async def _all_tools(client: Client) -> list[mcp.types.Tool]:
    tools: list[mcp.types.Tool] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _rpc_failure(error: MCPError, config: ServerConfig, tool: str, gone: bool) -> str:
    """`gone`: the connection ended under the call (else the code is the server's own)."""
    where = f"{config.name} · {tool}"
    if error.code == mcp.types.REQUEST_TIMEOUT:
        return f"{where} timed out after {config.timeout_s:g} s."
    if gone:
        what = "the server exited" if config.transport == "stdio" else "the server disconnected"
        return f"{where}: {what} during the call."
    return f"{where} failed: JSON-RPC error {error.code}: {_first_line(error)}"


def _reason(error: BaseException, config: ServerConfig) -> str:
    """Why a connection failed or ended, in a few words (the SDK's task groups wrap errors)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        return f"no answer within {config.timeout_s:g} s"
    if isinstance(error, OSError) and config.command is not None:
        return f"cannot start {config.command!r} ({error.strerror or error})"
    if isinstance(error, MCPError):
        return f"JSON-RPC error {error.code}: {_first_line(error)}"
    return f"{type(error).__name__}: {_first_line(error)}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__
