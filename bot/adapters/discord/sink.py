"""The Discord `ChatSink`: a run's card (bot/adapters/discord/card.py) and its thread, edits,
replies and the report file, all sent with the bot token (never the interaction token, which
dies after 15 minutes). Runs the bot cannot post for (a user install) use
bot/adapters/discord/interaction.py instead."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
import discord

from bot.adapters.chat.progress import ChatProgress
from bot.adapters.chat.sink import ChatError, StatusView, split_text
from bot.adapters.discord.card import CardParts, run_card
from bot.adapters.discord.views import MESSAGE_LIMIT, safe_text
from bot.agent.events import Event
from bot.domain import RunRecord
from bot.errors import RequestError
from bot.runs.manager import Outcome
from bot.store.runs import Store

log = logging.getLogger(__name__)

THREAD_ARCHIVE_MINUTES: Literal[60, 1440, 4320, 10080] = 1440
"""A day without messages before Discord hides the thread (it reopens on the next message)."""
NO_MENTIONS = discord.AllowedMentions.none()
"""Also on edits, where discord.py does not add the client's default by itself."""
RESUMED = "The bot restarted while this run was in progress: writing up from what it had found."


@contextlib.contextmanager
def discord_errors() -> Iterator[None]:
    """Discord's refusals (`403 Forbidden (error code: 50013): Missing Permissions`) and
    connection failures, as `ChatError`."""
    try:
        yield
    except discord.HTTPException as error:
        raise ChatError(str(error), auth=error.status == 401) from error
    except (aiohttp.ClientError, TimeoutError) as error:
        raise ChatError(str(error) or type(error).__name__) from error


@dataclass(frozen=True)
class Place:
    """Where a run lives. A thread opened from a message has that message's id, so `thread` is
    also the id of the run's status message in `channel`."""

    guild: int
    channel: int
    thread: int


def place_of(run: RunRecord) -> Place | None:
    origin = run.origin
    if not (origin.workspace.isdigit() and origin.channel.isdigit() and origin.thread.isdigit()):
        return None
    return Place(int(origin.workspace), int(origin.channel), int(origin.thread))


async def send_report(
    channel: discord.abc.Messageable, text: str, filename: str, markdown: str
) -> None:
    """`text` (already safe) split under the limit; the `.md` file rides on the last piece."""
    pieces = split_text(text, MESSAGE_LIMIT) or [filename]
    for piece in pieces[:-1]:
        await channel.send(piece, suppress_embeds=True)
    await channel.send(pieces[-1], file=_file(filename, markdown), suppress_embeds=True)


async def tell(interaction: discord.Interaction[Any], text: str) -> None:
    """An ephemeral answer (already safe text), split under the limit."""
    for piece in split_text(text, MESSAGE_LIMIT):
        if interaction.response.is_done():
            await interaction.followup.send(piece, ephemeral=True)
        else:
            await interaction.response.send_message(piece, ephemeral=True)


async def send_text(channel: discord.abc.Messageable, text: str) -> None:
    """`text` (already safe) of any length, as messages under the limit, in order."""
    for piece in split_text(text, MESSAGE_LIMIT):
        await channel.send(piece, suppress_embeds=True)


class ThreadPosts:
    """Replies and report files in a run's thread; `_thread` says where that is (None: nowhere,
    and nothing is sent)."""

    show_command = "`/research show run:{run_id}`"

    def _thread(self, run: RunRecord) -> discord.PartialMessageable | None:
        raise NotImplementedError

    async def reply(self, run: RunRecord, text: str) -> None:
        thread = self._thread(run)
        if thread is not None:
            with discord_errors():
                await send_text(thread, safe_text(text))

    async def upload_report(
        self, run: RunRecord, filename: str, markdown: str, comment: str
    ) -> None:
        thread = self._thread(run)
        if thread is not None:
            with discord_errors():
                await send_report(thread, safe_text(comment), filename, markdown)


