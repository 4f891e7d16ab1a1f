"""The chat platforms failing under a run: rate limits, refused replies and files, a revoked
token, an edit still on the wire when the run ends, malformed requests and a busy port. Each
test drives the real slack-bolt / discord.py front end against the local fakes and asserts on
what reached the thread, and on whether delivery counted (the runs service records a run as
delivered only when `on_finished` returned normally)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    # discord.py imports `audioop`, deprecated on Python 3.11-3.12.
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from bot.adapters.slack.app import serve_slack
from bot.domain import RunStatus
from bot.errors import ConfigError
from bot.runs.manager import RunManager
from bot.store.runs import Store
from tests.adapters.discord.world import DiscordBot, card_text, custom_ids, thread_posts
from tests.adapters.scripted_engine import ScriptedEngine
from tests.adapters.slack.world import EDITED, SlackWorld, button_value, slack_settings
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import Call, FakeSlack

LONG_TLDR = " ".join(f"Finding {n}: Acme ships robots to a new market & grows." for n in range(150))


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@contextlib.asynccontextmanager
async def slack_bot(slack: FakeSlack, db: Path, **kwargs: Any) -> AsyncIterator[SlackWorld]:
    bot = await SlackWorld.start(slack, db, **{**EDITED, **kwargs})
    try:
        yield bot
    finally:
        await bot.stop()


def _blocks(call: Call) -> str:
    return str(call.args.get("blocks", ""))


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


async def _delivered(store: Store, run_id: str) -> bool:
    return (await store.get_run(run_id)).delivered_at is not None


async def test_a_rate_limited_final_edit_waits_retry_after_then_lands(
    slack: FakeSlack, tmp_path: Path
) -> None:
    async with slack_bot(slack, tmp_path / "db.sqlite3") as bot:
        run_id, ts = await bot.research("Acme Robotics")
        await bot.engine.parked(run_id).wait()
        await slack.wait_for("chat.update")
        slack.rate_limit("chat.update", retry_after=1)
        bot.engine.release.set()
        await bot.runs.wait(run_id)
        assert await _delivered(bot.store, run_id)

    intermediate, limited, final = slack.calls_to("chat.update", ok_only=False)
    assert [c.status for c in (intermediate, limited, final)] == [200, 429, 200]
    assert final.at - limited.at >= 1.0
    assert final.args["ts"] == ts
    assert "Done" in _blocks(final)
    assert button_value(final.args["blocks"], "research_summarize") == ""


async def test_a_final_edit_rate_limited_past_the_sdks_retries_still_lands(
    slack: FakeSlack, tmp_path: Path
) -> None:
    async with slack_bot(slack, tmp_path / "db.sqlite3") as bot:
        run_id, ts = await bot.research("Acme Robotics")
        await bot.engine.parked(run_id).wait()
        await slack.wait_for("chat.update")
        # Four 429s in a row: one more than the SDK's own retries.
        slack.rate_limit("chat.update", times=4, retry_after=0)
        bot.engine.release.set()
        await bot.runs.wait(run_id)
        assert await _delivered(bot.store, run_id)

    edits = slack.calls_to("chat.update", ok_only=False)[1:]
    assert [c.status for c in edits] == [429, 429, 429, 429, 200]
    assert edits[-1].args["ts"] == ts
    shown = slack.messages[("C1", ts)]
    assert "*Done*" in str(shown["blocks"]) and "Researching" not in str(shown["blocks"])
    assert button_value(shown["blocks"], "research_summarize") == ""


async def test_a_refused_summary_reply_still_uploads_the_report(
    slack: FakeSlack, tmp_path: Path
) -> None:
    slack.fail("chat.postMessage", "internal_error", where=lambda args: "TL;DR" in args["text"])
    async with slack_bot(slack, tmp_path / "db.sqlite3") as bot:
        run_id, ts = await bot.research("Acme Robotics")
        bot.engine.release.set()
        await bot.runs.wait(run_id)
        assert await _delivered(bot.store, run_id)

    refused = slack.calls_to("chat.postMessage", ok_only=False)
    assert [c.error for c in refused if "TL;DR" in c.args["text"]] == ["internal_error"]
    (shared,) = slack.files.values()
    assert (shared.channel, shared.thread_ts) == ("C1", ts)
    assert shared.content.decode().startswith("# Acme Robotics")
    final = slack.calls_to("chat.update")[-1]
    assert "*Done*" in _blocks(final)
    assert "posted as messages" not in _blocks(final)


@pytest.mark.parametrize(
    ("method", "error", "status", "reason"),
    [
        (
            "files.getUploadURLExternal",
            "missing_scope",
            200,
            "missing_scope: the app needs the files:write scope",
        ),
        ("files.completeUploadExternal", "not_in_channel", 200, "not_in_channel"),
        ("files.completeUploadExternal", "internal_error", 503, "internal_error"),
    ],
)
async def test_a_refused_file_becomes_the_report_as_messages(
    slack: FakeSlack, tmp_path: Path, method: str, error: str, status: int, reason: str
) -> None:
    # Slack names the missing scope only with `missing_scope`.
    needed = {"needed": "files:write"} if error == "missing_scope" else {}
    slack.fail(method, error, status=status, **needed)
    engine = ScriptedEngine(tldr=LONG_TLDR)
    async with slack_bot(slack, tmp_path / "db.sqlite3", engine=engine) as bot:
        run_id, ts = await bot.research("Acme Robotics")
        engine.release.set()
        await bot.runs.wait(run_id)
        assert await _delivered(bot.store, run_id)
        stored = await bot.store.report(run_id)
    assert stored is not None
    markdown = stored[1]

    thread = slack.thread("C1", ts)
    note = (
        f"I couldn't attach the report file ({reason}): here it is as messages. "
        f"`/research show {run_id}` shows it again."
    )
    start = thread.index(note) + 1
    pieces = thread[start:]
    assert len(pieces) >= 3
    assert all(len(piece) <= 4_000 for piece in pieces)
    posted = " ".join(_unescape(piece) for piece in pieces)
    assert posted.split() == markdown.split()
    assert "&amp;" in pieces[1]  # escaped like any untrusted text
    assert " & " not in " ".join(pieces)
    final = slack.calls_to("chat.update")[-1]
    assert "Done · report posted as messages" in _blocks(final)


async def test_a_revoked_token_is_logged_once_and_the_run_delivered_at_the_next_start(
    slack: FakeSlack, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "db.sqlite3"
    async with slack_bot(slack, db) as bot:
        run_id, ts = await bot.research("Acme Robotics")
        await bot.engine.parked(run_id).wait()
        slack.revoke()
        bot.engine.release.set()
        await bot.runs.wait(run_id)
        record = await bot.store.get_run(run_id)
    assert (record.status, record.delivered_at) == (RunStatus.DONE, None)
    refused = [c for c in slack.calls if c.error == "invalid_auth"]
    assert {c.method for c in refused} >= {"chat.postMessage", "chat.update"}
    assert not any("TL;DR" in t for t in slack.thread("C1", ts))
    warned = [
        r
        for r in caplog.records
        if r.name.startswith("bot.adapters") and r.levelno >= logging.WARNING
    ]
    assert len(warned) == 1
    assert "invalid_auth" in warned[0].getMessage()
    assert all(
        r.levelno < logging.ERROR for r in caplog.records if r.name.startswith("bot.adapters")
    )

    slack.revoke(None)  # reinstalled
    async with slack_bot(slack, db) as again:
        assert await again.front.recover() == [run_id]
        await again.runs.wait(run_id)
        assert await _delivered(again.store, run_id)
    assert any("TL;DR" in t for t in slack.thread("C1", ts))
    (shared,) = slack.files.values()
    assert shared.thread_ts == ts


async def test_a_token_refused_before_the_first_post_cancels_the_run_and_says_why(
    slack: FakeSlack, tmp_path: Path
) -> None:
    async with slack_bot(slack, tmp_path / "db.sqlite3") as bot:
        await bot.sender.command("help")  # bolt checks the token once, at its first request
        slack.revoke("token_revoked")
        assert await bot.sender.command("Acme Robotics") == (200, "")
        answer = (await slack.wait_for("response_url"))[0].args
        (run,) = await bot.store.list_runs()
        await bot.runs.wait(run.run_id)
        record = await bot.store.get_run(run.run_id)
    assert answer["text"].startswith("Slack refused my token")
    assert record.status == RunStatus.CANCELLED
    assert record.delivered_at is not None  # nothing to deliver into: not retried forever


class _Heard(logging.Handler):
    """Sets `event` when a log record containing `needle` is emitted (on the loop's thread)."""

    def __init__(self, needle: str) -> None:
        super().__init__(logging.DEBUG)
        self.needle = needle
        self.event = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.needle in record.getMessage():
            self.event.set()


@contextlib.contextmanager
def _hearing(logger: str, needle: str) -> Iterator[_Heard]:
    handler = _Heard(needle)
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.DEBUG)
    log.addHandler(handler)
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


