"""Agent test fixtures: a fetcher allowed to read the fake web (`web` is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.agent.web.fetch import FetchLimits, PageFetcher
from tests.fakes.web import FakeWeb


@pytest.fixture
async def fetcher(web: FakeWeb) -> AsyncIterator[PageFetcher]:
    """Default limits but a shorter deadline, and the fake web on the allow-list. The deadline
    leaves room for a loaded machine: the first page a test process extracts imports the
    extraction libraries (seconds when both cores are busy)."""
    limits = FetchLimits(deadline_s=20)
    async with PageFetcher(allow_hosts=[web.host_port], limits=limits) as page_fetcher:
        yield page_fetcher
