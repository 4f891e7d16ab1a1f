"""The command service every chat platform shares: what each `/research` command does for a
person in a place, who may press which button on which run, and what every answer and refusal
says. It returns plain data (a `Reply`, a `Shared` report, an exported file, a started run);
Slack and Discord only render it, each with its own escaping and mentions.

The rules, once: a person sees and shares only the runs of their own workspace (Slack team,
Discord guild) on their own platform, and a private conversation's runs (a private channel, a
group DM, a DM) are listed and found only from that conversation; anyone there may ask a running
run to write up now; only the person who started a run may cancel it; whatever else is pressed
"has finished".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from bot.adapters.chat.commands import (
    USAGE,
    Command,
    follow_up_line,
    history_lines,
    show_command,
    topic_command,
)
from bot.adapters.chat.exports import ChatExport
from bot.adapters.chat.found import SEARCH_LIMIT, SHOW, ThreadLink, hit_lines, no_hits
from bot.agent.followup.answer import versioned_filename
from bot.agent.language import language_for
from bot.agent.report.model import Report, report_filename
from bot.domain import Origin, Request, RunRecord, RunStatus
from bot.errors import ConfigError, NotFoundError, RequestError
from bot.export import Format, export
from bot.runs.manager import RunListener, RunManager
from bot.store.runs import Store
from bot.store.usage import one_workspace, period_start, usage_lines

log = logging.getLogger(__name__)

HISTORY_LIMIT = 15
MENTION = "{person}"
"""Where a reply's text names `Reply.mention`; each platform writes its own mention there."""
FINISHED = "That run has finished."
SUMMARIZING = "Writing up the report now."
CANCELLING = "Cancelling the run."
NOT_YOURS = f"Only {MENTION} can cancel this run."
CHOSEN = "Researching the company you chose."
REFINING = "Stopping: start again with a more specific name (add the website or the country)."
STARTED_ON = "That run has already started on {company}."
Action = Literal["summarize", "cancel"]


class Caller(BaseModel, frozen=True):
    """Who asks, from where: every entry point (a command, a button, a reaction, a message to the
    bot) makes one from its platform's signed payload."""

    platform: str
    workspace: str
    """Slack team id, Discord guild id: the runs this person may see and share."""
    channel: str = ""
    user: str = ""
    user_name: str = ""
    locale: str | None = None
    """The person's language setting (`de-DE`) when the platform says it; reports follow it."""
    private: bool | None = None
    """Whether the conversation is private, as the platform's payload says; None: it does not
    say, and the front end may ask the platform before a run starts. Unsaid is private."""

    def origin(self) -> Origin:
        return Origin(
            platform=self.platform,
            workspace=self.workspace,
            channel=self.channel,
            user=self.user,
            user_name=self.user_name,
            private=self.private is not False,
        )


class Markup(NamedTuple):
    """How one platform writes a reply: its escaping of plain text, its mention of a person by
    id, and its bold marker."""

    escape: Callable[[str], str]
    mention: Callable[[str], str]
    bold: str


class Reply(BaseModel):
    """A private answer to one person, in plain text each platform escapes its own way."""

    text: str = ""
    title: str = ""
    """A heading above `lines` (bold where the platform has bold)."""
    lines: list[str] = Field(default_factory=list)
    mention: str = ""
    """A platform user id `text` names at `MENTION`: ours (from a stored run), never typed."""

    @classmethod
    def of(cls, error: RequestError) -> Reply:
        """What to say for a refused request: a `Refused` carries its reply; any other
        `RequestError` (a parse error, a quota) says its message."""
        return error.reply if isinstance(error, Refused) else cls(text=str(error))

    def render(self, markup: Markup) -> str:
        """The reply as one platform writes it: text, then the bold title, then the lines."""
        pieces = self.text.split(MENTION) if self.mention else [self.text]
        text = markup.mention(self.mention).join(markup.escape(piece) for piece in pieces)
        title = f"{markup.bold}{markup.escape(self.title)}{markup.bold}" if self.title else ""
        parts = [text, title, *(markup.escape(line) for line in self.lines)]
        return "\n".join(part for part in parts if part)


