"""Several `research-bot serve slack` replicas on one PostgreSQL behave as one bot: the real
command in HTTP mode, one fake Slack, one fake Messages API, one real PostgreSQL. A burst spread
over the replicas is claimed and delivered once per run; a press on one replica reaches a run
on another; a replica killed with kill -9 mid-run loses nothing; a replica started during a
burst takes its share of the queue; the database restarted under load loses no run."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.adapters.slack.front import ACTION_SUMMARIZE
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.slack_api import FakeSlack
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.postgres import PgServer
from tests.process import Cli, eventually
from tests.replica_world import replicas

SECRET = "replica-test-secret"
REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
def cli(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    slack: FakeSlack,
    pg_url: str,
) -> Cli:
    env = world_env(tmp_path, anthropic_api, tavily, web) | {
        "RESEARCH_BOT_DATABASE_URL": pg_url,
        "RESEARCH_BOT_RUN_LEASE_S": "3",
        "RESEARCH_BOT_MAX_CONCURRENT_RUNS": "2",
        "RESEARCH_BOT_SLACK_STREAMING": "off",
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.api_url,
    }
    return Cli(tmp_path, env)


def _rows(pg_url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(pg_url) as conn:
        return [tuple(row) for row in conn.execute(sql).fetchall()]  # type: ignore[arg-type]


_LAST: list[object] = [None]


async def _query(pg_url: str, sql: str) -> list[tuple[Any, ...]]:
    """`_rows` off the test's event loop, which serves the fakes the replicas are talking to,
    remembering the answer for a check's failure message (`_seen`)."""
    _LAST[0] = rows = await asyncio.to_thread(_rows, pg_url, sql)
    return rows


def _seen() -> object:
    return _LAST[0]


POLL_S = 0.1
"""How often a check asks the database: each asks on a new connection, a server process."""


async def _until(check: Callable[[], Awaitable[bool]], *, within_s: float) -> None:
    """`eventually`, for a check that asks the database (`_query`)."""
    await eventually(check, within_s=within_s, every_s=POLL_S, seen=_seen)


async def _report(body: dict[str, Any]) -> Any:
    return reply_text(REPORT)


def _apart(n: int) -> dict[str, str]:
    """A person, a workspace and a channel for run `n`: Slack's budgets (chat.update per
    workspace, a post a second per channel), split between the replicas, would otherwise pace
    the runs' messages for seconds (bench/replicas.py measures that pacing); the queue the
    replicas share is one line whatever the workspace."""
    return {"user": f"U{n}", "team": f"T{n}", "channel": f"C{n}"}


@pytest.mark.timeout(150)
async def test_a_burst_over_three_replicas_is_claimed_and_delivered_once_per_run(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic, pg_url: str
) -> None:
    anthropic_api.responder = _report
    runs = 9
    async with replicas(cli, 3, SECRET) as three:
        answers = await asyncio.gather(
            *(three[n % 3].sender.command(f"Company {n}", **_apart(n)) for n in range(runs))
        )
        assert all(status == 200 for status, _ in answers)

        async def all_delivered() -> bool:
            done = await _query(pg_url, "SELECT count(*) FROM runs WHERE delivered_at IS NOT NULL")
            return done == [(runs,)]

        await _until(all_delivered, within_s=60)

    uploads = slack.calls_to("files.completeUploadExternal")
    assert len(uploads) == runs
    starts = _rows(
        pg_url, "SELECT run_id, count(*) FROM events WHERE kind = 'run_started' GROUP BY run_id"
    )
    assert len(starts) == runs and all(count == 1 for _, count in starts)
    assert len(anthropic_api.requests) == runs  # no run researched twice
    owners = _rows(pg_url, "SELECT count(DISTINCT replica_id) FROM replicas")
    assert owners == [(0,)]  # each replica said goodbye when it stopped
    # Each run's status message offered its buttons while it ran and lost them at the end,
    # whichever replica received the command and whichever ran it.
    for run_id, thread in _rows(pg_url, "SELECT run_id, thread FROM runs"):
        shown = [
            str(call.args.get("blocks"))
            for call in slack.calls_to("chat.postMessage", "chat.update")
            if not call.args.get("thread_ts")
            and thread in (call.args.get("ts"), (call.response or {}).get("ts"))
        ]
        assert len(shown) >= 2, run_id
        assert all(ACTION_SUMMARIZE in blocks for blocks in shown[:-1]), run_id
        assert ACTION_SUMMARIZE not in shown[-1], run_id


