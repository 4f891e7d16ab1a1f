"""`research-bot search`: the stored reports, report versions and follow-up answers that have
the words given, best first. It opens the store read-only and loads no model or web client."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Annotated

import typer

from bot.cli.common import fail, load_settings, out, reader
from bot.config import Settings
from bot.domain import strip_controls
from bot.errors import BotError, RequestError
from bot.store.search import MAX_LIMIT, ReportHit, search_words


def search(
    words: Annotated[list[str], typer.Argument(help="The words to find; a report has them all.")],
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_LIMIT, help="How many reports to list.")
    ] = 10,
    platform: Annotated[
        str, typer.Option(help="Whose reports: terminal, slack or discord.")
    ] = "terminal",
    workspace: Annotated[
        str, typer.Option(help="The Slack team id or Discord guild id (not for the terminal).")
    ] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Past reports that have every word given, best first, from one workspace (the terminal's
    own runs unless --platform and --workspace name another). As the operator, you see its
    private conversations' reports too."""
    query = " ".join(words)
    try:
        if not search_words(query):
            raise RequestError(
                'Give words to search for, for example: research-bot search "acme robots".'
            )
        if (platform == "terminal") != (workspace == ""):
            raise RequestError(
                "--workspace goes with --platform slack or discord (the terminal has none)."
            )
        settings = load_settings()
        hits = asyncio.run(_search(settings, query, platform, workspace, limit))
    except BotError as error:
        raise fail(error) from None
    if as_json:
        sys.stdout.write(json.dumps([_as_json(hit) for hit in hits]) + "\n")
        return
    if not hits:
        place = "the terminal's" if platform == "terminal" else f"{platform} {workspace}'s"
        out.print(
            f"Nothing in {place} reports has all of: {strip_controls(query)}. Try fewer or other "
            "words, or research-bot history.",
            markup=False,
        )
    blocks = ["\n".join(_block(hit)) for hit in hits]
    if blocks:
        out.print(strip_controls("\n\n".join(blocks)), markup=False, highlight=False)


def _block(hit: ReportHit) -> list[str]:
    what = hit.topic if hit.parent_run_id is None else f"{hit.topic} (follow-up)"
    version = f", version {hit.version}" if hit.version > 1 else ""
    return [
        f"{what}{version}",
        f"  {hit.created_at:%Y-%m-%d %H:%M}, asked by {hit.user_name or 'someone'}",
        f"  {hit.snippet}",
        f"  open: {_opener(hit)}",
    ]


def _opener(hit: ReportHit) -> str:
    return f"research-bot show {hit.run_id}"


def _as_json(hit: ReportHit) -> dict[str, object]:
    return {
        "run_id": hit.run_id,
        "topic": hit.topic,
        "created_at": hit.created_at.isoformat(),
        "asked_by": hit.user_name,
        "snippet": hit.snippet,
        "rank": hit.rank,
        "open": _opener(hit),
    }


async def _search(
    settings: Settings, query: str, platform: str, workspace: str, limit: int
) -> list[ReportHit]:
    async with reader(settings) as store:
        return await store.search_reports(
            query, platform=platform, workspace=workspace, viewer_channel=None, limit=limit
        )
