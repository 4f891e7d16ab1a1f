"""The fake world every end-to-end test runs in: a Messages API, Tavily and a web, all on 127.0.0.1."""

from __future__ import annotations

import contextlib
import faulthandler
import sys
import threading
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from bot.compose import Services, open_services
from bot.config import Settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.postgres import PgServer, start_server

TEST_MODEL = "claude-sonnet-4-6"
PROCESS_HEAVY = ("test_terminal_faults.py", "test_replicas.py", "test_read_commands_start_light.py")
"""Test files that start many bot processes at once (thirty terminal runs, three replicas,
twelve fresh interpreters): kept on one xdist worker, so two of them never share the two cores
at once. The other bot processes are forked from a server that has their SDKs loaded, and
start in a fraction of a second (`tests/forkserver.py`)."""


class HeavyTogether(LoadScopeScheduling):
    """xdist's scheduling by scope, one scope a test, except the process-heavy files: one scope
    for all of them. Said here rather than with `xdist_group` marks, which pytest 9.2 no longer
    lets xdist's `loadgroup` read (pytest-xdist issue 1386): the tests would share the cores."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return "process-heavy" if path.endswith(PROCESS_HEAVY) else nodeid


@pytest.hookimpl(optionalhook=True)  # an xdist hook: absent under `-p no:xdist`
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> HeavyTogether:
    return HeavyTogether(config, log)


STACKS_BEFORE_TIMEOUT_S = 3.0
"""A test still running this long before its timeout prints every thread's stack to the run's
own output. pytest-timeout then ends the worker (its thread method), and what it prints itself
stays in output the worker never sends: without this, a hang would show only "node down"."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None]:
    marker = item.get_closest_marker("timeout")
    limit = float(marker.args[0] if marker and marker.args else item.config.getini("timeout"))
    capture = item.config.pluginmanager.getplugin("capturemanager")

    def show_stacks() -> None:
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print(f"\n{item.nodeid} is about to time out; its threads:", file=sys.stderr)
            faulthandler.dump_traceback(file=sys.stderr)

    timer = threading.Timer(limit - STACKS_BEFORE_TIMEOUT_S, show_stacks)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


FAST_MODEL = "claude-haiku-4-5"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One real PostgreSQL server per test process (each xdist worker starts its own)."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh PostgreSQL database with the schema, dropped after the test."""
    name = pg_server.new_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_target(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where a store lives, once per engine: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        return tmp_path / "data" / "nested" / "bot.sqlite3"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
async def web() -> AsyncIterator[FakeWeb]:
    async with FakeWeb() as fake:
        yield fake


@pytest.fixture
async def anthropic_api() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(min_cache_tokens=0) as fake:
        yield fake


@pytest.fixture
async def tavily(web: FakeWeb) -> AsyncIterator[FakeTavily]:
    async with FakeTavily(api_key="tvly-test", result_base=web.url) as fake:
        yield fake


def world_env(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> dict[str, str]:
    """The environment that points the bot at the fakes (also used for CLI subprocesses)."""
    return {
        "ANTHROPIC_API_KEY": "sk-test",
        "ANTHROPIC_BASE_URL": anthropic_api.url,
        "RESEARCH_BOT_MODEL": TEST_MODEL,
        "RESEARCH_BOT_FAST_MODEL": FAST_MODEL,
        "RESEARCH_BOT_MODEL_MAX_RETRIES": "0",
        "TAVILY_API_KEY": "tvly-test",
        "TAVILY_BASE_URL": tavily.url,
        "RESEARCH_BOT_DB": str(tmp_path / "runs.sqlite3"),
        "RESEARCH_BOT_FETCH_ALLOW_HOSTS": web.host_port,
        "RESEARCH_BOT_IDENTIFY": "false",  # tests that script the identity step turn it on
    }


@pytest.fixture
def settings(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> Settings:
    return Settings.from_mapping(world_env(tmp_path, anthropic_api, tavily, web))


@pytest.fixture
async def world(settings: Settings) -> AsyncIterator[Services]:
    """The real bot (store, runs service, engine, real SDK clients) wired to the fakes."""
    async with open_services(settings) as services:
        yield services


class Recorder:
    """A RunListener that keeps what it hears, for tests to assert on."""

    def __init__(self) -> None:
        import asyncio

        self.events: list[Any] = []
        self.outcome: Any = None
        self.run: Any = None
        """The record `submit` returned, when a test keeps it here."""
        self.finished = asyncio.Event()
        self.changed = asyncio.Event()

    async def on_event(self, run: Any, event: Any) -> None:
        self.events.append(event)
        self.changed.set()

    async def on_finished(self, run: Any, outcome: Any) -> None:
        self.outcome = outcome
        self.finished.set()

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    async def wait_for(self, kind: str) -> None:
        while kind not in self.kinds():
            self.changed.clear()
            await self.changed.wait()
