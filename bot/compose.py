"""Building the whole bot from settings: clients created once, passed down, closed at the end."""

from __future__ import annotations

import dataclasses
import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.agent.calls import Limits
from bot.agent.compress import Compressor
from bot.agent.control import Control
from bot.agent.deep.engine import DeepResearch
from bot.agent.deep.session import DeepLimits
from bot.agent.events import Event
from bot.agent.followup.engine import FollowUpEngine
from bot.agent.identity import IdentityStep
from bot.agent.loop import Researcher
from bot.agent.past_reports import past_reports_tool
from bot.agent.web.arxiv import Arxiv, arxiv_tools
from bot.agent.web.budget import MiB, ReadBudget
from bot.agent.web.extract_pool import Extractor
from bot.agent.web.fetch import PageFetcher
from bot.agent.web.github import GitHub, github_tools
from bot.agent.web.registry import ScopedTools, Tool, Toolbox, research_tools
from bot.agent.web.reuse import ReusingPages
from bot.agent.web.search import SearchProvider, build_search
from bot.config import Settings
from bot.domain import Depth, Request
from bot.providers import model_chain
from bot.runs.followups import FollowUps
from bot.runs.identify import Identifying
from bot.runs.manager import Engine, RunManager
from bot.runs.quota import Quota, QuotaLimits
from bot.store.pages import PageStore
from bot.store.recent import RecentReports
from bot.store.runs import Store
from bot.store.signals import PostgresSignals, Signals

log = logging.getLogger(__name__)


def one_replica() -> int:
    """Until replicas announce themselves in the database, this process counts as the only one."""
    return 1


@dataclass(frozen=True)
class Services:
    settings: Settings
    store: Store
    runs: RunManager
    followups: FollowUps
    replicas_alive: Callable[[], int] = one_replica
    """How many replicas serve this bot now, this one included: Slack's rate limits are divided
    between them. Asked at every send to Slack, so it answers from memory."""


class ByKind:
    """The engine the runs service drives: a follow-up question goes to the follow-up engine,
    research to the engine of its depth."""

    def __init__(self, quick: Engine, deep: Engine, followup: Engine) -> None:
        self._engines = {Depth.QUICK: quick, Depth.DEEP: deep}
        self._followup = followup

    def _engine(self, request: Request) -> Engine:
        if request.parent_run_id is not None:
            return self._followup
        return self._engines[request.depth]

    def research(self, run_id: str, request: Request, control: Control) -> AsyncIterator[Event]:
        return self._engine(request).research(run_id, request, control)

    def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "interrupted",
    ) -> AsyncIterator[Event]:
        return self._engine(request).recover(run_id, request, history, control, why=why)


def limits(settings: Settings) -> Limits:
    return Limits(
        max_turns=settings.max_turns,
        deadline_s=settings.deadline_s,
        synthesis_timeout_s=settings.synthesis_timeout_s,
        model_timeout_s=settings.model_timeout_s,
        max_output_tokens=settings.max_output_tokens,
        context_window_tokens=settings.context_window_tokens,
        max_cost_usd=settings.max_run_cost_usd,
    )


def followup_limits(settings: Settings) -> Limits:
    """A follow-up's small budget: few turns, a small cost cap; the run's other limits."""
    return dataclasses.replace(
        limits(settings),
        max_turns=settings.followup_max_turns,
        max_cost_usd=settings.followup_max_cost_usd,
    )


def deep_limits(settings: Settings) -> DeepLimits:
    return DeepLimits(
        researchers=settings.deep_researchers,
        max_turns=settings.deep_max_turns,
        deadline_s=settings.deep_deadline_s,
    )


def quota_limits(settings: Settings) -> QuotaLimits:
    return QuotaLimits(
        daily_budget_usd=settings.daily_budget_usd,
        user_runs_per_hour=settings.user_runs_per_hour,
    )


def source_tools(settings: Settings, stack: AsyncExitStack) -> list[Tool[Any]]:
    """arXiv and GitHub: one client each for the process, closed with the stack."""
    arxiv = Arxiv(settings.arxiv_api_url, timeout_s=settings.tool_timeout_s)
    stack.push_async_callback(arxiv.aclose)
    token = settings.github_token.get_secret_value() if settings.github_token else None
    github = GitHub(settings.github_api_url, token, timeout_s=settings.tool_timeout_s)
    stack.push_async_callback(github.aclose)
    return [
        *arxiv_tools(arxiv, timeout_s=settings.tool_timeout_s),
        *github_tools(github, timeout_s=settings.tool_timeout_s),
    ]


MCP_START_WAIT_S = 10.0
"""How long the bot waits at start for its MCP servers' first answers; one slower than this
joins later, and runs started meanwhile do not see its tools."""


async def mcp_tools(config: Path, stack: AsyncExitStack) -> ScopedTools:
    """The operator's MCP servers, connected once for the process and kept connected in the
    background, stopped with the stack."""
    from bot.agent.mcp.config import load_mcp_config
    from bot.agent.mcp.servers import McpServers
    from bot.agent.mcp.tools import McpTools

    servers = await stack.enter_async_context(McpServers(load_mcp_config(config)))
    await servers.first_tries(within_s=MCP_START_WAIT_S)
    return McpTools(servers)


