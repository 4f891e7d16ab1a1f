"""Slack benchmark: time to acknowledge a burst of signed `/research` requests (our app beside a
bare bolt app that only acks, measured in the same run), then the Slack API calls per run with
many runs at once, against Slack's rate limits.

    python bench/slack_ack.py [--requests 200] [--rounds 3] [--runs 20]

Each app under test runs in its own process, served over HTTP as in production; the fake Slack
Web API and the load client share this process. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402
from slack_bolt.async_app import AsyncAck, AsyncApp  # noqa: E402

from bot.adapters.chat.sink import StatusView  # noqa: E402
from bot.adapters.slack.client import SlackBudget, make_client  # noqa: E402
from bot.adapters.slack.front import SlackFrontEnd  # noqa: E402
from bot.adapters.slack.sink import SlackSink  # noqa: E402
from bot.adapters.slack.stream import StreamOptions, slack_progress  # noqa: E402
from bot.agent.control import Control  # noqa: E402
from bot.agent.events import (  # noqa: E402
    Ending,
    Event,
    ReportReady,
    RunFinished,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.report.model import Report, Source  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.domain import Origin, Request  # noqa: E402
from bot.runs.manager import RunManager  # noqa: E402
from bot.store.runs import Store  # noqa: E402
from tests.fakes.slack_api import Call, FakeSlack, SlackSender  # noqa: E402

SECRET = "bench-signing-secret"


class PacedEngine:
    """A research run of a few turns whose tool calls take `step_s` each (a benchmark may sleep)."""

    def __init__(self, *, turns: int = 3, calls_per_turn: int = 2, step_s: float = 1.0) -> None:
        self.turns, self.calls_per_turn, self.step_s = turns, calls_per_turn, step_s

    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        yield RunStarted(topic=request.topic, mode=request.mode.value)
        sources = []
        for turn in range(1, self.turns + 1):
            yield TurnStarted(turn=turn)
            for n in range(self.calls_per_turn):
                call = f"t{turn}c{n}"
                yield ToolCalled(
                    turn=turn,
                    call_id=call,
                    name="web_search",
                    input={"query": f"{request.topic} {call}"},
                )
                await asyncio.sleep(self.step_s)
                sources.append(Source(url=f"https://example.test/{call}", title=call))
                yield ToolFinished(
                    turn=turn,
                    call_id=call,
                    name="web_search",
                    is_error=False,
                    content="...",
                    sources=sources[-1:],
                )
            yield UsageRecorded(turn=turn, model="bench", usage=Usage(cost_usd=0.01))
        yield SynthesisStarted(turn=self.turns + 1, reason="completed")
        report = Report(title=request.topic, tldr="Benchmark report.", sources=sources)
        yield ReportReady(turn=self.turns + 1, report=report, synthesis=False)
        yield RunFinished(ending=Ending.COMPLETED, turns=self.turns + 1, usage=Usage())

    async def recover(
        self, run_id: str, request: Request, history: list[Event]
    ) -> AsyncIterator[Event]:
        yield RunFinished(ending=Ending.INTERRUPTED_SYNTHESIS_FAILED, turns=0, usage=Usage())


def _settings(api_url: str, db: str) -> Settings:
    return Settings.from_mapping(
        {
            "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": api_url,
            "RESEARCH_BOT_DB": db,
        }
    )


async def _serve(kind: str, api_url: str, db: str) -> None:
    """The child process: one app on 127.0.0.1, its port on stdout, until killed."""
    settings = _settings(api_url, db)
    if kind == "ours":
        store = await Store.open(settings.db_path)
        runs = RunManager(store, PacedEngine(), max_concurrent=settings.max_concurrent_runs)
        app = SlackFrontEnd(settings, runs, store).app
    else:
        app = AsyncApp(client=make_client(settings), signing_secret=SECRET)

        @app.command("/research")
        async def only_ack(ack: AsyncAck) -> None:
            await ack()

    runner = web.AppRunner(app.web_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _burst(kind: str, slack: FakeSlack, requests: int) -> list[float]:
    """Start the app, warm it up, fire `requests` signed commands at once; seconds to each ack."""
    with tempfile.TemporaryDirectory() as tmp:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--serve",
            kind,
            "--api",
            slack.api_url,
            "--db",
            str(Path(tmp) / "bench.sqlite3"),
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            assert child.stdout is not None
            port = int(await child.stdout.readline())
            sender = SlackSender(
                f"http://127.0.0.1:{port}/slack/events",
                SECRET,
                response_url=slack.response_url("bench"),
            )
            await sender.command("help")  # the first request pays for auth.test, in both apps
            bodies = [
                sender.command_body(f"Company {n}", channel=f"C{n % 50}", user=f"U{n}")
                for n in range(requests)
            ]
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
                return list(
                    await asyncio.gather(*(_timed(session, sender, body) for body in bodies))
                )
        finally:
            child.kill()
            await child.wait()


async def _timed(session: aiohttp.ClientSession, sender: SlackSender, body: str) -> float:
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": sender.verifier.generate_signature(timestamp=stamp, body=body),
    }
    started = time.perf_counter()
    async with session.post(sender.url, data=body.encode(), headers=headers) as response:
        await response.read()
        assert response.status == 200, response.status
    return time.perf_counter() - started


async def ack_latency(requests: int, rounds: int) -> None:
    print(
        f"Time to ack {requests} concurrent signed /research requests (HTTP mode), "
        f"{rounds} alternating rounds:"
    )
    p99s: dict[str, list[float]] = defaultdict(list)
    async with FakeSlack() as slack:
        for round_no in range(1, rounds + 1):
            for kind in ("bare", "ours"):
                times = await _burst(kind, slack, requests)
                p50, p99 = _percentile(times, 0.50) * 1e3, _percentile(times, 0.99) * 1e3
                p99s[kind].append(p99)
                print(f"  round {round_no} {kind:>4}: p50 {p50:6.1f} ms  p99 {p99:6.1f} ms")
    bare, ours = statistics.median(p99s["bare"]), statistics.median(p99s["ours"])
    verdict = "meets" if ours <= 1.25 * bare else "MISSES"
    print(
        f"  median p99: bare {bare:.1f} ms, ours {ours:.1f} ms, ratio {ours / bare:.2f}x "
        f"({verdict} the 1.25x goal)"
    )


def _peak(times: list[float], window: float) -> int:
    """Most events inside any sliding window of `window` seconds."""
    times, best, start = sorted(times), 0, 0
    for end, moment in enumerate(times):
        while moment - times[start] > window:
            start += 1
        best = max(best, end - start + 1)
    return best


async def api_calls(runs_at_once: int) -> None:
    print(
        f"\nSlack API calls with {runs_at_once} runs at once (3 turns x 2 tool calls, "
        "1 s each; one run per channel; status edits every 3 s at most):"
    )
    async with FakeSlack() as slack:
        with tempfile.TemporaryDirectory() as tmp:
            async with Store.connect(Path(tmp) / "bench.sqlite3") as store:
                runs = RunManager(store, PacedEngine(), max_concurrent=runs_at_once)
                front = SlackFrontEnd(_settings(slack.api_url, ""), runs, store)
                started = time.monotonic()
                await asyncio.gather(*(_dispatch(front, n) for n in range(runs_at_once)))
                # Acked is not yet submitted (handlers go on after the ack): wait for the parents.
                await slack.wait_for(
                    "chat.postMessage", runs_at_once, where=lambda c: "thread_ts" not in c.args
                )
                for record in await store.list_runs(limit=runs_at_once):
                    await runs.wait(record.run_id)
                elapsed = time.monotonic() - started
                await runs.shutdown()
        _report_calls(slack.calls, runs_at_once, elapsed)


async def _dispatch(front: SlackFrontEnd, n: int) -> None:
    from slack_bolt.request.async_request import AsyncBoltRequest

    sender = SlackSender("", SECRET)
    body = sender.command_body(f"Company {n}", channel=f"C{n}", user=f"U{n}")
    stamp = str(int(time.time()))
    headers = {
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": sender.verifier.generate_signature(timestamp=stamp, body=body),
    }
    response = await front.app.async_dispatch(AsyncBoltRequest(body=body, headers=headers))
    assert response.status == 200, response.status


def _report_calls(calls: list[Call], runs_at_once: int, elapsed: float) -> None:
    counts = Counter(c.method for c in calls)
    for method, count in sorted(counts.items()):
        print(f"  {method:32} {count:5}  ({count / runs_at_once:.1f} per run)")
    updates = [c.at for c in calls if c.method == "chat.update"]
    posts: dict[str, list[float]] = defaultdict(list)
    for c in calls:
        if c.method == "chat.postMessage":
            posts[str(c.args.get("channel"))].append(c.at)
    peak_update = _peak(updates, 60.0)
    peak_post_1s = max(_peak(t, 1.0) for t in posts.values())
    peak_post_10s = max(_peak(t, 10.0) for t in posts.values())
    print(f"  all runs done in {elapsed:.1f} s; 429s: {sum(1 for c in calls if c.status == 429)}")
    print(
        f"  chat.update, most in any minute (workspace): {peak_update} "
        f"(Slack: about 50) -> {'within' if peak_update <= 50 else 'OVER'}"
    )
    print(
        f"  chat.postMessage, most in any 1 s / 10 s (one channel): {peak_post_1s} / "
        f"{peak_post_10s} (Slack: about 1 a second, short bursts allowed) -> "
        f"{'within' if peak_post_10s <= 13 else 'OVER'}"
    )


async def stream_calls(runs_at_once: int) -> None:
    """The same runs followed by the Slack listener directly, streaming off and on."""
    for mode in ("off", "on"):
        print(f"\nSlack API calls with {runs_at_once} runs at once, streaming {mode}:")
        async with FakeSlack() as slack:
            with tempfile.TemporaryDirectory() as tmp:
                async with Store.connect(Path(tmp) / "bench.sqlite3") as store:
                    runs = RunManager(store, PacedEngine(), max_concurrent=runs_at_once)
                    client = make_client(_settings(slack.api_url, ""))
                    budget = SlackBudget()
                    started = time.monotonic()
                    ids = []
                    for n in range(runs_at_once):
                        origin = Origin(
                            platform="slack", workspace="T1", channel=f"C{n}", user=f"U{n}"
                        )
                        sink = SlackSink(
                            client, store, budget, team="T1", channel=origin.channel, parents={}
                        )
                        view = StatusView(
                            run_id="", topic=f"Company {n}", mode="company", requester=origin.user
                        )
                        listener = slack_progress(
                            client,
                            sink,
                            view,
                            store=store,
                            budget=budget,
                            origin=origin,
                            options=StreamOptions(mode=mode),
                        )
                        request = Request(topic=f"Company {n}", origin=origin)
                        ids.append((await runs.submit(request, listener)).run_id)
                    for run_id in ids:
                        await runs.wait(run_id)
                    elapsed = time.monotonic() - started
                    await runs.shutdown()
            _report_calls(slack.calls, runs_at_once, elapsed)
            per_minute = {
                method: _peak([c.at for c in slack.calls if c.method == method], 60.0)
                for method in ("chat.startStream", "chat.appendStream", "chat.stopStream")
            }
            if mode == "on":
                print(
                    "  most in any minute (workspace): "
                    + ", ".join(f"{m} {n}" for m, n in per_minute.items())
                    + " (Slack: start/stop Tier 2, about 20; append Tier 4, 100+)"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--serve", choices=["ours", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--api", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve, args.api, args.db))
        return
    asyncio.run(ack_latency(args.requests, args.rounds))
    asyncio.run(api_calls(args.runs))
    asyncio.run(stream_calls(args.runs))


if __name__ == "__main__":
    main()
