"""`/research search` and `/research history` in the command service, once for every platform:
a person finds this workspace's reports, from public channels anywhere in it and from a private
conversation only there; each hit says its topic, date, asker, a snippet (stored text that
mentions nobody once the platform renders it) and where to open it. A real store; runs are
written to it as a finished run leaves them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.chat.commands import SEARCH_USAGE, parse_command
from bot.adapters.chat.service import Caller, CommandService
from bot.adapters.discord.service import DISCORD
from bot.adapters.slack.service import SLACK
from bot.agent.report.model import Report, Section
from bot.domain import Mode, Request, RunRecord, RunStatus
from bot.errors import RequestError
from bot.runs.manager import RunManager
from bot.store.runs import Store
from tests.adapters.scripted_engine import ScriptedEngine

ADA = Caller(
    platform="slack", workspace="T1", channel="C1", user="U1", user_name="ada", private=False
)
IN_PRIVATE = ADA.model_copy(
    update={"channel": "G9", "user": "U2", "user_name": "bob", "private": True}
)
ELSEWHERE = ADA.model_copy(update={"channel": "C2", "user": "U3", "user_name": "cy"})
OTHER_TEAM = ADA.model_copy(update={"workspace": "T2"})
ON_DISCORD = ADA.model_copy(update={"platform": "discord", "workspace": "T1"})
HOSTILE = "Robots for <!here> and <@U999> and @everyone, see <https://evil.example|this>"


class World:
    def __init__(self, store: Store, runs: RunManager) -> None:
        self.store = store
        self.slack = CommandService(runs, store, platform="slack", place="workspace")
        self.discord = CommandService(runs, store, platform="discord", place="server")

    async def report(self, caller: Caller, topic: str, body: str, thread: str) -> RunRecord:
        """A finished run asked for by `caller`, its report stored and its thread posted."""
        origin = caller.origin().model_copy(update={"thread": thread})
        run = await self.store.create_run(Request(topic=topic, mode=Mode.COMPANY, origin=origin))
        await self.store.set_location(run.run_id, channel=caller.channel, thread=thread)
        report = Report(title=topic, tldr=body, sections=[Section(heading="Overview", body=body)])
        markdown = f"# {topic}\n\n{body}\n"
        await self.store.finish_run(
            run.run_id, status=RunStatus.DONE, ending="completed", report=(report, markdown)
        )
        return run


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    store = await Store.open(tmp_path / "db.sqlite3")
    runs = RunManager(store, ScriptedEngine())
    yield World(store, runs)
    await runs.shutdown()
    await store.close()


async def test_public_reports_are_found_workspace_wide_and_private_ones_only_where_asked(
    world: World,
) -> None:
    public = await world.report(ADA, "Acme Robotics", "Acme builds warehouse robots.", "1.1")
    private = await world.report(IN_PRIVATE, "Acme Pricing", "Acme robots cost a lot.", "1.2")
    await world.report(OTHER_TEAM, "Acme Other", "Acme robots elsewhere.", "1.3")
    await world.report(ON_DISCORD, "Acme Discord", "Acme robots on Discord.", "1.4")

    def found(reply_lines: list[str]) -> set[str]:
        return {
            run for run in (public.run_id, private.run_id) if any(run in x for x in reply_lines)
        }

    from_elsewhere = await world.slack.search(ELSEWHERE, "robots")
    assert found(from_elsewhere.lines) == {public.run_id}
    from_private = await world.slack.search(IN_PRIVATE, "robots")
    assert found(from_private.lines) == {public.run_id, private.run_id}
    text = "\n".join(from_private.lines)
    assert "Acme Other" not in text and "Acme Discord" not in text
    assert from_private.title == "Past research in this workspace"


async def test_each_hit_says_when_who_what_and_where_to_open_it(world: World) -> None:
    linked = await world.report(ADA, "Acme Robotics", "Acme builds warehouse robots.", "1.1")
    unlinked = await world.report(ADA, "Beta Robotics", "Beta builds robots too.", "")
    links = {linked.run_id: "https://team.slack.example/archives/C1/p11"}
    asked: list[str] = []

    async def link(hit: Any) -> str | None:
        asked.append(hit.run_id)
        return links.get(hit.run_id)

    reply = await world.slack.search(ELSEWHERE, "robots", link=link)
    assert sorted(asked) == sorted([linked.run_id, unlinked.run_id])  # one call per hit
    entries = [reply.lines[n : n + 3] for n in range(0, len(reply.lines), 3)]
    by_run = {next(r for r in asked if r in entry[0]): entry for entry in entries}
    head, snippet, where = by_run[linked.run_id]
    assert f"`{linked.run_id}`" in head and "Acme Robotics" in head and "asked by ada" in head
    assert f"{linked.created_at:%Y-%m-%d}" in head
    assert "robots" in snippet.lower()
    assert where.strip() == "open: https://team.slack.example/archives/C1/p11"
    assert by_run[unlinked.run_id][2].strip() == f"open: `/research show {unlinked.run_id}`"


async def test_a_snippet_mentions_nobody_on_either_platform(world: World) -> None:
    await world.report(ADA, "Acme Robotics", HOSTILE, "1.1")
    await world.report(ON_DISCORD, "Acme Robotics", HOSTILE, "1.2")

    slack = (await world.slack.search(ELSEWHERE, "robots")).render(SLACK)
    assert "robots" in slack.lower()
    for ping in ("<!here>", "<@U999>", "<https://evil"):
        assert ping not in slack
    assert "@everyone" not in slack  # defused: a zero-width joiner after the @

    discord = (await world.discord.search(ON_DISCORD, "robots")).render(DISCORD)
    assert "robots" in discord.lower()
    assert "<@U999>" not in discord and "@everyone" not in discord


async def test_a_hit_stays_on_one_line_however_its_text_is_laid_out(world: World) -> None:
    await world.report(ADA, "Acme\nRobotics", "robots\n`fake` · 2020-01-01 · report", "1.1")
    reply = await world.slack.search(ADA, "robots")
    assert len(reply.lines) == 3
    assert all("\n" not in line for line in reply.lines)


async def test_no_hit_says_so_and_no_words_gets_the_usage(world: World) -> None:
    reply = await world.discord.search(ON_DISCORD, "nothing-like-this")
    assert reply.lines == []
    assert "No report of this server" in reply.text
    with pytest.raises(RequestError) as empty:
        parse_command("search   ")
    assert str(empty.value) == SEARCH_USAGE
    assert parse_command("search acme  pricing").words == "acme pricing"
    # A company whose name starts with the word is still researched.
    assert parse_command("Search Engine Land").kind == "research"


async def test_history_lists_a_private_conversations_runs_only_there(world: World) -> None:
    public = await world.report(ADA, "Acme Robotics", "Robots.", "1.1")
    private = await world.report(IN_PRIVATE, "Secret Acquisition", "Robots.", "1.2")

    elsewhere = "\n".join((await world.slack.history(ELSEWHERE)).lines)
    assert public.run_id in elsewhere
    assert private.run_id not in elsewhere and "Secret Acquisition" not in elsewhere
    there = "\n".join((await world.slack.history(IN_PRIVATE)).lines)
    assert public.run_id in there and private.run_id in there


def test_a_caller_whose_platform_did_not_say_is_private() -> None:
    unsaid = ADA.model_copy(update={"private": None})
    assert unsaid.origin().private is True
    assert ADA.origin().private is False
    assert IN_PRIVATE.origin().private is True
