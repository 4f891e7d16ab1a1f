"""The `research-bot` command: each subcommand family is a module of this package; this one
names them. Heavy clients load inside the commands that need them, so a read is quick."""

from __future__ import annotations

import typer

from bot.cli import ask, db, history, research, serve
from bot.memory import limit_malloc_arenas

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Autonomous company research with Claude, from a terminal, Slack or Discord.",
)
app.command()(research.research)
app.command()(research.resume)
app.command()(ask.ask)
app.command()(history.history)
app.command()(history.usage)
app.command()(history.show)
app.command("export")(history.export_report)
app.command("eval")(history.evaluate)
app.command()(serve.serve)
discord_app = typer.Typer(no_args_is_help=True, help="Discord set-up.")
discord_app.command("sync")(serve.discord_sync)
app.add_typer(discord_app, name="discord")
app.add_typer(db.db_app, name="db")


def main() -> None:
    limit_malloc_arenas()
    app()
