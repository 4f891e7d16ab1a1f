"""Untrusted text on a run's Discord card, as Discord receives it: made inert whole, then cut,
so a link or emphasis cut in half keeps no markup and no escape is split."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from bot.adapters.chat.sink import ResearcherRow, StatusView
from bot.adapters.discord.card import (
    NOTE_CHARS,
    ROW_ACTION_CHARS,
    ROW_QUESTION_CHARS,
    CardParts,
    run_card,
)
from tests.adapters.discord.world import DiscordBot, ScriptedEngine, card_text
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_components import TEXT_DISPLAY, walk

LINK = "[docs](data:text/html,<script>alert(document.cookie)</script>)"
QUERY = "acme " * 14 + LINK + " **more** " * 4
"""A search whose link straddles the step row's cut (90 characters)."""
URL = "https://[click](data:text/html,<script>alert(1)</script>)"
"""A page to read that is no URL: its link straddles a researcher row's cut (60)."""
QUESTION = "Who funds " + "Acme " * 15 + "[really](javascript:alert(1)) <@123456789012345678>?"

MARKUP = re.compile(r"\]\(|\[docs|\[click|\[really|<script|javascript:|data:text")
LONE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\…")
"""An odd run of backslashes before the ellipsis: the cut split an escape."""


class HostileSearch(ScriptedEngine):
    """A quick run whose one search carries a hostile link, cut in half by the step's row."""

    def __init__(self) -> None:
        super().__init__(calls=[("web_search", {"query": QUERY})])


def _texts(components: list[dict[str, object]]) -> list[str]:
    return [str(c["content"]) for c in walk(components) if c.get("type") == TEXT_DISPLAY]


async def test_a_hostile_link_cut_by_the_card_reaches_discord_inert(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    engine = HostileSearch()
    engine.release.set()
    bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
    try:
        run_id, _ = await bot.research("Acme Robotics")
        await bot.runs.wait(run_id)
    finally:
        await bot.stop()

    final = next(m for m in fake.messages.values() if f"run `{run_id}`" in card_text(m))
    shown = card_text(final)
    step = next(t for t in _texts(final["components"]) if t.startswith("**1.** Searched:"))
    assert MARKUP.search(shown) is None, shown
    assert "acme acme docs \\*\\*" in step  # the link's words, then the emphasis escaped
    assert len(step) <= len("**1.** ") + ROW_QUESTION_CHARS
    assert step.endswith("…") and LONE_ESCAPE.search(step) is None


def test_a_researchers_cut_action_and_the_cut_notes_keep_no_markup() -> None:
    view = StatusView(run_id="r1", topic="Acme", mode="company", requester="1")
    action = f"Reading: {URL} **and** more"
    view.researchers = [ResearcherRow(agent=1, question=QUESTION, action=action)]
    notes = [f"• {LINK} " + "\\*" * 600, "• Searched: " + "_x_ " * 300]
    card = run_card(view, CardParts(notes=notes)).to_components()

    texts = _texts(card)
    row = next(t for t in texts if t.startswith("**1.**"))
    shown_action = row.split("\n-# ", 1)[1]
    assert shown_action.startswith("Reading: https://click")
    assert len(shown_action) <= ROW_ACTION_CHARS
    note = texts[-1]
    assert note.startswith("…\n• Searched: ") or note.startswith("• Searched: ")
    assert len(note) <= NOTE_CHARS
    for text in texts:
        assert MARKUP.search(text) is None, text
        assert LONE_ESCAPE.search(text) is None, text
    assert "<@123456789012345678>" not in str(card)
    assert discord.utils.escape_markdown("_x_") in note
