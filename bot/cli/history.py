"""The commands that read the history: `history`, `usage`, `show`, `export` and `eval`. Each
opens the store read-only and loads no model or web client."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.agent.report.model import format_cost
from bot.agent.trajectory import trajectory
from bot.cli.ask import history_rows, with_follow_ups
from bot.cli.common import fail, load_settings, log_to_terminal, out, reader
from bot.cli.terminal_run import check_output
from bot.config import Settings
from bot.domain import RunRecord, RunStatus, strip_controls
from bot.errors import BotError, NotFoundError
from bot.export import Exported, Format, export
from bot.runs.owner import owner_gone
from bot.store.runs import Store
from bot.store.usage import WorkspaceUsage, by_workspace, period_start, usage_lines

if TYPE_CHECKING:
    from bot.agent.report.model import Report
    from bot.cli import evaluation


def history(
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Past runs, newest first."""
    try:
        settings = load_settings()
        runs, now = asyncio.run(_history(settings, limit))
    except BotError as error:
        raise fail(error) from None
    if as_json:  # follow-ups follow their run, with `parent_run_id` set
        rows = [
            r.model_dump(mode="json") | {"run_id": r.run_id, "status": shown_status(r, now)}
            for r in runs
        ]
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    if not runs:
        out.print('No runs yet. Try: research-bot research "Acme Robotics"', markup=False)
    for r in runs:
        if r.parent_run_id is not None:  # a follow-up, under its run
            out.print(
                f"  └ {r.run_id}  {r.created_at:%Y-%m-%d %H:%M}  follow-up  "
                f"{shown_status(r, now):<11} {r.termination_reason or '':<26} {r.turns:>3} turns  "
                f"{format_cost(r.cost_usd)}  {strip_controls(r.topic)}",
                markup=False,
                highlight=False,
            )
            continue
        out.print(
            f"{r.run_id}  {r.created_at:%Y-%m-%d %H:%M}  {r.mode.value:<9} {r.depth.value:<5} "
            f"{shown_status(r, now):<11} {r.termination_reason or '':<26} {r.turns:>3} turns  "
            f"{format_cost(r.cost_usd)}  {strip_controls(r.topic)}",
            markup=False,
            highlight=False,
        )


def shown_status(run: RunRecord, now: datetime) -> str:
    """A run whose process is gone is interrupted, whatever its row still says."""
    unfinished = run.status in (RunStatus.QUEUED, RunStatus.RUNNING)
    if unfinished and owner_gone(run.owner, run.lease_until, now=now, me=None):
        return RunStatus.INTERRUPTED.value
    return run.status.value


async def _history(settings: Settings, limit: int) -> tuple[list[RunRecord], datetime]:
    async with reader(settings) as store:
        runs = await store.list_runs(limit=limit, top_level=True)
        children = await store.follow_ups_of([run.run_id for run in runs])
        return history_rows(runs, children), store.now()


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


def show(
    run_id: str,
    show_trajectory: Annotated[
        bool, typer.Option("--trajectory", help="The steps, not the report.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A past run's report, or its trajectory."""
    try:
        settings = load_settings()
        text = asyncio.run(_show(settings, run_id, show_trajectory, as_json))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


async def _show(settings: Settings, run_id: str, steps: bool, as_json: bool) -> str:
    from bot.cli.evaluation import support_figures  # it loads the model client's modules

    async with reader(settings) as store:
        record = await store.get_run(run_id)
        if steps:
            children = [
                (child, trajectory(child.run_id, await store.events(child.run_id)))
                for child in await store.follow_ups(record.run_id)
            ]
            shape = trajectory(record.run_id, await store.events(record.run_id))
            return json.dumps(with_follow_ups(shape, children), indent=2, default=str)
        report, markdown = await _saved_report(store, record)
        if as_json:
            return json.dumps(
                {
                    "run": record.model_dump(mode="json"),
                    "report": report.model_dump(mode="json"),
                    "markdown": markdown,
                    "version": (await store.latest_report(record.run_id) or (1,))[0],
                    "claim_support": support_figures(report),
                },
                indent=2,
            )
        return markdown


async def _saved_report(store: Store, record: RunRecord) -> tuple[Report, str]:
    saved = await store.report(record.run_id)
    if saved is None:
        raise NotFoundError(f"Run {record.run_id} has no report ({record.status.value}).")
    return saved


def export_report(
    run_id: str,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="The file's format.")],
    output: Annotated[
        Path | None, typer.Option(help="Where to write it (default: the current folder).")
    ] = None,
) -> None:
    """Write a past run's report as Markdown, HTML, PDF or Word, from what is stored (no model
    call)."""
    log_to_terminal()
    try:
        settings = load_settings()
        check_output(output)
        exported = asyncio.run(_export(settings, run_id, fmt))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None
    path = output or Path.cwd() / exported.filename
    try:
        path.write_bytes(exported.data)
    except OSError as error:
        raise fail(BotError(f"could not write {path} ({error.strerror})."), 1) from None
    out.print(str(path), markup=False, highlight=False)


async def _export(settings: Settings, run_id: str, fmt: Format) -> Exported:
    async with reader(settings) as store:
        record = await store.get_run(run_id)
        report, _ = await _saved_report(store, record)
    return await export(record, report, fmt, font_dir=settings.export_fonts)


def evaluate(
    run_id: Annotated[str | None, typer.Argument(help="The run to measure.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Summarise every stored run.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """How far a run's cited claims are backed by their sources, or the figures of all runs."""
    from bot.cli import evaluation

    if (run_id is None) == (not every):
        raise fail(BotError("give a RUN_ID or --all (not both)"))
    try:
        settings = load_settings()
        result = asyncio.run(_evaluate(settings, run_id))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None
    if as_json:
        sys.stdout.write(json.dumps(result.model_dump(mode="json"), indent=2) + "\n")
    elif isinstance(result, evaluation.RunEval):
        out.print(evaluation.render_run(result), markup=False, highlight=False)
    else:
        out.print(evaluation.render_history(result), markup=False, highlight=False)


async def _evaluate(
    settings: Settings, run_id: str | None
) -> evaluation.RunEval | evaluation.HistoryEval:
    from bot.cli import evaluation

    async with reader(settings) as store:
        if run_id is None:
            return await evaluation.evaluate_history(store)
        return await evaluation.evaluate_run(store, run_id)
