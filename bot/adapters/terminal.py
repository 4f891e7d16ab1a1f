"""The terminal front end: live progress with rich; Ctrl-C once summarizes now, twice cancels."""

from __future__ import annotations

import asyncio
import signal

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from bot.adapters.chat import StatusView, describe_call, outcome_summary
from bot.agent.events import (
    Event,
    Notice,
    RunQueued,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    UsageRecorded,
    add_costs,
    format_cost,
)
from bot.agent.fence import plain
from bot.domain import RunRecord, strip_controls
from bot.runs import Outcome, RunManager


class TerminalProgress:
    """A `RunListener` that draws one status line (live on a terminal, plain lines otherwise)."""

    def __init__(self, console: Console, view: StatusView) -> None:
        self._console = console
        self.view = view
        self._urls: set[str] = set()
        self._live: Live | None = None
        if console.is_terminal:
            self._live = Live(self._status(), console=console, refresh_per_second=8, transient=True)
            self._live.start()
        self.outcome: Outcome | None = None

    async def on_event(self, run: RunRecord, event: Event) -> None:
        view = self.view
        line: str | None = None
        if isinstance(event, RunQueued):
            line = f"queued (#{event.position})"
        elif isinstance(event, TurnStarted):
            view.turn = event.turn
        elif isinstance(event, ToolCalled):
            view.action = line = describe_call(event)
        elif isinstance(event, ToolFinished):
            self._urls.update(s.url for s in event.sources)
            view.sources = len(self._urls)
            if event.is_error:
                line = f"  ! {plain(event.content)[:160]}"
        elif isinstance(event, UsageRecorded):
            view.cost_usd = add_costs(view.cost_usd, event.usage.cost_usd)
        elif isinstance(event, SynthesisStarted):
            view.action = line = "Writing the report"
        elif isinstance(event, Notice):
            line = event.message
        if line is not None:
            self._print(line)
        if self._live is not None:
            self._live.update(self._status())

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        self.outcome = outcome
        self.close()
        self._console.print(escape(strip_controls(outcome_summary(outcome))))

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _print(self, line: str) -> None:
        # Model and web text: printed as text, never as rich markup or terminal escapes.
        prefix = f"[turn {self.view.turn}] " if self.view.turn else ""
        self._console.print(Text(strip_controls(prefix + line)))

    def _status(self) -> Text:
        v = self.view
        return Text(
            strip_controls(
                f"⏳ {v.topic} · turn {v.turn} · {v.sources} sources · "
                f"{format_cost(v.cost_usd, 3)} · {v.action}  (Ctrl-C: summarize now, twice: cancel)"
            )
        )


def install_interrupts(runs: RunManager, run_id: str, console: Console) -> None:
    """SIGINT once: summarize now; twice: cancel. Works without a terminal too (kill -INT)."""
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            console.print("Summarizing now… (Ctrl-C again to cancel)")
            runs.summarize(run_id)
        else:
            console.print("Cancelling…")
            runs.cancel(run_id)

    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_sigint)