async def test_the_final_edit_lands_after_an_edit_still_in_flight(
    slack: FakeSlack, tmp_path: Path
) -> None:
    held = slack.hold("chat.update")
    with _hearing("bot.adapters.chat.progress", "waits for an edit still on the wire") as waiting:
        async with slack_bot(slack, tmp_path / "db.sqlite3") as bot:
            run_id, ts = await bot.research("Acme Robotics")
            await held.arrived.wait()
            bot.engine.release.set()
            await slack.wait_for("files.completeUploadExternal")
            async with asyncio.timeout(10):
                await waiting.event.wait()
            assert slack.calls_to("chat.update", ok_only=False) == []
            held.release()
            await bot.runs.wait(run_id)
            assert await _delivered(bot.store, run_id)

    intermediate, final = slack.calls_to("chat.update")
    assert "Researching" in _blocks(intermediate)
    assert button_value(intermediate.args["blocks"], "research_summarize") == run_id
    assert "*Done*" in _blocks(final)
    assert button_value(final.args["blocks"], "research_summarize") == ""
    shown = slack.messages[("C1", ts)]
    assert "*Done*" in str(shown["blocks"])
    assert button_value(shown["blocks"], "research_cancel") == ""


@pytest.fixture
def _restore_discord_base() -> Iterator[None]:
    base = discord.http.Route.BASE
    yield
    discord.http.Route.BASE = base


