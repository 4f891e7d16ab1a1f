"""The identity step end to end: which company a company run researches, settled before it
researches (a search, the fast model's answer, a person's choice among namesakes), stored with
the run and reused; against the fake Messages API and Tavily."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from bot.agent.events import Ending, IdentityOffered, IdentitySettled
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Request
from tests.conftest import FAST_MODEL, Recorder
from tests.fakes.anthropic_api import FakeAnthropic, Reply, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily

REPORT = "# Acme Robotics\n\n## TL;DR\nFound it [1]."
ACME = {"name": "Acme Robotics, Inc.", "website": "acme-robotics.com", "country": "United States"}
ACME_UK = {
    "name": "Acme Robotics Ltd",
    "website": "acmerobotics.co.uk",
    "country": "United Kingdom",
    "registry_id": "Companies House 01234567",
}
ACME_LINE = "Acme Robotics, Inc. (acme-robotics.com; United States)"
UK_LINE = "Acme Robotics Ltd (acmerobotics.co.uk; United Kingdom; Companies House 01234567)"


def named(*candidates: dict[str, str], others: tuple[dict[str, str], ...] = ()) -> Reply:
    """The fast model's answer through the identity step's tool."""
    return reply_tools([("name_company", {"candidates": list(candidates), "others": list(others)})])


@asynccontextmanager
async def bot(settings: Settings, **overrides: Any) -> AsyncIterator[Services]:
    wanted = {"identify": True, **overrides}
    async with open_services(settings.model_copy(update=wanted)) as services:
        yield services


async def start(services: Services, topic: str = "Acme Robotics") -> Recorder:
    recorder = Recorder()
    recorder.run = await services.runs.submit(Request(topic=topic), recorder)
    return recorder


def settled(recorder: Recorder) -> IdentitySettled:
    [event] = [e for e in recorder.events if isinstance(e, IdentitySettled)]
    return event


async def test_one_company_is_researched_at_once_and_named_in_the_brief(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    anthropic_api.script(named(ACME), reply_text(REPORT))
    async with bot(settings) as services:
        recorder = await start(services)
        await recorder.finished.wait()
        stored = await services.store.identity_of(recorder.run.run_id)

    assert [r.query for r in tavily.requests] == ["Acme Robotics"]
    identify, research = anthropic_api.requests
    assert identify["model"] == FAST_MODEL
    assert identify["tool_choice"] == {"type": "tool", "name": "name_company"}
    assert "Acme Robotics - result 1" in str(identify["messages"])
    assert f"The company researched: {ACME_LINE}." in str(research["system"])
    event = settled(recorder)
    assert event.identity.settled_by == "search"
    assert event.note == f"Researching {ACME_LINE}."
    assert not any(isinstance(e, IdentityOffered) for e in recorder.events)
    assert stored == event.identity
    assert recorder.outcome.ending is Ending.COMPLETED
