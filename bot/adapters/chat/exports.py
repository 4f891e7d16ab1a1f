"""A stored report as a file in a chat: the formats a person picks from and what an export
carries. Which run may be exported is the command service's rule (`bot.adapters.chat.service`);
`bot.export` renders the file; each platform only decides where the file goes."""

from __future__ import annotations

from typing import NamedTuple

from bot.domain import RunRecord
from bot.export import Exported, Format

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
