"""The run queue: at most N runs research at once; the others wait in order, learn their place,
and may be cancelled while they wait."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

Announce = Callable[[str, int], Awaitable[None]]
"""Tell run `run_id` its place (1 = next)."""


class RunQueue:
    def __init__(self, max_concurrent: int) -> None:
        self._slots = asyncio.Semaphore(max_concurrent)
        self._waiting: list[str] = []

    def join(self, run_id: str) -> None:
        self._waiting.append(run_id)

    def leave(self, run_id: str) -> bool:
        """Take a run out of the line; True when it was still waiting."""
        if run_id in self._waiting:
            self._waiting.remove(run_id)
            return True
        return False

    async def turn(self, run_id: str, cancelled: asyncio.Event, announce: Announce) -> bool:
        """Wait for a slot (True: held until `release`), unless `cancelled` is set first.
        The run hears its place when it must wait, and everyone behind it hears theirs when
        it leaves the line."""
        if self._slots.locked():
            await announce(run_id, self._waiting.index(run_id) + 1)
        acquire = asyncio.ensure_future(self._slots.acquire())
        stop = asyncio.ensure_future(cancelled.wait())
        try:
            await asyncio.wait({acquire, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not acquire.done():
                acquire.cancel()
        self.leave(run_id)
        for position, waiting in enumerate(list(self._waiting), start=1):
            await announce(waiting, position)
        return acquire.done() and not acquire.cancelled()

    def release(self) -> None:
        self._slots.release()
