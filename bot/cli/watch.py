"""`research-bot watch`: the terminal's watches, made, listed, paused, resumed, ended and run now.
Listing and changing open only the store; `watch run` of a terminal watch researches as
`research` does, loading the model and web clients once the watch is found."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from bot.cli.common import check_output, err, fail, load_settings, log_to_terminal, out, reader
from bot.config import Settings
from bot.domain import Depth, Mode, Origin, Request, strip_controls, validate_topic
from bot.errors import BotError, NotFoundError, RequestError
from bot.watches.cadence import parse_cadence, zone
from bot.watches.model import NewWatch, Watch, WatchStatus
from bot.watches.zones import known_zone

if TYPE_CHECKING:
    from bot.cli import terminal_run
    from bot.store.runs import Store

TERMINAL = ("terminal", "")
T = TypeVar("T")


def _writer(settings: Settings) -> AbstractAsyncContextManager[Store]:
    from bot.store.runs import Store

    return Store.connect(settings.database, busy_timeout_s=settings.db_busy_timeout_s)


def _run(work: Coroutine[Any, Any, T]) -> T:
    """The command's store work; a bad id or input is one line (exit 1 for an unknown id)."""
    try:
        return asyncio.run(work)
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None


def add(
    topic: Annotated[str, typer.Argument(help="A company name, or filters for --mode contracts.")],
    every: Annotated[str, typer.Option(help="daily, weekdays, weekly or monthly.")] = "weekly",
    deep: Annotated[bool, typer.Option("--deep", help="Research each time in depth.")] = False,
    mode: Annotated[Mode, typer.Option(help="What kind of research.")] = Mode.COMPANY,
    tz: Annotated[str, typer.Option(help="The hour's time zone, such as Europe/Berlin.")] = "UTC",
) -> None:
    """Keep a topic researched again each period, at this hour. Only stores the watch: its
    first report is made by `watch run ID`, or at once by a running `serve`."""

    async def work() -> Watch:
        new = NewWatch(
            topic=validate_topic(topic),
            mode=mode,
            depth=Depth.DEEP if deep else Depth.QUICK,
            cadence=parse_cadence(every),
            tz=known_zone(tz),
        )
        settings = load_settings()
        async with _writer(settings) as store:
            return await store.add_watch(new, limit=settings.max_watches)

    watch = _run(work())
    out.print(f"Watch {watch.id}: {_line(watch)}", markup=False)