@pytest.mark.timeout(150)
async def test_summarize_pressed_on_one_replica_reaches_the_run_on_another(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic, pg_url: str
) -> None:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]))
    release = asyncio.Event()

    async def hold_then_report(body: dict[str, Any]) -> Any:
        if body.get("tool_choice", {}).get("type") != "none":
            await release.wait()
        return reply_text(REPORT)

    anthropic_api.responder = hold_then_report
    async with replicas(cli, 2, SECRET) as two:
        await two[0].sender.command("Acme Robotics")

        async def running() -> bool:
            return await _query(pg_url, "SELECT count(*) FROM runs WHERE status = 'running'") == [
                (1,)
            ]

        await _until(running, within_s=30)
        # Pressed once the search's results are in (the second turn waits on the model): a
        # press before any evidence only says that there is nothing to write up yet.
        await anthropic_api.wait_for_requests(2)
        [(run_id, owner)] = _rows(pg_url, "SELECT run_id, owner FROM runs")
        pids = [replica.process.pid for replica in two]
        elsewhere = two[1 - pids.index(int(owner.split(":")[1]))]
        status, _ = await elsewhere.sender.action(ACTION_SUMMARIZE, run_id, user="U2")
        assert status == 200

        async def ended() -> bool:
            rows = await _query(
                pg_url, f"SELECT termination_reason FROM runs WHERE run_id = '{run_id}'"
            )
            return rows == [("forced_synthesized",)]

        await _until(ended, within_s=10)
        release.set()
    assert len(slack.calls_to("files.completeUploadExternal")) == 1


@pytest.mark.timeout(150)
async def test_a_replica_killed_mid_run_loses_nothing(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic, pg_url: str
) -> None:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]))
    hang = asyncio.Event()

    async def hang_then_report(body: dict[str, Any]) -> Any:
        if not hang.is_set():
            await asyncio.Event().wait()
        return reply_text(REPORT)

    anthropic_api.responder = hang_then_report
    async with replicas(cli, 2, SECRET) as two:
        await two[0].sender.command("Acme Robotics")

        async def evidence() -> bool:
            kinds = await _query(pg_url, "SELECT kind FROM events")
            return ("tool_finished",) in kinds

        await _until(evidence, within_s=30)
        [(run_id, owner)] = _rows(pg_url, "SELECT run_id, owner FROM runs")
        pids = [replica.process.pid for replica in two]
        dead = two[pids.index(int(owner.split(":")[1]))]
        hang.set()
        dead.process.kill()
        await dead.process.wait()

        async def delivered() -> bool:
            rows = await _query(
                pg_url, f"SELECT status, delivered_at FROM runs WHERE run_id = '{run_id}'"
            )
            return rows[0][0] == "done" and rows[0][1] is not None

        await _until(delivered, within_s=30)

    [(status, reason)] = _rows(pg_url, "SELECT status, termination_reason FROM runs")
    assert (status, reason) == ("done", "interrupted_synthesized")
    assert len(slack.calls_to("files.completeUploadExternal")) == 1


@pytest.mark.timeout(150)
async def test_a_replica_killed_after_the_upload_leaves_the_other_only_the_last_edit(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic, pg_url: str
) -> None:
    anthropic_api.responder = _report

    def final_edit(args: dict[str, Any]) -> bool:
        return "(Done" in str(args.get("text", ""))

    held = slack.hold("chat.update", where=final_edit)
    async with replicas(cli, 2, SECRET) as two:
        await two[0].sender.command("Acme Robotics")
        await held.arrived.wait()
        [(run_id, owner, posted, delivered)] = _rows(
            pg_url, "SELECT run_id, owner, report_posted_at, delivered_at FROM runs"
        )
        assert posted is not None and delivered is None
        pids = [replica.process.pid for replica in two]
        dead = two[pids.index(int(owner.split(":")[1]))]
        dead.process.kill()
        await dead.process.wait()

        await slack.wait_for("chat.update", where=lambda call: final_edit(call.args))

        async def delivered_once() -> bool:
            rows = await _query(pg_url, f"SELECT delivered_at FROM runs WHERE run_id = '{run_id}'")
            return rows[0][0] is not None

        await _until(delivered_once, within_s=30)

    assert len(slack.calls_to("files.completeUploadExternal")) == 1
    summaries = [c for c in slack.calls_to("chat.postMessage") if "Builds robots" in str(c.args)]
    assert len(summaries) == 1
    [parent] = [
        c.response for c in slack.calls_to("chat.postMessage") if not c.args.get("thread_ts")
    ]
    assert "(Done" in slack.messages[(parent["channel"], parent["ts"])]["text"]
    assert len(anthropic_api.requests) == 1


def _held_reports() -> tuple[asyncio.Event, Any]:
    """A responder that answers every request with the report once the event is set."""
    release = asyncio.Event()

    async def held_report(body: dict[str, Any]) -> Any:
        await release.wait()
        return reply_text(REPORT)

    return release, held_report


