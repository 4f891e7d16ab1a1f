"""Scale: N runs at once in one process (default 100), then 100 hostile page reads at once.

The real composition (`open_services`: SQLite store, runs service, engine, anthropic SDK,
page fetcher with its extraction pool and reading budget) against the local fakes, which run
in a process of their own so that the event loop and the memory measured are the bot's. The
fake model takes 0.5 s per reply; a run searches, reads two pages, then one more, and writes
its report (4 model calls). Pages are article-like HTML of 30-90 KB with 3-12 KB of text; one
page in five is short (a few hundred characters), which sends trafilatura down its
readability and justext fallbacks.

Phases, in one process: a warm-up run (not measured: it starts the extraction workers and the
SDK's connections), one run alone (the baseline), N runs submitted at once, then N hostile runs
at once that each read one page: half gzip bombs (256 MiB of zeros in 255 KiB), half 30 MB
chunked pages.

Figures: event-loop lag (a 10 ms sleeper's oversleep) p99 and max per phase; time for all N
against one run; peak PSS and RSS of the bot's process and of its extraction workers; RSS per
extra run; what the hostile phase adds. Goals: lag p99 ≤ 50 ms; all N within 1.5× one run; peak
memory (PSS, bot + workers) ≤ 250 MB; the hostile phase adds ≤ 100 MB (PSS) and never stalls
the loop more than 100 ms.

    python -m bench.scale            # about 25 s  (--runs 100 --hostile 100)
    python -m bench.scale --postgres # the same with the store on a local PostgreSQL
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.memory import MB, cpu_seconds, descendants
from bench.scale_world import serve_world
from bot.compose import freeze_startup_heap, open_services
from bot.config import Settings
from bot.domain import Request, RunRecord
from bot.memory import tune_malloc
from bot.runs.manager import Outcome
from tests.conftest import FAST_MODEL, TEST_MODEL


class Listener:
    """A do-nothing chat front end that notes when each run is delivered."""

    def __init__(self) -> None:
        self.done: dict[str, asyncio.Event] = {}
        self.outcomes: dict[str, Outcome] = {}

    async def on_event(self, run: RunRecord, event: Any) -> None:
        pass

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        self.outcomes[run.run_id] = outcome
        self.done.setdefault(run.run_id, asyncio.Event()).set()

    async def wait(self, run_id: str) -> None:
        await self.done.setdefault(run_id, asyncio.Event()).wait()


class LagMonitor:
    """A task that sleeps 10 ms at a time and records how late it wakes, per phase."""

    def __init__(self) -> None:
        self.lags: dict[str, list[float]] = {}
        self.phase = "idle"
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.010)
            self.lags.setdefault(self.phase, []).append(time.perf_counter() - started - 0.010)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def figures(self, phase: str) -> tuple[float, float]:
        lags = sorted(self.lags.get(phase, [0.0]))
        p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
        return p99 * 1000, lags[-1] * 1000


class MemoryProbe:
    """`bench.memory` sampling this process's tree from a process of its own: reading
    `smaps_rollup` every 100 ms inside the bot took about a second of its CPU in the burst,
    and its interpreter lock."""

    def __init__(self, exclude: set[int]) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.memory", str(os.getpid()), *map(str, exclude)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.pid = self._process.pid

    def _ask(self, command: str) -> dict[str, int]:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        answer: dict[str, int] = json.loads(self._process.stdout.readline())
        return answer

    def current(self) -> dict[str, int]:
        return self._ask("current")

    @property
    def peak(self) -> dict[str, int]:
        return self._ask("peak")

    def reset(self) -> None:
        self._ask("reset")

    def stop(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(10)


def settings_for(
    folder: Path, urls: dict[str, str], concurrent: int, workers: int | None = None
) -> Settings:
    return Settings.from_mapping(environment(folder, urls, concurrent, workers))


def environment(
    folder: Path, urls: dict[str, str], concurrent: int, workers: int | None = None
) -> dict[str, str]:
    """The bot's settings against the fake world, as the environment variables they are."""
    extra = {} if workers is None else {"RESEARCH_BOT_EXTRACT_WORKERS": str(workers)}
    return (
        extra
        | {
            "ANTHROPIC_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": urls["api"],
            "RESEARCH_BOT_MODEL": TEST_MODEL,
            "RESEARCH_BOT_FAST_MODEL": FAST_MODEL,
            "TAVILY_API_KEY": "tvly-test",
            "TAVILY_BASE_URL": urls["tavily"],
            "RESEARCH_BOT_DB": str(folder / "scale.sqlite3"),
            "RESEARCH_BOT_FETCH_ALLOW_HOSTS": urls["web_host"],
            "RESEARCH_BOT_MAX_CONCURRENT_RUNS": str(concurrent),
            # Tool output is never summarized: every run makes the same 4 model calls.
            "RESEARCH_BOT_COMPRESS_THRESHOLD_TOKENS": "1000000",
        }
        | ({"RESEARCH_BOT_DATABASE_URL": urls["database"]} if "database" in urls else {})
    )


