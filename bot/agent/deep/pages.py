"""One page cache per deep run: a URL read by one researcher is not fetched again by another.

It sits in front of the toolbox. Concurrent reads of one URL share one fetch, which runs in its
own task so that a researcher stopped mid-read does not cancel it for the others waiting. It
saves the download; each reader still gets the page summarized for its own sub-question when
the page is long (the compressor's goal is the reader's task).
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot.agent.steps import Tools
from bot.agent.urls import normalize_url
from bot.agent.web.registry import ToolContext, ToolResult

CACHED_TOOLS = {"read_page"}


class SharedPages:
    def __init__(self, toolbox: Tools) -> None:
        self._toolbox = toolbox
        self._reads: dict[str, asyncio.Task[ToolResult]] = {}
        self.hits = 0
        """Reads answered from the cache: fetches avoided."""

    async def call(self, ctx: ToolContext, name: str, raw_input: dict[str, Any]) -> ToolResult:
        url = raw_input.get("url")
        if name not in CACHED_TOOLS or not isinstance(url, str):
            return await self._toolbox.call(ctx, name, raw_input)
        key = normalize_url(url)
        read = self._reads.get(key)
        if read is None:
            read = asyncio.create_task(self._toolbox.call(ctx, name, raw_input))
            self._reads[key] = read
            read.add_done_callback(lambda done: self._forget_failure(key, done))
        else:
            self.hits += 1
        return await asyncio.shield(read)

    def _forget_failure(self, key: str, read: asyncio.Task[ToolResult]) -> None:
        # Readers waiting on a failed read share its error; a later reader tries again (a
        # timeout or a 503 may pass a minute later).
        failed = read.cancelled() or read.exception() is not None or read.result().is_error
        if failed and self._reads.get(key) is read:
            del self._reads[key]

    async def close(self) -> None:
        """Stop reads nobody waits for any more (their researchers were stopped)."""
        pending = [t for t in self._reads.values() if not t.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