def kept_pages(settings: Settings, store: Store) -> PageStore | None:
    """Pages (and their condensing) a workspace's runs read, given again to its later runs
    within RESEARCH_BOT_REUSE_DAYS; None when that is 0."""
    if not settings.reuse_days:
        return None
    return PageStore(store.database, days=settings.reuse_days, clock=store.now)


def reusing(toolbox: Toolbox, pages: PageStore | None) -> Toolbox:
    return toolbox if pages is None else ReusingPages(toolbox, pages)


def shared_signals(settings: Settings, store: Store) -> Signals | None:
    """Replicas on one PostgreSQL hear each other (LISTEN/NOTIFY); on SQLite there is one."""
    if settings.database_url is None:
        return None
    return PostgresSignals(store.database, settings.database_url.get_secret_value())


FULL_COLLECTION_EVERY = 100
"""Second-generation collections between two full ones (Python's default: 10)."""


def freeze_startup_heap() -> None:
    """For a long-lived process, once its services are built: everything so far (modules,
    clients, schemas: most of the heap) lives as long as the process. Out of the collector's
    sight, a full collection under load takes a few ms instead of stalling every run for
    100-140 ms (bench/scale.py).

    Then fewer full collections: after the freeze the collector's rule (a full one once the
    objects not yet fully collected grow by a quarter) counts only what is left outside, a
    few tens of thousands, so a burst of runs set one off every few seconds, each stopping every
    thread for 20-60 ms (bench/mcp_serve.py). At most one per 100 second-generation ones keeps
    the younger generations' collections as they were."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)


@asynccontextmanager
async def open_services(
    settings: Settings, *, search: SearchProvider | None = None, replica: bool = False
) -> AsyncIterator[Services]:
    """Everything a run needs. On exit, runs still going are stopped and left for recovery.

    `search` replaces the configured search chain (a test or benchmark's own provider).
    `replica`: a long-lived server (`serve`); on PostgreSQL it shares one queue with the
    other replicas on that database."""
    for unpriced in settings.unpriced_models():
        log.warning(
            "no price is known for %s: costs will show as unknown (set RESEARCH_BOT_PRICES)",
            unpriced,
        )
    async with AsyncExitStack() as stack:
        # The configured providers behind one port: the loop never knows which one answered.
        model = model_chain(settings, stack)
        store = await stack.enter_async_context(
            Store.connect(settings.database, busy_timeout_s=settings.db_busy_timeout_s)
        )
        # One extraction pool and one reading budget for every run of the process.
        extractor = await stack.enter_async_context(
            Extractor(workers=settings.extract_workers, timeout_s=settings.extract_timeout_s)
        )
        budget = ReadBudget(
            max_fetches=settings.fetch_max_concurrent,
            max_bytes=settings.fetch_max_mib_in_flight * MiB,
        )
        fetcher = await stack.enter_async_context(
            PageFetcher(allow_hosts=settings.fetch_allow_hosts, extractor=extractor, budget=budget)
        )
        if search is None:
            search = await stack.enter_async_context(build_search(settings))
        pages = kept_pages(settings, store)
        compressor = Compressor(
            model,
            fast_model=model.fast_model,
            threshold_tokens=settings.compress_threshold_tokens,
            timeout_s=settings.model_timeout_s,
            memory=pages,
        )
        toolbox = research_tools(
            search,
            fetcher,
            timeout_s=settings.tool_timeout_s,
            extra=[
                *source_tools(settings, stack),
                past_reports_tool(store, timeout_s=settings.tool_timeout_s),
            ],
            timeouts=settings.tool_timeouts,
        )
        if settings.mcp_config is not None:
            toolbox = toolbox.with_scoped(await mcp_tools(settings.mcp_config, stack))
        toolbox = reusing(toolbox, pages)
        # Reuse off still lets a watched run start from its watch's last report.
        earlier = RecentReports(store, days=settings.reuse_days)
        quick = Researcher(model, toolbox, compressor, limits(settings), earlier=earlier)
        deep = DeepResearch(
            model, toolbox, compressor, limits(settings), deep_limits(settings), earlier=earlier
        )
        followup = FollowUpEngine(model, toolbox, compressor, followup_limits(settings), store)
        step = IdentityStep(model, toolbox, limits(settings), fast_model=model.fast_model)
        engine = Identifying(
            ByKind(quick=quick, deep=deep, followup=followup),
            step if settings.identify else None,
            store,
            timeout_s=settings.choice_timeout_s,
        )
        quota = Quota(store, quota_limits(settings))
        runs = RunManager(
            store,
            engine,
            max_concurrent=settings.max_concurrent_runs,
            lease_s=settings.run_lease_s,
            quota=quota,
            shared=shared_signals(settings, store) if replica else None,
        )
        stack.push_async_callback(runs.shutdown)
        followups = FollowUps(store, runs)
        yield Services(
            settings=settings,
            store=store,
            runs=runs,
            followups=followups,
            replicas_alive=runs.replicas_alive,
        )
