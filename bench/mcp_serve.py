"""MCP server against Slack: N runs started at once over MCP finish as fast as N from Slack, and
`research_status` answers within 20 ms at p99 during the MCP burst (issue 30).

One bot in this process (`open_services`: SQLite store, runs service, engine, anthropic SDK,
page fetcher) against bench.scale's fake world in a process of its own (4 model calls of 0.5 s
a run, pages to read). Two front ends share it, each served over HTTP on 127.0.0.1 as in
production: Slack (`SlackFrontEnd` on the fake Slack, streaming off) and MCP (`mcp_app` behind a
bearer token). A Slack burst is N signed `/research` commands at once, each from a workspace and
channel of its own, timed until every report file is in its thread; an MCP burst is N `research`
calls at once, one client session each (connected beforehand, as an agent already is, and in a
process of their own, `--clients`, as agents are), timed
until every call has returned its report. During the MCP burst one more session calls
`research_status` on a running run every 10 ms. Rounds alternate which front end goes first.

    python -m bench.mcp_serve            # about half a minute (--runs 50 --rounds 2)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
from aiohttp import web
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from bench.scale import environment, fake_world
from bot.adapters.mcp.callers import Tokens
from bot.adapters.mcp.http import http_server, mcp_app
from bot.adapters.mcp.runs import McpRuns
from bot.adapters.slack.app import web_api_session, web_app
from bot.adapters.slack.client import make_client
from bot.adapters.slack.front import SlackFrontEnd
from bot.compose import Services, freeze_startup_heap, open_services
from bot.config import Settings
from tests.fakes.slack_api import FakeSlack, SlackSender
from tests.process import eventually

SECRET = "bench-signing-secret"
TOKEN = "bench-token-0123456789abcdef"
GOAL_RATIO = 1.10
GOAL_STATUS_P99_MS = 20.0
POLL_S = 0.01
BURST_S = 600


def _settings(folder: Path, urls: dict[str, str], slack_api: str, runs: int) -> Settings:
    return Settings.from_mapping(
        environment(folder, urls, runs + 2)
        | {
            "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack_api,
            "RESEARCH_BOT_SLACK_STREAMING": "off",
            # One token is one person to the hourly quota: a burst from one agent needs none.
            "RESEARCH_BOT_USER_RUNS_PER_HOUR": "0",
        }
    )


@contextlib.asynccontextmanager
async def _slack_front(services: Services, settings: Settings) -> AsyncIterator[str]:
    """The Slack front end over HTTP: its /slack/events address."""
    async with web_api_session() as session:
        client = make_client(settings, session)
        front = SlackFrontEnd(
            settings, services.runs, services.store, client=client, followups=services.followups
        )
        runner = web.AppRunner(web_app(front.app), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            yield f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
        finally:
            await runner.cleanup()


@contextlib.asynccontextmanager
async def _mcp_front(services: Services) -> AsyncIterator[str]:
    """The MCP server over HTTP: its /mcp address."""
    service = McpRuns(services.store, services.runs, services.followups)
    app = mcp_app(service, Tokens({TOKEN: "T0BENCH"}), wait_s=600, host="127.0.0.1")
    server = http_server(app, "127.0.0.1", 0)
    serving = asyncio.create_task(server.serve())

    async def started() -> bool:
        return server.started

    await eventually(started)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        await serving


async def slack_burst(slack: FakeSlack, url: str, topics: list[str]) -> float:
    """Seconds until every topic's report file is in its thread."""
    sender = SlackSender(url, SECRET)
    before = len(slack.calls_to("files.completeUploadExternal"))
    began = time.perf_counter()
    answers = await asyncio.gather(
        *(
            sender.command(topic, team=f"TB{n}", channel=f"CB{n}", user=f"UB{n}")
            for n, topic in enumerate(topics)
        )
    )
    refused = [body for status, body in answers if status != 200]
    if refused:
        raise RuntimeError(f"Slack front end refused {len(refused)} commands: {refused[0][:200]}")
    async with asyncio.timeout(BURST_S):
        while True:  # the fake's own wait gives up after 10 s: a loaded machine takes longer
            with contextlib.suppress(TimeoutError):
                await slack.wait_for("files.completeUploadExternal", before + len(topics))
                return time.perf_counter() - began


async def _burst_ids(status: Client, already: set[str], count: int) -> list[str]:
    """The ids of the burst's runs, once all are stored (list_runs, newest first)."""
    while True:
        listed = await status.call_tool("list_runs", {"limit": 100})
        ids = [r["run_id"] for r in listed.structured_content["runs"] if r["run_id"] not in already]
        if len(ids) >= count:
            return ids
        await asyncio.sleep(POLL_S)


