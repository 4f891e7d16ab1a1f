"""The nouns every layer shares: a research request, where it came from, and a stored run."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from bot.errors import RequestError

MAX_TOPIC_CHARS = 300
MAX_QUESTION_CHARS = 2_000
"""A follow-up question: a question about a report may take a few sentences."""


class Mode(StrEnum):
    COMPANY = "company"
    """A profile of one company."""
    CONTRACTS = "contracts"
    """Open public tenders and contracts matching free-text filters."""


class Depth(StrEnum):
    QUICK = "quick"
    """One research agent (the default)."""
    DEEP = "deep"
    """A plan, researchers in parallel, a supervisor's draft and a final report (seed 004)."""


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
    private: bool = True
    """The conversation is private (a private channel, a group DM, a DM), or the platform did not
    say: what was asked in it is found only from it. False only where the platform says public."""

    @property
    def scope(self) -> str:
        """The workspace that sources and search are scoped to: the terminal is one of its own,
        and so is any front end without a workspace (the MCP server over stdio is the terminal's)."""
        return "terminal" if self.platform == "terminal" else self.workspace or "terminal"


IDENTITY_FIELD_CHARS = 200
"""Of each field of an identified company: it comes from a model reading search results."""


def _clean_field(value: str) -> str:
    return " ".join(strip_controls(value).split())[:IDENTITY_FIELD_CHARS]


class Company(BaseModel):
    """One company, told apart from its namesakes by what a registry or its website says."""

    name: str = Field(min_length=1)
    """The legal name where known (`Acme Robotics, Inc.`), else the name it trades under."""
    website: str = ""
    """Its website's domain (`acme-robotics.com`)."""
    country: str = ""
    """Where it is registered or headquartered."""
    ticker: str = ""
    """Exchange and ticker symbol, for a listed company (`NASDAQ: ACME`)."""
    registry_id: str = ""
    """A registry number where one was found (Companies House, SIREN, HRB …)."""
    description: str = ""
    """One line: what it does."""

    @field_validator("*", mode="before")
    @classmethod
    def _field(cls, value: object) -> object:
        # Model-written from web text: one line each, no controls, bounded.
        return _clean_field(value) if isinstance(value, str) else value

    def line(self) -> str:
        """`Acme Robotics, Inc. (acme-robotics.com; United States; NASDAQ: ACME)`."""
        facts = [f for f in (self.website, self.country, self.ticker, self.registry_id) if f]
        return f"{self.name} ({'; '.join(facts)})" if facts else self.name


class Identity(BaseModel):
    """Which company a company run researches, settled before the research proper."""

    company: Company
    namesakes: list[Company] = Field(default_factory=list)
    """Other companies the name also fits: what the research must leave out."""
    settled_by: Literal["search", "person", "timeout", "alone", "earlier"] = "search"
    """search: the name fitted one company; person: the asker chose among namesakes; timeout:
    nobody chose in time, the most likely one was taken; alone: no one could be asked (a
    terminal without a person); earlier: an earlier run of the workspace settled it."""


class Request(BaseModel):
    """A validated research request."""

    topic: str
    mode: Mode = Mode.COMPANY
    origin: Origin = Field(default_factory=Origin)
    depth: Depth = Depth.QUICK
    language: str = "en"
    """The asker's language, a BCP 47 primary tag (`de`, `ja` …): the report is written in it."""
    parent_run_id: str | None = None
    """Set for a follow-up: the finished run it asks about (`topic` is then the question)."""
    identity: Identity | None = None
    """The company a company run is about, once settled (the research brief names it)."""
    watch_id: str | None = None
    """Set for a watched run: the watch it is made for (its earlier reports are the baseline)."""

    @model_validator(mode="after")
    def _topic(self) -> Request:
        # After the fields, so a follow-up's question is checked as a question, not a topic.
        if self.parent_run_id is None:
            self.topic = validate_topic(self.topic)
        else:
            self.topic = validate_question(self.topic)
        return self


# ECMA-48 escape sequences, whole: OSC (title, OSC 8 hyperlink) up to BEL or ST, CSI (colours,
# cursor moves, screen clears), other ESC sequences; the same for their 8-bit C1 forms.
_ESCAPES = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?"
)


def strip_escapes(text: str) -> str:
    """Terminal escape sequences removed whole, every other character kept (a joiner in
    Persian or in an emoji stays): for text that is escaped again before it is printed."""
    return _ESCAPES.sub("", text)


def strip_controls(text: str) -> str:
    """Untrusted text made safe to print or store: escape sequences removed whole (an OSC 8
    link, a screen clear), then every other control or format character (BEL, C1, bidi
    overrides, NUL, a carriage return); newlines and tabs stay."""
    text = strip_escapes(text)
    return "".join(
        ch
        for ch in text
        if ch in "\n\t" or (unicodedata.category(ch)[0] != "C" and ch not in "\u2028\u2029")
    )


def validate_topic(value: str) -> str:
    """The one place a topic is checked; the message goes straight to the person who typed it."""
    topic = " ".join(strip_controls(value).split())
    if not topic:
        raise RequestError("Tell me what to research, e.g. `Acme Robotics`.")
    if len(topic) > MAX_TOPIC_CHARS:
        raise RequestError(
            f"That is {len(topic)} characters; keep the topic under {MAX_TOPIC_CHARS}."
        )
    return topic


def validate_question(value: str) -> str:
    """The one place a follow-up question is checked; the message goes to the person who asked."""
    question = " ".join(strip_controls(value).split())
    if not question:
        raise RequestError("Ask a question about the run, e.g. `Who are their customers?`.")
    if len(question) > MAX_QUESTION_CHARS:
        raise RequestError(
            f"That is {len(question)} characters; keep the question under {MAX_QUESTION_CHARS}."
        )
    return question


class RunRecord(BaseModel):
    """A run as stored."""

    run_id: str
    topic: str
    mode: Mode
    origin: Origin
    depth: Depth = Depth.QUICK
    language: str = "en"
    status: RunStatus
    termination_reason: str | None = None
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    """None when a model without a known price took part."""
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    owner: str | None = None
    """The process that runs it (`host:pid:token`), while it is queued or running."""
    lease_until: datetime | None = None
    """The owner renews this while alive; past it, the run is an orphan (interrupted)."""
    delivered_at: datetime | None = None
    """When the outcome reached its front end (thread, file); None: still to deliver."""
    report_posted_at: datetime | None = None
    """When its summary and report (a run without a report: its summary) reached the thread,
    before the last status edit: a delivery cut short after this is finished again without
    saying them twice."""
    parent_run_id: str | None = None
    """A follow-up's run: the finished run it asked about (`topic` is the question)."""
    watch_id: str | None = None
    """The watch a watched run was made for."""
    control: str | None = None
    """`summarize` or `cancel` pressed on any replica, for whichever replica runs it."""
