"""The terminal front end: live progress with rich (a deep run's researchers as a live table);
Ctrl-C once summarizes now, twice cancels."""

from __future__ import annotations

import asyncio
import signal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from bot.adapters.chat.sink import (
    ResearcherRows,
    StatusView,
    deep_milestone,
    describe_call,
    outcome_summary,
    sources_label,
)
from bot.adapters.terminal_choice import TerminalChoice
from bot.agent.events import (
    Event,
    IdentityOffered,
    IdentitySettled,
    Notice,
    ProviderSwitched,
    RunQueued,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    UsageRecorded,
    add_costs,
)
from bot.agent.fence import plain
from bot.agent.report.markdown import parse
from bot.agent.report.model import format_cost
from bot.agent.state import NOTHING_YET
from bot.domain import Depth, RunRecord, strip_controls
from bot.runs.manager import Outcome, RunManager

NOTHING_YET_HERE = (
    "Nothing has been gathered yet, so there is nothing to summarize: the research goes on. "
    "Ctrl-C again cancels it."
)
"""The engine's NOTHING_YET in the terminal's own keys: here the second Ctrl-C is Cancel."""
WRITTEN_AGAIN = "This run had ended: its report is written again from what was stored."
WRITTEN_LATE = "This run had ended, but its report could not be written then: it is written now."


class TerminalProgress:
    """A `RunListener` that draws one status line (live on a terminal, plain lines otherwise)."""

    def __init__(
        self, console: Console, view: StatusView, choice: TerminalChoice | None = None
    ) -> None:
        """`choice`: asks which company when the run's name fits namesakes."""
        self._console = console
        self._choice = choice
        self.view = view
        self._urls: set[str] = set()
        self._rows = ResearcherRows(view)
        self._deep = False
        """A deep run: its own turns (plan, draft, report) are not shown as turns."""
        self._live: Live | None = None
        self._start_live()
        self.outcome: Outcome | None = None

    def _start_live(self) -> None:
        if self._console.is_terminal and self._live is None:
            self._live = Live(
                self._status(), console=self._console, refresh_per_second=8, transient=True
            )
            self._live.start()

    async def on_event(self, run: RunRecord, event: Event) -> None:
        self._deep = run.depth is Depth.DEEP
        self._rows.apply(event)
        line = self._fold(event)
        milestone = deep_milestone(event)
        if milestone is not None:
            self._print(milestone)
        elif line is not None:
            self._print(self._whose(event) + line)
        if isinstance(event, IdentityOffered) and self._choice is not None:
            self.close()  # a redrawn status line would cut through what the person types
            await self._choice.offer(run, event)
        elif isinstance(event, IdentitySettled) and self._choice is not None:
            self._choice.close()
            self._start_live()
        if self._live is not None:
            self._live.update(self._status())

    def _whose(self, event: Event) -> str:
        """Researchers work side by side: each of their lines says whose it is. A quick run's
        lines say their turn; a deep run's own turns (plan, draft, report) mean nothing here."""
        if isinstance(event, ProviderSwitched):
            return ""  # the whole run's, whichever researcher's call noticed it
        if event.agent:
            return f"[researcher {event.agent}] "
        if self._deep or not self.view.turn:
            return ""
        return f"[turn {self.view.turn}] "

    def _fold(self, event: Event) -> str | None:
        """Fold an event into the run's own status; the line to print, if any."""
        view = self.view
        line: str | None = None
        if isinstance(event, RunQueued):
            line = f"queued (#{event.position})"
        elif isinstance(event, TurnStarted) and not event.agent:
            view.turn = event.turn
        elif isinstance(event, ToolCalled):
            line = describe_call(event)
            if not event.agent:
                view.action = line
        elif isinstance(event, ToolFinished):
            self._urls.update(s.url for s in event.sources)
            view.sources = len(self._urls)
            if event.is_error:
                line = f"  ! {plain(event.content)[:160]}"
        elif isinstance(event, UsageRecorded):
            view.cost_usd = add_costs(view.cost_usd, event.usage.cost_usd)
        elif isinstance(event, SynthesisStarted):
            view.action = line = "Writing the report"
        elif isinstance(event, ProviderSwitched):
            line = event.message
        elif isinstance(event, IdentitySettled):
            line = event.note
        elif isinstance(event, Notice):
            line = NOTHING_YET_HERE if event.message == NOTHING_YET else event.message
        return line

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        self.outcome = outcome
        self.close()
        if outcome.redelivery:  # `resume` of a run that had ended: no restart, nothing posted
            self._console.print(WRITTEN_AGAIN if run.delivered_at else WRITTEN_LATE)
        shown = outcome.model_copy(update={"redelivery": False})
        if outcome.report is not None:
            tldr = terminal_text(outcome.report.tldr)
            shown.report = outcome.report.model_copy(update={"tldr": tldr})
        self._console.print(escape(strip_controls(outcome_summary(shown))))

    def close(self) -> None:
        if self._choice is not None and self.outcome is not None:
            self._choice.close()
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _print(self, line: str) -> None:
        # Model and web text: printed as text, never as rich markup or terminal escapes.
        self._console.print(Text(strip_controls(line)))

    def _status(self) -> RenderableType:
        v = self.view
        turn = "" if self._deep else f"turn {v.turn} · "
        line = Text(
            strip_controls(
                f"⏳ {v.topic} · {turn}{sources_label(v.sources)} · "
                f"{format_cost(v.cost_usd, 3)} · {v.action}  (Ctrl-C: summarize now, twice: cancel)"
            )
        )
        return Group(self._table(), line) if v.researchers else line

    def _table(self) -> Table:
        """A deep run's researchers: one row each, its cells plain text (never markup)."""
        table = Table(box=None, pad_edge=False)
        table.add_column("#", justify="right")
        table.add_column("sub-question", max_width=60, no_wrap=True, overflow="ellipsis")
        table.add_column("doing", max_width=40, no_wrap=True, overflow="ellipsis")
        table.add_column("sources", justify="right")
        table.add_column("done")
        for row in self.view.researchers:
            table.add_row(
                str(row.agent),
                _cell(row.question),
                _cell(row.action),
                str(row.sources),
                "✓" if row.done else "",
            )
        return table


def terminal_text(markdown: str) -> str:
    """Markdown from the model (a TL;DR) as a terminal shows it: its words, a line per
    paragraph or list item, without markup or escapes (`\\<@U0ADMIN>` reads `<@U0ADMIN>`:
    nothing pings anyone here)."""
    lines: list[str] = []
    marker = ""
    for token in parse(markdown):
        if token.type == "list_item_open":
            marker = f"{token.info}{token.markup} " if token.info else "- "
        elif token.type == "inline":
            words = "".join(
                " " if child.type in {"softbreak", "hardbreak"} else child.content
                for child in token.children or []
                if child.type in {"text", "code_inline", "html_inline", "softbreak", "hardbreak"}
            )
            lines.append(marker + words)
            marker = ""
        elif token.type in {"html_block", "code_block", "fence"}:
            lines.append(token.content.rstrip("\n"))
    return "\n".join(lines)


def _cell(text: str) -> Text:
    """Untrusted text for one table cell: plain, on one line."""
    return Text(" ".join(strip_controls(text).split()))


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