class Refused(RequestError):
    """The rules said no; `reply` says why, to the person who asked."""

    def __init__(self, reply: Reply | str) -> None:
        self.reply = reply if isinstance(reply, Reply) else Reply(text=reply)
        super().__init__(self.reply.text)


class Shared(BaseModel):
    """A past report to post again where it was asked for (`/research show`)."""

    run: RunRecord
    report: Report
    markdown: str
    filename: str
    by: str
    """The user id of the person who shared it: each platform writes its own mention."""


class CommandService:
    """The `/research` service of one platform (`slack`, `discord`), which calls a workspace
    `place` (`workspace`, `server`) in what it says."""

    def __init__(
        self,
        runs: RunManager,
        store: Store,
        *,
        platform: str,
        place: str,
        usage: str = USAGE,
        font_dir: Path | None = None,
    ) -> None:
        self._runs = runs
        self._store = store
        self.platform = platform
        self._place = place
        self._usage = usage
        self._font_dir = font_dir
        """Extra fonts for PDF exports (`RESEARCH_BOT_EXPORT_FONTS`)."""

    def help(self) -> Reply:
        return Reply(text=self._usage)

    async def research(self, caller: Caller, text: str, listener: RunListener) -> RunRecord:
        """Start the research `text` asks for (`Acme`, `deep contracts roads, Ireland`) from any
        entry point. Raises RequestError (a bad topic, a quota) with what to tell the person."""
        return await self.start(caller, topic_command(text, self._usage), listener)

    async def start(self, caller: Caller, wanted: Command, listener: RunListener) -> RunRecord:
        """Start a parsed research command; returns its record (queued) at once. Raises
        RequestError when the daily budget or the hourly limit refuses it."""
        request = Request(
            topic=wanted.topic,
            mode=wanted.mode,
            origin=caller.origin(),
            depth=wanted.depth,
            language=language_for(caller.locale, wanted.topic),
        )
        record = await self._runs.submit(request, listener)
        log.info(
            "%s: run %s started by %s in %s/%s",
            self.platform,
            record.run_id,
            caller.user,
            caller.workspace,
            caller.channel,
        )
        return record

    async def history(self, caller: Caller) -> Reply:
        """The workspace's latest runs this conversation may see (public ones, and its own if it
        is private), newest first, each with its follow-ups under it."""
        runs = await self._store.list_runs(
            platform=self.platform,
            workspace=caller.workspace,
            limit=HISTORY_LIMIT,
            top_level=True,
            viewer_channel=caller.channel,
        )
        children = await self._store.follow_ups_of([run.run_id for run in runs])
        lines: list[str] = []
        for run, line in zip(runs, history_lines(runs), strict=False):
            lines.append(line)
            lines += [follow_up_line(child) for child in children.get(run.run_id, [])]
        return Reply(
            title=f"Recent research in this {self._place}", lines=lines or history_lines([])
        )

    async def search(
        self, caller: Caller, words: str, *, link: ThreadLink | None = None, show: str = SHOW
    ) -> Reply:
        """The workspace's past reports and answers that match `words`, best first, as this
        conversation may see them; each says where to open it (`link`, else the `show`
        command)."""
        hits = await self._store.search_reports(
            words,
            platform=self.platform,
            workspace=caller.workspace,
            viewer_channel=caller.channel,
            limit=SEARCH_LIMIT,
        )
        if not hits:
            return Reply(text=no_hits(words, self._place))
        links = await asyncio.gather(*(link(hit) for hit in hits)) if link else [None] * len(hits)
        lines = [
            line for hit, url in zip(hits, links, strict=True) for line in hit_lines(hit, url, show)
        ]
        return Reply(title=f"Past research in this {self._place}", lines=lines)

    async def usage(self, caller: Caller, days: int) -> Reply:
        """The workspace's spend over the last `days` days, per day and per person."""
        since = period_start(self._store.now(), days)
        rows = await self._store.usage(
            since=since, platform=self.platform, workspace=caller.workspace
        )
        found = one_workspace(rows, since=since.date(), days=days)
        return Reply(
            title=f"Research spend in this {self._place}", lines=usage_lines(found, days=days)
        )

    async def show(self, caller: Caller, run_id: str) -> Shared:
        """A report of this workspace to post again. Raises RequestError (no such run here, no
        report yet)."""
        run, version, report, markdown = await self._report(caller, show_command(run_id).run_id)
        return Shared(
            run=run,
            report=report,
            markdown=markdown,
            filename=versioned_filename(run, version) if version > 1 else report_filename(run),
            by=caller.user,
        )

    async def export(self, caller: Caller, run_id: str, fmt: Format) -> ChatExport:
        """A report of this workspace as a file in `fmt`, rendered off the event loop. Raises
        RequestError (no such run here, no report, a format this machine cannot make)."""
        run, _, report, _ = await self._report(caller, run_id)
        try:
            file = await export(run, report, fmt, font_dir=self._font_dir)
        except ConfigError as error:
            # This machine cannot make the format (no Pango for a PDF): the operator must act.
            log.warning("%s: run %s as %s: %s", self.platform, run.run_id, fmt.value, error)
            raise Refused(str(error)) from None
        return ChatExport(run, report.title, file)

    async def press(self, caller: Caller, action: Action, run_id: str) -> Reply:
        """A press of a running run's button (or its summarize reaction): what it did, wherever
        the run runs. Raises Refused when the rules say no."""
        record = self._runs.get_active(run_id) or await self._unfinished(run_id)
        if record is None or not self._sees(caller, record):
            raise Refused(FINISHED)
        if action == "cancel" and record.origin.user != caller.user:
            raise Refused(Reply(text=NOT_YOURS, mention=record.origin.user))
        if await self._runs.control(run_id, action) is None:
            raise Refused(FINISHED)
        return Reply(text=CANCELLING if action == "cancel" else SUMMARIZING)

    async def choose(self, caller: Caller, run_id: str, choice: int | None) -> Reply:
        """A press of one of a run's company buttons (a candidate's index; None: "none of
        these: refine"), wherever the run runs; anyone who may press Summarize may choose.
        Raises Refused when the rules say no or the run no longer waits for a choice."""
        record = self._runs.get_active(run_id) or await self._unfinished(run_id)
        if record is None or not self._sees(caller, record):
            raise Refused(FINISHED)
        if await self._runs.choose(run_id, choice) is None:
            settled = await self._store.identity_of(run_id)
            if settled is None:
                raise Refused(FINISHED)
            raise Refused(STARTED_ON.format(company=settled.company.name))
        return Reply(text=REFINING if choice is None else CHOSEN)

    async def _unfinished(self, run_id: str) -> RunRecord | None:
        """A run another replica runs (or that waits for one), as stored; None if it ended."""
        try:
            record = await self._store.get_run(run_id, platform=self.platform)
        except NotFoundError:
            return None
        finished = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)
        return None if record.status in finished else record

    def _sees(self, caller: Caller, run: RunRecord) -> bool:
        return (run.origin.platform, run.origin.workspace) == (self.platform, caller.workspace)

    async def _report(self, caller: Caller, run_id: str) -> tuple[RunRecord, int, Report, str]:
        """The run and its newest report version: (run, version, report, markdown)."""
        try:
            run = await self._store.get_run(
                run_id, platform=self.platform, workspace=caller.workspace
            )
            if run.origin.private and run.origin.channel != caller.channel:
                raise NotFoundError(run_id)  # a private conversation's run is only seen there
        except NotFoundError:
            raise Refused(
                f"No run `{run_id}` in this {self._place}. `/research history` lists them."
            ) from None
        found = await self._store.latest_report(run.run_id)
        if found is None:
            raise Refused(f"Run `{run.run_id}` has no report ({run.status.value}).")
        return (run, *found)
