"""The Slack front end's entry points: the bolt app, and serving it over Socket Mode (with an app
token) or HTTP at /slack/events, recovering interrupted runs once connected."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack.client import SlackBudget, make_client
from bot.adapters.slack.front import SlackFrontEnd
from bot.config import Settings
from bot.errors import ConfigError
from bot.runs.manager import RunManager
from bot.store.runs import Store

log = logging.getLogger(__name__)

WEB_API_TIMEOUT_S = 30
"""A Web API call's whole time, retries apart (slack_sdk's own default)."""


def build_slack_app(
    settings: Settings, runs: RunManager, store: Store, *, client: AsyncWebClient | None = None
) -> AsyncApp:
    """The bolt app alone (for tests and other servers); `SlackFrontEnd` when recovery is needed."""
    return SlackFrontEnd(settings, runs, store, client=client).app


async def serve_slack(
    settings: Settings,
    runs: RunManager,
    store: Store,
    *,
    port: int = 3000,
    host: str = "0.0.0.0",
    client: AsyncWebClient | None = None,
    started: asyncio.Event | None = None,
    budget: SlackBudget | None = None,
) -> None:
    """Serve until cancelled: Socket Mode with SLACK_APP_TOKEN, else HTTP on `port` at
    /slack/events. Recovers this front end's unfinished runs once connected, then sets
    `started`. `budget`: this replica's share of Slack's rate limits (all of them by default)."""
    async with contextlib.AsyncExitStack() as closing:
        if client is None:
            session = await closing.enter_async_context(web_api_session())
            client = make_client(settings, session)
        front = SlackFrontEnd(settings, runs, store, client=client, budget=budget)
        await front.check_token()
        if settings.slack_app_token is not None:
            await _serve_socket_mode(front, settings.slack_app_token.get_secret_value(), started)
        else:
            await _serve_http(front, host, port, started)


async def _serve_socket_mode(
    front: SlackFrontEnd, token: str, started: asyncio.Event | None
) -> None:
    handler = AsyncSocketModeHandler(front.app, token)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    log.info("slack: connected over Socket Mode")
    try:
        await _recover_and_wait(front, started)
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]


async def _serve_http(
    front: SlackFrontEnd, host: str, port: int, started: asyncio.Event | None
) -> None:
    runner = web.AppRunner(web_app(front.app), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as error:
        await runner.cleanup()
        if error.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} is already in use: stop the other process "
                "or choose another with --port"
            ) from None
        raise
    log.info("slack: serving HTTP on %s:%d at /slack/events", host, port)
    try:
        await _recover_and_wait(front, started)
    finally:
        await runner.cleanup()


def web_api_session() -> aiohttp.ClientSession:
    """One pool of kept-alive connections for every Web API call of the process. Without it
    slack_sdk opens a connection for each call, about ten a run, each with its own TLS
    handshake. Once it is closed, slack_sdk goes back to a connection per call."""
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WEB_API_TIMEOUT_S))


def web_app(app: AsyncApp) -> web.Application:
    """The app's HTTP endpoint (/slack/events), refusing malformed request timestamps itself."""
    served = app.web_app()
    served.middlewares.append(_require_numeric_timestamp)
    return served


@web.middleware
async def _require_numeric_timestamp(request: web.Request, handler: Handler) -> web.StreamResponse:
    # slack_sdk's signature check calls int() on this header: anything else would be a 500
    # with a traceback instead of the 401 every other unsigned request gets.
    stamp = request.headers.get("X-Slack-Request-Timestamp", "")
    if request.method == "POST" and not (stamp.isascii() and stamp.isdigit()):
        log.info("slack: refused a request with timestamp %r", stamp[:40])
        return web.Response(status=401, text="invalid request")
    return await handler(request)


async def _recover_and_wait(front: SlackFrontEnd, started: asyncio.Event | None) -> None:
    recovered = await front.recover()
    if recovered:
        log.info("slack: finishing %d interrupted run(s): %s", len(recovered), ", ".join(recovered))
    if started is not None:
        started.set()
    await asyncio.Event().wait()
