"""Scale through the front end: `research-bot serve slack` as a process of its own, driven the
way Slack drives it (signed slash commands over HTTP), against the fake world of bench/scale.py
(the same model script, pages and hostile pages) and the fake Slack.

Phases: `/research help` asked 100 times, one after another (its idle latency); a warm-up run;
one run alone; N runs at once (default 100), each from a channel and a person of its own, while
one more person asks `/research help` every 50 ms; then 30 hostile runs at once (half gzip bombs,
half 30 MB chunked pages), each in its own channel.

A run is delivered when its report file is in its thread (`files.completeUploadExternal`).
The bot is started as a fresh interpreter, never forked from a warm parent, so the memory read
is its own; this process reads it from /proc (PSS of the bot and its extraction workers), so the
sampling never runs inside the bot. Progress is the edited status message
(`RESEARCH_BOT_SLACK_STREAMING=off`): streamed plans are paced by Slack's Tier 2 limits on
starting and stopping streams, not by the bot.

Goals (issue 21): all N within 1.5x one run; `/research help` p99 during the burst within its
idle p99 + 50 ms; the hostile runs peak at most 250 MB (PSS, bot + workers).

    python -m bench.serve            # about a minute (--runs 100 --hostile 30)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.memory import MB, Memory, cpu_seconds
from bench.scale import environment, fake_world
from tests.fakes.slack_api import FakeSlack
from tests.process import Cli
from tests.replica_world import Replica, Replicas

SECRET = "bench-secret"
HELP_EVERY_S = 0.05


async def _until(check: Callable[[], bool], *, within_s: float = 600) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > within_s:
            raise TimeoutError("the benchmark's runs were not all delivered")
        await asyncio.sleep(0.01)
    return time.monotonic()


class Bot:
    """The serve process, the person-by-person commands sent to it, and its deliveries."""

    def __init__(self, replica: Replica, slack: FakeSlack) -> None:
        self.replica = replica
        self.slack = slack
        self.pid = replica.process.pid

    def delivered(self) -> int:
        return len(self.slack.calls_to("files.completeUploadExternal"))

    async def runs(self, topics: list[str], first: int) -> float:
        """Each topic from its own channel and person, all at once: seconds until every report
        is in its thread."""
        before = self.delivered()
        began = time.monotonic()
        answers = await asyncio.gather(
            *(
                self.replica.sender.command(topic, channel=f"C{first + n}", user=f"U{first + n}")
                for n, topic in enumerate(topics)
            )
        )
        refused = [body for status, body in answers if status != 200]
        if refused:
            raise RuntimeError(f"the bot refused {len(refused)} commands: {refused[0][:200]}")
        return await _until(lambda: self.delivered() >= before + len(topics)) - began

    async def help(self) -> float:
        """Milliseconds until `/research help` is answered."""
        began = time.perf_counter()
        status, body = await self.replica.sender.command("help", channel="CHELP", user="UHELP")
        if status != 200 or "research" not in body:
            raise RuntimeError(f"/research help failed: {status} {body[:200]}")
        return (time.perf_counter() - began) * 1000


async def _help_meanwhile(bot: Bot, stop: asyncio.Event) -> list[float]:
    latencies = []
    while not stop.is_set():
        latencies.append(await bot.help())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), HELP_EVERY_S)
    return latencies


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.99 * len(ordered)) - 1)]


async def measure(urls: dict[str, str], runs: int, hostile: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    async with FakeSlack() as slack:
        with tempfile.TemporaryDirectory() as folder:
            env = environment(Path(folder), urls, concurrent=runs) | {
                "RESEARCH_BOT_SLACK_STREAMING": "off",
                "RESEARCH_BOT_USER_RUNS_PER_HOUR": "0",
                "SLACK_BOT_TOKEN": slack.token,
                "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": slack.api_url,
            }
            # Any option makes `Cli` exec a fresh interpreter rather than fork a warm one.
            started = Replicas(Cli(Path(folder), env), SECRET, stdin=asyncio.subprocess.DEVNULL)
            try:
                [replica] = await started.start()
                figures |= await _phases(Bot(replica, slack), urls, runs, hostile)
            finally:
                await started.stop()
    return figures


async def _phases(bot: Bot, urls: dict[str, str], runs: int, hostile: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    memory = Memory(exclude={int(urls["world_pid"])}, root=bot.pid)
    memory.start()
    figures["help_idle"] = [await bot.help() for _ in range(100)]
    await bot.runs(["Warmup 0"], first=0)
    figures["one_s"] = await bot.runs(["Company 0"], first=1)
    figures["one_peak"] = dict(memory.peak)
    memory.reset()

    stop = asyncio.Event()
    helper = asyncio.create_task(_help_meanwhile(bot, stop))
    cpu_before = cpu_seconds(bot.pid)
    figures["all_s"] = await bot.runs([f"Company {n}" for n in range(1, runs + 1)], first=10)
    figures["bot_cpu"] = cpu_seconds(bot.pid) - cpu_before
    stop.set()
    figures["help_burst"] = await helper
    figures["burst_peak"] = dict(memory.peak)

    memory.reset()
    topics = [f"Hostile {n}" for n in range(hostile)]
    figures["hostile_s"] = await bot.runs(topics, first=10 + runs)
    figures["hostile_peak"] = dict(memory.peak)
    memory.stop()
    return figures


def report(f: dict[str, Any], runs: int, hostile: int) -> bool:
    ratio = f["all_s"] / f["one_s"]
    idle, burst = _p99(f["help_idle"]), _p99(f["help_burst"])
    peak, h_peak = f["burst_peak"], f["hostile_peak"]
    print(f"one run alone                {f['one_s']:.2f} s")
    print(f"{runs} runs at once              {f['all_s']:.2f} s = {ratio:.2f}x one run")
    print(f"bot CPU during the {runs} runs  {f['bot_cpu']:.1f} s (its process; workers apart)")
    print(
        f"/research help               idle p50 {statistics.median(f['help_idle']):.1f} ms, "
        f"p99 {idle:.1f} ms; during the burst p50 {statistics.median(f['help_burst']):.1f} ms, "
        f"p99 {burst:.1f} ms ({len(f['help_burst'])} asked)"
    )
    named = (
        ("one run", f["one_peak"]),
        (f"{runs} runs", peak),
        (f"{hostile} hostile runs", h_peak),
    )
    for name, figures in named:
        print(
            f"peak PSS, {name:<18} bot {figures['main_pss'] / MB:.0f} MB + extraction workers "
            f"{figures['workers_pss'] / MB:.0f} MB = {figures['total_pss'] / MB:.0f} MB"
        )
    print(f"{hostile} hostile runs             {f['hostile_s']:.2f} s")
    checks = {
        f"all {runs} within 1.5x one run": ratio <= 1.5,
        "help p99 during the burst <= idle p99 + 50 ms": burst <= idle + 50,
        f"{hostile} hostile runs peak <= 250 MB (PSS, bot + workers)": h_peak["total_pss"]
        <= 250 * MB,
    }
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    ok = all(checks.values())
    print("PASS" if ok else "FAIL", "(goals of issue 21, through `serve slack`)")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--hostile", type=int, default=30)
    args = parser.parse_args()
    os.environ.pop("PYTHONPROFILEIMPORTTIME", None)
    with fake_world() as urls:
        f = asyncio.run(measure(urls, args.runs, args.hostile))
    sys.exit(0 if report(f, args.runs, args.hostile) else 1)


if __name__ == "__main__":
    main()
