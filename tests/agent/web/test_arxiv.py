"""arxiv_search against the local fake arXiv API: papers become numbered, fenced sources."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.agent.report.model import SourceRegistry
from bot.agent.web.arxiv import Arxiv, arxiv_tools, search_query
from bot.agent.web.registry import Toolbox, ToolContext
from bot.errors import ToolError
from tests.fakes.arxiv_api import FakeArxiv, FakePaper, error_entry, feed

GRASPING = FakePaper(
    "2401.01234",
    "Tactile   grasping\n for warehouse robots",
    "We present a tactile gripper that reaches 93% grasp success on 1,200 warehouse items.",
    authors=[
        "Ada Lovelace",
        "Alan Turing",
        "Grace Hopper",
        "Edsger Dijkstra",
        "Barbara Liskov",
        "Ken Thompson",
    ],
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeArxiv]:
    async with FakeArxiv() as server:
        yield server


@pytest.fixture
async def arxiv(fake: FakeArxiv) -> AsyncIterator[Arxiv]:
    client = Arxiv(fake.url, timeout_s=5, min_interval_s=0)
    yield client
    await client.aclose()


def toolbox(arxiv: Arxiv) -> Toolbox:
    return Toolbox(arxiv_tools(arxiv, timeout_s=5))


async def test_papers_are_parsed_from_the_atom_feed(fake: FakeArxiv, arxiv: Arxiv) -> None:
    fake.papers_for["all:tactile AND all:grasping"] = [GRASPING]

    [paper] = await arxiv.search("tactile grasping", 5)

    assert paper.title == "Tactile grasping for warehouse robots"
    assert paper.abs_url == "http://arxiv.org/abs/2401.01234v1"
    assert paper.pdf_url == "http://arxiv.org/pdf/2401.01234v1"
    assert paper.abstract.startswith("We present a tactile gripper")
    assert paper.authors[:2] == ["Ada Lovelace", "Alan Turing"]
    assert (paper.published, paper.category) == ("2024-01-15", "cs.RO")
    [request] = fake.requests
    assert request.path == "/api/query"
    assert request.query["max_results"] == "5"
    assert request.query["sortBy"] == "relevance"


def test_plain_words_must_all_match_and_arxiv_syntax_passes_through() -> None:
    assert search_query("tactile  grasping") == "all:tactile AND all:grasping"
    assert search_query("ti:diffusion AND cat:cs.LG") == "ti:diffusion AND cat:cs.LG"


async def test_the_tool_lists_papers_as_numbered_sources_with_abstract_and_pdf_link(
    fake: FakeArxiv, arxiv: Arxiv
) -> None:
    registry = SourceRegistry()

    result = await toolbox(arxiv).call(ToolContext(registry), "arxiv_search", {"query": "robots"})

    assert not result.is_error
    assert result.output.heading == "Papers on arXiv for 'robots':"
    first, second = fake.default_papers("all:robots")
    assert [s.url for s in registry.sources] == [first.abs_url, second.abs_url]
    assert registry.sources[0].snippet == first.abstract  # the whole abstract
    assert not registry.sources[0].read  # seen, not read: reading is read_page's job
    body = result.output.body
    assert body.startswith(f"[1] {first.title}\n{first.abs_url}\nAuthor 1A, Author 1B · 2024-01-15")
    assert f"PDF: {first.pdf_url}" in body and f"[2] {second.title}" in body


async def test_many_authors_are_shortened(fake: FakeArxiv, arxiv: Arxiv) -> None:
    fake.papers_for["all:tactile"] = [GRASPING, GRASPING]

    result = await toolbox(arxiv).call(
        ToolContext(SourceRegistry()), "arxiv_search", {"query": "tactile"}
    )

    assert (
        "Ada Lovelace, Alan Turing, Grace Hopper, Edsger Dijkstra, Barbara Liskov et al."
        in result.output.body
    )
    assert "Ken Thompson" not in result.output.body


@pytest.mark.parametrize("found", [0, 1])
async def test_too_few_papers_says_so_and_suggests_refining(
    fake: FakeArxiv, arxiv: Arxiv, found: int
) -> None:
    fake.papers_for["all:obscure"] = [GRASPING][:found]

    result = await toolbox(arxiv).call(
        ToolContext(SourceRegistry()), "arxiv_search", {"query": "obscure"}
    )

    assert not result.is_error
    heading = result.output.heading
    assert heading.startswith("No papers on arXiv" if found == 0 else "Only 1 useful result")
    assert "fewer or broader words" in heading


async def test_a_query_arxiv_cannot_run_is_a_tool_error(fake: FakeArxiv, arxiv: Arxiv) -> None:
    fake.answer_next(
        feed([error_entry("incorrect id format for 1234.12345")]),
        content_type="application/atom+xml",
    )

    with pytest.raises(ToolError, match="arXiv refused the query: incorrect id format"):
        await arxiv.search("id:1234.12345", 5)


@pytest.mark.parametrize(
    "body",
    [
        # Entity expansion (billion laughs) and an external entity: refused before any expansion.
        '<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        '<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>&b;</title></entry></feed>',
        '<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        '<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>&x;</title></entry></feed>',
        "<html><body>Service unavailable</body>",
        '{"not": "xml"}',
        '<rss version="2.0"><channel/></rss>',
    ],
    ids=["entities", "external-entity", "html", "json", "not-atom"],
)
async def test_an_answer_that_is_not_a_safe_atom_feed_is_refused(
    fake: FakeArxiv, arxiv: Arxiv, body: str
) -> None:
    fake.answer_next(body, content_type="application/atom+xml")

    with pytest.raises(ToolError, match="not an Atom feed"):
        await arxiv.search("robots", 5)


@pytest.mark.parametrize(("status", "said"), [(503, "HTTP 503"), (429, "rate limited")])
async def test_http_failures_become_error_results(
    fake: FakeArxiv, arxiv: Arxiv, status: int, said: str
) -> None:
    fake.fail_next(status)

    result = await toolbox(arxiv).call(
        ToolContext(SourceRegistry()), "arxiv_search", {"query": "robots"}
    )

    assert result.is_error
    assert said in result.output.body  # the details are fenced with the body
