"""`research-bot history` and `usage`: what was researched, and what it cost. Each opens the
store read-only and loads no model or web client."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime
from typing import Annotated

import typer

from bot.adapters.chat.calls import counted
from bot.agent.report.model import format_cost
from bot.cli.common import fail, load_settings, out, reader
from bot.config import Settings
from bot.domain import RunRecord, RunStatus, strip_controls
from bot.errors import BotError
from bot.store.usage import WorkspaceUsage, by_workspace, period_start, usage_lines


def history(
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many runs to list.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Past runs, newest first, each followed by its follow-up questions."""
    try:
        settings = load_settings()
        runs, watches, now = asyncio.run(_history(settings, limit))
    except BotError as error:
        raise fail(error) from None
    if as_json:  # follow-ups follow their run, with `parent_run_id` set
        rows = [
            r.model_dump(mode="json")
            | {"run_id": r.run_id, "status": shown_status(r, now)}
            | {"watch_id": watches.get(r.run_id)}
            for r in runs
        ]
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    if not runs:
        out.print('No runs yet. Try: research-bot research "Acme Robotics"', markup=False)
    for run in runs:
        out.print(history_line(run, now), markup=False, highlight=False)


def history_line(run: RunRecord, now: datetime) -> str:
    """One run as a row, every column where the other rows have it (the id first, to copy);
    a follow-up comes right under its run, marked as one."""
    if run.parent_run_id is None:
        kind = f"{run.mode.value:<9} {run.depth.value:<5}"
    else:
        kind = "└ follow-up"
    return (
        f"{run.run_id}  {run.created_at:%Y-%m-%d %H:%M}  {kind:<15} {shown_status(run, now):<11} "
        f"{run.termination_reason or '':<26} {counted(run.turns, 'turn'):>9}  "
        f"{format_cost(run.cost_usd):>12}  {strip_controls(run.topic)}"
        f"{f'  (watch {run.watch_id})' if run.watch_id else ''}"
    )


def shown_status(run: RunRecord, now: datetime) -> str:
    """A run whose process is gone is interrupted, whatever its row still says."""
    from bot.runs.owner import owner_gone  # the runs package loads the runs service

    unfinished = run.status in (RunStatus.QUEUED, RunStatus.RUNNING)
    if unfinished and owner_gone(run.owner, run.lease_until, now=now, me=None):
        return RunStatus.INTERRUPTED.value
    return run.status.value


def history_rows(runs: list[RunRecord], children: dict[str, list[RunRecord]]) -> list[RunRecord]:
    """Each run, then its follow-ups (oldest first): the order history shows them in."""
    return [row for run in runs for row in (run, *children.get(run.run_id, []))]


async def _history(
    settings: Settings, limit: int
) -> tuple[list[RunRecord], dict[str, str], datetime]:
    """The runs, the watch each watched one was made for, and now."""
    async with reader(settings) as store:
        runs = await store.list_runs(limit=limit, top_level=True)
        children = await store.follow_ups_of([run.run_id for run in runs])
        watches = await store.watch_ids_of([run.run_id for run in runs])
        return history_rows(runs, children), watches, store.now()


def usage(
    days: Annotated[int, typer.Option(min=1, max=366, help="Days back, today included.")] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Spend and runs per UTC day and per person, for each workspace (the terminal is one)."""
    try:
        settings = load_settings()
        spent = asyncio.run(_usage(settings, days))
    except BotError as error:
        raise fail(error) from None
    if as_json:
        sys.stdout.write(json.dumps([u.model_dump(mode="json") for u in spent]) + "\n")
        return
    if not spent:
        out.print(usage_lines(None, days=days)[0], markup=False)
    for one in spent:
        place = one.platform + (f" {one.workspace}" if one.workspace else "")
        lines = [f"{place}:", *(f"  {line}" for line in usage_lines(one, days=days))]
        out.print(strip_controls("\n".join(lines)), markup=False, highlight=False)


async def _usage(settings: Settings, days: int) -> list[WorkspaceUsage]:
    async with reader(settings) as store:
        since = period_start(store.now(), days)
        return by_workspace(await store.usage(since=since), since=since.date(), days=days)
