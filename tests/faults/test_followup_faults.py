"""Faults of a follow-up question in a chat thread: the process dying while it is answered, the
platform refusing its answer or its new report version, and a model's answer that tries to
ping people. The real bot (store, runs service, follow-up engine, SDK clients) against the fake
Messages API, Tavily, web, Slack and Discord; each "process" is one `open_services`."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import warnings
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    # discord.py imports `audioop`, deprecated on Python 3.11-3.12 (3.13 has audioop-lts).
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from bot.adapters.chat.followup_reply import REDELIVERED
from bot.adapters.slack.client import SlackBudget
from bot.adapters.slack.front import SlackFrontEnd
from bot.agent.followup.engine import ASKED_AGAIN
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Origin, Request, RunStatus
from tests.adapters.discord.test_followups import said, say
from tests.adapters.discord.world import DiscordBot, thread_posts
from tests.adapters.slack.world import button_value, serve, slack_settings
from tests.agent.followup.test_followup import research as terminal_research
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack, SlackSender
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb
from tests.process import Cli

REPORT = (
    "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [4].\n\n"
    "## Overview\nFounded in 2019 [4]. Listed in search results [1].\n"
)
REVISED = (
    "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [1].\n\n"
    "## Overview\nFounded in 2019 [1].\n\n## Customers and market\nGrocers [2].\n"
)


def answer(text: str, **more: Any) -> Any:
    """A model turn that calls the follow-up's `answer` tool."""
    return reply([tool_use("answer", {"answer": text, **more})], "tool_use")


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


class SlackBot:
    """One bot process on Slack: its services, front end and Slack's side of the wire."""

    def __init__(self, services: Services, front: SlackFrontEnd, sender: SlackSender) -> None:
        self.services, self.front, self.sender = services, front, sender
        self.store, self.runs = services.store, services.runs


@contextlib.asynccontextmanager
async def slack_bot(settings: Settings, slack: FakeSlack) -> AsyncIterator[SlackBot]:
    async with open_services(settings) as services:
        front = SlackFrontEnd(
            slack_settings(slack),
            services.runs,
            services.store,
            budget=SlackBudget(post_burst=100),
            edit_interval_s=0.0,
            followups=services.followups,
        )
        runner, sender = await serve(front, slack)
        try:
            yield SlackBot(services, front, sender)
        finally:
            await services.runs.shutdown()
            await runner.cleanup()


async def finished_run(
    bot: SlackBot, slack: FakeSlack, anthropic_api: FakeAnthropic, web: FakeWeb
) -> tuple[str, str]:
    """`/research Acme Robotics` in C1, researched and reported: (run id, its thread ts)."""
    anthropic_api.script(
        reply_tools(
            [
                ("web_search", {"query": "Acme Robotics"}),
                ("read_page", {"url": web.url + ARTICLE_PATH}),
            ]
        ),
        reply_text(REPORT),
    )
    before = len(slack.calls_to("chat.postMessage"))
    assert await bot.sender.command("Acme Robotics") == (200, "")
    parent = (await slack.wait_for("chat.postMessage", before + 1))[before]
    run_id = button_value(parent.args["blocks"], "research_summarize")
    await bot.runs.wait(run_id)
    record = await bot.store.get_run(run_id)
    assert record.status is RunStatus.DONE
    return run_id, record.origin.thread


def in_thread(ts: str, words: str = "") -> Any:
    return lambda call: call.args.get("thread_ts") == ts and words in call.args.get("text", "")


async def the_follow_up(bot: SlackBot, anthropic_api: FakeAnthropic, run_id: str) -> str:
    """The run's one follow-up (asked by a mention, taken on after the ack), once it ended."""
    await anthropic_api.wait_for_requests(1)
    (child,) = await bot.store.follow_ups(run_id)
    await bot.runs.wait(child.run_id)
    return child.run_id


async def dead_owner() -> str:
    """The owner of a run whose process is gone (a crash, not a clean stop)."""
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await process.wait()
    return f"{socket.gethostname()}:{process.pid}:0000"


# -- The process dies ------------------------------------------------------------------------


