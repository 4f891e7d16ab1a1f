"""Starting from an earlier report: a quick or deep run (not a follow-up) asks at its start for
its watch's last report (a watched run, whatever that report's age) or else the workspace's
recent report on the same company; the thread is told, and the report comes after the task,
fenced as earlier findings, with its sources numbered as they were so the model can cite them.
The store finds it (bot/store/recent.py); one that fails only costs the head start."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel

from bot.agent.events import Notice
from bot.agent.prompts import earlier_findings
from bot.agent.report.model import Report
from bot.agent.state import RunState
from bot.domain import Request
from bot.errors import StoreError

log = logging.getLogger(__name__)


class EarlierRun(BaseModel):
    run_id: str
    topic: str
    created_at: datetime
    report: Report
    markdown: str


class EarlierReports(Protocol):
    async def recent_report(self, request: Request, *, run_id: str) -> EarlierRun | None:
        """The newest completed run of `request`'s workspace on the same company, within the
        window, that its conversation may see; never `run_id` itself."""
        ...

    async def watch_reports(self, request: Request, *, run_id: str) -> list[EarlierRun]:
        """The reports of the runs of `request`'s watch made before `run_id`, oldest first,
        whatever their age ([] when the request is not watched)."""
        ...


def started_from(earlier: EarlierRun, *, watched: bool = False) -> str:
    day = earlier.created_at.date().isoformat()
    if watched:
        return (
            f"This watch's last report is of {day} (run {earlier.run_id}): this run starts from it."
        )
    return (
        f"This workspace researched {earlier.topic} on {day} (run {earlier.run_id}): this run "
        "starts from that report."
    )


async def start_from_earlier(run: RunState, reports: EarlierReports | None) -> None:
    """Before the first turn: `run` given its workspace's recent report, when there is one."""
    if reports is None or run.request.parent_run_id is not None:
        return
    watched = run.request.watch_id is not None
    try:
        if watched:
            found = await reports.watch_reports(run.request, run_id=run.run_id)
            earlier = found[-1] if found else None
        else:
            earlier = await reports.recent_report(run.request, run_id=run.run_id)
    except StoreError as error:
        log.warning("run %s: could not look for an earlier report: %s", run.run_id, error)
        return
    if earlier is None:
        return
    for number, source in enumerate(earlier.report.sources, start=1):
        run.registry.restore(number, source)  # its [n] stay the numbers it cites
    day = earlier.created_at.date().isoformat()
    first = run.messages[0]
    run.earlier_findings = earlier_findings(earlier.topic, day, earlier.markdown, watched=watched)
    first["content"] = f"{first['content']}\n\n{run.earlier_findings}"
    run.emit(Notice(message=started_from(earlier, watched=watched)))
