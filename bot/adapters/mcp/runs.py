"""What each MCP tool does, over the same runs service, store and follow-ups as chat: a run is
submitted with `RunManager.submit` and a `LiveRun` listener, controlled with `control`, and
read back from the store, always as the caller (`Caller`) may see it."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from bot.adapters.mcp.callers import PLATFORM, Caller
from bot.adapters.mcp.live import LiveRun
from bot.adapters.mcp.loops import at_home, on_loop
from bot.adapters.mcp.models import (
    Answer,
    Hit,
    Hits,
    ReportText,
    RunList,
    RunState,
    claim_support,
    run_summary,
    stored_state,
)
from bot.agent.followup.answer import answer_markdown
from bot.agent.language import language_for, stated
from bot.domain import Depth, Mode, Request, RunRecord, RunStatus
from bot.errors import NotFoundError, RequestError
from bot.export import Format, render
from bot.runs.followups import FollowUps
from bot.runs.manager import RunManager
from bot.store.runs import Store

MAX_LIST = 100
MAX_ENDED = 1_000
"""Final states of runs that ended while followed here, kept for `research_status`."""
FINISHED = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)
Progress = Callable[[LiveRun], Coroutine[Any, Any, None]]
E = TypeVar("E", Mode, Depth, Format)


def _choice(kind: type[E], value: str, what: str) -> E:
    try:
        return kind(value.strip().lower())
    except ValueError:
        names = " or ".join(member.value for member in kind)
        raise RequestError(f"Unknown {what} {value[:40]!r}: use {names}.") from None


class McpRuns:
    """Made on the bot's loop, its `home`: every coroutine method runs there, whichever loop
    awaits it (the HTTP server has one of its own, `loops`), except a `status` answered from
    memory, which only reads."""

    def __init__(self, store: Store, runs: RunManager, followups: FollowUps) -> None:
        self.home = asyncio.get_running_loop()
        self._store = store
        self._runs = runs
        self._followups = followups
        self._live: dict[str, LiveRun] = {}
        """Runs this server started, while it runs (their steps live only in memory)."""
        self._ended: OrderedDict[str, tuple[RunRecord, RunState]] = OrderedDict()
        """The newest runs that ended while followed here, with their final state: a finished
        run does not change, so asking again needs no store read."""
        self.stopping = False

    def stop(self) -> None:
        """The server stops (called on `home`): the calls waiting for a run answer now, with its
        id (the run is kept for the next start to finish), and no run starts from here."""
        self.stopping = True
        for live in self._live.values():
            live.changed.set()

    @at_home
    async def start(
        self, caller: Caller, topic: str, mode: str, depth: str, language: str | None
    ) -> tuple[RunState, LiveRun]:
        if self.stopping:
            raise RequestError("The server is stopping: start the research again in a minute.")
        request = Request(
            topic=topic,
            mode=_choice(Mode, mode, "mode"),
            depth=_choice(Depth, depth, "depth"),
            origin=caller.origin(),
            language=language_for(stated(language), topic),
        )
        live = LiveRun()
        record = await self._runs.submit(request, live)
        live.record = record
        self._follow(record.run_id, live)
        return await self.state(record), live

    def listener_for(self, run: RunRecord) -> LiveRun | None:
        """The listener of an MCP run this server takes over (a dead replica's, or one left by
        a previous life of this process): followed from here as if it had started here."""
        if run.origin.platform != PLATFORM:
            return None
        live = LiveRun()
        live.record = run
        self._follow(run.run_id, live)
        return live

    @at_home
    async def take_over(self) -> None:
        """From now on this server takes MCP runs from a shared queue (replicas on PostgreSQL)
        and the runs whose process died; at once, those already orphaned."""
        await self._runs.recover(self.listener_for, PLATFORM)

    async def status(self, caller: Caller, run_id: str) -> RunState:
        # From memory when this server followed the run, on the awaiting loop: during a burst
        # the bot's loop is busy with the runs' own work, and its store's one connection with
        # their writes; a status answered there would wait behind both.
        remembered = self._remembered(run_id)
        if remembered is not None:
            caller.check(remembered[0])
            return remembered[1]
        return await on_loop(self.home, self._stored_status(caller, run_id))

    async def _stored_status(self, caller: Caller, run_id: str) -> RunState:
        return await self.state(await self._visible(caller, run_id))

    @at_home
    async def control(self, caller: Caller, run_id: str, action: str) -> RunState:
        """Summarize or cancel one of the caller's runs, wherever it runs."""
        run = await self._visible(caller, run_id)
        if not caller.may_control(run):
            raise RequestError(
                f"Run {run.run_id} was started in {run.origin.platform}: stop it from its thread."
            )
        if await self._runs.control(run.run_id, action) is None:
            if run.status in FINISHED:
                raise RequestError(f"Run {run.run_id} has already ended ({run.status.value}).")
            raise RequestError(f"Run {run.run_id} is not running here, so it cannot be stopped.")
        return await self.state(run)

    async def wait(self, live: LiveRun, within_s: float, progress: Progress) -> RunRecord | None:
        """Until the run ends (its record) or `within_s` passes (None), calling `progress` at
        each new step, on the awaiting loop (the MCP request's)."""
        asker = asyncio.get_running_loop()

        async def relayed(run: LiveRun) -> None:
            await on_loop(asker, progress(run))

        return await on_loop(self.home, self._wait(live, within_s, relayed))

    async def _wait(self, live: LiveRun, within_s: float, progress: Progress) -> RunRecord | None:
        loop = asyncio.get_running_loop()
        until = loop.time() + within_s
        while not live.finished.is_set():
            live.changed.clear()
            left = until - loop.time()
            if left <= 0 or self.stopping:
                return None
            try:
                async with asyncio.timeout(left):
                    await live.changed.wait()
            except TimeoutError:
                return None
            if not live.finished.is_set():
                await progress(live)
        assert live.record is not None
        return live.record

    @at_home
    async def report(self, caller: Caller, run_id: str, fmt: str) -> ReportText:
        wanted = _choice(Format, fmt, "format")
        if wanted not in (Format.MD, Format.HTML):
            raise RequestError(f"Unknown format {fmt!r}: use md or html.")
        run = await self._visible(caller, run_id)
        saved = await self._store.report(run.run_id)
        if saved is None:
            if run.status in FINISHED:
                why = run.termination_reason or run.status.value
                raise RequestError(f"Run {run.run_id} ended without a report ({why}).")
            raise RequestError(
                f"Run {run.run_id} is still {run.status.value}: its report is not in yet."
            )
        report, markdown = saved
        if wanted is Format.HTML:
            exported = await asyncio.to_thread(render, run, report, Format.HTML)
            content = exported.data.decode()
        else:
            content = markdown
        supported, checked = claim_support(report)
        return ReportText(
            run_id=run.run_id,
            format=wanted.value,
            title=report.title,
            content=content,
            sources=len(report.sources),
            ending=run.termination_reason,
            claims_supported=supported,
            claims_checked=checked,
        )

    @at_home
    async def record(self, caller: Caller, run_id: str) -> RunRecord:
        """One of the caller's runs as stored; another workspace's answers as an unknown one."""
        return await self._visible(caller, run_id)

    @at_home
    async def list_runs(self, caller: Caller, limit: int) -> RunList:
        limit = max(1, min(limit, MAX_LIST))
        return RunList(runs=[run_summary(run) for run in await self.newest(caller, limit)])

    @at_home
    async def newest(self, caller: Caller, limit: int) -> list[RunRecord]:
        """The caller's `limit` newest visible runs, newest first."""
        found: list[RunRecord] = []
        for platform in caller.places():
            found += await self._store.list_runs(
                platform=platform,
                workspace=caller.workspace,
                limit=limit,
                viewer_channel=None if caller.local else caller.origin().channel,
            )
        visible = sorted(
            (run for run in found if caller.sees(run)), key=lambda r: r.created_at, reverse=True
        )
        return visible[:limit]

    @at_home
    async def search(self, caller: Caller, query: str, limit: int) -> Hits:
        limit = max(1, min(limit, MAX_LIST))
        hits = []
        for platform in caller.places():
            hits += await self._store.search_reports(
                query,
                platform=platform,
                workspace=caller.workspace,
                viewer_channel=None if caller.local else caller.origin().channel,
                limit=limit,
            )
        best = sorted(hits, key=lambda h: h.rank, reverse=True)[:limit]
        return Hits(
            hits=[
                Hit(
                    run_id=h.run_id,
                    parent_run_id=h.parent_run_id,
                    topic=h.topic,
                    created_at=h.created_at,
                    version=h.version,
                    snippet=h.snippet,
                )
                for h in best
            ]
        )

    @at_home
    async def ask(self, caller: Caller, run_id: str, question: str, within_s: float) -> Answer:
        """A follow-up question about one of the caller's runs, answered as in its thread."""
        asked_about = await self._visible(caller, run_id)
        self._ended.pop(asked_about.run_id, None)  # the answer may store a new report version
        live = LiveRun()
        child = await self._followups.ask(asked_about.run_id, question, caller.origin(), live)
        self._follow(child.run_id, live)

        async def quiet(_: LiveRun) -> None:
            return None

        ended = await self.wait(live, within_s, quiet)
        outcome = live.outcome
        if ended is None or outcome is None:
            return Answer(
                run_id=child.run_id,
                asked_about=asked_about.run_id,
                status=RunStatus.RUNNING.value,
                error=f"Still answering: research_status {child.run_id} follows it.",
            )
        answer = outcome.answer
        if answer is None and outcome.report is not None:
            answer = answer_markdown(outcome.report)
        return Answer(
            run_id=child.run_id,
            asked_about=asked_about.run_id,
            status=outcome.status.value,
            answer=answer,
            version=outcome.version,
            error=outcome.error,
        )

    @at_home
    async def state(self, run: RunRecord) -> RunState:
        """The run as a caller follows it: from memory when this server follows it."""
        remembered = self._remembered(run.run_id)
        if remembered is not None:
            return remembered[1]
        fresh = await self._store.get_run(run.run_id)
        saved = await self._store.report(run.run_id)
        return stored_state(fresh, saved[0] if saved is not None else None)

    def _remembered(self, run_id: str) -> tuple[RunRecord, RunState] | None:
        """A run this server follows or saw end, as it stands; None for any other. It only
        reads (the bot's loop alone changes what it reads), so any loop may ask."""
        ended = self._ended.get(run_id)
        if ended is not None:
            return ended
        live = self._live.get(run_id)
        if live is None or live.record is None:
            return None
        if live.finished.is_set():
            return _final(live)
        current = self._runs.get_active(run_id) or live.record
        return live.record, RunState(
            run_id=run_id,
            topic=live.record.topic,
            status=current.status.value,
            step=live.step,
            sources=len(live.urls),
            cost_usd=live.cost_usd,
            queue_position=live.queue_position,
        )

    def _follow(self, run_id: str, live: LiveRun) -> None:
        """Follow one more run, forgetting those that ended (the store has them): a run nobody
        asked about again would otherwise stay in memory for the server's life."""
        for key, run in list(self._live.items()):
            if run.finished.is_set():
                self._settle(key, run)
        self._live[run_id] = live

    def _settle(self, run_id: str, live: LiveRun) -> None:
        """An ended run's final state, kept (the newest `MAX_ENDED`) in place of its live view."""
        self._live.pop(run_id, None)
        final = _final(live)
        if final is None:
            return
        self._ended[run_id] = final
        while len(self._ended) > MAX_ENDED:
            self._ended.popitem(last=False)

    async def _visible(self, caller: Caller, run_id: str) -> RunRecord:
        if not run_id.strip():
            raise NotFoundError("No run id given.")
        return caller.check(await self._store.get_run(run_id))


def _final(live: LiveRun) -> tuple[RunRecord, RunState] | None:
    """An ended run's final state, as `state` would read it from the store (the record is the
    one stored as it finished); None for a follow-up, whose answer is stored apart from its
    report (`state` reads both)."""
    record, outcome = live.record, live.outcome
    if record is None or outcome is None or record.parent_run_id is not None:
        return None
    return record, stored_state(record, outcome.report)
