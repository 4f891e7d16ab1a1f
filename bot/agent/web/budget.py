"""The process-wide budget for reading pages: fetches at once, and body bytes held in memory.

Each fetch is bounded on its own (`FetchLimits`); this bounds them all together, so a hundred
runs that each meet a compression bomb or a huge page cost at most `max_bytes` between them.
A fetch beyond `max_fetches` waits for a slot. A fetch whose next piece would take the bytes
held past `max_bytes` is refused at once rather than made to wait: it already holds bytes, and
fetches that wait on each other's bytes could wait forever.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.errors import ToolError

MiB = 1024 * 1024


class ReadBudget:
    """Shared by every fetch of the process; `async with budget.slot() as allowance: ...`."""

    def __init__(self, *, max_fetches: int = 32, max_bytes: int = 64 * MiB) -> None:
        self.max_fetches = max_fetches
        self.max_bytes = max_bytes
        self._slots = asyncio.Semaphore(max_fetches)
        # Bytes are counted from the threads that inflate bodies as well as from the loop.
        self._lock = threading.Lock()
        self._held = 0
        self._fetching = 0
        self.peak_bytes = 0
        """The most ever held at once (for tests and the benchmark)."""

    @property
    def held_bytes(self) -> int:
        return self._held

    @property
    def fetching(self) -> int:
        """Fetches holding a slot now."""
        return self._fetching

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Allowance]:
        """Wait for a fetch slot; every byte taken through the allowance is given back after."""
        async with self._slots:
            allowance = Allowance(self)
            self._fetching += 1
            try:
                yield allowance
            finally:
                self._fetching -= 1
                allowance.release()

    def _take(self, allowance: Allowance, n: int) -> bool:
        with self._lock:
            if allowance.closed or self._held + n > self.max_bytes:
                return False
            self._held += n
            allowance.taken += n
            self.peak_bytes = max(self.peak_bytes, self._held)
            return True

    def _release(self, allowance: Allowance) -> None:
        # Under the lock with `_take`: an inflating thread still running after its fetch was
        # cancelled can take nothing more once the fetch has given its bytes back.
        with self._lock:
            allowance.closed = True
            self._held -= allowance.taken
            allowance.taken = 0


class Allowance:
    """One fetch's share of the budget."""

    def __init__(self, budget: ReadBudget) -> None:
        self._budget = budget
        self.taken = 0
        self.closed = False

    def take(self, n: int) -> None:
        """Count `n` more bytes held by this fetch, or refuse the fetch (ToolError)."""
        if not self._budget._take(self, n):
            raise ToolError(
                "the bot is reading too many large pages at once: try this page again later"
            )

    def release(self) -> None:
        self._budget._release(self)
