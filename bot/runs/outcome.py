"""How a run ended, as its front end is told: from the run as it finishes, or rebuilt from the
store to deliver it again after a restart."""

from __future__ import annotations

from pydantic import BaseModel

from bot.agent.events import Ending, Usage
from bot.agent.followup.answer import answer_markdown, versioned_filename
from bot.agent.report.model import Report, report_filename
from bot.domain import RunRecord, RunStatus
from bot.store.runs import Store


class Outcome(BaseModel):
    """How a run ended, for the front end to show."""

    ending: Ending
    report: Report | None = None
    markdown: str | None = None
    filename: str | None = None
    error: str | None = None
    turns: int = 0
    usage: Usage = Usage()
    duration_s: float = 0.0
    recovered: bool = False
    """Finished after a restart, from what it had stored."""
    redelivery: bool = False
    """Ended earlier, but is only now delivered (it could not be then)."""
    posted: bool = False
    """Its summary and report (or its summary alone, when it has no report) reached the thread
    in an earlier delivery that was cut short
    (`RunRecord.report_posted_at`): only the last status edit is left to do."""
    answer: str | None = None
    """A follow-up's answer for its thread (Markdown citing the run's numbered sources); `report`
    is then the answer as stored, and `markdown` and `filename` the new report version's file,
    if it made one."""
    version: int | None = None
    """The report version a follow-up made (2, 3 …), None when it made none."""

    @property
    def status(self) -> RunStatus:
        """What the run's row says once this outcome is stored."""
        if self.report is not None:
            return RunStatus.DONE
        return RunStatus.CANCELLED if self.ending is Ending.CANCELLED else RunStatus.FAILED


async def stored_outcome(store: Store, record: RunRecord) -> Outcome:
    """A finished run's outcome as it was stored, to deliver it again."""
    saved = await store.report(record.run_id)
    report, markdown = saved if saved is not None else (None, None)
    try:
        ending = Ending(record.termination_reason or "")
    except ValueError:
        ending = Ending.ERROR_SYNTHESIS_FAILED
    took = (
        (record.finished_at - record.started_at).total_seconds()
        if record.finished_at and record.started_at
        else 0.0
    )
    if record.parent_run_id is not None:
        return await _stored_follow_up(store, record, ending, report)
    return Outcome(
        ending=ending,
        report=report,
        markdown=markdown,
        filename=report_filename(record) if report is not None else None,
        error=record.error,
        turns=record.turns,
        usage=Usage(
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            cache_read_tokens=record.cache_read_tokens,
            cache_write_tokens=record.cache_write_tokens,
            cost_usd=record.cost_usd,
        ),
        duration_s=took,
        redelivery=True,
        posted=record.report_posted_at is not None,
    )


async def _stored_follow_up(
    store: Store, record: RunRecord, ending: Ending, report: Report | None
) -> Outcome:
    """A follow-up's outcome: its answer, and the report version it made (as stored now)."""
    outcome = Outcome(
        ending=ending,
        report=report,
        answer=answer_markdown(report) if report is not None else None,
        error=record.error,
        turns=record.turns,
        usage=usage_of(record),
        redelivery=True,
    )
    made = await store.version_made_by(record.run_id)
    if made is not None:
        parent = await store.get_run(str(record.parent_run_id))
        outcome.version, outcome.markdown = made
        outcome.filename = versioned_filename(parent, made[0])
    return outcome


def usage_of(record: RunRecord) -> Usage:
    return Usage(
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cache_read_tokens=record.cache_read_tokens,
        cache_write_tokens=record.cache_write_tokens,
        cost_usd=record.cost_usd,
    )
