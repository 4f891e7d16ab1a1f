"""The extraction pool: same text as in-process, a time cap per page, and workers that come back."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator

import pytest

from bot.agent.web.extract import Body, extract_page
from bot.agent.web.extract_pool import Extractor
from bot.agent.web.fetch import FetchLimits, PageFetcher
from bot.errors import ToolError
from tests.fakes.web import ARTICLE_HTML, ARTICLE_PATH, INJECTION_HTML, FakeWeb

# Thousands of link-laden blocks: trafilatura needs seconds (tens of seconds at 20,000).
SLOW_HTML = (
    "<html><body>"
    + "".join(
        f"<div><p>Block {i} on robots.</p><a href='/x{i}'>more</a></div>" for i in range(6000)
    )
    + "</body></html>"
)


def body(html: str, url: str = "https://news.example/acme") -> Body:
    return Body(
        url=url, host="news.example", media_type="text/html", charset="utf-8", data=html.encode()
    )


@pytest.fixture
async def pool() -> AsyncIterator[Extractor]:
    async with Extractor(workers=1, timeout_s=5) as extractor:
        yield extractor


async def test_a_page_extracted_in_the_pool_equals_the_in_process_result(pool: Extractor) -> None:
    for html in (ARTICLE_HTML, INJECTION_HTML, "<html><body><p>Short.</p></body></html>"):
        assert await pool.extract(body(html), 40_000) == extract_page(body(html), 40_000)

    assert len(pool.pids()) == 1  # started once, at the first page, and kept


async def test_the_fetcher_reads_through_the_pool(web: FakeWeb, pool: Extractor) -> None:
    async with PageFetcher(allow_hosts=[web.host_port], extractor=pool) as fetcher:
        page = await fetcher.fetch(web.url + ARTICLE_PATH)
    async with PageFetcher(allow_hosts=[web.host_port]) as in_thread:
        assert page == await in_thread.fetch(web.url + ARTICLE_PATH)
    assert "Series B round led by Example Ventures" in page.text


async def test_a_page_over_the_time_cap_is_refused_and_its_worker_replaced() -> None:
    async with Extractor(workers=1, timeout_s=0.3) as pool:
        await pool.start()
        [slow_worker] = pool.pids()

        with pytest.raises(ToolError, match=r"refused: .* took more than 0.3 s to extract"):
            await pool.extract(body(SLOW_HTML), 40_000)

        page = await pool.extract(body(ARTICLE_HTML), 40_000)
        assert "about 120 engineers" in page.text
        assert pool.pids() != [slow_worker]


async def test_the_pool_survives_a_worker_that_dies(pool: Extractor) -> None:
    await pool.start()
    [worker] = pool.pids()

    os.kill(worker, signal.SIGKILL)
    page = await pool.extract(body(ARTICLE_HTML), 40_000)

    assert "about 120 engineers" in page.text
    assert len(pool.pids()) == 1 and pool.pids() != [worker]


async def test_text_pages_take_the_fast_path_and_the_size_cap_holds(web: FakeWeb) -> None:
    url = web.page("/notes.txt", "word " * 10_000, content_type="text/plain")
    limits = FetchLimits(deadline_s=5, max_text_chars=1_000)
    # A closed pool: any page sent to it would fail, so this one never went there.
    async with Extractor(workers=1) as closed:
        pass
    async with PageFetcher(allow_hosts=[web.host_port], extractor=closed, limits=limits) as fetcher:
        page = await fetcher.fetch(url)

    assert page.truncated and page.text.startswith("word word")
    assert "the page is longer than 1,000 characters" in page.text
