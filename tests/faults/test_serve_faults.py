"""`research-bot serve` killed with kill -9 (no chance to clean up), then started again: a run
killed mid-research is finished from its evidence in its old thread, and a report killed
mid-upload is delivered once. The real command, over Socket Mode to the fake Slack."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, error, reply_text, reply_tools
from tests.fakes.slack_api import FakeSlack, SlackSender
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import Cli, eventually

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n"
SECRET = "unused-in-socket-mode"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
def cli(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb, slack: FakeSlack
) -> Cli:
    env = world_env(tmp_path, anthropic_api, tavily, web)
    env |= {
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_APP_TOKEN": slack.app_token,
        "SLACK_API_URL": slack.api_url,
    }
    return Cli(tmp_path, env)


def _row(cli: Cli) -> dict[str, Any]:
    with closing(sqlite3.connect(f"file:{cli.env['RESEARCH_BOT_DB']}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM runs").fetchall()
        kinds = [r[0] for r in db.execute("SELECT kind FROM events ORDER BY id")]
    assert len(rows) == 1
    return dict(rows[0]) | {"kinds": kinds}


@asynccontextmanager
async def _serving(cli: Cli, slack: FakeSlack, connections: int) -> AsyncIterator[Any]:
    """`serve slack` until the block ends with SIGTERM (or the test killed it)."""
    process = await cli.start("serve", "slack")
    try:
        await slack.wait_for("socket_connected", connections)
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.communicate()


async def _hang(body: dict[str, Any]) -> Any:
    await asyncio.Event().wait()


async def _report(body: dict[str, Any]) -> Any:
    return reply_text(REPORT)


async def test_serve_killed_mid_run_finishes_it_in_its_thread_after_restart(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]))
    anthropic_api.responder = _hang
    async with _serving(cli, slack, 1) as process:
        await slack.socket_send(
            "slash_commands", SlackSender("", SECRET).command_payload("Acme Robotics")
        )
        parent = (await slack.wait_for("chat.postMessage"))[0].response["ts"]
        await anthropic_api.wait_for_requests(2)

        async def evidence_stored() -> bool:
            return "tool_finished" in _row(cli)["kinds"]

        await eventually(evidence_stored)
        process.kill()
        await process.wait()
    assert _row(cli)["status"] == "running"

    anthropic_api.responder = _report
    async with _serving(cli, slack, 2):
        [upload] = await slack.wait_for("files.completeUploadExternal")

        async def delivered() -> bool:
            return _row(cli)["delivered_at"] is not None

        await eventually(delivered)

    row = _row(cli)
    assert upload.args["thread_ts"] == parent
    assert (row["status"], row["termination_reason"]) == ("done", "interrupted_synthesized")
    shared = next(iter(slack.files.values()))
    assert "acme - result 1" in shared.content.decode()


async def test_serve_killed_mid_upload_delivers_the_report_once_after_restart(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.responder = _report
    held = slack.hold("files.completeUploadExternal")
    async with _serving(cli, slack, 1) as process:
        await slack.socket_send(
            "slash_commands", SlackSender("", SECRET).command_payload("Acme Robotics")
        )
        parent = (await slack.wait_for("chat.postMessage"))[0].response["ts"]
        await held.arrived.wait()
        process.kill()
        await process.wait()
    row = _row(cli)
    assert (row["status"], row["delivered_at"]) == ("done", None)

    async with _serving(cli, slack, 2):
        [upload] = await slack.wait_for("files.completeUploadExternal")

        async def delivered() -> bool:
            return _row(cli)["delivered_at"] is not None

        await eventually(delivered)

    assert upload.args["thread_ts"] == parent
    assert len(anthropic_api.requests) == 1  # the report was not written twice
    assert len(slack.calls_to("files.completeUploadExternal")) == 1


def _final_edit(args: dict[str, Any]) -> bool:
    return "(Done" in str(args.get("text", ""))


def _summaries(slack: FakeSlack) -> int:
    """Calls that said the run's TL;DR in its thread: a reply, or the plan's closing stream."""
    said = slack.calls_to("chat.postMessage", "chat.startStream", "chat.stopStream")
    return sum("Builds robots" in json.dumps(call.args) for call in said)


@pytest.mark.parametrize("streaming", ["off", "auto"])
async def test_serve_killed_after_the_upload_makes_only_the_last_edit_after_restart(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic, streaming: str
) -> None:
    cli.env["RESEARCH_BOT_SLACK_STREAMING"] = streaming
    anthropic_api.responder = _report
    held = slack.hold("chat.update", where=_final_edit)
    async with _serving(cli, slack, 1) as process:
        await slack.socket_send(
            "slash_commands", SlackSender("", SECRET).command_payload("Acme Robotics")
        )
        parent = (await slack.wait_for("chat.postMessage"))[0].response
        await held.arrived.wait()
        process.kill()
        await process.wait()
    row = _row(cli)
    assert row["delivered_at"] is None and row["report_posted_at"] is not None
    assert len(slack.calls_to("files.completeUploadExternal")) == 1
    assert _summaries(slack) == 1

    async with _serving(cli, slack, 2):
        await slack.wait_for("chat.update", where=lambda call: _final_edit(call.args))

        async def delivered() -> bool:
            return _row(cli)["delivered_at"] is not None

        await eventually(delivered)

    assert len(slack.calls_to("files.completeUploadExternal")) == 1
    assert _summaries(slack) == 1
    shown = slack.messages[(parent["channel"], parent["ts"])]
    assert "(Done" in shown["text"]
    assert len(anthropic_api.requests) == 1


async def test_a_run_without_a_report_killed_after_its_summary_says_it_once(
    cli: Cli, slack: FakeSlack, anthropic_api: FakeAnthropic
) -> None:
    cli.env["RESEARCH_BOT_SLACK_STREAMING"] = "off"
    anthropic_api.script(error(400, "invalid_request_error", "model: unknown model"))

    def failed_edit(args: dict[str, Any]) -> bool:
        return "Failed" in str(args.get("text", ""))

    def summaries() -> list[Any]:
        return [
            call
            for call in slack.calls_to("chat.postMessage")
            if call.args.get("thread_ts") and "unknown model" in str(call.args.get("text"))
        ]

    held = slack.hold("chat.update", where=failed_edit)
    async with _serving(cli, slack, 1) as process:
        await slack.socket_send(
            "slash_commands", SlackSender("", SECRET).command_payload("Acme Robotics")
        )
        await held.arrived.wait()
        process.kill()
        await process.wait()
    row = _row(cli)
    assert row["status"] == "failed"
    assert row["delivered_at"] is None and row["report_posted_at"] is not None
    assert len(summaries()) == 1

    async with _serving(cli, slack, 2):
        await slack.wait_for("chat.update", where=lambda call: failed_edit(call.args))

        async def delivered() -> bool:
            return _row(cli)["delivered_at"] is not None

        await eventually(delivered)

    assert len(summaries()) == 1
    assert len(anthropic_api.requests) == 1
