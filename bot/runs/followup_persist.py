"""How a follow-up's ending is stored: its answer as its own report (with the run's numbered
list, so `show` prints it whole), and a revised report as the next version of the run it asked
about, in the transaction that ends it. The outcome then carries the answer for the thread and
the new version's file."""

from __future__ import annotations

from bot.agent.followup.answer import answer_markdown, versioned_filename
from bot.agent.report.model import Report, render_markdown
from bot.runs.outcome import Outcome
from bot.store.runs import Store


async def persist_follow_up(
    store: Store, run_id: str, outcome: Outcome, revised: Report | None
) -> Outcome:
    record = await store.get_run(run_id)
    saved = revision = None
    parent = await store.get_run(str(record.parent_run_id))
    if outcome.report is not None:
        outcome.answer = answer_markdown(outcome.report)
        saved = (outcome.report, render_markdown(outcome.report, record, outcome.ending))
        if revised is not None:
            ending = f"{parent.termination_reason}, revised by follow-up {record.run_id}"
            revision = (revised, render_markdown(revised, parent, ending))
    version = await store.finish_run(
        run_id,
        status=outcome.status,
        ending=outcome.ending.value,
        error=outcome.error,
        report=saved,
        revision=revision,
    )
    if version is not None and revision is not None:
        outcome.version, outcome.markdown = version, revision[1]
        outcome.filename = versioned_filename(parent, version)
    return outcome
