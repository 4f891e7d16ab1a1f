"""The chat front ends this process serves, as the watches' clock sees them: each platform's
listener for a run it did not receive (a watched run shows in a new thread of its channel, as a
run from the shared queue does), and its way to say one plain line in a channel (a watched run
the budget refused). Front ends attach when they start; `wake` tells the clock that a watch was
made or resumed, so that its first run starts now rather than at the next tick."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from bot.domain import Origin, RunRecord
from bot.runs.mailbox import RunListener

ListenerFor = Callable[[RunRecord], RunListener | None]
ChannelNotice = Callable[[Origin, str], Awaitable[None]]
"""Posts one plain line (no mentions, no links unfurled) in `origin`'s channel; raises the
platform's ChatError when it cannot."""


class FrontEnds:
    def __init__(self) -> None:
        self._listeners: dict[str, ListenerFor] = {}
        self._notices: dict[str, ChannelNotice] = {}
        self.due = asyncio.Event()
        """Set by `wake`; the watches' clock waits on it between ticks."""

    @property
    def platforms(self) -> set[str]:
        return set(self._listeners)

    def attach(self, platform: str, listener_for: ListenerFor, notice: ChannelNotice) -> None:
        self._listeners[platform] = listener_for
        self._notices[platform] = notice
        self.wake()

    def listener_for(self, record: RunRecord) -> RunListener | None:
        chosen = self._listeners.get(record.origin.platform)
        return chosen(record) if chosen is not None else None

    async def notice(self, origin: Origin, text: str) -> None:
        """Say `text` in `origin`'s channel, if its platform is served here."""
        post = self._notices.get(origin.platform)
        if post is not None:
            await post(origin, text)

    def wake(self) -> None:
        self.due.set()
