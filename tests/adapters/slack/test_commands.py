"""`/research` beyond a plain run: usage, history, spend and show scoped to the workspace, the
hourly limit per person, refused signatures, channels the bot is not in, and recovery into the
old thread after a restart."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.agent.control import Control
from bot.agent.events import Event, Usage, UsageRecorded
from bot.domain import Depth, Mode, Origin, Request, RunStatus
from bot.runs.quota import QuotaLimits
from tests.adapters.scripted_engine import ScriptedEngine
from tests.adapters.slack.world import EDITED, SlackWorld, button_value
from tests.fakes.slack_api import FakeSlack
from tests.process import eventually


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def bot(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[SlackWorld]:
    """One bot process with the scripted engine (the `world` fixture is the real engine's)."""
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3")
    yield bot
    await bot.stop()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "Tell me what to research"),
        ("   ", "Tell me what to research"),
        ("x" * 301, "301 characters"),
        ("help", "Usage"),
        ("show", "Which run?"),
        ("contracts", "Tell me what to research"),
        ("deep", "Deep research on what?"),
        ("DEEP   ", "Deep research on what?"),
        ("deep contracts", "Tell me what to research"),
        ("deep " + "x" * 301, "301 characters"),
        ("usage 0", "from 1 to 366 days"),
    ],
)
async def test_bad_input_gets_a_short_private_usage(
    bot: SlackWorld, slack: FakeSlack, text: str, says: str
) -> None:
    status, body = await bot.sender.command(text)

    assert status == 200
    answer = json.loads(body)
    assert says in answer["text"]
    assert answer["response_type"] == "ephemeral"
    assert "<company>" not in answer["text"]
    assert await bot.store.list_runs() == []
    assert slack.calls_to("chat.postMessage") == []


async def test_help_lists_deep_research(bot: SlackWorld) -> None:
    _, body = await bot.sender.command("help")
    text = json.loads(body)["text"]
    assert "`/research deep &lt;company&gt;`" in text
    assert "`/research deep contracts &lt;filters&gt;`" in text
    assert "`/research company deep instinct`" in text and "`/research Deep Instinct`" in text
    assert "`/research watch &lt;company&gt; [daily|weekdays|weekly|monthly] [deep]`" in text


@pytest.mark.parametrize(
    ("text", "topic", "mode", "depth"),
    [
        ("deep Acme Robotics", "Acme Robotics", Mode.COMPANY, Depth.DEEP),
        (
            "Deep  contracts road maintenance, Ireland",
            "road maintenance, Ireland",
            Mode.CONTRACTS,
            Depth.DEEP,
        ),
        ("Acme Robotics", "Acme Robotics", Mode.COMPANY, Depth.QUICK),
        ("contracts deep sea mining", "deep sea mining", Mode.CONTRACTS, Depth.QUICK),
        # A company whose name starts with a mode word: capitalised, or after `company`.
        ("Deep Instinct", "Deep Instinct", Mode.COMPANY, Depth.QUICK),
        ("Contracts Finder", "Contracts Finder", Mode.COMPANY, Depth.QUICK),
        ("company deep instinct", "deep instinct", Mode.COMPANY, Depth.QUICK),
        ("deep Deep Instinct", "Deep Instinct", Mode.COMPANY, Depth.DEEP),
        ("deep company contracts finder", "contracts finder", Mode.COMPANY, Depth.DEEP),
    ],
)
async def test_deep_research_reaches_the_runs_service(
    bot: SlackWorld, text: str, topic: str, mode: Mode, depth: Depth
) -> None:
    run_id, _ = await bot.research(text)

    run = await bot.store.get_run(run_id)
    assert (run.topic, run.mode, run.depth) == (topic, mode, depth)
    bot.engine.release.set()
    await bot.runs.wait(run_id)


async def test_history_lists_this_workspace_only(bot: SlackWorld, slack: FakeSlack) -> None:
    for team, platform, topic in [
        ("T1", "slack", "Acme"),
        ("T2", "slack", "Initech"),
        ("T1", "discord", "Hooli"),
        ("T1", "slack", "Globex & Co"),
    ]:
        origin = Origin(platform=platform, workspace=team, channel="C1", user="U1")
        await bot.store.create_run(Request(topic=topic, origin=origin))

    assert await bot.sender.command("history", team="T1") == (200, "")
    answer = (await slack.wait_for("response_url"))[0].args

    assert answer["response_type"] == "ephemeral"
    assert "Acme" in answer["text"]
    assert "Globex &amp; Co" in answer["text"]
    assert "Initech" not in answer["text"]
    assert "Hooli" not in answer["text"]


async def test_history_marks_deep_runs(bot: SlackWorld, slack: FakeSlack) -> None:
    origin = Origin(platform="slack", workspace="T1", channel="C1", user="U1")
    await bot.store.create_run(Request(topic="Acme", origin=origin))
    await bot.store.create_run(
        Request(topic="Globex", mode=Mode.CONTRACTS, origin=origin, depth=Depth.DEEP)
    )

    await bot.sender.command("history", team="T1")
    lines = (await slack.wait_for("response_url"))[0].args["text"].splitlines()

    assert next(line for line in lines if "Globex" in line).count("contracts (deep)") == 1
    assert "deep" not in next(line for line in lines if "Acme" in line)


