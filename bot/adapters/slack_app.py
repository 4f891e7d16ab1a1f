"""The Slack front end's entry points: the bolt app, and serving it over Socket Mode (with an app
token) or HTTP at /slack/events, recovering interrupted runs once connected."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack_front import SlackFrontEnd
from bot.config import Settings
from bot.runs import RunManager
from bot.store import Store

log = logging.getLogger(__name__)


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
) -> None:
    """Serve until cancelled: Socket Mode with SLACK_APP_TOKEN, else HTTP on `port` at
    /slack/events. Recovers this front end's unfinished runs once connected, then sets
    `started`."""
    front = SlackFrontEnd(settings, runs, store, client=client)
    await front.check_token()
    if settings.slack_app_token is not None:
        handler = AsyncSocketModeHandler(front.app, settings.slack_app_token.get_secret_value())
        await handler.connect_async()  # type: ignore[no-untyped-call]
        log.info("slack: connected over Socket Mode")
        try:
            await _recover_and_wait(front, started)
        finally:
            await handler.close_async()  # type: ignore[no-untyped-call]
    else:
        runner = web.AppRunner(front.app.web_app(), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        log.info("slack: serving HTTP on %s:%d at /slack/events", host, port)
        try:
            await _recover_and_wait(front, started)
        finally:
            await runner.cleanup()


async def _recover_and_wait(front: SlackFrontEnd, started: asyncio.Event | None) -> None:
    recovered = await front.recover()
    if recovered:
        log.info("slack: finishing %d interrupted run(s): %s", len(recovered), ", ".join(recovered))
    if started is not None:
        started.set()
    await asyncio.Event().wait()
