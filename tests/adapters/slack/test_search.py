"""`/research search` and `/research history` on Slack, over the wire (the real bolt app against
the fake Slack): answered to the person alone, this workspace only; a private channel's report
found from it and not from a public channel; a public channel's found workspace-wide; each hit
with its thread's permalink, and stored text that pings nobody."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from itertools import count

import pytest
import pytest_asyncio

from bot.agent.report.model import Report, Section
from bot.domain import Mode, Origin, Request, RunRecord, RunStatus
from tests.adapters.slack.world import SlackWorld
from tests.fakes.slack_api import FakeSlack

HOSTILE = (
    "Robots for <!here> and <@U999>, see <https://evil.example|this> [it](https://evil.example)"
)
PUBLIC, PRIVATE, ELSEWHERE = "C301", "C302", "C303"

module_loop = pytest.mark.asyncio(loop_scope="module")
"""The tests share one bot (and its event loop): each searches for words of its own."""
_responses = count(1)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bot(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SlackWorld]:
    async with FakeSlack() as slack:
        running = await SlackWorld.start(slack, tmp_path_factory.mktemp("search") / "db.sqlite3")
        yield running
        await running.stop()


async def _report(
    bot: SlackWorld, topic: str, body: str, *, channel: str, private: bool, team: str = "T1"
) -> RunRecord:
    """A finished run of `team` asked in `channel`, its report stored and its thread posted."""
    thread = f"1700000000.{next(_responses):06d}"
    origin = Origin(
        platform="slack",
        workspace=team,
        channel=channel,
        user="U1",
        user_name="ada",
        private=private,
    )
    run = await bot.store.create_run(Request(topic=topic, mode=Mode.COMPANY, origin=origin))
    await bot.store.set_location(run.run_id, channel=channel, thread=thread)
    report = Report(title=topic, tldr=body, sections=[Section(heading="Overview", body=body)])
    await bot.store.finish_run(
        run.run_id, status=RunStatus.DONE, ending="completed", report=(report, f"# {topic}\n{body}")
    )
    return await bot.store.get_run(run.run_id)


async def _ask(bot: SlackWorld, text: str, channel: str, channel_name: str = "general") -> str:
    """The ephemeral answer to `/research <text>` typed in `channel`: in the ack itself (a
    command that cannot be read), else through the response URL."""
    before = len(bot.slack.calls_to("response_url"))
    status, body = await bot.sender.command(text, channel=channel, channel_name=channel_name)
    assert status == 200
    answer = json.loads(body) if body else None
    if answer is None:
        answer = (await bot.slack.wait_for("response_url", before + 1))[before].args
    assert answer["response_type"] == "ephemeral"
    return str(answer["text"])


@module_loop
async def test_a_private_channels_report_is_found_only_there_and_a_public_ones_anywhere(
    bot: SlackWorld,
) -> None:
    public = await _report(bot, "Zephyr Robotics", "Zephyr robots.", channel=PUBLIC, private=False)
    private = await _report(bot, "Zephyr Merger", "Zephyr secrets.", channel=PRIVATE, private=True)
    other = await _report(
        bot, "Zephyr Elsewhere", "Zephyr abroad.", channel=PUBLIC, private=False, team="T2"
    )

    from_public = await _ask(bot, "search zephyr", ELSEWHERE)
    assert f"`{public.run_id}`" in from_public
    assert private.run_id not in from_public and "Merger" not in from_public
    from_private = await _ask(bot, "search zephyr", PRIVATE, "privategroup")
    assert f"`{public.run_id}`" in from_private and f"`{private.run_id}`" in from_private
    assert other.run_id not in from_public + from_private  # another workspace's, never


@module_loop
async def test_history_lists_a_private_channels_runs_only_there(bot: SlackWorld) -> None:
    public = await _report(bot, "Quokka Ltd", "Quokka.", channel=PUBLIC, private=False)
    private = await _report(bot, "Quokka Secret", "Quokka.", channel=PRIVATE, private=True)

    from_public = await _ask(bot, "history", ELSEWHERE)
    assert public.run_id in from_public and private.run_id not in from_public
    from_private = await _ask(bot, "history", PRIVATE, "privategroup")
    assert public.run_id in from_private and private.run_id in from_private


@module_loop
async def test_a_hit_links_its_thread_and_its_stored_text_pings_nobody(bot: SlackWorld) -> None:
    run = await _report(bot, "Yonder <@U999> Robotics", HOSTILE, channel=PUBLIC, private=False)

    answer = await _ask(bot, "search robots yonder", ELSEWHERE)

    assert f"`{run.run_id}`" in answer and "asked by ada" in answer
    assert f"{run.created_at:%Y-%m-%d}" in answer
    permalink = bot.slack.calls_to("chat.getPermalink")[-1]
    assert permalink.args == {"channel": PUBLIC, "message_ts": run.origin.thread}
    assert f"open: {permalink.response['permalink']}" in answer
    for ping in ("<!here>", "<@U999>", "<https://evil"):
        assert ping not in answer
    assert "&lt;@U999&gt;" in answer  # shown as typed, a mention of nobody


@module_loop
async def test_a_thread_slack_will_not_link_names_the_show_command(bot: SlackWorld) -> None:
    run = await _report(bot, "Xenon Robotics", "Xenon robots.", channel=PUBLIC, private=False)
    bot.slack.fail("chat.getPermalink", "message_not_found")

    answer = await _ask(bot, "search xenon", ELSEWHERE)

    assert f"open: `/research show {run.run_id}`" in answer


@module_loop
async def test_no_words_get_the_usage_and_nothing_found_one_line(bot: SlackWorld) -> None:
    assert (await _ask(bot, "search", ELSEWHERE)).startswith("Search for what?")
    nothing = await _ask(bot, "search xylophonic", ELSEWHERE)
    assert nothing.startswith("No report of this workspace") and "\n" not in nothing
