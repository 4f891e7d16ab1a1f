"""A run's control: "Summarize now", "Cancel" and a person's choice of company, set from any
front end, seen by the run at once."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Literal

CHOOSE = "choose:"
"""How a choice travels as a control action between replicas: `choose:2`, `choose:refine`."""
REFINE = "refine"


def choice_action(choice: int | None) -> str:
    """The control action of a choice: an index, or None for "none of these"."""
    return f"{CHOOSE}{REFINE if choice is None else choice}"


def parse_choice(action: str) -> int | None:
    """The choice a `choose:` action carries (None: "none of these"). Raises ValueError."""
    value = action.removeprefix(CHOOSE)
    return None if value == REFINE else int(value)


@dataclass(frozen=True)
class Choice:
    """How a wait for a person's choice of company ended."""

    how: Literal["person", "alone", "refine", "summarize", "cancel", "timeout"]
    """person: a person chose; alone: the front end could ask nobody and took the most likely."""
    index: int = 0
    """The candidate taken: the person's choice, else 0 (the most likely)."""


class Control:
    """Two one-way switches, and one choice per run. Pressing any of them twice is harmless."""

    def __init__(self) -> None:
        self.summarize_requested = asyncio.Event()
        self.cancel_requested = asyncio.Event()
        self.summarize_reason = "forced"
        """Why the write-up was asked for: `forced` (a person) or `budget` (the cost limit)."""
        self._chosen = asyncio.Event()
        self._choice: int | None = None
        self._alone = False
        self._choosing = False
        self._closed = False
        self._options = 0

    def summarize(self, reason: str = "forced") -> None:
        if not self.summarize_requested.is_set():
            self.summarize_reason = reason
        self.summarize_requested.set()

    def cancel(self) -> None:
        self.cancel_requested.set()

    def rearm_summarize(self) -> None:
        """After a summarize that found nothing to write up, the next press counts again."""
        self.summarize_requested.clear()

    @property
    def awaiting_choice(self) -> bool:
        """The run is waiting for a person to choose its company now."""
        return self._choosing

    def choose(self, choice: int | None, *, alone: bool = False) -> bool:
        """A person's choice of company (an index, or None: "none of these"); `alone`: the
        front end has nobody to ask and takes this one. The first one counts; one made after
        the wait ended changes nothing. True when it was taken."""
        if self._closed or self._chosen.is_set():
            return False
        if choice is not None and (choice < 0 or (self._choosing and choice >= self._options)):
            return False
        self._choice, self._alone = choice, alone
        self._chosen.set()
        return True

    async def wait_choice(self, options: int, timeout_s: float) -> Choice:
        """Wait for a choice among `options` candidates, a cancel or a summarize, at most
        `timeout_s`; then no choice is taken any more. A summarize pressed while waiting is
        spent on taking the most likely (there is nothing to write up yet)."""
        self._choosing, self._options = True, options
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    _first(self._chosen, self.cancel_requested, self.summarize_requested),
                    timeout=timeout_s,
                )
        finally:
            self._choosing = False
            self._closed = True
        if self.cancel_requested.is_set():
            return Choice("cancel")
        if self._chosen.is_set():
            if self._choice is None:
                return Choice("refine")
            if self._choice < options:  # one made before the wait is checked here
                return Choice("alone" if self._alone else "person", self._choice)
        if self.summarize_requested.is_set():
            self.rearm_summarize()
            return Choice("summarize")
        return Choice("timeout")

    async def wait_any(self) -> None:
        """Return as soon as either switch is set."""
        await _first(self.summarize_requested, self.cancel_requested)


async def _first(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
