"""The terminal's choice of company: at a terminal (a pseudo-terminal here) the person types a
candidate's number; without one, the most likely is taken and the terminal says so."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from bot.adapters.chat.sink import StatusView
from bot.adapters.terminal_choice import ALONE, UNCLEAR, TerminalChoice
from bot.agent.events import Ending
from bot.cli.terminal_run import ReportFile
from bot.compose import Services
from bot.config import Settings
from bot.domain import Request
from tests.fakes.anthropic_api import FakeAnthropic, reply_text
from tests.runs.test_identify import ACME, ACME_LINE, ACME_UK, REPORT, UK_LINE, bot, named


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """A pseudo-terminal: what is written to its first end is typed at the second."""
    typing, reading = os.openpty()
    try:
        yield typing, reading
    finally:
        os.close(typing)
        os.close(reading)


async def research(
    services: Services, fd: int | None, tmp_path: Path
) -> tuple[ReportFile, str, str]:
    """A terminal run with its choice read from `fd`: its listener, what the console printed,
    and the run's id."""
    console = Console(file=io.StringIO(), width=200)
    view = StatusView(run_id="", topic="Acme Robotics", mode="company", requester="you")
    choice = TerminalChoice(services.runs, console, fd)
    listener = ReportFile(console, view, tmp_path / "report.md", choice)
    record = await services.runs.submit(Request(topic="Acme Robotics"), listener)
    await services.runs.wait(record.run_id)
    assert isinstance(console.file, io.StringIO)
    return listener, console.file.getvalue(), record.run_id


async def test_at_a_terminal_the_number_typed_chooses(
    settings: Settings, anthropic_api: FakeAnthropic, terminal: tuple[int, int], tmp_path: Path
) -> None:
    typing, reading = terminal
    os.write(typing, b"7\n2\n")  # typed ahead: a number off the list, then the second one
    anthropic_api.script(named(ACME, ACME_UK), reply_text(REPORT))
    async with bot(settings) as services:
        listener, printed, _ = await research(services, reading, tmp_path)

    assert f"  1. {ACME_LINE}\n  2. {UK_LINE}\n  0. None of these" in printed
    assert UNCLEAR in printed
    assert f"Researching {UK_LINE}.\n" in printed
    assert listener.outcome is not None and listener.outcome.ending is Ending.COMPLETED
    assert UK_LINE in (tmp_path / "report.md").read_text(encoding="utf-8")


async def test_zero_at_a_terminal_stops_to_ask_again(
    settings: Settings, anthropic_api: FakeAnthropic, terminal: tuple[int, int], tmp_path: Path
) -> None:
    typing, reading = terminal
    os.write(typing, b"0\n")
    anthropic_api.script(named(ACME, ACME_UK))
    async with bot(settings) as services:
        listener, printed, _ = await research(services, reading, tmp_path)

    assert listener.outcome is not None and listener.outcome.ending is Ending.CANCELLED
    assert "start again with a more specific name" in printed
    assert len(anthropic_api.requests) == 1


@pytest.mark.parametrize("piped", [True, False], ids=["stdin-a-pipe", "no-stdin"])
async def test_without_a_terminal_the_most_likely_is_taken_and_said(
    settings: Settings, anthropic_api: FakeAnthropic, tmp_path: Path, piped: bool
) -> None:
    pipe = os.pipe()
    anthropic_api.script(named(ACME, ACME_UK), reply_text(REPORT))
    try:
        async with bot(settings) as services:
            fd = pipe[0] if piped else None
            listener, printed, run_id = await research(services, fd, tmp_path)
            stored = await services.store.identity_of(run_id)
    finally:
        os.close(pipe[0])
        os.close(pipe[1])

    assert ALONE in printed
    assert "0. None of these" not in printed
    assert (
        f"Researching {ACME_LINE}: the name fits more than one company and nobody could be "
        "asked, so the most likely one was taken." in printed
    )
    assert stored is not None and stored.settled_by == "alone"
    assert listener.outcome is not None and listener.outcome.ending is Ending.COMPLETED