async def run_all(services: Any, listener: Listener, topics: list[str]) -> float:
    """Submit every topic at once; seconds until the last one is delivered."""
    started = time.perf_counter()
    records = [await services.runs.submit(Request(topic=t), listener) for t in topics]
    await asyncio.gather(*(listener.wait(r.run_id) for r in records))
    return time.perf_counter() - started


async def scale(
    runs: int, hostile: int, concurrent: int, urls: dict[str, str], workers: int | None = None
) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    listener = Listener()
    monitor = LagMonitor()
    memory = MemoryProbe(exclude={int(urls["world_pid"])})
    ignore = {int(urls["world_pid"]), memory.pid}
    with tempfile.TemporaryDirectory() as folder:
        settings = settings_for(Path(folder), urls, concurrent, workers)
        async with open_services(settings) as services:
            freeze_startup_heap()  # as `research-bot serve` does
            monitor.start()
            await run_all(services, listener, ["Warmup 0"])
            monitor.phase = "one"
            figures["one_s"] = await run_all(services, listener, ["Company 0"])
            figures["rss_after_one"] = memory.current()
            memory.reset()
            monitor.phase = "burst"
            topics = [f"Company {n}" for n in range(1, runs + 1)]
            world = int(urls["world_pid"])
            workers = descendants(os.getpid(), ignore)
            cpu_before = (
                cpu_seconds(os.getpid()),
                sum(map(cpu_seconds, workers)),
                cpu_seconds(world),
            )
            figures["all_s"] = await run_all(services, listener, topics)
            workers = descendants(os.getpid(), ignore)
            cpu_after = (
                cpu_seconds(os.getpid()),
                sum(map(cpu_seconds, workers)),
                cpu_seconds(world),
            )
            figures["burst_cpu"] = [b - a for a, b in zip(cpu_before, cpu_after, strict=True)]
            figures["burst_peak"] = memory.peak
            monitor.phase = "between"
            before = memory.current()
            memory.reset()
            monitor.phase = "hostile"
            hostile_s = await run_all(services, listener, [f"Hostile {n}" for n in range(hostile)])
            figures["hostile"] = (before, memory.peak, hostile_s)
            monitor.stop()
            memory.stop()
    outcomes = list(listener.outcomes.values())
    figures["reports"] = sum(o.report is not None for o in outcomes)
    figures["outcomes"] = len(outcomes)
    figures["lag"] = {phase: monitor.figures(phase) for phase in ("one", "burst", "hostile")}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--hostile", type=int, default=100)
    parser.add_argument("--concurrent", type=int, default=0, help="default: --runs")
    parser.add_argument("--workers", type=int, default=None, help="default: the bot's default")
    parser.add_argument(
        "--postgres", action="store_true", help="the store on a local PostgreSQL, not SQLite"
    )
    args = parser.parse_args()
    if args.hostile < 1:
        parser.error("--hostile must be at least 1: the hostile phase has goals of its own")
    logging.basicConfig(level=logging.CRITICAL)  # refused bombs are expected: keep it quiet
    tune_malloc()  # as `research-bot` does first thing
    postgres = None
    with fake_world() as urls:
        if args.postgres:
            from tests.postgres import start_server

            postgres = start_server()
            urls["database"] = postgres.url(postgres.new_database())
        try:
            f = asyncio.run(
                scale(args.runs, args.hostile, args.concurrent or args.runs, urls, args.workers)
            )
        finally:
            if postgres is not None:
                postgres.stop()
    print(f"store: {'PostgreSQL' if postgres else 'SQLite'}")
    report(f, args.runs, args.hostile)


