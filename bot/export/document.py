"""What every export shows, built once from a stored report (the frame in the report's language,
the sections, the numbered sources, the footer), and the one Markdown parser the exports share:
no raw HTML, no images, only web links, and each `[n]` a link to source n."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from bot.agent.language import frame
from bot.agent.report.footer import run_line, support_line
from bot.agent.report.model import Report
from bot.agent.urls import is_web
from bot.domain import RunRecord

SOURCE_ANCHOR = "src-"
"""`#src-3` is source 3 in every format that has anchors."""
EXTERNAL_REL = "noopener noreferrer nofollow"
RTL_LANGUAGES = frozenset({"ar", "fa", "he", "ur", "ps", "yi", "dv", "sd", "ug", "ckb"})
_CITATION = re.compile(r"\[(\d+)\]")
_DIRECTED = frozenset(
    {"paragraph_open", "heading_open", "list_item_open", "blockquote_open", "th_open", "td_open"}
)


@dataclass(frozen=True)
class Part:
    heading: str
    """Inline Markdown."""
    body: str
    """Markdown."""


@dataclass(frozen=True)
class Entry:
    """One numbered source."""

    number: int
    label: str
    """Plain text: the page's title, else its address."""
    url: str | None
    """Only a web (http/https) address; None: shown, never linked."""
    note: str
    """After the entry: "(search result only)" for a page the run never read, else ""."""


@dataclass(frozen=True)
class Document:
    title: str
    """Inline Markdown."""
    company: str
    """Plain text: the company the run settled on (`Report.company`), or empty."""
    byline: str
    language: str
    parts: list[Part]
    """The TL;DR first, then the sections."""
    sources_heading: str
    sources: list[Entry]
    notes: list[str]
    """Footer lines, inline Markdown (claim support, the run's figures)."""

    @property
    def rtl(self) -> bool:
        return self.language.split("-")[0].lower() in RTL_LANGUAGES

    @property
    def plain_title(self) -> str:
        return plain(self.title)


def document(report: Report, run: RunRecord) -> Document:
    """The contents of `render_markdown`'s file, for formats that lay them out themselves."""
    words = frame(report.language)
    kind = words.contracts if report.mode == "contracts" else words.company
    notes = []
    if report.support:
        notes.append(support_line(report.support, report.language))
    notes.append(run_line(run, ending(run), report.language))
    return Document(
        title=report.title,
        company=" ".join(report.company.split()),
        byline=f"{kind} · {report.created_at:%Y-%m-%d}",
        language=report.language,
        parts=[Part(words.tldr, report.tldr.strip())]
        + [Part(s.heading, s.body.strip()) for s in report.sections],
        sources_heading=words.sources,
        sources=[
            Entry(
                number=n,
                label=" ".join((s.title or s.url).split()),
                url=s.url.strip() if is_web(s.url) else None,
                note="" if s.read else words.seen_only,
            )
            for n, s in enumerate(report.sources, start=1)
        ],
        notes=notes,
    )


def ending(run: RunRecord) -> str:
    """How the run ended, as the Markdown footer names it."""
    return run.termination_reason or run.status.value


def parse(text: str, sources: int) -> list[Token]:
    """Block tokens of a section body; `sources`: how many numbered sources `[n]` may cite."""
    return _parser().parse(text, {"sources": sources})


def parse_inline(text: str, sources: int) -> list[Token]:
    """The inline children of one line (a heading, the title, a footer line)."""
    tokens = _parser().parseInline(text, {"sources": sources})
    return tokens[0].children or [] if tokens else []


def render_html(text: str, sources: int) -> str:
    html: str = _parser().render(text, {"sources": sources})
    return html


def render_inline_html(text: str, sources: int) -> str:
    html: str = _parser().renderInline(text, {"sources": sources})
    return html


def plain(text: str) -> str:
    """The words of inline Markdown, without its markup."""
    return "".join(t.content for t in parse_inline(text, 0) if t.type in {"text", "code_inline"})


@cache
def _parser() -> MarkdownIt:
    # No raw HTML (it is shown as text), no images (nothing is loaded from anywhere), GitHub's
    # tables and strikethrough as the report parser reads them.
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.disable("image")
    md.validateLink = is_web  # type: ignore[method-assign]
    md.core.ruler.push("export_links", _links)
    return md


def direction(text: str) -> str | None:
    """A block's direction, "rtl" or "ltr", from its first strongly directional letter: the
    rule of HTML's `dir="auto"`, which WeasyPrint does not apply. None: no such letter."""
    for char in text:
        kind = unicodedata.bidirectional(char)
        if kind in {"R", "AL"}:
            return "rtl"
        if kind == "L":
            return "ltr"
    return None


def _links(state: StateCore) -> None:
    """`[n]` of a numbered source becomes a link to it; web links open apart and pass nothing
    on; every block gets its own direction (an Arabic paragraph in an English report)."""
    count = int(state.env.get("sources", 0))
    upcoming = ""  # the text of the next inline token: what a block opening starts with
    for token in reversed(state.tokens):
        if token.type == "inline":
            upcoming = token.content
            token.children = list(_cite(token.children or [], count))
        elif token.type in _DIRECTED and (way := direction(upcoming)):
            token.attrSet("dir", way)


def _cite(children: list[Token], count: int) -> Iterator[Token]:
    depth = 0
    for child in children:
        if child.type == "link_open":
            depth += 1
            child.attrSet("rel", EXTERNAL_REL)
        elif child.type == "link_close":
            depth -= 1
        if child.type != "text" or depth or count == 0:
            yield child
            continue
        position = 0
        for match in _CITATION.finditer(child.content):
            number = int(match.group(1))
            if not 1 <= number <= count:
                continue
            yield _text(child.content[position : match.start()])
            yield from _citation(number)
            position = match.end()
        yield _text(child.content[position:])


def _citation(number: int) -> list[Token]:
    opener = Token("link_open", "a", 1, attrs={"href": f"#{SOURCE_ANCHOR}{number}"})
    opener.attrSet("class", "cite")
    return [opener, _text(f"[{number}]"), Token("link_close", "a", -1)]


def _text(content: str) -> Token:
    return Token("text", "", 0, content=content)
