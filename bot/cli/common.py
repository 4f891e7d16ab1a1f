"""What every subcommand shares: settings with the command line's values on top, one line
per problem on stderr (never a traceback), the two consoles, stored text made safe to print,
an --output checked before any spend, and a read-only store.

Only light modules load here: every command imports this one, and a read must start quickly."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console

from bot.config import Settings
from bot.domain import RunRecord, strip_controls
from bot.errors import BotError, ConfigError, RequestError, StoreError

if TYPE_CHECKING:
    from bot.agent.mcp.config import ServerConfig
    from bot.store.runs import Store

TRY_LATER = 75
"""Exit code of a run refused by the daily budget: sysexits' EX_TEMPFAIL, "try again later"."""

out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)


def load_settings(flags: Mapping[str, tuple[str, Any]] | None = None) -> Settings:
    """Settings from the environment and .env, command-line values on top, all validated the
    same way; an invalid one is a short message and exit 2. `flags` maps a setting to the
    option the person typed and its value (None: not given), so a refusal names the option."""
    given = {name: value for name, (_, value) in (flags or {}).items() if value is not None}
    try:
        return Settings(**given)
    except ValidationError as error:
        raise ConfigError(_problems(error, flags or {}, given)) from None
    except SettingsError as error:
        raise ConfigError(f"Invalid setting: {error}") from None


def mcp_configs(settings: Settings) -> list[ServerConfig]:
    """The MCP servers RESEARCH_BOT_MCP_CONFIG names (none without it). A command that may use
    them reads the file at start, so a bad one stops it there with its one line (ConfigError)."""
    if settings.mcp_config is None:
        return []
    from bot.agent.mcp.config import load_mcp_config

    return load_mcp_config(settings.mcp_config)


def _problems(
    error: ValidationError, flags: Mapping[str, tuple[str, Any]], given: Mapping[str, Any]
) -> str:
    options: list[str] = []
    variables: list[str] = []
    for problem in error.errors():
        where = ".".join(map(str, problem["loc"]))
        # A custom validator's message comes as "Value error, …": the person needs only the rest.
        message = problem["msg"].removeprefix("Value error, ")
        if where in given:
            option = flags[where][0]
            options.append(f"{option} {given[where]}: {message}")
        else:
            variables.append(f"{where}: {message}")
    parts = ([f"Invalid value for {'; '.join(options)}"] if options else []) + (
        [f"Invalid setting: {'; '.join(variables)}"] if variables else []
    )
    return ". ".join(parts)


def fail(error: BotError, code: int = 2) -> typer.Exit:
    # A message may quote stored or model text (a run's error): printed as text, never as escapes.
    err.print(f"research-bot: {strip_controls(str(error))}", markup=False, highlight=False)
    return typer.Exit(code)


def write_stored(text: str) -> None:
    """Stored text (a report, an answer: model and web output) on stdout, exactly as stored
    but for terminal escapes and other control characters, which never reach the terminal."""
    safe = strip_controls(text)
    sys.stdout.write(safe if safe.endswith("\n") else safe + "\n")


class _NoTraceback(logging.Formatter):
    """Terminal users read one line per problem; the run id in it finds the rest."""

    def format(self, record: logging.LogRecord) -> str:
        return f"research-bot: {strip_controls(record.getMessage())}"


def log_to_terminal() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_NoTraceback())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


def run_id_of(value: str) -> str:
    """A RUN_ID argument as people paste it; an empty one is refused here, where the message
    can say where ids come from."""
    if not strip_controls(value).strip():
        raise typer.BadParameter("give a run id: `research-bot history` lists them.")
    return value


def check_output(path: Path | None) -> None:
    """Refuse an --output that cannot be written, before the run spends anything."""
    if path is None:
        return
    if path.is_dir():
        raise RequestError(f"--output {path} is a folder: give a file name in it.")
    folder = path.resolve().parent
    if not folder.is_dir():
        raise RequestError(f"--output: the folder {folder} does not exist.")
    if not os.access(folder, os.W_OK):
        raise RequestError(f"--output: cannot write in {folder}.")


async def known_run(
    settings: Settings, run_id: str, *, platform: str | None = None, workspace: str | None = None
) -> RunRecord | None:
    """The run `run_id` names, read before any model client loads, so an unknown id is refused
    at once (NotFoundError); None when a read-only look cannot tell (a database another version
    wrote: the writer that follows migrates it, or says what is wrong)."""
    try:
        async with reader(settings) as store:
            return await store.get_run(run_id, platform=platform, workspace=workspace)
    except StoreError:
        return None


def reader(settings: Settings) -> AbstractAsyncContextManager[Store]:
    """History and show only read: no write lock, nothing written, whoever else is writing."""
    from bot.store.runs import Store

    return Store.connect(
        settings.database, readonly=True, busy_timeout_s=settings.db_busy_timeout_s
    )
