"""Session locks against a real PostgreSQL: one holder at a time, let go with the holder's
session (closed, ended by the server, the server restarted, the process killed), one clear line
when the database cannot be reached; and on SQLite simply held."""

from __future__ import annotations

import asyncio
import logging
import sys
from asyncio.subprocess import PIPE
from pathlib import Path

import psycopg
import pytest

from bot.store.locks import LocalLock, lock_key, session_lock, this_replica
from tests.postgres import PgServer
from tests.process import ROOT

FAST = 0.02
"""Retry interval of a waiting lock in these tests."""


def _end_session_of(pg_url: str, identity: str) -> int:
    """What an operator (or a failover) does: the server ends the holder's session."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (identity,),
        ).fetchall()
    return len(rows)


async def test_one_holder_at_a_time_and_the_next_takes_it_when_it_closes(pg_url: str) -> None:
    async with (
        session_lock(pg_url, "gateway", identity="replica-a") as a,
        session_lock(pg_url, "gateway", identity="replica-b", retry_s=FAST) as b,
        session_lock(pg_url, "another lock", identity="replica-c") as c,
    ):
        assert await a.acquire()
        assert a.held
        assert not await b.acquire()
        assert not b.held
        assert await b.holder() == "replica-a"
        assert await c.acquire(), "a lock of another name is another lock"

        waiting = asyncio.create_task(b.wait_until_held())
        await a.close()
        await waiting
        assert b.held
        assert not a.held
        assert not await a.acquire()


async def test_the_holder_sees_the_server_end_its_session_and_lets_go(pg_url: str) -> None:
    async with (
        session_lock(pg_url, "gateway", identity="replica-a") as a,
        session_lock(pg_url, "gateway", identity="replica-b") as b,
    ):
        assert await a.acquire()
        lost = asyncio.create_task(a.wait_lost())
        assert _end_session_of(pg_url, "replica-a") == 1

        why = await asyncio.wait_for(lost, 10)
        assert "shut down" in why or "Cannot reach the database" in why, why
        assert "postgres@" in why and "password" not in why
        assert not a.held
        assert await b.acquire()
        assert not await a.acquire(), "a lost lock is competed for again, not assumed"


async def test_a_restarted_server_ends_the_hold_and_the_lock_is_taken_again(
    pg_server: PgServer, pg_url: str
) -> None:
    async with session_lock(pg_url, "gateway", identity="replica-a", retry_s=FAST) as a:
        assert await a.acquire()
        lost = asyncio.create_task(a.wait_lost())
        await asyncio.to_thread(pg_server.restart)
        await asyncio.wait_for(lost, 10)
        assert not a.held
        await asyncio.wait_for(a.wait_until_held(), 10)
        assert a.held


async def test_a_killed_holder_process_lets_go_at_once(pg_url: str) -> None:
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _HOLD,
        pg_url,
        stdin=PIPE,
        stdout=PIPE,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None
        assert (await asyncio.wait_for(holder.stdout.readline(), 20)).strip() == b"held"
        async with session_lock(pg_url, "gateway", identity="replica-b", retry_s=FAST) as b:
            assert not await b.acquire()
            assert await b.holder() == "replica-a"
            holder.kill()
            await asyncio.wait_for(b.wait_until_held(), 10)
            assert b.held
    finally:
        if holder.returncode is None:
            holder.kill()
        await holder.wait()


_HOLD = """
import asyncio, sys
from bot.store.locks import session_lock

async def main():
    async with session_lock(sys.argv[1], "gateway", identity="replica-a") as lock:
        assert await lock.acquire()
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.read)

asyncio.run(main())
"""


async def test_an_unreachable_database_is_one_clear_line_and_no_hold(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    nowhere = f"postgresql://bot:secret@/db?host={tmp_path}"
    caplog.set_level(logging.WARNING, logger="bot.store.locks")
    async with session_lock(nowhere, "gateway", retry_s=FAST) as lock:
        assert not await lock.acquire()
        assert not await lock.acquire()
        assert not lock.held
        assert await lock.holder() is None
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1, "a database that stays down is logged once"
    assert "Cannot reach the database" in warnings[0]
    assert "trying again every" in warnings[0]
    assert "secret" not in warnings[0]


async def test_on_sqlite_the_one_process_holds_it(tmp_path: Path) -> None:
    async with session_lock(tmp_path / "bot.sqlite3", "gateway") as lock:
        assert isinstance(lock, LocalLock)
        assert lock.held
        assert await lock.acquire()
        await lock.wait_until_held()
        assert await lock.holder() == this_replica()
        lost = asyncio.create_task(lock.wait_lost())
        for _ in range(10):
            await asyncio.sleep(0)
        assert not lost.done(), "a lock on a file this process owns is never lost"
        lost.cancel()


def test_keys_are_stable_signed_64_bit_numbers_per_name() -> None:
    key = lock_key("discord gateway 42")
    assert key == lock_key("discord gateway 42")
    assert key != lock_key("discord gateway 43")
    assert -(2**63) <= key < 2**63
