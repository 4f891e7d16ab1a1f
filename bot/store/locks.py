"""Session locks: a named lock that one process at a time holds for as long as its database
session lives. On PostgreSQL it is an advisory lock on a connection of its own, so a replica
that dies (kill -9, a lost machine) lets go of it with its session; on SQLite, where one process
owns the file, it is simply held. One replica holds Discord's gateway this way.

Two holders never overlap: the holder watches its session's socket and gives the lock up the
moment it closes (the server restarted, or ended the session). When the network between them
fails instead, the holder's TCP keepalives give up after about 6 s, well before the server's,
which drop the session (and so the lock) only after about 20 s.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import psycopg

from bot.store.connection import is_postgres
from bot.store.postgres import CONNECT_TIMEOUT_S, explain, safe_url

log = logging.getLogger(__name__)

RETRY_S = 5.0
"""How often a replica that does not hold a lock tries again."""
SETTLE_S = 1.0
"""How long a new holder lets pass before it acts: a holder whose session ended sees it within
milliseconds (its socket closes), and has stopped by then."""
TRY_TIMEOUT_S = 15.0
"""How long one try (connecting included) may take before it counts as failed."""
CLIENT_KEEPALIVE_S = (3, 1, 3)
"""The holder's side (idle, interval, probes): a silent network ends the session here after
about 6 s."""
SERVER_KEEPALIVE = (
    "SELECT set_config('tcp_keepalives_idle', '5', false), "
    "set_config('tcp_keepalives_interval', '5', false), "
    "set_config('tcp_keepalives_count', '3', false)"
)
"""The server's side: a holder whose machine vanished loses its session (and the lock) after
about 20 s, so another replica takes over within 30 s. Both are ignored on a Unix socket, where
a dead peer is seen at once."""
APPLICATION_NAME_MAX = 63
"""PostgreSQL keeps this much of a session's application_name."""

