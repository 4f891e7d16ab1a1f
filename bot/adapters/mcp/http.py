"""The MCP server over Streamable HTTP at `/mcp`, behind bearer tokens: a request without a
token the table knows is answered 401 and nothing else, before the SDK sees it. Tokens are
compared in constant time (`Tokens.caller`) and never logged. With no token configured the
server serves only a loopback address, and its callers are the terminal's (as over stdio)."""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
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
STOP_GRACE_S = 5
"""How long a stopping server waits for its requests in flight (a session's open stream would
keep it for ever) before it cancels them."""


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


def http_server(app: ASGIApp, host: str, port: int) -> uvicorn.Server:
    """A uvicorn server for `app`, on a loop of its own (`loops`); `serve()` it, and set
    `should_exit` to stop it. Its address is bound at once, so a port in use is said here in
    one line (ConfigError), where uvicorn would log it and exit. No access log: it has nothing
    a person needs."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=STOP_GRACE_S,
    )
    return _Bound(config, _bound(host, port))


def _bound(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # TCP named: asyncio turns Nagle's algorithm off only on sockets that say so, and with it
    # on, every answer waits about 40 ms for the client's delayed acknowledgement.
    bound = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        bound.bind((host, port))
    except OSError as error:
        bound.close()
        if error.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} is already in use: stop the other process, or serve MCP on "
                "another port (--port, RESEARCH_BOT_MCP_PORT)"
            ) from None
        raise ConfigError(
            f"The MCP server cannot listen on {host}:{port} ({error.strerror or error}): "
            "use an address of this machine, such as 127.0.0.1 or 0.0.0.0."
        ) from None
    return bound


class _Bound(OwnLoopServer):
    """Serves the socket bound when it was made."""

    def __init__(self, config: uvicorn.Config, bound: socket.socket) -> None:
        super().__init__(config)
        self._bound = bound

    async def serve(self, sockets: Any = None) -> None:
        await super().serve(sockets or [self._bound])
