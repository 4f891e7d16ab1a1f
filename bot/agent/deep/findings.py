"""From findings to a report (seed 004): the text the supervisor and the final write-up read
(each finding, the source index, the coverage check), the final report as Markdown, and a
write-up's Markdown as a report that keeps every source (the last fallback, without the model,
is `fallback`)."""

from __future__ import annotations

from urllib.parse import urlsplit

from bot.agent.deep.schema import Coverage, FinalReport, Finding
from bot.agent.fence import fence
from bot.agent.report.model import Report, Source, SourceRegistry, parse_report
from bot.domain import Request

INDEX_TITLE_CHARS = 120
INDEX_SOURCES = 200
"""The source index lists at most this many sources (the first numbers: the first found)."""


def finding_text(number: int, finding: Finding) -> str:
    """One finding as the supervisor reads it: our frame, the model's words fenced as data."""
    body = [finding.summary, *(f"- {k}" for k in finding.key_findings)]
    if finding.notes:
        body += ["Notes:", *(f"- {n}" for n in finding.notes)]
    read = ", ".join(f"[{n}]" for n in finding.read) or "none"
    seen = ", ".join(f"[{n}]" for n in finding.seen) or "none"
    return (
        f"### Researcher {number}: {finding.topic}\nConfidence: {finding.confidence}. "
        f"Pages read: {read}. Search results only: {seen}.\n{fence(chr(10).join(body))}"
    )


def source_index(registry: SourceRegistry) -> str:
    """Every source in one line: its number, title, domain, date where it has one, and whether
    it was read or only seen in search results. Titles are the web's: fenced as data."""
    lines = [
        _index_line(n, source)
        for n, source in enumerate(registry.sources[:INDEX_SOURCES], start=1)
        if not source.url.startswith("missing:")
    ]
    return (
        "The sources (number, title, domain, date where known, read or only seen in search "
        f"results):\n{fence(chr(10).join(lines))}"
    )


def _index_line(number: int, source: Source) -> str:
    title = " ".join((source.title or source.url).split())[:INDEX_TITLE_CHARS]
    domain = (urlsplit(source.url).hostname or "").removeprefix("www.")
    read = "read" if source.read else "search result only"
    return " — ".join(p for p in (f"[{number}] {title}", domain, source.published, read) if p)


def coverage_text(coverage: Coverage | None) -> str:
    """The supervisor's check as the writer reads it: its notes are the model's, fenced."""
    if coverage is None or not (coverage.sections or coverage.conflicts):
        return ""
    lines = [
        f"- {c.section}: {c.status}" + (f" ({c.note})" if c.note else "") for c in coverage.sections
    ]
    if coverage.conflicts:
        lines += ["Conflicts between findings:", *(f"- {c}" for c in coverage.conflicts)]
    return f"The supervisor's coverage check:\n{fence(chr(10).join(lines))}"


def final_markdown(final: FinalReport, tldr_heading: str) -> str:
    parts = [f"# {final.title}", "", f"## {tldr_heading}", "", final.executive_summary, ""]
    for section in final.sections:
        parts += [f"## {section.heading}", "", section.body, ""]
    return "\n".join(parts)


def report_from(text: str, registry: SourceRegistry, request: Request) -> Report:
    """A write-up's Markdown as a report whose citations are checked like a quick run's, with
    every source the run found kept: cited ones first, renumbered, then the rest."""
    report = parse_report(
        text,
        registry,
        topic=request.topic,
        mode=request.mode.value,
        language=request.language,
    )
    return with_all_sources(report, registry)


def with_all_sources(report: Report, registry: SourceRegistry) -> Report:
    cited = {s.url for s in report.sources}
    rest = [s for s in registry.sources if s.url not in cited and not s.url.startswith("missing:")]
    return report.model_copy(update={"sources": [*report.sources, *rest]})
