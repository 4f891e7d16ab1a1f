"""Replicas of `research-bot serve slack` in HTTP mode, started as real processes on free
ports, each ready once it logs that it serves; for the multi-replica tests and bench/replicas.py."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.slack_api import SlackSender
from tests.process import Cli

STOP_WITHIN_S = 30.0
"""The deploy's grace period (docker-compose.yml, fly.toml): `serve` abandons a stop that takes
longer than its own `STOP_WITHIN_S` (25 s), so one still running at 30 s is stuck."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Replica:
    process: asyncio.subprocess.Process
    sender: SlackSender
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once it serves, or once its log ends (it ended without serving)."""
    lines: list[str] = field(default_factory=list)

    async def drain(self) -> None:
        """Read its log as it comes (a full pipe would stall it); ready once it serves."""
        assert self.process.stderr is not None
        try:
            while line := await self.process.stderr.readline():
                text = line.decode(errors="replace")
                self.lines.append(text)
                if "serving HTTP" in text:
                    self.ready.set()
                    self.settled.set()
        finally:
            self.settled.set()


class Replicas(list[Replica]):
    """The replicas started so far; `start` adds more to a running set, each stopped with the
    rest when the set is."""

    def __init__(self, cli: Cli, secret: str, **options: Any) -> None:
        """`options` go to `Cli.start`: any makes each replica a fresh interpreter rather than
        a fork of a warm one (a benchmark that reads the process's own memory)."""
        super().__init__()
        self._cli = cli
        self._secret = secret
        self._options = options
        self._launched: list[Replica] = []
        """Every one started, serving or not: all stopped with the set."""
        self._drains: list[asyncio.Task[None]] = []

    async def start(self, count: int = 1) -> list[Replica]:
        """`count` more replicas, returned once each serves. One that ends first, its port
        taken by another process between the probe and its bind, is started on another."""
        new: list[Replica] = []
        for _ in range(3):
            trying = [await self._launch() for _ in range(count - len(new))]
            try:
                async with asyncio.timeout(90):
                    await asyncio.gather(*(replica.settled.wait() for replica in trying))
            except TimeoutError:
                logs = "\n".join("".join(replica.lines[-20:]) for replica in trying)
                raise AssertionError(f"a replica did not start serving:\n{logs}") from None
            for replica in trying:
                if replica.ready.is_set():
                    new.append(replica)
                    self.append(replica)
                else:
                    await replica.process.wait()
            if len(new) == count:
                return new
        logs = "\n".join("".join(replica.lines[-20:]) for replica in trying)
        raise AssertionError(f"a replica ended before it served:\n{logs}")

    async def _launch(self) -> Replica:
        port = free_port()
        process = await self._cli.start("serve", "slack", "--port", str(port), **self._options)
        replica = Replica(
            process, SlackSender(f"http://127.0.0.1:{port}/slack/events", self._secret)
        )
        self._launched.append(replica)
        self._drains.append(asyncio.create_task(replica.drain()))
        return replica

    async def stop(self) -> None:
        """SIGTERM to each, as a deploy stops it; one still running after `STOP_WITHIN_S` fails
        the test with its threads' stacks (SIGABRT, faulthandler) instead of holding the run."""
        for replica in self._launched:
            if replica.process.returncode is None:
                replica.process.send_signal(signal.SIGTERM)
        stuck = []
        for replica in self._launched:
            try:
                async with asyncio.timeout(STOP_WITHIN_S):
                    await replica.process.wait()
            except TimeoutError:
                replica.process.send_signal(signal.SIGABRT)
                await replica.process.wait()
                stuck.append(replica)
        if stuck:  # their logs to the end: the stacks are their last lines
            ending = [
                drain for r, drain in zip(self._launched, self._drains, strict=True) if r in stuck
            ]
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):  # a child it left may hold the pipe open
                    await asyncio.gather(*ending)
        for drain in self._drains:
            drain.cancel()
        if stuck:
            logs = "\n".join("".join(replica.lines[-80:]) for replica in stuck)
            raise AssertionError(f"a replica still ran {STOP_WITHIN_S:g} s after SIGTERM:\n{logs}")


@contextlib.asynccontextmanager
async def replicas(cli: Cli, count: int, secret: str) -> AsyncIterator[Replicas]:
    started = Replicas(cli, secret)
    try:
        await started.start(count)
        yield started
    finally:
        await started.stop()
