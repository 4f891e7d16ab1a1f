"""Tool registry: typed async tools with a pydantic input model, a generated schema and a timeout.

Tool failures are data: an expected failure (ToolError, a timeout, input that does not
validate) comes back as an error result the model can read. A tool that fails in a way
nobody expected is logged with its traceback and also becomes an error result, so one
broken source never stops a run or the tools called beside it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field, HttpUrl, ValidationError

from bot.agent.report.model import Source, SourceRegistry
from bot.agent.web.dates import Recency
from bot.agent.web.fetch import PageFetcher
from bot.agent.web.listing import entry, heading
from bot.agent.web.search import SearchAnswer, SearchProvider, as_chain
from bot.domain import Origin
from bot.errors import ConfigError, ToolError

Args = TypeVar("Args", bound=BaseModel)
log = logging.getLogger(__name__)


class ToolOutput(BaseModel):
    heading: str
    """Our own words (source numbers, URL): never compressed, never untrusted."""
    body: str = ""
    """What the web said: untrusted, may be compressed, always fenced as data."""
    sources: list[Source] = Field(default_factory=list)
    reused: bool = False
    """Given from what a run of the same workspace read recently, not fetched again."""


@dataclass
class ToolContext:
    """What tools may touch: the run's numbered sources (and its id, for the logs), and who
    asked where (`origin`): the workspace whose own sources the run may use."""

    registry: SourceRegistry
    run_id: str = ""
    origin: Origin = dataclasses.field(default_factory=Origin)
    fresh: bool = False
    """Read every page anew, never from the workspace's memory: a watched run looks at the
    world again, to see what changed since its last report."""


@dataclass(frozen=True)
class Tool(Generic[Args]):
    name: str
    input_model: type[Args]
    run: Callable[[ToolContext, Args], Awaitable[ToolOutput]]
    timeout_s: float
    described: str | None = None
    """The description, where it is not `run`'s docstring (a tool an MCP server describes)."""
    input_schema: dict[str, Any] | None = None
    """The schema the model sees, where it is not `input_model`'s (an MCP server's own)."""

    @property
    def description(self) -> str:
        return self.described if self.described is not None else (self.run.__doc__ or "").strip()

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema or self.input_model.model_json_schema(),
        }


ScopedTools = Callable[[str], Sequence["Tool[Any]"]]
"""The tools a workspace adds to the built-in ones (its MCP servers'), as they are now."""


class ToolResult(BaseModel):
    is_error: bool
    output: ToolOutput
    duration_s: float


class Toolbox:
    def __init__(self, tools: Sequence[Tool[Any]], scoped: ScopedTools | None = None) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._scoped = scoped

    def with_scoped(self, scoped: ScopedTools) -> Toolbox:
        """The same tools, and those `scoped` gives each run's workspace."""
        return Toolbox(list(self._tools.values()), scoped)

    def schemas(self, scope: str | None = None) -> list[dict[str, Any]]:
        """The built-in tools, and `scope`'s own: a run takes them once, at its start."""
        return [tool.schema() for tool in self._for(scope).values()]

    def _for(self, scope: str | None) -> dict[str, Tool[Any]]:
        if scope is None or self._scoped is None:
            return self._tools
        own = {tool.name: tool for tool in self._scoped(scope) if tool.name not in self._tools}
        return {**self._tools, **own}

    async def call(self, ctx: ToolContext, name: str, raw_input: dict[str, Any]) -> ToolResult:
        started = time.monotonic()
        output, is_error = await self._call(ctx, name, raw_input)
        return ToolResult(is_error=is_error, output=output, duration_s=time.monotonic() - started)

    async def _call(
        self, ctx: ToolContext, name: str, raw_input: dict[str, Any]
    ) -> tuple[ToolOutput, bool]:
        tools = self._for(ctx.origin.scope)
        tool = tools.get(name)
        if tool is None:
            # Also a tool of another workspace's server, or of one that went away mid-run.
            return ToolOutput(heading=f"Unknown tool {name!r}. Use: {', '.join(tools)}."), True
        try:
            args = tool.input_model.model_validate(raw_input)
        except ValidationError as error:
            return ToolOutput(heading=f"Invalid input for {name}: {problems(error)}"), True
        try:
            async with asyncio.timeout(tool.timeout_s):
                return await tool.run(ctx, args), False
        except TimeoutError:
            return ToolOutput(heading=f"{name} timed out after {tool.timeout_s:.0f}s."), True
        except ToolError as error:
            # The message quotes the web (a reason phrase, a content type, an address): fenced.
            return ToolOutput(heading=f"{name} failed: (details below)", body=str(error)), True
        except Exception:
            log.exception(
                "run %s: tool %s failed unexpectedly (input %r)", ctx.run_id, name, raw_input
            )
            return ToolOutput(heading=f"{name} failed unexpectedly; try another source."), True


