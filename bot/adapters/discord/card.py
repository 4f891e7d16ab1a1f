"""A run as one Discord Components V2 card (`ui.LayoutView`): a container with the run's status,
a section per step (quick run) or per researcher (deep run), the persistent buttons while it
runs, and, once done, the report as a file component with the format select.

Discord refuses a message with more than 40 components or more than 4,000 characters of text
display content in all. The card is fitted under both: researchers that do not fit are counted
in one closing line ("…and 5 more researchers") instead of shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

import discord
from discord import ui

from bot.adapters.chat.sink import ResearcherRow, StatusView, StepRow, counted, sources_label
from bot.adapters.discord.choice import identity_items
from bot.adapters.discord.views import ExportSelect, RunButton, cut_inert, inert, neutral
from bot.agent.report.model import format_cost

COMPONENT_LIMIT = 40
"""Discord's limit on components in one message, nested ones included."""
TEXT_LIMIT = 4000
"""Discord's limit on the text of all text displays of one message together."""
TOPIC_CHARS = 200
ROW_QUESTION_CHARS = 90
ROW_ACTION_CHARS = 60
NOTE_CHARS = 1000
"""Untrusted text is made inert whole, then cut to these (never inside an escape)."""
SECTION_COMPONENTS = 3
"""A section, its text display and its accessory."""
STEP_BADGES = 500
"""Step badges are numbered from here (the badge template takes up to 3 digits)."""
MORE_CHARS = 80
"""Room kept for the closing "…and N more" line."""


@dataclass(frozen=True)
class CardParts:
    """What a card shows besides its `StatusView`."""

    buttons: bool = False
    """Summarize now / Cancel (a running run)."""
    export: bool = False
    """The format select (a finished run with a stored report, where the bot can post files)."""
    report: str | None = None
    """The filename of the report attached to the same message, shown as a file component."""
    notes: Sequence[str] = ()
    """Recent thread lines, for a card that has no thread (a run in an interaction's reply)."""


class RowBadge(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"rb:row:(?P<run_id>[a-z0-9]{1,40}):(?P<agent>\d{1,3})",
):
    """A section's accessory (Discord requires one): a disabled button saying how a step or
    researcher is doing. Dynamic, so that discord.py keeps no per-message state for it."""

    def __init__(self, run_id: str, agent: int, label: str) -> None:
        super().__init__(
            discord.ui.Button(
                label=label[:80],
                style=discord.ButtonStyle.secondary,
                custom_id=f"rb:row:{run_id}:{agent}",
                disabled=True,
            )
        )

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        label = getattr(item, "label", None) or "…"
        return cls(match["run_id"], int(match["agent"]), label)


def run_card(view: StatusView, parts: CardParts = CardParts()) -> ui.LayoutView:
    """The whole message. `timeout=None`: its buttons are dynamic items and never expire."""
    head: list[ui.Item[Any]] = [
        ui.TextDisplay(_status_text(view)),
        *identity_items(view, buttons=parts.buttons),
        ui.Separator(),
    ]
    tail: list[ui.Item[Any]] = []
    if parts.notes:
        tail.append(ui.TextDisplay(_notes_text(parts.notes)))
    if parts.report or parts.buttons or parts.export:
        tail.append(ui.Separator())
    if parts.report:
        tail.append(ui.File(f"attachment://{parts.report}"))
    if parts.buttons:
        tail.append(
            ui.ActionRow(RunButton("summarize", view.run_id), RunButton("cancel", view.run_id))
        )
    if parts.export:
        tail.append(ui.ActionRow(ExportSelect(view.run_id)))
    noun = "researcher" if view.researchers else "step"
    sections = _fit(_sections(view), used=[*head, *tail], noun=noun)
    colour = _colour(view)
    card = ui.LayoutView(timeout=None)
    card.add_item(ui.Container(*head, *sections, *tail, accent_colour=colour))
    return card


