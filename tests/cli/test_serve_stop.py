"""A stop of `research-bot serve` that hangs is abandoned before the deploy's grace period ends
it blind: the log says what it still waited on, and the process exits with status 1."""

from __future__ import annotations

import asyncio
import re
import tomllib
from pathlib import Path

import pytest

from bot.cli.serve import STOP_WITHIN_S, abandon_stop_after


async def test_a_stop_that_hangs_is_abandoned_saying_what_it_waited_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exited = asyncio.Event()
    codes: list[int] = []

    def exit(code: int) -> None:
        codes.append(code)
        exited.set()

    stuck = asyncio.create_task(asyncio.Event().wait(), name="closing-the-store")
    abandon_stop_after(0.01, exit=exit)
    await exited.wait()
    stuck.cancel()

    assert codes == [1]
    assert "abandoned while waiting on" in caplog.text
    assert "closing-the-store" in caplog.text


def test_the_stop_ends_within_the_deploys_grace_period() -> None:
    root = Path(__file__).resolve().parents[2]
    compose = re.search(r"stop_grace_period:\s*(\d+)s", (root / "docker-compose.yml").read_text())
    fly = tomllib.loads((root / "fly.toml").read_text())
    assert compose is not None
    assert min(int(compose[1]), fly["kill_timeout"]) > STOP_WITHIN_S