def list_watches(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The terminal's watches: id, topic, cadence, next run and last run."""

    async def work() -> list[Watch]:
        async with reader(load_settings()) as store:
            return await store.all_watches()  # the operator sees every channel's too

    watches = _run(work())
    if as_json:
        sys.stdout.write(json.dumps([as_json_row(watch) for watch in watches]) + "\n")
        return
    if not watches:
        out.print('No watches yet: research-bot watch add "Acme Robotics" --every weekly')
    for watch in watches:
        out.print(f"{watch.id}  {_line(watch)}", markup=False, highlight=False)


def as_json_row(watch: Watch) -> dict[str, object]:
    return {
        "id": watch.id,
        "topic": watch.topic,
        "channel": watch.channel,
        "cadence": watch.cadence.value,
        "tz": watch.tz,
        "status": watch.status.value,
        "paused_reason": watch.paused_reason,
        "next_run_at": watch.next_run_at.isoformat(),
        "last_run_at": None if watch.last_run_at is None else watch.last_run_at.isoformat(),
        "last_run_id": watch.last_run_id,
    }


def _line(watch: Watch) -> str:
    depth = ", deep" if watch.depth is Depth.DEEP else ""
    state = f"paused ({watch.paused_reason})" if watch.status is WatchStatus.PAUSED else "next"
    local = watch.next_run_at.astimezone(zone(watch.tz))
    when = "" if watch.status is WatchStatus.PAUSED else f" {local:%Y-%m-%d %H:%M} {watch.tz}"
    last = "" if watch.last_run_id is None else f", last run {watch.last_run_id}"
    where = "" if watch.platform == "terminal" else f" [{watch.platform} {watch.channel}]"
    return strip_controls(
        f"{watch.topic}, {watch.cadence.value}{depth}; {state}{when}{last}{where}"
    )


def _change(watch_id: str, how: str) -> Watch:
    async def work() -> Watch:
        async with _writer(load_settings()) as store:
            watch = await store.find_watch(watch_id)  # the operator may change any watch
            scope = (watch.platform, watch.workspace)
            if how == "pause":
                return await store.pause_watch(watch_id, *scope)
            if how == "resume":
                return await store.resume_watch(watch_id, *scope)
            if how == "due":
                return await store.make_watch_due(watch_id, *scope)
            await store.remove_watch(watch_id, *scope)
            return watch

    watch = _run(work())
    return watch


def remove(watch_id: Annotated[str, typer.Argument(help="The watch to end.")]) -> None:
    """End a watch (its runs and reports stay in history)."""
    watch = _change(watch_id, "remove")
    out.print(f"Watch {watch.id} ended: {strip_controls(watch.topic)}", markup=False)


def pause(watch_id: Annotated[str, typer.Argument(help="The watch to pause.")]) -> None:
    """Stop a watch's runs until it is resumed."""
    watch = _change(watch_id, "pause")
    out.print(f"Watch {watch.id}: {_line(watch)}", markup=False)


def resume(watch_id: Annotated[str, typer.Argument(help="The watch to resume.")]) -> None:
    """Start a paused watch again, from its next time (missed periods are not made up)."""
    watch = _change(watch_id, "resume")
    out.print(f"Watch {watch.id}: {_line(watch)}", markup=False)


def run(
    watch_id: Annotated[str, typer.Argument(help="The watch to run now.")],
    output: Annotated[Path | None, typer.Option(help="Where to write the Markdown report.")] = None,
) -> None:
    """Run a terminal watch now and write its report as `research` does; its next period
    is counted from now."""
    if not _is_terminals(watch_id):
        # A channel's watch reports in its channel: the running `serve` starts it there.
        watch = _change(watch_id, "due")
        out.print(
            f"Watch {watch.id} is due now: a running `research-bot serve` starts it within "
            f"RESEARCH_BOT_WATCH_TICK_S seconds, in {watch.platform} channel {watch.channel}.",
            markup=False,
        )
        return
    log_to_terminal()
    try:
        check_output(output)
        settings = load_settings()
        finish = asyncio.run(_run_now(settings, watch_id, output))
    except BotError as error:
        from bot.cli.research import _failed

        raise _failed(error) from None
    from bot.cli.research import _conclude

    _conclude(finish)


def _is_terminals(watch_id: str) -> bool:
    async def work() -> Watch:
        async with reader(load_settings()) as store:
            return await store.find_watch(watch_id)

    return _run(work()).platform == "terminal"


async def _run_now(settings: Settings, watch_id: str, output: Path | None) -> terminal_run.Finish:
    """The watch's run; its report says what changed since the watch's last one (the agent puts
    that in before the report is stored)."""
    async with reader(settings) as store:
        watch = await store.get_watch(watch_id, *TERMINAL)
    from bot.adapters.chat.sink import StatusView
    from bot.adapters.terminal_choice import TerminalChoice, stdin_fd
    from bot.cli.terminal_run import ReportFile, follow
    from bot.compose import open_services

    request = Request(
        topic=watch.topic,
        mode=watch.mode,
        depth=watch.depth,
        origin=Origin(platform="terminal"),
        watch_id=watch.id,
    )
    async with open_services(settings) as services:
        view = StatusView(run_id="", topic=watch.topic, mode=watch.mode.value, requester="you")
        choice = TerminalChoice(services.runs, err, stdin_fd())
        listener = ReportFile(err, view, output, choice)
        try:
            record = await services.runs.submit(request, listener)
        except RequestError:  # refused (the daily budget): nothing stored, nothing runs
            listener.close()
            raise
        await services.store.record_watch_run(watch.id, record.run_id, advance=True)
        err.print(f"Run {record.run_id} of watch {watch.id}: {watch.topic!r}", markup=False)
        return await follow(services, err, record, listener)
