"""MCP server against Slack: N runs started at once over MCP finish as fast as N from Slack, and
`research_status` answers within 20 ms at p99 during the MCP burst (issue 30).

One bot in this process (`open_services`: SQLite store, runs service, engine, anthropic SDK,
page fetcher) against bench.scale's fake world in a process of its own (4 model calls of 0.5 s
a run, pages to read). Two front ends share it, each served over HTTP on 127.0.0.1 as in
production: Slack (`SlackFrontEnd` on the fake Slack, streaming off) and MCP (`mcp_app` behind a
bearer token). A Slack burst is N signed `/research` commands at once, each from a workspace and
channel of its own, timed until every report file is in its thread; an MCP burst is N `research`
calls at once, one client session each (connected beforehand, as an agent already is, and in a
process of their own, `--clients`, as agents are), timed until every call has returned its
report. During the MCP burst one more session, an agent of its own (`--follower`), calls
`research_status` on the burst's runs in turn every 10 ms. Rounds alternate which front end goes
first. `--same-loop` is the baseline: the MCP server on the bot's loop, as it was before it had
one of its own.

    python -m bench.mcp_serve            # about 45 s (--runs 50 --rounds 2)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from aiohttp import web
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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


class _Inside:
    """What happened inside the bot's process while a burst went: how long each
    `research_status` request took in the server (ASGI, from its call to its last byte out: the
    figure without the client's own time), and the garbage collector's pauses, which stop every
    thread of the process."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.recording = False
        self.status_ms: list[float] = []
        self.gc_ms: list[float] = []
        self._gc_began = 0.0
        gc.callbacks.append(self._collected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        began = time.perf_counter()
        status = False

        async def reading() -> Message:
            nonlocal status
            message = await receive()
            status = status or b'"research_status"' in message.get("body", b"")
            return message

        await self._app(scope, reading, send)
        if status and self.recording:
            self.status_ms.append((time.perf_counter() - began) * 1000)

    def _collected(self, phase: str, _: dict[str, int]) -> None:
        if phase == "start":
            self._gc_began = time.perf_counter()
        elif self.recording:
            self.gc_ms.append((time.perf_counter() - self._gc_began) * 1000)

    def close(self) -> None:
        gc.callbacks.remove(self._collected)


@contextlib.asynccontextmanager
async def _mcp_front(services: Services, same_loop: bool) -> AsyncIterator[tuple[str, _Inside]]:
    """The MCP server over HTTP, as `serve` runs it (on a loop of its own) or, `same_loop`, as it
    ran before (on the bot's): its /mcp address, and what it sees inside."""
    service = McpRuns(services.store, services.runs, services.followups)
    inside = _Inside(mcp_app(service, Tokens({TOKEN: "T0BENCH"}), wait_s=600, host="127.0.0.1"))
    server = http_server(inside, "127.0.0.1", 0)
    if same_loop:
        server = uvicorn.Server(server.config)
    serving = asyncio.create_task(server.serve())

    async def started() -> bool:
        return server.started

    await eventually(started)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/mcp", inside
    finally:
        server.should_exit = True
        await serving
        inside.close()


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


async def mcp_burst(sessions: list[Client], topics: list[str]) -> float:
    """Seconds until every `research` call has returned its report."""
    began = time.perf_counter()
    results = await asyncio.gather(
        *(
            mcp.call_tool("research", {"topic": topic})
            for mcp, topic in zip(sessions, topics, strict=True)
        )
    )
    elapsed = time.perf_counter() - began
    failed = [r for r in results if r.is_error or r.structured_content["status"] != "done"]
    if failed:
        raise RuntimeError(f"{len(failed)} MCP runs did not end done: {failed[0].content}")
    return elapsed


async def follow_burst(
    status: Client, already: set[str], count: int
) -> tuple[list[float], list[float]]:
    """The `research_status` latencies (ms) while a burst of `count` runs goes: of answers
    "still going", and of the answers that saw a run end. Runs are polled in turn, each until it
    is seen ended, as an agent following them would."""
    going: list[float] = []
    ended: list[float] = []
    followed = await _burst_ids(status, already, count)
    while followed:
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
    return going, ended


async def _listed(status: Client) -> set[str]:
    listed = await status.call_tool("list_runs", {"limit": 100})
    return {r["run_id"] for r in listed.structured_content["runs"]}


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@contextlib.asynccontextmanager
async def _agent(role: str, mcp_url: str, runs: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """MCP clients in a process of their own, as real agents are: `--clients`, the burst's
    sessions, or `--follower`, the one that polls `research_status`. In the bot's process they
    would share its event loop, and beside the burst's sessions the follower would wait for
    their 50 reports to be parsed: either way the figure would measure the bench. Ready once
    its sessions are connected (and, for the clients, a warm-up run has come back)."""
    agents = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.mcp_serve",
        f"--{role}",
        mcp_url,
        "--runs",
        str(runs),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert agents.stdin is not None and agents.stdout is not None
    try:
        if (await agents.stdout.readline()).strip() != b"ready":
            raise RuntimeError(f"the MCP {role}' process did not start")
        yield agents
    finally:
        agents.stdin.close()
        await agents.wait()


async def _ask(agent: asyncio.subprocess.Process, line: object) -> Any:
    assert agent.stdin is not None and agent.stdout is not None
    agent.stdin.write(json.dumps(line).encode() + b"\n")
    await agent.stdin.drain()
    answer = await agent.stdout.readline()
    if not answer:
        raise RuntimeError("an MCP clients' process ended during a burst")
    return json.loads(answer)


async def _remote_burst(
    clients: asyncio.subprocess.Process, follower: asyncio.subprocess.Process, topics: list[str]
) -> tuple[float, list[float], list[float]]:
    await _ask(follower, "mark")  # the runs stored before the burst
    took, (going, ended) = await asyncio.gather(_ask(clients, topics), _ask(follower, len(topics)))
    return took, going, ended


@contextlib.asynccontextmanager
async def _sessions(mcp_url: str, count: int) -> AsyncIterator[list[Client]]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=600) as http,
        contextlib.AsyncExitStack() as sessions_open,
    ):
        yield [
            await sessions_open.enter_async_context(
                Client(streamable_http_client(mcp_url, http_client=http), cache=None)
            )
            for _ in range(count)
        ]


async def serve_clients(mcp_url: str, runs: int) -> None:
    """`--clients`: `runs` sessions to the bot's MCP server; each line of stdin is one burst's
    topics (JSON), answered on stdout with its seconds."""
    async with _sessions(mcp_url, runs) as sessions:
        await sessions[0].call_tool("research", {"topic": "Warmup 2"})
        print("ready", flush=True)
        while line := await asyncio.to_thread(sys.stdin.readline):
            print(json.dumps(await mcp_burst(sessions, json.loads(line))), flush=True)


async def serve_follower(mcp_url: str) -> None:
    """`--follower`: one session; stdin `"mark"` notes the runs stored so far, and a count
    follows that many new runs to their end, answered with the latencies."""
    async with _sessions(mcp_url, 1) as (status,):
        print("ready", flush=True)
        already: set[str] = set()
        while line := await asyncio.to_thread(sys.stdin.readline):
            asked = json.loads(line)
            if asked == "mark":
                already = await _listed(status)
                print(json.dumps("marked"), flush=True)
            else:
                print(json.dumps(await follow_burst(status, already, asked)), flush=True)


async def measure(
    runs: int, rounds: int, urls: dict[str, str], same_loop: bool
) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {
        "slack": [],
        "mcp": [],
        "going_ms": [],
        "ended_ms": [],
        "server_ms": [],
        "gc_ms": [],
    }
    with tempfile.TemporaryDirectory() as folder:
        async with FakeSlack() as slack:
            settings = _settings(Path(folder), urls, slack.api_url, runs)
            async with (
                open_services(settings) as services,
                _slack_front(services, settings) as slack_url,
                _mcp_front(services, same_loop) as (mcp_url, inside),
            ):
                freeze_startup_heap()  # as `research-bot serve` does
                await slack_burst(slack, slack_url, ["Warmup 1"])  # warm both paths
                async with (
                    _agent("clients", mcp_url, runs) as clients,
                    _agent("follower", mcp_url, runs) as follower,
                ):
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
                                inside.recording = True
                                took, going, ended = await _remote_burst(
                                    clients, follower, mcp_topics
                                )
                                inside.recording = False
                                figures["mcp"].append(took)
                                figures["going_ms"] += going
                                figures["ended_ms"] += ended
            figures["server_ms"], figures["gc_ms"] = inside.status_ms, inside.gc_ms
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
    inside = sorted(figures["server_ms"])
    if inside:
        print(
            f"  inside the server: median {inside[len(inside) // 2]:.1f} ms, "
            f"p99 {_p99(inside):.1f} ms, max {inside[-1]:.1f} ms"
        )
    pauses = sorted(figures["gc_ms"])
    if pauses:
        print(
            f"garbage collector during the MCP bursts: {len(pauses)} pauses, "
            f"{sum(pauses):.0f} ms in all, longest {pauses[-1]:.1f} ms"
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
    parser.add_argument("--follower", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument(
        "--same-loop", action="store_true", help="the baseline: MCP served on the bot's loop"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    if args.clients:
        asyncio.run(serve_clients(args.clients, args.runs))
        return 0
    if args.follower:
        asyncio.run(serve_follower(args.follower))
        return 0
    with fake_world() as urls:
        figures = asyncio.run(measure(args.runs, args.rounds, urls, args.same_loop))
    passed = report(figures, args.runs)
    if args.json:
        print(json.dumps(figures))
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
