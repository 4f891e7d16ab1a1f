"""The MCP server's HTTP side on an event loop of its own, in a thread, and the hop from there to
the bot's loop, where the runs, the store and the follow-ups live.

Why a loop of its own: during a burst the bot's loop is busy with every run's model streams,
pages and writes, and a request queued behind that work waits its turn however little it asks.
On its own loop a `research_status` answered from memory waits for nothing but the interpreter's
lock, which while it serves is handed over every 1 ms instead of 5 (`SWITCH_INTERVAL_S`).
Everything else an MCP tool does hops to the bot's loop (`at_home`), so the runs service is
used from one loop only, as everywhere else."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import uvicorn

T = TypeVar("T")
P = ParamSpec("P")

SWITCH_INTERVAL_S = 0.001
"""How long a thread may hold the interpreter's lock while another waits for it, while an
`OwnLoopServer` serves (Python's default: 5 ms). A request's few turns of the server's loop each
wait up to that long for the bot's busy loop to let go: in a burst of 50 runs, `research_status`
took 12-18 ms inside the server at p99 with 5 ms, 9-11 ms with 1 ms (bench/mcp_serve.py)."""


class HasHome(Protocol):
    home: asyncio.AbstractEventLoop


S = TypeVar("S", bound=HasHome)


async def on_loop(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, T]) -> T:
    """`work` run on `loop` and awaited from here; cancelling the wait cancels it there too."""
    if asyncio.get_running_loop() is loop:
        return await work
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, loop))


def at_home(
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
    """A coroutine method that always runs on its object's `home` loop, whoever awaits it."""

    @functools.wraps(method)
    async def hop(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await on_loop(self.home, method(self, *args, **kwargs))

    return hop


class OwnLoopServer(uvicorn.Server):
    """A uvicorn server that serves from a thread with an event loop of its own. `serve()` is
    awaited as usual, and returns (or raises) as the thread's server does. It hears no signal:
    whoever serves it sets `should_exit` to stop it (`serve` hears SIGTERM and Ctrl-C itself)."""

    async def serve(self, sockets: Any = None) -> None:
        home = asyncio.get_running_loop()
        done: asyncio.Future[None] = home.create_future()

        def settle(error: BaseException | None) -> None:
            if done.done():
                return
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

        def serving() -> None:
            error: BaseException | None = None
            try:
                asyncio.run(uvicorn.Server.serve(self, sockets))
            except BaseException as failed:  # handed to the awaiting loop, raised there
                error = failed
            # RuntimeError: that loop has closed, and nobody awaits this any more.
            with contextlib.suppress(RuntimeError):
                home.call_soon_threadsafe(settle, error)

        with _prompt_handovers():
            threading.Thread(target=serving, name="mcp-http", daemon=True).start()
            try:
                await asyncio.shield(done)
            except asyncio.CancelledError:
                # Cancelled is stopped: after its connections close (`timeout_graceful_shutdown`),
                # so no request is cut off while the process goes on to close the store.
                self.should_exit = True
                await asyncio.wait([done])
                raise


class _PromptHandovers:
    """`SWITCH_INTERVAL_S` while at least one server serves; after the last, the interval that
    was before the first (servers can overlap: a test's, a bench's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._serving = 0
        self._before = sys.getswitchinterval()

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._serving == 0:
                self._before = sys.getswitchinterval()
                sys.setswitchinterval(SWITCH_INTERVAL_S)
            self._serving += 1
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1
                if self._serving == 0:
                    sys.setswitchinterval(self._before)


_prompt_handovers = _PromptHandovers()
