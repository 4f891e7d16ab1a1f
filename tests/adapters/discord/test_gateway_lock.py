"""Several replicas of the Discord front end on one PostgreSQL: exactly one holds the gateway
(the fake Discord counts the sessions open at once), another takes over when it stops, dies
(kill -9 of a real `serve discord`) or loses its lock session (ended by the server, the server
restarted), and a replica without the gateway still posts its runs over REST."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import psycopg
import pytest

from bot.adapters.discord.app import serve_discord
from bot.domain import Mode, Origin, Request, RunStatus
from bot.runs.manager import RunManager
from bot.store.locks import session_lock
from bot.store.runs import Store
from tests.adapters.discord.world import discord_settings, thread_posts
from tests.adapters.scripted_engine import ScriptedEngine
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.postgres import PgServer
from tests.process import Cli, eventually

FAST = 0.02
"""How often a replica without the gateway tries the lock again, in the in-process tests."""
SETTLE = 0.2
"""How long a new holder waits before it connects, in the in-process tests: a holder whose
session ended sees it within milliseconds, so this is still a wide margin."""


@dataclass
class Replica:
    """One `serve_discord` with its own store and runs service, as a replica runs it."""

    name: str
    store: Store
    runs: RunManager
    engine: ScriptedEngine
    task: asyncio.Task[None]

    @classmethod
    async def start(cls, fake: FakeDiscord, pg_url: str, name: str) -> Replica:
        store = await Store.open(pg_url)
        engine = ScriptedEngine()
        engine.release.set()  # runs write up at once
        runs = RunManager(store, engine)
        settings = discord_settings(fake, RESEARCH_BOT_DATABASE_URL=pg_url)
        lock_of = partial(session_lock, pg_url, identity=name, retry_s=FAST, settle_s=SETTLE)
        task = asyncio.create_task(serve_discord(settings, runs, store, lock_of=lock_of))
        return cls(name, store, runs, engine, task)

    async def stop(self) -> None:
        await self.runs.shutdown()
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self.store.close()


@pytest.fixture
async def replicas(fake: FakeDiscord, pg_url: str) -> AsyncIterator[list[Replica]]:
    """The replicas a test starts, stopped before the fake Discord and the database go."""
    started: list[Replica] = []
    yield started
    for replica in started:
        if not replica.task.done():
            await replica.stop()


def _lock_holder(pg_url: str) -> list[str]:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted"
        ).fetchall()
    return [str(r[0]) for r in rows]


def _end_lock_session(pg_url: str, replica: str) -> None:
    """What an operator (or a failover) may do: the server ends a replica's lock session."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (replica,),
        )


async def _holder_and_waiter(
    fake: FakeDiscord, pg_url: str, replicas: list[Replica], caplog: pytest.LogCaptureFixture
) -> tuple[Replica, Replica]:
    """Replica A on the gateway, then replica B logged in and told the gateway is taken."""
    caplog.set_level(logging.INFO, logger="bot.adapters.discord.gateway")
    a = await Replica.start(fake, pg_url, "replica-a")
    replicas.append(a)
    await fake.wait_identified(1)
    b = await Replica.start(fake, pg_url, "replica-b")
    replicas.append(b)

    async def b_was_refused() -> bool:
        return any(
            "this replica (replica-b) posts its runs over REST" in m for m in caplog.messages
        )

    await eventually(b_was_refused)
    assert _lock_holder(pg_url) == ["replica-a"]
    return a, b


async def test_one_replica_holds_the_gateway_and_another_takes_over_when_it_stops(
    fake: FakeDiscord, pg_url: str, replicas: list[Replica], caplog: pytest.LogCaptureFixture
) -> None:
    a, _ = await _holder_and_waiter(fake, pg_url, replicas, caplog)
    assert (len(fake.identifies), fake.sessions) == (1, 1)

    await a.stop()
    await fake.wait_identified(2)
    assert fake.sessions == 1
    assert fake.most_sessions == 1, "two replicas were on the gateway at once"
    assert _lock_holder(pg_url) == ["replica-b"]

    # The new holder is the bot now: a command is answered.
    payload = fake.guild.command(fake.guild.alice, "history")
    await fake.dispatch("INTERACTION_CREATE", payload)
    await fake.wait_for_call("POST", rf"/webhooks/\d+/{re.escape(payload['token'])}")

    said = [r.getMessage() for r in caplog.records]
    assert "discord: this replica (replica-a) holds the gateway: connecting" in said
    assert any(
        "the gateway is held by replica-a; this replica (replica-b) posts its runs over REST" in s
        for s in said
    )
    assert "discord: this replica (replica-b) holds the gateway: connecting" in said


async def test_a_holder_whose_lock_session_ends_leaves_the_gateway_before_another_holds_it(
    fake: FakeDiscord, pg_url: str, replicas: list[Replica], caplog: pytest.LogCaptureFixture
) -> None:
    await _holder_and_waiter(fake, pg_url, replicas, caplog)
    _end_lock_session(pg_url, "replica-a")

    await fake.wait_identified(2)  # whichever replica won the lock again
    assert fake.most_sessions == 1, "two replicas were on the gateway at once"
    assert len(_lock_holder(pg_url)) == 1
    assert any("discord: lost the gateway lock" in r.getMessage() for r in caplog.records)