@contextlib.contextmanager
def fake_world() -> Iterator[dict[str, str]]:
    """The fakes (bench/scale_world.py) in a process of their own; their addresses and pid."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    world = context.Process(target=serve_world, args=(theirs,), daemon=True)
    world.start()
    try:
        yield ours.recv() | {"world_pid": str(world.pid)}
    finally:
        ours.send("stop")
        world.join(10)


def report(f: dict[str, Any], runs: int, hostile: int) -> None:
    ratio = f["all_s"] / f["one_s"]
    peak = f["burst_peak"]
    per_run = (peak["main_rss"] - f["rss_after_one"]["main_rss"]) / max(1, runs - 1)
    before, h_peak, hostile_s = f["hostile"]
    added = max(0, h_peak["total_pss"] - before["total_pss"])
    added_rss = max(0, h_peak["total_rss"] - before["total_rss"])
    lag_one, lag_burst, lag_hostile = (f["lag"][p] for p in ("one", "burst", "hostile"))
    print(f"runs delivered             {f['outcomes']} ({f['reports']} with a report)")
    print(f"one run alone              {f['one_s']:.2f} s, lag p99 {lag_one[0]:.1f} ms")
    print(f"{runs} runs at once            {f['all_s']:.2f} s = {ratio:.2f}x one run")
    print(f"lag, {runs} runs               p99 {lag_burst[0]:.1f} ms, max {lag_burst[1]:.1f} ms")
    for kind in ("pss", "rss"):
        print(
            f"peak {kind.upper()}, {runs} runs          bot {peak[f'main_{kind}'] / MB:.0f} MB + "
            f"extraction workers {peak[f'workers_{kind}'] / MB:.0f} MB = "
            f"{peak[f'total_{kind}'] / MB:.0f} MB"
        )
    bot_cpu, workers_cpu, world_cpu = f["burst_cpu"]
    print(
        f"CPU during the {runs} runs     bot {bot_cpu:.1f} s, extraction workers "
        f"{workers_cpu:.1f} s, fakes {world_cpu:.1f} s (2 cores: {2 * f['all_s']:.1f} s)"
    )
    print(f"RSS per extra run          {per_run / 1000:.0f} kB (bot process)")
    print(
        f"hostile phase              {hostile_s:.2f} s; adds {added / MB:.0f} MB PSS "
        f"({added_rss / MB:.0f} MB RSS); "
        f"lag p99 {lag_hostile[0]:.1f} ms, max {lag_hostile[1]:.1f} ms"
    )
    checks = {
        "lag p99 <= 50 ms": lag_burst[0] <= 50,
        "all within 1.5x one run": ratio <= 1.5,
        "peak memory <= 250 MB (PSS, bot + workers)": peak["total_pss"] <= 250 * MB,
        "hostile adds <= 100 MB (PSS)": added <= 100 * MB,
        "hostile never stalls > 100 ms": lag_hostile[1] <= 100,
        "every run delivered with a report": f["reports"] == f["outcomes"] == runs + hostile + 2,
    }
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    ok = all(checks.values())
    print("PASS" if ok else "FAIL", "(goals of issue 9)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
