"""What changed since a watch's last report, from evidence, put into a watched run's report
before it is stored (so the report file, `show`, exports and the thread all have it):

- **New sources**: this report's sources that no earlier report of the watch cited.
- **Claims that no longer hold**: the last report's claims checked again (bot/agent/report/
  recheck.py), each with its old and new wording and both citations.
- **New developments**: the report's own `## New developments` section (the write-up was asked
  for it, bot/agent/prompts.py), its [n] checked like any section's, moved here.

Something changed when a claim no longer holds or the new developments cite a new source; then
the section opens the report's sections and its TL;DR starts with one line counting it. Else the
TL;DR starts with the one line "No material change since 1 Sep 2026: 2 new sources, no claim
changed." and there is no section. A watch's first report has neither. Read from the store at
the end of the run, so a run finished after a restart has it too.
"""

from __future__ import annotations

import logging
from datetime import datetime

from bot.agent.control import Control
from bot.agent.earlier import EarlierReports, EarlierRun
from bot.agent.prompts import NEW_DEVELOPMENTS
from bot.agent.report.claims import cited_sentences
from bot.agent.report.judge import ClaimChecker
from bot.agent.report.model import Report, Section, Source
from bot.agent.report.recheck import CHANGES_HEADING, Change, no_longer_holds
from bot.agent.state import RunState
from bot.agent.urls import normalize_url
from bot.errors import StoreError

log = logging.getLogger(__name__)
NO_CHANGE = "No material change since"
NO_DEVELOPMENTS = "The write-up gave no summary of what is new."


class WatchChanges:
    """Adds What changed to a watched run's report; the judge is the report's claim checker."""

    def __init__(self, reports: EarlierReports, checker: ClaimChecker) -> None:
        self._reports = reports
        self._checker = checker

    async def add(self, run: RunState, report: Report, control: Control) -> Report:
        """`report` with what changed since its watch's last report (as it is when the run is
        not watched, has no earlier report, or already says what changed)."""
        if run.request.watch_id is None or _says_changes(report):
            return report
        try:
            earlier = await self._reports.watch_reports(run.request, run_id=run.run_id)
        except StoreError as error:
            log.warning("run %s: could not read the watch's earlier reports: %s", run.run_id, error)
            return report
        if not earlier:
            return report
        changes = await no_longer_holds(run, earlier[-1].report, self._checker, control)
        return with_changes(report, earlier, changes)


def new_sources(current: Report, earlier: list[Report]) -> list[tuple[int, Source]]:
    """This report's sources (with their numbers) no earlier report had."""
    known = {normalize_url(source.url) for report in earlier for source in report.sources}
    return [
        (n, source)
        for n, source in enumerate(current.sources, start=1)
        if normalize_url(source.url) not in known
    ]


def day(moment: datetime) -> str:
    return f"{moment.day} {moment:%b %Y}"


def with_changes(report: Report, earlier: list[EarlierRun], changes: list[Change]) -> Report:
    """The report with its What changed section (or its one line) put in."""
    since = day(earlier[-1].created_at)
    sources = list(report.sources)
    developments, sections = _developments(report)
    new = new_sources(report, [run.report for run in earlier])
    fresh = {n for n, _ in new}
    cites_new = developments is not None and any(
        set(numbers) & fresh for _, numbers in cited_sentences(_only(report, developments))
    )
    counted = _counted(len(new), len(changes))
    if not changes and not cites_new:
        line = f"{NO_CHANGE} {since}: {counted}."
        sections = [*sections, developments] if developments is not None else sections
        return _opened(report, line, sections, sources)
    lines = [_new_sources_part(new), _claims_part(changes, sources, since, day(report.created_at))]
    body = developments.body.strip() if developments is not None else f"_{NO_DEVELOPMENTS}_"
    lines.append(f"**{NEW_DEVELOPMENTS}**\n\n{body}")
    section = Section(heading=f"{CHANGES_HEADING} {since}", body="\n\n".join(lines))
    return _opened(report, f"{CHANGES_HEADING} {since}: {counted}.", [section, *sections], sources)


def _opened(report: Report, line: str, sections: list[Section], sources: list[Source]) -> Report:
    tldr = f"{line}\n\n{report.tldr.strip()}" if report.tldr.strip() else line
    return report.model_copy(update={"tldr": tldr, "sections": sections, "sources": sources})


def _counted(new: int, changed: int) -> str:
    sources = "no new sources" if not new else f"{new} new source" + ("s" if new != 1 else "")
    if not changed:
        return f"{sources}, no claim changed"
    claims = f"{changed} claim" + (" no longer holds" if changed == 1 else "s no longer hold")
    return f"{claims}, {sources}"


def _developments(report: Report) -> tuple[Section | None, list[Section]]:
    wanted = NEW_DEVELOPMENTS.casefold()
    found = next((s for s in report.sections if s.heading.strip().casefold() == wanted), None)
    return found, [s for s in report.sections if s is not found]


def _only(report: Report, section: Section) -> Report:
    return report.model_copy(update={"tldr": "", "sections": [section]})


def _new_sources_part(new: list[tuple[int, Source]]) -> str:
    if not new:
        return "**New sources**: none."
    listed = [f"- [{n}] {_title(s)}" + ("" if s.read else " (search result)") for n, s in new]
    return f"**New sources** ({len(new)}):\n\n" + "\n".join(listed)


def _claims_part(changes: list[Change], sources: list[Source], since: str, today: str) -> str:
    """Each change as old wording [n] (date) → new wording [m] (date); `sources` (the report's)
    gains the sources cited here that it did not cite, so every [n] is in its list."""
    if not changes:
        return "**Claims that no longer hold**: none."
    lines = []
    for change in changes:
        old = "".join(f" [{_cite(sources, s)}]" for s in change.old_sources)
        new = _cite(sources, change.source)
        said = f"“{change.new}” [{new}]" if change.new else f"no longer stated by [{new}]"
        lines.append(f"- {change.old.rstrip('.')}{old} ({since}) → {said} ({today})")
    return f"**Claims that no longer hold** ({len(changes)}):\n\n" + "\n".join(lines)


def _cite(sources: list[Source], source: Source) -> int:
    key = normalize_url(source.url)
    for n, known in enumerate(sources, start=1):
        if normalize_url(known.url) == key:
            return n
    sources.append(source)
    return len(sources)


def _title(source: Source) -> str:
    label = source.title or source.url
    return " ".join(label.replace("[", "(").replace("]", ")").split())


def _says_changes(report: Report) -> bool:
    """Already given What changed (a report recovered after a restart was delivered before)."""
    first = report.tldr.lstrip()
    return first.startswith((NO_CHANGE, CHANGES_HEADING))
