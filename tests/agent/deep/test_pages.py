"""The deep run's shared page cache: one fetch per URL, failures not kept."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from bot.agent.deep.pages import SharedPages
from bot.agent.report.model import SourceRegistry
from bot.agent.web.registry import Tool, Toolbox, ToolContext, ToolOutput
from bot.errors import ToolError


class Args(BaseModel):
    url: str


def flaky_reader(fails: int, gate: asyncio.Event) -> tuple[Toolbox, list[str]]:
    fetched: list[str] = []

    async def read_page(ctx: ToolContext, args: Args) -> ToolOutput:
        fetched.append(args.url)
        await gate.wait()
        if len(fetched) <= fails:
            raise ToolError("503 Service Unavailable")
        return ToolOutput(heading="[1] page", body="text")

    return Toolbox([Tool("read_page", Args, read_page, 5)]), fetched


async def test_concurrent_reads_of_one_url_share_one_fetch() -> None:
    gate = asyncio.Event()
    toolbox, fetched = flaky_reader(0, gate)
    pages = SharedPages(toolbox)
    ctx = ToolContext(SourceRegistry())
    reads = [
        asyncio.ensure_future(pages.call(ctx, "read_page", {"url": url}))
        for url in ("https://a.example/x", "https://A.example/x", "https://a.example/x#top")
    ]
    gate.set()  # the three calls start together, before the one fetch runs
    results = await asyncio.gather(*reads)
    assert fetched == ["https://a.example/x"] and pages.hits == 2
    assert all(not r.is_error for r in results)


async def test_a_failed_read_is_tried_again_by_the_next_reader() -> None:
    gate = asyncio.Event()
    gate.set()
    toolbox, fetched = flaky_reader(1, gate)
    pages = SharedPages(toolbox)
    ctx = ToolContext(SourceRegistry())
    first = await pages.call(ctx, "read_page", {"url": "https://a.example/x"})
    second = await pages.call(ctx, "read_page", {"url": "https://a.example/x"})
    assert first.is_error and not second.is_error
    assert len(fetched) == 2 and pages.hits == 0
