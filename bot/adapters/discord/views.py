"""What the bot offers on Discord: the `/research` command's shape (installable to a server and
to a person), the persistent run buttons and format select, and safe text. The run's card that
carries them is bot/adapters/discord/card.py.

The command and the buttons find their handlers on `interaction.client`, so their shapes can be
synced without a running bot. The buttons and the finished run's format select are
`DynamicItem`s: their custom id carries the action and the run id, and the client registers the
classes at start-up, so a button on a message posted before a restart still reaches the new
process.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Protocol, Self, runtime_checkable

import discord
from discord import app_commands

from bot.adapters.chat.commands import MAX_USAGE_DAYS, USAGE_DAYS
from bot.adapters.chat.exports import FORMAT_LABELS
from bot.adapters.chat.links import web_links_only
from bot.adapters.chat.sink import defuse_broadcasts
from bot.domain import MAX_TOPIC_CHARS, Depth, Mode
from bot.errors import ConfigError

MESSAGE_LIMIT = 2000
"""Discord's limit on a message's content, in characters."""
Action = Literal["summarize", "cancel"]

_EMOJI = {
    "memo": "📝",
    "pencil": "📝",
    "page_facing_up": "📄",
    "scroll": "📜",
    "bookmark_tabs": "📑",
    "pushpin": "📌",
    "writing_hand": "✍️",
    "white_check_mark": "✅",
    "checkered_flag": "🏁",
    "zap": "⚡",
    "rocket": "🚀",
    "eyes": "👀",
    "hourglass": "⌛",
    "stopwatch": "⏱️",
}
"""Slack-style names (what RESEARCH_BOT_SUMMARIZE_EMOJI holds) to the unicode Discord reports."""


def reaction_emoji(setting: str) -> str:
    """The unicode emoji for the summarize setting: a Slack name (`memo`) or the emoji itself."""
    name = setting.strip().strip(":")
    if name in _EMOJI:
        return _EMOJI[name]
    if name and not name.isascii():
        return name
    known = ", ".join(sorted(_EMOJI))
    raise ConfigError(
        f"RESEARCH_BOT_SUMMARIZE_EMOJI={setting!r} has no Discord emoji here: use one of "
        f"{known}, or the emoji character itself."
    )


def safe_text(text: str) -> str:
    """Untrusted text (the model's, the web's) made inert for display: no broadcast, user or role
    mention survives even if allowed mentions were ever loosened, and only http(s) links stay."""
    return discord.utils.escape_mentions(defuse_broadcasts(web_links_only(text)))


def inert(text: str, limit: int) -> str:
    """Untrusted text for a text display, made inert whole, then cut to `limit`. Cut first, a
    link or an emphasis would lose its end, and what is left of it would no longer be seen as
    one to defuse."""
    return cut_inert(neutral(text), limit)


def neutral(text: str) -> str:
    """No mention, no markup, web links only."""
    return discord.utils.escape_markdown(safe_text(text))


def cut_inert(inert: str, limit: int) -> str:
    """Inert text shortened to `limit` with "…": only its end goes, so nothing it escaped
    comes loose, and never after half an escape (a lone backslash would escape the "…")."""
    if len(inert) <= limit:
        return inert
    cut = inert[: limit - 1]
    backslashes = len(cut) - len(cut.rstrip("\\"))
    return cut[: len(cut) - backslashes % 2] + "…"


@runtime_checkable
class Handlers(Protocol):
    """What the client offers the command and the buttons, their input already parsed."""

    async def start_research(
        self, interaction: discord.Interaction[Any], text: str, mode: Mode, depth: Depth
    ) -> None: ...

    async def show_history(self, interaction: discord.Interaction[Any]) -> None: ...

    async def show_search(self, interaction: discord.Interaction[Any], words: str) -> None: ...

    async def show_usage(self, interaction: discord.Interaction[Any], days: int) -> None: ...

    async def show_report(self, interaction: discord.Interaction[Any], run_id: str) -> None: ...

    async def export_report(
        self, interaction: discord.Interaction[Any], run_id: str, fmt: str, *, in_thread: bool
    ) -> None:
        """The report as a file: in the run's thread (`in_thread`), else where it was asked."""
        ...

    async def on_run_button(
        self, interaction: discord.Interaction[Any], action: Action, run_id: str
    ) -> None: ...


def _handlers(interaction: discord.Interaction[Any]) -> Handlers:
    client = interaction.client
    if not isinstance(client, Handlers):
        raise TypeError(f"{type(client).__name__} does not handle /research")
    return client


Topic = app_commands.Range[str, 1, MAX_TOPIC_CHARS]
DEPTHS = [app_commands.Choice(name=depth.value, value=depth.value) for depth in Depth]
DEPTH_HELP = "quick (default), or deep: slower and more thorough, researchers in parallel"
FORMATS = [
    app_commands.Choice(name=f"{label} (.{fmt.value})", value=fmt.value)
    for fmt, label in FORMAT_LABELS.items()
]