async def mcp_burst(
    sessions: list[Client], status: Client, topics: list[str]
) -> tuple[float, list[float], list[float]]:
    """Seconds until every `research` call returned its report, and the `research_status`
    latencies (ms) meanwhile: of answers "still going", and of the answers that saw a run end.
    Runs are polled in turn, each until it is seen ended, as an agent following them would."""
    listed = await status.call_tool("list_runs", {"limit": 100})
    already = {r["run_id"] for r in listed.structured_content["runs"]}
    going: list[float] = []
    ended: list[float] = []
    began = time.perf_counter()
    calls = asyncio.gather(
        *(
            mcp.call_tool("research", {"topic": topic})
            for mcp, topic in zip(sessions, topics, strict=True)
        )
    )
    followed = await _burst_ids(status, already, len(topics))
    while followed and not calls.done():
        run_id = followed.pop(0)
        asked = time.perf_counter()
        answer = await status.call_tool("research_status", {"run_id": run_id})
        took = (time.perf_counter() - asked) * 1000
        assert not answer.is_error, answer.content
        if answer.structured_content["status"] in ("done", "failed", "cancelled"):
            ended.append(took)
        else:
            going.append(took)
            followed.append(run_id)
        await asyncio.sleep(POLL_S)
    results = await calls
    elapsed = time.perf_counter() - began
    failed = [r for r in results if r.is_error or r.structured_content["status"] != "done"]
    if failed:
        raise RuntimeError(f"{len(failed)} MCP runs did not end done: {failed[0].content}")
    return elapsed, going, ended


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@contextlib.asynccontextmanager
async def _agents(mcp_url: str, runs: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """The MCP clients in a process of their own (`--clients`), as real agents are: in the
    bot's process their 51 sessions would share its event loop, and the figure would measure
    the bench. Ready once its sessions are connected and a warm-up run has come back."""
    agents = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.mcp_serve",
        "--clients",
        mcp_url,
        "--runs",
        str(runs),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert agents.stdin is not None and agents.stdout is not None
    try:
        if (await agents.stdout.readline()).strip() != b"ready":
            raise RuntimeError("the MCP clients' process did not start")
        yield agents
    finally:
        agents.stdin.close()
        await agents.wait()


async def _remote_burst(
    agents: asyncio.subprocess.Process, topics: list[str]
) -> tuple[float, list[float], list[float]]:
    assert agents.stdin is not None and agents.stdout is not None
    agents.stdin.write(json.dumps(topics).encode() + b"\n")
    await agents.stdin.drain()
    line = await agents.stdout.readline()
    if not line:
        raise RuntimeError("the MCP clients' process ended during a burst")
    took, going, ended = json.loads(line)
    return took, going, ended


async def serve_agents(mcp_url: str, runs: int) -> None:
    """`--clients`: `runs` + 1 sessions to the bot's MCP server; each line of stdin is one
    burst's topics (JSON), answered on stdout with its figures."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=600) as http,
        contextlib.AsyncExitStack() as sessions_open,
    ):
        sessions = [
            await sessions_open.enter_async_context(
                Client(streamable_http_client(mcp_url, http_client=http), cache=None)
            )
            for _ in range(runs + 1)
        ]
        await sessions[0].call_tool("research", {"topic": "Warmup 2"})
        print("ready", flush=True)
        while line := await asyncio.to_thread(sys.stdin.readline):
            figures = await mcp_burst(sessions[1:], sessions[0], json.loads(line))
            print(json.dumps(figures), flush=True)


async def measure(runs: int, rounds: int, urls: dict[str, str]) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"slack": [], "mcp": [], "going_ms": [], "ended_ms": []}
    with tempfile.TemporaryDirectory() as folder:
        async with FakeSlack() as slack:
            settings = _settings(Path(folder), urls, slack.api_url, runs)
            async with (
                open_services(settings) as services,
                _slack_front(services, settings) as slack_url,
                _mcp_front(services) as mcp_url,
            ):
                freeze_startup_heap()  # as `research-bot serve` does
                await slack_burst(slack, slack_url, ["Warmup 1"])  # warm both paths
                async with _agents(mcp_url, runs) as agents:
                    for r in range(rounds):
                        slack_topics = [f"Company {10_000 * (r + 1) + n}" for n in range(runs)]
                        mcp_topics = [
                            f"Company {10_000 * (r + 1) + 5_000 + n}" for n in range(runs)
                        ]
                        order = ("slack", "mcp") if r % 2 == 0 else ("mcp", "slack")
                        for front in order:
                            if front == "slack":
                                figures["slack"].append(
                                    await slack_burst(slack, slack_url, slack_topics)
                                )
                            else:
                                took, going, ended = await _remote_burst(agents, mcp_topics)
                                figures["mcp"].append(took)
                                figures["going_ms"] += going
                                figures["ended_ms"] += ended
    return figures


def report(figures: dict[str, list[float]], runs: int) -> bool:
    for n, (slack, mcp) in enumerate(zip(figures["slack"], figures["mcp"], strict=True), start=1):
        print(
            f"round {n}: {runs} from Slack {slack:6.2f} s, {runs} over MCP {mcp:6.2f} s "
            f"(MCP / Slack {mcp / slack:.2f})"
        )
    ratio = sum(figures["mcp"]) / sum(figures["slack"])
    status = figures["going_ms"] + figures["ended_ms"]
    p99 = _p99(status)
    print(f"all rounds: MCP / Slack {ratio:.2f} (goal <= {GOAL_RATIO:.2f})")
    print(
        f"research_status during the MCP bursts: {len(status)} calls, p99 {p99:.1f} ms "
        f"(goal < {GOAL_STATUS_P99_MS:g} ms)"
    )
    for label, key in (("run still going", "going_ms"), ("run seen ended", "ended_ms")):
        part = sorted(figures[key])
        if part:
            print(
                f"  {label}: {len(part)} calls, median {part[len(part) // 2]:.1f} ms, "
                f"p99 {_p99(part):.1f} ms, max {part[-1]:.1f} ms"
            )
    passed = ratio <= GOAL_RATIO and p99 < GOAL_STATUS_P99_MS
    print("PASS" if passed else "FAIL")
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="also print the raw figures")
    parser.add_argument("--clients", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    if args.clients:
        asyncio.run(serve_agents(args.clients, args.runs))
        return 0
    with fake_world() as urls:
        figures = asyncio.run(measure(args.runs, args.rounds, urls))
    passed = report(figures, args.runs)
    if args.json:
        print(json.dumps(figures))
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
