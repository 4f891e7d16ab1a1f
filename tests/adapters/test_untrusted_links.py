"""Untrusted text on its way to people: the terminal gets no escape sequences, Slack and Discord
get no link that is not http(s)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from rich.console import Console

from bot.adapters.chat.links import web_links_only
from bot.adapters.chat.sink import StatusView
from bot.adapters.discord.views import safe_text
from bot.adapters.slack.render import message_text, shared_report_text
from bot.adapters.terminal import TerminalProgress
from bot.agent.events import ToolCalled, ToolFinished
from bot.agent.fence import fence
from bot.domain import Mode, Origin, RunRecord, RunStatus, strip_controls

OSC8 = "\x1b]8;;https://evil.example\x1b\\click me\x1b]8;;\x1b\\"
HOSTILE = [
    ("\x1b[2J\x1b[Hcleared", "cleared"),
    (OSC8, "click me"),
    ("\x1b]0;new window title\x07after", "after"),
    ("bell\x07 and \x9b2Jc1 csi", "bell and c1 csi"),
    ("\x9d8;;https://evil.example\x9clink", "link"),
    ("over\rwrite", "overwrite"),
    ("bidi \u202eevil", "bidi evil"),
]

BAD_LINKS = [
    ("[click](javascript:alert(1))", "click"),
    ("<file:///etc/passwd>", "file:///etc/passwd"),
    ("<ftp://files.example/x>", "ftp://files.example/x"),
    ("[data](data:text/html,hi)", "data"),
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_escape_sequences_are_removed_whole(text: str, shown: str) -> None:
    assert strip_controls(text) == shown


async def test_terminal_progress_lines_carry_no_escape_sequences() -> None:
    out = io.StringIO()
    progress = TerminalProgress(
        Console(file=out, width=200),
        StatusView(run_id="r", topic="t", mode="company", requester="me"),
    )
    run = RunRecord(
        run_id="r",
        topic="t",
        mode=Mode.COMPANY,
        origin=Origin(),
        status=RunStatus.RUNNING,
        created_at=datetime.now(UTC),
    )

    await progress.on_event(
        run, ToolCalled(turn=1, call_id="a", name="web_search", input={"query": f"acme {OSC8}"})
    )
    await progress.on_event(
        run,
        ToolFinished(
            turn=1,
            call_id="a",
            name="read_page",
            is_error=True,
            content="read_page failed: (details below)\n"
            + fence("HTTP 404 \x1b[2J\x1b]0;pwned\x07Gone"),
        ),
    )

    printed = out.getvalue()
    assert "\x1b" not in printed and "\x07" not in printed
    assert (
        "Searched: acme click me" in printed
        and "read_page failed: (details below) HTTP 404 Gone" in printed
    )


@pytest.mark.parametrize(("text", "shown"), BAD_LINKS)
def test_discord_and_slack_keep_only_web_links(text: str, shown: str) -> None:
    message = f"See {text} today."

    assert web_links_only(message) == f"See {shown} today."
    assert safe_text(message) == f"See {shown} today."
    assert message_text(message) == f"See {shown} today."
    assert f"TL;DR: See {shown} today." in shared_report_text("U1", "r1", "T", message)


def test_web_links_and_plain_text_pass_unchanged() -> None:
    text = "**Acme** [site](https://acme.example) and https://b.example/x_(y) *as is*\n- list"

    assert web_links_only(text) == text
    assert safe_text(text) == text
