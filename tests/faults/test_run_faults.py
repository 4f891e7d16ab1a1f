"""Faults the runs service owns: a slow listener with a shutdown, queued runs across a restart,
cancel during recovery, an engine that crashes, an outcome that could not be delivered.

Each drives the real runs service and store (and, where a model is involved, the real SDK
against the fake Messages API) and asserts the ending, what the listener heard and what
SQLite holds.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.agent.control import Control
from bot.agent.events import Ending, Event, ReportReady, RunFinished, RunStarted, Usage
from bot.agent.report.model import Report
from bot.compose import open_services
from bot.config import Settings
from bot.domain import Request, RunStatus
from bot.runs.manager import RunManager
from bot.store.runs import Store
from tests.conftest import Recorder
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.process import eventually

REPORT = "# Acme\n\n## TL;DR\nFound it [1]."


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with Store.connect(tmp_path / "runs.sqlite3") as opened:
        yield opened


class Stuck(Recorder):
    """A chat platform that never answers: its first event never returns."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked = asyncio.Event()

    async def on_event(self, run: Any, event: Any) -> None:
        await super().on_event(run, event)
        self.blocked.set()
        await asyncio.Event().wait()


class Undeliverable(Recorder):
    async def on_finished(self, run: Any, outcome: Any) -> None:
        raise ConnectionError("the platform is down")


async def test_a_stuck_listener_holds_back_neither_storage_nor_the_shutdown(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]))
    anthropic_api.responder = _hang
    async with open_services(settings) as services:
        stuck = Stuck()
        record = await services.runs.submit(Request(topic="Acme"), stuck)
        await anthropic_api.wait_for_requests(2)

        async def evidence_stored() -> bool:
            kinds = [e.kind for e in await services.store.events(record.run_id)]
            return "tool_finished" in kinds

        await eventually(evidence_stored)
        assert stuck.kinds() == ["run_started"]
    # Leaving the block is the process stopping, the listener still stuck.

    async with open_services(settings) as services:
        assert (await services.store.get_run(record.run_id)).status is RunStatus.INTERRUPTED
        anthropic_api.responder = _answer_with(REPORT)
        after = Recorder()
        assert await services.runs.recover(lambda run: after) == [record.run_id]
        await services.runs.wait(record.run_id)
        stored = await services.store.get_run(record.run_id)

    assert after.outcome.ending is Ending.INTERRUPTED_SYNTHESIZED
    assert after.outcome.report.sources[0].title == "acme - result 1"
    assert stored.status is RunStatus.DONE and stored.delivered_at is not None


async def test_queued_runs_wait_again_after_a_restart_in_their_order(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    one = settings.model_copy(update={"max_concurrent_runs": 1})
    anthropic_api.hold()
    async with open_services(one) as services:
        first = await services.runs.submit(Request(topic="First"), Recorder())
        second_hears, third_hears = Recorder(), Recorder()
        second = await services.runs.submit(Request(topic="Second"), second_hears)
        third = await services.runs.submit(Request(topic="Third"), third_hears)
        await third_hears.wait_for("run_queued")
        await anthropic_api.wait_for_requests(1)

    async with open_services(one) as services:
        statuses = [(await services.store.get_run(r.run_id)).status for r in (first, second, third)]
        assert statuses == [RunStatus.INTERRUPTED, RunStatus.QUEUED, RunStatus.QUEUED]
        anthropic_api.hold().set()
        anthropic_api.script(reply_text(REPORT), reply_text(REPORT), reply_text(REPORT))
        heard = {first.run_id: Recorder(), second.run_id: Recorder(), third.run_id: Recorder()}
        taken = await services.runs.recover(lambda run: heard[run.run_id])
        for recorder in heard.values():
            await recorder.finished.wait()
        stored = [await services.store.get_run(r.run_id) for r in (first, second, third)]

    assert taken == [first.run_id, second.run_id, third.run_id]
    # The first had found nothing, so it starts again; the queued ones follow, in their order.
    endings = [heard[r.run_id].outcome.ending for r in (first, second, third)]
    assert endings == [Ending.COMPLETED] * 3
    asked = [str(r["messages"][0]["content"]) for r in anthropic_api.requests[-3:]]
    assert "First" in asked[0] and "Second" in asked[1] and "Third" in asked[2]
    assert [s.status for s in stored] == [RunStatus.DONE] * 3


async def test_cancel_reaches_a_run_being_recovered(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]))
    async with open_services(settings) as services:
        before = Recorder()
        record = await services.runs.submit(Request(topic="Acme"), before)
        await before.wait_for("tool_finished")
        anthropic_api.hold()
        await anthropic_api.wait_for_requests(2)

    async with open_services(settings) as services:
        after = Recorder()
        await services.runs.recover(lambda run: after)
        await anthropic_api.wait_for_requests(3)  # the recovery's write-up call, held
        assert services.runs.cancel(record.run_id)
        await after.finished.wait()
        stored = await services.store.get_run(record.run_id)

    assert after.outcome.ending is Ending.CANCELLED
    assert after.outcome.report is not None  # what it had found is kept
    assert stored.status is RunStatus.DONE and stored.termination_reason == "cancelled"


