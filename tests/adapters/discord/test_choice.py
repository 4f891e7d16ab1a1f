"""The choice of company from Discord: the real engine (its identity step on) against the fake
Messages API and Tavily, the fast model naming two namesakes, and the real discord.py client
against the fake Discord; the run's card offers a button per candidate, a press is acknowledged
at once and answered privately, and the card then names the company researched, also when the
bot restarted in between."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import RunStatus
from tests.adapters.discord.world import (
    DiscordBot,
    card_text,
    custom_ids,
    message_payloads,
)
from tests.fakes.anthropic_api import FakeAnthropic, Reply, reply_text, reply_tools
from tests.fakes.discord_api import DiscordCall, FakeDiscord
from tests.fakes.discord_components import BUTTON, walk

Json = Any
REPORT = "# Acme Robotics\n\n## TL;DR\nAcme builds robots [1].\n\n## Overview\nRobots [1]."
ACME = {
    "name": "Acme Robotics, Inc.",
    "website": "acme-robotics.com",
    "country": "United States",
    "description": "Warehouse robots",
}
HOSTILE = {
    "name": "Acme Robotics @everyone <@123456789012345678> Holdings of the Greater Metropolitan Area",
    "website": "acme.example",
    "country": "United Kingdom",
    "description": "Ask @here or [log in](https://evil.example) and *shout*",
}


def named(*candidates: dict[str, str]) -> Reply:
    """The fast model's answer through the identity step's tool: namesakes to choose from."""
    return reply_tools([("name_company", {"candidates": list(candidates), "others": []})])


@pytest.fixture
async def services(settings: Settings) -> AsyncIterator[Services]:
    async with open_services(settings.model_copy(update={"identify": True})) as opened:
        yield opened


def card_edits(fake: FakeDiscord, message_id: str) -> str:
    return rf"/channels/\d+/messages/{message_id}"


def offering(call: DiscordCall) -> bool:
    return any(i.startswith("identity:") for i in custom_ids(call.body))


async def offered(fake: FakeDiscord, message_id: str, *, after: int = 0) -> DiscordCall:
    """The card's edit that offers the candidates (after the first `after` calls)."""
    return await fake.wait_for_call(
        "PATCH", card_edits(fake, message_id), after=after, where=offering
    )


async def choose(
    fake: FakeDiscord, person: Json, message: Json, custom_id: str
) -> tuple[Json, Json]:
    """Press a company button on `message` (a card that shows it): the ack's body and the
    private answer."""
    payload = fake.guild.button(person, message, custom_id)
    await fake.dispatch("INTERACTION_CREATE", payload)
    ack = await fake.wait_for_call("POST", rf"/interactions/{payload['id']}/.+/callback")
    token = re.escape(payload["token"])
    answer = await fake.wait_for_call("POST", rf"/webhooks/\d+/{token}")
    return ack.body, answer.body


def buttons(call: DiscordCall) -> dict[str, str]:
    found = walk(call.body.get("components") or [])
    return {c["custom_id"]: c["label"] for c in found if c.get("type") == BUTTON and "label" in c}


async def test_the_candidates_are_buttons_and_the_one_chosen_is_researched(
    services: Services, anthropic_api: FakeAnthropic, fake: FakeDiscord
) -> None:
    world = fake.guild
    anthropic_api.script(named(ACME, HOSTILE), reply_text(REPORT))
    bot = await DiscordBot.serve(fake, services.store, services.runs)
    try:
        run_id, message = await bot.research("Acme Robotics")
        offer = await offered(fake, message["id"])
        shown = dict(fake.messages[message["id"]])  # the card as a slow client still shows it
        research = anthropic_api.hold()  # the run researches until the test lets it finish
        ack, answer = await choose(fake, world.bob, shown, f"identity:{run_id}:1")
        settled = await fake.wait_for_call(
            "PATCH",
            card_edits(fake, message["id"]),
            where=lambda c: "Company:" in card_text(c.body),
        )
        await anthropic_api.wait_for_requests(2)  # researching the company chosen
        _, again = await choose(fake, world.alice, shown, f"identity:{run_id}:0")
        research.set()
        await services.runs.wait(run_id)
        stored = await services.store.identity_of(run_id)
    finally:
        await bot.stop(close_store=False)

    labels = buttons(offer)
    assert custom_ids(offer.body) == [
        f"identity:{run_id}:0",
        f"identity:{run_id}:1",
        f"identity:{run_id}:refine",
        f"rb:summarize:{run_id}",
        f"rb:cancel:{run_id}",
    ]
    assert (
        labels[f"identity:{run_id}:0"]
        == "1. Acme Robotics, Inc. (acme-robotics.com; United States)"
    )
    hostile = labels[f"identity:{run_id}:1"]
    assert hostile.startswith("2. Acme Robotics @\u2060everyone <@\u200b123456789012345678>")
    assert hostile.endswith("…") and len(hostile) == 80
    assert labels[f"identity:{run_id}:refine"] == "None of these: refine"
    text = card_text(offer.body)
    assert "**Which company did you mean?**" in text
    assert "it goes on with the first" in text
    assert "Ask @\u2060here or \\[log in](https://evil.example) and \\*shout\\*" in text

    # Acknowledged at once (a deferred update), then answered privately.
    assert ack == {"type": 6}
    assert (answer["content"], answer["flags"]) == ("Researching the company you chose.", 64)
    assert again["content"].startswith("That run has already started on Acme Robotics @\u2060")
    assert again["flags"] == 64
    assert "**Company:** Researching Acme Robotics @\u2060everyone" in card_text(settled.body)
    assert stored is not None and stored.company.website == "acme.example"
    assert stored.settled_by == "person"
    final = fake.find("PATCH", card_edits(fake, message["id"]))[-1]
    assert custom_ids(final.body) == [f"rb:export:{run_id}"]
    assert "**Company:** Researching Acme Robotics" in card_text(final.body)
    payloads = message_payloads(fake)
    assert all(p["allowed_mentions"] == {"parse": []} for p in payloads if "allowed_mentions" in p)
    sent = " ".join(card_text(p) + str(p.get("content") or "") for p in payloads)
    for ping in ("@everyone", "@here", "<@123456789012345678>"):
        assert ping not in sent, ping


