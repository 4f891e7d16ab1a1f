"""What every subcommand shares: settings with the command line's values on top, one line
per problem on stderr (never a traceback), the two consoles, and a read-only store."""

from __future__ import annotations

import logging
import sys
from contextlib import AbstractAsyncContextManager
from typing import Any

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console

from bot.config import Settings
from bot.errors import BotError, ConfigError
from bot.store.runs import Store

TRY_LATER = 75
"""Exit code of a run refused by the daily budget: sysexits' EX_TEMPFAIL, "try again later"."""

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


def log_to_terminal() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_NoTraceback())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


def reader(settings: Settings) -> AbstractAsyncContextManager[Store]:
    """History and show only read: no write lock, nothing written, whoever else is writing."""
    return Store.connect(
        settings.database, readonly=True, busy_timeout_s=settings.db_busy_timeout_s
    )
