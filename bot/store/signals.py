"""Signals between replicas: "a run is queued", "this run's control changed". On PostgreSQL
they travel as `NOTIFY` on one channel, heard by every replica (the sender included) on a
dedicated `LISTEN` connection that comes back by itself when the server restarts; on SQLite
(one process) they stay in the process. A lost signal costs only latency: every listener also
looks again on its own timer, and after a reconnect it is told to look at everything."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from sqlalchemy import text

from bot.store.connection import Database

log = logging.getLogger(__name__)
CHANNEL = "research_bot_runs"
RECONNECT_S = (0.2, 0.5, 1.0, 2.0)


@dataclass(frozen=True)
class Signal:
    kind: str
    """`queued`, `claimed`, `control`, or `resync` (signals may have been missed)."""
    run_id: str = ""


class Signals:
    """In-process signals (SQLite: there is only this process)."""

    def __init__(self) -> None:
        self._subscribers: list[asyncio.Queue[Signal]] = []

    async def publish(self, kind: str, run_id: str = "") -> None:
        self._fan_out(Signal(kind, run_id))

    def _fan_out(self, signal: Signal) -> None:
        for queue in self._subscribers:
            queue.put_nowait(signal)

    async def subscribe(self) -> AsyncIterator[Signal]:
        queue: asyncio.Queue[Signal] = asyncio.Queue()
        self._subscribers.append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._subscribers.remove(queue)

    async def start(self) -> None:
        """Ready to hear other replicas (nothing to do in one process)."""

    async def close(self) -> None:
        """Stop hearing."""


class PostgresSignals(Signals):
    def __init__(self, database: Database, url: str) -> None:
        super().__init__()
        self._database = database
        self._url = url
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    async def publish(self, kind: str, run_id: str = "") -> None:
        payload = f"{kind}:{run_id}"
        await self._database.write(
            lambda conn: conn.execute(
                text("SELECT pg_notify(:channel, :payload)"),
                {"channel": CHANNEL, "payload": payload},
            )
        )

    async def start(self) -> None:
        """Listen from now on; returns once the first LISTEN is in place."""
        if self._task is None:
            self._task = asyncio.create_task(self._listen(), name="signals")
        await self._listening.wait()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _listen(self) -> None:
        import psycopg

        failures = 0
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    _libpq_url(self._url), autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    if self._listening.is_set():
                        self._fan_out(Signal("resync"))  # what was said meanwhile is lost
                    self._listening.set()
                    failures = 0
                    async for note in conn.notifies():
                        kind, _, run_id = note.payload.partition(":")
                        self._fan_out(Signal(kind, run_id))
            except psycopg.Error as error:
                pause = RECONNECT_S[min(failures, len(RECONNECT_S) - 1)]
                failures += 1
                log.warning("signals: lost the database (%s); again in %.1f s", error, pause)
                self._listening.set()  # nobody waits for a LISTEN that cannot happen yet
                await asyncio.sleep(pause)


def _libpq_url(url: str) -> str:
    """A URL libpq itself takes (no SQLAlchemy driver suffix)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme.split('+')[0]}://{rest}"
