"""What every chat platform shares: the `ChatSink` it implements, the errors it raises, the
status it shows, and the words of its messages (endings, tool calls, the closing summary).

Platforms turn their SDK's failures into `ChatError`; `DeliveryFailed` says an outcome could
not reach its thread in any form (the runs service then delivers it again at the next start).
"""

from __future__ import annotations

import re
from typing import Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel

from bot.agent.events import ToolCalled, format_cost
from bot.agent.i18n import frame
from bot.domain import RunRecord
from bot.errors import BotError
from bot.runs import Outcome

FILE_REFUSED = "I couldn't attach the report file ({reason}): here it is as messages."
"""Said in the thread before a report posted as messages, when the platform refused the file."""

ENDING_LABELS = {
    "completed": "Done",
    "max_turns_synthesized": "Done (turn limit reached, written up)",
    "deadline_synthesized": "Done (time limit reached, written up)",
    "forced_synthesized": "Done (summarized on request)",
    "interrupted_synthesized": "Done (recovered after a restart)",
    "context_full_synthesized": "Done (the conversation outgrew the model, written up)",
    "error_synthesized": "Done (something failed; written up from what was found)",
    "cancelled": "Cancelled",
    "refused": "Declined by the model",
    "llm_error": "Failed: the model could not be reached",
}


class ChatError(BotError):
    """The chat platform refused a call or could not be reached; `reason` is its own word for it
    (`missing_scope`, `403 Forbidden …`). Sinks raise it, never their SDK's errors."""

    def __init__(self, reason: str, *, auth: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.auth = auth
        """The platform no longer accepts our token: every later call fails the same way."""


class DeliveryFailed(BotError):
    """A run's outcome reached its thread in no form; the runs service delivers it again later."""


def ending_label(ending: str, *, has_report: bool = True) -> str:
    if ending.endswith("_synthesis_failed"):
        if not has_report:
            return "Failed: nothing could be written up"
        return "Done (write-up failed: report built from the sources found)"
    return ENDING_LABELS.get(ending, ending)


class StatusView(BaseModel):
    """Everything the run's status message shows; each platform lays it out its own way."""

    run_id: str
    topic: str
    mode: str
    requester: str
    """A platform user id (rendered as a mention by the platform, which is ours, not the model's)."""
    state: str = "Starting"
    turn: int = 0
    action: str = ""
    sources: int = 0
    cost_usd: float | None = 0.0
    """None: a model without a known price took part (shown as `cost unknown`)."""
    finished: bool = False
    """When true the buttons are gone."""


class ChatSink(Protocol):
    """One platform's way to show a run. Every text it is given may hold untrusted text:
    the sink neutralises mentions and markup on its side before sending. A call the platform
    refuses raises `ChatError`; without a thread to write to, a call does nothing."""

    show_command: str
    """How a person asks for a run's report again here, with `{run_id}` to fill in."""

    async def post_status(self, run: RunRecord, view: StatusView) -> None:
        """Post the run's parent message (with buttons) and open its thread; store the location."""
        ...

    async def edit_status(self, run: RunRecord, view: StatusView) -> None: ...

    async def reply(self, run: RunRecord, text: str) -> None:
        """A short message in the run's thread."""
        ...

    async def upload_report(
        self, run: RunRecord, filename: str, markdown: str, comment: str
    ) -> None: ...

    async def post_report_text(self, run: RunRecord, note: str, markdown: str) -> None:
        """`note`, then the whole report as thread messages, each within the platform's limit."""
        ...


_BROADCAST = re.compile(r"@(everyone|here|channel)\b", re.IGNORECASE)


def defuse_broadcasts(text: str) -> str:
    """Bare `@everyone`/`@here`/`@channel` in untrusted text: a zero-width joiner stops the ping."""
    return _BROADCAST.sub("@\u2060\\1", text)


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut at line ends, else at a space, else anywhere."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        if current and len(current) + len(line) > limit:
            pieces.append(current)
            current = ""
        while len(line) > limit:
            cut = line.rfind(" ", limit // 2, limit) + 1 or limit
            pieces.append(line[:cut])
            line = line[cut:]
        current += line
    pieces.append(current)
    return [piece.rstrip() for piece in pieces if piece.strip()]


def describe_call(event: ToolCalled) -> str:
    """A person-readable line for a tool call (its input is the model's: shown, never obeyed)."""
    if event.name == "web_search":
        return f"Searched: {str(event.input.get('query', ''))[:150]}"
    if event.name == "read_page":
        url = str(event.input.get("url", ""))
        return f"Reading: {urlsplit(url).netloc or url[:80]}"
    return f"{event.name}"


def outcome_summary(outcome: Outcome) -> str:
    """The closing thread reply: what happened, the TL;DR, turns, time and cost."""
    label = ending_label(outcome.ending, has_report=outcome.report is not None)
    lines = [
        f"{label} · {outcome.turns} turns · {outcome.duration_s:.0f}s · "
        f"{format_cost(outcome.usage.cost_usd)}"
    ]
    if outcome.redelivery:
        lines.append("Posted after a restart: it could not be delivered when the run ended.")
    elif outcome.recovered:
        lines.append("This run was interrupted by a restart and finished from what it had found.")
    if outcome.report is not None:
        lines.append(f"{frame(outcome.report.language).tldr}: {outcome.report.tldr}")
    if outcome.error:
        lines.append(outcome.error)
    return "\n".join(lines)
