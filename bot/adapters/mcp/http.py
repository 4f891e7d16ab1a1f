"""The MCP server over Streamable HTTP at `/mcp`, behind bearer tokens: a request without a
token the table knows is answered 401 and nothing else, before the SDK sees it. Tokens are
compared in constant time (`Tokens.caller`) and never logged. With no token configured the
server serves only a loopback address, and its callers are the terminal's (as over stdio)."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
from collections.abc import Iterator
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.adapters.mcp.callers import STDIO, Caller, Tokens
from bot.adapters.mcp.loops import OwnLoopServer
from bot.adapters.mcp.runs import McpRuns
from bot.adapters.mcp.server import build_server
from bot.errors import ConfigError

log = logging.getLogger(__name__)
PATH = "/mcp"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(tokens: Tokens, host: str) -> None:
    if not tokens and not is_loopback(host):
        raise ConfigError(
            f"The MCP server will not listen on {host} without RESEARCH_BOT_MCP_TOKENS: anyone "
            "who can reach it could start research on your budget. Set tokens, or use 127.0.0.1."
        )


class RequireToken:
    """ASGI middleware: every HTTP request carries a known bearer token, or gets a bare 401."""

    def __init__(self, app: ASGIApp, tokens: Tokens) -> None:
        self._app = app
        self._tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._tokens:
            headers = dict(scope.get("headers") or [])
            authorization = headers.get(b"authorization", b"").decode("latin-1")
            if self._tokens.caller(authorization) is None:
                await _unauthorized(send)
                return
        await self._app(scope, receive, send)


async def _unauthorized(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"www-authenticate", b"Bearer"), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def callers_of(tokens: Tokens) -> Any:
    """Who a request's caller is, from its headers (the middleware let only known ones in)."""

    def caller_of(ctx: Context) -> Caller:
        if not tokens:
            return STDIO
        headers = ctx.headers or {}
        caller = tokens.caller(headers.get("authorization"))
        if caller is None:  # not over HTTP, or past the middleware some other way
            raise ToolError("Not authorized.")
        return caller

    return caller_of


def mcp_app(service: McpRuns, tokens: Tokens, *, wait_s: float, host: str) -> ASGIApp:
    server = build_server(service, callers_of(tokens), wait_s=wait_s)
    app = server.streamable_http_app(streamable_http_path=PATH, host=host)
    return RequireToken(app, tokens)


def http_server(app: ASGIApp, host: str, port: int, *, beside: bool = False) -> uvicorn.Server:
    """A uvicorn server for `app`, on a loop of its own (`loops`); `serve()` it. No access log:
    it has nothing a person needs. `beside` other front ends, the signals are `serve`'s own:
    set `should_exit` to stop it."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    return _Beside(config) if beside else OwnLoopServer(config)


class _Beside(OwnLoopServer):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
