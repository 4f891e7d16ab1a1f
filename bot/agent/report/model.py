"""The report: its model, citation checking against what the run retrieved, and Markdown rendering."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from bot.agent.language import DEFAULT, TLDR_HEADINGS, frame
from bot.agent.report.citations import check
from bot.agent.report.footer import run_line, support_line
from bot.agent.report.markdown import from_title
from bot.agent.report.support import Support
from bot.agent.urls import normalize_url

if TYPE_CHECKING:
    from bot.domain import RunRecord


class Source(BaseModel):
    """A page the run actually retrieved: a search result or a page it read."""

    url: str
    title: str = ""
    snippet: str = ""
    read: bool = False
    """The run read the page (read_page); False: it only saw a search result's snippet."""
    published: str | None = None
    """When the page says it was published (YYYY-MM-DD), from the search engine or the page."""


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
    company: str = ""
    """The company researched, as the run settled it (`Company.line()`); empty when it did not."""
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
        self.searched: dict[str, list[int]] = {}
        """By search (its words folded, and its recency): the numbers it found. A run (every
        researcher of a deep run) sends each search once; a repeat gets these back."""

    def add(self, source: Source) -> int:
        """The source's number; a search result read later keeps its number and becomes read."""
        key = normalize_url(source.url)
        if key not in self._by_url:
            self.sources.append(source)
            self._by_url[key] = len(self.sources)
        else:
            self._upgrade(self._by_url[key], source)
        return self._by_url[key]

    def restore(self, number: int, source: Source) -> None:
        """Put back a source under the number it had (rebuilding a run from its stored events)."""
        while len(self.sources) < number:
            self.sources.append(Source(url=f"missing:{len(self.sources) + 1}"))
        if self.sources[number - 1].url.startswith("missing:"):
            self.sources[number - 1] = source
        else:
            self._upgrade(number, source)
        self._by_url[normalize_url(source.url)] = number

    def _upgrade(self, number: int, source: Source) -> None:
        if source.read and not self.sources[number - 1].read:
            self.sources[number - 1] = source

    def alias(self, url: str, number: int) -> None:
        """Another URL for an already numbered source (the address before a redirect)."""
        self._by_url.setdefault(normalize_url(url), number)

    def number(self, url: str) -> int | None:
        return self._by_url.get(normalize_url(url))

    def get(self, n: int) -> Source | None:
        return self.sources[n - 1] if 1 <= n <= len(self.sources) else None


def parse_report(
    text: str,
    registry: SourceRegistry,
    *,
    topic: str,
    mode: str,
    language: str = DEFAULT,
    renumber: bool = True,
) -> Report:
    """Turn the model's Markdown into a Report whose citations all point at retrieved sources:
    checked on the parsed document (see `bot.agent.report.citations`), from its `# ` title on.
    `renumber` False (a report revised by a follow-up) keeps the registry's numbers and its
    whole list as the sources."""
    words = frame(language)
    checked = check(
        from_title(text),
        registry.number,
        len(registry.sources),
        renumber=renumber,
        mark=words.unverified_mark,
    )
    sections = [
        Section(heading=heading or words.overview, body=body)
        for heading, body in checked.sections
        if heading is not None or body
    ]
    tldr = next((s.body for s in sections if _is_tldr(s.heading)), "")
    sections = [s for s in sections if not _is_tldr(s.heading)]
    if not tldr and sections:
        tldr = sections[0].body.split("\n\n", 1)[0]
    return Report(
        title=checked.title or words.research_title.format(topic=topic),
        tldr=tldr,
        sections=sections,
        sources=[source for n in checked.cited if (source := registry.get(n)) is not None]
        if renumber
        else list(registry.sources),
        mode=mode,
        language=language,
        support=Support(unverified=checked.unverified) if checked.unverified else None,
    )


def _is_tldr(heading: str) -> bool:
    return heading.strip().casefold() in TLDR_HEADINGS


def evidence_report(
    topic: str, mode: str, registry: SourceRegistry, why: str, *, language: str = DEFAULT
) -> Report:
    """A report built without the model from what the run retrieved, so no work is lost."""
    words = frame(language)
    lines = [
        f"[{n}] **{s.title or s.url}**: {s.snippet[:400]}".rstrip(": ")
        for n, s in enumerate(registry.sources, start=1)
    ]
    body = "\n\n".join(lines) if lines else words.nothing_retrieved
    return Report(
        title=f"{words.research_title.format(topic=topic)} {words.sources_only}",
        tldr=f"{why} {words.evidence_note}",
        sections=[Section(heading=words.evidence_heading, body=body)],
        sources=list(registry.sources),
        mode=mode,
        from_evidence_only=True,
        language=language,
    )


def format_cost(cost: float | None, digits: int = 2) -> str:
    """`$0.12`, or `cost unknown` when a model without a price took part."""
    return "cost unknown" if cost is None else f"${cost:.{digits}f}"


def render_markdown(report: Report, run: RunRecord, ending: str) -> str:
    """The Markdown file a person downloads."""
    words = frame(report.language)
    kind = words.contracts if report.mode == "contracts" else words.company
    out = [
        f"# {report.title}",
        "",
        *([_plain(report.company), ""] if report.company else []),
        f"*{kind} · {report.created_at:%Y-%m-%d}*",
        "",
        f"## {words.tldr}",
        "",
        report.tldr.strip(),
        "",
    ]
    for section in report.sections:
        out += [f"## {section.heading}", "", section.body.strip(), ""]
    if report.sources:
        out += [f"## {words.sources}", ""]
        out += [_source_line(n, s, words.seen_only) for n, s in enumerate(report.sources, start=1)]
        out.append("")
    if report.support:
        out += ["---", "", support_line(report.support, report.language), ""]
    else:
        out += ["---", ""]
    out += [run_line(run, ending, report.language), ""]
    return "\n".join(out)


def _plain(text: str) -> str:
    """Text from the web shown as itself in Markdown: no link, emphasis or heading of its own."""
    return re.sub(r"([\\`*_\[\]<>#|!])", r"\\\1", " ".join(text.split()))


def _source_line(n: int, source: Source, seen_only: str) -> str:
    label = source.title or source.url
    label = label.replace("[", "(").replace("]", ")").replace("\n", " ")
    target = source.url
    if any(ch in target for ch in "()<> "):
        # Angle brackets keep an address with parentheses or spaces whole.
        target = "<" + target.replace("<", "%3C").replace(">", "%3E").replace(" ", "%20") + ">"
    return f"{n}. [{label}]({target})" + ("" if source.read else f" {seen_only}")


def report_filename(run: RunRecord) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", run.topic.lower()).strip("-")[:60] or "report"
    return f"{slug}-{run.run_id}.md"
