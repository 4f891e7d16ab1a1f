"""Loop overhead: wall time of a scripted run divided by its critical path (goal: at most 1.05).

A scripted in-process model waits a scripted latency per turn and asks for 3-5 tools at once;
each tool waits its own scripted latency. The critical path is what a perfect loop would take:
the sum over turns of the model latency plus the slowest tool of that turn. The real
`Researcher` is driven directly, and through the real `RunManager` with a `Store` on a
temporary SQLite file (what production does: every event is appended as it happens). A bare
asyncio replay of the same sleeps is timed too: the floor that timer granularity alone costs.

    python -m bench.loop_overhead [--runs 3] [--turns 8] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bot.agent.calls import Limits
from bot.agent.compress import Compressor
from bot.agent.control import Control
from bot.agent.events import Ending, Event, RunFinished, ToolFinished, Usage
from bot.agent.loop import Researcher
from bot.agent.models.port import ModelCall, ModelReply
from bot.agent.report.model import Source
from bot.agent.web.registry import Tool, Toolbox, ToolContext, ToolOutput
from bot.domain import Request, RunRecord
from bot.runs.manager import Outcome, RunManager
from bot.store.runs import Store

GOAL = 1.05
MODEL_S = (0.050, 0.150)
TOOL_S = (0.020, 0.200)
TOOLS_PER_TURN = (3, 5)
REQUEST = Request(topic="Acme Robotics")
REPORT = "# Acme Robotics\n\n## TL;DR\n- Acme builds warehouse robots [1].\n\n## Overview\nSee [2]."


@dataclass(frozen=True)
class Turn:
    model_s: float
    tool_s: tuple[float, ...]
    """Empty for the last turn, which ends the run with the report."""


def make_script(rng: random.Random, turns: int) -> list[Turn]:
    work = [
        Turn(
            rng.uniform(*MODEL_S),
            tuple(rng.uniform(*TOOL_S) for _ in range(rng.randint(*TOOLS_PER_TURN))),
        )
        for _ in range(turns - 1)
    ]
    return [*work, Turn(rng.uniform(*MODEL_S), ())]


def critical_path(script: list[Turn]) -> float:
    return sum(turn.model_s + max(turn.tool_s, default=0.0) for turn in script)


class ScriptedModel:
    """A ModelPort that replays the script: wait the turn's latency, then ask for its tools."""

    def __init__(self, script: list[Turn]) -> None:
        self._turns = iter(enumerate(script, start=1))

    async def complete(self, call: ModelCall) -> ModelReply:
        if call.model is not None:
            # The fast model (the claim judge): answers at once, with no verdicts.
            return ModelReply(content=[], stop_reason="end_turn", usage=Usage(), model=call.model)
        number, turn = next(self._turns)
        await asyncio.sleep(turn.model_s)
        usage = Usage(input_tokens=1000 * number, output_tokens=100)
        if not turn.tool_s:
            return ModelReply(
                content=[{"type": "text", "text": REPORT}],
                stop_reason="end_turn",
                usage=usage,
                model="scripted",
            )
        uses = [
            {
                "type": "tool_use",
                "id": f"toolu_{number}_{i}",
                "name": "probe",
                "input": {"key": f"{number}-{i}", "delay_s": delay},
            }
            for i, delay in enumerate(turn.tool_s)
        ]
        return ModelReply(
            content=[{"type": "text", "text": f"Turn {number}."}, *uses],
            stop_reason="tool_use",
            usage=usage,
            model="scripted",
        )


class ProbeArgs(BaseModel):
    key: str
    delay_s: float


async def probe(ctx: ToolContext, args: ProbeArgs) -> ToolOutput:
    """Wait the scripted latency, then return one short finding with its source."""
    await asyncio.sleep(args.delay_s)
    source = Source(
        url=f"https://acme.example/{args.key}",
        title=f"Finding {args.key}",
        snippet="Acme builds warehouse robots.",
    )
    number = ctx.registry.add(source)
    return ToolOutput(
        heading=f"[{number}] {source.title}\n{source.url}",
        body="Acme builds warehouse robots.",
        sources=[source],
    )


