"""Submit: how long asking for a run takes while a hundred others start, now and before (issue 27).

The real composition (`open_services`: SQLite store, runs service, engine, anthropic SDK, page
fetcher) against bench.scale's fake world in a process of its own, with a slot for every run,
as `bench.scale` has it. After a warm-up run, N runs are asked for at once (`asyncio.gather` of
`RunManager.submit`, the terminal's origin, the default quota): each submit is timed until it
returns its record, and the N until the last one returned; then until every run is delivered.

"Before" is the same measurement against the bot as it was at `BEFORE` (its `bot/` package read
from git into a temporary folder): each measurement is a child process of its own, now and
before alternated, so both meet the same machine. Without git, "before" is skipped.

    python -m bench.submit                # about a minute (--runs 100 --rounds 2; --no-before)
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "76ceb19c2fb84b3b60a324963224b93118280bdc"
"""The last commit before requests were admitted side by side (`bot/runs/admission.py`)."""


async def measure(runs: int, urls: dict[str, str]) -> dict[str, Any]:
    from bench.scale import Listener, settings_for
    from bot.compose import freeze_startup_heap, open_services
    from bot.domain import Request, RunRecord

    latencies: list[float] = []

    with tempfile.TemporaryDirectory() as folder:
        settings = settings_for(Path(folder), urls, runs)
        async with open_services(settings) as services:
            freeze_startup_heap()  # as `research-bot serve` does
            listener = Listener()
            warm = await services.runs.submit(Request(topic="Warmup 0"), listener)
            await listener.wait(warm.run_id)

            async def submit(n: int) -> RunRecord:
                asked = time.perf_counter()
                record = await services.runs.submit(Request(topic=f"Company {n}"), listener)
                latencies.append(time.perf_counter() - asked)
                return record

            started = time.perf_counter()
            records = await asyncio.gather(*(submit(n) for n in range(1, runs + 1)))
            submitted = time.perf_counter() - started
            await asyncio.gather(*(listener.wait(r.run_id) for r in records))
            delivered = time.perf_counter() - started
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "submitted_s": submitted,
        "delivered_s": delivered,
        "reports": sum(o.report is not None for o in listener.outcomes.values()),
    }


def _measure_here(runs: int) -> None:
    """The child: one measurement, as one line of JSON."""
    from bench.scale import fake_world
    from bot.memory import tune_malloc

    logging.basicConfig(level=logging.CRITICAL)
    tune_malloc()  # as `research-bot` does first thing
    with fake_world() as urls:
        figures = asyncio.run(measure(runs, urls))
    print(json.dumps(figures))


def _child(runs: int, bot_from: Path | None) -> dict[str, Any]:
    """One measurement in a process of its own; `bot_from`: a folder whose `bot/` it imports."""
    paths = [str(bot_from)] if bot_from is not None else []
    env = os.environ | {"PYTHONPATH": os.pathsep.join([*paths, str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "bench.submit", "--measure", "--runs", str(runs)],
        cwd=bot_from or ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _old_bot(folder: Path) -> bool:
    """`bot/` as it was at `BEFORE`, into `folder`; False without git or that commit."""
    try:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", BEFORE, "bot"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return True


def _line(label: str, f: dict[str, Any], runs: int) -> str:
    return (
        f"{label:7s} one submit p50 {f['p50_ms']:7.1f} ms, p99 {f['p99_ms']:7.1f} ms; all {runs} "
        f"submitted {f['submitted_s']:6.2f} s, delivered {f['delivered_s']:6.2f} s "
        f"({f['reports']} reports)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-before", action="store_true", help="skip the code as it was")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        _measure_here(args.runs)
        return
    with tempfile.TemporaryDirectory() as folder:
        old = None if args.no_before or not _old_bot(Path(folder)) else Path(folder)
        for _ in range(args.rounds):
            print(_line("now", _child(args.runs, None), args.runs), flush=True)
            if old is not None:
                print(_line("before", _child(args.runs, old), args.runs), flush=True)
    print(f"(before = {BEFORE[:7]})" if old is not None else "(before: skipped)")


if __name__ == "__main__":
    main()
