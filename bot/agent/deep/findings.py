"""From findings to a report (seed 004): the text the supervisor and the final write-up read,
the final report as Markdown, and a write-up's Markdown as a report that keeps every source
(the last fallback, without the model, is `fallback`)."""

from __future__ import annotations

from bot.agent.deep.schema import FinalReport, Finding
from bot.agent.fence import fence
from bot.agent.report.model import Report, SourceRegistry, parse_report
from bot.domain import Request

WHOLE_DRAFT_CHARS = 50_000
"""A draft up to this size goes to the final write-up whole (seed 004)."""
DRAFT_HEAD_CHARS = 45_000
"""Above it: this much of its head, then a summary of the rest."""
DRAFT_AS_REPORT_CHARS = 1_000
"""A draft at least this long is a report by itself when the final write-up fails."""
FINDINGS_FOR_REFERENCE_CHARS = 20_000


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
