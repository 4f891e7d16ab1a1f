"""`research-bot ask RUN_ID "question"`: a follow-up question about a finished run, answered in
the terminal; a new report version, when the question asked for one, is written to a file."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console

from bot.adapters.terminal import install_interrupts
from bot.agent.events import Event, ToolCalled
from bot.cli.common import TRY_LATER, err, fail, load_settings, log_to_terminal
from bot.cli.terminal_run import check_output
from bot.config import Settings
from bot.domain import Origin, RunRecord, strip_controls
from bot.errors import BotError, NotFoundError, RequestError
from bot.runs.manager import Outcome
from bot.runs.quota import QuotaError

if TYPE_CHECKING:
    from bot.compose import Services


class Asked(BaseModel):
    """What `ask` prints (`--json`: all of it)."""

    run_id: str
    parent_run_id: str
    ending: str
    answer: str | None = None
    error: str | None = None
    turns: int = 0
    cost_usd: float | None = None
    version: int | None = None
    report_file: str | None = None


class AnswerListener:
    """Searches on the console as they happen; the new report version written to a file."""

    def __init__(self, console: Console, output: Path | None) -> None:
        self._console = console
        self._output = output
        self.outcome: Outcome | None = None
        self.path: Path | None = None

    async def on_event(self, run: RunRecord, event: Event) -> None:
        if isinstance(event, ToolCalled):
            said = " ".join(f"{value}" for value in event.input.values())
            self._console.print(f"{event.name}: {strip_controls(said)}", markup=False)

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        self.outcome = outcome
        if outcome.markdown is None or outcome.filename is None:
            return
        path = self._output or Path.cwd() / outcome.filename
        # Not written: the runs service keeps it undelivered (raised), `show` prints it.
        await asyncio.to_thread(path.write_text, outcome.markdown, encoding="utf-8")
        self.path = path


async def ask_about(
    services: Services, console: Console, run_id: str, question: str, output: Path | None
) -> Asked:
    listener = AnswerListener(console, output)
    record = await services.followups.ask(run_id, question, Origin(platform="terminal"), listener)
    return await _answered(services, console, record, listener)


async def resume(
    services: Services, console: Console, run: RunRecord, output: Path | None
) -> Asked:
    """`research-bot resume FOLLOW_UP_ID`: a follow-up the process left is asked again (one
    that had ended is printed again), its answer printed as `ask` prints it."""
    if run.origin.platform != "terminal":
        raise RequestError(
            f"Follow-up {run.run_id} was asked in {run.origin.platform}: "
            "`research-bot serve` answers it in its thread."
        )
    listener = AnswerListener(console, output)
    record = await services.runs.resume(run.run_id, listener)
    console.print(f"Follow-up {record.run_id}: asking again {record.topic!r}", markup=False)
    return await _answered(services, console, record, listener)


async def _answered(
    services: Services, console: Console, record: RunRecord, listener: AnswerListener
) -> Asked:
    install_interrupts(services.runs, record.run_id, console)
    await services.runs.wait(record.run_id)
    stored = await services.store.get_run(record.run_id)
    outcome = listener.outcome
    return Asked(
        run_id=stored.run_id,
        parent_run_id=str(stored.parent_run_id),
        ending=stored.termination_reason or stored.status.value,
        answer=outcome.answer if outcome else None,
        error=stored.error,
        turns=stored.turns,
        cost_usd=stored.cost_usd,
        version=outcome.version if outcome else None,
        report_file=str(listener.path) if listener.path else None,
    )


def history_rows(runs: list[RunRecord], children: dict[str, list[RunRecord]]) -> list[RunRecord]:
    """Each run, then its follow-ups (oldest first): the order history shows them in."""
    return [row for run in runs for row in (run, *children.get(run.run_id, []))]


def with_follow_ups(
    shape: dict[str, Any], follow_ups: list[tuple[RunRecord, dict[str, Any]]]
) -> dict[str, Any]:
    """A run's trajectory with its follow-ups' trajectories under it."""
    if follow_ups:
        shape["follow_ups"] = [
            {"question": child.topic, "parent_run_id": child.parent_run_id, **steps}
            for child, steps in follow_ups
        ]
    return shape


def ask(
    run_id: str,
    question: Annotated[str, typer.Argument(help="A question about the run's report.")],
    output: Annotated[
        Path | None, typer.Option(help="Where to write a new report version, if one is made.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Ask a follow-up question about a finished run: answered from its evidence, researched
    a little further when needed; "update the report" writes its next version."""
    log_to_terminal()
    try:
        settings = load_settings()
        check_output(output)
        asked = asyncio.run(_ask(settings, run_id, question, output))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except QuotaError as error:
        raise fail(error, TRY_LATER) from None
    except BotError as error:
        raise fail(error) from None
    print_answer(asked, as_json=as_json)


def print_answer(asked: Asked, *, as_json: bool) -> None:
    """A follow-up's answer on stdout (a new report version's file on stderr); exit 1 without
    an answer, saying why."""
    if as_json:
        sys.stdout.write(asked.model_dump_json() + "\n")
    elif asked.answer is not None:
        sys.stdout.write(asked.answer)
    if asked.report_file and not as_json:
        err.print(f"Report version {asked.version}: {asked.report_file}", markup=False)
    if asked.answer is None:
        if not as_json:
            err.print(f"research-bot: {asked.error or asked.ending}", markup=False)
        raise typer.Exit(1)


async def _ask(settings: Settings, run_id: str, question: str, output: Path | None) -> Asked:
    from bot.compose import open_services

    async with open_services(settings) as services:
        return await ask_about(services, err, run_id, question, output)
