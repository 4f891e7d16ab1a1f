"""The command service's rules, once for every platform: which runs a person sees and shares
(their own platform and workspace only), who may press what on a running run, and what each
answer and refusal says. A real store and runs service with the scripted engine; the platforms'
own tests only check that they render these answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.adapters.chat.commands import DISCORD_USAGE, USAGE, parse_command
from bot.adapters.chat.service import Action, Caller, CommandService, Markup, Refused, Reply
from bot.agent.events import Usage, UsageRecorded
from bot.domain import Depth, Mode, Origin, Request, RunRecord, RunStatus
from bot.errors import RequestError
from bot.export import Format
from bot.runs.manager import RunManager
from bot.runs.quota import Quota, QuotaLimits
from bot.store.runs import Store
from tests.adapters.scripted_engine import ScriptedEngine
from tests.conftest import Recorder

ALICE = Caller(platform="discord", workspace="G1", channel="C1", user="100", user_name="Alice")
BOB = Caller(platform="discord", workspace="G1", channel="C1", user="200", user_name="Bob")
ELSEWHERE = ALICE.model_copy(update={"workspace": "G2"})
"""Alice's own id, in another guild: a forged press must not reach her run from there."""
SLACK_ALICE = ALICE.model_copy(update={"platform": "slack"})
"""The same ids on the other platform (one process may serve both)."""
PLAIN = Markup(escape=lambda text: text.replace("<", "&lt;"), mention=lambda u: f"@[{u}]", bold="*")


class World:
    def __init__(self, store: Store, runs: RunManager, engine: ScriptedEngine) -> None:
        self.store, self.runs, self.engine = store, runs, engine
        self.discord = CommandService(
            runs, store, platform="discord", place="server", usage=DISCORD_USAGE
        )
        self.slack = CommandService(runs, store, platform="slack", place="workspace")

    async def running(self, caller: Caller = ALICE, topic: str = "Acme Robotics") -> RunRecord:
        """A run started by `caller`, parked after its first turn."""
        service = self.slack if caller.platform == "slack" else self.discord
        record = await service.research(caller, topic, Recorder())
        await self.engine.parked(record.run_id).wait()
        return record

    async def finished(self, caller: Caller = ALICE) -> RunRecord:
        record = await self.running(caller)
        self.engine.release.set()
        await self.runs.wait(record.run_id)
        return record


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    store = await Store.open(tmp_path / "db.sqlite3")
    engine = ScriptedEngine()
    runs = RunManager(store, engine, quota=Quota(store, QuotaLimits(user_runs_per_hour=2)))
    yield World(store, runs, engine)
    await runs.shutdown()
    await store.close()


def _refusal(refused: pytest.ExceptionInfo[Refused]) -> str:
    return refused.value.reply.render(PLAIN)


# -- buttons and reactions -----------------------------------------------------------------------


async def test_anyone_in_the_workspace_may_ask_a_run_to_write_up(world: World) -> None:
    run = await world.running(ALICE)

    assert await world.discord.press(BOB, "summarize", run.run_id) == Reply(
        text="Writing up the report now."
    )
    await world.runs.wait(run.run_id)
    stored = await world.store.get_run(run.run_id)
    assert (stored.status, stored.termination_reason) == (RunStatus.DONE, "forced_synthesized")


async def test_only_the_requester_may_cancel_and_the_refusal_names_them(world: World) -> None:
    run = await world.running(ALICE)

    with pytest.raises(Refused) as refused:
        await world.discord.press(BOB, "cancel", run.run_id)
    assert refused.value.reply.mention == "100"
    assert _refusal(refused) == "Only @[100] can cancel this run."
    assert world.runs.get_active(run.run_id) is not None

    assert await world.discord.press(ALICE, "cancel", run.run_id) == Reply(
        text="Cancelling the run."
    )
    await world.runs.wait(run.run_id)
    assert (await world.store.get_run(run.run_id)).status is RunStatus.CANCELLED