async def test_usage_shows_this_workspace_spend_per_day_and_per_person(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    for team, user, name, cost in [
        ("T1", "U1", "alice", 0.25),
        ("T1", "U1", "alice", 0.05),
        ("T1", "U2", "<bob>", 1.5),
        ("T2", "U3", "carol", 9.0),
    ]:
        origin = Origin(platform="slack", workspace=team, channel="C1", user=user, user_name=name)
        run = await bot.store.create_run(Request(topic="Acme", origin=origin))
        used = Usage(input_tokens=10, cost_usd=cost)
        await bot.store.append_event(run.run_id, UsageRecorded(turn=1, model="m", usage=used))

    assert await bot.sender.command("usage", team="T1") == (200, "")
    answer = (await slack.wait_for("response_url"))[0].args

    assert answer["response_type"] == "ephemeral"
    lines = answer["text"].splitlines()
    today = bot.store.now().date().isoformat()
    assert lines[0] == "*Research spend in this workspace*"
    assert lines[1] == f"Total for the last 7 days (UTC, since {_days_ago(bot, 6)}): $1.80 · 3 runs"
    assert lines[2:] == [
        "By day:",
        f"• {today} · $1.80 · 3 runs",
        "By person:",
        "• &lt;bob&gt; · $1.50 · 1 run",
        "• alice · $0.30 · 2 runs",
    ]
    assert "carol" not in answer["text"]

    await bot.sender.command("usage 30", team="T3")
    answer = (await slack.wait_for("response_url", 2))[1].args
    assert answer["text"].endswith("No runs here in the last 30 days.")


def _days_ago(bot: SlackWorld, days: int) -> str:
    return (bot.store.now().date() - timedelta(days=days)).isoformat()


async def test_a_person_over_the_hourly_limit_is_told_privately_when_to_ask_again(
    slack: FakeSlack, tmp_path: Path
) -> None:
    bot = await SlackWorld.start(
        slack, tmp_path / "db.sqlite3", quota=QuotaLimits(user_runs_per_hour=1)
    )
    try:
        run_id, _ = await bot.research("Acme Robotics")

        assert await bot.sender.command("Initech") == (200, "")
        answer = (await slack.wait_for("response_url"))[0].args

        assert answer["response_type"] == "ephemeral"
        first = await bot.store.get_run(run_id)
        again = first.created_at + timedelta(hours=1)
        assert answer["text"] == (
            "Sorry, you have reached the limit of 1 research run an hour. You can ask again "
            f"at {again:%H:%M} UTC (in 1 h)."
        )
        assert [r.run_id for r in await bot.store.list_runs()] == [run_id]
        assert len(slack.calls_to("chat.postMessage")) == 1
        bot.engine.release.set()
        await bot.runs.wait(run_id)
    finally:
        await bot.stop()


async def test_show_reposts_a_report_here_and_not_to_another_workspace(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, _ = await bot.research("Acme Robotics")
    bot.engine.release.set()
    await bot.runs.wait(run_id)

    assert await bot.sender.command(f"show {run_id}", team="T2") == (200, "")
    refused = (await slack.wait_for("response_url"))[0].args
    assert refused["text"].startswith(f"No run `{run_id}` in this workspace")

    before = len(slack.calls_to("chat.postMessage"))
    assert await bot.sender.command(f"show `{run_id.upper()}`", channel="C7") == (200, "")
    shared = await slack.wait_for("files.completeUploadExternal", 2)
    post = slack.calls_to("chat.postMessage")[before]
    assert post.args["channel"] == "C7"
    assert post.args["text"].startswith(f"<@U1> shared report `{run_id}`: *Acme Robotics*")
    assert "TL;DR: Acme Robotics builds warehouse robots [1]." in post.args["text"]
    assert post.args["unfurl_links"] is False
    assert (shared[1].args["channel_id"], shared[1].args["thread_ts"]) == (
        "C7",
        post.response["ts"],
    )
    assert len(slack.calls_to("response_url")) == 1


async def test_buttons_pressed_from_another_workspace_find_the_run_finished(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, ts = await bot.research("Acme Robotics", user="U1")
    await bot.engine.parked(run_id).wait()
    control = bot.engine.controls[run_id]

    for action in ("research_summarize", "research_cancel"):
        await bot.sender.action(action, run_id, user="U1", team="T2", message_ts=ts)
    refused = await slack.wait_for("chat.postEphemeral", 2)

    assert [(c.args["user"], c.args["text"]) for c in refused] == [
        ("U1", "That run has finished."),
        ("U1", "That run has finished."),
    ]
    assert not control.summarize_requested.is_set()
    assert not control.cancel_requested.is_set()
    bot.engine.release.set()
    await bot.runs.wait(run_id)


async def test_show_of_a_run_without_report_says_so(bot: SlackWorld, slack: FakeSlack) -> None:
    record = await bot.store.create_run(
        Request(
            topic="Acme", origin=Origin(platform="slack", workspace="T1", channel="C1", user="U1")
        )
    )

    await bot.sender.command(f"show {record.run_id}")

    answer = (await slack.wait_for("response_url"))[0].args
    assert answer["text"] == f"Run `{record.run_id}` has no report (queued)."


async def test_forged_and_replayed_requests_are_refused(bot: SlackWorld, slack: FakeSlack) -> None:
    body = bot.sender.command_body("Acme Robotics")
    form = "application/x-www-form-urlencoded"
    stale = int(time.time()) - 10 * 60

    assert (await bot.sender.send(body, form, signature="v0=" + "0" * 64))[0] == 401
    assert (await bot.sender.send(body, form, timestamp=stale))[0] == 401
    assert (
        await bot.sender.send(
            body.replace("Acme", "Evil"),
            form,
            signature=(
                bot.sender.verifier.generate_signature(timestamp=str(int(time.time())), body=body)
            ),
        )
    )[0] == 401

    assert await bot.store.list_runs() == []
    assert [c.method for c in slack.calls] == []


async def test_the_bot_joins_a_public_channel_it_is_not_in(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    slack.outside_channels.add("C5")

    run_id, ts = await bot.research("Acme Robotics", channel="C5")
    await bot.engine.parked(run_id).wait()

    attempts = slack.calls_to("chat.postMessage", "conversations.join", ok_only=False)
    assert [(c.method, c.error) for c in attempts] == [
        ("chat.postMessage", "not_in_channel"),
        ("conversations.join", None),
        ("chat.postMessage", None),
    ]

    async def stored() -> bool:
        # The sink stores the thread after Slack answered; the fake recorded the call before.
        return (await bot.store.get_run(run_id)).origin.thread == ts

    await eventually(stored)


async def test_a_channel_it_cannot_post_in_gets_an_explanation(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    slack.private_channels.add("G9")

    assert await bot.sender.command("Acme Robotics", channel="G9") == (200, "")

    answer = (await slack.wait_for("response_url"))[0].args
    assert answer["text"].startswith("I can't post in this channel. Invite me first")
    run = (await bot.store.list_runs())[0]
    await bot.runs.wait(run.run_id)
    assert (await bot.store.get_run(run.run_id)).status == RunStatus.CANCELLED


async def test_an_interrupted_run_finishes_in_its_old_thread_after_a_restart(
    slack: FakeSlack, tmp_path: Path
) -> None:
    first = await SlackWorld.start(slack, tmp_path / "db.sqlite3", **EDITED)
    run_id, ts = await first.research("Acme Robotics")
    await first.engine.parked(run_id).wait()
    await first.stop()

    second = await SlackWorld.start(slack, tmp_path / "db.sqlite3", **EDITED)
    try:
        assert (await second.store.get_run(run_id)).status == RunStatus.INTERRUPTED
        assert await second.front.recover() == [run_id]
        await second.runs.wait(run_id)
        assert (await second.store.get_run(run_id)).status == RunStatus.DONE
    finally:
        await second.stop()

    parents = [c for c in slack.calls_to("chat.postMessage") if "thread_ts" not in c.args]
    assert len(parents) == 1
    assert "interrupted by a restart" in slack.thread("C1", ts)[-1]
    complete = slack.calls_to("files.completeUploadExternal")
    assert (complete[0].args["channel_id"], complete[0].args["thread_ts"]) == ("C1", ts)
    final = slack.calls_to("chat.update")[-1].args
    assert final["ts"] == ts
    assert "recovered after a restart" in json.dumps(final["blocks"])
    assert button_value(final["blocks"], "research_summarize") == ""


class DepthRecorder(ScriptedEngine):
    """The scripted engine, keeping the depth of each request it is given (fresh or recovered)."""

    def __init__(self) -> None:
        super().__init__()
        self.depths: list[tuple[str, Depth]] = []

    def research(self, run_id: str, request: Request, control: Control) -> AsyncIterator[Event]:
        self.depths.append(("research", request.depth))
        return super().research(run_id, request, control)

    def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "interrupted",
    ) -> AsyncIterator[Event]:
        self.depths.append(("recover", request.depth))
        return super().recover(run_id, request, history, control, why=why)


async def test_a_deep_run_stays_deep_when_recovered_after_a_restart(
    slack: FakeSlack, tmp_path: Path
) -> None:
    first_engine, second_engine = DepthRecorder(), DepthRecorder()
    first = await SlackWorld.start(slack, tmp_path / "db.sqlite3", engine=first_engine)
    run_id, _ = await first.research("deep Acme Robotics")
    await first_engine.parked(run_id).wait()
    await first.stop()

    second = await SlackWorld.start(slack, tmp_path / "db.sqlite3", engine=second_engine)
    try:
        assert await second.front.recover() == [run_id]
        await second.runs.wait(run_id)
        stored = await second.store.get_run(run_id)
    finally:
        await second.stop()

    assert first_engine.depths == [("research", Depth.DEEP)]
    assert second_engine.depths == [("recover", Depth.DEEP)]
    assert (stored.status, stored.depth) == (RunStatus.DONE, Depth.DEEP)