@pytest.mark.usefixtures("_restore_discord_base")
@pytest.mark.parametrize("status", [403, 413])
async def test_a_refused_discord_attachment_becomes_messages_under_2000_characters(
    tmp_path: Path, status: int
) -> None:
    engine = ScriptedEngine(tldr=LONG_TLDR)
    async with FakeDiscord() as fake:
        fake.fail_next("POST", r"/channels/\d+/messages", status, where=lambda c: bool(c.files))
        bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
        try:
            run_id, message = await bot.research("Acme Robotics")
            engine.release.set()
            await bot.runs.wait(run_id)
            assert await _delivered(bot.store, run_id)
            stored = await bot.store.report(run_id)
        finally:
            await bot.stop()
    assert stored is not None
    posts = thread_posts(fake, message["id"])
    refused = [p for p in posts if p.files]
    assert [p.status for p in refused] == [status]
    texts = [p.body["content"] for p in posts if p.status == 200]
    assert all(0 < len(t) <= 2000 for t in texts)
    note = next(i for i, t in enumerate(texts) if t.startswith("I couldn't attach the report file"))
    assert re.fullmatch(
        rf"I couldn't attach the report file \({status} .+\): here it is as messages\. "
        rf"`/research show run:{run_id}` shows it again\.",
        texts[note],
    )
    assert len(texts[note + 1 :]) >= 3
    assert " ".join(texts[note + 1 :]).split() == stored[1].split()
    final = fake.find("PATCH", rf"/channels/\d+/messages/{message['id']}")[-1]
    # The buttons are gone; the export menu stays (the report is stored, whatever was refused).
    assert custom_ids(final.body) == [f"rb:export:{run_id}"]
    assert "Done · report posted as messages" in card_text(final.body)


@pytest.mark.parametrize("stamp", ["abc", "1.7e9", "", " 1700000000", "١٧٠٠٠٠٠٠٠٠"])
async def test_a_malformed_request_timestamp_is_refused_without_a_traceback(
    slack: FakeSlack, tmp_path: Path, caplog: pytest.LogCaptureFixture, stamp: str
) -> None:
    async with slack_bot(slack, tmp_path / "db.sqlite3") as bot:
        body = bot.sender.command_body("Acme Robotics")
        status, _ = await bot.sender.send(
            body,
            "application/x-www-form-urlencoded",
            headers={"X-Slack-Request-Timestamp": stamp},
        )
    assert status == 401
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert slack.calls_to("chat.postMessage") == []