def _fit(sections: list[_Shown], *, used: Sequence[ui.Item[Any]], noun: str) -> list[ui.Item[Any]]:
    """As many sections as fit under both limits; the rest counted in one closing line."""
    room = COMPONENT_LIMIT - 1 - sum(item._total_count for item in used)  # 1: the container
    text_room = TEXT_LIMIT - sum(_text_length(item) for item in used)
    wanted = sum(_text_length(s.item) for s in sections)
    if len(sections) * SECTION_COMPONENTS <= room and wanted <= text_room:
        return [s.item for s in sections]
    shown: list[ui.Item[Any]] = []
    room -= 1  # the closing line
    text_room -= MORE_CHARS
    for section in sections:
        length = _text_length(section.item)
        if room < SECTION_COMPONENTS or text_room < length:
            break
        shown.append(section.item)
        room -= SECTION_COMPONENTS
        text_room -= length
    hidden = sections[len(shown) :]
    done = sum(1 for s in hidden if s.done)
    more = f"-# …and {len(hidden)} more {noun}{'s' if len(hidden) != 1 else ''}"
    return [*shown, ui.TextDisplay(f"{more} ({done} done)" if done else more)]


@dataclass(frozen=True)
class _Shown:
    item: ui.Section[Any]
    done: bool


def _sections(view: StatusView) -> list[_Shown]:
    if view.researchers:
        return [_Shown(_researcher_section(view, row), row.done) for row in view.researchers]
    return [_Shown(_step_section(view, step), step.done) for step in view.steps]


def _step_section(view: StatusView, step: StepRow) -> ui.Section[Any]:
    text = f"**{step.number}.** {inert(step.action, ROW_QUESTION_CHARS)}"
    if step.failed:
        label = "failed"
    elif step.done:
        label = f"✓ {sources_label(step.sources)}" if step.sources else "✓ done"
    else:
        label = "stopped" if view.finished else "working"
    # Numbers past the researchers' (1..n) keep every badge's custom id distinct.
    badge = RowBadge(view.run_id, STEP_BADGES + step.number % STEP_BADGES, label)
    return ui.Section(ui.TextDisplay(text), accessory=badge)


def _researcher_section(view: StatusView, row: ResearcherRow) -> ui.Section[Any]:
    text = f"**{row.agent}.** {inert(row.question, ROW_QUESTION_CHARS)}"
    if row.action and not view.finished:
        text += f"\n-# {inert(row.action, ROW_ACTION_CHARS)}"
    count = sources_label(row.sources) if row.sources else ""
    if row.done:
        label = f"✓ {count}" if count else "✓ done"
    else:
        label = count or ("stopped" if view.finished else "working")
    return ui.Section(ui.TextDisplay(text), accessory=RowBadge(view.run_id, row.agent, label))


def _status_text(view: StatusView) -> str:
    """Topic and action may hold untrusted text: escaped, not obeyed. The requester's mention
    is ours; messages go out with no allowed mentions, so it shows a name and pings no one."""
    title = f"{view.mode.capitalize()} research: {inert(view.topic, TOPIC_CHARS)}"
    state = f"**Status:** {inert(view.state, TOPIC_CHARS)}"
    if view.turn:
        state += f" · turn {view.turn}"
    if view.steps:
        state += f" · {counted(view.earlier_steps + len(view.steps), 'step')}"
        if view.earlier_steps:
            state += f" (the latest {len(view.steps)} below)"
    lines = [
        f"### {title}",
        state,
        f"**Sources:** {view.sources} · **Cost:** {format_cost(view.cost_usd)}",
        f"-# Asked by <@{view.requester}> · run `{view.run_id}`",
    ]
    return "\n".join(lines)


def _notes_text(notes: Sequence[str]) -> str:
    """The latest lines that fit, each whole: a line cut at its start could lose the escape
    or the link its markup belongs to."""
    text = neutral("\n".join(notes))
    if len(text) <= NOTE_CHARS:
        return text
    lines = text.split("\n")
    kept: list[str] = []
    room = NOTE_CHARS - len("…\n")
    for line in reversed(lines):
        if len(line) + 1 > room:
            break
        kept.insert(0, line)
        room -= len(line) + 1
    return "\n".join(["…", *kept]) if kept else cut_inert(lines[-1], NOTE_CHARS)


def _colour(view: StatusView) -> discord.Colour:
    if not view.finished:
        return discord.Colour.blurple()
    return discord.Colour.green() if view.has_report else discord.Colour.light_grey()


def _text_length(item: ui.Item[Any]) -> int:
    return sum(
        len(child.content)
        for child in (item, *getattr(item, "walk_children", lambda: ())())
        if isinstance(child, ui.TextDisplay)
    )


def component_count(card: ui.LayoutView) -> int:
    """Every component of the card, nested ones included, as Discord counts them."""
    return len(list(card.walk_children()))
