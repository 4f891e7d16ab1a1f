"""Admitting requests at once, in the order they were asked for: each person's one at a time
(the hourly limit counts the runs stored), everyone's store writes side by side.

Requests used to be admitted one at a time, all of them: with 100 runs keeping the event loop
busy, each of 100 requests then waited for every store round trip of the ones before it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from bot.domain import Origin

Person = tuple[str, str, str]


class Admission:
    def __init__(self, *, limited: bool) -> None:
        """`limited`: an hourly limit applies, so one person's requests go one at a time."""
        self._limited = limited
        self._last: asyncio.Future[None] | None = None
        self._people: dict[Person, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def in_order(self) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """A place among the requests, taken at once (enter before the request's first await):
        `await turn()` returns once every request asked before this one has left (or given up),
        so what this one does from there happens in the order asked, whichever store write
        ended first. Leaving gives the next one its turn."""
        ahead, mine = self._last, asyncio.get_running_loop().create_future()
        self._last = mine

        async def turn() -> None:
            if ahead is not None:
                await asyncio.shield(ahead)

        try:
            yield turn
        finally:
            _after(ahead, mine)
            if self._last is mine:
                self._last = None

    @asynccontextmanager
    async def one_per_person(self, origin: Origin) -> AsyncIterator[None]:
        """A person's requests one at a time, so two at once cannot both take their last run
        of the hour. Nothing else a request is checked against changes when a run is stored
        (no spend yet), and the terminal has no person: those never wait."""
        if not self._limited or not origin.user:
            yield
            return
        key = (origin.platform, origin.workspace, origin.user)
        lock, users = self._people.get(key, (asyncio.Lock(), 0))
        self._people[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._people[key]
            if users == 1:
                del self._people[key]
            else:
                self._people[key] = (lock, users - 1)


def _after(ahead: asyncio.Future[None] | None, mine: asyncio.Future[None]) -> None:
    """`mine` is done once `ahead` is: a request that gave up early still holds its place."""
    if ahead is None or ahead.done():
        if not mine.done():
            mine.set_result(None)
    else:
        ahead.add_done_callback(lambda _: _after(None, mine))
