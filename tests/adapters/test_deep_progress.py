"""A deep run as people watch it: one row per researcher in the status message (Slack, Discord)
and in the terminal's live table; the plan, each finding and the draft as thread milestones."""

from __future__ import annotations

import asyncio
import io
import json
import re
import warnings
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

    from bot.adapters.discord.card import CardParts, run_card

from bot.adapters.chat.sink import ResearcherRow, StatusView
from bot.adapters.slack.client import SlackBudget
from bot.adapters.slack.front import SlackFrontEnd
from bot.adapters.slack.render import SECTION_CHARS, status_blocks
from bot.adapters.terminal import TerminalProgress
from bot.agent.control import Control
from bot.agent.events import TurnStarted
from bot.domain import Depth, Mode, Origin, Request, RunRecord, RunStatus
from bot.runs.manager import RunManager
from bot.store.runs import Store
from tests.adapters.deep_engine import FUNDING, HOSTILE, DeepScriptedEngine
from tests.adapters.discord.world import DiscordBot, card_text, message_payloads, thread_posts
from tests.adapters.slack.world import EDITED, SlackWorld, serve, slack_settings
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack

SLACK_HOSTILE = (
    "What does Acme sell &lt;!here&gt; to @\u2060everyone and &lt;@123456789012345678&gt;?"
)
"""HOSTILE as Slack must receive it: shown as typed, pinging nobody."""
SLACK_PINGS = ("<!here>", "@everyone", "<@123456789012345678>")
DISCORD_PINGS = ("@everyone", "<@123456789012345678>")


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def slack_bot(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[SlackWorld]:
    """The Slack world with a deep engine and no edit throttling, so that the status message
    catches up with every state the run parks in."""
    store = await Store.open(tmp_path / "db.sqlite3")
    engine = DeepScriptedEngine()
    runs = RunManager(store, engine)
    front = SlackFrontEnd(
        slack_settings(slack, **EDITED),
        runs,
        store,
        budget=SlackBudget(post_burst=100, update_burst=100),
        edit_interval_s=0.0,
    )
    runner, sender = await serve(front, slack)
    bot = SlackWorld(slack, store, engine, runs, front, sender, runner)
    yield bot
    await bot.stop()


def _rows_text(call_args: dict[str, Any]) -> str:
    """The researchers' section of a status message (the one after the status line)."""
    return str(call_args["blocks"][2]["text"]["text"])


async def test_slack_shows_each_researcher_and_posts_milestones(
    slack_bot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, ts = await slack_bot.research("Acme Robotics")
    await slack_bot.engine.parked(run_id).wait()

    working = await slack.wait_for(
        "chat.update", where=lambda c: "Reading: docs.example" in json.dumps(c.args["blocks"])
    )
    blocks = working[-1].args["blocks"]
    assert "*Researching* · 3 sources" in blocks[1]["text"]["text"]
    assert _rows_text(working[-1].args) == (
        "✓ *1.* Who funds Acme Robotics? · 2 sources\n"
        f"• *2.* {SLACK_HOSTILE} · Reading: docs.example/acme · 2 sources"
    )

    slack_bot.engine.release.set()
    await slack_bot.runs.wait(run_id)

    final = slack.calls_to("chat.update")[-1].args
    assert _rows_text(final) == (
        f"✓ *1.* Who funds Acme Robotics? · 2 sources\n✓ *2.* {SLACK_HOSTILE} · 3 sources"
    )
    assert "*Done* · 4 sources" in final["blocks"][1]["text"]["text"]
    milestones = [t for t in slack.thread("C1", ts) if t.startswith("•")]
    assert milestones == [
        f"• Plan: 2 researchers\n1. {FUNDING}\n2. {SLACK_HOSTILE}",
        f"• Finding 1 done: {FUNDING} (2 sources, high confidence)",
        f"• Finding 2 done: {SLACK_HOSTILE} (3 sources, medium confidence, turn limit reached)\n"
        "• Coverage checked: 1 of 2 sections covered, 1 thin",
    ]
    sent = " ".join(c.dump() for c in slack.calls)
    assert not any(ping in sent for ping in SLACK_PINGS)
    assert (await slack_bot.store.get_run(run_id)).status == RunStatus.DONE


async def test_discord_shows_each_researcher_and_posts_milestones(tmp_path: Path) -> None:
    async with FakeDiscord() as fake:
        engine = DeepScriptedEngine()
        bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
        try:
            run_id, message = await bot.research("Acme Robotics")
            await engine.parked(run_id).wait()
            engine.release.set()
            await bot.runs.wait(run_id)
        finally:
            await bot.stop()

    final = fake.find("PATCH", rf"/channels/\d+/messages/{message['id']}")[-1].body
    lines = card_text(final).splitlines()
    assert "**Sources:** 4 · **Cost:** $0.02" in lines
    (container,) = final["components"]
    rows = [c for c in container["components"] if c["type"] == 9]
    assert rows[0]["components"][0]["content"] == "**1.** Who funds Acme Robotics?"
    assert rows[0]["accessory"]["label"] == "✓ 2 sources"
    assert rows[1]["components"][0]["content"].startswith("**2.** What does Acme sell")
    assert rows[1]["accessory"]["label"] == "✓ 3 sources"
    texts = [p.body["content"] for p in thread_posts(fake, message["id"])]
    milestones = [t for t in texts if t.startswith("•")]
    assert [m.split("\n")[0] for m in milestones] == [
        "• Plan: 2 researchers",
        f"• Finding 1 done: {FUNDING} (2 sources, high confidence)",
        "• Finding 2 done: What does Acme sell <!here> to @\u2060everyone and "
        "<@\u200b123456789012345678>? (3 sources, medium confidence, turn limit reached)",
    ]
    assert milestones[-1].endswith("\n• Coverage checked: 1 of 2 sections covered, 1 thin")
    # A researcher's searches and reads are its row, not thread replies.
    assert not any("Searched:" in t or "Reading:" in t for t in texts)
    payloads = message_payloads(fake)
    assert all(p["allowed_mentions"] == {"parse": []} for p in payloads)
    assert not any(
        ping in json.dumps(p, ensure_ascii=False) for p in payloads for ping in DISCORD_PINGS
    )


def _nine_long_hostile_rows() -> StatusView:
    question = "Is <@123456789012345678> & @here " + "very " * 80 + "long?"
    view = StatusView(run_id="r1", topic="Acme", mode="company", requester="U1")
    view.researchers = [
        ResearcherRow(agent=n, question=question, action="Searched: " + "&" * 150, sources=n)
        for n in range(1, 10)
    ]
    return view


def test_rows_stay_short_and_inert_within_platform_limits() -> None:
    view = _nine_long_hostile_rows()

    rows = status_blocks(view, "r1", buttons=True)[2]["text"]["text"]
    assert len(rows) <= SECTION_CHARS
    assert len(rows.splitlines()) == 9
    assert all(len(line) < 250 for line in rows.splitlines())
    assert "<@123" not in rows and "@here" not in rows

    card = run_card(view, CardParts(buttons=True))
    sections = [c for c in card.walk_children() if c.type is discord.ComponentType.section]
    assert len(sections) == 9 and card.content_length() <= 4000
    texts = [c.content for c in card.walk_children() if isinstance(c, discord.ui.TextDisplay)]
    assert all(len(text) < 300 for text in texts[1:])
    shown = "\n".join(texts)
    assert "<@123456789012345678>" not in shown and "@here" not in shown


def test_a_quick_run_has_no_researcher_rows() -> None:
    view = StatusView(run_id="r1", topic="Acme", mode="company", requester="U1", sources=2)
    assert len(status_blocks(view, "r1", buttons=True)) == 4
    card = run_card(view, CardParts(buttons=True))
    assert not [c for c in card.walk_children() if c.type is discord.ComponentType.section]


def _run() -> RunRecord:
    return RunRecord(
        run_id="r1",
        topic="Acme Robotics",
        mode=Mode.COMPANY,
        depth=Depth.DEEP,
        origin=Origin(),
        status=RunStatus.RUNNING,
        created_at=datetime.now(UTC),
    )


async def _follow(engine: DeepScriptedEngine, progress: TerminalProgress) -> asyncio.Task[None]:
    """Feed the deep run's events to the terminal, as the runs service would, after the turn in
    which the real engine's planner makes its plan."""
    run = _run()

    async def feed() -> None:
        request = Request(topic=run.topic)
        await progress.on_event(run, TurnStarted(turn=1))
        async for event in engine.research(run.run_id, request, Control()):
            await progress.on_event(run, event)

    return asyncio.create_task(feed())


async def test_the_terminal_draws_a_live_table_of_researchers() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=160)
    progress = TerminalProgress(
        console, StatusView(run_id="r1", topic="Acme", mode="company", requester="you")
    )
    engine = DeepScriptedEngine()
    feeding = await _follow(engine, progress)
    await engine.parked("r1").wait()
    progress.close()
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    engine.release.set()
    await feeding

    assert re.search(r"sub-question\s+doing\s+sources\s+done", drawn)
    assert re.search(r"1\s+Who funds Acme Robotics\?\s+2\s+✓", drawn)
    assert re.search(r"2\s+What does Acme sell .*Reading: docs\.example/acme\s+2\s*$", drawn, re.M)
    assert "turn 1" not in drawn  # the planner's turn: nothing a person can follow


async def test_terminal_lines_say_which_researcher_did_what() -> None:
    out = io.StringIO()
    progress = TerminalProgress(
        Console(file=out, width=200),
        StatusView(run_id="r1", topic="Acme", mode="company", requester="you"),
    )
    engine = DeepScriptedEngine()
    engine.release.set()
    await (await _follow(engine, progress))

    lines = out.getvalue().splitlines()
    assert lines[:3] == ["Plan: 2 researchers", f"1. {FUNDING}", f"2. {HOSTILE}"]
    assert "[researcher 1] Searched: Acme Robotics investors" in lines
    assert "[researcher 2] Reading: docs.example/acme" in lines
    assert not [line for line in lines if line.startswith("[turn")]
    assert f"Finding 2 done: {HOSTILE} (3 sources, medium confidence, turn limit reached)" in lines
    assert "Coverage checked: 1 of 2 sections covered, 1 thin" in lines
