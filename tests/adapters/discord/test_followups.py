"""Follow-up questions in a run's Discord thread: the real discord.py client (started by
`serve_discord`) against the fake Discord, which sends the mention as a MESSAGE_CREATE; the real
follow-up engine against the fake Messages API, Tavily and web, or a scripted engine for the
refusals."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.compose import Services
from bot.domain import RunStatus
from bot.runs.quota import QuotaLimits
from tests.adapters.discord.world import DiscordBot, message_payloads, thread_posts
from tests.fakes.anthropic_api import FakeAnthropic, error, reply, reply_text, reply_tools, tool_use
from tests.fakes.discord_api import DiscordCall, FakeDiscord
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb

Json = Any
# The run searches (sources 1-3) and reads the article (4); its report cites the article first,
# so the report numbers it [1], and search result 1 [2].
REPORT = (
    "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [4].\n\n"
    "## Overview\nFounded in 2019 [4]. Listed in search results [1].\n"
)
REVISED = (
    "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [1].\n- It sells to grocers [2].\n\n"
    "## Overview\nFounded in 2019 [1].\n\n## Customers and market\nGrocers [2].\n"
)


def answer(text: str, **more: Any) -> Any:
    """A model turn that calls the follow-up's `answer` tool."""
    return reply([tool_use("answer", {"answer": text, **more})], "tool_use")


async def say(fake: FakeDiscord, where: str, text: str, person: Json | None = None) -> int:
    """`person` (alice) says `@research-bot text` in a channel or thread; returns the index of
    the fake's next call, to wait for the bot's answer after it."""
    world = fake.guild
    mark = len(fake.calls)
    content = f"<@{world.app_id}> {text}".rstrip()
    payload = world.chat_message(person or world.alice, where, content, mentions=(world.bot,))
    await fake.dispatch("MESSAGE_CREATE", payload)
    return mark


async def said(fake: FakeDiscord, where: str, after: int, words: str) -> DiscordCall:
    """The bot's first post in `where` since call `after` that contains `words`."""
    return await fake.wait_for_call(
        "POST",
        rf"/channels/{where}/messages",
        after=after,
        where=lambda call: words in str((call.body or {}).get("content")),
    )


# -- The real follow-up engine --------------------------------------------------------------


@pytest.fixture
async def done(
    world: Services, fake: FakeDiscord, anthropic_api: FakeAnthropic, web: FakeWeb
) -> AsyncIterator[tuple[DiscordBot, str, str]]:
    """The bot, and a finished run: (bot, run id, its thread's id)."""
    anthropic_api.script(
        reply_tools(
            [
                ("web_search", {"query": "Acme Robotics"}),
                ("read_page", {"url": web.url + ARTICLE_PATH}),
            ]
        ),
        reply_text(REPORT),
    )
    bot = await DiscordBot.serve(fake, world.store, world.runs)
    try:
        run_id, message = await bot.research("Acme Robotics")
        await bot.runs.wait(run_id)
        assert (await world.store.get_run(run_id)).status is RunStatus.DONE
        yield bot, run_id, message["id"]
    finally:
        await bot.stop(close_store=False)


async def _child(bot: DiscordBot, run_id: str) -> str:
    """The run's one follow-up, once it has finished (and been delivered)."""
    (child,) = await bot.store.follow_ups(run_id)
    await bot.runs.wait(child.run_id)
    return child.run_id


async def test_a_question_the_evidence_covers_is_answered_in_the_thread(
    done: tuple[DiscordBot, str, str], fake: FakeDiscord, anthropic_api: FakeAnthropic
) -> None:
    bot, run_id, thread = done
    searches = len([r for r in anthropic_api.requests if r.get("tools")])
    anthropic_api.script(answer("Acme raised $40 million in a Series B [1]."))

    mark = await say(fake, thread, "How much did they raise?")
    posted = await said(fake, thread, mark, "Series B")
    child = await _child(bot, run_id)

    text = posted.body["content"]
    assert text.startswith("Acme raised $40 million in a Series B [1].")
    assert re.search(rf"\[1\] \[.*\]\(<http://127\.0\.0\.1:\d+{ARTICLE_PATH}>\)", text), text
    assert "Answered from the run's sources · $" in text
    assert posted.authorization == f"Bot {fake.token}" and posted.body["allowed_mentions"] == {
        "parse": []
    }
    # Nothing else was said: no search, no file.
    after = thread_posts(fake, thread)[-1]
    assert after is posted and not posted.files
    stored = await bot.store.get_run(child)
    assert (stored.parent_run_id, stored.termination_reason) == (run_id, "answered")
    assert (stored.origin.thread, stored.origin.user) == (thread, fake.guild.alice["id"])
    # The question reached the model without the mention.
    question = str(anthropic_api.requests[-1]["messages"][0]["content"])
    assert "How much did they raise?" in question and f"<@{fake.guild.app_id}>" not in question
    assert len([r for r in anthropic_api.requests if r.get("tools")]) == searches + 1


async def test_a_question_that_needs_research_shows_its_search_once(
    done: tuple[DiscordBot, str, str],
    fake: FakeDiscord,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
) -> None:
    bot, run_id, thread = done
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics customers"})]),
        answer("They sell to grocers [3], and raised $40 million [1]."),
    )

    mark = await say(fake, thread, "Who are their customers?")
    await said(fake, thread, mark, "grocers")
    child = await _child(bot, run_id)

    texts = [p.body["content"] for p in thread_posts(fake, thread)[-2:]]
    assert texts[0] == "Looking beyond the report: Searched: Acme Robotics customers"
    assert texts[1].startswith("They sell to grocers [3]")
    assert "Researched further · $" in texts[1]
    assert (await bot.store.get_run(child)).termination_reason == "completed"
    assert tavily.requests[-1].query == "Acme Robotics customers"
    new = tavily.default_results("Acme Robotics customers")[0]["url"]
    assert "[3] " in texts[1] and new in texts[1]  # the new source, numbered after the run's


