"""Follow-up questions about a finished run: the one entry point for every front end.

    followups = services.followups                 # built once in bot/compose.py
    record = await followups.ask(run_id, "Who are their customers?", origin, listener)

`ask` checks the question and the run (it exists in the caller's platform and workspace, has
finished, has a report; a follow-up's own id means its run), then submits a child run through
`RunManager.submit`, so the quota, the queue, recovery, delivery and Summarize/Cancel work as
for any run. It returns the child's record at once (status queued) or raises `RequestError` /
`NotFoundError` (and `QuotaError`) with a short message for the person who asked.

The listener hears the child's events (a follow-up that researches shows its searches) and then
`on_finished(child, outcome)`, where `outcome.answer` is the answer's Markdown for the thread
(citing the run's numbered sources, new ones numbered after them, with the cited ones listed),
`outcome.ending` is `answered` (from the run's evidence) or `completed` (it researched), and,
when the person asked to update the report, `outcome.version` (2, 3 …), `outcome.markdown` and
`outcome.filename` (`acme-robotics-<id>-v2.md`) are the new report file to post. Without an
answer (`llm_error`, `cancelled` …) `outcome.error` says what happened.
"""

from __future__ import annotations

from bot.domain import Depth, Origin, Request, RunRecord, RunStatus, validate_question
from bot.errors import RequestError
from bot.runs.mailbox import RunListener
from bot.runs.manager import RunManager
from bot.store.runs import Store


class FollowUps:
    def __init__(self, store: Store, runs: RunManager) -> None:
        self._store = store
        self._runs = runs

    async def ask(
        self, run_id: str, question: str, origin: Origin, listener: RunListener
    ) -> RunRecord:
        """Ask `question` about the run `run_id` on behalf of `origin`; see the module doc."""
        question = validate_question(question)
        run = await self.asked_about(run_id, origin)
        request = Request(
            topic=question,
            mode=run.mode,
            origin=origin,
            depth=Depth.QUICK,
            language=run.language,
            parent_run_id=run.run_id,
        )
        return await self._runs.submit(request, listener)

    async def asked_about(self, run_id: str, origin: Origin) -> RunRecord:
        """The run a question about `run_id` goes to, or the refusal the asker sees."""
        place = {"platform": origin.platform, "workspace": origin.workspace}
        run = await self._store.get_run(run_id, **place)
        if run.parent_run_id is not None:
            run = await self._store.get_run(run.parent_run_id, **place)
        if run.status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED):
            raise RequestError(
                f"Run {run.run_id} is still researching: ask again once its report is in."
            )
        if run.status is not RunStatus.DONE or await self._store.report(run.run_id) is None:
            raise RequestError(
                f"Run {run.run_id} ended without a report ({run.termination_reason or run.status}),"
                " so there is nothing to ask about: start the research again."
            )
        return run
