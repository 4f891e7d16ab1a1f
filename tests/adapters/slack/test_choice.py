"""The choice of company from Slack: the real engine (its identity step on) against the fake
Messages API and Tavily, the fast model naming two namesakes, driven through the real bolt app
over signed HTTP; what reaches the fake Slack is the run's message with a button per candidate,
and after a press (or the timeout) the company it researches."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import RunStatus
from tests.adapters.slack.world import EDITED, button_value, front_end, serve
from tests.fakes.anthropic_api import FakeAnthropic, Reply, reply_text, reply_tools
from tests.fakes.slack_api import Call, FakeSlack, SlackSender

REPORT = "# Acme Robotics\n\n## TL;DR\nAcme builds robots [1].\n\n## Overview\nRobots [1]."
ACME = {
    "name": "Acme Robotics, Inc.",
    "website": "acme-robotics.com",
    "country": "United States",
    "description": "Warehouse robots",
}
HOSTILE = {
    "name": "Acme Robotics <!here> <@U123> Holdings of the Greater Metropolitan Area",
    "website": "acme.example",
    "country": "United Kingdom",
    "description": "Ask @everyone <https://evil.example|click here> or [log in](https://evil.example)",
}
CHOOSE, REFINE = "identity_choose", "identity_refine"


def named(*candidates: dict[str, str]) -> Reply:
    """The fast model's answer through the identity step's tool: namesakes to choose from."""
    return reply_tools([("name_company", {"candidates": list(candidates), "others": []})])


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def services(settings: Settings) -> AsyncIterator[Services]:
    async with open_services(settings.model_copy(update={"identify": True})) as opened:
        yield opened


async def start(
    services: Services, slack: FakeSlack, **settings: Any
) -> tuple[web.AppRunner, SlackSender, str, str]:
    """The bolt app served, and `/research Acme Robotics` sent: (runner, sender, run id, ts)."""
    runner, sender = await serve(front_end(slack, services.runs, services.store, **settings), slack)
    assert await sender.command("Acme Robotics") == (200, "")
    parent = (await slack.wait_for("chat.postMessage"))[0]
    run_id = button_value(parent.args["blocks"], "research_summarize")
    return runner, sender, run_id, parent.response["ts"]


def choice_buttons(call: Call) -> list[dict[str, Any]]:
    blocks = call.args.get("blocks") or []
    actions = [b for b in blocks if b["type"] == "actions"]
    return [e for b in actions for e in b["elements"] if e["action_id"] in (CHOOSE, REFINE)]


def offering(call: Call) -> bool:
    return bool(choice_buttons(call))


def _text(call: Call) -> str:
    return json.dumps(call.args.get("blocks") or [], ensure_ascii=False)


@pytest.mark.parametrize("streaming", ["off", "auto"])
async def test_the_candidates_are_buttons_and_the_one_chosen_is_researched(
    services: Services, anthropic_api: FakeAnthropic, slack: FakeSlack, streaming: str
) -> None:
    anthropic_api.script(named(ACME, HOSTILE), reply_text(REPORT))
    runner, sender, run_id, ts = await start(
        services, slack, RESEARCH_BOT_SLACK_STREAMING=streaming
    )
    try:
        offer = (await slack.wait_for("chat.update", where=offering))[0]
        # Someone other than the requester may choose, as anyone may press Summarize.
        assert await sender.action(CHOOSE, f"{run_id}:1", user="U2", message_ts=ts) == (200, "")
        settled = await slack.wait_for("chat.update", where=lambda c: "Researching" in _text(c))
        await services.runs.wait(run_id)
        stored = await services.store.identity_of(run_id)
    finally:
        await runner.cleanup()

    buttons = choice_buttons(offer)
    assert [b["value"] for b in buttons] == [f"{run_id}:0", f"{run_id}:1", run_id]
    assert [b["action_id"] for b in buttons] == [CHOOSE, CHOOSE, REFINE]
    labels = [b["text"]["text"] for b in buttons]
    assert labels[0] == "1. Acme Robotics, Inc. (acme-robotics.com; United States)"
    assert labels[1].startswith("2. Acme Robotics <\u2060!here> <\u2060@U123> Holdings")
    assert labels[1].endswith("…") and len(labels[1]) == 75
    assert labels[2] == "None of these: refine"
    # Slack takes an action id once per block: one block per button.
    blocks = [b for b in offer.args["blocks"] if b["type"] == "actions"]
    assert all(len({e["action_id"] for e in b["elements"]}) == len(b["elements"]) for b in blocks)
    assert len({b["block_id"] for b in offer.args["blocks"] if "block_id" in b}) == len(blocks)
    assert button_value(offer.args["blocks"], "research_summarize") == run_id
    question = _text(offer)
    assert "Which company did you mean?" in question
    assert "within 2 minutes, it goes on with the first" in question
    assert (
        "1. *Acme Robotics, Inc. (acme-robotics.com; United States)*: Warehouse robots" in question
    )

    assert not offering(settled[0])
    assert "Researching Acme Robotics &lt;!here&gt; &lt;@U123&gt; Holdings" in _text(settled[0])
    assert stored is not None and stored.settled_by == "person"
    assert stored.company.website == "acme.example"
    assert [n.website for n in stored.namesakes] == ["acme-robotics.com"]
    final = slack.calls_to("chat.update")[-1]
    assert not offering(final)
    assert "Researching Acme Robotics &lt;!here&gt;" in _text(final)
    assert "Done" in _text(final)
    assert slack.calls_to("chat.postEphemeral") == []  # the message says what happened
    if streaming == "off":
        assert any(
            t.startswith("Researching Acme Robotics &lt;!here&gt;") for t in slack.thread("C1", ts)
        )
    _pings_nobody(slack)


async def test_a_press_that_may_not_choose_is_refused_privately_and_refine_ends_the_run(
    services: Services, anthropic_api: FakeAnthropic, slack: FakeSlack
) -> None:
    anthropic_api.script(named(ACME, HOSTILE))
    runner, sender, run_id, ts = await start(services, slack, **EDITED)
    try:
        await slack.wait_for("chat.update", where=offering)
        # The run's id, pressed from another workspace: as Summarize there, it "has finished".
        await sender.action(CHOOSE, f"{run_id}:0", user="U9", team="T2", message_ts=ts)
        refused = await slack.wait_for("chat.postEphemeral")
        assert refused[0].args["user"] == "U9"
        assert refused[0].args["text"] == "That run has finished."
        assert (await services.store.get_run(run_id)).status is RunStatus.RUNNING

        assert await sender.action(REFINE, run_id, user="U1", message_ts=ts) == (200, "")
        await services.runs.wait(run_id)
        # Too late: the run no longer waits for a choice.
        await sender.action(CHOOSE, f"{run_id}:1", user="U2", message_ts=ts)
        late = await slack.wait_for("chat.postEphemeral", 2)
        stored = await services.store.get_run(run_id)
    finally:
        await runner.cleanup()

    assert (late[1].args["user"], late[1].args["text"]) == ("U2", "That run has finished.")
    assert stored.status is RunStatus.CANCELLED
    assert await services.store.identity_of(run_id) is None
    assert any("start again with a more specific name" in t for t in slack.thread("C1", ts))
    final = slack.calls_to("chat.update")[-1]
    assert not offering(final)
    assert "Cancelled" in _text(final)
    assert len(anthropic_api.requests) == 1  # nothing was researched


async def test_a_second_choice_is_told_which_company_the_run_started_on(
    services: Services, anthropic_api: FakeAnthropic, slack: FakeSlack
) -> None:
    anthropic_api.script(named(ACME, HOSTILE), reply_text(REPORT))
    runner, sender, run_id, ts = await start(services, slack, **EDITED)
    try:
        await slack.wait_for("chat.update", where=offering)
        research = anthropic_api.hold()  # the run researches until the test lets it finish
        await sender.action(CHOOSE, f"{run_id}:1", user="U1", message_ts=ts)
        await slack.wait_for("chat.update", where=lambda c: "Researching" in _text(c))
        await anthropic_api.wait_for_requests(2)  # researching the company chosen
        await sender.action(CHOOSE, f"{run_id}:0", user="U2", message_ts=ts)
        answer = (await slack.wait_for("chat.postEphemeral"))[0].args
        research.set()
        await services.runs.wait(run_id)
        stored = await services.store.identity_of(run_id)
    finally:
        await runner.cleanup()

    assert answer["user"] == "U2"
    assert answer["text"].startswith("That run has already started on Acme Robotics &lt;!here&gt;")
    assert stored is not None and stored.company.website == "acme.example"
    _pings_nobody(slack)


async def test_unanswered_the_most_likely_is_taken_and_the_message_says_so(
    settings: Settings, anthropic_api: FakeAnthropic, slack: FakeSlack
) -> None:
    anthropic_api.script(named(ACME, HOSTILE), reply_text(REPORT))
    quick = settings.model_copy(update={"identify": True, "choice_timeout_s": 0.05})
    async with open_services(quick) as services:
        runner, _sender, run_id, _ts = await start(services, slack, **EDITED)
        try:
            await services.runs.wait(run_id)
        finally:
            await runner.cleanup()
    offers = [c for c in slack.calls_to("chat.update") if offering(c)]
    assert len(offers) == 1
    final = slack.calls_to("chat.update")[-1]
    assert not offering(final)
    note = "Researching Acme Robotics, Inc. (acme-robotics.com; United States): nobody chose"
    assert note in _text(final)
    assert "so the most likely one was taken." in _text(final)


def _pings_nobody(slack: FakeSlack) -> None:
    sent = " ".join(c.dump() for c in slack.calls)
    for ping in ("<!here>", "<@U123>", "<https://evil", "@everyone"):
        assert ping not in sent, ping
    assert set(re.findall(r"<[@#!][^>]*>", sent)) <= {"<@U1>"}
