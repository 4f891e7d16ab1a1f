"""The runs service: queueing under the limit, and runs that outlive a restart."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.agent.events import Ending, RunQueued
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Request, RunStatus
from tests.conftest import Recorder
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools

REPORT = "# Acme\n\n## TL;DR\nFound it [1]."


async def test_runs_beyond_the_limit_queue_and_learn_their_place(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    gate = anthropic_api.hold()
    anthropic_api.script(reply_text(REPORT), reply_text(REPORT), reply_text(REPORT))
    async with open_services(settings.model_copy(update={"max_concurrent_runs": 1})) as services:
        first, second, third = Recorder(), Recorder(), Recorder()
        await services.runs.submit(Request(topic="One"), first)
        await services.runs.submit(Request(topic="Two"), second)
        await services.runs.submit(Request(topic="Three"), third)
        await third.wait_for("run_queued")
        assert [e.position for e in third.events if isinstance(e, RunQueued)] == [2]
        gate.set()
        await third.finished.wait()

    assert [e.position for e in second.events if isinstance(e, RunQueued)] == [1]
    assert [e.position for e in third.events if isinstance(e, RunQueued)] == [2, 1]
    assert not any(isinstance(e, RunQueued) for e in first.events)
    assert [r.outcome.ending for r in (first, second, third)] == [Ending.COMPLETED] * 3


async def test_a_run_stopped_by_shutdown_is_recovered_from_its_evidence(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]))
    async with open_services(settings) as services:
        before = Recorder()
        record = await services.runs.submit(Request(topic="Acme"), before)
        await before.wait_for("tool_finished")
        anthropic_api.hold()
        await anthropic_api.wait_for_requests(2)
    # Leaving the block is the process stopping (SIGTERM): the run is left for recovery.

    async with open_services(settings) as services:
        stored = await services.store.get_run(record.run_id)
        assert stored.status is RunStatus.INTERRUPTED
        after = Recorder()
        anthropic_api.responder = _answer_with(REPORT)
        anthropic_api.hold().set()  # the held call died with the old process; answer again
        assert await services.runs.recover(lambda run: after) == [record.run_id]
        await after.finished.wait()
        stored = await services.store.get_run(record.run_id)

    assert after.outcome.ending is Ending.INTERRUPTED_SYNTHESIZED and after.outcome.recovered
    assert after.outcome.report.sources[0].title == "acme - result 1"
    recovery_request = anthropic_api.requests[-1]
    assert len(recovery_request["messages"]) == 1
    assert "acme - result 1" in str(recovery_request["messages"][0])
    assert stored.status is RunStatus.DONE and stored.turns == 3


async def test_a_run_interrupted_before_it_found_anything_starts_again_by_itself(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.hold()
    async with open_services(settings) as services:
        record = await services.runs.submit(Request(topic="Acme"), Recorder())
        await anthropic_api.wait_for_requests(1)

    async with open_services(settings) as services:
        after = Recorder()
        anthropic_api.hold().set()
        anthropic_api.script(reply_text(REPORT))
        await services.runs.recover(lambda run: after)
        await after.finished.wait()
        stored = await services.store.get_run(record.run_id)

    assert after.outcome.ending is Ending.COMPLETED and after.outcome.report is not None
    notices = [e.message for e in after.events if e.kind == "notice"]
    assert notices == ["The bot restarted before this run had found anything: it starts again."]
    assert "Acme" in str(anthropic_api.requests[-1]["messages"][0]["content"])
    assert stored.status is RunStatus.DONE


def _answer_with(text: str):  # type: ignore[no-untyped-def]
    async def answer(body: dict[str, object]) -> object:
        return reply_text(text)

    return answer


async def test_cancelling_a_queued_run_ends_it_without_waiting_for_a_slot(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    gate = anthropic_api.hold()
    anthropic_api.script(reply_text(REPORT))
    async with open_services(settings.model_copy(update={"max_concurrent_runs": 1})) as services:
        first, second = Recorder(), Recorder()
        await services.runs.submit(Request(topic="One"), first)
        queued = await services.runs.submit(Request(topic="Two"), second)
        await second.wait_for("run_queued")

        assert services.runs.cancel(queued.run_id)
        await second.finished.wait()
        stored = await services.store.get_run(queued.run_id)
        gate.set()
        await first.finished.wait()

    assert second.outcome.ending is Ending.CANCELLED and len(anthropic_api.requests) == 1
    assert stored.status is RunStatus.CANCELLED
    assert first.outcome.ending is Ending.COMPLETED


class SlowDelivery(Recorder):
    """A chat front end still posting the report when the process is told to stop."""

    def __init__(self) -> None:
        super().__init__()
        self.delivering = asyncio.Event()
        self.release = asyncio.Event()

    async def on_finished(self, run: Any, outcome: Any) -> None:
        self.delivering.set()
        await self.release.wait()
        await super().on_finished(run, outcome)


async def test_shutdown_lets_a_finished_run_deliver_its_report(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_text(REPORT))
    listener = SlowDelivery()
    record = await world.runs.submit(Request(topic="Acme"), listener)
    await listener.delivering.wait()

    stopping = asyncio.create_task(world.runs.shutdown(delivery_grace_s=30))
    listener.release.set()
    await stopping

    assert listener.finished.is_set()
    stored = await world.store.get_run(record.run_id)
    assert stored.status is RunStatus.DONE
