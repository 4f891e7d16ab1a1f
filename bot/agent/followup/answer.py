"""A follow-up's answer and revised report: checked against the run's numbered sources without
renumbering them, and rendered for the thread (the answer) and as a file (a new version)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.agent.language import frame
from bot.agent.report.citations import check
from bot.agent.report.model import Report, SourceRegistry, parse_report, report_filename
from bot.agent.report.support import Support

if TYPE_CHECKING:
    from bot.domain import RunRecord

_CITATION = re.compile(r"\[(\d+)\]")


def answer_report(
    text: str, registry: SourceRegistry, *, question: str, mode: str, language: str
) -> Report:
    """The answer as a Report: the checked text in `tldr`, the run's whole numbered list (new
    sources appended) in `sources`, so every `[n]` keeps the number the thread knows."""
    mark = frame(language).unverified_mark
    checked = check(text, registry.number, len(registry.sources), renumber=False, mark=mark)
    parts = [checked.title and f"**{checked.title}**"]
    parts += [f"**{heading}**\n\n{body}" if heading else body for heading, body in checked.sections]
    return Report(
        title=question,
        tldr="\n\n".join(part.strip() for part in parts if part and part.strip()),
        sources=list(registry.sources),
        mode=mode,
        language=language,
        support=Support(unverified=checked.unverified) if checked.unverified else None,
    )


def revised_report(
    text: str, registry: SourceRegistry, *, topic: str, mode: str, language: str
) -> Report:
    """A new version of the run's report: same checks as a report, the same numbers, the run's
    list with the follow-up's new sources appended."""
    return parse_report(text, registry, topic=topic, mode=mode, language=language, renumber=False)


def cited(report: Report) -> list[int]:
    """The source numbers an answer cites, in order of first citation."""
    found = (int(n) for n in _CITATION.findall(report.tldr))
    return list(dict.fromkeys(n for n in found if 1 <= n <= len(report.sources)))


def answer_markdown(report: Report) -> str:
    """The answer as the thread shows it: the text, then the sources it cites, by number."""
    lines = [report.tldr.strip()]
    numbers = cited(report)
    if numbers:
        lines += ["", f"**{frame(report.language).sources}**"]
        for n in numbers:
            source = report.sources[n - 1]
            label = (source.title or source.url).replace("[", "(").replace("]", ")")
            lines.append(f"[{n}] [{' '.join(label.split())}](<{source.url}>)")
    return "\n".join(lines) + "\n"


def versioned_filename(run: RunRecord, version: int) -> str:
    """`acme-robotics-<id>-v2.md`: the run's report file name with its version."""
    return report_filename(run).removesuffix(".md") + f"-v{version}.md"
