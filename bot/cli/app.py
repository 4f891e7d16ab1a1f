"""The `research-bot` command: research, resume, ask, history, usage, show, export, serve,
discord sync."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console

from bot.agent.events import format_cost
from bot.agent.language import language_for, stated
from bot.agent.trajectory import trajectory
from bot.cli import ask as cli_ask
from bot.cli import research as terminal_runs
from bot.cli.research import check_output
from bot.config import Settings
from bot.domain import Depth, Mode, Origin, Request, RunRecord, RunStatus, strip_controls
from bot.errors import BotError, ConfigError, NotFoundError
from bot.export import Exported, Format, export
from bot.memory import limit_malloc_arenas
from bot.runs.owner import owner_gone
from bot.runs.quota import QuotaError
from bot.store.runs import Store
from bot.store.usage import WorkspaceUsage, by_workspace, period_start, usage_lines

if TYPE_CHECKING:
    from bot.agent.report.model import Report
    from bot.cli import evaluation
    from bot.compose import Services

T = TypeVar("T")
TRY_LATER = 75
"""Exit code of a run refused by the daily budget: sysexits' EX_TEMPFAIL, "try again later"."""

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Autonomous company research with Claude, from a terminal, Slack or Discord.",
)
discord_app = typer.Typer(no_args_is_help=True, help="Discord set-up.")
app.add_typer(discord_app, name="discord")
out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment and .env, command-line values on top, all validated the
    same way; an invalid one is a short message and exit 2."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"Invalid setting: {problems}") from None
    except SettingsError as error:
        raise ConfigError(f"Invalid setting: {error}") from None


def fail(error: BotError, code: int = 2) -> typer.Exit:
    err.print(f"research-bot: {error}", markup=False, highlight=False)
    return typer.Exit(code)


class _NoTraceback(logging.Formatter):
    """Terminal users read one line per problem; the run id in it finds the rest."""

    def format(self, record: logging.LogRecord) -> str:
        return f"research-bot: {record.getMessage()}"


def _log_to_terminal() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_NoTraceback())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


@app.command()
def research(
    topic: Annotated[str, typer.Argument(help="A company name, or filters for --mode contracts.")],
    mode: Annotated[Mode, typer.Option(help="What kind of research.")] = Mode.COMPANY,
    depth: Annotated[
        Depth,
        typer.Option(
            help="quick: one researcher; deep: a plan, several researchers in parallel, one "
            "report (slower)."
        ),
    ] = Depth.QUICK,
    max_turns: Annotated[
        int | None,
        typer.Option(help="Model turns with tools (1-100); with --depth deep, per researcher."),
    ] = None,
    deadline: Annotated[
        float | None, typer.Option(help="Seconds of research; with --depth deep, the whole run.")
    ] = None,
    output: Annotated[Path | None, typer.Option(help="Where to write the Markdown report.")] = None,
    language: Annotated[
        str | None,
        typer.Option(
            help="The report's language (de, fr, ja, de-DE …); default: the topic's, else English."
        ),
    ] = None,
) -> None:
    """Research a company (or public contracts) and write a Markdown report."""
    _log_to_terminal()
    try:
        settings = load_settings(**_limits(depth, max_turns, deadline))
        request = Request(
            topic=topic,
            mode=mode,
            origin=Origin(platform="terminal"),
            depth=depth,
            language=language_for(stated(language), topic),
        )
        check_output(output)
        finish = asyncio.run(_with_services(settings, terminal_runs.research, request, output))
    except QuotaError as error:
        raise fail(error, TRY_LATER) from None
    except BotError as error:
        raise fail(error) from None
    _conclude(finish)


def _limits(depth: Depth, max_turns: int | None, deadline: float | None) -> dict[str, Any]:
    """--max-turns and --deadline set the limits of the depth asked for."""
    if depth is Depth.DEEP:
        return {"deep_max_turns": max_turns, "deep_deadline_s": deadline}
    return {"max_turns": max_turns, "deadline_s": deadline}


@app.command()
def resume(
    run_id: str,
    output: Annotated[Path | None, typer.Option(help="Where to write the Markdown report.")] = None,
) -> None:
    """Finish an interrupted terminal run from what it had found, and write its report (a
    follow-up question is asked again, and its answer printed)."""
    _log_to_terminal()
    try:
        settings = load_settings()
        check_output(output)
        finish = asyncio.run(_resume(settings, run_id, output))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None
    if isinstance(finish, cli_ask.Asked):
        _print_answer(finish, as_json=False)
        return
    _conclude(finish)


async def _resume(
    settings: Settings, run_id: str, output: Path | None
) -> terminal_runs.Finish | cli_ask.Asked:
    from bot.compose import open_services

    async with open_services(settings) as services:
        record = await services.store.get_run(run_id)
        if record.parent_run_id is not None:
            return await cli_ask.resume(services, err, record, output)
        return await terminal_runs.resume(services, err, run_id, output)


async def _with_services(
    settings: Settings,
    action: Callable[[Services, Console, T, Path | None], Awaitable[terminal_runs.Finish]],
    subject: T,
    output: Path | None,
) -> terminal_runs.Finish:
    from bot.compose import open_services  # the model and web clients load only to research

    async with open_services(settings) as services:
        return await action(services, err, subject, output)