async def test_a_press_from_another_server_is_refused_and_changes_nothing(
    services: Services, anthropic_api: FakeAnthropic, fake: FakeDiscord
) -> None:
    world = fake.guild
    anthropic_api.script(named(ACME, HOSTILE))
    bot = await DiscordBot.serve(fake, services.store, services.runs)
    try:
        run_id, message = await bot.research("Acme Robotics")
        await offered(fake, message["id"])
        payload = world.button(world.alice, fake.messages[message["id"]], f"identity:{run_id}:0")
        payload["guild_id"] = payload["authorizing_integration_owners"]["0"] = "424242424242424242"
        payload["channel"] = {**payload["channel"], "guild_id": payload["guild_id"]}
        await fake.dispatch("INTERACTION_CREATE", payload)
        answer = await fake.wait_for_call("POST", rf"/webhooks/\d+/{re.escape(payload['token'])}")
        assert (answer.body["content"], answer.body["flags"]) == ("That run has finished.", 64)
        assert await services.store.identity_of(run_id) is None

        _, refined = await choose(
            fake, world.bob, fake.messages[message["id"]], f"identity:{run_id}:refine"
        )
        await services.runs.wait(run_id)
        record = await services.store.get_run(run_id)
    finally:
        await bot.stop(close_store=False)
    assert refined["content"].startswith("Stopping: start again with a more specific name")
    assert record.status is RunStatus.CANCELLED
    final = fake.find("PATCH", card_edits(fake, message["id"]))[-1]
    assert custom_ids(final.body) == []
    assert len(anthropic_api.requests) == 1  # nothing was researched


async def test_the_buttons_work_after_a_restart(
    settings: Settings, anthropic_api: FakeAnthropic, fake: FakeDiscord
) -> None:
    world = fake.guild
    wanted = settings.model_copy(update={"identify": True})
    anthropic_api.script(named(ACME, HOSTILE), reply_text(REPORT), reply_text(REPORT))
    async with open_services(wanted) as first:
        bot = await DiscordBot.serve(fake, first.store, first.runs)
        run_id, message = await bot.research("Acme Robotics")
        await offered(fake, message["id"])
        await bot.stop(close_store=False)
    assert len(fake.find("POST", rf"/channels/{world.channel_id}/messages")) == 1

    async with open_services(wanted) as second:
        before = len(fake.calls)
        bot = await DiscordBot.serve(fake, second.store, second.runs)
        try:
            await offered(fake, message["id"], after=before)  # offered again, nobody asked twice
            _, answer = await choose(
                fake, world.bob, fake.messages[message["id"]], f"identity:{run_id}:0"
            )
            await second.runs.wait(run_id)
            stored = await second.store.identity_of(run_id)
        finally:
            await bot.stop(close_store=False)
    assert answer["content"] == "Researching the company you chose."
    assert stored is not None and stored.company.website == "acme-robotics.com"
    final = fake.find("PATCH", card_edits(fake, message["id"]))[-1]
    assert not offering(final)
    assert "**Company:** Researching Acme Robotics, Inc." in card_text(final.body)
    # Still one status message: the restart reused it and its buttons.
    assert len(fake.find("POST", rf"/channels/{world.channel_id}/messages")) == 1
