"""Runs that live in their command's own reply: the `ChatSink` for a `/research` used through a
user install (in DMs, group DMs, or a server the bot has not joined), where the bot's token may
neither post nor open a thread.

Everything goes through the interaction's webhook: the run's card is the original response,
edited in place, and the report comes as a followup with its file. Discord allows such an
interaction only 5 followups, so thread lines are not followups: the latest ones show on the
card. The webhook token dies 15 minutes after the command; from then on the card stays as it
last was and the report goes to the person by DM with the bot token, or, if Discord refuses
that too, stays stored for `/research show` (logged).
"""

from __future__ import annotations

import io
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import discord

from bot.adapters.chat.sink import ChatError, StatusView, split_text
from bot.adapters.discord.card import CardParts, run_card
from bot.adapters.discord.sink import NO_MENTIONS, discord_errors
from bot.adapters.discord.views import MESSAGE_LIMIT, safe_text
from bot.domain import RunRecord

log = logging.getLogger(__name__)

TOKEN_LIFE_S = 15 * 60.0
"""How long an interaction's webhook token works."""
TOKEN_MARGIN_S = 60.0
"""Calls stop this long before the token dies, so that none is refused half-way."""
FOLLOWUP_LIMIT = 5
"""Followups Discord allows an interaction that only a user install authorized."""
NOTES_KEPT = 3
NOTE_CHARS = 300
"""The card shows the last thread lines, each cut to this (before escaping)."""
EXPIRED_CODES = (50027, 10015)
"""Invalid Webhook Token; Unknown Webhook."""


def lives_in_interaction(interaction: discord.Interaction[Any]) -> bool:
    """True when the bot cannot post for a run here with its own token: outside servers (DMs,
    group DMs), and in a server whose install did not authorize this command (a user install
    in a server the bot has not joined)."""
    return interaction.guild_id is None or not interaction.is_guild_integration()


def scope_of(interaction: discord.Interaction[Any]) -> str:
    """Whose runs these are, for history and `show`: the server that installed the bot, or
    else the person who installed it to their account (`user:<id>`), wherever they use it."""
    if interaction.guild_id is not None and interaction.is_guild_integration():
        return str(interaction.guild_id)
    return f"user:{interaction.user.id}"


class InteractionSink:
    """Shows one run in the reply to the command that started it (see the module's docstring).
    The command must have deferred its response publicly (`defer(thinking=True)`): the card
    replaces the "thinking…" message."""

    show_command = "`/research show run:{run_id}`"

    def __init__(
        self,
        client: discord.Client,
        user_id: int,
        interaction: discord.Interaction[Any] | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`interaction` None: its token is gone (the run was recovered after a restart)."""
        self._client = client
        self._user_id = user_id
        self._interaction = interaction
        self._clock = clock
        self._deadline = clock() + TOKEN_LIFE_S - TOKEN_MARGIN_S
        self._followups = 0
        self._notes: deque[str] = deque(maxlen=NOTES_KEPT)
        self._report: tuple[str, str] | None = None

    @classmethod
    def of(cls, interaction: discord.Interaction[Any]) -> InteractionSink:
        return cls(interaction.client, interaction.user.id, interaction)

    def alive(self) -> bool:
        """The interaction's webhook still takes calls."""
        return self._interaction is not None and self._clock() < self._deadline

    async def post_status(self, run: RunRecord, view: StatusView) -> None:
        await self._edit(run, view)

    async def edit_status(self, run: RunRecord, view: StatusView) -> None:
        if self.alive():
            await self._edit(run, view)

    async def reply(self, run: RunRecord, text: str) -> None:
        """Not a followup (there are only 5): the card shows it at its next edit."""
        self._notes.append(text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…")

    async def upload_report(
        self, run: RunRecord, filename: str, markdown: str, comment: str
    ) -> None:
        self._report = (filename, markdown)
        if self.alive() and self._followups < FOLLOWUP_LIMIT:
            try:
                await self._followup(safe_text(comment), _file(filename, markdown))
                return
            except discord.HTTPException as error:
                if not self._expired(run, error):
                    # Too large, say: the caller posts the report as messages instead.
                    self._report = None
                    raise ChatError(str(error)) from error
        await self._by_dm(run, safe_text(comment), filename, markdown)

    async def post_report_text(self, run: RunRecord, note: str, markdown: str) -> None:
        """`note`, then as much of the report as the followups left can carry; the last one
        says where the rest is."""
        pieces = [safe_text(note), *split_text(safe_text(markdown), MESSAGE_LIMIT)]
        room = FOLLOWUP_LIMIT - self._followups
        if len(pieces) > room:
            rest = f"The rest of the report: {self.show_command.format(run_id=run.run_id)}."
            pieces = [*pieces[: max(room - 1, 0)], rest]
        if not self.alive() or room <= 0:
            log.warning("run %s: report kept for /research show (no followups left)", run.run_id)
            return
        for piece in pieces:
            try:
                await self._followup(piece)
            except discord.HTTPException as error:
                self._expired(run, error)
                raise ChatError(str(error)) from error

    async def _edit(self, run: RunRecord, view: StatusView) -> None:
        interaction = self._interaction
        if interaction is None:
            return
        report = self._report if view.finished else None
        parts = CardParts(
            buttons=not view.finished,
            report=report[0] if report else None,
            notes=tuple(self._notes),
        )
        files = [_file(*report)] if report else []
        try:
            await interaction.edit_original_response(
                view=run_card(view, parts), attachments=files, allowed_mentions=NO_MENTIONS
            )
        except discord.HTTPException as error:
            if not self._expired(run, error):
                raise ChatError(str(error)) from error

    async def _followup(self, text: str, file: discord.File | None = None) -> None:
        if self._interaction is None:
            return
        followup = self._interaction.followup
        self._followups += 1
        if file is None:
            await followup.send(text, allowed_mentions=NO_MENTIONS, suppress_embeds=True)
        else:
            await followup.send(text, file=file, allowed_mentions=NO_MENTIONS, suppress_embeds=True)

    async def _by_dm(self, run: RunRecord, text: str, filename: str, markdown: str) -> None:
        """The report to the person directly, with the bot token; Discord refuses when the
        bot shares no server with them or they accept no DMs: then it waits in the store."""
        show = self.show_command.format(run_id=run.run_id)
        try:
            with discord_errors():
                channel = await self._client.create_dm(discord.Object(self._user_id))
                await channel.send(
                    f"{text}\n-# The command's reply expired; {show} shows it again.",
                    file=_file(filename, markdown),
                    allowed_mentions=NO_MENTIONS,
                    suppress_embeds=True,
                )
        except ChatError as error:
            log.warning(
                "run %s: report not delivered to user %s (%s); it is stored for %s",
                run.run_id,
                self._user_id,
                error.reason,
                show,
            )
            return
        log.info("run %s: the command's reply expired; report sent by DM", run.run_id)

    def _expired(self, run: RunRecord, error: discord.HTTPException) -> bool:
        """True (and no more webhook calls) when Discord says the token is dead."""
        if error.status != 401 and error.code not in EXPIRED_CODES:
            return False
        if self._interaction is not None:
            log.info("run %s: the interaction token expired: %s", run.run_id, error)
        self._interaction = None
        return True


def _file(filename: str, markdown: str) -> discord.File:
    return discord.File(io.BytesIO(markdown.encode()), filename=filename)
