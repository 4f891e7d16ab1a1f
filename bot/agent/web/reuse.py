"""Pages a run of the same workspace read recently, given again instead of fetched again.

A toolbox in front of the research tools: the model still decides what to read; a page its
workspace read within the window (bot/store/pages.py keeps them) comes from there, numbered as a
source of this run like any page read, its text fenced as before, its result marked `reused`. A
memory that fails or cannot answer in time costs nothing but the saving: the page is fetched.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from bot.agent.report.model import Source
from bot.agent.web.registry import (
    ReadPageArgs,
    ScopedTools,
    Toolbox,
    ToolContext,
    ToolOutput,
    ToolResult,
)
from bot.domain import Origin
from bot.errors import StoreError

log = logging.getLogger(__name__)
READER = "read_page"
WAIT_S = 2.0
"""How long the memory may take to answer before the page is fetched as if it had none."""


class KeptPage(BaseModel):
    """A page as a run read it: its source (final address, title, date) and the text the model
    was given, whole (before condensing)."""

    source: Source
    body: str
    run_id: str
    """The run that read it."""
    read_at: datetime


class PageMemory(Protocol):
    """Where a workspace's pages are kept for its later runs (bot/store/pages.py)."""

    async def page(self, origin: Origin, url: str) -> KeptPage | None:
        """The page read under `url` (as asked, or where it led) that `origin`'s conversation
        may see in its workspace, within the window."""
        ...

    async def keep(
        self, origin: Origin, asked: str, *, source: Source, body: str, run_id: str
    ) -> None:
        """What run `run_id` read asking for `asked`, kept from now on."""
        ...


class ReusingPages(Toolbox):
    """`toolbox`, its page reader answered from `memory` when it can, kept in it when it reads.
    Every call goes to `toolbox` (its own tools and timeouts); only page reads look first."""

    def __init__(self, toolbox: Toolbox, memory: PageMemory, *, wait_s: float = WAIT_S) -> None:
        super().__init__([])
        self._inner = toolbox
        self._memory = memory
        self._wait_s = wait_s

    def with_scoped(self, scoped: ScopedTools) -> Toolbox:
        return ReusingPages(self._inner.with_scoped(scoped), self._memory, wait_s=self._wait_s)

    def schemas(self, scope: str | None = None) -> list[dict[str, Any]]:
        return self._inner.schemas(scope)

    async def call(self, ctx: ToolContext, name: str, raw_input: dict[str, Any]) -> ToolResult:
        if name != READER or not ctx.origin.scope or ctx.fresh:
            return await self._inner.call(ctx, name, raw_input)
        try:
            asked = str(ReadPageArgs.model_validate(raw_input).url)
        except ValidationError:
            return await self._inner.call(ctx, name, raw_input)  # it says what is wrong
        started = time.monotonic()
        kept = await self._recall(ctx, asked)
        if kept is not None:
            output = _given_again(ctx, asked, kept)
            return ToolResult(is_error=False, output=output, duration_s=time.monotonic() - started)
        result = await self._inner.call(ctx, name, raw_input)
        out = result.output
        if not result.is_error and out.sources and ctx.run_id:
            await self._keep(ctx, asked, out.sources[0], out.body)
        return result

    async def _recall(self, ctx: ToolContext, asked: str) -> KeptPage | None:
        try:
            async with asyncio.timeout(self._wait_s):
                return await self._memory.page(ctx.origin, asked)
        except (StoreError, TimeoutError) as error:
            log.warning("run %s: kept pages unreadable, fetching: %s", ctx.run_id, _why(error))
            return None

    async def _keep(self, ctx: ToolContext, asked: str, source: Source, body: str) -> None:
        try:
            async with asyncio.timeout(self._wait_s):
                await self._memory.keep(
                    ctx.origin, asked, source=source, body=body, run_id=ctx.run_id
                )
        except (StoreError, TimeoutError) as error:
            log.warning("run %s: could not keep a page for reuse: %s", ctx.run_id, _why(error))


def _given_again(ctx: ToolContext, asked: str, kept: KeptPage) -> ToolOutput:
    source = kept.source
    number = ctx.registry.add(source)
    ctx.registry.alias(asked, number)
    dated = f" (published {source.published})" if source.published else ""
    day = kept.read_at.date().isoformat()
    return ToolOutput(
        heading=f"[{number}] The page's title, address and text{dated}, as run {kept.run_id} "
        f"read it on {day} (reused, not fetched again):",
        body=kept.body,
        sources=[source],
        reused=True,
    )


def _why(error: Exception) -> str:
    return str(error) or type(error).__name__