async def test_a_replica_that_lost_its_lock_serves_again_once_it_holds_it_again(
    fake: FakeDiscord, pg_url: str, replicas: list[Replica], caplog: pytest.LogCaptureFixture
) -> None:
    replicas.append(await Replica.start(fake, pg_url, "replica-a"))
    await fake.wait_identified(1)
    _end_lock_session(pg_url, "replica-a")

    await fake.wait_identified(2)
    assert fake.most_sessions == 1
    assert _lock_holder(pg_url) == ["replica-a"]
    said = caplog.messages
    assert any("discord: lost the gateway lock" in m for m in said)
    # Its second gateway connection works like its first: a command is answered.
    payload = fake.guild.command(fake.guild.alice, "history")
    await fake.dispatch("INTERACTION_CREATE", payload)
    await fake.wait_for_call("POST", rf"/webhooks/\d+/{re.escape(payload['token'])}")


async def test_after_a_database_restart_exactly_one_replica_is_on_the_gateway(
    fake: FakeDiscord,
    pg_server: PgServer,
    pg_url: str,
    replicas: list[Replica],
    caplog: pytest.LogCaptureFixture,
) -> None:
    await _holder_and_waiter(fake, pg_url, replicas, caplog)
    await asyncio.to_thread(pg_server.restart)

    await fake.wait_identified(2)
    assert fake.most_sessions == 1, "two replicas were on the gateway at once"
    await fake.wait_sessions(1)
    assert len(_lock_holder(pg_url)) == 1


async def test_a_replica_without_the_gateway_posts_its_runs_with_the_bot_token(
    fake: FakeDiscord, pg_url: str, replicas: list[Replica]
) -> None:
    world = fake.guild
    a = await Replica.start(fake, pg_url, "replica-a")
    replicas.append(a)
    await fake.wait_identified(1)
    # A run of this guild that no process runs (its starter is gone): the next replica to
    # start takes it, and that replica does not get the gateway.
    origin = Origin(
        platform="discord",
        workspace=world.guild_id,
        channel=world.channel_id,
        user=world.alice["id"],
        user_name="alice",
    )
    record = await a.store.create_run(
        Request(topic="Acme Robotics", mode=Mode.COMPANY, origin=origin)
    )
    b = await Replica.start(fake, pg_url, "replica-b")
    replicas.append(b)

    upload = await fake.wait_for_call(
        "POST", r"/channels/\d+/messages", where=lambda call: bool(call.files)
    )
    await b.runs.wait(record.run_id)
    stored = await b.store.get_run(record.run_id)
    assert stored.status is RunStatus.DONE
    assert upload.path == f"/channels/{stored.origin.thread}/messages"
    assert upload.authorization == f"Bot {fake.token}"
    card = fake.find("POST", rf"/channels/{world.channel_id}/messages")
    assert [c.authorization for c in card] == [f"Bot {fake.token}"]
    assert fake.find("POST", rf"/channels/{world.channel_id}/messages/\d+/threads")
    assert any(p.files for p in thread_posts(fake, stored.origin.thread))
    assert (len(fake.identifies), fake.most_sessions) == (1, 1), "B never took the gateway"
    assert _lock_holder(pg_url) == ["replica-a"]


@pytest.mark.timeout(90)  # a bot process starts slowly on a busy machine
async def test_serve_killed_with_kill_9_hands_the_gateway_to_another_replica(
    tmp_path: Path,
    fake: FakeDiscord,
    pg_url: str,
    replicas: list[Replica],
    caplog: pytest.LogCaptureFixture,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.adapters.discord.gateway")
    env = world_env(tmp_path, anthropic_api, tavily, web) | {
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_URL": fake.api_url,
        "RESEARCH_BOT_DATABASE_URL": pg_url,
    }
    holder = await Cli(tmp_path, env).start("serve", "discord")
    try:
        await asyncio.wait_for(fake.wait_identified(1), 75)
        replicas.append(await Replica.start(fake, pg_url, "replica-b"))
        who = f"research-bot {socket.gethostname()} pid {holder.pid}"

        async def told_who_holds_it() -> bool:
            return any(f"the gateway is held by {who};" in m for m in caplog.messages)

        await eventually(told_who_holds_it)
        holder.kill()
        loop = asyncio.get_running_loop()
        killed_at = loop.time()
        await asyncio.wait_for(fake.wait_identified(2), 30)
        assert loop.time() - killed_at < 30, "the other replica took over too late"
        assert fake.most_sessions == 1, "two replicas were on the gateway at once"
        assert _lock_holder(pg_url) == ["replica-b"]
    finally:
        if holder.returncode is None:
            holder.kill()
        _, err = await holder.communicate()
    assert f"discord: this replica ({who}) holds the gateway: connecting" in err.decode()
