"""A local fake of arXiv's query API (`GET /api/query`, Atom 1.0) for tests.

    async with FakeArxiv(result_base=web.url) as arxiv:      # ARXIV_API_URL=arxiv.url
        arxiv.papers_for["all:grasping"] = [paper("2401.00001", "Tactile grasping", ...)]
        arxiv.requests[0].query["search_query"]

A query with no entry gets `default_papers(search_query)`: two deterministic papers whose abstract
and PDF links live under `result_base` (point it at the fake web to read them). `error_entry()`
is the feed arXiv sends for a query it cannot run. Failures: see tests/fakes/api_server.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from aiohttp import web
from aiohttp.typedefs import Handler

from tests.fakes.api_server import FakeApi


@dataclass
class FakePaper:
    arxiv_id: str
    title: str
    abstract: str
    authors: list[str] = field(default_factory=lambda: ["Ada Lovelace"])
    published: str = "2024-01-15T18:00:00Z"
    category: str = "cs.RO"
    base: str = "http://arxiv.org"

    @property
    def abs_url(self) -> str:
        return f"{self.base}/abs/{self.arxiv_id}v1"

    @property
    def pdf_url(self) -> str:
        return f"{self.base}/pdf/{self.arxiv_id}v1"

    def atom(self) -> str:
        authors = "".join(f"<author><name>{escape(a)}</name></author>" for a in self.authors)
        return f"""<entry>
    <id>http://arxiv.org/abs/{self.arxiv_id}v1</id>
    <updated>{self.published}</updated>
    <published>{self.published}</published>
    <title>{escape(self.title)}</title>
    <summary>  {escape(self.abstract)}
    </summary>
    {authors}
    <link href={quoteattr(self.abs_url)} rel="alternate" type="text/html"/>
    <link title="pdf" href={quoteattr(self.pdf_url)} rel="related" type="application/pdf"/>
    <arxiv:primary_category term="{self.category}" scheme="http://arxiv.org/schemas/atom"/>
    <category term="{self.category}" scheme="http://arxiv.org/schemas/atom"/>
  </entry>"""


def feed(entries: list[str], query: str = "") -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"
      xmlns:arxiv="http://arxiv.org/schemas/atom">
  <link href="http://arxiv.org/api/query" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query={escape(query)}</title>
  <id>http://arxiv.org/api/fake</id>
  <updated>2024-02-01T00:00:00-05:00</updated>
  <opensearch:totalResults>{len(entries)}</opensearch:totalResults>
  <opensearch:startIndex>0</opensearch:startIndex>
  <opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>
  {"".join(entries)}
</feed>
"""


def error_entry(message: str = "incorrect id format for 1234.12345") -> str:
    return f"""<entry>
    <id>http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345</id>
    <title>Error</title>
    <summary>{escape(message)}</summary>
    <updated>2024-02-01T00:00:00-05:00</updated>
    <link href="http://arxiv.org/api/errors#x" rel="alternate" type="text/html"/>
    <author><name>arXiv api core</name></author>
  </entry>"""


class FakeArxiv(FakeApi):
    def __init__(self, result_base: str = "http://arxiv.org") -> None:
        super().__init__("/api")
        self.result_base = result_base.rstrip("/")
        self.papers_for: dict[str, list[FakePaper]] = {}

    def default_papers(self, search_query: str) -> list[FakePaper]:
        slug = re.sub(r"[^a-z0-9]+", "-", search_query.lower()).strip("-") or "q"
        return [
            FakePaper(
                f"2401.0000{i}",
                f"{slug} paper {i}",
                f"Paper {i} about {slug}: a deterministic abstract from the fake arXiv.",
                authors=[f"Author {i}A", f"Author {i}B"],
                base=f"{self.result_base}/{slug}",
            )
            for i in (1, 2)
        ]

    def routes(self) -> dict[str, Handler]:
        return {"/query": self._query}

    async def _query(self, request: web.Request) -> web.Response:
        query = request.query.get("search_query", "")
        papers = self.papers_for.get(query)
        if papers is None:
            papers = self.default_papers(query)
        papers = papers[: int(request.query.get("max_results", "10"))]
        return web.Response(
            text=feed([p.atom() for p in papers], query), content_type="application/atom+xml"
        )
