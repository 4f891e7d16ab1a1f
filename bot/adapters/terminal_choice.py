"""The terminal's choice of company: when a run's name fits namesakes, the candidates numbered
and a number read from the terminal; without a terminal to answer on, the most likely one."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from rich.console import Console
from rich.text import Text

from bot.agent.events import IdentityOffered
from bot.domain import RunRecord, strip_controls
from bot.runs.manager import RunManager

log = logging.getLogger(__name__)
ALONE = "No terminal to answer on: taking the most likely one, 1."
UNCLEAR = "Type a number from the list (0: none of these), then Enter."


def stdin_fd() -> int | None:
    """The terminal's input, if this process has one."""
    try:
        return sys.stdin.fileno() if sys.stdin is not None else None
    except (OSError, ValueError):  # closed, or replaced by something without a descriptor
        return None


class TerminalChoice:
    """Asks the person at the terminal which company a run researches, through
    `RunManager.choose`. The answer is read as the terminal delivers it (never a blocked
    thread, which nothing could stop once the run went on without it)."""

    def __init__(self, runs: RunManager, console: Console, fd: int | None) -> None:
        self._runs = runs
        self._console = console
        self._fd = fd
        self._asking: tuple[str, int] | None = None
        """The run asked about and how many candidates it has, while a choice is read."""
        self._pending: set[asyncio.Task[RunRecord | None]] = set()

    @property
    def interactive(self) -> bool:
        return self._fd is not None and os.isatty(self._fd)

    async def offer(self, run: RunRecord, event: IdentityOffered) -> None:
        """Print the candidates; read a choice, or take the most likely one at once."""
        self._print("The name fits more than one company:")
        for n, company in enumerate(event.candidates, start=1):
            self._print(f"  {n}. {company.line()}")
            if company.description:
                self._print(f"     {company.description}")
        if not self.interactive:
            self._print(ALONE)
            await self._runs.choose(run.run_id, 0, alone=True)
            return
        self._print("  0. None of these: stop, to ask again with a more specific name")
        self._print(
            f"Which one? Type its number, then Enter (Enter alone: 1; unanswered within "
            f"{event.timeout_s:.0f} s, 1 is taken)."
        )
        self._asking = (run.run_id, len(event.candidates))
        assert self._fd is not None
        asyncio.get_running_loop().add_reader(self._fd, self._readable)

    def close(self) -> None:
        """Stop reading: the run settled its company (or ended)."""
        if self._asking is not None and self._fd is not None:
            asyncio.get_running_loop().remove_reader(self._fd)
        self._asking = None

    def _readable(self) -> None:
        asking = self._asking
        if asking is None or self._fd is None:
            return
        try:
            typed = os.read(self._fd, 1024).decode(errors="replace")
        except OSError as error:
            log.info("terminal: cannot read a choice: %s", error)
            typed = ""
        answer = typed.strip()
        if answer and not (answer.isdigit() and int(answer) <= asking[1]):
            self._print(UNCLEAR)
            return
        self.close()
        if not typed:  # the terminal went away: nobody is left to ask
            self._choose(asking[0], 0, alone=True)
        else:
            index = int(answer) - 1 if answer else 0
            self._choose(asking[0], None if index < 0 else index)

    def _choose(self, run_id: str, choice: int | None, *, alone: bool = False) -> None:
        task = asyncio.create_task(self._runs.choose(run_id, choice, alone=alone))
        self._pending.add(task)  # kept until done: the loop holds tasks only weakly
        task.add_done_callback(self._pending.discard)

    def _print(self, line: str) -> None:
        # Model-written names: printed as text, never as rich markup or terminal escapes.
        self._console.print(Text(strip_controls(line)))
