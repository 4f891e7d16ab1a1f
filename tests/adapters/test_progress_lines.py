"""What a run's progress says on every front end: a step for every tool call whatever the model
put in its input, a page by its path (never its password), and a switch of model provider in
one line, on Discord (card and thread), Slack's streamed plan and the terminal."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from bot.adapters.chat.sink import StatusView
from bot.adapters.slack.plan import StreamPlan
from bot.adapters.terminal import TerminalProgress
from bot.agent.control import Control
from bot.agent.events import Event, ProviderSwitched, UsageRecorded
from bot.domain import Mode, Origin, Request, RunRecord, RunStatus
from tests.adapters.discord.world import DiscordBot, thread_posts
from tests.adapters.scripted_engine import ScriptedEngine
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_components import walk

HOSTILE_URL = "https://[click](javascript:alert(1))/"
ODD_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("read_page", {"url": HOSTILE_URL}),
    ("read_page", {"url": "https://reader:s3cret@news.example/2025/acme-raises-40m/?utm=x#top"}),
    ("web_search", {"query": ["not", "a", "string"]}),
    ("read_page", {"url": 42}),
)
"""What a model may put in a tool call's input: each must still make a step."""
STEPS = [
    "Reading: https://[click](javascript:alert(1))/",
    "Reading: news.example/2025/acme-raises-40m",
    "Searched: ['not', 'a', 'string']",
    "Reading: 42",
]
SWITCHED = "Model provider switched: anthropic failed, so openai (gpt-4.1-mini) took over."


class SwitchingEngine(ScriptedEngine):
    """The scripted run, whose provider chain moves to the next provider after its first turn."""

    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        async for event in super().research(run_id, request, control):
            yield event
            if isinstance(event, UsageRecorded):
                yield ProviderSwitched(
                    turn=1,
                    previous="anthropic:claude-test",
                    model="openai:gpt-4.1-mini",
                    message=SWITCHED,
                )


async def events_of(engine: ScriptedEngine) -> list[Event]:
    engine.release.set()
    return [e async for e in engine.research("r1", Request(topic="Acme Robotics"), Control())]


async def test_discord_shows_every_step_and_the_switch_in_the_thread(tmp_path: Path) -> None:
    async with FakeDiscord() as fake:
        engine = SwitchingEngine(calls=ODD_CALLS)
        bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
        try:
            run_id, message = await bot.research("Acme Robotics")
            await engine.parked(run_id).wait()
            engine.release.set()
            await bot.runs.wait(run_id)
        finally:
            await bot.stop()

    final = fake.find("PATCH", rf"/channels/\d+/messages/{message['id']}")[-1].body
    rows = [c["components"][0]["content"] for c in walk(final["components"]) if c["type"] == 9]
    assert len(rows) == len(ODD_CALLS)
    assert "news.example/2025/acme-raises-40m" in rows[1] and "Reading: 42" in rows[3]
    texts = [p.body["content"] for p in thread_posts(fake, message["id"])]
    steps = next(t for t in texts if t.startswith("• Reading"))
    assert len(steps.splitlines()) == len(ODD_CALLS)
    assert texts.count(SWITCHED) == 1
    assert "s3cret" not in str(fake.calls)


async def test_the_terminal_prints_every_step_and_the_switch_once() -> None:
    out = io.StringIO()
    view = StatusView(run_id="r1", topic="Acme", mode="company", requester="you")
    progress = TerminalProgress(Console(file=out, width=200), view)
    run = RunRecord(
        run_id="r1",
        topic="Acme Robotics",
        mode=Mode.COMPANY,
        origin=Origin(),
        status=RunStatus.RUNNING,
        created_at=datetime.now(UTC),
    )

    for event in await events_of(SwitchingEngine(calls=ODD_CALLS)):
        await progress.on_event(run, event)

    lines = out.getvalue().splitlines()
    assert [
        line for line in lines if line.startswith("[turn 1] Reading") or "Searched" in line
    ] == [f"[turn 1] {step}" for step in STEPS]
    assert lines.count(SWITCHED) == 1  # the run's, not a turn's


async def test_slacks_plan_has_a_task_for_every_step_and_the_switch() -> None:
    plan = StreamPlan("Acme Robotics")

    for event in await events_of(SwitchingEngine(calls=ODD_CALLS)):
        plan.apply(event)

    titles = [task.title for task in plan.tasks.values()]
    assert titles[: len(STEPS)] == STEPS
    assert SWITCHED in titles
