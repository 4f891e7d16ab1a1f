"""The `research-bot` command as a subprocess, for tests that run it the way a person does."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class Cli:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        # Only what the bot needs: no key or setting leaks in from the machine running the tests.
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(cwd),
            "PYTHONPATH": str(ROOT),
            # A fault test caps files at 1 KiB: a .pyc it cut short would break later subprocesses.
            "PYTHONDONTWRITEBYTECODE": "1",
            # A child that hangs is sent SIGABRT: this makes it print every thread's stack first.
            "PYTHONFAULTHANDLER": "1",
            **env,
        }
        self.nice = 0
        """Added to each command's niceness: a test that starts many at once sets it, so the
        tests on the other xdist worker keep their share of the two cores (thirty processes
        at the same priority would leave them a sixteenth of one, past their timeouts)."""

    async def start(
        self, *args: str, max_file_bytes: int | None = None, **options: Any
    ) -> asyncio.subprocess.Process | Forked:
        """`max_file_bytes`: cap every file the command writes (a full disk). A command is
        forked from the fork server (`tests/forkserver.py`), whose SDKs are already imported;
        one that measures its own imports (`PYTHONPROFILEIMPORTTIME`) starts from nothing."""
        if not options and "PYTHONPROFILEIMPORTTIME" not in self.env:
            return await _server().start(
                list(args), self.env, self.cwd, max_file_bytes=max_file_bytes, nice=self.nice
            )
        # The cap and the niceness are set by a small Python that then execs the command,
        # never by `preexec_fn`: forking a process that runs threads (xdist's, asyncio's) and
        # running Python in the child can deadlock it.
        cap = -1 if max_file_bytes is None else max_file_bytes
        settle = [] if cap < 0 and not self.nice else [*_SETTLE, str(self.nice), str(cap)]
        return await asyncio.create_subprocess_exec(
            *settle,
            sys.executable,
            "-m",
            "bot",
            *args,
            cwd=self.cwd,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            **options,
        )

    async def run(self, *args: str, within_s: float = 25.0, **options: Any) -> tuple[int, str, str]:
        """Run the command to its end; one that does not end within `within_s` fails the test
        with its threads' stacks (inside pytest's own timeout, which would show only ours)."""
        process = await self.start(*args, **options)
        try:
            async with asyncio.timeout(within_s):
                out, err = await process.communicate()
        except TimeoutError:
            process.send_signal(signal.SIGABRT)
            _, err = await process.communicate()
            stacks = err.decode(errors="replace")[-6000:]
            message = f"`{' '.join(args)}` still ran after {within_s:g} s:\n{stacks}"
            raise AssertionError(message) from None
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()


class Forked:
    """A command forked by the fork server: the part of `asyncio.subprocess.Process` the
    tests use. Its return code comes from the server, its parent."""

    def __init__(
        self,
        pid: int,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        conn: socket.socket,
        received: bytes,
    ) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._ended = asyncio.get_running_loop().create_task(self._wait_for_end(conn, received))

    async def _wait_for_end(self, conn: socket.socket, received: bytes) -> int:
        """`received`: what the server said after the pid, if anything."""
        loop = asyncio.get_running_loop()
        try:
            while not received.endswith(b"\n"):
                chunk = await loop.sock_recv(conn, 64)
                if not chunk:
                    raise AssertionError(f"the fork server lost process {self.pid}")
                received += chunk
        finally:
            conn.close()
        self.returncode = int(received)
        return self.returncode

    async def wait(self) -> int:
        return await asyncio.shield(self._ended)

    async def communicate(self) -> tuple[bytes, bytes]:
        out, err, _ = await asyncio.gather(self.stdout.read(), self.stderr.read(), self.wait())
        return out, err

    def send_signal(self, number: int) -> None:
        if self.returncode is None and not self._ended.done():
            # It may have ended a moment ago, its end not yet told: as asyncio, no error then.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _ForkServer:
    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="research-bot-forks-")
        self.path = os.path.join(self._folder, "socket")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.forkserver", self.path],
            cwd=ROOT,
            env={"PATH": os.environ.get("PATH", ""), "HOME": self._folder, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self._process.stdout is not None
        ready = self._process.stdout.readline()
        assert ready == b"ready\n", f"the fork server did not start: {ready!r}"
        atexit.register(self.stop)

    def stop(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()  # it ends when its input does
        self._process.wait(timeout=10)
        shutil.rmtree(self._folder, ignore_errors=True)

    async def start(
        self,
        args: list[str],
        env: dict[str, str],
        cwd: Path,
        *,
        max_file_bytes: int | None,
        nice: int,
    ) -> Forked:
        loop = asyncio.get_running_loop()
        pipes = [os.pipe() for _ in range(2)]
        stdin = os.open(os.devnull, os.O_RDONLY)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            header = {
                "args": args,
                "env": env,
                "cwd": str(cwd),
                "max_file_bytes": max_file_bytes,
                "nice": nice,
            }
            socket.send_fds(conn, [json.dumps(header).encode()], [stdin, pipes[0][1], pipes[1][1]])
        finally:
            for fd in (stdin, pipes[0][1], pipes[1][1]):
                os.close(fd)
        received = b""
        while b"\n" not in received:
            chunk = conn.recv(64)
            assert chunk, "the fork server did not fork"
            received += chunk
        pid, _, after = received.partition(b"\n")
        conn.setblocking(False)
        readers = []
        for read_end, _ in pipes:
            reader = asyncio.StreamReader(limit=2**16, loop=loop)
            await loop.connect_read_pipe(
                lambda reader=reader: asyncio.StreamReaderProtocol(reader, loop=loop),
                os.fdopen(read_end, "rb", 0),
            )
            readers.append(reader)
        return Forked(int(pid), readers[0], readers[1], conn, after)


_FORK_SERVER: _ForkServer | None = None


def _server() -> _ForkServer:
    """This test process's fork server, started when a test first runs a command."""
    global _FORK_SERVER
    if _FORK_SERVER is None:
        _FORK_SERVER = _ForkServer()
    return _FORK_SERVER


_SETTLE = [
    sys.executable,
    "-c",
    "import os, resource, sys; nice, cap = int(sys.argv[1]), int(sys.argv[2]); os.nice(nice); "
    "cap < 0 or resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap)); "
    "os.execv(sys.argv[3], sys.argv[3:])",
]
"""Arguments: the niceness to add, then the file size cap (-1: none). Python ignores SIGXFSZ,
so a write past the cap fails with EFBIG, as on a full disk."""


async def wait_for_line(stream: asyncio.StreamReader, text: str) -> None:
    while True:
        line = await stream.readline()
        assert line, f"the process ended before printing {text!r}"
        if text in line.decode():
            return


async def eventually(
    check: Callable[[], Awaitable[bool]],
    *,
    within_s: float = 10.0,
    every_s: float = 0.01,
    seen: Callable[[], object] | None = None,
) -> None:
    """Wait until a check holds: a condition polled, for state with no change feed to wait on
    (another process's database), never an assumption about how long something takes. When it
    does not hold in time, the failure says what `seen` last saw."""
    try:
        async with asyncio.timeout(within_s):
            while not await check():  # noqa: ASYNC110
                await asyncio.sleep(every_s)
    except TimeoutError:
        last = f"; last seen: {seen()!r}" if seen is not None else ""
        raise AssertionError(f"the check did not hold within {within_s} s{last}") from None