@pytest.mark.parametrize("action", ["summarize", "cancel"])
@pytest.mark.parametrize(
    "presser", [ELSEWHERE, SLACK_ALICE], ids=["another workspace", "another platform"]
)
async def test_a_press_from_elsewhere_finds_the_run_finished(
    world: World, action: Action, presser: Caller
) -> None:
    run = await world.running(ALICE)
    service = world.slack if presser.platform == "slack" else world.discord
    control = world.engine.controls[run.run_id]

    with pytest.raises(Refused) as refused:
        await service.press(presser, action, run.run_id)

    assert _refusal(refused) == "That run has finished."
    assert not control.summarize_requested.is_set()
    assert not control.cancel_requested.is_set()
    assert world.runs.get_active(run.run_id) is not None


async def test_a_press_on_a_finished_or_unknown_run_says_it_has_finished(world: World) -> None:
    run = await world.finished(ALICE)
    actions: list[Action] = ["summarize", "cancel"]
    for run_id in (run.run_id, "nosuchrun"):
        for action in actions:
            with pytest.raises(Refused) as refused:
                await world.discord.press(ALICE, action, run_id)
            assert str(refused.value) == "That run has finished."


# -- history, usage, show, export ----------------------------------------------------------------


async def _stored(world: World, caller: Caller, topic: str, cost: float = 0.0) -> RunRecord:
    record = await world.store.create_run(Request(topic=topic, origin=caller.origin()))
    if cost:
        used = UsageRecorded(turn=1, model="m", usage=Usage(cost_usd=cost))
        await world.store.append_event(record.run_id, used)
    return record


async def test_history_and_usage_cover_this_workspace_on_this_platform(world: World) -> None:
    ours = await _stored(world, ALICE, "Acme <Robotics>", 0.25)
    await _stored(world, ELSEWHERE, "Initech", 4.0)
    await _stored(world, SLACK_ALICE, "Hooli", 9.0)

    history = await world.discord.history(BOB)
    assert history.title == "Recent research in this server"
    assert [line.split(" · ")[0] for line in history.lines] == [f"`{ours.run_id}`"]
    assert "Acme &lt;Robotics>" in history.render(PLAIN)

    usage = await world.discord.usage(BOB, 7)
    assert usage.title == "Research spend in this server"
    assert usage.lines[0].endswith("$0.25 · 1 run")
    assert usage.lines[-1] == "• Alice · $0.25 · 1 run"

    empty = await world.slack.history(SLACK_ALICE.model_copy(update={"workspace": "T9"}))
    assert empty.title == "Recent research in this workspace"
    assert empty.lines == ["No runs here yet. Start one with `/research <company>`."]


async def test_show_shares_a_report_of_this_workspace_only(world: World) -> None:
    run = await world.finished(ALICE)

    shared = await world.discord.show(BOB, f"`{run.run_id.upper()}`")
    assert (shared.run.run_id, shared.by, shared.filename) == (
        run.run_id,
        "200",
        f"acme-robotics-{run.run_id}.md",
    )
    assert shared.report.tldr == "Acme Robotics builds warehouse robots [1]."
    assert shared.markdown.startswith("# Acme Robotics")

    for service, caller, place in [
        (world.discord, ELSEWHERE, "server"),
        (world.slack, SLACK_ALICE, "workspace"),
    ]:
        with pytest.raises(Refused) as refused:
            await service.show(caller, run.run_id)
        assert str(refused.value) == (
            f"No run `{run.run_id}` in this {place}. `/research history` lists them."
        )


async def test_a_private_conversations_report_is_shown_and_exported_only_there(
    world: World,
) -> None:
    run = await world.finished(ALICE)  # C1 did not say it is public: private
    public = BOB.model_copy(update={"channel": "C2", "private": False})
    unknown = f"No run `{run.run_id}` in this server. `/research history` lists them."

    with pytest.raises(Refused) as refused:
        await world.discord.show(public, run.run_id)
    assert str(refused.value) == unknown
    with pytest.raises(Refused) as refused:
        await world.discord.export(public, run.run_id, Format.MD)
    assert str(refused.value) == unknown
    assert (await world.discord.show(BOB, run.run_id)).run.run_id == run.run_id


