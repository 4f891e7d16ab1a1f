"""A watched run's delivery to its channel, and what a watch does when that channel is gone (the
channel deleted or archived, the bot removed from it or from its server): it pauses itself with
why, after one failed delivery, and its run is stopped, so that nothing retries for ever. The
budget's refusal of a watched run is told in the channel here too (once per refusal streak)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.adapters.chat.sink import ChatError
from bot.agent.events import Event
from bot.domain import RunRecord
from bot.errors import StoreError
from bot.runs.front_ends import ChannelNotice
from bot.runs.mailbox import LetGo, RunListener
from bot.runs.outcome import Outcome
from bot.runs.watch_scheduler import request_for
from bot.store.runs import Store
from bot.watches.model import Watch

log = logging.getLogger(__name__)

SLACK_GONE = frozenset(
    {"channel_not_found", "not_in_channel", "is_archived", "channel_is_archived"}
)
"""Slack's error codes for a channel that is gone or that the bot is no longer in."""
DISCORD_GONE = frozenset({403, 404})
"""Discord's HTTP statuses, on posting in a channel, for one that is gone (404 Unknown Channel)
or that the bot may no longer see or post in (403 Missing Access, Missing Permissions)."""
PAUSED = "cannot post in its channel ({reason}): invite the bot back, then resume it"
SKIPPED = (
    "Watch `{id}` ({topic}): this period's report could not be posted here, so it was skipped. "
    "The next one comes at its usual time."
)
REFUSED = (
    "Watch `{id}` ({topic}): this period's report was not started. {why} "
    "It is tried again next period; an admin can raise the budget meanwhile."
)


def channel_gone(platform: str, error: ChatError) -> bool:
    """Whether the platform said the channel, or the bot's place in it, is gone."""
    if platform == "slack":
        return error.reason in SLACK_GONE
    if platform == "discord":
        # discord.HTTPException's status (this package may not import the SDK).
        return getattr(error.__cause__, "status", None) in DISCORD_GONE
    return False


async def pause_gone(store: Store, watch: Watch, error: ChatError) -> None:
    """Pause the watch, saying why; a store that cannot be written is logged."""
    reason = PAUSED.format(reason=error.reason)
    log.warning("watch %s paused: %s", watch.id, reason)
    try:
        await store.pause_watch(watch.id, watch.platform, watch.workspace, reason)
    except StoreError as store_error:
        log.error("watch %s: could not be paused: %s", watch.id, store_error)


async def tell_channel(store: Store, notice: ChannelNotice, watch: Watch, text: str) -> bool:
    """One line in the watch's channel; a channel gone pauses the watch (then True)."""
    try:
        await notice(request_for(watch).origin, text)
    except ChatError as error:
        if channel_gone(watch.platform, error):
            await pause_gone(store, watch, error)
            return True
        log.warning("watch %s: could not tell its channel: %s", watch.id, error.reason)
    return False


async def tell_refused(store: Store, notice: ChannelNotice, watch: Watch, why: str) -> None:
    """The clock's `refused`: the budget (or the hourly limit) refused this period's run."""
    await tell_channel(
        store, notice, watch, REFUSED.format(id=watch.id, topic=watch.topic, why=why)
    )


class WatchDelivery:
    """Wraps the listener of one watched run. When its first delivery (the status message
    opening its thread) is refused because the channel is gone, the watch is paused, the run
    cancelled and nothing more is sent. Refused for another reason, or by a front end that keeps
    the refusal to itself (Slack's stops the run and posts nothing), it is found out from the
    run's record, which then has no thread: the run is cancelled (nobody would see it), and one
    plain line tells the channel so, or, refused too because the channel is gone, says why."""

    def __init__(
        self,
        watch: Watch,
        listener: RunListener,
        *,
        store: Store,
        cancel: Callable[[str], object],
        notice: ChannelNotice,
    ) -> None:
        self._watch = watch
        self._listener = listener
        self._store = store
        self._cancel = cancel
        self._notice = notice
        self._first = True
        self.gone = False
        """The channel is gone: the watch is paused and this run says nothing more."""

    async def on_event(self, run: RunRecord, event: Event) -> None:
        if self.gone:
            return
        if not self._first:
            await self._listener.on_event(run, event)
            return
        self._first = False
        try:
            await self._listener.on_event(run, event)
        except ChatError as error:
            if channel_gone(self._watch.platform, error):
                await self._stop(run, error)
                return
            log.warning("run %s of watch %s: not posted: %s", run.run_id, self._watch.id, error)
        if not await self._shown(run):
            text = SKIPPED.format(id=self._watch.id, topic=self._watch.topic)
            self.gone = await tell_channel(self._store, self._notice, self._watch, text)
            self._cancel(run.run_id)  # the front end may have stopped it already

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        if self.gone:
            # Taken as delivered: no later start tries that channel again.
            log.info("run %s of watch %s: its channel is gone", run.run_id, self._watch.id)
            return
        await self._listener.on_finished(run, outcome)

    async def let_go(self, run: RunRecord) -> None:
        if isinstance(self._listener, LetGo):
            await self._listener.let_go(run)

    async def _shown(self, run: RunRecord) -> bool:
        try:
            return bool((await self._store.get_run(run.run_id)).origin.thread)
        except StoreError:
            return True  # unknown: nothing is said rather than something wrong

    async def _stop(self, run: RunRecord, error: ChatError) -> None:
        self.gone = True
        self._cancel(run.run_id)
        await pause_gone(self._store, self._watch, error)
