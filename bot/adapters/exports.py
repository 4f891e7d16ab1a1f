"""A stored report as a file in a chat, the same rule on every platform: the run must be of this
workspace (Slack team, Discord guild) and have a report; `bot.export` renders it off the loop.
Each platform only decides where the file goes and how a refusal is shown."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from bot.domain import RunRecord
from bot.errors import NotFoundError, RequestError
from bot.export import Exported, Format, export
from bot.store import Store

FORMAT_LABELS = {
    Format.MD: "Markdown",
    Format.HTML: "HTML",
    Format.PDF: "PDF",
    Format.DOCX: "Word",
}
"""What a person picks from: a select's options and the words of the messages."""


class ChatExport(NamedTuple):
    run: RunRecord
    title: str
    """The report's title: the model's text, for each platform to escape."""
    file: Exported


class Exporter:
    """Finds a run of one workspace and renders its report in the format asked for."""

    def __init__(
        self, store: Store, *, platform: str, place: str, font_dir: Path | None = None
    ) -> None:
        self._store = store
        self._platform = platform
        self._place = place
        """How the platform calls a workspace (`workspace`, `server`), for the refusals."""
        self._font_dir = font_dir

    async def export(self, run_id: str, fmt: Format, *, workspace: str) -> ChatExport:
        """Raises RequestError with what to tell the person (no such run here, no report), or
        ConfigError when the format needs what this machine lacks (Pango for a PDF)."""
        try:
            run = await self._store.get_run(run_id, platform=self._platform, workspace=workspace)
        except NotFoundError:
            raise RequestError(
                f"No run `{run_id}` in this {self._place}. `/research history` lists them."
            ) from None
        found = await self._store.report(run.run_id)
        if found is None:
            raise RequestError(f"Run `{run.run_id}` has no report ({run.status.value}).")
        report, _ = found
        exported = await export(run, report, fmt, font_dir=self._font_dir)
        return ChatExport(run, report.title, exported)