def _conclude(finish: terminal_runs.Finish) -> None:
    """The path on stdout, or one line on what happened and how to get the report."""
    listener, run_id = finish.listener, finish.run_id
    if finish.stopped_by is not None:
        err.print(
            f"Stopped ({finish.stopped_by.name}). Run {run_id} is kept: finish it with "
            f"`research-bot resume {run_id}`.",
            markup=False,
        )
        raise typer.Exit(128 + finish.stopped_by.value)
    if listener.write_error is not None:
        err.print(
            f"research-bot: could not write the report ({listener.write_error.strerror}). It is "
            f"kept: `research-bot show {run_id}` prints it, `research-bot resume {run_id}` "
            "writes it again.",
            markup=False,
        )
        raise typer.Exit(1)
    if listener.path is None:
        raise typer.Exit(1)
    out.print(str(listener.path), markup=False, highlight=False)


@app.command()
def ask(
    run_id: str,
    question: Annotated[str, typer.Argument(help="A question about the run's report.")],
    output: Annotated[
        Path | None, typer.Option(help="Where to write a new report version, if one is made.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Ask a follow-up question about a finished run: answered from its evidence, researched
    a little further when needed; "update the report" writes its next version."""
    _log_to_terminal()
    try:
        settings = load_settings()
        check_output(output)
        asked = asyncio.run(_ask(settings, run_id, question, output))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except QuotaError as error:
        raise fail(error, TRY_LATER) from None
    except BotError as error:
        raise fail(error) from None
    _print_answer(asked, as_json=as_json)


def _print_answer(asked: cli_ask.Asked, *, as_json: bool) -> None:
    """A follow-up's answer on stdout (a new report version's file on stderr); exit 1 without
    an answer, saying why."""
    if as_json:
        sys.stdout.write(asked.model_dump_json() + "\n")
    elif asked.answer is not None:
        sys.stdout.write(asked.answer)
    if asked.report_file and not as_json:
        err.print(f"Report version {asked.version}: {asked.report_file}", markup=False)
    if asked.answer is None:
        if not as_json:
            err.print(f"research-bot: {asked.error or asked.ending}", markup=False)
        raise typer.Exit(1)


async def _ask(
    settings: Settings, run_id: str, question: str, output: Path | None
) -> cli_ask.Asked:
    from bot.compose import open_services

    async with open_services(settings) as services:
        return await cli_ask.ask(services, err, run_id, question, output)


@app.command()
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
    async with _reader(settings) as store:
        runs = await store.list_runs(limit=limit, top_level=True)
        children = await store.follow_ups_of([run.run_id for run in runs])
        return cli_ask.history_rows(runs, children), store.now()


@app.command()
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
    async with _reader(settings) as store:
        since = period_start(store.now(), days)
        return by_workspace(await store.usage(since=since), since=since.date(), days=days)


def _reader(settings: Settings) -> AbstractAsyncContextManager[Store]:
    """History and show only read: no write lock, nothing written, whoever else is writing."""
    return Store.connect(settings.db_path, readonly=True, busy_timeout_s=settings.db_busy_timeout_s)


@app.command()
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

    async with _reader(settings) as store:
        record = await store.get_run(run_id)
        if steps:
            children = [
                (child, trajectory(child.run_id, await store.events(child.run_id)))
                for child in await store.follow_ups(record.run_id)
            ]
            shape = trajectory(record.run_id, await store.events(record.run_id))
            return json.dumps(cli_ask.with_follow_ups(shape, children), indent=2, default=str)
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


@app.command("export")
def export_report(
    run_id: str,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="The file's format.")],
    output: Annotated[
        Path | None, typer.Option(help="Where to write it (default: the current folder).")
    ] = None,
) -> None:
    """Write a past run's report as Markdown, HTML, PDF or Word, from what is stored (no model
    call)."""
    _log_to_terminal()
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
    async with _reader(settings) as store:
        record = await store.get_run(run_id)
        report, _ = await _saved_report(store, record)
    return await export(record, report, fmt, font_dir=settings.export_fonts)


@app.command("eval")
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

    async with _reader(settings) as store:
        if run_id is None:
            return await evaluation.evaluate_history(store)
        return await evaluation.evaluate_run(store, run_id)


@app.command()
def serve(
    platform: Annotated[
        str, typer.Argument(help="slack, discord, or all whose tokens are set.")
    ] = "all",
    port: Annotated[int, typer.Option(help="HTTP port for Slack without Socket Mode.")] = 3000,
) -> None:
    """Run the chat bot(s) until stopped (SIGTERM or Ctrl-C)."""
    from bot.cli.serve import serve as run_serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(run_serve(load_settings(), platform, port=port))
    except BotError as error:
        raise fail(error) from None


@discord_app.command("sync")
def discord_sync(
    guild: Annotated[int | None, typer.Option(help="Only this guild (instant).")] = None,
) -> None:
    """Register the /research slash command with Discord (on deploy, not at every start)."""
    from bot.adapters.discord.app import sync_commands

    try:
        asyncio.run(sync_commands(load_settings(), guild))
    except BotError as error:
        raise fail(error) from None


def main() -> None:
    limit_malloc_arenas()
    app()
