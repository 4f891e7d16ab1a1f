"""Kept pages and condensings on both engines: found within the window in their own workspace
(a private conversation's only from it), under the address asked for or the one it led to, and
nowhere else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.agent.compress import KeptCondensing
from bot.agent.report.model import Source
from bot.domain import Origin
from bot.store.pages import PageStore
from bot.store.runs import Store

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
PUBLIC = Origin(platform="slack", workspace="T1", channel="C1", private=False)
OTHER_CHANNEL = Origin(platform="slack", workspace="T1", channel="C2", private=False)
PRIVATE = Origin(platform="slack", workspace="T1", channel="G1", private=True)
ELSEWHERE = Origin(platform="slack", workspace="T2", channel="C1", private=False)
ABOUT = "https://acme.example/about"


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def store(db_target: str | Path) -> AsyncIterator[Store]:
    async with Store.connect(db_target) as opened:
        yield opened


def source(url: str = ABOUT) -> Source:
    return Source(url=url, title="About Acme", snippet="Acme", read=True, published="2026-11-30")


async def test_a_page_is_found_in_its_workspace_within_the_window_only(store: Store) -> None:
    clock = Clock()
    pages = PageStore(store.database, days=7, clock=clock)
    await pages.keep(
        PUBLIC, "https://ACME.example/about/#team", source=source(), body="Robots.", run_id="r1"
    )

    found = await pages.page(OTHER_CHANNEL, ABOUT)
    assert found is not None
    assert (found.source, found.body, found.run_id, found.read_at) == (source(), "Robots.", "r1", NOW)
    assert await pages.page(ELSEWHERE, ABOUT) is None
    assert await pages.page(Origin(), ABOUT) is None  # the terminal is a workspace of its own
    assert await pages.page(PUBLIC, "https://acme.example/other") is None
    clock.now = NOW + timedelta(days=6, hours=23)
    assert await pages.page(PUBLIC, ABOUT) is not None
    clock.now = NOW + timedelta(days=7, minutes=1)
    assert await pages.page(PUBLIC, ABOUT) is None


async def test_a_private_conversations_page_is_given_only_in_it(store: Store) -> None:
    pages = PageStore(store.database, days=7, clock=Clock())
    await pages.keep(PRIVATE, ABOUT, source=source(), body="Robots.", run_id="r1")

    assert await pages.page(PUBLIC, ABOUT) is None
    assert await pages.page(PRIVATE, ABOUT) is not None


async def test_a_redirected_page_is_found_under_both_addresses_and_the_newest_read_wins(
    store: Store,
) -> None:
    clock = Clock()
    pages = PageStore(store.database, days=7, clock=clock)
    new = "https://acme.example/new"
    await pages.keep(PUBLIC, "https://acme.example/old", source=source(new), body="A", run_id="r1")
    clock.now = NOW + timedelta(hours=1)
    await pages.keep(OTHER_CHANNEL, new, source=source(new), body="B", run_id="r2")

    old, newest = (
        await pages.page(PUBLIC, "https://acme.example/old"),
        await pages.page(PUBLIC, new),
    )
    assert old is not None and (old.body, old.source.url) == ("A", new)
    assert newest is not None and (newest.body, newest.run_id) == ("B", "r2")


async def test_a_condensing_is_found_for_the_same_text_goal_and_workspace_only(
    store: Store,
) -> None:
    clock = Clock()
    pages = PageStore(store.database, days=7, clock=clock)
    kept = KeptCondensing("Acme: robots.", "(condensed from 9,000 characters)", "fast")
    await pages.keep_condensed("T1", "long text\x00", "Research Acme", kept)

    assert await pages.condensed("T1", "long text\x00", "Research Acme") == kept
    assert await pages.condensed("T1", "long text!", "Research Acme") is None
    assert await pages.condensed("T1", "long text\x00", "Research Beta") is None
    assert await pages.condensed("terminal", "long text\x00", "Research Acme") is None
    clock.now = NOW + timedelta(days=7, seconds=1)
    assert await pages.condensed("T1", "long text\x00", "Research Acme") is None
