"""The worker processes that extract pages away from the event loop.

trafilatura holds the GIL for 3-25 ms a page (more when it falls back to justext, whose
all-languages stoplist is re-hashed on every call), so in a thread of this process it stalls
the event loop for every run. Here each page goes to one of a few worker processes, started
once (lazily, at the first page) and warmed with one extraction, so the justext stoplist is
built once per worker. A page that takes longer than the time cap kills its worker, which is
started again for the next page; a worker that dies is replaced the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from bot.agent.extract import Body, Page, extract_page
from bot.errors import ToolError

log = logging.getLogger(__name__)

_WARM_PAGE = b"<html><body><p>warm up</p></body></html>"  # short: takes the justext path
_CHILD = "from bot.agent.extract_pool import _child; _child()"


def _child() -> None:
    """A worker process's entry point: `python -c "...; _child()" FD`, FD its end of the pipe."""
    _serve(Connection(int(sys.argv[1])))


def _serve(conn: Connection) -> None:
    """A worker's life: warm up, say so, then one page per message until told to stop."""
    extract_page(Body("http://warm.up/", "warm.up", "text/html", None, _WARM_PAGE), 100)
    gc.freeze()  # modules and stoplists live as long as the worker: the collector skips them
    conn.send("ready")
    while True:
        try:
            meta = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if meta is None:
            return
        url, host, media_type, charset, max_chars = meta
        data = conn.recv_bytes()
        try:
            page = extract_page(Body(url, host, media_type, charset, data), max_chars)
            conn.send(("ok", page.title, page.text, page.truncated))
        except ToolError as error:
            conn.send(("refused", str(error)))
        except Exception as error:  # hostile input can break a parser; the page fails, not the bot
            conn.send(("failed", f"{error.__class__.__name__}: {error}"[:300]))


class _Crashed(Exception):
    """The worker died during the page."""


class _Worker:
    """One worker process and our end of its pipe; used from one thread at a time.

    A plain `python -c`, not a multiprocessing spawn: spawn re-imports the parent's `__main__`
    in the child (the whole bot: anthropic, the store, the chat front ends), about 60 MB per
    worker for nothing; this child imports this module and trafilatura only."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        try:
            self.conn.recv()  # "ready": imported and warmed
        except BaseException:
            self.stop(kill=True)
            raise

    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, meta: tuple[Any, ...], data: bytes | bytearray, timeout_s: float) -> Any:
        """The worker's answer; None when it is past `timeout_s` (then it must be killed)."""
        try:
            self.conn.send(meta)
            self.conn.send_bytes(data)
            if not self.conn.poll(timeout_s):
                return None
            return self.conn.recv()
        except (EOFError, OSError) as error:
            raise _Crashed from error

    def stop(self, *, kill: bool = False) -> None:
        if not kill:
            try:
                self.conn.send(None)
                self.process.wait(1.0)
            except (OSError, subprocess.TimeoutExpired):
                kill = True
        if self.alive():
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(1.0)
        self.conn.close()


class Extractor:
    """A pool of extraction processes: `async with Extractor(workers=2) as x: await x.extract(...)`."""

    def __init__(self, *, workers: int = 2, timeout_s: float = 10.0) -> None:
        self.workers = workers
        self.timeout_s = timeout_s
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="extract")
        self._idle: asyncio.Queue[_Worker | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._live: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = False

    async def __aenter__(self) -> Extractor:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def pids(self) -> list[int]:
        """The worker processes running now (for tests and the benchmark's memory count)."""
        with self._lock:
            return [w.process.pid for w in self._live]

    async def start(self) -> None:
        """Start and warm every worker now, rather than at the first page."""
        idle = self._queue()
        slots = [await idle.get() for _ in range(self.workers)]
        loop = asyncio.get_running_loop()
        futures = [loop.run_in_executor(self._threads, self._ready, slot) for slot in slots]
        for worker in await asyncio.gather(*futures, return_exceptions=True):
            idle.put_nowait(worker if isinstance(worker, _Worker) else None)

    async def extract(self, body: Body, max_chars: int) -> Page:
        """`extract_page` in a worker; ToolError when the page fails or takes too long."""
        if self._closed:
            raise ToolError("the bot is shutting down: pages are no longer read")
        idle = self._queue()
        slot = await idle.get()
        loop = asyncio.get_running_loop()
        meta = (body.url, body.host, body.media_type, body.charset, max_chars)
        # The thread gives the worker back itself, so a fetch cancelled meanwhile (its deadline)
        # never loses a worker; the job finishes or hits the time cap on its own.
        answer = await loop.run_in_executor(self._threads, self._job, slot, meta, body.data)
        if answer[0] == "ok":
            return Page(url=body.url, title=answer[1], text=answer[2], truncated=answer[3])
        if answer[0] == "failed":
            log.warning("extraction of %s failed: %s", body.url, answer[1])
            raise ToolError(f"could not extract text from {body.url} ({answer[1]})")
        raise ToolError(answer[1])

    def _queue(self) -> asyncio.Queue[_Worker | None]:
        if self._idle is None:
            self._loop = asyncio.get_running_loop()
            self._idle = asyncio.Queue()
            for _ in range(self.workers):
                self._idle.put_nowait(None)  # a worker not started yet
        return self._idle

    def _ready(self, worker: _Worker | None) -> _Worker:
        """`worker` if it is alive, else a new one (started and warmed in this thread)."""
        if worker is not None and worker.alive():
            return worker
        if self._closed:
            raise ToolError("the bot is shutting down: pages are no longer read")
        if worker is not None:
            self._retire(worker, kill=True)
        new = _Worker()
        with self._lock:
            self._live.add(new)
        return new

    def _job(self, slot: _Worker | None, meta: tuple[Any, ...], data: bytes | bytearray) -> Any:
        worker: _Worker | None = None
        try:
            for attempt in range(2):  # a worker that died while idle is not the page's fault
                worker = self._ready(slot if attempt == 0 else None)
                try:
                    answer = worker.call(meta, data, self.timeout_s)
                    break
                except _Crashed:
                    self._retire(worker, kill=True)
                    worker = None
            else:
                return ("refused", f"could not extract text from {meta[0]}: the extractor crashed")
            if answer is None:
                self._retire(worker, kill=True)
                worker = None
                cap = f"{self.timeout_s:g}"
                return ("refused", f"refused: {meta[0]} took more than {cap} s to extract")
            return answer
        finally:
            self._give_back(worker)

    def _give_back(self, worker: _Worker | None) -> None:
        idle, loop = self._idle, self._loop
        assert idle is not None and loop is not None
        try:
            loop.call_soon_threadsafe(idle.put_nowait, worker)
        except RuntimeError:  # the loop is closed: nobody will ask again
            if worker is not None:
                self._retire(worker, kill=True)

    def _retire(self, worker: _Worker, *, kill: bool) -> None:
        with self._lock:
            self._live.discard(worker)
        worker.stop(kill=kill)

    async def aclose(self) -> None:
        self._closed = True
        with self._lock:
            workers = list(self._live)
        await asyncio.gather(*(asyncio.to_thread(self._retire, w, kill=False) for w in workers))
        self._threads.shutdown(wait=False, cancel_futures=True)