async def test_a_follow_up_whose_process_died_is_asked_again_and_answered_in_its_thread(
    settings: Settings, slack: FakeSlack, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    async with slack_bot(settings, slack) as bot:
        run_id, ts = await finished_run(bot, slack, anthropic_api, web)
        # The process died while a follow-up asked in the thread was being answered.
        origin = Origin(platform="slack", workspace="T1", channel="C1", thread=ts, user="U2")
        asked = Request(topic="How much did they raise?", origin=origin, parent_run_id=run_id)
        far = bot.store.now() + timedelta(hours=1)
        child = await bot.store.create_run(asked, owner=await dead_owner(), lease_until=far)
        await bot.store.mark_running(child.run_id)

    anthropic_api.script(answer("Acme raised $40 million in a Series B [1]."))
    async with slack_bot(settings, slack) as bot:
        assert await bot.front.recover() == [child.run_id]
        await bot.runs.wait(child.run_id)
        stored = await bot.store.get_run(child.run_id)

    notice, posted = slack.calls_to("chat.postMessage")[-2:]
    assert (notice.args["channel"], notice.args["thread_ts"]) == ("C1", ts)
    assert notice.args["text"] == ASKED_AGAIN
    assert (posted.args["channel"], posted.args["thread_ts"]) == ("C1", ts)
    assert posted.args["text"].startswith("Acme raised $40 million in a Series B [1].")
    assert ARTICLE_PATH in posted.args["blocks"][0]["text"]
    assert (stored.status, stored.termination_reason) == (RunStatus.DONE, "answered")
    assert stored.delivered_at is not None
    assert "How much did they raise?" in str(anthropic_api.requests[-1]["messages"][0])


async def test_an_answer_slack_refused_is_posted_once_at_the_next_start(
    settings: Settings, slack: FakeSlack, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    async with slack_bot(settings, slack) as bot:
        run_id, ts = await finished_run(bot, slack, anthropic_api, web)
        anthropic_api.script(answer("Founded in 2019 [1]."))
        # A rate limit is the SDK's to wait out; Slack failing (HTTP 500) is ours to keep.
        slack.rate_limit("chat.postMessage", retry_after=0)
        slack.fail(
            "chat.postMessage",
            "internal_error",
            status=500,
            times=1,
            where=lambda args: args.get("thread_ts") == ts,
        )
        anthropic_api.requests.clear()
        await bot.sender.mention("When was it founded?", event_id="Ev1", thread_ts=ts)
        child = await the_follow_up(bot, anthropic_api, run_id)
        assert (await bot.store.get_run(child)).delivered_at is None
        assert not [c for c in slack.calls_to("chat.postMessage") if "2019 [1]" in str(c.args)]
        asked = len(anthropic_api.requests)

    async with slack_bot(settings, slack) as bot:
        assert await bot.front.recover() == [child]
        await bot.runs.wait(child)
        stored = await bot.store.get_run(child)
    async with slack_bot(settings, slack) as bot:
        assert await bot.front.recover() == []

    note, posted = [c for c in slack.calls_to("chat.postMessage") if in_thread(ts)(c)][-2:]
    assert REDELIVERED.strip("_") in note.args["text"]
    assert posted.args["text"].startswith("Founded in 2019 [1].")
    assert "Answered from the run's sources" in posted.args["blocks"][0]["text"]
    assert stored.delivered_at is not None and len(anthropic_api.requests) == asked
    assert [c.status for c in slack.calls_to("chat.postMessage", ok_only=False)].count(429) == 1


async def test_a_refused_report_version_still_posts_the_answer_and_says_how_to_get_it(
    settings: Settings, slack: FakeSlack, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    async with slack_bot(settings, slack) as bot:
        run_id, ts = await finished_run(bot, slack, anthropic_api, web)
        anthropic_api.script(
            answer("Added their customers [2].", update_report=True, updated_report=REVISED)
        )
        slack.fail("files.getUploadURLExternal", "file_uploads_disabled", times=3)
        anthropic_api.requests.clear()
        await bot.sender.mention("Update the report with customers", event_id="Ev1", thread_ts=ts)
        child = await the_follow_up(bot, anthropic_api, run_id)
        stored = await bot.store.get_run(child)
        latest = await bot.store.latest_report(run_id)

    said = [c.args["text"] for c in slack.calls_to("chat.postMessage") if in_thread(ts)(c)]
    assert said[-2].startswith("Added their customers [2].")
    assert said[-1] == f"I couldn't attach report v2: `/research show {run_id}` posts it."
    assert stored.delivered_at is not None  # the answer reached the thread
    assert latest is not None and latest[0] == 2 and "Grocers [2]" in latest[2]


# -- Untrusted text ------------------------------------------------------------------------

PINGS = (
    "Ask @everyone and @here, <!channel>, <!here|here>, <@U123>, <@U123|bob>, "
    "<@123456789012345678> and <@&123456789012345679>: $40M [1]."
)
"""Slack's broadcasts and user mentions, then a Discord user's and role's."""


async def test_a_model_answer_that_tries_to_ping_pings_nobody_on_slack(
    settings: Settings, slack: FakeSlack, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    async with slack_bot(settings, slack) as bot:
        run_id, ts = await finished_run(bot, slack, anthropic_api, web)
        anthropic_api.script(answer(PINGS))
        anthropic_api.requests.clear()
        await bot.sender.mention("Who should I ask?", event_id="Ev1", thread_ts=ts)
        await the_follow_up(bot, anthropic_api, run_id)

    (posted,) = [c for c in slack.calls_to("chat.postMessage") if "$40M" in str(c.args)]
    for shown in (posted.args["text"], posted.args["blocks"][0]["text"]):
        for ping in ("<!channel>", "<!here", "<@U123", "@everyone", "@here"):
            assert ping not in shown, (ping, shown)
        assert "everyone" in shown and "U123" in shown  # shown as typed, but inert
    assert not posted.args.get("link_names")


@pytest.fixture
async def discord_api() -> AsyncIterator[FakeDiscord]:
    base = discord.http.Route.BASE
    async with FakeDiscord() as server:
        yield server
    discord.http.Route.BASE = base


async def test_an_answer_discord_refused_is_posted_once_at_the_next_start_pinging_nobody(
    settings: Settings, discord_api: FakeDiscord, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    fake = discord_api
    anthropic_api.script(
        reply_tools(
            [
                ("web_search", {"query": "Acme Robotics"}),
                ("read_page", {"url": web.url + ARTICLE_PATH}),
            ]
        ),
        reply_text(REPORT),
    )
    async with open_services(settings) as services:
        bot = await DiscordBot.serve(fake, services.store, services.runs)
        try:
            run_id, message = await bot.research("Acme Robotics")
            await bot.runs.wait(run_id)
            thread = message["id"]
            anthropic_api.script(answer(PINGS))
            fake.fail_next(
                "POST",
                rf"/channels/{thread}/messages",
                where=lambda call: "$40M" in str((call.body or {}).get("content")),
            )
            anthropic_api.requests.clear()
            await say(fake, thread, "Who should I ask?")
            await anthropic_api.wait_for_requests(1)
            (child,) = await bot.store.follow_ups(run_id)
            await bot.runs.wait(child.run_id)
            assert (await bot.store.get_run(child.run_id)).delivered_at is None
        finally:
            await bot.stop(close_store=False)

    async with open_services(settings) as services:
        mark = len(fake.calls)
        bot = await DiscordBot.serve(fake, services.store, services.runs)  # recovers at start
        try:
            posted = await said(fake, thread, mark, "$40M")
            await bot.runs.wait(child.run_id)
            stored = await bot.store.get_run(child.run_id)
        finally:
            await bot.stop(close_store=False)

    note = thread_posts(fake, thread)[-2]
    assert note.body["content"] == REDELIVERED and any(c is note for c in fake.calls[mark:])
    content = posted.body["content"]
    assert posted.body["allowed_mentions"] == {"parse": []}
    for ping in ("@everyone", "@here", "<@123456789012345678>", "<@&123456789012345679>"):
        assert ping not in content, (ping, content)
    assert "everyone" in content and stored.delivered_at is not None
    assert len(anthropic_api.requests) == 1  # delivered from the store, not asked again


# -- The terminal ----------------------------------------------------------------------------


async def test_resume_of_a_follow_up_the_terminal_left_asks_it_again_and_prints_the_answer(
    settings: Settings,
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
) -> None:
    cli = Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))
    async with open_services(settings) as services:
        run_id = await terminal_research(services, anthropic_api, web)
        asked = Request(topic="How much did they raise?", parent_run_id=run_id)
        far = services.store.now() + timedelta(hours=1)
        child = await services.store.create_run(asked, owner=await dead_owner(), lease_until=far)
        await services.store.mark_running(child.run_id)

    anthropic_api.script(answer("They raised $40 million [1]."))
    code, out, err = await cli.run("resume", child.run_id)
    assert code == 0, err
    assert out.startswith("They raised $40 million [1].") and ARTICLE_PATH in out
    assert f"Follow-up {child.run_id}: asking again" in err and "Traceback" not in err

    # Once answered, `resume` prints the stored answer again without asking the model.
    asked_model = len(anthropic_api.requests)
    code, again, _ = await cli.run("resume", child.run_id)
    assert (code, again) == (0, out) and len(anthropic_api.requests) == asked_model
