"""A settled identity outlives its process and its replica: a restart never asks again once
the company is settled (and offers the same candidates again while it was not), a follow-up
takes its run's, and a choice pressed on one replica reaches the run on another."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from bot.agent.events import Ending, IdentityOffered, IdentitySettled
from bot.compose import open_services
from bot.config import Settings
from bot.domain import Origin, Request
from tests.conftest import FAST_MODEL, TEST_MODEL, Recorder
from tests.fakes.anthropic_api import (
    FakeAnthropic,
    Scripted,
    reply,
    reply_text,
    reply_tools,
    tool_use,
)
from tests.fakes.tavily_api import FakeTavily
from tests.runs.test_identify import (
    ACME,
    ACME_LINE,
    ACME_UK,
    REPORT,
    UK_LINE,
    bot,
    named,
    settled,
    start,
)


def answering(text: str) -> Any:
    async def answer(body: dict[str, Any]) -> Scripted:
        return reply_text(text)

    return answer


async def test_a_restart_after_the_choice_researches_the_chosen_without_asking_again(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    anthropic_api.script(named(ACME, ACME_UK), reply_tools([("web_search", {"query": "acme"})]))
    async with bot(settings) as services:
        before = await start(services)
        await before.wait_for("identity_offered")
        await services.runs.choose(before.run.run_id, 1)
        await before.wait_for("tool_finished")
        anthropic_api.hold()
        await anthropic_api.wait_for_requests(3)
    # Leaving the block is the process stopping: the run is left for recovery.

    async with bot(settings) as services:
        after = Recorder()
        anthropic_api.responder = answering(REPORT)
        anthropic_api.hold().set()
        assert await services.runs.recover(lambda run: after) == [before.run.run_id]
        await after.finished.wait()

    assert not any(e.kind.startswith("identity_") for e in after.events)
    assert [r.query for r in tavily.requests] == ["Acme Robotics", "acme"]
    write_up = anthropic_api.requests[3]  # the first after the restart
    assert f"The company researched: {UK_LINE}." in str(write_up["system"])
    assert after.outcome.ending is Ending.INTERRUPTED_SYNTHESIZED
    assert after.outcome.report.company == UK_LINE


async def test_a_restart_while_waiting_offers_the_same_candidates_without_searching_again(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    anthropic_api.script(named(ACME, ACME_UK))
    async with bot(settings) as services:
        before = await start(services)
        await before.wait_for("identity_offered")

    anthropic_api.script(reply_text(REPORT))
    async with bot(settings) as services:
        after = Recorder()
        assert await services.runs.recover(lambda run: after) == [before.run.run_id]
        await after.wait_for("identity_offered")
        assert await services.runs.choose(before.run.run_id, 1) is not None
        await after.finished.wait()

    [offered] = [e for e in after.events if isinstance(e, IdentityOffered)]
    assert [c.line() for c in offered.candidates] == [ACME_LINE, UK_LINE]
    assert [r.query for r in tavily.requests] == ["Acme Robotics"]
    assert [r["model"] for r in anthropic_api.requests] == [FAST_MODEL, TEST_MODEL]
    assert settled(after).identity.settled_by == "person"
    assert after.outcome.report.company == UK_LINE


REVISED = "# Acme Robotics\n\n## TL;DR\nFound it [1]. It sells to grocers [1].\n"


async def test_a_follow_up_takes_its_runs_identity(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    update = {"answer": "They sell to grocers [1].", "update_report": True}
    anthropic_api.script(
        named(ACME),
        reply_text(REPORT),
        reply([tool_use("answer", {**update, "updated_report": REVISED})], "tool_use"),
    )
    async with bot(settings) as services:
        parent = await start(services)
        await parent.finished.wait()
        follow_up = Recorder()
        origin = Origin(platform="terminal")
        await services.followups.ask(parent.run.run_id, "Who buys?", origin, follow_up)
        await follow_up.finished.wait()

    assert len(tavily.requests) == 1  # the follow-up settled nothing of its own
    asked = anthropic_api.requests[2]
    assert f"The company researched: {ACME_LINE}." in str(asked["system"])
    assert not any(e.kind.startswith("identity_") for e in follow_up.events)
    assert follow_up.outcome.version == 2
    assert follow_up.outcome.markdown.startswith(f"# Acme Robotics\n\n{ACME_LINE}\n\n")


async def test_a_choice_pressed_on_another_replica_reaches_the_run(
    settings: Settings, anthropic_api: FakeAnthropic, pg_url: str
) -> None:
    shared = settings.model_copy(update={"database_url": SecretStr(pg_url), "identify": True})
    anthropic_api.script(named(ACME, ACME_UK), reply_text(REPORT))
    async with (
        open_services(shared, replica=True) as here,
        open_services(shared, replica=True) as there,
    ):
        for replica in (here, there):
            await replica.runs.recover(lambda run: None, platform="terminal")
        recorder = Recorder()
        run = await here.runs.submit(Request(topic="Acme Robotics"), recorder)
        await recorder.wait_for("identity_offered")
        assert here.runs.get_active(run.run_id) is not None
        assert await there.runs.choose(run.run_id, 1) is not None
        await recorder.wait_for("identity_settled")
        late = await there.runs.choose(run.run_id, 0)
        await recorder.finished.wait()

    event = next(e for e in recorder.events if isinstance(e, IdentitySettled))
    assert (event.identity.company.line(), event.identity.settled_by) == (UK_LINE, "person")
    assert late is None
    assert recorder.outcome.ending is Ending.COMPLETED
