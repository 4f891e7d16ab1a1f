"""Soak: 100 runs in one process under injected faults, with one restart in the middle.

The real composition (`open_services`: store, runs service, engine, anthropic SDK) against the
local fakes: the Messages API drops about 10% of its streams mid-reply, the search provider
raises something unexpected about 5% of the time, the chat listener is slow and sometimes
fails (an event now and then, and about 5% of deliveries before the restart). Halfway, the
process "restarts": the services are shut down as on SIGTERM and opened again on the same
database, which recovers what was left.

Figure: runs that reached a final status, runs with evidence whose report was delivered, runs
stuck (queued, running or interrupted), and deliveries made twice. Goal: 100 of 100 final,
every report delivered, none stuck, none twice.

    python -m bench.soak            # about 20 s  (--runs 100 --seed 7)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bot.agent.report.model import Source
from bot.agent.web.search import SearchProvider, build_search
from bot.compose import open_services
from bot.config import Settings
from bot.domain import Request, RunRecord, RunStatus
from bot.runs.manager import Outcome
from tests.conftest import FAST_MODEL, TEST_MODEL
from tests.fakes.anthropic_api import FakeAnthropic, dropped, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb

REPORT = "# {topic}\n\n## TL;DR\n- Found what there was to find [1].\n"
UNFINISHED = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)


class Faults:
    """Every injected fault, drawn from one seeded generator so a run can be replayed."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.dropped_streams = 0
        self.raising_searches = 0
        self.failed_events = 0
        self.failed_deliveries = 0
        self.restarted = False

    def chance(self, p: float) -> bool:
        return self.random.random() < p


class FlakySearch:
    """The real Tavily provider, except that now and then it raises what nobody expected."""

    name = "flaky"

    def __init__(self, inner: SearchProvider, faults: Faults) -> None:
        self._inner = inner
        self._faults = faults

    async def search(self, query: str, max_results: int) -> list[Source]:
        if self._faults.chance(0.05):
            self._faults.raising_searches += 1
            raise RuntimeError("a bug in the search provider")
        return await self._inner.search(query, max_results)


class Model:
    """The fake model's script: search once, then report; about one stream in ten is cut."""

    def __init__(self, faults: Faults) -> None:
        self._faults = faults

    async def __call__(self, body: dict[str, Any]) -> Any:
        first = body["messages"][0]["content"]
        topic = str(first[0]["text"] if isinstance(first, list) else first)[-60:]
        searched = any(
            block.get("type") == "tool_result"
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
        )
        answer = (
            reply_text(REPORT.format(topic="Report"))
            if searched or body.get("tool_choice", {}).get("type") == "none"
            else reply_tools([("web_search", {"query": topic})])
        )
        if self._faults.chance(0.10):
            self._faults.dropped_streams += 1
            return dropped(answer, after=3)
        return answer


class ChatListener:
    """A chat platform that is slow, sometimes fails an event, and (before the restart)
    sometimes fails to deliver. Counts the deliveries that went through, per run."""

    def __init__(self, faults: Faults) -> None:
        self._faults = faults
        self.delivered: Counter[str] = Counter()
        self.finished = asyncio.Event()

    async def on_event(self, run: RunRecord, event: Any) -> None:
        await asyncio.sleep(self._faults.random.uniform(0, 0.02))
        if self._faults.chance(0.03):
            self._faults.failed_events += 1
            raise ConnectionError("chat platform hiccup")

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        await asyncio.sleep(self._faults.random.uniform(0, 0.05))
        if not self._faults.restarted and self._faults.chance(0.05):
            self._faults.failed_deliveries += 1
            raise ConnectionError("upload failed")
        if outcome.report is not None:
            self.delivered[run.run_id] += 1
        self.finished.set()


def settings_for(folder: Path, api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Settings:
    return Settings.from_mapping(
        {
            "ANTHROPIC_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": api.url,
            "RESEARCH_BOT_MODEL": TEST_MODEL,
            "RESEARCH_BOT_FAST_MODEL": FAST_MODEL,
            "RESEARCH_BOT_MODEL_MAX_RETRIES": "2",
            "TAVILY_API_KEY": "tvly-test",
            "TAVILY_BASE_URL": tavily.url,
            "RESEARCH_BOT_DB": str(folder / "soak.sqlite3"),
            "RESEARCH_BOT_FETCH_ALLOW_HOSTS": web.host_port,
            "RESEARCH_BOT_MAX_CONCURRENT_RUNS": "16",
        }
    )


async def soak(runs: int, seed: int) -> dict[str, Any]:
    faults = Faults(seed)
    listener = ChatListener(faults)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        async with (
            FakeWeb() as web,
            FakeAnthropic(min_cache_tokens=0) as api,
            FakeTavily(api_key="tvly-test", result_base=web.url) as tavily,
        ):
            api.responder = Model(faults)
            settings = settings_for(Path(folder), api, tavily, web)
            async with build_search(settings) as chain:
                search = FlakySearch(chain, faults)
                async with open_services(settings, search=search) as services:
                    ids = [
                        (await services.runs.submit(Request(topic=f"Company {n}"), listener)).run_id
                        for n in range(runs)
                    ]
                    while sum(listener.delivered.values()) < runs // 2:
                        listener.finished.clear()
                        await listener.finished.wait()
                # Leaving the block is SIGTERM: runs still going are left for the next start.
                faults.restarted = True
                async with open_services(settings, search=search) as services:
                    await services.runs.recover(lambda record: listener)
                    for run_id in ids:
                        await services.runs.wait(run_id)
                    records = [await services.store.get_run(run_id) for run_id in ids]
                    reports = [await services.store.report(run_id) for run_id in ids]
    with_report = [r for r, saved in zip(records, reports, strict=True) if saved is not None]
    return {
        "runs": runs,
        "final": sum(r.status not in UNFINISHED for r in records),
        "stuck": sum(r.status in UNFINISHED for r in records),
        "with_report": len(with_report),
        "delivered": sum(listener.delivered[r.run_id] >= 1 for r in with_report),
        "delivered_twice": sum(n > 1 for n in listener.delivered.values()),
        "endings": Counter(r.termination_reason for r in records),
        "faults": {
            "dropped streams": faults.dropped_streams,
            "raising searches": faults.raising_searches,
            "failed events": faults.failed_events,
            "failed deliveries": faults.failed_deliveries,
        },
        "seconds": time.monotonic() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    # The faults are on purpose: their log lines would bury the figures.
    logging.basicConfig(level=logging.CRITICAL)
    figures = asyncio.run(soak(args.runs, args.seed))
    print(f"runs                       {figures['runs']}")
    print(f"reached a final status     {figures['final']} / {figures['runs']}")
    print(f"stuck                      {figures['stuck']}")
    print(f"reports delivered          {figures['delivered']} / {figures['with_report']}")
    print(f"delivered twice            {figures['delivered_twice']}")
    print(f"endings                    {dict(figures['endings'])}")
    print(f"faults injected            {figures['faults']}")
    print(f"wall time                  {figures['seconds']:.1f} s")
    ok = (
        figures["final"] == figures["runs"]
        and figures["stuck"] == 0
        and figures["delivered"] == figures["with_report"]
        and figures["delivered_twice"] == 0
    )
    print("PASS" if ok else "FAIL", "(goal: all final, every report delivered, none twice)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