_HOLDER = """
SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.classid::bigint = %s AND l.objid::bigint = %s
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


def this_replica() -> str:
    """How a replica names itself in the database (its sessions' application_name) and logs."""
    return f"research-bot {socket.gethostname()} pid {os.getpid()}"[:APPLICATION_NAME_MAX]


def lock_key(name: str) -> int:
    """A lock's name as the signed 64-bit key PostgreSQL's advisory locks take."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class SessionLock(Protocol):
    name: str
    identity: str
    """This replica, as the lock's holder shows in the database."""
    settle_s: float
    """After taking the lock, how long the previous holder may still be letting go of what it
    guards: act on it only after this."""

    @property
    def held(self) -> bool:
        """True from a successful `acquire` until `wait_lost` returns or the lock is closed."""
        ...

    async def acquire(self) -> bool:
        """One try; False when another session holds it or the database cannot be reached."""
        ...

    async def wait_until_held(self) -> None:
        """Try every `retry_s` until this replica holds the lock."""
        ...

    async def wait_lost(self) -> str:
        """Wait while the lock is held; when its session ends, let it go and say why."""
        ...

    async def holder(self) -> str | None:
        """Who holds the lock now, as far as the database tells (None: nobody, or unknown)."""
        ...

    async def close(self) -> None:
        """Let go of the lock (its session ends with it)."""
        ...


class LocalLock:
    """SQLite: one process owns the database, so it holds every lock from the start."""

    settle_s = 0.0
    """No other process had it."""

    def __init__(self, name: str, identity: str) -> None:
        self.name = name
        self.identity = identity

    @property
    def held(self) -> bool:
        return True

    async def acquire(self) -> bool:
        return True

    async def wait_until_held(self) -> None:
        return None

    async def wait_lost(self) -> str:
        await asyncio.Event().wait()  # never lost: only cancelled
        raise AssertionError("unreachable")

    async def holder(self) -> str | None:
        return self.identity

    async def close(self) -> None:
        return None


class AdvisoryLock:
    """A PostgreSQL session advisory lock on a connection of its own: pooled connections come
    and go, and a lock must live exactly as long as the session that took it."""

    def __init__(
        self, url: str, name: str, *, identity: str, retry_s: float, settle_s: float
    ) -> None:
        self.name = name
        self.identity = identity
        self.settle_s = settle_s
        self.key = lock_key(name)
        self._url = url
        self._where = safe_url(url)
        self._retry_s = retry_s
        self._conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        self._held = False
        self._trouble: str | None = None
        """Why the last try failed, so that a database that stays down is logged once."""

    @property
    def held(self) -> bool:
        return self._held

    async def acquire(self) -> bool:
        if self._held:
            return True
        try:
            async with asyncio.timeout(TRY_TIMEOUT_S):
                conn = self._conn or await self._connect()
                self._conn = conn
                cursor = await conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,))
                row = await cursor.fetchone()
        except (psycopg.Error, TimeoutError) as error:
            await self._drop()
            self._note(self._reason(error))
            return False
        if self._trouble is not None:
            log.info("lock %r: the database %s answers again", self.name, self._where)
            self._trouble = None
        self._held = bool(row and row[0])
        return self._held

    async def wait_until_held(self) -> None:
        # No change feed tells a waiting session that the lock came free: try again.
        while not await self.acquire():  # noqa: ASYNC110
            await asyncio.sleep(self._retry_s)

    async def wait_lost(self) -> str:
        conn = self._conn
        if conn is None or not self._held:
            return "not held"
        try:
            while True:
                # Nothing is listened to: this only waits on the session's socket, which raises
                # as soon as the session ends.
                async for _ in conn.notifies():
                    pass
        except psycopg.Error as error:
            why = self._reason(error)
        self._held = False
        await self._drop()
        return why

    async def holder(self) -> str | None:
        conn = self._conn
        if conn is None or self._held:
            return self.identity if self._held else None
        high, low = (self.key >> 32) & 0xFFFFFFFF, self.key & 0xFFFFFFFF
        try:
            async with asyncio.timeout(TRY_TIMEOUT_S):
                row = await (await conn.execute(_HOLDER, (high, low))).fetchone()
        except (psycopg.Error, TimeoutError):
            return None
        return str(row[0]) if row else None

    async def close(self) -> None:
        self._held = False
        await self._drop()

    async def _connect(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        conn = await psycopg.AsyncConnection.connect(
            self._url,
            autocommit=True,
            application_name=self.identity,
            connect_timeout=CONNECT_TIMEOUT_S,
            keepalives=1,
            keepalives_idle=CLIENT_KEEPALIVE_S[0],
            keepalives_interval=CLIENT_KEEPALIVE_S[1],
            keepalives_count=CLIENT_KEEPALIVE_S[2],
        )
        try:
            await conn.execute(SERVER_KEEPALIVE)
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    def _note(self, reason: str) -> None:
        if reason != self._trouble:
            log.warning("lock %r: %s (trying again every %g s)", self.name, reason, self._retry_s)
            self._trouble = reason

    def _reason(self, error: BaseException) -> str:
        if isinstance(error, TimeoutError):
            return f"the database {self._where} did not answer within {TRY_TIMEOUT_S:g} s"
        return str(explain(error, self._where))


@asynccontextmanager
async def session_lock(
    target: str | Path,
    name: str,
    *,
    identity: str | None = None,
    retry_s: float = RETRY_S,
    settle_s: float = SETTLE_S,
) -> AsyncIterator[SessionLock]:
    """The lock `name` in the database at `target` (a SQLite file: always held), not yet
    tried; closed (and so let go) on exit."""
    who = identity or this_replica()
    lock: SessionLock
    if is_postgres(target):
        lock = AdvisoryLock(str(target), name, identity=who, retry_s=retry_s, settle_s=settle_s)
    else:
        lock = LocalLock(name, who)
    try:
        yield lock
    finally:
        await lock.close()
