"""A research run in the terminal, start to end: progress on stderr, the report written to a
file (its delivery), and the signals.

Ctrl-C once summarizes now, twice cancels. SIGTERM and SIGHUP (a closed terminal, `kill`) stop
the run and leave it interrupted, for `research-bot resume RUN_ID`.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from bot.adapters.chat.sink import StatusView
from bot.adapters.terminal import TerminalProgress, install_interrupts
from bot.adapters.terminal_choice import TerminalChoice, stdin_fd
from bot.agent.events import Event
from bot.domain import Request, RunRecord, RunStatus, strip_controls
from bot.errors import RequestError
from bot.runs.manager import Outcome

if TYPE_CHECKING:
    from bot.compose import Services

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class ReportFile:
    """A terminal run's listener: progress on the console, the report written to a file."""

    def __init__(
        self,
        console: Console,
        view: StatusView,
        output: Path | None,
        choice: TerminalChoice | None = None,
    ) -> None:
        self._progress = TerminalProgress(console, view, choice)
        self._output = output
        self.outcome: Outcome | None = None
        self.path: Path | None = None
        self.write_error: OSError | None = None

    async def on_event(self, run: RunRecord, event: Event) -> None:
        await self._progress.on_event(run, event)

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        self.outcome = outcome
        await self._progress.on_finished(run, outcome)
        if outcome.markdown is None or outcome.filename is None:
            return
        path = self._output or Path.cwd() / outcome.filename
        try:
            await asyncio.to_thread(path.write_text, outcome.markdown, encoding="utf-8")
        except OSError as error:
            # Not delivered: the runs service keeps it undelivered, and `resume` writes it again.
            self.write_error = error
            raise
        self.path = path

    def close(self) -> None:
        self._progress.close()


@dataclass
class Finish:
    run_id: str
    listener: ReportFile
    stopped_by: signal.Signals | None = None


async def follow(
    services: Services, console: Console, run: RunRecord, listener: ReportFile
) -> Finish:
    """Wait for the run, with Ctrl-C to summarize or cancel and SIGTERM/SIGHUP to stop it."""
    install_interrupts(services.runs, run.run_id, console)
    loop = asyncio.get_running_loop()
    stopped: asyncio.Future[signal.Signals] = loop.create_future()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, _set_once, stopped, sig)
    finished = asyncio.ensure_future(services.runs.wait(run.run_id))
    either: set[asyncio.Future[Any]] = {finished, stopped}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        listener.close()
    if finished.done():
        return Finish(run.run_id, listener)
    finished.cancel()
    await services.runs.shutdown(delivery_grace_s=2.0)
    return Finish(run.run_id, listener, stopped_by=stopped.result())


def _set_once(future: asyncio.Future[signal.Signals], sig: signal.Signals) -> None:
    if not future.done():
        future.set_result(sig)


async def research(
    services: Services, console: Console, request: Request, output: Path | None
) -> Finish:
    view = StatusView(run_id="", topic=request.topic, mode=request.mode.value, requester="you")
    listener = ReportFile(console, view, output, TerminalChoice(services.runs, console, stdin_fd()))
    try:
        record = await services.runs.submit(request, listener)
    except RequestError:  # refused (the daily budget): nothing was stored, nothing runs
        listener.close()
        raise
    console.print(f"Run {record.run_id}: researching {request.topic!r}", markup=False)
    return await follow(services, console, record, listener)


async def resume(services: Services, console: Console, run_id: str, output: Path | None) -> Finish:
    record = await services.store.get_run(run_id)
    if record.origin.platform != "terminal":
        raise RequestError(
            f"Run {record.run_id} was started in {record.origin.platform}: "
            "`research-bot serve` finishes it in its thread."
        )
    view = StatusView(
        run_id=record.run_id, topic=record.topic, mode=record.mode.value, requester="you"
    )
    listener = ReportFile(console, view, output, TerminalChoice(services.runs, console, stdin_fd()))
    ended = record.status in (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)
    record = await services.runs.resume(record.run_id, listener)
    doing = "it had ended; writing its report again" if ended else "resuming"
    console.print(f"Run {record.run_id}: {doing} {strip_controls(record.topic)!r}", markup=False)
    return await follow(services, console, record, listener)