def _delivered_once_each(slack: FakeSlack, pg_url: str, runs: int) -> None:
    """Every run ended done and was delivered, its report uploaded once, in its own thread;
    none started twice."""
    rows = _rows(pg_url, "SELECT thread, status, delivered_at FROM runs")
    assert len(rows) == runs
    assert all(status == "done" and delivered is not None for _, status, delivered in rows)
    uploads = Counter(
        call.args.get("thread_ts") for call in slack.calls_to("files.completeUploadExternal")
    )
    assert uploads == Counter(thread for thread, _, _ in rows)
    starts = _rows(
        pg_url, "SELECT run_id, count(*) FROM events WHERE kind = 'run_started' GROUP BY run_id"
    )
    assert len(starts) == runs and all(count == 1 for _, count in starts)


@pytest.mark.timeout(150)
async def test_a_replica_started_during_a_burst_takes_its_share_of_the_queue(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic, pg_url: str
) -> None:
    release, anthropic_api.responder = _held_reports()
    one_slot = Cli(cli.cwd, cli.env | {"RESEARCH_BOT_MAX_CONCURRENT_RUNS": "1"})
    runs = 6
    async with replicas(one_slot, 2, SECRET) as running:
        answers = await asyncio.gather(
            *(running[n % 2].sender.command(f"Company {n}", **_apart(n)) for n in range(runs))
        )
        assert all(status == 200 for status, _ in answers)

        async def two_run_and_the_rest_wait() -> bool:
            counts = await _query(
                pg_url,
                "SELECT status, owner IS NULL, count(*) FROM runs GROUP BY status, owner IS NULL",
            )
            return sorted(counts) == [("queued", True, runs - 2), ("running", False, 2)]

        await _until(two_run_and_the_rest_wait, within_s=30)
        await anthropic_api.wait_for_requests(2)
        [late] = await running.start()

        async def the_late_one_runs_one() -> bool:
            owners = await _query(pg_url, "SELECT owner FROM runs WHERE status = 'running'")
            return any(int(owner.split(":")[1]) == late.process.pid for (owner,) in owners)

        await _until(the_late_one_runs_one, within_s=30)
        await anthropic_api.wait_for_requests(3)  # its run reached the model, as the others did
        release.set()

        async def all_delivered() -> bool:
            done = await _query(pg_url, "SELECT count(*) FROM runs WHERE delivered_at IS NOT NULL")
            return done == [(runs,)]

        await _until(all_delivered, within_s=60)
        assert all(replica.process.returncode is None for replica in running)

    _delivered_once_each(slack, pg_url, runs)
    assert len(anthropic_api.requests) == runs  # no run researched twice


@pytest.mark.timeout(150)
async def test_the_database_restarted_under_load_loses_no_run(
    cli: Cli,
    slack: FakeSlack,
    anthropic_api: FakeAnthropic,
    pg_server: PgServer,
    pg_url: str,
) -> None:
    release, anthropic_api.responder = _held_reports()
    runs = 3
    # Each run's status message is posted while the server is down, so that the thread it
    # opens is recorded then (or lost).
    parents = [
        slack.hold("chat.postMessage", where=lambda args: not args.get("thread_ts"))
        for _ in range(runs)
    ]
    [server_socket] = [
        path for path in pg_server.socket_dir.glob(".s.PGSQL.*") if path.suffix != ".lock"
    ]
    async with replicas(cli, 2, SECRET) as two:
        answers = await asyncio.gather(
            *(two[n % 2].sender.command(f"Company {n}", **_apart(n)) for n in range(runs))
        )
        assert all(status == 200 for status, _ in answers)
        await anthropic_api.wait_for_requests(runs)  # all of them in flight, on the model
        before = _rows(pg_url, "SELECT count(*) FROM runs WHERE status = 'running'")
        assert before == [(runs,)]
        await asyncio.gather(*(held.arrived.wait() for held in parents))

        restarted = asyncio.create_task(asyncio.to_thread(pg_server.restart))

        async def down() -> bool:  # (or already back up, if its gap was too short to see)
            return not server_socket.exists() or restarted.done()

        await eventually(down, within_s=30)
        for held in parents:
            held.release()
        await restarted
        # Both still take commands: one more on each, one of them queued for a free slot
        # (four slots, five runs), all of them answered once the model is.
        for n, replica in enumerate(two, start=runs):
            status, _ = await replica.sender.command(f"Company {n}", **_apart(n))
            assert status == 200
        release.set()

        async def all_delivered() -> bool:
            done = await _query(pg_url, "SELECT count(*) FROM runs WHERE delivered_at IS NOT NULL")
            return done == [(runs + 2,)]

        await _until(all_delivered, within_s=60)
        assert all(replica.process.returncode is None for replica in two)

    _delivered_once_each(slack, pg_url, runs + 2)
    assert len(anthropic_api.requests) == runs + 2  # no run researched twice
