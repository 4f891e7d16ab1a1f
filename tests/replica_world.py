"""Replicas of `research-bot serve slack` in HTTP mode, started as real processes on free
ports, each ready once it logs that it serves; for the multi-replica tests and bench/replicas.py."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from tests.fakes.slack_api import SlackSender
from tests.process import Cli


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Replica:
    process: asyncio.subprocess.Process
    sender: SlackSender
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    lines: list[str] = field(default_factory=list)

    async def drain(self) -> None:
        """Read its log as it comes (a full pipe would stall it); ready once it serves."""
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            text = line.decode(errors="replace")
            self.lines.append(text)
            if "serving HTTP" in text:
                self.ready.set()


@contextlib.asynccontextmanager
async def replicas(cli: Cli, count: int, secret: str) -> AsyncIterator[list[Replica]]:
    started: list[Replica] = []
    drains = []
    try:
        for _ in range(count):
            port = free_port()
            process = await cli.start("serve", "slack", "--port", str(port))
            url = f"http://127.0.0.1:{port}/slack/events"
            started.append(Replica(process, SlackSender(url, secret)))
            drains.append(asyncio.create_task(started[-1].drain()))
        try:
            async with asyncio.timeout(90):
                await asyncio.gather(*(replica.ready.wait() for replica in started))
        except TimeoutError:
            logs = "\n".join("".join(replica.lines[-20:]) for replica in started)
            raise AssertionError(f"a replica did not start serving:\n{logs}") from None
        yield started
    finally:
        for replica in started:
            if replica.process.returncode is None:
                replica.process.send_signal(signal.SIGTERM)
        for replica in started:
            await replica.process.wait()
        for drain in drains:
            drain.cancel()