async def test_update_the_report_posts_v2_and_history_lists_the_follow_up(
    done: tuple[DiscordBot, str, str], fake: FakeDiscord, anthropic_api: FakeAnthropic
) -> None:
    bot, run_id, thread = done
    anthropic_api.script(
        answer("Updated: customers added [2].", update_report=True, updated_report=REVISED)
    )

    mark = await say(fake, thread, "Please update the report with their customers")
    upload = await fake.wait_for_call(
        "POST", rf"/channels/{thread}/messages", after=mark, where=lambda c: bool(c.files)
    )
    child = await _child(bot, run_id)

    ((filename, data),) = upload.files.items()
    assert filename == f"acme-robotics-{run_id}-v2.md"
    assert upload.body["content"] == "Report v2"
    assert "## Customers and market\n\nGrocers [2]." in data.decode()
    answered = thread_posts(fake, thread)[-2].body["content"]
    assert answered.startswith("Updated: customers added [2].")
    version, _, markdown = await bot.store.latest_report(run_id) or (0, None, "")
    assert version == 2 and markdown == data.decode()

    history = await bot.command(fake.guild.alice, "history")
    lines = history.splitlines()
    ran = next(i for i, line in enumerate(lines) if line.startswith(f"`{run_id}`"))
    assert lines[ran + 1].startswith(f"↳ `{child}` · follow-up: Please update the report")
    assert all(p["allowed_mentions"] == {"parse": []} for p in message_payloads(fake))

    # `show` posts the newest version, named as such.
    channel = fake.guild.channel_id
    before = len(fake.calls)
    assert "Posted the report" in await bot.command(fake.guild.alice, "show", run=run_id)
    shown = await fake.wait_for_call(
        "POST", rf"/channels/{channel}/messages", after=before, where=lambda c: bool(c.files)
    )
    ((filename, data),) = shown.files.items()
    assert filename == f"acme-robotics-{run_id}-v2.md" and data.decode() == markdown


async def test_a_failed_follow_up_says_what_happened_and_what_to_do(
    done: tuple[DiscordBot, str, str], fake: FakeDiscord, anthropic_api: FakeAnthropic
) -> None:
    bot, run_id, thread = done
    anthropic_api.script(error(500, "api_error", "boom", should_retry=False))

    mark = await say(fake, thread, "Who are their customers?")
    failed = await said(fake, thread, mark, "I couldn't answer that")
    child = await _child(bot, run_id)

    assert failed.body["content"].endswith(
        "try again in a few minutes. Mention me with the question to ask it again."
    )
    assert "could not answer" in failed.body["content"]
    assert (await bot.store.get_run(child)).status is RunStatus.FAILED


# -- Refusals and messages that are not questions (a scripted engine) -----------------------


@pytest.fixture
async def bot(fake: FakeDiscord, tmp_path: Path) -> AsyncIterator[DiscordBot]:
    running = await DiscordBot.start(
        fake, tmp_path / "db.sqlite3", quota=QuotaLimits(user_runs_per_hour=2)
    )
    yield running
    await running.stop()


async def test_a_question_while_the_run_researches_is_refused_and_bots_are_ignored(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    run_id, message = await bot.research("Acme Robotics")
    assert bot.engine is not None
    await bot.engine.parked(run_id).wait()
    thread = message["id"]
    other_bot = {**world.bob, "id": "1299999999999999999", "bot": True}

    await say(fake, thread, "Who are their customers?", person=world.bot)
    await say(fake, thread, "Who are their customers?", person=other_bot)
    mark = await say(fake, thread, "Who are their customers?")
    refused = await said(fake, thread, mark, "still researching")

    assert refused.body["content"] == (
        f"Run {run_id} is still researching: ask again once its report is in."
    )
    # Only the person's message was answered; no follow-up run was started.
    answers = [p for p in thread_posts(fake, thread) if "still" in p.body["content"]]
    assert answers == [refused]
    assert await bot.store.follow_ups(run_id) == []
    bot.engine.release.set()
    await bot.runs.wait(run_id)


async def test_an_empty_question_and_a_spent_quota_are_told_in_the_thread(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    assert bot.engine is not None
    bot.engine.release.set()
    run_id, message = await bot.research("Acme Robotics")
    await bot.runs.wait(run_id)
    thread = message["id"]

    mark = await say(fake, thread, "")
    empty = await said(fake, thread, mark, "Ask a question")
    assert empty.body["content"].startswith("Ask a question about the run")
    await bot.research("Globex")  # alice's second run this hour: her limit is 2
    mark = await say(fake, thread, "Who are their customers?")
    limited = await fake.wait_for_call("POST", rf"/channels/{thread}/messages", after=mark)
    assert "hour" in limited.body["content"], limited.body
    assert await bot.store.follow_ups(run_id) == []


async def test_a_mention_outside_a_run_thread_gets_a_one_line_hint(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    channel = fake.guild.channel_id
    mark = await say(fake, channel, "what can you do?")
    hint = await said(fake, channel, mark, "in its thread")
    assert hint.body["content"] == (
        "Ask me about a run by mentioning me in its thread. "
        "To start research, use `/research company name:<company>`."
    )
    assert await bot.store.list_runs() == []