class Crashing:
    """An engine with a bug: its research raises after it started; its recovery may too."""

    def __init__(self, *, recovery_works: bool) -> None:
        self.recovery_works = recovery_works
        self.recovered_why: list[str] = []

    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        yield RunStarted(topic=request.topic, mode=request.mode.value)
        raise KeyError("a bug")

    async def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "interrupted",
    ) -> AsyncIterator[Event]:
        self.recovered_why.append(why)
        if not self.recovery_works:
            raise ValueError("another bug")
        report = Report(title=request.topic, tldr="What was found before the failure.")
        yield ReportReady(turn=1, report=report, synthesis=True)
        yield RunFinished(ending=Ending.ERROR_SYNTHESIZED, turns=1, usage=Usage())


async def test_a_crashing_engine_is_written_up_from_its_evidence(store: Store) -> None:
    engine = Crashing(recovery_works=True)
    runs = RunManager(store, engine)
    heard = Recorder()
    record = await runs.submit(Request(topic="Acme"), heard)
    await runs.wait(record.run_id)

    assert engine.recovered_why == ["error"]
    assert heard.outcome.ending is Ending.ERROR_SYNTHESIZED and heard.outcome.report is not None
    stored = await store.get_run(record.run_id)
    assert stored.status is RunStatus.DONE and stored.termination_reason == "error_synthesized"
    assert stored.delivered_at is not None


async def test_when_even_the_write_up_crashes_the_run_still_ends_and_says_so(
    store: Store,
) -> None:
    runs = RunManager(store, Crashing(recovery_works=False))
    heard = Recorder()
    record = await runs.submit(Request(topic="Acme"), heard)
    await heard.finished.wait()

    assert heard.outcome.ending is Ending.ERROR_SYNTHESIS_FAILED
    assert (
        record.run_id in heard.outcome.error and "start the research again" in heard.outcome.error
    )
    stored = await store.get_run(record.run_id)
    assert stored.status is RunStatus.FAILED
    assert stored.termination_reason == "error_synthesis_failed"


async def test_an_undelivered_outcome_is_delivered_once_at_the_next_start(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_text(REPORT))
    async with open_services(settings) as services:
        record = await services.runs.submit(Request(topic="Acme"), Undeliverable())
        await services.runs.wait(record.run_id)
        assert (await services.store.get_run(record.run_id)).delivered_at is None

    async with open_services(settings) as services:
        later = Recorder()
        assert await services.runs.recover(lambda run: later) == [record.run_id]
        await services.runs.wait(record.run_id)
        stored = await services.store.get_run(record.run_id)

    async with open_services(settings) as services:
        assert await services.runs.recover(lambda run: Recorder()) == []

    assert later.outcome.redelivery and later.outcome.ending is Ending.COMPLETED
    assert "Found it" in later.outcome.markdown and later.kinds() == []
    assert stored.delivered_at is not None and len(anthropic_api.requests) == 1


async def test_a_run_is_taken_over_only_once_its_owner_process_is_gone(
    store: Store, tmp_path: Path
) -> None:
    record = await store.create_run(Request(topic="Acme"))
    await store.mark_running(record.run_id)
    owner = await asyncio.create_subprocess_exec(sys.executable, "-c", "input()", stdin=PIPE)
    alive = f"{socket.gethostname()}:{owner.pid}:0000"
    far = store.now() + timedelta(hours=1)
    assert await store.claim_run(record.run_id, seen_owner=None, owner=alive, lease_until=far)
    engine = Crashing(recovery_works=True)
    runs = RunManager(store, engine)

    assert await runs.recover(lambda run: Recorder()) == []
    owner.kill()
    await owner.wait()
    heard = Recorder()
    assert await runs.recover(lambda run: heard) == [record.run_id]
    await heard.finished.wait()

    assert engine.recovered_why == ["interrupted"]
    assert (await store.get_run(record.run_id)).status is RunStatus.DONE


async def _hang(body: dict[str, object]) -> Any:
    """A model call that never answers (until the process goes)."""
    await asyncio.Event().wait()


def _answer_with(text: str) -> Any:
    async def answer(body: dict[str, object]) -> object:
        return reply_text(text)

    return answer
