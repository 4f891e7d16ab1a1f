"""`research-bot serve`: every chat platform asked for, in one process, on one runs service.

SIGTERM and SIGINT stop the platforms, then the runs service marks runs still going as
interrupted; the next start finishes them from their stored evidence. A stop that is still
going after `STOP_WITHIN_S` is abandoned: what it waited on is logged and the process exits,
before the deploy's grace period (30 s in docker-compose.yml and fly.toml) ends it blind. Its
runs are then left to their leases, which another replica or the next start takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import signal
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from bot.agent import language
from bot.cli.common import fail, load_settings, mcp_configs
from bot.config import Settings
from bot.errors import BotError, ConfigError

if TYPE_CHECKING:
    import uvicorn

    from bot.adapters.mcp.runs import McpRuns
    from bot.compose import Services
    from bot.runs.manager import RunListener, RunManager
    from bot.runs.watch_scheduler import WatchScheduler
    from bot.store.runs import Store
    from bot.watches.model import Watch

log = logging.getLogger(__name__)
PLATFORMS = ("slack", "discord")
STOP_WITHIN_S = 25.0
"""Longer than a stop needs (a report on its way gets 10 s to land), shorter than the deploy's
grace period."""


def platforms_to_serve(settings: Settings, asked: str) -> list[str]:
    """`all` means every platform whose token is set; naming one serves it or says what is missing."""
    if asked in PLATFORMS:
        return [asked]
    if asked != "all":
        raise ConfigError(f"Unknown platform {asked!r}: use slack, discord or all.")
    chosen = [
        name
        for name, token in (
            ("slack", settings.slack_bot_token),
            ("discord", settings.discord_token),
        )
        if token is not None
    ]
    if not chosen:
        raise ConfigError(
            "No chat platform is configured: set SLACK_BOT_TOKEN (see docs/slack.md) "
            "or DISCORD_TOKEN (see docs/discord.md)."
        )
    return chosen


def _server(name: str, services: Services, port: int) -> Coroutine[Any, Any, None]:
    # Each platform's SDK is imported only when that platform is served.
    if name == "slack":
        from bot.adapters.slack.app import serve_slack
        from bot.adapters.slack.client import SlackBudget, one_in

        budget = SlackBudget(share=one_in(services.replicas_alive))
        return serve_slack(
            services.settings, services.runs, services.store, port=port, budget=budget
        )
    from bot.adapters.discord.app import serve_discord

    return serve_discord(services.settings, services.runs, services.store)


async def serve_platforms(
    settings: Settings, asked: str, *, port: int, host: str = "127.0.0.1"
) -> None:
    # A missing token is said before the clients load (seconds of imports), not after.
    names = platforms_to_serve(settings, asked)
    from bot.compose import freeze_startup_heap, open_services  # the clients load only to serve

    # Off the event loop, before the first request would pay for it on the loop.
    await asyncio.to_thread(language.warm)
    async with open_services(settings, replica=True) as services:
        freeze_startup_heap()
        mcp = _mcp_beside(services, host)  # its port is bound here: one in use stops it all now
        tasks = [
            asyncio.create_task(_server(name, services, port), name=f"serve-{name}")
            for name in names
        ]
        if mcp is not None:
            tasks.append(asyncio.create_task(mcp.server.serve(), name="serve-mcp"))
        watches = _watch_clock(services)
        log.info("serving %s", ", ".join(names))
        await _until_stopped(tasks)
        abandon_stop_after(STOP_WITHIN_S)  # covers closing the services too
        if mcp is not None:
            mcp.stop()
        await watches.stop()
        # Runs first, while the platforms can still deliver a report that is on its way.
        await services.runs.shutdown()
        await _ended(tasks)


async def _until_stopped(tasks: list[asyncio.Task[None]]) -> None:
    """Until SIGTERM or Ctrl-C, or until one of `tasks` (the servers) ends by itself: one that
    could not start. The signals are heard here, never by uvicorn, which would raise them again
    once its own server stopped and so end the process before the runs are left in order."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait([*tasks, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()


