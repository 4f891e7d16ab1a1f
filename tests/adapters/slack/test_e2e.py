"""The whole bot from Slack: the real engine and SDK clients against the fake Messages API,
Tavily and web, driven through the real bolt app over signed HTTP, seen from a fake Slack."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from bot.compose import Services
from bot.domain import RunStatus
from tests.adapters.slack.world import EDITED, button_value, front_end, serve
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.slack_api import FakeSlack

REPORT = (
    "# Acme Robotics\n\n## TL;DR\nAcme builds warehouse robots [1]. <!channel> @here\n\n"
    "## Customers\nSeveral retailers [1]."
)


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


async def test_summarize_now_from_slack_writes_up_a_real_run(
    world: Services, anthropic_api: FakeAnthropic, slack: FakeSlack
) -> None:
    first_turn = anthropic_api.hold()
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics <@U999>"})]),
        reply_text("never read: this turn is cancelled by Summarize now"),
        reply_text(REPORT),
    )
    runner, sender = await serve(front_end(slack, world.runs, world.store, **EDITED), slack)
    try:
        assert await sender.command("Acme Robotics") == (200, "")
        parent = (await slack.wait_for("chat.postMessage"))[0]
        run_id, ts = (
            button_value(parent.args["blocks"], "research_summarize"),
            parent.response["ts"],
        )

        await anthropic_api.wait_for_requests(1)
        second_turn = anthropic_api.hold()
        first_turn.set()
        await anthropic_api.wait_for_requests(2)
        assert await sender.action("research_summarize", run_id, user="U2", message_ts=ts) == (
            200,
            "",
        )
        await anthropic_api.wait_for_cancelled(1)
        second_turn.set()
        await world.runs.wait(run_id)
        stored = await world.store.get_run(run_id)
    finally:
        await runner.cleanup()

    assert stored.status is RunStatus.DONE
    assert stored.termination_reason == "forced_synthesized"
    thread = slack.thread("C1", ts)
    assert "• Searched: Acme Robotics &lt;@U999&gt;" in thread
    summary = thread[-1]
    assert summary.startswith("Done (summarized on request) · 3 turns")
    assert "TL;DR: Acme builds warehouse robots [1]. &lt;!channel&gt; @\u2060here" in summary
    complete = slack.calls_to("files.completeUploadExternal")[0].args
    assert (complete["channel_id"], complete["thread_ts"]) == ("C1", ts)
    shared = next(iter(slack.files.values()))
    assert shared.content.decode().startswith("# Acme Robotics")
    final = slack.calls_to("chat.update")[-1].args
    assert "Done (summarized on request)" in json.dumps(final["blocks"])
    assert button_value(final["blocks"], "research_cancel") == ""
