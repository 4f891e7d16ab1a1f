"""One listener's own queue and task: a run's events reach its front end in order, as fast as
the front end can take them, while the producer has already stored them and moved on.

A slow or failing chat platform therefore never holds back storage or the research.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bot.agent.events import Event
from bot.domain import RunRecord
from bot.errors import BotError

if TYPE_CHECKING:
    from bot.runs.outcome import Outcome

log = logging.getLogger(__name__)


class RunListener(Protocol):
    """What a front end implements to follow one run."""

    async def on_event(self, run: RunRecord, event: Event) -> None: ...

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        """Deliver the outcome. Raise when it could not reach the person in any form: the run
        then stays undelivered, and is delivered again at the next start."""
        ...


@runtime_checkable
class LetGo(Protocol):
    """A listener that can be told another replica follows its run from now on."""

    async def let_go(self, run: RunRecord) -> None:
        """Say nothing more about `run`: no edit still waiting goes out (the claimer's would be
        overwritten by it); one already on the wire is waited for."""
        ...


class Mailbox:
    def __init__(self, listener: RunListener, run_id: str) -> None:
        self.listener = listener
        self._run_id = run_id
        self._queue: asyncio.Queue[tuple[RunRecord, Event] | None] = asyncio.Queue()
        self._task = asyncio.create_task(self._drain(), name=f"listener-{run_id}")

    def post(self, run: RunRecord, event: Event) -> None:
        self._queue.put_nowait((run, event))

    async def finish(self, run: RunRecord, outcome: Outcome) -> bool:
        """After every event posted so far: the outcome. True when the listener took it."""
        self._queue.put_nowait(None)
        await self._task
        try:
            await self.listener.on_finished(run, outcome)
        except BotError as error:
            # Expected (the platform refused): one line; it is delivered again at the next start.
            log.warning("run %s: the outcome could not be delivered: %s", self._run_id, error)
            return False
        except Exception:
            log.exception("run %s: the outcome could not be delivered", self._run_id)
            return False
        return True

    def close(self) -> None:
        self._task.cancel()

    async def _drain(self) -> None:
        while (item := await self._queue.get()) is not None:
            run, event = item
            try:
                await self.listener.on_event(run, event)
            except Exception:
                # A chat platform being down must not end the research: log, and go on.
                log.exception("run %s: listener failed on %s", self._run_id, event.kind)
