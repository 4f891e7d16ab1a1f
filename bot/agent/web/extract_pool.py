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
import logging
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from bot.agent.web.extract import Body, Page
from bot.errors import ToolError

log = logging.getLogger(__name__)

_CHILD = "from bot.agent.web.extract_worker import main; main()"


class _Crashed(Exception):
    """The worker died during the page."""


class _Worker:
    """One worker process and our end of its pipe; used from one thread at a time.

    A plain `python -c`, not a multiprocessing spawn: spawn re-imports the parent's `__main__`
    in the child (the whole bot: anthropic, the store, the chat front ends), about 60 MB per
    worker for nothing; this child imports `extract_worker` and trafilatura only."""

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
    """A pool of extraction processes: `async with Extractor(workers=2) as x: await x.extract(...)`.

    Each thread of the pool owns one worker process and takes the next page from the pool's
    queue itself as soon as the last one is answered: the event loop only hands pages in. (When
    the loop handed each worker back and then the next page out, a busy loop left the worker
    idle between pages: 200 pages took 10 ms each instead of 3.7.)"""

    def __init__(self, *, workers: int = 2, timeout_s: float = 10.0) -> None:
        self.workers = workers
        self.timeout_s = timeout_s
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="extract")
        self._mine = threading.local()
        """`worker`: the worker process of the thread reading it (None until it starts one)."""
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
        loop = asyncio.get_running_loop()
        # Each thread waits for the others, so every thread of the pool starts its own.
        barrier = threading.Barrier(self.workers)
        futures = [
            loop.run_in_executor(self._threads, self._start_one, barrier)
            for _ in range(self.workers)
        ]
        await asyncio.gather(*futures, return_exceptions=True)

    def _start_one(self, barrier: threading.Barrier) -> None:
        try:
            self._ready()
        finally:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=60)

    async def extract(self, body: Body, max_chars: int) -> Page:
        """`extract_page` in a worker; ToolError when the page fails or takes too long."""
        if self._closed:
            raise ToolError("the bot is shutting down: pages are no longer read")
        loop = asyncio.get_running_loop()
        meta = (body.url, body.host, body.media_type, body.charset, max_chars)
        # A fetch cancelled meanwhile (its deadline) does not stop the job once a thread has
        # it: the job finishes or hits the time cap on its own, and the worker stays usable.
        answer = await loop.run_in_executor(self._threads, self._job, meta, body.data)
        if answer[0] == "ok":
            _, title, text, truncated, published = answer
            return Page(body.url, title, text, truncated, published)
        if answer[0] == "failed":
            log.warning("extraction of %s failed: %s", body.url, answer[1])
            raise ToolError(f"could not extract text from {body.url} ({answer[1]})")
        raise ToolError(answer[1])

    def _ready(self) -> _Worker:
        """This thread's worker if it is alive, else a new one (started and warmed here)."""
        worker: _Worker | None = getattr(self._mine, "worker", None)
        if worker is not None and worker.alive():
            return worker
        if self._closed:
            raise ToolError("the bot is shutting down: pages are no longer read")
        if worker is not None:
            self._retire(worker, kill=True)
        new = _Worker()
        with self._lock:
            closed = self._closed
            if not closed:
                self._live.add(new)
        if closed:  # closed while it started: `aclose` did not see it, so stop it here
            new.stop(kill=True)
            raise ToolError("the bot is shutting down: pages are no longer read")
        self._mine.worker = new
        return new

    def _job(self, meta: tuple[Any, ...], data: bytes | bytearray) -> Any:
        for _ in range(2):  # a worker that died while idle is not the page's fault
            worker = self._ready()
            try:
                answer = worker.call(meta, data, self.timeout_s)
                break
            except _Crashed:
                self._retire(worker, kill=True)
        else:
            return ("refused", f"could not extract text from {meta[0]}: the extractor crashed")
        if answer is None:
            self._retire(worker, kill=True)
            cap = f"{self.timeout_s:g}"
            return ("refused", f"refused: {meta[0]} took more than {cap} s to extract")
        return answer

    def _retire(self, worker: _Worker, *, kill: bool) -> None:
        with self._lock:
            self._live.discard(worker)
        if getattr(self._mine, "worker", None) is worker:
            self._mine.worker = None
        worker.stop(kill=kill)

    async def aclose(self) -> None:
        with self._lock:
            self._closed = True
            workers = list(self._live)
        await asyncio.gather(*(asyncio.to_thread(self._retire, w, kill=False) for w in workers))
        self._threads.shutdown(wait=False, cancel_futures=True)
