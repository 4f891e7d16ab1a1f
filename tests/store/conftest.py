"""The store tests' default `store`: on each database the suite runs (`db_target`), with a
clock that steps (a module with a `store` fixture of its own uses that one)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.store.runs import Store
from tests.store.stepped import StepClock


@pytest.fixture
async def store(db_target: str | Path) -> AsyncIterator[Store]:
    async with Store.connect(db_target, clock=StepClock()) as opened:
        yield opened
