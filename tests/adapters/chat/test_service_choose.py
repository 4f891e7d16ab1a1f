"""A press of a company button, once for every platform: who may choose for a run that waits
for one, what a choice does, and what a press says once the run has started on a company."""

from __future__ import annotations

import pytest

from bot.adapters.chat.service import Caller, CommandService, Markup, Refused, Reply
from bot.agent.events import Ending, IdentitySettled
from bot.config import Settings
from tests.conftest import Recorder
from tests.fakes.anthropic_api import FakeAnthropic, reply_text
from tests.runs.test_identify import ACME, ACME_UK, REPORT, bot, named

ALICE = Caller(platform="slack", workspace="T1", channel="C1", user="U1", user_name="Alice")
BOB = ALICE.model_copy(update={"user": "U2", "user_name": "Bob"})
ELSEWHERE = ALICE.model_copy(update={"workspace": "T2"})
PLAIN = Markup(escape=lambda text: text, mention=lambda user: f"@{user}", bold="")


async def test_anyone_in_the_workspace_chooses_once_and_a_late_press_is_told_the_company(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(named(ACME, ACME_UK), reply_text(REPORT))
    async with bot(settings) as services:
        service = CommandService(services.runs, services.store, platform="slack", place="workspace")
        recorder = Recorder()
        run = await service.research(ALICE, "Acme Robotics", recorder)
        await recorder.wait_for("identity_offered")
        with pytest.raises(Refused) as forged:
            await service.choose(ELSEWHERE, run.run_id, 0)
        chosen = await service.choose(BOB, run.run_id, 1)
        await recorder.wait_for("identity_settled")
        with pytest.raises(Refused) as late:
            await service.choose(ALICE, run.run_id, 0)
        await recorder.finished.wait()

    assert forged.value.reply.render(PLAIN) == "That run has finished."
    assert chosen == Reply(text="Researching the company you chose.")
    assert late.value.reply.render(PLAIN) == "That run has already started on Acme Robotics Ltd."
    [event] = [e for e in recorder.events if isinstance(e, IdentitySettled)]
    assert event.identity.company.name == "Acme Robotics Ltd"
    assert recorder.outcome.ending is Ending.COMPLETED


async def test_none_of_these_says_how_to_ask_again(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(named(ACME, ACME_UK))
    async with bot(settings) as services:
        service = CommandService(services.runs, services.store, platform="slack", place="workspace")
        recorder = Recorder()
        run = await service.research(ALICE, "Acme Robotics", recorder)
        await recorder.wait_for("identity_offered")
        refined = await service.choose(ALICE, run.run_id, None)
        await recorder.finished.wait()

    assert refined.text.startswith("Stopping: start again with a more specific name")
    assert recorder.outcome.ending is Ending.CANCELLED
