"""Real Slack payloads replayed against the real bolt app, signed, over HTTP: every one is
answered with a 2xx within Slack's 3 seconds, and none leaves an error or a traceback in the log.
Slack retries what it cannot deliver, and may turn an app's event subscriptions off when too many
deliveries fail, which would silence mentions, reactions and the agent view too.

`payloads.jsonl` (beside this file) holds one payload of each shape (kind, envelope, event type
and subtype, channel type, in a thread or not, from a bot or not) found in slackapi's own test
suites (bolt-python, python-slack-sdk; MIT) and Slack's documentation; each line names its
`source`. Where the shared collection they were drawn from sits beside the repository
(`../shared/slack-payloads/payloads.jsonl`), its every payload is replayed too. Payloads that are
a bare event, or an envelope without its type, arrive wrapped in the Events API envelope Slack
sends.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.adapters.slack.ingress import rate_limited
from bot.agent import language
from tests.adapters.slack.world import SlackWorld
from tests.fakes.slack_api import FakeSlack

HERE = Path(__file__).parent
SHAPES = HERE / "payloads.jsonl"
COLLECTED = HERE.parents[2].parent / "shared" / "slack-payloads" / "payloads.jsonl"
"""The collection the shapes were drawn from, when it sits beside the repository."""
ACK_WINDOW_S = 3.0
ENVELOPES = ("event_callback", "url_verification", "app_rate_limited")


def _payloads() -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in (SHAPES, COLLECTED):
        if path.exists():
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                found.setdefault(entry["id"], entry)
    return list(found.values())


def _wire(entry: dict[str, Any], n: int) -> tuple[str, str]:
    """The request body and its content type, as Slack would send this payload."""
    if "form" in entry:
        return entry["form"], "application/x-www-form-urlencoded"
    body = dict(entry["body"])
    kind = body.get("type")
    if entry["kind"] == "events" or kind in ENVELOPES:
        if "event" in body and kind is None:
            body["type"] = "event_callback"
        elif kind not in ENVELOPES:
            body = {"type": "event_callback", "team_id": "T1", "event": body}
        body.setdefault("event_id", f"EvReplay{n}")
        body.setdefault("event_time", int(time.time()))
        return json.dumps(body), "application/json"
    return urlencode({"payload": json.dumps(body)}), "application/x-www-form-urlencoded"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[SlackWorld]:
    async with FakeSlack() as slack:
        running = await SlackWorld.start(slack, tmp_path / "db.sqlite3")
        running.engine.release.set()  # runs the replayed mentions start finish at once
        yield running
        await running.stop()


async def test_every_real_payload_is_answered_in_time_without_an_error(
    bot: SlackWorld, caplog: pytest.LogCaptureFixture
) -> None:
    payloads = _payloads()
    assert len(payloads) >= len(SHAPES.read_text().splitlines()) >= 70
    # As `serve_slack` does before it serves: loaded by a first request instead, the language
    # detector's profiles would hold the event loop (and every ack) for a moment.
    await asyncio.to_thread(language.warm)
    unanswered = []
    with caplog.at_level(logging.DEBUG):
        for n, entry in enumerate(payloads):
            body, content_type = _wire(entry, n)
            started = time.monotonic()
            status, _ = await bot.sender.send(body, content_type)
            took = time.monotonic() - started
            if not 200 <= status < 300 or took > ACK_WINDOW_S:
                unanswered.append((entry["id"], status, round(took, 2), entry["source"]))
        for run in await bot.store.list_runs(limit=100):
            await bot.runs.wait(run.run_id)

    assert unanswered == []
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert [(r.name, r.getMessage()[:200]) for r in errors] == []
    assert not any("Unhandled request" in r.getMessage() for r in caplog.records)


async def test_app_rate_limited_is_a_warning_saying_what_was_dropped(
    bot: SlackWorld, caplog: pytest.LogCaptureFixture
) -> None:
    notice = {
        "token": "legacy",
        "type": "app_rate_limited",
        "team_id": "T1",
        "minute_rate_limited": 1518467820,
        "api_app_id": "A1",
    }
    with caplog.at_level(logging.WARNING, logger="bot.adapters.slack"):
        assert await bot.sender.send(json.dumps(notice), "application/json") == (200, "")

    (warned,) = [r for r in caplog.records if "app_rate_limited" in r.getMessage()]
    assert warned.levelno == logging.WARNING
    assert warned.getMessage() == rate_limited(notice)
    assert "T1" in warned.getMessage() and "2018-02-12 20:37 UTC" in warned.getMessage()
    assert "mentions" in warned.getMessage()


@pytest.mark.parametrize(
    "event",
    [
        {"type": "member_joined_channel", "user": "U2", "channel": "C1", "channel_type": "C"},
        {"type": "message", "subtype": "message_changed", "channel": "D1", "channel_type": "im"},
        {"type": "message", "user": "U2", "text": "hi", "channel": "C1", "channel_type": "channel"},
        {"type": "tokens_revoked", "tokens": {"bot": ["UBOT"]}},
    ],
)
async def test_an_event_nothing_here_takes_is_acknowledged_and_does_nothing(
    bot: SlackWorld, event: dict[str, Any]
) -> None:
    assert await bot.sender.event(event, event_id="Ev1") == (200, "")
    assert await bot.store.list_runs(limit=10) == []
    assert bot.slack.calls_to("chat.postMessage", "chat.postEphemeral") == []
