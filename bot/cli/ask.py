"""`research-bot ask RUN_ID "question"`: a follow-up question about a finished run, answered in
the terminal; a new report version, when the question asked for one, is written to a file.
The question and the run are checked before the model clients load (bot/cli/followup.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import (
    TRY_LATER,
    check_output,
    err,
    fail,
    known_run,
    load_settings,
    log_to_terminal,
    run_id_of,
)
from bot.config import Settings
from bot.domain import validate_question
from bot.errors import BotError, NotFoundError

if TYPE_CHECKING:
    from bot.cli.followup import Asked


def ask(
    run_id: Annotated[str, typer.Argument(callback=run_id_of, help="The run to ask about.")],
    question: Annotated[str, typer.Argument(help="A question about the run's report.")],
    output: Annotated[
        Path | None, typer.Option(help="Where to write a new report version, if one is made.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Ask a follow-up question about a finished run.

    It is answered from the run's evidence, researched a little further when needed;
    "update the report" writes the report's next version.
    """
    log_to_terminal()
    try:
        settings = load_settings()
        check_output(output)
        asked = asyncio.run(_ask(settings, run_id, question, output))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        from bot.runs.quota import QuotaError  # loaded only when a run was submitted

        raise fail(error, TRY_LATER if isinstance(error, QuotaError) else 2) from None
    from bot.cli.followup import print_answer

    print_answer(asked, as_json=as_json)


async def _ask(settings: Settings, run_id: str, question: str, output: Path | None) -> Asked:
    validate_question(question)
    await known_run(settings, run_id, platform="terminal", workspace="")
    from bot.cli.followup import ask_about
    from bot.compose import open_services

    async with open_services(settings) as services:
        return await ask_about(services, err, run_id, question, output)
