"""A follow-up question in the terminal: searches shown as `research` shows them, the answer
printed (a new report version written to a file), and a follow-up the process left asked
again. Loaded by `ask` and `resume` once they know the run, with the model clients."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import BaseModel
from rich.console import Console

from bot.adapters.chat.sink import describe_call
from bot.adapters.terminal import install_interrupts
from bot.agent.events import Event, ToolCalled
from bot.cli.common import err, write_stored
from bot.domain import Origin, RunRecord, RunStatus, strip_controls
from bot.errors import RequestError
from bot.runs.manager import Outcome

if TYPE_CHECKING:
    from bot.compose import Services

ENDED = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)


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
        if isinstance(event, ToolCalled):  # the model's input: shown as text, never obeyed
            self._console.print(strip_controls(describe_call(event)), markup=False)

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
    that had ended is printed again, with no model call), its answer printed as `ask` does."""
    if run.origin.platform != "terminal":
        raise RequestError(
            f"Follow-up {run.run_id} was asked in {run.origin.platform}: "
            "`research-bot serve` answers it in its thread."
        )
    listener = AnswerListener(console, output)
    record = await services.runs.resume(run.run_id, listener)
    if run.status in ENDED:
        doing = "answered before; its answer again"
    else:
        doing = f"asking again {strip_controls(record.topic)!r}"
    console.print(f"Follow-up {record.run_id}: {doing}", markup=False)
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


def print_answer(asked: Asked, *, as_json: bool) -> None:
    """A follow-up's answer on stdout (a new report version's file on stderr); exit 1 without
    an answer, saying why. The answer is the model's: its terminal escapes never print."""
    if as_json:
        # ASCII JSON: every control character (C1 ones too) is written as an escape, never raw.
        sys.stdout.write(json.dumps(asked.model_dump(mode="json")) + "\n")
    elif asked.answer is not None:
        write_stored(asked.answer)
    if asked.report_file and not as_json:
        err.print(f"Report version {asked.version}: {asked.report_file}", markup=False)
    if asked.answer is None:
        if not as_json:
            err.print(f"research-bot: {strip_controls(asked.error or asked.ending)}", markup=False)
        raise typer.Exit(1)
