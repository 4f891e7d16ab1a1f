"""The choice of company on Discord: the candidates as buttons on a run's card while it waits for
one, and the settled company once it is known. The buttons are `DynamicItem`s, registered at
start-up as the run buttons are, so a press on a card posted before a restart still reaches
the new process; it finds its handler on `interaction.client`."""

from __future__ import annotations

import re
from typing import Any, Protocol, Self, runtime_checkable

import discord
from discord import ui

from bot.adapters.chat.choice import QUESTION, REFINE, choice_prompt, offers_choice
from bot.adapters.chat.sink import StatusView
from bot.adapters.discord.views import inert as inert_whole
from bot.adapters.discord.views import safe_text

LABEL_CHARS = 80
"""Discord's limit for a button's label."""
CANDIDATE_CHARS = 300
NOTE_CHARS = 600
"""A candidate's line and description, and the settled note, made inert, then cut to these."""
ROW_BUTTONS = 5
"""Discord's limit of buttons in one action row."""


@runtime_checkable
class Chooser(Protocol):
    """What the client offers the company buttons."""

    async def on_identity_choice(
        self, interaction: discord.Interaction[Any], run_id: str, choice: int | None
    ) -> None:
        """A candidate's index, or None for "None of these: refine"."""
        ...


class ChoiceButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]],
    template=r"identity:(?P<run_id>[a-z0-9]{1,40}):(?P<choice>\d{1,2}|refine)",
):
    """One candidate's button of one run, or its "None of these: refine": works for any run
    id, in any process."""

    def __init__(self, run_id: str, choice: int | None, label: str) -> None:
        style = discord.ButtonStyle.primary if choice is not None else discord.ButtonStyle.secondary
        value = "refine" if choice is None else str(choice)
        super().__init__(
            discord.ui.Button(
                label=button_label(label), style=style, custom_id=f"identity:{run_id}:{value}"
            )
        )
        self.run_id = run_id
        self.choice = choice

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        choice = None if match["choice"] == "refine" else int(match["choice"])
        return cls(match["run_id"], choice, getattr(item, "label", None) or "…")

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        client = interaction.client
        if not isinstance(client, Chooser):
            raise TypeError(f"{type(client).__name__} does not handle the choice of company")
        await client.on_identity_choice(interaction, self.run_id, self.choice)


def identity_items(view: StatusView, *, buttons: bool) -> list[ui.Item[Any]]:
    """The settled company, once it is; while the run waits for a choice (and the card has
    buttons), the question, one button per candidate and "None of these: refine"."""
    items: list[ui.Item[Any]] = []
    if view.identity:
        items.append(ui.TextDisplay(f"**Company:** {inert(view.identity, NOTE_CHARS)}"))
    if not (buttons and offers_choice(view)):
        return items
    lines = [f"**{QUESTION}**", inert(choice_prompt(view), NOTE_CHARS)]
    for n, company in enumerate(view.candidates, start=1):
        line = company.line() + (f": {company.description}" if company.description else "")
        lines.append(f"{n}. {inert(line, CANDIDATE_CHARS)}")
    items.append(ui.TextDisplay("\n".join(lines)))
    found = [
        ChoiceButton(view.run_id, index, f"{index + 1}. {company.line()}")
        for index, company in enumerate(view.candidates)
    ]
    found.append(ChoiceButton(view.run_id, None, REFINE))
    items += [
        ui.ActionRow(*found[start : start + ROW_BUTTONS])
        for start in range(0, len(found), ROW_BUTTONS)
    ]
    return items


def button_label(text: str) -> str:
    """Untrusted text as a button's label (plain text there): mentions defused, on one line,
    then cut to Discord's limit."""
    flat = " ".join(safe_text(text).split())
    return flat if len(flat) <= LABEL_CHARS else flat[: LABEL_CHARS - 1] + "…"


def inert(text: str, limit: int) -> str:
    """Untrusted text on one line for a text display: inert whole, then cut (views.inert)."""
    return inert_whole(" ".join(text.split()), limit)