async def test_a_port_in_use_is_one_line_to_act_on(slack: FakeSlack, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with Store.connect(tmp_path / "db.sqlite3") as store:
            runs = RunManager(store, ScriptedEngine())
            with pytest.raises(ConfigError) as raised:
                await serve_slack(slack_settings(slack), runs, store, port=port, host="127.0.0.1")
            await runs.shutdown()
    assert str(raised.value) == (
        f"port {port} is already in use: stop the other process or choose another with --port"
    )


async def test_show_posts_the_report_as_messages_when_slack_refuses_the_file(
    slack: FakeSlack, tmp_path: Path
) -> None:
    async with slack_bot(slack, tmp_path / "db.sqlite3") as bot:
        run_id, _ = await bot.research("Acme Robotics")
        bot.engine.release.set()
        await bot.runs.wait(run_id)
        slack.fail("files.getUploadURLExternal", "missing_scope", needed="files:write")
        before = len(slack.calls_to("chat.postMessage"))
        assert await bot.sender.command(f"show {run_id}", channel="C7") == (200, "")
        note = (
            "I couldn't attach the report file (missing_scope: the app needs the "
            "files:write scope): here it is as messages."
        )
        await slack.wait_for("chat.postMessage", where=lambda c: c.args["text"] == note)
        await slack.wait_for("chat.postMessage", before + 3)
    shared, *replies = slack.calls_to("chat.postMessage")[before:]
    assert shared.args["text"].startswith(f"<@U1> shared report `{run_id}`")
    assert all(r.args["thread_ts"] == shared.response["ts"] for r in replies)
    assert replies[0].args["text"] == note
    assert replies[1].args["text"].startswith("# Acme Robotics")
    assert slack.calls_to("response_url") == []


@pytest.mark.usefixtures("_restore_discord_base")
async def test_show_posts_the_report_as_messages_when_discord_refuses_the_file(
    tmp_path: Path,
) -> None:
    async with FakeDiscord() as fake:
        bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3")
        try:
            run_id, _message = await bot.research("Acme Robotics")
            assert bot.engine is not None
            bot.engine.release.set()
            await bot.runs.wait(run_id)
            channel = fake.guild.channel_id
            fake.fail_next("POST", rf"/channels/{channel}/messages", where=lambda c: bool(c.files))
            before = len(fake.find("POST", rf"/channels/{channel}/messages"))
            answer = await bot.command(fake.guild.bob, "show", run=run_id)
        finally:
            await bot.stop()
    assert answer == f"Posted the report of run `{run_id}` here."
    refused, *texts = fake.find("POST", rf"/channels/{channel}/messages")[before:]
    assert refused.status == 403
    assert refused.files
    contents = [t.body["content"] for t in texts]
    assert contents[0].startswith(f"Report `{run_id}`, shared by")
    assert contents[0].endswith(
        "I couldn't attach the report file (403 Forbidden (error code: 50013): "
        "Missing Permissions): here it is as messages."
    )
    assert contents[1].startswith("# Acme Robotics")


async def test_an_agent_view_status_whose_answer_was_lost_still_gets_its_final_edit(
    slack: FakeSlack, tmp_path: Path
) -> None:
    thread = "1700000000.999999"

    def is_status(args: dict[str, Any]) -> bool:
        return args.get("thread_ts") == thread and "research_cancel" in str(args.get("blocks"))

    # Slack posts the run's status message in the person's thread, but its answer never
    # arrives: the connection drops first.
    slack.lose("chat.postMessage", where=is_status)
    async with slack_bot(slack, tmp_path / "db.sqlite3") as bot:
        await bot.sender.direct_message("Acme Robotics", event_id="Ev1", thread_ts=thread)
        await slack.wait_for("chat.postMessage", where=lambda c: is_status(c.args))
        (run,) = await bot.store.list_runs()
        await bot.engine.parked(run.run_id).wait()
        bot.engine.release.set()
        await bot.runs.wait(run.run_id)
        assert await _delivered(bot.store, run.run_id)

    # Posted once (not again on top of the first), and that message is the one edited.
    (posted,) = [c for c in slack.calls_to("chat.postMessage") if is_status(c.args)]
    shown = slack.messages[("D1", posted.response["ts"])]
    assert "*Done*" in str(shown["blocks"]) and "Researching" not in str(shown["blocks"])
    assert button_value(shown["blocks"], "research_cancel") == ""
    (shared,) = slack.files.values()
    assert shared.thread_ts == thread
