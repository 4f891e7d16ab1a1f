"""`/research watch`, `watches`, `unwatch` and `watch pause|resume` on every chat platform, once.

The rules: a watch belongs to the channel it was made in (a private one's too), and its runs
post there; anyone in that channel may list its watches; only the person who made a watch, or
an admin of the workspace, may end, pause or resume it; the id of a watch of another channel or
workspace is answered as no watch at all, and nothing changes. Every answer is a private
`Reply` that Slack and Discord render their own way (docs/watches.md)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.adapters.chat.commands import Command
from bot.adapters.chat.service import MENTION, Caller, Reply
from bot.domain import Depth, Mode, strip_controls
from bot.errors import NotFoundError, RequestError
from bot.runs.manager import RunManager
from bot.store.runs import Store
from bot.watches.cadence import Cadence, zone
from bot.watches.model import NewWatch, Watch, WatchStatus

log = logging.getLogger(__name__)

Admin = Callable[[], Awaitable[bool]]
"""Whether the person asking is an admin of the workspace; asked only when it matters."""

EVERY = {
    Cadence.DAILY: "every day",
    Cadence.WEEKDAYS: "every weekday",
    Cadence.WEEKLY: "every week",
    Cadence.MONTHLY: "every month",
}
MADE = (
    "Watch `{id}` made: its first report comes in this channel shortly, then one {every} at {time}."
)
NONE_HERE = "No watches in this channel yet. Start one with `/research watch <company> weekly`."
UNKNOWN = "No watch `{id}` in this channel. `/research watches` lists them."
NOT_YOURS = "Only {person} (who made it) or an admin can {verb} watch `{id}`."
ENDED = "Watch `{id}` ended: {topic}. Its reports stay in `/research history`."
PAUSED = "Watch `{id}` paused: no more reports until `/research watch resume {id}`."
RESUMED = "Watch `{id}` resumed: its next report comes {when}."
VERBS = {"unwatch": "end", "pause": "pause", "resume": "resume"}


def watch_line(watch: Watch) -> str:
    """One plain line: id, topic, cadence, next run (in the watch's time zone), last run."""
    kind = ", contracts" if watch.mode is Mode.CONTRACTS else ""
    depth = ", deep" if watch.depth is Depth.DEEP else ""
    if watch.status is WatchStatus.PAUSED:
        state = f"paused ({watch.paused_reason or 'no reason given'})"
    else:
        state = f"next {_local(watch)}"
    last = ""
    if watch.last_run_id is not None and watch.last_run_at is not None:
        last = f" · last run `{watch.last_run_id}` on {watch.last_run_at:%d %b}"
    if watch.refused:
        last += f" · last one refused ({watch.refused})"
    topic = watch.topic if len(watch.topic) <= 80 else watch.topic[:79] + "…"
    return strip_controls(
        f"`{watch.id}` · {topic} · {watch.cadence.value}{kind}{depth} · {state}{last}"
    )


def _local(watch: Watch) -> str:
    when = watch.next_run_at.astimezone(zone(watch.tz))
    return f"{when:%a %d %b %H:%M} ({watch.tz})"


class WatchCommands:
    """The watch commands of one platform (`slack`, `discord`)."""

    def __init__(self, runs: RunManager, store: Store, *, platform: str, limit: int) -> None:
        self._runs = runs
        self._store = store
        self.platform = platform
        self._limit = limit
        """Watches one workspace may keep (`RESEARCH_BOT_MAX_WATCHES`)."""

    async def add(self, caller: Caller, wanted: Command, tz: str = "UTC") -> Reply:
        """A watch of `wanted` (a parsed `watch` command) in the caller's channel, due at once,
        then each period at this hour in `tz` (UTC when the platform gave none it knows)."""
        try:
            zone(tz)
        except RequestError:
            tz = "UTC"
        new = NewWatch(
            topic=wanted.topic,
            mode=wanted.mode,
            depth=wanted.depth,
            platform=self.platform,
            workspace=caller.workspace,
            channel=caller.channel,
            created_by=caller.user,
            created_by_name=caller.user_name,
            cadence=wanted.cadence,
            tz=tz,
        )
        try:
            watch = await self._store.add_watch(new, limit=self._limit)
        except RequestError as error:  # the workspace has as many watches as it may
            return Reply(text=str(error))
        log.info(
            "%s: watch %s made by %s in %s/%s",
            self.platform,
            watch.id,
            caller.user,
            caller.workspace,
            caller.channel,
        )
        self._runs.front_ends.wake()  # its first run starts now, not at the next tick
        time = f"{watch.hour:02d}:{watch.minute:02d} ({watch.tz})"
        text = MADE.format(id=watch.id, every=EVERY[watch.cadence], time=time)
        return Reply(text=text, lines=[watch_line(watch)])

    async def list(self, caller: Caller) -> Reply:
        """The channel's watches; anyone in it may ask."""
        watches = await self._store.list_watches(self.platform, caller.workspace, caller.channel)
        if not watches:
            return Reply(text=NONE_HERE)
        return Reply(title="Watches in this channel", lines=[watch_line(w) for w in watches])

    async def change(self, caller: Caller, wanted: Command, admin: Admin) -> Reply:
        """`unwatch`, `pause` or `resume` (`wanted.kind`) of one of the channel's watches, by
        the person who made it or an admin."""
        watch_id, how = wanted.watch_id, wanted.kind
        watch = await self._find(caller, watch_id)
        if watch is None:
            return Reply(text=UNKNOWN.format(id=watch_id))
        if watch.created_by != caller.user and not await admin():
            text = NOT_YOURS.format(person=MENTION, verb=VERBS.get(how, how), id=watch.id)
            return Reply(text=text, mention=watch.created_by)
        where = (watch.id, self.platform, caller.workspace)
        try:
            if how == "unwatch":
                await self._store.remove_watch(*where)
                return Reply(text=ENDED.format(id=watch.id, topic=strip_controls(watch.topic)))
            if how == "pause":
                reason = f"paused by {caller.user_name or 'hand'}"
                paused = await self._store.pause_watch(*where, reason=reason)
                return Reply(text=PAUSED.format(id=watch.id), lines=[watch_line(paused)])
            resumed = await self._store.resume_watch(*where)
        except NotFoundError:  # ended meanwhile, by someone else
            return Reply(text=UNKNOWN.format(id=watch_id))
        self._runs.front_ends.wake()
        return Reply(text=RESUMED.format(id=watch.id, when=_local(resumed)))

    async def _find(self, caller: Caller, watch_id: str) -> Watch | None:
        """The watch if it is this channel's; any other (or none) is the same None."""
        try:
            watch = await self._store.get_watch(watch_id, self.platform, caller.workspace)
        except NotFoundError:
            return None
        return watch if watch.channel == caller.channel else None
