"""`research-bot show`, `export` and `eval`: a stored run's report, its trajectory, the report
as a file, and how far its claims are backed. Each opens the store read-only and loads no
model or web client (`eval` of a run stored before claims were measured loads the checker)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bot.agent.trajectory import trajectory
from bot.cli.common import (
    check_output,
    err,
    fail,
    load_settings,
    log_to_terminal,
    out,
    reader,
    run_id_of,
    write_stored,
)
from bot.config import Settings
from bot.domain import RunRecord, strip_controls
from bot.errors import BotError, NotFoundError
from bot.export import Exported, Format, export

if TYPE_CHECKING:
    from bot.agent.report.model import Report
    from bot.cli import evaluation
    from bot.store.runs import Store

RunId = Annotated[str, typer.Argument(callback=run_id_of, help="The run's id (see history).")]


def show(
    run_id: RunId,
    show_trajectory: Annotated[
        bool, typer.Option("--trajectory", help="The steps, not the report.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="The run, its report and figures as JSON.")
    ] = False,
) -> None:
    """A past run's report, or its trajectory."""
    try:
        settings = load_settings()
        text = asyncio.run(_show(settings, run_id, show_trajectory, as_json))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None
    if show_trajectory or as_json:
        sys.stdout.write(text + "\n")  # JSON escapes every control character itself
    else:
        write_stored(text)


async def _show(settings: Settings, run_id: str, steps: bool, as_json: bool) -> str:
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
        if not as_json:
            return markdown
        from bot.cli.evaluation import support_figures

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


def with_follow_ups(
    shape: dict[str, Any], follow_ups: list[tuple[RunRecord, dict[str, Any]]]
) -> dict[str, Any]:
    """A run's trajectory with its follow-ups' trajectories under it."""
    if follow_ups:
        shape["follow_ups"] = [
            {"question": child.topic, "parent_run_id": child.parent_run_id, **steps}
            for child, steps in follow_ups
        ]
    return shape


async def _saved_report(store: Store, record: RunRecord) -> tuple[Report, str]:
    saved = await store.report(record.run_id)
    if saved is None:
        raise NotFoundError(f"Run {record.run_id} has no report ({record.status.value}).")
    return saved


def export_report(
    run_id: RunId,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="The file's format.")],
    output: Annotated[
        Path | None,
        typer.Option(help="Where to write it (default: the current folder, never over a file)."),
    ] = None,
) -> None:
    """Write a past run's report as Markdown, HTML, PDF or Word, from what is stored.

    No model is called. Without --output the file goes in the current folder under the
    report's name; if that name is taken, a number is added, as a browser's download does.
    """
    log_to_terminal()
    try:
        settings = load_settings()
        check_output(output)
        exported = asyncio.run(_export(settings, run_id, fmt))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None
    try:
        path = _write(output, exported)
    except OSError as error:
        where = error.filename or output or exported.filename
        raise fail(BotError(f"could not write {where} ({error.strerror})."), 1) from None
    out.print(strip_controls(str(path)), markup=False, highlight=False)


def _write(output: Path | None, exported: Exported) -> Path:
    """The file written: --output as asked (saying so when it replaced a file), else a new
    file in the current folder, numbered when the report's own name is taken."""
    if output is not None:
        replaced = output.exists()
        output.write_bytes(exported.data)
        if replaced:
            err.print(f"Replaced {strip_controls(str(output))}.", markup=False, highlight=False)
        return output
    name = Path(exported.filename)
    taken = 0
    while True:
        path = Path.cwd() / (f"{name.stem} ({taken}){name.suffix}" if taken else name.name)
        try:
            with path.open("xb") as file:  # created here or not at all: nothing is overwritten
                file.write(exported.data)
        except FileExistsError:
            taken += 1
            continue
        if taken:
            err.print(f"{name.name} exists: wrote {path.name}.", markup=False, highlight=False)
        return path


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

    if (run_id is None) == (not every) or (run_id is not None and not run_id.strip()):
        raise fail(
            BotError("give a RUN_ID or --all (not both): `research-bot history` lists the runs")
        )
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
        write_stored(evaluation.render_run(result))
    else:
        write_stored(evaluation.render_history(result))


async def _evaluate(
    settings: Settings, run_id: str | None
) -> evaluation.RunEval | evaluation.HistoryEval:
    from bot.cli import evaluation

    async with reader(settings) as store:
        if run_id is None:
            return await evaluation.evaluate_history(store)
        return await evaluation.evaluate_run(store, run_id)
