"""Reuse: a second run on the same company within RESEARCH_BOT_REUSE_DAYS, against the first.

The real composition (`open_services`: runs service, SQLite store, engine, Anthropic SDK, page
fetcher and extraction worker) against the local fakes (Messages API, Tavily, a web of company
pages), in one process. The scripted model reads the same `--pages` pages in both runs, and the
second run one more page (news since the first); each page is long enough to be condensed.
Printed: pages fetched from the web and condensing calls of run 1 and run 2, and their ratios.
Goal: run 2 at most 20% of run 1 for both.

    python -m bench.reuse              # a few seconds
    python -m bench.reuse --pages 20
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Origin, Request
from tests.conftest import FAST_MODEL, Recorder, world_env
from tests.fakes.anthropic_api import FakeAnthropic, Reply, reply, reply_text, reply_tools, tool_use
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb

GOAL = 0.20
ORIGIN = Origin(platform="slack", workspace="T1", channel="C1", user="U1", private=False)
REPORT = (
    "# Acme Robotics\n\n## TL;DR\n- Acme Robotics builds palletizing robots [1].\n\n"
    "## Overview\nAcme Robotics builds palletizing robots [1].\n\n"
    "## Products and services\nPalletizing robots [2].\n\n"
    "## Recent news\nA new plant [3].\n"
)


def _page(n: int) -> str:
    line = f"Acme Robotics page {n}: palletizing robots, plants, customers and figures. "
    paragraphs = "".join(f"<p>{line * 4} Fact {n}.{k}.</p>" for k in range(12))
    return f"<html><head><title>Acme {n}</title></head><body><article>{paragraphs}</article></body>"


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else str(content)


class Model:
    """Reads `urls` in one turn, then writes; condensing calls are counted and summarized."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.condensing = 0

    async def __call__(self, body: dict[str, Any]) -> Reply:
        last = _text(body["messages"][-1])
        if body["model"] == FAST_MODEL and "Condense the content" in last:
            self.condensing += 1
            return reply_text("Acme Robotics builds palletizing robots.")
        if any(tool["name"] == "record_verdicts" for tool in body.get("tools", [])):
            verdicts = [{"id": i, "verdict": "supported"} for i in range(1, 9)]
            return reply([tool_use("record_verdicts", {"claims": verdicts})], "tool_use")
        if body["model"] == FAST_MODEL:
            return reply_text("ok")
        if not any("tool_result" in str(m["content"]) for m in body["messages"]):
            return reply_tools([("read_page", {"url": url}) for url in self.urls])
        return reply_text(REPORT)


async def _run(services: Services) -> None:
    recorder = Recorder()
    await services.runs.submit(Request(topic="Acme Robotics", origin=ORIGIN), recorder)
    await asyncio.wait_for(recorder.finished.wait(), 120)


async def measure(pages: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(pages fetched, condensing calls) of run 1 and of run 2."""
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            FakeAnthropic(min_cache_tokens=0) as api,
            FakeWeb() as web,
            FakeTavily(api_key="tvly-test", result_base=web.url) as tavily,
        ):
            urls = [web.page(f"/acme/{n}", _page(n)) for n in range(pages + 1)]
            model = Model()
            api.responder = model
            env = {**world_env(Path(tmp), api, tavily, web)}
            env["RESEARCH_BOT_COMPRESS_THRESHOLD_TOKENS"] = "500"
            figures = []
            async with open_services(Settings.from_mapping(env)) as services:
                for run_urls in (urls[:pages], urls):  # run 2: the same pages and one more
                    model.urls, model.condensing, before = run_urls, 0, len(web.requests)
                    await _run(services)
                    figures.append((len(web.requests) - before, model.condensing))
    return figures[0], figures[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10, help="pages run 1 reads")
    pages = parser.parse_args().pages
    (fetched1, condensed1), (fetched2, condensed2) = asyncio.run(measure(pages))
    fetch_ratio, condense_ratio = fetched2 / fetched1, condensed2 / condensed1
    print(f"run 1: {fetched1} pages fetched, {condensed1} condensing calls")
    print(f"run 2: {fetched2} pages fetched, {condensed2} condensing calls")
    print(f"ratios: pages {fetch_ratio:.0%}, condensing {condense_ratio:.0%} (goal <= {GOAL:.0%})")
    passed = fetch_ratio <= GOAL and condense_ratio <= GOAL
    print("PASS" if passed else "FAIL")
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
