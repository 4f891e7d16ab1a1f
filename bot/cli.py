"""The `research-bot` command: research, history, show, serve, discord sync."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from bot.adapters.base import StatusView
from bot.adapters.terminal import TerminalProgress, install_interrupts
from bot.agent.trajectory import trajectory
from bot.config import Settings
from bot.domain import Mode, Origin, Request
from bot.errors import BotError, ConfigError, NotFoundError, RequestError
from bot.store import Store

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
    """Settings from the environment and .env; an invalid one is a short message and exit 2."""
    try:
        settings = Settings()
        return settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"Invalid setting: {problems}") from None


def fail(error: BotError, code: int = 2) -> typer.Exit:
    err.print(f"research-bot: {error}", markup=False, highlight=False)
    return typer.Exit(code)


@app.command()
def research(
    topic: Annotated[str, typer.Argument(help="A company name, or filters for --mode contracts.")],
    mode: Annotated[Mode, typer.Option(help="What kind of research.")] = Mode.COMPANY,
    max_turns: Annotated[int | None, typer.Option(min=1, max=100)] = None,
    deadline: Annotated[float | None, typer.Option(min=1, help="Seconds of research.")] = None,
    output: Annotated[Path | None, typer.Option(help="Where to write the Markdown report.")] = None,
) -> None:
    """Research a company (or public contracts) and write a Markdown report."""
    try:
        settings = load_settings(max_turns=max_turns, deadline_s=deadline)
        request = Request(topic=topic, mode=mode, origin=Origin(platform="terminal"))
        path = asyncio.run(_research(settings, request, output))
    except (ConfigError, RequestError) as error:
        raise fail(error) from None
    if path is None:
        raise typer.Exit(1)
    out.print(str(path), markup=False, highlight=False)


async def _research(settings: Settings, request: Request, output: Path | None) -> Path | None:
    from bot.compose import open_services  # the model and web clients load only to research

    async with open_services(settings) as services:
        view = StatusView(run_id="", topic=request.topic, mode=request.mode.value, requester="you")
        progress = TerminalProgress(err, view)
        try:
            record = await services.runs.submit(request, progress)
            install_interrupts(services.runs, record.run_id, err)
            err.print(f"Run {record.run_id}: researching {request.topic!r}", markup=False)
            await services.runs.wait(record.run_id)
        finally:
            progress.close()
    outcome = progress.outcome
    if outcome is None or outcome.markdown is None or outcome.filename is None:
        return None
    path = output or Path.cwd() / outcome.filename
    path.write_text(outcome.markdown, encoding="utf-8")
    return path


@app.command()
def history(
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Past runs, newest first."""
    try:
        settings = load_settings()
    except ConfigError as error:
        raise fail(error) from None
    runs = asyncio.run(_history(settings, limit))
    if as_json:
        rows = [r.model_dump(mode="json") | {"run_id": r.run_id} for r in runs]
        out.print_json(json.dumps(rows))
        return
    if not runs:
        out.print('No runs yet. Try: research-bot research "Acme Robotics"', markup=False)
    for r in runs:
        out.print(
            f"{r.run_id}  {r.created_at:%Y-%m-%d %H:%M}  {r.mode.value:<9} "
            f"{r.status.value:<11} {r.termination_reason or '':<26} {r.turns:>3} turns  "
            f"${r.cost_usd:.2f}  {r.topic}",
            markup=False,
            highlight=False,
        )


async def _history(settings: Settings, limit: int) -> list[Any]:
    async with Store.connect(settings.db_path) as store:
        return await store.list_runs(limit=limit)


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
    except (ConfigError, NotFoundError) as error:
        raise fail(error, 2 if isinstance(error, ConfigError) else 1) from None
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


async def _show(settings: Settings, run_id: str, steps: bool, as_json: bool) -> str:
    async with Store.connect(settings.db_path) as store:
        record = await store.get_run(run_id)
        if steps:
            return json.dumps(
                trajectory(record.run_id, await store.events(record.run_id)), indent=2, default=str
            )
        saved = await store.report(record.run_id)
        if saved is None:
            raise NotFoundError(f"Run {record.run_id} has no report ({record.status.value}).")
        report, markdown = saved
        if as_json:
            return json.dumps(
                {
                    "run": record.model_dump(mode="json"),
                    "report": report.model_dump(mode="json"),
                    "markdown": markdown,
                },
                indent=2,
            )
        return markdown


@app.command()
def serve(
    platform: Annotated[
        str, typer.Argument(help="slack, discord, or all whose tokens are set.")
    ] = "all",
    port: Annotated[int, typer.Option(help="HTTP port for Slack without Socket Mode.")] = 3000,
) -> None:
    """Run the chat bot(s) until stopped (SIGTERM or Ctrl-C)."""
    from bot.serve import serve as run_serve

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
    from bot.adapters.discord_app import sync_commands

    try:
        asyncio.run(sync_commands(load_settings(), guild))
    except BotError as error:
        raise fail(error) from None


def main() -> None:
    app()
