"""arXiv: the `arxiv_search` tool over arXiv's Atom API. Papers become sources (their abstract
page, with the abstract as snippet); reading one is the page reader's job (its PDF or abstract
page), so it goes through the same address guard and caps as any page."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring
from pydantic import BaseModel, Field

from bot.agent.report.model import Source
from bot.agent.web.api import ApiClient, ApiError
from bot.agent.web.listing import clip, entry, heading
from bot.agent.web.registry import Tool, ToolContext, ToolOutput

ARXIV_URL = "https://export.arxiv.org/api"
ABSTRACT_CHARS = 2_000
"""arXiv abstracts stay under 1,920 characters: kept whole, as the source's snippet."""
MIN_INTERVAL_S = 3.0
"""arXiv's terms ask for at most one API request every three seconds."""
_NS = {"atom": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}
_FIELDS = ("ti:", "au:", "abs:", "co:", "jr:", "cat:", "rn:", "id:", "all:")
REFINE = (
    "Try fewer or broader words, a synonym, or a field such as `ti:` (title) or `abs:` "
    "(abstract); arXiv matches words, not meaning."
)


class Paper(BaseModel):
    title: str
    abstract: str
    authors: list[str]
    published: str
    """YYYY-MM-DD of the first version."""
    abs_url: str
    pdf_url: str = ""
    category: str = ""

    def source(self) -> Source:
        return Source(
            url=self.abs_url,
            title=clip(self.title, 200),
            snippet=clip(self.abstract, ABSTRACT_CHARS),
        )


class Arxiv:
    """arXiv's query API; one per process (it paces the process's requests), closed at the end."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout_s: float = 20.0,
        min_interval_s: float = MIN_INTERVAL_S,
    ) -> None:
        self._api = ApiClient("arXiv", base_url or ARXIV_URL, timeout_s=timeout_s)
        self._interval = min_interval_s
        self._lock = asyncio.Lock()
        self._next = 0.0

    async def search(self, query: str, max_results: int) -> list[Paper]:
        params = {
            "search_query": search_query(query),
            "start": 0,
            "max_results": max_results,
            "sortBy": "relevance",
        }
        await self._pace()
        return parse_feed(await self._api.get("query", params))

    async def _pace(self) -> None:
        async with self._lock:
            wait = self._next - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._next = time.monotonic() + self._interval

    async def aclose(self) -> None:
        await self._api.aclose()


def search_query(query: str) -> str:
    """arXiv's own syntax passes through (`ti:diffusion AND cat:cs.LG`); plain words must all
    appear somewhere in the paper."""
    if any(field in query for field in _FIELDS):
        return query
    return " AND ".join(f"all:{word}" for word in query.split())


def parse_feed(data: bytes) -> list[Paper]:
    """The papers of an Atom feed. A DTD (and so any entity trick) is refused outright."""
    try:
        root = fromstring(data, forbid_dtd=True)
    except (ParseError, DefusedXmlException) as exc:
        raise ApiError("arXiv answered with something that is not an Atom feed") from exc
    if root.tag != f"{{{_NS['atom']}}}feed":
        raise ApiError("arXiv answered with something that is not an Atom feed")
    papers = []
    for item in root.findall("atom:entry", _NS):
        if "/api/errors" in _text(item, "atom:id"):  # how arXiv reports a query it cannot run
            raise ApiError(f"arXiv refused the query: {clip(_text(item, 'atom:summary'), 300)}")
        paper = _paper(item)
        if paper is not None:
            papers.append(paper)
    return papers


def _paper(item: Element) -> Paper | None:
    links = item.findall("atom:link", _NS)
    page = next((ln.get("href", "") for ln in links if ln.get("rel") == "alternate"), "")
    abs_url = page or _text(item, "atom:id")
    title = _text(item, "atom:title")
    if not abs_url or not title:
        return None
    category = item.find("arxiv:primary_category", _NS)
    return Paper(
        title=title,
        abstract=_text(item, "atom:summary"),
        authors=[
            " ".join((a.text or "").split()) for a in item.findall("atom:author/atom:name", _NS)
        ],
        published=_text(item, "atom:published")[:10],
        abs_url=abs_url,
        pdf_url=next((ln.get("href", "") for ln in links if ln.get("title") == "pdf"), ""),
        category=category.get("term", "") if category is not None else "",
    )


def _text(item: Element, path: str) -> str:
    found = item.find(path, _NS)
    return " ".join((found.text or "").split()) if found is not None else ""


def _byline(paper: Paper) -> str:
    names = ", ".join(paper.authors[:5]) + (" et al." if len(paper.authors) > 5 else "")
    return " · ".join(part for part in (names, paper.published, paper.category) if part)


class ArxivArgs(BaseModel):
    query: str = Field(
        min_length=2,
        max_length=300,
        description="Words that must all appear in the paper, or arXiv query syntax "
        "(`ti:transformer AND au:vaswani`, `cat:cs.RO`).",
    )
    max_results: int = Field(default=5, ge=1, le=10)


def arxiv_tools(arxiv: Arxiv, *, timeout_s: float) -> list[Tool[Any]]:
    """The `arxiv_search` tool."""

    async def arxiv_search(ctx: ToolContext, args: ArxivArgs) -> ToolOutput:
        """Search arXiv for scientific papers and preprints (computer science, physics, maths,
        biology, economics …). Returns numbered papers with authors, date, abstract and PDF link;
        cite them as [n]. Read a paper's full text with read_page on its PDF link."""
        papers = await arxiv.search(args.query, args.max_results)
        sources = [paper.source() for paper in papers]
        lines = [
            entry(
                ctx.registry.add(source),
                paper.title,
                paper.abs_url,
                _byline(paper),
                f"PDF: {paper.pdf_url}" if paper.pdf_url else "",
                paper.abstract,
            )
            for paper, source in zip(papers, sources, strict=True)
        ]
        return ToolOutput(
            heading=heading("papers on arXiv", args.query, sources, REFINE),
            body="\n\n".join(lines),
            sources=sources,
        )

    return [Tool("arxiv_search", ArxivArgs, arxiv_search, timeout_s)]
