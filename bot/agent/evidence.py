"""What the model saw of each source, by the run's citation number: the text claims are checked against."""

from __future__ import annotations

from bot.agent.events import ToolFinished


class SourceTexts:
    """A tool result about one source (a page read) counts whole for it; a result listing
    several (a search) counts each source's own title and snippet, not its neighbours'."""

    def __init__(self) -> None:
        self._texts: dict[int, list[str]] = {}

    def add(self, event: ToolFinished) -> None:
        if event.is_error:
            return
        numbered = [(n, s) for n, s in zip(event.numbers, event.sources, strict=False) if n]
        for number, source in numbered:
            text = event.content if len(numbered) == 1 else f"{source.title}\n{source.snippet}"
            self._texts.setdefault(number, []).append(text)

    def text(self, number: int) -> str:
        """Everything the model was shown about source `number` ("" when nothing)."""
        return "\n\n".join(self._texts.get(number, []))
