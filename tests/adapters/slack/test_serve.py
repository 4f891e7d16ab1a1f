"""`serve_slack`: one clear error for missing or refused tokens, HTTP mode on a port, Socket Mode
over a WebSocket, and recovery of interrupted runs as it starts."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.slack.app import serve_slack
from bot.adapters.slack.assistant import SUGGESTED_PROMPTS
from bot.adapters.slack.front import COMMAND, SlackFrontEnd
from bot.config import Settings
from bot.domain import Origin, Request, RunStatus
from bot.errors import ConfigError
from bot.runs.manager import RunManager
from bot.store.runs import Store
from tests.adapters.slack.world import SECRET, ScriptedEngine, slack_settings
from tests.fakes.slack_api import FakeSlack, SlackSender


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with Store.connect(tmp_path / "db.sqlite3") as store:
        yield store


@pytest.mark.parametrize(
    ("values", "names"),
    [
        ({}, "SLACK_BOT_TOKEN"),
        ({"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_SIGNING_SECRET"),
        ({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"}, "SLACK_APP_TOKEN"),
    ],
)
async def test_a_missing_token_is_one_clear_sentence(
    store: Store, values: dict[str, str], names: str
) -> None:
    runs = RunManager(store, ScriptedEngine())
    with pytest.raises(ConfigError, match=names) as raised:
        await serve_slack(Settings.from_mapping(values), runs, store)
    assert str(raised.value).count(". ") == 0


async def test_a_refused_bot_token_stops_the_start(slack: FakeSlack, store: Store) -> None:
    settings = slack_settings(slack, SLACK_BOT_TOKEN="xoxb-revoked")
    with pytest.raises(ConfigError, match="invalid_auth"):
        await serve_slack(settings, RunManager(store, ScriptedEngine()), store)


async def test_an_unreachable_slack_stops_the_start_in_one_sentence(store: Store) -> None:
    closed = _free_port()
    settings = Settings.from_mapping(
        {
            "SLACK_BOT_TOKEN": "xoxb-1",
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": f"http://127.0.0.1:{closed}/api/",
        }
    )
    with pytest.raises(ConfigError, match="cannot be reached") as raised:
        await serve_slack(settings, RunManager(store, ScriptedEngine()), store)
    assert f"127.0.0.1:{closed}" in str(raised.value) and "SLACK_API_URL" in str(raised.value)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def _serving(
    settings: Settings, runs: RunManager, store: Store, **kwargs: Any
) -> AsyncIterator[None]:
    started = asyncio.Event()
    task = asyncio.create_task(serve_slack(settings, runs, store, started=started, **kwargs))
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait([task, waiting], return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if task.done():
        task.result()
    try:
        yield
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await runs.shutdown()


async def test_http_mode_serves_signed_commands_and_recovers_at_start(
    slack: FakeSlack, store: Store
) -> None:
    engine = ScriptedEngine()
    left = await store.create_run(
        Request(
            topic="Initech",
            origin=Origin(platform="slack", workspace="T1", channel="C3", user="U1"),
        )
    )
    await store.mark_running(left.run_id)
    other = await store.create_run(Request(topic="Hooli", origin=Origin(platform="discord")))
    await store.mark_running(other.run_id)
    runs = RunManager(store, engine)
    port = _free_port()

    async with _serving(slack_settings(slack), runs, store, port=port, host="127.0.0.1"):
        sender = SlackSender(f"http://127.0.0.1:{port}/slack/events", SECRET)
        assert await sender.command("Acme Robotics") == (200, "")
        await slack.wait_for("chat.postMessage", where=lambda c: c.args["channel"] == "C1")
        await runs.wait(left.run_id)

    assert (await store.get_run(left.run_id)).status == RunStatus.DONE
    assert (await store.get_run(other.run_id)).status == RunStatus.RUNNING
    recovered = slack.calls_to("chat.postMessage")
    assert any(c.args["channel"] == "C3" and "Initech" in c.args["text"] for c in recovered)


async def test_the_web_api_calls_of_a_run_share_kept_alive_connections(
    slack: FakeSlack, store: Store
) -> None:
    engine = ScriptedEngine()
    engine.release.set()  # runs finish once they have made their calls
    runs = RunManager(store, engine)
    port = _free_port()

    async with _serving(slack_settings(slack), runs, store, port=port, host="127.0.0.1"):
        sender = SlackSender(f"http://127.0.0.1:{port}/slack/events", SECRET)
        assert await sender.command("Acme Robotics") == (200, "")
        await slack.wait_for("files.completeUploadExternal")

    calls = [c for c in slack.calls if c.method != "upload"]
    connections = {c.peer for c in calls}
    # One connection per call (slack_sdk without a session) would make these equal; calls made
    # at the same moment may each open one of their own.
    assert len(calls) >= 6 and len(connections) <= len(calls) // 2, [c.peer for c in calls]


async def test_socket_mode_acks_over_the_websocket(slack: FakeSlack, store: Store) -> None:
    settings = slack_settings(slack, SLACK_APP_TOKEN=slack.app_token, SLACK_SIGNING_SECRET=None)
    runs = RunManager(store, ScriptedEngine())

    async with _serving(settings, runs, store):
        await slack.wait_for("socket_connected")
        payload = SlackSender("", SECRET).command_payload("Acme Robotics")
        envelope = await slack.socket_send("slash_commands", payload)
        ack = await slack.wait_for("socket_ack")
        assert ack[0].args["envelope_id"] == envelope
        parent = await slack.wait_for("chat.postMessage")
        assert "Acme Robotics" in parent[0].args["text"]


async def test_build_slack_app_needs_only_the_bot_token_in_socket_mode(
    slack: FakeSlack, store: Store
) -> None:
    settings = slack_settings(slack, SLACK_APP_TOKEN=slack.app_token, SLACK_SIGNING_SECRET=None)
    front = SlackFrontEnd(settings, RunManager(store, ScriptedEngine()), store)
    assert front.app.client.base_url == slack.api_url


def test_the_manifest_asks_for_what_the_app_uses() -> None:
    manifest = (Path(__file__).parents[3] / "slack-manifest.yaml").read_text()

    assert f"  - command: {COMMAND}\n" in manifest
    assert "should_escape: false" in manifest
    assert "| search <words> |" in manifest  # the usage hint names every command
    scopes = [
        "commands",
        "chat:write",
        "channels:join",
        "channels:read",
        "groups:read",
        "im:read",
        "mpim:read",
        "files:write",
        "reactions:read",
        "users:read",
        "app_mentions:read",
        "im:history",
        "assistant:write",
    ]
    assert [
        line.split()[1]
        for line in manifest.splitlines()
        if line.startswith("      - ") and "#" in line
    ] == scopes
    events = ["reaction_added", "app_mention", "message.im", "assistant_thread_started"]
    events += ["assistant_thread_context_changed", "agent_session_stopped"]
    for event in events:
        assert f"      - {event}\n" in manifest
    # Slack's current schema: the agent view, not the assistant view it replaces.
    assert "  agent_view:\n    agent_description: " in manifest
    assert "assistant_view" not in manifest and "assistant_description" not in manifest
    assert "    messages_tab_enabled: true\n" in manifest
    prompts = re.findall(r"^      - title: \"?(.+?)\"?\n        message: (.+)$", manifest, re.M)
    assert [{"title": t, "message": m} for t, m in prompts] == SUGGESTED_PROMPTS
    assert "socket_mode_enabled: true" in manifest
