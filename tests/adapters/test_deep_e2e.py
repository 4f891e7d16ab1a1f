"""A deep run end to end from Slack and Discord: the real deep engine, runs service, store and SDK
clients against the fake Messages API (answered by `DeepScript`), Tavily and web; the real bolt
app and discord.py client against the fake Slack and Discord."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest

from bot.adapters.slack.client import SlackBudget
from bot.adapters.slack.front import SlackFrontEnd
from bot.compose import Services
from bot.domain import Depth, RunStatus
from tests.adapters.discord.world import (
    DiscordBot,
    card_text,
    custom_ids,
    message_payloads,
    status_message,
    thread_posts,
)
from tests.adapters.slack.world import EDITED, button_value, serve, slack_settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.deep_script import QUESTIONS, DeepScript
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import Call, FakeSlack
from tests.fakes.web import ARTICLE_PATH, FakeWeb

TLDR = "TL;DR: Acme Robotics builds warehouse robots [1]."


@pytest.fixture
def script(anthropic_api: FakeAnthropic, web: FakeWeb) -> DeepScript:
    script = DeepScript(article_url=f"{web.url}{ARTICLE_PATH}")
    anthropic_api.responder = script
    return script


def assert_deep_milestones(texts: list[str]) -> None:
    """The thread (each reply batches milestones, one `• …` line each): the plan, one finding
    per researcher in the order they finished, then the coverage check."""
    lines = [line for text in texts for line in text.splitlines()]
    plan = lines.index("• Plan: 3 researchers")
    assert lines[plan + 1 : plan + 4] == [f"{n}. {q}" for n, q in enumerate(QUESTIONS, 1)]
    findings = [i for i, line in enumerate(lines) if line.startswith("• Finding ")]
    assert sorted(lines[i] for i in findings) == [
        f"• Finding {n} done: {q} (4 sources, high confidence)" for n, q in enumerate(QUESTIONS, 1)
    ]
    checked = lines.index("• Coverage checked: 2 of 8 sections covered, 6 missing")
    assert plan < min(findings) and max(findings) < checked


# -- Slack ----------------------------------------------------------------------------------


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


def _rows(call: Call) -> str:
    """The researchers' section of a status message (after the status line), if it has one."""
    block = call.args["blocks"][2]
    return str(block["text"]["text"]) if block["type"] == "section" else ""


async def test_a_deep_run_from_slack_shows_its_researchers_and_uploads_the_report(
    world: Services, script: DeepScript, slack: FakeSlack
) -> None:
    script.hold = asyncio.Event()  # researchers stop after their search, until released
    # No edit throttling: the status message catches up with every state the run is in.
    front = SlackFrontEnd(
        slack_settings(slack, **EDITED),
        world.runs,
        world.store,
        budget=SlackBudget(post_burst=100, update_burst=100),
        edit_interval_s=0.0,
    )
    runner, sender = await serve(front, slack)
    try:
        assert await sender.command("deep Acme Robotics") == (200, "")
        parent = (await slack.wait_for("chat.postMessage"))[0]
        run_id = button_value(parent.args["blocks"], "research_summarize")
        ts = parent.response["ts"]
        searching = "\n".join(
            f"• *{n}.* {q} · Searched: {q} · 3 sources" for n, q in enumerate(QUESTIONS, 1)
        )
        await slack.wait_for("chat.update", where=lambda c: _rows(c) == searching)
        script.hold.set()
        await world.runs.wait(run_id)
        stored = await world.store.get_run(run_id)
    finally:
        await runner.cleanup()

    assert (stored.depth, stored.status, stored.termination_reason) == (
        Depth.DEEP,
        RunStatus.DONE,
        "completed",
    )
    final = slack.calls_to("chat.update")[-1]
    assert _rows(final) == "\n".join(
        f"✓ *{n}.* {q} · 4 sources" for n, q in enumerate(QUESTIONS, 1)
    )
    assert re.match(r"\*Done\* · turn \d+ · 10 sources", final.args["blocks"][1]["text"]["text"])
    assert button_value(final.args["blocks"], "research_cancel") == ""
    thread = slack.thread("C1", ts)
    assert_deep_milestones(thread)
    # A researcher's searches and reads are its row, not thread replies.
    assert not any("Searched:" in t or "Reading:" in t for t in thread)
    summary = next(t for t in thread if t.startswith("Done · "))
    assert TLDR in summary
    [shared] = slack.files.values()
    assert shared.filename == f"acme-robotics-{run_id}.md"
    assert (shared.channel, shared.thread_ts) == ("C1", ts)
    assert shared.initial_comment == "Report: Acme Robotics"
    report = shared.content.decode()
    assert report.startswith(f"# {script.title}\n")
    assert len(re.findall(r"^\d+\. \[", report, re.M)) == 10


# -- Discord --------------------------------------------------------------------------------


async def test_a_deep_run_from_discord_shows_its_researchers_and_uploads_the_report(
    world: Services, script: DeepScript
) -> None:
    async with FakeDiscord() as fake:
        bot = await DiscordBot.serve(fake, world.store, world.runs)
        try:
            answer = await bot.command(
                fake.guild.alice, "company", name="Acme Robotics", depth="deep"
            )
            found = re.search(r"run `(\w+)`", answer)
            assert found, answer
            run_id = found[1]
            message = status_message(fake, run_id)
            await bot.runs.wait(run_id)
            stored = await world.store.get_run(run_id)
        finally:
            await bot.stop(close_store=False)

    assert (stored.depth, stored.status, stored.termination_reason) == (
        Depth.DEEP,
        RunStatus.DONE,
        "completed",
    )
    final = fake.find("PATCH", rf"/channels/\d+/messages/{message['id']}")[-1].body
    assert custom_ids(final) == [f"rb:export:{run_id}"]
    (container,) = final["components"]
    rows = [c for c in container["components"] if c["type"] == 9]
    assert [(r["components"][0]["content"], r["accessory"]["label"]) for r in rows] == [
        (f"**{n}.** {q}", "✓ 4 sources") for n, q in enumerate(QUESTIONS, 1)
    ]
    lines = card_text(final).splitlines()
    assert any(line.startswith("**Sources:** 10") for line in lines), lines
    posts = thread_posts(fake, message["id"])
    texts = [p.body["content"] for p in posts]
    assert_deep_milestones(texts)
    assert not any("Searched:" in t or "Reading:" in t for t in texts)
    summary = next(t for t in texts if t.startswith("Done · "))
    assert TLDR in summary
    upload = posts[-1]
    ((filename, data),) = upload.files.items()
    assert filename == f"acme-robotics-{run_id}.md"
    assert upload.body["content"] == "Report: Acme Robotics"
    report = data.decode()
    assert report.startswith(f"# {script.title}\n")
    assert len(re.findall(r"^\d+\. \[", report, re.M)) == 10
    assert all(p["allowed_mentions"] == {"parse": []} for p in message_payloads(fake))
