"""Slack text and Block Kit: untrusted text escaped so it pings nobody; the status message."""

from __future__ import annotations

import re
from typing import Any

from bot.adapters.chat.commands import Command, export_command
from bot.adapters.chat.exports import FORMAT_LABELS
from bot.adapters.chat.links import web_links_only
from bot.adapters.chat.sink import StatusView, defuse_broadcasts, sources_label
from bot.agent.report.model import format_cost
from bot.domain import Mode
from bot.errors import RequestError
from bot.export import Format

ACTION_SUMMARIZE = "research_summarize"
ACTION_CANCEL = "research_cancel"
ACTION_EXPORT = "research_export"
"""The finished message's format menu; each option's value is `export_value(run id, format)`."""

SECTION_CHARS = 3_000
"""Slack's limit for a section block's text."""
MESSAGE_CHARS = 3_900
"""Longest plain message we send; Slack truncates `text` past 40,000 but advises under 4,000."""
FALLBACK_CHARS = 300
"""The notification text beside blocks: short on purpose."""
ROW_QUESTION_CHARS = 90
ROW_ACTION_CHARS = 60
"""A deep run's researcher row: its sub-question and what it does, escaped, then cut to these."""

MARKDOWN_CHARS = 12_000
"""Slack's limit for `markdown` blocks, cumulative per message, and for a stream's `markdown_text`."""
PLAIN_CHARS = 150
"""A streamed task's or plan's title: plain text, kept short."""

_USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")
_TOKEN_OPENER = re.compile(r"(<|&lt;)(?=[@!#]|[A-Za-z][\w+.-]*:)")
"""The start of a Slack token (`<@U…>`, `<!here>`, `<#C…>`, `<url|label>`), also as an entity."""
_ANY_OPENER = re.compile(r"(<|&lt;)")


def escape(text: str) -> str:
    """Untrusted text (model, web, user) as Slack mrkdwn that shows as typed and notifies nobody.

    Escaping `&`, `<` and `>` turns every `<!channel>`, `<!here>`, `<!everyone>`, `<@U…>`,
    `<#C…>`, `<!subteam^…>` and `<url|label>` into literal text; bare `@here` and friends
    get a zero-width joiner so that no client or future `link_names` turns them into pings.
    """
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return defuse_broadcasts(text)


def safe_markdown(text: str) -> str:
    """Untrusted Markdown (model, web) for Slack's `markdown` block and streamed text: it keeps
    its formatting (`**bold**`, lists, `[label](http…)` links) and notifies nobody. A zero-width
    joiner after the `<` of every `<@…>`, `<!…>`, `<#…>`, `<url|label>` and before the word of a
    bare `@here` keeps them as typed but never a mention or a disguised link."""
    return defuse_broadcasts(_TOKEN_OPENER.sub("\\1\u2060", web_links_only(text)))


def safe_plain(text: str, limit: int = PLAIN_CHARS) -> str:
    """Untrusted text as a short plain-text label (a streamed task's title): no `<…>` of it can
    become a mention or a link, and it shows as typed."""
    flat = " ".join(text.split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return defuse_broadcasts(_ANY_OPENER.sub("\\1\u2060", flat))


def markdown_blocks(text: str) -> list[dict[str, Any]]:
    """Untrusted Markdown as one `markdown` block, within Slack's per-message limit."""
    safe = safe_markdown(text)
    if len(safe) > MARKDOWN_CHARS:
        safe = safe[: MARKDOWN_CHARS - 1] + "…"
    return [{"type": "markdown", "text": safe}]


def closing_blocks(run_id: str, *, has_report: bool) -> list[dict[str, Any]]:
    """The actions under a finished run's streamed reply: its report in each format, and how to
    share it again elsewhere."""
    blocks: list[dict[str, Any]] = []
    if has_report:
        blocks.append(
            {"type": "actions", "block_id": "research_export", "elements": [export_menu(run_id)]}
        )
    share = f"`/research show {escape(run_id)}` posts it again in any channel"
    blocks.append(
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": f"Run `{escape(run_id)}` · {share}"}],
        }
    )
    return blocks


