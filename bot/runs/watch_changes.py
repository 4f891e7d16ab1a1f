"""What changed since a watch's last report, from evidence: the sources this run cited or saw
that no earlier run of the watch did. When nothing is new, one line says so."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

from bot.agent.report.model import Report, Source


def source_key(url: str) -> str:
    """A page as the same page whatever its case of host, fragment or trailing slash."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.netloc.lower().removeprefix('www.')}{path}{query}"


def new_sources(current: Report, earlier: list[Report]) -> list[tuple[int, Source]]:
    """This report's sources (with their numbers) no earlier report had."""
    known = {source_key(source.url) for report in earlier for source in report.sources}
    return [
        (n, source)
        for n, source in enumerate(current.sources, start=1)
        if source_key(source.url) not in known
    ]


def _day(moment: datetime) -> str:
    return f"{moment.day} {moment:%b %Y}"


def what_changed(current: Report, earlier: list[Report], since: datetime) -> str | None:
    """The section that opens a watched run's report (Markdown), or its one line when nothing
    is new; None for a watch's first report."""
    if not earlier:
        return None
    new = new_sources(current, earlier)
    if not new:
        return f"No material change since {_day(since)}: no new sources."
    lines = [f"## What changed since {_day(since)}", "", f"**New sources** ({len(new)}):", ""]
    for n, source in new:
        seen = "" if source.read else " (search result)"
        lines.append(f"- [{n}] {source.title or source.url}{seen}")
    return "\n".join(lines)


def with_changes(markdown: str, changes: str) -> str:
    """The report with the changes right under its title."""
    title, _, rest = markdown.partition("\n")
    if not title.startswith("# "):
        return f"{changes}\n\n{markdown}"
    return f"{title}\n\n{changes}\n\n{rest.lstrip(chr(10))}"