async def _ended(tasks: list[asyncio.Task[None]]) -> None:
    """The servers stopped (the MCP server's thread once its connections have closed, within
    its grace); raises what ended one that stopped by itself."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


class _Mcp(NamedTuple):
    server: uvicorn.Server
    service: McpRuns

    def stop(self) -> None:
        """No new request, and the calls waiting for a run answer now with its id."""
        self.service.stop()
        self.server.should_exit = True


def _mcp_beside(services: Services, host: str) -> _Mcp | None:
    """With RESEARCH_BOT_MCP_TOKENS set, the MCP server at /mcp beside the chat platforms, on
    `host` and RESEARCH_BOT_MCP_PORT (behind its tokens, so any address may serve it)."""
    from bot.adapters.mcp.settings import load_mcp_settings

    settings = load_mcp_settings()
    if settings.tokens is None:
        return None
    from bot.adapters.mcp.callers import Tokens
    from bot.adapters.mcp.http import http_server, mcp_app
    from bot.adapters.mcp.runs import McpRuns

    service = McpRuns(services.store, services.runs, services.followups)
    app = mcp_app(service, Tokens.parse(settings.tokens), wait_s=settings.wait_s, host=host)
    log.info("serving MCP at http://%s:%d/mcp", host, settings.port)
    return _Mcp(http_server(app, host, settings.port), service)


def _watch_clock(services: Services) -> WatchScheduler:
    """The watches of the chat platforms served here, at their times (on PostgreSQL too: the
    claim is once-only across replicas). On SQLite the terminal's watches too, unattended (their
    reports are kept for `show`); on PostgreSQL those are left to `watch run`: the replicas'
    shared queue takes only the platforms served, where such a run would wait for ever."""
    terminal = services.settings.database_url is None
    clock = watch_clock(services.store, services.runs, terminal=terminal)
    clock.start(services.settings.watch_tick_s)
    return clock


def watch_clock(store: Store, runs: RunManager, *, terminal: bool) -> WatchScheduler:
    """The clock, not started: a chat watch's run is shown by its platform's front end attached
    to `runs.front_ends`, in a new thread of the watch's channel, and pauses its watch when that
    channel is gone; a refusal is told there once. `terminal`: the terminal's watches too."""
    from bot.adapters.chat.watch_delivery import WatchDelivery, tell_refused
    from bot.runs.watch_scheduler import Unattended, WatchedRun, WatchScheduler

    front_ends = runs.front_ends

    def listener_for(watch: Watch, missed: int) -> RunListener:
        if watch.platform == "terminal":
            return Unattended(watch)
        shown = WatchedRun(front_ends.listener_for, missed)
        return WatchDelivery(
            watch, shown, store=store, cancel=runs.cancel, notice=front_ends.notice
        )

    async def refused(watch: Watch, why: str) -> None:
        await tell_refused(store, front_ends.notice, watch, why)

    platforms = ["terminal"] if terminal else []
    return WatchScheduler(
        store, runs.submit, listener_for, platforms, refused=refused, front_ends=front_ends
    )


async def serve_mcp(settings: Settings, host: str, port: int | None) -> None:
    """The MCP server over Streamable HTTP, on the same runs service a chat bot would use."""
    from bot.adapters.mcp.callers import Tokens
    from bot.adapters.mcp.http import check_exposure, http_server, mcp_app
    from bot.adapters.mcp.runs import McpRuns
    from bot.adapters.mcp.settings import load_mcp_settings

    mcp = load_mcp_settings()
    tokens = Tokens.parse(mcp.tokens)
    check_exposure(tokens, host)  # before any client loads
    from bot.compose import freeze_startup_heap, open_services

    async with open_services(settings, replica=True) as services:
        freeze_startup_heap()
        service = McpRuns(services.store, services.runs, services.followups)
        app = mcp_app(service, tokens, wait_s=mcp.wait_s, host=host)
        served = _Mcp(http_server(app, host, port or mcp.port), service)
        serving = [asyncio.create_task(served.server.serve(), name="serve-mcp")]
        log.info("serving MCP at http://%s:%d/mcp", host, port or mcp.port)
        await _until_stopped(serving)
        abandon_stop_after(STOP_WITHIN_S)
        served.stop()
        await services.runs.shutdown()
        await _ended(serving)


def abandon_stop_after(
    seconds: float, exit: Callable[[int], object] = os._exit
) -> asyncio.TimerHandle:
    """Unless the loop is done by then: log each task still pending, where it waits, and exit
    with status 1 without waiting on anything more."""

    def abandon() -> None:
        stacks = io.StringIO()
        for task in asyncio.all_tasks():
            task.print_stack(limit=8, file=stacks)
        log.error(
            "the stop took over %g s; abandoned while waiting on:\n%s", seconds, stacks.getvalue()
        )
        logging.shutdown()
        exit(1)

    return asyncio.get_running_loop().call_later(seconds, abandon)


def serve(
    platform: Annotated[
        str, typer.Argument(help="slack, discord, or all whose tokens are set; or mcp.")
    ] = "all",
    port: Annotated[
        int | None,
        typer.Option(
            help="HTTP port: Slack's without Socket Mode (3000), or the MCP server's "
            "(RESEARCH_BOT_MCP_PORT, 8765)."
        ),
    ] = None,
    host: Annotated[
        str,
        typer.Option(help="The MCP server's address (also beside the chat bots, with tokens)."),
    ] = "127.0.0.1",
) -> None:
    """Run the chat bot(s), or with `mcp` the MCP server at /mcp, until stopped (SIGTERM or
    Ctrl-C)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        settings = load_settings()
        mcp_configs(settings)  # a bad MCP config stops here, before any client loads
        if platform == "mcp":
            asyncio.run(serve_mcp(settings, host, port))
            return
        asyncio.run(serve_platforms(settings, platform, port=port or 3000, host=host))
    except BotError as error:
        raise fail(error) from None


def discord_sync(
    guild: Annotated[int | None, typer.Option(help="Only this guild (instant).")] = None,
) -> None:
    """Register the /research slash command with Discord (on deploy, not at every start)."""
    from bot.adapters.discord.app import sync_commands

    try:
        asyncio.run(sync_commands(load_settings(), guild))
    except BotError as error:
        raise fail(error) from None