def problems(error: ValidationError) -> str:
    """What was wrong with a tool input, in a line the model can correct it from."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in error.errors()
    )


class SearchArgs(BaseModel):
    query: str = Field(min_length=2, max_length=400, description="What to search the web for.")
    max_results: int = Field(default=6, ge=1, le=10)
    recency: Recency | None = Field(
        default=None,
        description="Only results from the past day, week, month or year, news first. Use it "
        "for news and recent events; leave it out for background and history.",
    )


class ReadPageArgs(BaseModel):
    url: HttpUrl = Field(description="An http(s) URL, usually one from the search results.")


REFINE_WEB = (
    "Try broader or different words, a synonym, the full official name, fewer quoted phrases, "
    "or the language of the country concerned."
)
REFINE_RECENT = f"{REFINE_WEB} Or a longer recency, or none."


def research_tools(
    search: SearchProvider,
    fetcher: PageFetcher,
    *,
    timeout_s: float,
    extra: Sequence[Tool[Any]] = (),
    timeouts: Mapping[str, float] | None = None,
) -> Toolbox:
    """The tools of a research run: web search and the page reader, then `extra` (arXiv,
    GitHub). `timeouts` overrides `timeout_s` for the tools it names."""
    chain = as_chain(search)

    async def web_search(ctx: ToolContext, args: SearchArgs) -> ToolOutput:
        """Search the web. Returns numbered results (title, URL, snippet); cite them as [n]."""
        what, refine = "results", REFINE_WEB
        if args.recency:
            what, refine = f"results from the past {args.recency}", REFINE_RECENT
        key = f"{' '.join(args.query.casefold().split())}|{args.recency or ''}"
        if (numbers := ctx.registry.searched.get(key)) is not None:
            return _searched_before(ctx.registry, numbers, what, args.query)
        answer = await chain.answer(args.query, args.max_results, args.recency)
        results = answer.sources
        numbers = [ctx.registry.add(s) for s in results]
        ctx.registry.searched[key] = numbers
        lines = [
            entry(n, s.title, s.url, s.snippet, published=s.published)
            for n, s in zip(numbers, results, strict=True)
        ]
        return ToolOutput(
            heading=heading(what, args.query, results, refine, via=_via(answer)),
            body="\n\n".join(lines),
            sources=results,
        )

    async def read_page(ctx: ToolContext, args: ReadPageArgs) -> ToolOutput:
        """Read a web page or a PDF and return its main text. Cite it with the number in the
        heading."""
        page = await fetcher.fetch(str(args.url))
        # The page's own date, else the one its search result gave.
        published = page.published or _known_date(ctx.registry, page.url, str(args.url))
        source = Source(
            url=page.url, title=page.title, snippet=page.text[:300], read=True, published=published
        )
        number = ctx.registry.add(source)
        # The URL the model asked for counts as retrieved too, when a redirect moved it.
        ctx.registry.alias(str(args.url), number)
        # Title and final address come from the page's server: inside the fence, with the text.
        # The date is ours to show: checked to be a calendar date.
        dated = f" (published {published})" if published else ""
        return ToolOutput(
            heading=f"[{number}] The page's title, address and text{dated}:",
            body=f"{page.title}\n{page.url}\n\n{page.text}",
            sources=[source],
        )

    tools: list[Tool[Any]] = [
        Tool("web_search", SearchArgs, web_search, timeout_s),
        Tool("read_page", ReadPageArgs, read_page, timeout_s),
        *extra,
    ]
    return Toolbox(_with_timeouts(tools, timeouts or {}))


def _with_timeouts(tools: list[Tool[Any]], timeouts: Mapping[str, float]) -> list[Tool[Any]]:
    unknown = ", ".join(sorted(set(timeouts) - {tool.name for tool in tools}))
    if unknown:
        known = ", ".join(tool.name for tool in tools)
        raise ConfigError(f"RESEARCH_BOT_TOOL_TIMEOUTS names no tool: {unknown} (tools: {known})")
    return [dataclasses.replace(t, timeout_s=timeouts.get(t.name, t.timeout_s)) for t in tools]


def _searched_before(
    registry: SourceRegistry, numbers: list[int], what: str, query: str
) -> ToolOutput:
    """A search this run already made: its results again, from the registry, without asking the
    provider (a model that repeats itself costs no search and learns it did)."""
    found = [(n, s) for n in numbers if (s := registry.get(n)) is not None]
    sources = [s for _, s in found]
    lines = [entry(n, s.title, s.url, s.snippet, published=s.published) for n, s in found]
    said = f"This run already searched for {query!r}: search with other words, or read a page."
    if sources:
        said = f"{said} Its {what}, as before:"
    return ToolOutput(heading=said, body="\n\n".join(lines), sources=sources)


def _known_date(registry: SourceRegistry, *urls: str) -> str | None:
    """The date a source already numbered under one of `urls` carries (a search result's)."""
    for url in urls:
        number = registry.number(url)
        known = registry.get(number) if number else None
        if known and known.published:
            return known.published
    return None


def _via(answer: SearchAnswer) -> str:
    """Which provider answered, after which failed: the chain's order, kept in the trajectory."""
    failed = f" after {', '.join(answer.failed)} failed" if answer.failed else ""
    return f" (from {answer.provider}{failed})"
