"""The team's earlier reports as a source: real runs through the composition store reports, and
later runs find them with `past_reports`, within their own workspace and, for a private
conversation's, only from it."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.agent.events import Ending, ToolFinished
from bot.agent.past_reports import report_address
from bot.compose import Services
from bot.domain import Origin, Request
from tests.conftest import Recorder
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use

FIRST = (
    "# Acme Robotics\n\n## TL;DR\n- Acme Robotics sells palletizing robots.\n\n"
    "## Overview\nAcme Robotics is based in Lyon.\n"
)
LATER = "# Acme Robotics\n\n## TL;DR\n- Acme Robotics is based in Lyon [1].\n"
TERMINAL = Origin()
PRIVATE = Origin(platform="slack", workspace="T1", channel="G1", user="U1", private=True)
PUBLIC = Origin(platform="slack", workspace="T1", channel="C2", user="U2", private=False)
ELSEWHERE = Origin(platform="slack", workspace="T2", channel="C9", user="U9", private=False)


async def _judge(body: dict[str, Any]) -> Any:
    verdicts = [{"id": i, "verdict": "supported"} for i in range(1, 6)]
    return reply([tool_use("record_verdicts", {"claims": verdicts})], "tool_use")


async def _run(world: Services, origin: Origin) -> tuple[Recorder, list[Any]]:
    recorder = Recorder()
    record = await world.runs.submit(Request(topic="Acme Robotics", origin=origin), recorder)
    await asyncio.wait_for(recorder.finished.wait(), 30)
    return recorder, await world.store.events(record.run_id)


async def _stored_report(world: Services, api: FakeAnthropic, origin: Origin) -> None:
    api.script(reply_text(FIRST))
    recorder, _ = await _run(world, origin)
    assert recorder.outcome.ending is Ending.COMPLETED


async def _found(world: Services, api: FakeAnthropic, origin: Origin) -> tuple[Recorder, str]:
    """A run that searches the earlier reports first: what the tool answered it."""
    api.script(reply_tools([("past_reports", {"query": "Acme palletizing"})]), reply_text(LATER))
    recorder, events = await _run(world, origin)
    [found] = [e for e in events if isinstance(e, ToolFinished) and e.name == "past_reports"]
    assert not found.is_error
    return recorder, found.content


async def test_a_later_run_cites_the_earlier_report_of_its_own_workspace(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.responder = _judge
    await _stored_report(world, anthropic_api, TERMINAL)
    [earlier] = await world.store.list_runs(platform="terminal", limit=5)

    recorder, found = await _found(world, anthropic_api, TERMINAL)
    _, elsewhere = await _found(world, anthropic_api, ELSEWHERE)

    assert "Acme Robotics is based in Lyon." in found  # the stored report's text, fenced
    [cited] = recorder.outcome.report.sources
    assert cited.url == report_address(earlier.run_id) and cited.read
    assert cited.title.startswith("Earlier report: Acme Robotics (")
    assert "No earlier report of this team" in elsewhere


async def test_a_private_conversations_report_is_found_only_from_it(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.responder = _judge
    await _stored_report(world, anthropic_api, PRIVATE)

    _, from_public = await _found(world, anthropic_api, PUBLIC)
    _, from_private = await _found(world, anthropic_api, PRIVATE)

    assert "No earlier report of this team" in from_public
    assert "Acme Robotics is based in Lyon." in from_private
