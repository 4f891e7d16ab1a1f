"""Reuse instead of redoing, through the real composition against the fakes: a page a run of
the same workspace read recently is given from the store (marked reused, condensed once), never
to another workspace, not at all when RESEARCH_BOT_REUSE_DAYS is 0, and fetched as usual when
the store fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bot.agent.events import Ending, Event, Notice, ToolFinished
from bot.agent.trajectory import trajectory
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Origin, Request
from tests.conftest import FAST_MODEL, Recorder, world_env
from tests.fakes.anthropic_api import FakeAnthropic, Reply, reply, reply_text, reply_tools, tool_use
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb

PARAGRAPH = "Acme Robotics builds palletizing robots in Lyon and sells them across Europe. "
PARAGRAPHS = "".join(f"<p>{PARAGRAPH * 3} Fact {n}.</p>" for n in range(12))
PAGE = f"<html><head><title>About Acme</title></head><body><article>{PARAGRAPHS}</article></body>"
SUMMARY = "Acme Robotics builds palletizing robots in Lyon."
REPORT = (
    "# Acme Robotics\n\n## TL;DR\n- Acme Robotics builds palletizing robots in Lyon [1].\n\n"
    "## Overview\nAcme Robotics builds palletizing robots in Lyon [1].\n\n"
    "## Products and services\nPalletizing robots [1].\n\n"
    "## Customers and market\nIt sells them across Europe [1].\n"
)
T1 = Origin(platform="slack", workspace="T1", channel="C1", user="U1", private=False)
T2 = Origin(platform="slack", workspace="T2", channel="C1", user="U1", private=False)


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(str(block.get("text", block.get("content", ""))) for block in content)


class Model:
    """The fake model's side of the world: the researcher reads `url` once, then writes the
    report; condensing calls are counted and answered with a summary; the judge agrees."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.condensing = 0

    async def __call__(self, body: dict[str, Any]) -> Reply:
        last = _text(body["messages"][-1])
        if body["model"] == FAST_MODEL and "Condense the content" in last:
            self.condensing += 1
            return reply_text(SUMMARY)
        if any(tool["name"] == "record_verdicts" for tool in body.get("tools", [])):
            verdicts = [{"id": i, "verdict": "supported"} for i in range(1, 9)]
            return reply([tool_use("record_verdicts", {"claims": verdicts})], "tool_use")
        if body["model"] == FAST_MODEL:
            return reply_text("ok")
        if not any("tool_result" in str(m["content"]) for m in body["messages"]):
            return reply_tools([("read_page", {"url": self.url})])
        return reply_text(REPORT)


@asynccontextmanager
async def _world(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    **env: str,
) -> AsyncIterator[tuple[Services, Model]]:
    model = Model(web.page("/about", PAGE))
    anthropic_api.responder = model
    base = {**world_env(tmp_path, anthropic_api, tavily, web)}
    base["RESEARCH_BOT_COMPRESS_THRESHOLD_TOKENS"] = "500"
    async with open_services(Settings.from_mapping({**base, **env})) as services:
        yield services, model


async def _run(
    world: Services, origin: Origin, topic: str = "Acme Robotics", watch_id: str | None = None
) -> tuple[str, list[Event]]:
    recorder = Recorder()
    request = Request(topic=topic, origin=origin, watch_id=watch_id)
    record = await world.runs.submit(request, recorder)
    await asyncio.wait_for(recorder.finished.wait(), 30)
    assert recorder.outcome.ending is Ending.COMPLETED
    return record.run_id, await world.store.events(record.run_id)


def _notices(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


def _first_turns(api: FakeAnthropic) -> list[str]:
    """The first message of each research run's first request, in order."""
    return [
        _text(body["messages"][0])
        for body in api.requests
        if body["model"] != FAST_MODEL and len(body["messages"]) == 1
    ]


def _read(events: list[Event]) -> ToolFinished:
    [read] = [e for e in events if isinstance(e, ToolFinished) and e.name == "read_page"]
    assert not read.is_error
    return read


def _fetches(web: FakeWeb) -> Callable[[], int]:
    return lambda: sum(1 for r in web.requests if r.path == "/about")


async def test_a_page_read_in_the_workspace_is_given_again_marked_and_condensed_once(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    async with _world(tmp_path, anthropic_api, tavily, web) as (world, model):
        first_id, first = await _run(world, T1)
        second_id, second = await _run(world, T1.model_copy(update={"channel": "C2"}))
        fetches, condensing = _fetches(web)(), model.condensing
        _, elsewhere = await _run(world, T2)

    fetched, given = _read(first), _read(second)
    assert (fetches, condensing) == (1, 1)
    assert not fetched.reused and given.reused and given.compressed
    assert f"as run {first_id} read it on " in given.content
    assert SUMMARY in given.content and given.sources[0].url == fetched.sources[0].url
    [call] = trajectory(second_id, second)["turns"][0]["tool_calls"]
    assert call["reused"] is True
    # The second run starts from the first one's report, fenced after its task, and says so.
    day = datetime.now(UTC).date().isoformat()
    assert _notices(first) == [] and _notices(second) == [
        f"This workspace researched Acme Robotics on {day} (run {first_id}): this run starts "
        "from that report."
    ]
    opening = _first_turns(anthropic_api)
    assert "Earlier findings" not in opening[0]
    assert "Earlier findings: this team researched Acme Robotics" in opening[1]
    assert "<web_content>" in opening[1] and "## Customers and market" in opening[1]
    # Another workspace never gets it: no earlier report, and it reads and condenses the page.
    assert _notices(elsewhere) == [] and "Earlier findings" not in opening[2]
    assert not _read(elsewhere).reused
    assert (_fetches(web)(), model.condensing) == (2, 2)


async def test_a_private_conversations_report_is_started_from_only_in_it(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    private = T1.model_copy(update={"channel": "G1", "private": True})
    async with _world(tmp_path, anthropic_api, tavily, web) as (world, _):
        await _run(world, private)
        _, public = await _run(world, T1)
        _, same = await _run(world, private, " acme ROBOTICS")  # the same name

    assert _notices(public) == [] and not _read(public).reused
    assert len(_notices(same)) == 1 and _read(same).reused


async def test_reuse_days_zero_turns_it_off(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    async with _world(tmp_path, anthropic_api, tavily, web, RESEARCH_BOT_REUSE_DAYS="0") as (
        world,
        model,
    ):
        await _run(world, T1)
        _, again = await _run(world, T1)

    assert not _read(again).reused and _notices(again) == []
    assert _fetches(web)() == 2 and model.condensing == 2


async def test_a_watched_run_reads_its_pages_afresh(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    # A page remembered from last week would hide what changed on it since.
    async with _world(tmp_path, anthropic_api, tavily, web) as (world, _):
        await _run(world, T1)
        _, watched = await _run(world, T1, watch_id="w0a1b2c")

    assert not _read(watched).reused and _fetches(web)() == 2


async def test_a_failing_store_costs_only_the_saving(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    async with _world(tmp_path, anthropic_api, tavily, web) as (world, model):
        await _run(world, T1)
        for table in ("pages", "condensed_pages"):
            await world.store.database.write(lambda c, t=table: c.execute(text(f"DROP TABLE {t}")))
        _, again = await _run(world, T1)

    assert not _read(again).reused and SUMMARY in _read(again).content
    assert _fetches(web)() == 2 and model.condensing == 2