def research_group() -> app_commands.Group:
    """`/research company|contracts [depth]|history|search|usage [days]|show|export`.

    Installable to a server (runs get a thread there) and to a person, who can then use it in
    DMs and in servers the bot has not joined (runs live in the command's own reply).
    """
    group = app_commands.Group(
        name="research",
        description="Research a company or open public contracts",
        allowed_contexts=app_commands.AppCommandContext(
            guild=True, dm_channel=True, private_channel=True
        ),
        allowed_installs=app_commands.AppInstallationType(guild=True, user=True),
    )

    @group.command(name="company", description="Research a company: a sourced profile")
    @app_commands.describe(name="The company, e.g. Acme Robotics", depth=DEPTH_HELP)
    @app_commands.choices(depth=DEPTHS)
    async def company(
        interaction: discord.Interaction[Any], name: Topic, depth: str = Depth.QUICK.value
    ) -> None:
        await _handlers(interaction).start_research(interaction, name, Mode.COMPANY, Depth(depth))

    @group.command(name="contracts", description="Find open public tenders and contracts")
    @app_commands.describe(
        filters="What to look for, e.g. road maintenance, Ireland, over 1M EUR", depth=DEPTH_HELP
    )
    @app_commands.choices(depth=DEPTHS)
    async def contracts(
        interaction: discord.Interaction[Any], filters: Topic, depth: str = Depth.QUICK.value
    ) -> None:
        await _handlers(interaction).start_research(
            interaction, filters, Mode.CONTRACTS, Depth(depth)
        )

    @group.command(name="history", description="This server's recent runs (only you see it)")
    async def history(interaction: discord.Interaction[Any]) -> None:
        await _handlers(interaction).show_history(interaction)

    @group.command(
        name="search", description="Search this server's past reports and answers (only you see it)"
    )
    @app_commands.describe(words="What to look for, e.g. acme pricing")
    async def search(interaction: discord.Interaction[Any], words: Topic) -> None:
        await _handlers(interaction).show_search(interaction, words)

    @group.command(
        name="usage", description="What this server spent, per day and per person (only you see it)"
    )
    @app_commands.describe(days=f"How many days back, today included (default {USAGE_DAYS})")
    async def usage(
        interaction: discord.Interaction[Any],
        days: app_commands.Range[int, 1, MAX_USAGE_DAYS] = USAGE_DAYS,
    ) -> None:
        await _handlers(interaction).show_usage(interaction, days)

    @group.command(name="show", description="Post a past run's report in this channel")
    @app_commands.describe(run="The run id, as in /research history")
    async def show(interaction: discord.Interaction[Any], run: str) -> None:
        await _handlers(interaction).show_report(interaction, run)

    @group.command(name="export", description="Post a past run's report here as a file")
    @app_commands.describe(run="The run id, as in /research history", fmt="The file's format")
    @app_commands.rename(fmt="format")
    @app_commands.choices(fmt=FORMATS)
    async def export(interaction: discord.Interaction[Any], run: str, fmt: str) -> None:
        await _handlers(interaction).export_report(interaction, run, fmt, in_thread=False)

    return group


class RunButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]],
    template=r"rb:(?P<action>summarize|cancel):(?P<run_id>[a-z0-9]{1,40})",
):
    """The "Summarize now" or "Cancel" button of one run: works for any run id, in any process."""

    def __init__(self, action: Action, run_id: str) -> None:
        label, style = (
            ("Summarize now", discord.ButtonStyle.primary)
            if action == "summarize"
            else ("Cancel", discord.ButtonStyle.danger)
        )
        super().__init__(
            discord.ui.Button(label=label, style=style, custom_id=f"rb:{action}:{run_id}")
        )
        self.action: Action = action
        self.run_id = run_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        action: Action = "summarize" if match["action"] == "summarize" else "cancel"
        return cls(action, match["run_id"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await _handlers(interaction).on_run_button(interaction, self.action, self.run_id)


class ExportSelect(
    discord.ui.DynamicItem[discord.ui.Select[discord.ui.View]],
    template=r"rb:export:(?P<run_id>[a-z0-9]{1,40})",
):
    """The finished run's format menu: the chosen file is posted in the run's thread."""

    def __init__(self, run_id: str) -> None:
        options = [
            discord.SelectOption(label=choice.name, value=choice.value) for choice in FORMATS
        ]
        super().__init__(
            discord.ui.Select(
                custom_id=f"rb:export:{run_id}",
                placeholder="Get the report as…",
                options=options,
            )
        )
        self.run_id = run_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        return cls(match["run_id"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        fmt = self.item.values[0] if self.item.values else ""
        await _handlers(interaction).export_report(interaction, self.run_id, fmt, in_thread=True)
