"""The nouns every layer shares: a research request, where it came from, and a stored run."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field, field_validator

from bot.errors import RequestError

MAX_TOPIC_CHARS = 300


class Mode(StrEnum):
    COMPANY = "company"
    """A profile of one company."""
    CONTRACTS = "contracts"
    """Open public tenders and contracts matching free-text filters."""


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    """Ended with a report (any ending that produced one)."""
    FAILED = "failed"
    """Ended without a report (model error before any evidence, refusal …)."""
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    """The process stopped while it ran; recovery finishes it at the next start."""


class Origin(BaseModel):
    """Who asked, and where the run's messages go. Empty strings where a front end has no such thing."""

    platform: str = "terminal"
    """terminal | slack | discord"""
    workspace: str = ""
    """Slack team id / Discord guild id: history is scoped to it."""
    channel: str = ""
    thread: str = ""
    """Slack parent message ts / Discord thread id, once posted."""
    user: str = ""
    user_name: str = ""


class Request(BaseModel):
    """A validated research request."""

    topic: str
    mode: Mode = Mode.COMPANY
    origin: Origin = Field(default_factory=Origin)

    @field_validator("topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        return validate_topic(value)


def validate_topic(value: str) -> str:
    """The one place a topic is checked; the message goes straight to the person who typed it."""
    topic = " ".join(value.split())
    if not topic:
        raise RequestError("Tell me what to research, e.g. `Acme Robotics`.")
    if len(topic) > MAX_TOPIC_CHARS:
        raise RequestError(
            f"That is {len(topic)} characters; keep the topic under {MAX_TOPIC_CHARS}."
        )
    return topic


class RunRecord(BaseModel):
    """A run as stored."""

    run_id: str
    topic: str
    mode: Mode
    origin: Origin
    status: RunStatus
    termination_reason: str | None = None
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
