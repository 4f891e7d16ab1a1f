"""A run's control: "Summarize now" and "Cancel", set from any front end, seen by the loop at once."""

from __future__ import annotations

import asyncio


class Control:
    """Two one-way switches. Pressing either twice is harmless."""

    def __init__(self) -> None:
        self.summarize_requested = asyncio.Event()
        self.cancel_requested = asyncio.Event()
        self.summarize_reason = "forced"
        """Why the write-up was asked for: `forced` (a person) or `budget` (the cost limit)."""

    def summarize(self, reason: str = "forced") -> None:
        if not self.summarize_requested.is_set():
            self.summarize_reason = reason
        self.summarize_requested.set()

    def cancel(self) -> None:
        self.cancel_requested.set()

    def rearm_summarize(self) -> None:
        """After a summarize that found nothing to write up, the next press counts again."""
        self.summarize_requested.clear()

    async def wait_any(self) -> None:
        """Return as soon as either switch is set."""
        waits = [
            asyncio.ensure_future(self.summarize_requested.wait()),
            asyncio.ensure_future(self.cancel_requested.wait()),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
