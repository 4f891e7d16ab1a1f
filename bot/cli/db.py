"""`research-bot db`: copy a SQLite history into PostgreSQL (`db copy`), and say what a
database is (`db status`). Neither loads a model or a chat client."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import fail, load_settings, log_to_terminal, out
from bot.domain import RunStatus, strip_controls
from bot.errors import BotError, NotFoundError
from bot.store.copy import Copied, copy_history
from bot.store.status import DatabaseStatus, Replica, database_status, postgres_where

db_app = typer.Typer(
    no_args_is_help=True, help="The database: copy a SQLite history into PostgreSQL; its status."
)
INTERRUPTED = 130
"""Exit code after Ctrl-C, as shells report it."""


@db_app.command("copy")
def copy(
    source: Annotated[
        Path | None,
        typer.Option("--from", help="The SQLite file to copy (default: RESEARCH_BOT_DB)."),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="postgresql://user:password@host:5432/database (default: "
            "RESEARCH_BOT_DATABASE_URL, which keeps the password out of the process list).",
        ),
    ] = None,
) -> None:
    """Copy a SQLite history into PostgreSQL.

    Every run, event, report, report version, claim and dedupe key. Rows already there are
    skipped, so a copy cut short goes on where it stopped when run again."""
    log_to_terminal()
    try:
        settings = load_settings()
        url = target or (settings.database_url.get_secret_value() if settings.database_url else "")
        if not url.startswith(("postgresql://", "postgres://")):
            raise BotError(
                "db copy needs a PostgreSQL database: --to postgresql://user@host:5432/database, "
                "or RESEARCH_BOT_DATABASE_URL."
            )
        path = (source or settings.db_path).expanduser()
        out.print(f"Copying {path} into {postgres_where(url)}", markup=False, highlight=False)
        counts = asyncio.run(copy_history(path, url, on_table=_print_table))
    except KeyboardInterrupt:
        stopped = BotError("db copy stopped: what it copied is kept; run it again to finish.")
        raise fail(stopped, INTERRUPTED) from None
    except BotError as error:
        raise fail(error) from None
    copied = sum(c.copied for c in counts)
    already = sum(c.already for c in counts)
    out.print(f"Done: {copied:,} rows copied, {already:,} already there.", markup=False)


def _print_table(counted: Copied) -> None:
    out.print(
        f"  {counted.table:<16} {counted.copied:>9,} copied  {counted.already:>9,} already there",
        markup=False,
        highlight=False,
    )


@db_app.command("status")
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Which database, its schema version, its runs and its live replicas.

    Reads RESEARCH_BOT_DATABASE_URL, else RESEARCH_BOT_DB, and changes nothing."""
    try:
        settings = load_settings()
        found = asyncio.run(database_status(settings.database))
    except NotFoundError as error:
        raise fail(error, 1) from None
    except BotError as error:
        raise fail(error) from None
    if as_json:
        sys.stdout.write(json.dumps(found.model_dump(mode="json")) + "\n")
        return
    out.print(status_text(found, datetime.now(UTC)), markup=False, highlight=False)


def status_text(found: DatabaseStatus, now: datetime) -> str:
    engine = "PostgreSQL" if found.engine == "postgresql" else "SQLite"
    lines = [
        f"database  {engine} {found.where}",
        f"schema    {_schema(found)}",
        f"runs      {_runs(found.runs)}",
        f"replicas  {_replicas(found.replicas)}",
    ]
    lines += [f"  {_replica(r, now)}" for r in found.replicas or []]
    return strip_controls("\n".join(lines))


def _schema(found: DatabaseStatus) -> str:
    if found.version == found.latest:
        return f"version {found.version} (this release's)"
    if found.version == 0:
        return (
            f"none yet (this release: {found.latest}): start research-bot once, "
            "or run `research-bot db copy`, to create it"
        )
    if found.version > found.latest:
        return (
            f"version {found.version}, newer than this release's ({found.latest}): "
            "upgrade research-bot"
        )
    return (
        f"version {found.version} (this release: {found.latest}): "
        "start research-bot once to upgrade it"
    )


def _runs(counts: dict[str, int]) -> str:
    if not counts:
        return "none"
    order = [status.value for status in RunStatus]
    ranked = sorted(counts.items(), key=lambda item: [*order, item[0]].index(item[0]))
    return f"{sum(counts.values()):,}: " + ", ".join(f"{n:,} {name}" for name, n in ranked)


def _replicas(replicas: list[Replica] | None) -> str:
    if not replicas:
        return "no replica has registered"
    alive = sum(r.alive for r in replicas)
    return f"{alive} alive, {len(replicas) - alive} gone"


def _replica(replica: Replica, now: datetime) -> str:
    pid = f" (pid {replica.pid})" if replica.pid is not None else ""
    since = f"  up since {replica.started_at:%Y-%m-%d %H:%M} UTC" if replica.started_at else ""
    seen = ""
    if replica.seen_at is not None:
        seen = f"  seen {max(0, round((now - replica.seen_at).total_seconds())):,} s ago"
    state = "alive" if replica.alive else "gone "
    platforms = replica.platforms or "-"
    return f"{state}  {replica.host}{pid}  {platforms}{since}{seen}  {replica.replica_id}"
