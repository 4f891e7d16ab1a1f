"""`research-bot research` and `resume`: a run in the terminal, and finishing an interrupted
one from what it had found (the run itself: bot/cli/terminal_run.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from bot.agent.language import language_for, stated
from bot.cli import ask as cli_ask
from bot.cli import terminal_run
from bot.cli.common import TRY_LATER, err, fail, load_settings, log_to_terminal, out
from bot.cli.terminal_run import check_output
from bot.config import Settings
from bot.domain import Depth, Mode, Origin, Request
from bot.errors import BotError, NotFoundError
from bot.runs.quota import QuotaError

if TYPE_CHECKING:
    from bot.compose import Services

T = TypeVar("T")


def research(
    topic: Annotated[str, typer.Argument(help="A company name, or filters for --mode contracts.")],
    mode: Annotated[Mode, typer.Option(help="What kind of research.")] = Mode.COMPANY,
    depth: Annotated[
        Depth,
        typer.Option(
            help="quick: one researcher; deep: a plan, several researchers in parallel, one "
            "report (slower)."
        ),
    ] = Depth.QUICK,
    max_turns: Annotated[
        int | None,
        typer.Option(help="Model turns with tools (1-100); with --depth deep, per researcher."),
    ] = None,
    deadline: Annotated[
        float | None, typer.Option(help="Seconds of research; with --depth deep, the whole run.")
    ] = None,
    output: Annotated[Path | None, typer.Option(help="Where to write the Markdown report.")] = None,
    language: Annotated[
        str | None,
        typer.Option(
            help="The report's language (de, fr, ja, de-DE …); default: the topic's, else English."
        ),
    ] = None,
) -> None:
    """Research a company (or public contracts) and write a Markdown report."""
    log_to_terminal()
    try:
        settings = load_settings(**_limits(depth, max_turns, deadline))
        request = Request(
            topic=topic,
            mode=mode,
            origin=Origin(platform="terminal"),
            depth=depth,
            language=language_for(stated(language), topic),
        )
        check_output(output)
        finish = asyncio.run(_with_services(settings, terminal_run.research, request, output))
    except QuotaError as error:
        raise fail(error, TRY_LATER) from None
    except BotError as error:
        raise fail(error) from None
    _conclude(finish)


def _limits(depth: Depth, max_turns: int | None, deadline: float | None) -> dict[str, Any]:
    """--max-turns and --deadline set the limits of the depth asked for."""
    if depth is Depth.DEEP:
        return {"deep_max_turns": max_turns, "deep_deadline_s": deadline}
    return {"max_turns": max_turns, "deadline_s": deadline}


def resume(
    run_id: str,
    output: Annotated[Path | None, typer.Option(help="Where to write the Markdown report.")] = None,
) -> None:
    """Finish an interrupted terminal run from what it had found, and write its report (a
    follow-up question is asked again, and its answer printed)."""
    log_to_terminal()
    try:
        settings = load_settings()
        check_output(output)
        finish = asyncio.run(_resume(settings, run_id, output))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None
    if isinstance(finish, cli_ask.Asked):
        cli_ask.print_answer(finish, as_json=False)
        return
    _conclude(finish)


async def _resume(
    settings: Settings, run_id: str, output: Path | None
) -> terminal_run.Finish | cli_ask.Asked:
    from bot.compose import open_services

    async with open_services(settings) as services:
        record = await services.store.get_run(run_id)
        if record.parent_run_id is not None:
            return await cli_ask.resume(services, err, record, output)
        return await terminal_run.resume(services, err, run_id, output)


async def _with_services(
    settings: Settings,
    action: Callable[[Services, Console, T, Path | None], Awaitable[terminal_run.Finish]],
    subject: T,
    output: Path | None,
) -> terminal_run.Finish:
    from bot.compose import open_services  # the model and web clients load only to research

    async with open_services(settings) as services:
        return await action(services, err, subject, output)


def _conclude(finish: terminal_run.Finish) -> None:
    """The path on stdout, or one line on what happened and how to get the report."""
    listener, run_id = finish.listener, finish.run_id
    if finish.stopped_by is not None:
        err.print(
            f"Stopped ({finish.stopped_by.name}). Run {run_id} is kept: finish it with "
            f"`research-bot resume {run_id}`.",
            markup=False,
        )
        raise typer.Exit(128 + finish.stopped_by.value)
    if listener.write_error is not None:
        err.print(
            f"research-bot: could not write the report ({listener.write_error.strerror}). It is "
            f"kept: `research-bot show {run_id}` prints it, `research-bot resume {run_id}` "
            "writes it again.",
            markup=False,
        )
        raise typer.Exit(1)
    if listener.path is None:
        raise typer.Exit(1)
    out.print(str(listener.path), markup=False, highlight=False)