async def test_show_and_export_of_a_run_without_report_say_so(world: World) -> None:
    queued = await _stored(world, ALICE, "Acme")
    said = f"Run `{queued.run_id}` has no report (queued)."

    with pytest.raises(Refused) as refused:
        await world.discord.show(BOB, queued.run_id)
    assert str(refused.value) == said
    with pytest.raises(Refused) as refused:
        await world.discord.export(BOB, queued.run_id, Format.HTML)
    assert str(refused.value) == said
    with pytest.raises(RequestError, match=r"^Which run\?"):
        await world.discord.show(BOB, "not a run!")


async def test_export_follows_the_same_workspace_rule(world: World) -> None:
    run = await world.finished(ALICE)

    done = await world.discord.export(BOB, run.run_id, Format.HTML)
    assert done.run.run_id == run.run_id
    assert done.title == "Acme Robotics"
    assert done.file.filename == f"acme-robotics-{run.run_id}.html"
    assert done.file.data.startswith(b"<!DOCTYPE html>")

    with pytest.raises(Refused, match=r"^No run `"):
        await world.discord.export(ELSEWHERE, run.run_id, Format.MD)


# -- starting research ---------------------------------------------------------------------------


async def test_research_from_any_entry_point_needs_a_caller_a_text_and_a_listener(
    world: World,
) -> None:
    caller = BOB.model_copy(update={"locale": "de-DE"})
    listener = Recorder()

    record = await world.discord.research(caller, "deep contracts roads, Ireland", listener)

    assert (record.topic, record.mode, record.depth) == (
        "roads, Ireland",
        Mode.CONTRACTS,
        Depth.DEEP,
    )
    assert record.origin == Origin(
        platform="discord", workspace="G1", channel="C1", user="200", user_name="Bob"
    )
    assert record.language == "de"
    await world.engine.parked(record.run_id).wait()
    assert "run_started" in listener.kinds()
    world.engine.release.set()
    await world.runs.wait(record.run_id)


async def test_start_takes_a_parsed_command_and_refusals_say_what_to_do(world: World) -> None:
    record = await world.slack.start(SLACK_ALICE, parse_command("deep Acme"), Recorder())
    assert (record.topic, record.depth, record.origin.platform) == ("Acme", Depth.DEEP, "slack")
    await world.running(SLACK_ALICE)

    # The hourly limit (2 runs) refuses the third, storing nothing.
    with pytest.raises(RequestError, match=r"^Sorry, you have reached the limit of 2 research"):
        await world.slack.research(SLACK_ALICE, "Globex", Recorder())
    assert len(await world.store.list_runs()) == 2

    # A bad topic says so, with the platform's own usage.
    with pytest.raises(RequestError) as bad:
        await world.discord.research(ALICE, "   ", Recorder())
    assert str(bad.value).startswith("Tell me what to research")
    assert str(bad.value).endswith(DISCORD_USAGE)
    assert world.slack.help() == Reply(text=USAGE)
    world.engine.release.set()


# -- replies as text -----------------------------------------------------------------------------


def test_a_reply_is_escaped_by_its_platform_but_its_mention_is_ours() -> None:
    reply = Reply(text="Only {person} can cancel <this>.", mention="U1", title="T <1>")
    reply.lines.extend(["a <b>", "c"])

    assert reply.render(PLAIN) == "Only @[U1] can cancel &lt;this>.\n*T &lt;1>*\na &lt;b>\nc"
    # Without a mention field, the marker is just text: typed text cannot summon a mention.
    assert Reply(text="{person} <x>").render(PLAIN) == "{person} &lt;x>"
    assert Reply.of(RequestError("Too <long>")).render(PLAIN) == "Too &lt;long>"
