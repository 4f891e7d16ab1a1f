"""The report: its model, citation checking against what the run retrieved, and Markdown rendering."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from bot.agent.support import Support

if TYPE_CHECKING:
    from bot.domain import RunRecord


class Source(BaseModel):
    """A page the run actually retrieved: a search result or a page it read."""

    url: str
    title: str = ""
    snippet: str = ""


class Section(BaseModel):
    heading: str
    body: str


class Report(BaseModel):
    title: str
    tldr: str
    sections: list[Section] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    """Numbered from 1 in this order; every `[n]` in the text points here."""
    mode: str = "company"
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    from_evidence_only: bool = False
    language: str = "en"
    """The asker's language (BCP 47 primary tag): the whole report, frame included, is in it."""
    support: Support | None = None
    """How far the cited claims are backed by their sources (None: not measured)."""


class SourceRegistry:
    """Numbers every URL the run retrieved, in the order it was first seen. The model cites these."""

    def __init__(self) -> None:
        self._by_url: dict[str, int] = {}
        self.sources: list[Source] = []

    def add(self, source: Source) -> int:
        key = _normal_url(source.url)
        if key not in self._by_url:
            self.sources.append(source)
            self._by_url[key] = len(self.sources)
        return self._by_url[key]

    def restore(self, number: int, source: Source) -> None:
        """Put back a source under the number it had (rebuilding a run from its stored events)."""
        while len(self.sources) < number:
            self.sources.append(Source(url=f"missing:{len(self.sources) + 1}"))
        self.sources[number - 1] = source
        self._by_url[_normal_url(source.url)] = number

    def alias(self, url: str, number: int) -> None:
        """Another URL for an already numbered source (the address before a redirect)."""
        self._by_url.setdefault(_normal_url(url), number)

    def number(self, url: str) -> int | None:
        return self._by_url.get(_normal_url(url))

    def get(self, n: int) -> Source | None:
        return self.sources[n - 1] if 1 <= n <= len(self.sources) else None


def _normal_url(url: str) -> str:
    return url.split("#", 1)[0].rstrip("/")


_CITATION = re.compile(r"( ?)\[(\d+(?:\s*,\s*\d+)*)\](?!\()")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_TLDR = {"tl;dr", "tldr", "tl; dr"}
_SOURCES = {"sources", "references", "bibliography"}


def parse_report(text: str, registry: SourceRegistry, *, topic: str, mode: str) -> Report:
    """Turn the model's Markdown into a Report whose citations all point at retrieved sources."""
    title = f"Research: {topic}"
    preamble: list[str] = []
    sections: list[Section] = []
    position = 0
    heading: str | None = None
    for match in _HEADING.finditer(text):
        chunk = text[position : match.start()].strip()
        _file(heading, chunk, preamble, sections)
        level, name = match.groups()
        if level == "#" and not sections and heading is None:
            title, heading = name, None
        else:
            heading = name
        position = match.end()
    _file(heading, text[position:].strip(), preamble, sections)

    tldr = next((s.body for s in sections if s.heading.strip().lower() in _TLDR), "")
    sections = [s for s in sections if s.heading.strip().lower() not in _TLDR | _SOURCES]
    if preamble:
        sections.insert(0, Section(heading="Overview", body="\n\n".join(preamble)))
    if not tldr and sections:
        tldr = sections[0].body.split("\n\n", 1)[0]
    renumber = _Renumber(registry)
    return Report(
        title=renumber.strip_links(title),
        tldr=renumber(tldr),
        sections=[Section(heading=s.heading, body=renumber(s.body)) for s in sections],
        sources=renumber.cited,
        mode=mode,
    )


def _file(heading: str | None, chunk: str, preamble: list[str], sections: list[Section]) -> None:
    if heading is None:
        if chunk:
            preamble.append(chunk)
    else:
        sections.append(Section(heading=heading, body=chunk))


class _Renumber:
    """Maps the run's source numbers to the report's, in order of first citation; drops the rest."""

    def __init__(self, registry: SourceRegistry) -> None:
        self._registry = registry
        self._new: dict[int, int] = {}
        self.cited: list[Source] = []

    def __call__(self, text: str) -> str:
        text = _LINK.sub(self._link, text)
        return _CITATION.sub(self._citation, text)

    @staticmethod
    def strip_links(text: str) -> str:
        return _LINK.sub(lambda match: match.group(1), text)

    def _link(self, match: re.Match[str]) -> str:
        """A link to a retrieved page becomes a citation; a URL the run never saw keeps only
        its words."""
        label, url = match.groups()
        number = self._registry.number(url)
        return f"{label} [{number}]" if number else label

    def _citation(self, match: re.Match[str]) -> str:
        space, group = match.groups()
        numbers = [self._map(int(n)) for n in group.split(",")]
        kept = sorted({n for n in numbers if n is not None})
        return space + "".join(f"[{n}]" for n in kept) if kept else ""

    def _map(self, old: int) -> int | None:
        source = self._registry.get(old)
        if source is None:
            return None
        if old not in self._new:
            self.cited.append(source)
            self._new[old] = len(self.cited)
        return self._new[old]


def evidence_report(topic: str, mode: str, registry: SourceRegistry, why: str) -> Report:
    """A report built without the model from what the run retrieved, so no work is lost."""
    lines = [
        f"[{n}] **{s.title or s.url}**: {s.snippet[:400]}".rstrip(": ")
        for n, s in enumerate(registry.sources, start=1)
    ]
    body = "\n\n".join(lines) if lines else "No sources were retrieved before the run stopped."
    return Report(
        title=f"Research: {topic} (sources only)",
        tldr=(
            f"{why} This report lists what the research found, unedited: titles, links and "
            "snippets, not an analysis."
        ),
        sections=[Section(heading="What was found", body=body)],
        sources=list(registry.sources),
        mode=mode,
        from_evidence_only=True,
    )


def render_markdown(report: Report, run: RunRecord, ending: str) -> str:
    """The Markdown file a person downloads."""
    # Imported here: bot.agent.events imports this module for Report and Source.
    from bot.agent.events import format_cost

    out = [
        f"# {report.title}",
        "",
        f"*{report.mode.capitalize()} research · {report.created_at:%Y-%m-%d}*",
        "",
        "## TL;DR",
        "",
        report.tldr.strip(),
        "",
    ]
    for section in report.sections:
        out += [f"## {section.heading}", "", section.body.strip(), ""]
    if report.sources:
        out += ["## Sources", ""]
        out += [
            f"{n}. [{_escape_label(s.title or s.url)}]({s.url})"
            for n, s in enumerate(report.sources, start=1)
        ]
        out.append("")
    out += [
        "---",
        "",
        f"Run `{run.run_id}` · {run.turns} turns · ending: {ending} · "
        f"tokens in {run.input_tokens:,} / out {run.output_tokens:,} / "
        f"cache read {run.cache_read_tokens:,} / cache write {run.cache_write_tokens:,} · "
        f"{format_cost(run.cost_usd, 4)}",
        "",
    ]
    return "\n".join(out)


def _escape_label(text: str) -> str:
    return text.replace("[", "(").replace("]", ")").replace("\n", " ")


def report_filename(run: RunRecord) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", run.topic.lower()).strip("-")[:60] or "report"
    return f"{slug}-{run.run_id}.md"
