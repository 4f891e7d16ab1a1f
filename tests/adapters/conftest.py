"""Fixtures of the chat tests: the fake Discord, and discord.py's REST base left as found."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Iterator

import pytest

with warnings.catch_warnings():
    # discord.py imports `audioop`, deprecated on Python 3.11-3.12 (3.13 has audioop-lts).
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from tests.fakes.discord_api import FakeDiscord


@pytest.fixture(autouse=True)
def _restore_api_base() -> Iterator[None]:
    # A Discord bot points discord.py's process-wide REST base at the fake; leave it as found.
    base = discord.http.Route.BASE
    yield
    discord.http.Route.BASE = base


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    """A fake Discord (REST and gateway) on 127.0.0.1."""
    async with FakeDiscord() as server:
        yield server
