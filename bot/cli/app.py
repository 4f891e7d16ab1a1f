"""The `research-bot` command: each subcommand family is a module of this package; this one
names them. Those modules import only what their command line needs: the model and web
clients load inside the commands that use them, once the input is checked, so a read (and a
refusal) is quick."""

from __future__ import annotations

import gc
import inspect
from collections.abc import Callable
from typing import Any

import typer

from bot.cli import ask, db, history, reports, research, search, serve, watch
from bot.cli.mcp import mcp_app
from bot.memory import tune_malloc


def _add(group: typer.Typer, command: Callable[..., Any], name: str | None = None) -> None:
    """A command whose help is its docstring, each paragraph on one line: the docstring is
    wrapped for the source, and rich would keep those line ends, breaking sentences in two."""
    paragraphs = inspect.cleandoc(command.__doc__ or "").split("\n\n")
    group.command(name, help="\n\n".join(" ".join(p.split()) for p in paragraphs))(command)


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Autonomous company research with Claude, from a terminal, Slack or Discord.",
)
_add(app, research.research)
_add(app, research.resume)
_add(app, ask.ask)
_add(app, history.history)
_add(app, history.usage)
_add(app, search.search)
_add(app, reports.show)
_add(app, reports.export_report, "export")
_add(app, reports.evaluate, "eval")
_add(app, serve.serve)
discord_app = typer.Typer(no_args_is_help=True, help="Discord set-up.")
_add(discord_app, serve.discord_sync, "sync")
app.add_typer(discord_app, name="discord")
app.add_typer(db.db_app, name="db")
app.add_typer(mcp_app, name="mcp")
watch_app = typer.Typer(no_args_is_help=True, help="Research that comes back on its own.")
for command in (watch.add, watch.list_watches, watch.remove, watch.pause, watch.resume, watch.run):
    _add(watch_app, command, command.__name__.removesuffix("_watches"))
app.add_typer(watch_app, name="watch")


def main() -> None:
    tune_malloc()
    try:
        app()
    finally:
        # The command has said what it had to, and its heap goes back to the system whole.
        # Frozen, the interpreter's last collections do not walk its 90,000 objects again: a
        # fifth of a read's CPU (`export`: 0.18 of 0.85 s), seconds on a busy machine.
        gc.freeze()