class DiscordSink(ThreadPosts):
    """Shows runs on Discord. Knows each run's place from the store, or from its own post until
    the run's record catches up."""

    def __init__(self, client: discord.Client, store: Store) -> None:
        self._client = client
        self._store = store
        self._places: dict[str, Place] = {}
        self._runs_by_message: dict[int, str] = {}
        self._reports: dict[str, tuple[str, str]] = {}
        """Reports delivered in their thread, by run: the finished card carries them too."""

    def thread_of(self, run_id: str) -> int | None:
        place = self._places.get(run_id)
        return place.thread if place else None

    def run_for_message(self, message_id: int) -> str | None:
        """The run whose status message this is, while this process is showing it."""
        return self._runs_by_message.get(message_id)

    async def post_status(self, run: RunRecord, view: StatusView) -> None:
        known = place_of(run)
        if known is not None:
            # Recovered after a restart: the message and thread exist; pick them up again.
            self._remember(run.run_id, known)
            await self.edit_status(run, view)
            await self.reply(run, RESUMED)
            return
        with discord_errors():
            place = await self._open_thread(run, view)
        self._remember(run.run_id, place)
        await self._store.set_location(
            run.run_id, channel=str(place.channel), thread=str(place.thread)
        )

    async def edit_status(self, run: RunRecord, view: StatusView) -> None:
        place = self._place(run)
        if place is None:
            return
        message = self._client.get_partial_messageable(
            place.channel, guild_id=place.guild
        ).get_partial_message(place.thread)
        if not view.finished:
            with discord_errors():
                await _edit_card(message, run_card(view, CardParts(buttons=True)))
            return
        report = self._reports.get(run.run_id)
        self._forget(run.run_id)
        if report is not None:
            filename, markdown = report
            card = run_card(view, CardParts(export=view.has_report, report=filename))
            try:
                await _edit_card(message, card, _file(filename, markdown))
                return
            except discord.HTTPException as error:
                # Over this server's upload limit, say: the thread has the file already.
                log.warning("run %s: the card could not carry the report: %s", run.run_id, error)
        with discord_errors():
            await _edit_card(message, run_card(view, CardParts(export=view.has_report)))

    async def upload_report(
        self, run: RunRecord, filename: str, markdown: str, comment: str
    ) -> None:
        await super().upload_report(run, filename, markdown, comment)
        if self._thread(run) is not None:
            self._reports[run.run_id] = (filename, markdown)

    async def post_report_text(self, run: RunRecord, note: str, markdown: str) -> None:
        thread = self._thread(run)
        if thread is not None:
            with discord_errors():
                await send_text(thread, safe_text(note))
                await send_text(thread, safe_text(markdown))

    async def _open_thread(self, run: RunRecord, view: StatusView) -> Place:
        """The run's message with its buttons, and the thread under it (or neither)."""
        channel = await self._text_channel(run)
        card = run_card(view, CardParts(buttons=True))
        message = await channel.send(view=card, allowed_mentions=NO_MENTIONS)
        try:
            thread = await message.create_thread(
                name=_thread_name(run), auto_archive_duration=THREAD_ARCHIVE_MINUTES
            )
        except discord.HTTPException:
            # No thread, no run: do not leave buttons behind that lead nowhere.
            with contextlib.suppress(discord.HTTPException):
                await message.delete()
            raise
        return Place(channel.guild.id, channel.id, thread.id)

    async def _text_channel(self, run: RunRecord) -> discord.TextChannel:
        channel_id = int(run.origin.channel)
        channel = self._client.get_channel(channel_id) or await self._client.fetch_channel(
            channel_id
        )
        if not isinstance(channel, discord.TextChannel):
            raise RequestError("Runs start from a text channel: each one gets a thread there.")
        return channel

    def _thread(self, run: RunRecord) -> discord.PartialMessageable | None:
        place = self._place(run)
        if place is None:
            return None
        return self._client.get_partial_messageable(
            place.thread, guild_id=place.guild, type=discord.ChannelType.public_thread
        )

    def _place(self, run: RunRecord) -> Place | None:
        place = self._places.get(run.run_id) or place_of(run)
        if place is None:
            log.debug("run %s: no Discord message to show it in", run.run_id)
        return place

    def _remember(self, run_id: str, place: Place) -> None:
        self._places[run_id] = place
        self._runs_by_message[place.thread] = run_id

    def _forget(self, run_id: str) -> None:
        self._reports.pop(run_id, None)
        place = self._places.pop(run_id, None)
        if place is not None:
            self._runs_by_message.pop(place.thread, None)


async def _edit_card(
    message: discord.PartialMessage, card: discord.ui.LayoutView, *files: discord.File
) -> None:
    """The whole card again (a V2 message is its components). `embed=None` clears the embed of
    a status message posted before cards, when a run recovered after an upgrade edits it."""
    if files:
        await message.edit(
            view=card, embed=None, attachments=list(files), allowed_mentions=NO_MENTIONS
        )
    else:
        await message.edit(view=card, embed=None, allowed_mentions=NO_MENTIONS)


def _file(filename: str, markdown: str) -> discord.File:
    return discord.File(io.BytesIO(markdown.encode()), filename=filename)


def _thread_name(run: RunRecord) -> str:
    # Discord caps thread names at 100 characters.
    return run.topic[:100]


class CommandFollow:
    """The listener of a run started by `/research`: makes the run's `ChatProgress` on the first
    event (the record carries the run id by then) and resolves `posted` with the post's error,
    or None, so the command can say where the run went or what stopped it."""

    def __init__(self, make: Callable[[RunRecord], ChatProgress]) -> None:
        self._make = make
        self._progress: ChatProgress | None = None
        # A result, never an exception: a command that stopped waiting must leave nothing unread.
        self.posted: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    async def on_event(self, run: RunRecord, event: Event) -> None:
        if self._progress is not None:
            await self._progress.on_event(run, event)
            return
        self._progress = self._make(run)
        try:
            await self._progress.on_event(run, event)
        except Exception as error:
            self._resolve(error)
            raise
        self._resolve(None)

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        self._resolve(None)
        if self._progress is None:
            self._progress = self._make(run)
        await self._progress.on_finished(run, outcome)

    def _resolve(self, error: Exception | None) -> None:
        if not self.posted.done():
            self.posted.set_result(error)
