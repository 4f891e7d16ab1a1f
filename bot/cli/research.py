"""`research-bot research` and `resume`: a run in the terminal, and finishing an interrupted
one from what it had found (the run itself: bot/cli/terminal_run.py, loaded with the model and
web clients once the command line and the run id have been checked)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bot.agent.language import language_for, stated
from bot.cli.common import (
    TRY_LATER,
    check_output,
    err,
    fail,
    known_run,
    load_settings,
    log_to_terminal,
    mcp_configs,
    out,
    run_id_of,
)
from bot.config import Settings
from bot.domain import Depth, Mode, Origin, Request
from bot.errors import BotError, NotFoundError

if TYPE_CHECKING:
    from bot.cli import followup, terminal_run


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
        typer.Option(help="Model turns with tools: 1-100; with --depth deep, 1-50 per researcher."),
    ] = None,
    deadline: Annotated[
        float | None,
        typer.Option(
            help="Seconds of research, at most 86400 (a day); with --depth deep, the whole run."
        ),
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
        settings = load_settings(_limits(depth, max_turns, deadline))
        mcp_configs(settings)  # a bad MCP config stops here, before any spend
        request = Request(
            topic=topic,
            mode=mode,
            origin=Origin(platform="terminal"),
            depth=depth,
            language=language_for(stated(language), topic),
        )
        check_output(output)
        finish = asyncio.run(_with_services(settings, request, output))
    except BotError as error:
        raise _failed(error) from None
    _conclude(finish)


def _limits(
    depth: Depth, max_turns: int | None, deadline: float | None
) -> dict[str, tuple[str, Any]]:
    """--max-turns and --deadline set the limits of the depth asked for (each setting with the
    option that sets it, so a refusal names the option)."""
    if depth is Depth.DEEP:
        return {
            "deep_max_turns": ("--max-turns", max_turns),
            "deep_deadline_s": ("--deadline", deadline),
        }
    return {"max_turns": ("--max-turns", max_turns), "deadline_s": ("--deadline", deadline)}


def _failed(error: BotError) -> typer.Exit:
    """Exit 1 for an unknown run, 75 for a run the budget refused (try later), else 2."""
    from bot.runs.quota import QuotaError  # loaded already once a run was submitted

    if isinstance(error, NotFoundError):
        return fail(error, 1)
    return fail(error, TRY_LATER if isinstance(error, QuotaError) else 2)


def resume(
    run_id: Annotated[str, typer.Argument(callback=run_id_of, help="The run to finish.")],
    output: Annotated[Path | None, typer.Option(help="Where to write the Markdown report.")] = None,
) -> None:
    """Finish an interrupted terminal run from what it had found, and write its report.

    A run that had ended has its report written again, with no new research. A follow-up
    question is asked again (or, if it had been answered, its answer printed again).
    """
    log_to_terminal()
    try:
        settings = load_settings()
        check_output(output)
        finish = asyncio.run(_resume(settings, run_id, output))
    except BotError as error:
        raise _failed(error) from None
    from bot.cli import followup

    if isinstance(finish, followup.Asked):
        followup.print_answer(finish, as_json=False)
        return
    _conclude(finish)


async def _resume(
    settings: Settings, run_id: str, output: Path | None
) -> terminal_run.Finish | followup.Asked:
    await known_run(settings, run_id)
    from bot.cli import followup, terminal_run
    from bot.compose import open_services

    async with open_services(settings) as services:
        record = await services.store.get_run(run_id)
        if record.parent_run_id is not None:
            return await followup.resume(services, err, record, output)
        return await terminal_run.resume(services, err, run_id, output)


async def _with_services(
    settings: Settings, request: Request, output: Path | None
) -> terminal_run.Finish:
    from bot.cli import terminal_run
    from bot.compose import open_services  # the model and web clients load only to research

    async with open_services(settings) as services:
        return await terminal_run.research(services, err, request, output)


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
