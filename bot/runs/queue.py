"""The run queue: at most N runs research at once; the others wait in the order they were asked
for, learn their place, and may be cancelled while they wait.

The line itself hands out the slots, to the first runs in it, and a run leaves it only from
its head: the order does not depend on which run's task or store write happens to finish
first (a run telling its place, two runs marked running on two database connections)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Announce = Callable[[str, int], Awaitable[None]]
"""Tell run `run_id` its place (1 = next)."""


@dataclass
class _Place:
    given: bool = False
    """A slot is this run's: it starts once every run ahead of it has."""
    position: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class RunQueue:
    def __init__(self, max_concurrent: int) -> None:
        self._free = max_concurrent
        self._line: dict[str, _Place] = {}
        """Runs not started yet, in the order they joined."""
        self._holding: set[str] = set()

    def join(self, run_id: str) -> None:
        self._line[run_id] = _Place()
        self._settle()

    def leave(self, run_id: str) -> bool:
        """Out of the queue, wherever it was: a slot it had (or was given) goes to the next in
        line. True when it had not started."""
        place = self._line.pop(run_id, None)
        if place is None and run_id not in self._holding:
            return False
        self._holding.discard(run_id)
        if place is None or place.given:
            self._free += 1
        self._settle()
        return place is not None

    async def turn(self, run_id: str, cancelled: asyncio.Event, announce: Announce) -> bool:
        """Wait for a slot (True: then `take` it), unless `cancelled` is set first (False: the
        run has left the line). While it waits, the run hears its place each time it moves."""
        place = self._line[run_id]
        nudge = asyncio.ensure_future(_set_when(cancelled, place.changed))
        try:
            told = 0
            while not place.given and not cancelled.is_set():
                if place.position != told:
                    told = place.position
                    await announce(run_id, told)
                else:
                    place.changed.clear()
                    await place.changed.wait()
        finally:
            nudge.cancel()
        if place.given:
            return True
        self.leave(run_id)
        return False

    async def take(self, run_id: str) -> None:
        """Start with the slot given: once the runs ahead in line have started (or left)."""
        place = self._line[run_id]
        while next(iter(self._line)) != run_id:
            place.changed.clear()
            await place.changed.wait()
        del self._line[run_id]
        self._holding.add(run_id)
        self._settle()

    def _settle(self) -> None:
        """Free slots to the first runs without one; each run waiting hears if its place moved,
        and the head of the line if it may start."""
        position = 0
        for place in self._line.values():
            if not place.given and self._free:
                place.given = True
                self._free -= 1
                place.changed.set()
            if not place.given:
                position += 1
                if place.position != position:
                    place.position = position
                    place.changed.set()
        head = next(iter(self._line.values()), None)
        if head is not None and head.given:
            head.changed.set()


async def _set_when(cancelled: asyncio.Event, changed: asyncio.Event) -> None:
    await cancelled.wait()
    changed.set()
