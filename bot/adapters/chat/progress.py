"""The progress renderer every chat front end uses: `ChatProgress` turns a run's events into one status message edited in place (throttled per
run and under a shared per-workspace budget; a deep run's researchers as rows in it), batched
milestone replies in the thread (tool calls; a deep run's plan, findings and draft), and
at the end a TL;DR reply plus the report file (or, when the file is refused, the report as
messages), on top of a platform's `ChatSink` (bot/adapters/chat/sink.py). Once the report is in
the thread the store records it, so that a delivery cut short after it (a crash before the last
edit) is finished again with that edit alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from aiolimiter import AsyncLimiter

from bot.adapters.chat.choice import fold_identity
from bot.adapters.chat.sink import (
    FILE_REFUSED,
    ChatError,
    ChatSink,
    DeliveryFailed,
    ResearcherRows,
    StatusView,
    StepRows,
    deep_milestone,
    describe_call,
    ending_label,
    outcome_summary,
)
from bot.agent.events import (
    CoverageChecked,
    Event,
    IdentityOffered,
    IdentitySettled,
    Notice,
    ProviderSwitched,
    RunQueued,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    UsageRecorded,
    add_costs,
)
from bot.domain import RunRecord
from bot.errors import StoreError
from bot.runs.manager import Outcome
from bot.store.runs import Store

log = logging.getLogger(__name__)
BUDGET_RETRY_S = 0.5
"""How long an intermediate edit waits when the workspace's edit budget is spent."""
IN_FLIGHT_WAIT_S = 60.0
"""How long the final edit waits for an intermediate one still on the wire (SDK timeouts and
rate-limit retries included), so that the final one is the last to land."""