def researcher(script: list[Turn]) -> Researcher:
    model = ScriptedModel(script)
    # The threshold is never crossed: this benchmark measures the loop, not summarizing.
    compressor = Compressor(model, fast_model="scripted-fast", threshold_tokens=10**9, timeout_s=10)
    toolbox = Toolbox([Tool("probe", ProbeArgs, probe, timeout_s=10)])
    return Researcher(model, toolbox, compressor, Limits())


def check(events: list[Event], script: list[Turn]) -> None:
    """A broken run (tools failing fast, an early ending) would flatter the ratio: refuse it."""
    last = events[-1]
    if not isinstance(last, RunFinished) or last.ending is not Ending.COMPLETED:
        raise SystemExit(f"the scripted run did not complete: {last}")
    tools = [e for e in events if isinstance(e, ToolFinished)]
    if len(tools) != sum(len(t.tool_s) for t in script) or any(t.is_error for t in tools):
        raise SystemExit("the scripted tools did not all run and succeed")


async def run_direct(script: list[Turn]) -> float:
    engine = researcher(script)
    started = time.perf_counter()
    events = [event async for event in engine.research("bench", REQUEST, Control())]
    wall = time.perf_counter() - started
    check(events, script)
    return wall


class Listener:
    """A front end that only records: the runs service is measured, not a chat platform."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.done = asyncio.Event()

    async def on_event(self, run: RunRecord, event: Event) -> None:
        self.events.append(event)

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        self.done.set()


async def run_managed(script: list[Turn], store: Store) -> float:
    manager = RunManager(store, researcher(script))
    listener = Listener()
    started = time.perf_counter()
    await manager.submit(REQUEST, listener)
    await listener.done.wait()
    wall = time.perf_counter() - started
    check(listener.events, script)
    return wall


async def run_floor(script: list[Turn]) -> float:
    """The same waits with no engine at all: what the event loop's timers alone add."""
    started = time.perf_counter()
    for turn in script:
        await asyncio.sleep(turn.model_s)
        await asyncio.gather(*(asyncio.sleep(delay) for delay in turn.tool_s))
    return time.perf_counter() - started


async def bench(runs: int, turns: int, seed: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        async with Store.connect(Path(folder) / "bench.db") as store:
            for i in range(runs):
                script = make_script(random.Random(seed + i), turns)
                path = critical_path(script)
                floor = await run_floor(script)
                direct = await run_direct(script)
                managed = await run_managed(script, store)
                rows.append({"path": path, "floor": floor, "direct": direct, "managed": managed})
    return rows


def verdict(ratio: float) -> str:
    return "PASS" if ratio <= GOAL else "FAIL"


def report(rows: list[dict[str, Any]], turns: int) -> bool:
    print(
        f"loop overhead: {turns} turns, {TOOLS_PER_TURN[0]}-{TOOLS_PER_TURN[1]} parallel tools "
        f"per turn, model {MODEL_S[0] * 1000:.0f}-{MODEL_S[1] * 1000:.0f} ms, tools "
        f"{TOOL_S[0] * 1000:.0f}-{TOOL_S[1] * 1000:.0f} ms"
    )
    names = ("floor", "direct", "managed")
    print(
        f"{'run':>3}  {'critical path':>13}"
        + "".join(f"  {n + ' wall':>12}  {'ratio':>6}" for n in names)
    )
    for i, r in enumerate(rows, start=1):
        print(
            f"{i:>3}  {r['path']:>11.3f} s"
            + "".join(f"  {r[n]:>10.3f} s  {r[n] / r['path']:>6.3f}" for n in names)
        )
    floor = statistics.median(r["floor"] / r["path"] for r in rows)
    print(f"median bare asyncio floor (same sleeps, no engine): {floor:.3f}")
    ok = True
    for name, label in (
        ("direct", "Researcher.research"),
        ("managed", "RunManager + SQLite store"),
    ):
        ratio = statistics.median(r[name] / r["path"] for r in rows)
        extra_ms = statistics.median((r[name] - r["path"]) * 1000 / turns for r in rows)
        print(
            f"median {label}: wall / critical path = {ratio:.3f} "
            f"({extra_ms:+.2f} ms per turn)  {verdict(ratio)} (goal <= {GOAL})"
        )
        ok = ok and ratio <= GOAL
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rows = asyncio.run(bench(args.runs, args.turns, args.seed))
    sys.exit(0 if report(rows, args.turns) else 1)


if __name__ == "__main__":
    main()
