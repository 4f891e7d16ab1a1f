"""The `research-bot` command as a subprocess, for tests that run it the way a person does."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
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

    async def start(
        self, *args: str, max_file_bytes: int | None = None, **options: Any
    ) -> asyncio.subprocess.Process:
        """`max_file_bytes`: cap every file the command writes (a full disk). Set by a small
        Python that then execs the command, never by `preexec_fn`: forking a process that runs
        threads (xdist's, asyncio's) and running Python in the child can deadlock it."""
        limit = [] if max_file_bytes is None else [*_LIMITED, str(max_file_bytes)]
        return await asyncio.create_subprocess_exec(
            *limit,
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


_LIMITED = [
    sys.executable,
    "-c",
    "import os, resource, sys; cap = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap)); os.execv(sys.argv[2], sys.argv[2:])",
]
"""Python ignores SIGXFSZ, so a write past the cap fails with EFBIG, as on a full disk."""


async def wait_for_line(stream: asyncio.StreamReader, text: str) -> None:
    while True:
        line = await stream.readline()
        assert line, f"the process ended before printing {text!r}"
        if text in line.decode():
            return


async def eventually(check: Callable[[], Awaitable[bool]], *, within_s: float = 10.0) -> None:
    """Wait until a check holds: a condition polled, for state with no change feed to wait on
    (another process's database), never an assumption about how long something takes."""
    async with asyncio.timeout(within_s):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