class ChatProgress:
    """Follows one run in a chat: a `RunListener` built on a platform's `ChatSink`.

    `on_event` never fails for the platform's sake (it logs, once per reason); `on_finished`
    raises `DeliveryFailed` when the outcome reached the thread in no form.
    """

    def __init__(
        self,
        sink: ChatSink,
        view: StatusView,
        *,
        store: Store,
        limiter: AsyncLimiter,
        min_edit_interval_s: float = 3.0,
    ) -> None:
        self._sink = sink
        self._store = store
        self.view = view
        self._limiter = limiter
        self._interval = min_edit_interval_s
        self._posted = False
        self._dirty = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._editing: asyncio.Future[None] | None = None
        """The intermediate edit on the wire, if any: the final edit goes after it."""
        self._milestones: list[str] = []
        self._rows = ResearcherRows(view)
        self._steps = StepRows(view)
        self._seen_urls: set[str] = set()
        self._failures: set[str] = set()
        self._token_refused = False
        self.quiet = False
        """Another view shows the progress (Slack's streamed plan): events only fold into the
        status and its milestones wait; at the end neither the milestones nor the summary are
        said here. `speak` ends it, and what waited then shows."""

    def speak(self, run: RunRecord) -> None:
        """Leave quiet mode: the status is edited to catch up, and milestones go out again."""
        self.quiet = False
        if self._posted and not self._token_refused:
            self._request_edit(run)

    async def on_event(self, run: RunRecord, event: Event) -> None:
        if not self._posted:
            # Not caught: a run whose parent message cannot be posted is the front end's to stop.
            self._posted = True
            self.view.run_id = self.view.run_id or run.run_id  # a listener made before submit
            self._apply(event)
            await self._sink.post_status(run, self.view)
            return
        if isinstance(event, IdentityOffered | IdentitySettled):
            await self._show_identity(run, event)
            return
        if self._token_refused or self.quiet:
            self._apply(event)
            return
        try:
            await self._show(run, event)
        except ChatError as error:
            self._failed(run, "progress", error)

    async def let_go(self, run: RunRecord) -> None:
        """Claimed by another replica, whose listener edits the status from now on."""
        await self._stop_edits()
        if self._editing is not None and not self._editing.done():
            await asyncio.wait([self._editing], timeout=IN_FLIGHT_WAIT_S)

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        await self._stop_edits()
        has_report = outcome.markdown is not None and outcome.filename is not None
        view = self.view
        view.finished, view.action, view.has_report = True, "", has_report
        for row in view.researchers:
            row.action = ""
        view.state = ending_label(outcome.ending, has_report=outcome.report is not None)
        view.cost_usd = outcome.usage.cost_usd
        said = reported = outcome.posted  # an earlier delivery, cut short, said them
        edited = False
        try:
            if not outcome.posted:
                said, reported = await self._say(run, outcome)
        finally:
            # The final edit lands whatever happened above, after any edit still on the wire;
            # not when this delivery is being cancelled (it is delivered again at the next start).
            if not _cancelling():
                edited = await self._final_edit(run)
        if not (reported if has_report else (said or edited)):
            raise DeliveryFailed(
                f"run {run.run_id}: its outcome reached no one in the thread "
                f"({', '.join(sorted(self._failures)) or 'no reason given'})"
            )

    async def _say(self, run: RunRecord, outcome: Outcome) -> tuple[bool, bool]:
        """The milestones, the summary and the report; whether the summary and the report
        reached the thread. The report's arrival is stored at once."""
        if not self.quiet:
            await self._quietly(run, "milestones", self._flush_milestones(run))
        said = self.quiet or await self._quietly(
            run, "the summary", self._sink.reply(run, outcome_summary(outcome))
        )
        if outcome.markdown is None or outcome.filename is None:
            # A run without a report: its summary is all there is to say.
            if said and not self.quiet:
                await self._mark_posted(run)
            return said, False
        reported = await self._send_report(run, outcome.filename, outcome.markdown)
        if reported:
            await self._mark_posted(run)
        return said, reported

    async def _mark_posted(self, run: RunRecord) -> None:
        # The one window left: the platform has the write-up (Slack's
        # files.completeUploadExternal has answered, or the last message is posted) and this
        # write has not landed. A crash in between says it again at the next start (or on the
        # replica that takes the run over); after it, only the last status edit is made again.
        try:
            await self._store.mark_report_posted(run.run_id)
        except StoreError as error:
            log.error("run %s: write-up posted, but not recorded: %s", run.run_id, error)

    async def _show(self, run: RunRecord, event: Event) -> None:
        # Milestones go out before anything else is said, so the thread reads in order.
        if isinstance(event, TurnStarted | SynthesisStarted | Notice | ProviderSwitched):
            await self._flush_milestones(run)
        if isinstance(event, Notice | ProviderSwitched):
            await self._sink.reply(run, event.message)
        if self._apply(event):
            self._request_edit(run)

    async def _show_identity(
        self, run: RunRecord, event: IdentityOffered | IdentitySettled
    ) -> None:
        """The choice's buttons come and go at once, quiet or not, past the edit interval: the
        run waits on them. An edit still on the wire lands first, so none brings them back."""
        self._apply(event)
        if self._token_refused:
            return
        if isinstance(event, IdentitySettled) and not self.quiet:
            await self._quietly(run, "milestones", self._flush_milestones(run))
            await self._quietly(run, "the company", self._sink.reply(run, event.note))
        if self._editing is not None and not self._editing.done():
            await asyncio.wait([self._editing], timeout=IN_FLIGHT_WAIT_S)
        async with self._limiter:
            edit = self._sink.edit_status(run, self.view.model_copy(deep=True))
            await self._quietly(run, "the choice of company", edit)

    async def _send_report(self, run: RunRecord, filename: str, markdown: str) -> bool:
        """The file; if the platform refuses it, the report as messages. True once it is there."""
        show = self._sink.show_command.format(run_id=run.run_id)
        try:
            await self._sink.upload_report(
                run, filename, markdown, comment=f"Report: {self.view.topic}"
            )
            return True
        except ChatError as error:
            self._failed(run, "the report file", error)
            note = f"{FILE_REFUSED.format(reason=error.reason)} {show} shows it again."
        try:
            await self._sink.post_report_text(run, note, markdown)
        except ChatError as error:
            self._failed(run, "the report as messages", error)
            self.view.state += f" · report not delivered: {show} posts it"
            return False
        self.view.state += " · report posted as messages"
        return True

    async def _quietly(self, run: RunRecord, what: str, call: Awaitable[None]) -> bool:
        """Await one platform call; False (and logged) when the platform refused it."""
        try:
            await call
        except ChatError as error:
            self._failed(run, what, error)
            return False
        return True

    async def _final_edit(self, run: RunRecord) -> bool:
        if self._editing is not None and not self._editing.done():
            log.debug("run %s: the final status waits for an edit still on the wire", run.run_id)
            done, _ = await asyncio.wait([self._editing], timeout=IN_FLIGHT_WAIT_S)
            if not done:
                self._editing.cancel()
        try:
            async with self._limiter:
                await self._sink.edit_status(run, self.view)
        except ChatError as error:
            self._failed(run, "the final status", error)
            return False
        return True

    async def _stop_edits(self) -> None:
        """No intermediate edit starts from now on (one already on the wire is left to land)."""
        self._dirty.clear()
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.wait([self._flusher])

    def _failed(self, run: RunRecord, what: str, error: ChatError) -> None:
        """Log a platform's refusal once per reason and run (a revoked token refuses everything)."""
        self._token_refused = self._token_refused or error.auth
        if error.reason in self._failures:
            log.debug("run %s: %s not shown: %s", run.run_id, what, error.reason)
            return
        self._failures.add(error.reason)
        log.warning("run %s: %s not shown: %s", run.run_id, what, error.reason)

    def _apply(self, event: Event) -> bool:
        """Fold an event into the view; True when the status message should change.

        A researcher's turns and tool calls change only its row, never the run's turn, action or
        milestones; its sources count towards the run's (once per URL), and its cost too.
        """
        view = self.view
        milestone = deep_milestone(event)
        if milestone is not None:
            self._milestones.append(milestone)
        row_changed = self._rows.apply(event) | self._steps.apply(event)
        if isinstance(event, RunQueued):
            view.state = f"Queued (#{event.position})"
        elif isinstance(event, RunStarted):
            view.state = "Researching"
        elif isinstance(event, TurnStarted) and not event.agent:
            view.turn = event.turn
        elif isinstance(event, ToolCalled) and not event.agent:
            view.action = describe_call(event)
            self._milestones.append(view.action)
        elif isinstance(event, ToolFinished):
            self._seen_urls.update(s.url for s in event.sources)
            view.sources = len(self._seen_urls)
        elif isinstance(event, UsageRecorded):
            view.cost_usd = add_costs(view.cost_usd, event.usage.cost_usd)
        elif isinstance(event, SynthesisStarted):
            view.state, view.action = "Writing the report", ""
        elif isinstance(event, CoverageChecked):
            view.state = "Researching the gaps" if event.gaps else "Coverage checked"
        elif isinstance(event, IdentityOffered | IdentitySettled):
            fold_identity(view, event)
        else:
            return row_changed
        return True

    async def _flush_milestones(self, run: RunRecord) -> None:
        if self._milestones:
            text = "\n".join(f"• {line}" for line in self._milestones)
            self._milestones.clear()
            await self._sink.reply(run, text)

    def _request_edit(self, run: RunRecord) -> None:
        self._dirty.set()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_edits(run))

    async def _flush_edits(self, run: RunRecord) -> None:
        # Coalesce: however many events arrive, at most one edit per interval shows the latest.
        # An intermediate edit never queues for the workspace budget: it waits for the next
        # interval instead, so the final edits of finishing runs are not stuck behind it.
        while self._dirty.is_set():
            if not self._limiter.has_capacity():
                await asyncio.sleep(max(self._interval, BUDGET_RETRY_S))
                continue
            self._dirty.clear()
            async with self._limiter:
                # Shielded: stopping the flusher must not abort an edit mid-request, or the
                # platform might apply it after the final one.
                snapshot = self.view.model_copy(deep=True)
                self._editing = asyncio.ensure_future(self._edit(run, snapshot))
                await asyncio.shield(self._editing)
            await asyncio.sleep(self._interval)

    async def _edit(self, run: RunRecord, view: StatusView) -> None:
        try:
            await self._sink.edit_status(run, view)
        except ChatError as error:
            self._failed(run, "a status edit", error)
        except Exception:
            # A background task: nobody else would see this.
            log.exception("run %s: status edit failed", run.run_id)


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