def unescape_incoming(text: str) -> str:
    """Slack sends `&`, `<`, `>` in a slash command's text as entities: back to what was typed."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def clip(text: str, limit: int) -> str:
    """Cut already-escaped text to `limit` characters without leaving half an entity."""
    if len(text) <= limit:
        return text
    return _PARTIAL_ENTITY.sub("", text[: limit - 1]) + "…"


def mention(user_id: str) -> str:
    """Our own mention of the person who asked (an id from Slack's signed payload, checked)."""
    return f"<@{user_id}>" if _USER_ID.match(user_id) else escape(user_id)


def status_line(view: StatusView) -> str:
    parts = [f"*{escape(view.state)}*"]
    if view.turn:
        parts.append(f"turn {view.turn}")
    if view.sources:
        parts.append(sources_label(view.sources))
    if view.cost_usd is None or view.cost_usd > 0:
        parts.append(format_cost(view.cost_usd))
    line = " · ".join(parts)
    if view.action and not view.finished:
        line += f"\n{escape(view.action)}"
    return line


def researcher_lines(view: StatusView) -> str:
    """One short line per researcher of a deep run: ✓ once done, else what it is doing."""
    lines = []
    for row in view.researchers:
        parts = [
            f"{'✓' if row.done else '•'} *{row.agent}.* "
            f"{clip(escape(row.question), ROW_QUESTION_CHARS)}"
        ]
        if row.action and not view.finished:
            parts.append(clip(escape(row.action), ROW_ACTION_CHARS))
        if row.sources:
            parts.append(sources_label(row.sources))
        lines.append(" · ".join(parts))
    return "\n".join(lines)


def status_text(view: StatusView) -> str:
    """The message's plain `text`: what notifications and screen readers show."""
    return clip(f"Research: {escape(view.topic)} ({escape(view.state)})", FALLBACK_CHARS)


def status_blocks(
    view: StatusView, run_id: str, *, buttons: bool, choice: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The parent message: topic and requester, status, the company (`choice`: its blocks from
    bot/adapters/slack/choice.py), the two buttons while it runs, and once it has finished with
    a report, the menu that uploads it as a file into the thread."""
    kind = " (public contracts)" if view.mode == Mode.CONTRACTS.value else ""
    header = f"*Research{kind}:* {escape(view.topic)}\nAsked by {mention(view.requester)}"
    blocks: list[dict[str, Any]] = [
        _section(header),
        _section(status_line(view)),
    ]
    if view.researchers:
        blocks.append(_section(researcher_lines(view)))
    blocks += choice or []
    if buttons:
        blocks.append(
            {
                "type": "actions",
                "block_id": "research_controls",
                "elements": [
                    _button("Summarize now", ACTION_SUMMARIZE, run_id, style="primary"),
                    _button("Cancel", ACTION_CANCEL, run_id, style="danger", confirm=True),
                ],
            }
        )
    if view.finished and view.has_report:
        blocks.append(
            {"type": "actions", "block_id": "research_export", "elements": [export_menu(run_id)]}
        )
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": footer(run_id)}]})
    return blocks


def footer(run_id: str) -> str:
    """The last line of a run's status message: how a message in a thread is known as its."""
    return f"Run `{escape(run_id)}` · replies in the thread"


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, SECTION_CHARS)}}


def _button(
    label: str, action_id: str, run_id: str, *, style: str, confirm: bool = False
) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "value": run_id,
        "style": style,
        "text": {"type": "plain_text", "text": label},
    }
    if confirm:
        button["confirm"] = {
            "title": {"type": "plain_text", "text": "Cancel this run?"},
            "text": {
                "type": "plain_text",
                "text": "The research stops now. Use Summarize now to keep what it found.",
            },
            "confirm": {"type": "plain_text", "text": "Cancel the run"},
            "deny": {"type": "plain_text", "text": "Keep going"},
        }
    return button


def export_menu(run_id: str) -> dict[str, Any]:
    """A select of the formats: choosing one uploads that file into the run's thread."""
    return {
        "type": "static_select",
        "action_id": ACTION_EXPORT,
        "placeholder": {"type": "plain_text", "text": "Get the report as…"},
        "options": [
            {
                "text": {"type": "plain_text", "text": f"{label} (.{fmt.value})"},
                "value": export_value(run_id, fmt),
            }
            for fmt, label in FORMAT_LABELS.items()
        ],
    }


def export_value(run_id: str, fmt: Format) -> str:
    return f"{run_id} {fmt.value}"


def parse_export_value(value: str) -> Command:
    """An option's value back to its export. Ours, but read as carefully as typed input:
    raises RequestError when it is not one."""
    words = value.split()
    if len(words) != 2:
        raise RequestError("That is not a format I can export.")
    return export_command(*words)


def message_text(text: str) -> str:
    """A thread reply made from untrusted text (only its http(s) links stay links)."""
    return clip(escape(web_links_only(text)), MESSAGE_CHARS)


def shared_report_text(user_id: str, run_id: str, title: str, tldr: str) -> str:
    """`/research show`: who re-shared which report, and its TL;DR."""
    head = f"{mention(user_id)} shared report `{escape(run_id)}`: *{escape(title)}*"
    tldr = escape(web_links_only(tldr))
    return clip(f"{head}\nTL;DR: {tldr}\nThe full report is in the thread.", MESSAGE_CHARS)
