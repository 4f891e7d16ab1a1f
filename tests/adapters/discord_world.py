"""The Discord tests' world: a fake Discord (REST and gateway), a real store and runs service, a
scripted engine, and the real bot started by `serve_discord`, as the CLI starts it. Tests act as
Discord does, by sending gateway events, and read what reached the fake REST API."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.adapters.discord_app import serve_discord
from bot.agent.control import Control
from bot.agent.events import (
    Ending,
    Event,
    Notice,
    ReportReady,
    RunFinished,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.report import Report, Section, Source
from bot.config import Settings
from bot.domain import Request
from bot.runs import RunManager
from bot.store import Store
from tests.fakes.discord_api import DiscordCall, FakeDiscord

Json = Any
TLDR = "Acme Robotics builds warehouse robots [1]."


class ScriptedEngine:
    """Research by script: one turn with a search, then it waits, on asyncio events, for Summarize,
    Cancel or `release`, and writes its report. Recovery waits for `recover_gate`. No model."""

    def __init__(self, *, tldr: str = TLDR) -> None:
        self.tldr = tldr
        self.release = asyncio.Event()
        self.recover_gate = asyncio.Event()
        self.controls: dict[str, Control] = {}
        self._parked: dict[str, asyncio.Event] = {}

    def parked(self, run_id: str) -> asyncio.Event:
        """Set once the run has searched and waits (or, recovering, waits for the gate)."""
        return self._parked.setdefault(run_id, asyncio.Event())

    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        self.controls[run_id] = control
        yield RunStarted(topic=request.topic, mode=request.mode.value)
        yield TurnStarted(turn=1)
        yield ToolCalled(
            turn=1, call_id="call1", name="web_search", input={"query": f"{request.topic} funding"}
        )
        yield ToolFinished(
            turn=1,
            call_id="call1",
            name="web_search",
            is_error=False,
            content="...",
            sources=[_source(1), _source(2)],
        )
        yield UsageRecorded(turn=1, model="claude-test", usage=_usage())
        self.parked(run_id).set()
        await _first(control.summarize_requested, control.cancel_requested, self.release)
        if control.cancel_requested.is_set():
            yield RunFinished(ending=Ending.CANCELLED, turns=1, usage=_usage())
            return
        forced = control.summarize_requested.is_set()
        if forced:
            yield Notice(message="Summarize requested: writing the report from what I have.")
        async for event in self._write_up(
            Ending.FORCED_SYNTHESIZED if forced else Ending.COMPLETED
        ):
            yield event

    async def recover(
        self, run_id: str, request: Request, history: list[Event]
    ) -> AsyncIterator[Event]:
        yield SynthesisStarted(turn=2, reason="interrupted")
        self.parked(run_id).set()
        await self.recover_gate.wait()
        async for event in self._write_up(Ending.INTERRUPTED_SYNTHESIZED):
            yield event

    async def _write_up(self, ending: Ending) -> AsyncIterator[Event]:
        yield SynthesisStarted(turn=2, reason=ending.value)
        report = Report(
            title="Acme Robotics",
            tldr=self.tldr,
            sections=[Section(heading="Overview", body="Robots [1].")],
            sources=[_source(1), _source(2)],
        )
        yield ReportReady(turn=2, report=report, synthesis=ending != Ending.COMPLETED)
        yield RunFinished(ending=ending, turns=2, usage=_usage() + _usage())


def _source(n: int) -> Source:
    return Source(url=f"https://news.example/{n}", title=f"Page {n}", snippet="...")


def _usage() -> Usage:
    return Usage(input_tokens=1_000, output_tokens=200, cost_usd=0.01)


async def _first(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def discord_settings(fake: FakeDiscord, **more: Any) -> Settings:
    return Settings.from_mapping(
        {"DISCORD_TOKEN": fake.token, "DISCORD_API_URL": fake.api_url, **more}
    )


@dataclass
class DiscordBot:
    """One bot process: `serve_discord` running against the fake, with its store and runs."""

    fake: FakeDiscord
    store: Store
    runs: RunManager
    engine: ScriptedEngine | None
    task: asyncio.Task[None]

    @classmethod
    async def start(
        cls,
        fake: FakeDiscord,
        db: Path,
        *,
        engine: ScriptedEngine | None = None,
        max_concurrent: int = 4,
        **settings: Any,
    ) -> DiscordBot:
        store = await Store.open(db)
        engine = engine or ScriptedEngine()
        runs = RunManager(store, engine, max_concurrent=max_concurrent)
        return await cls.serve(fake, store, runs, engine, **settings)

    @classmethod
    async def serve(
        cls,
        fake: FakeDiscord,
        store: Store,
        runs: RunManager,
        engine: ScriptedEngine | None = None,
        **settings: Any,
    ) -> DiscordBot:
        before = len(fake.identifies)
        task = asyncio.create_task(serve_discord(discord_settings(fake, **settings), runs, store))
        identified = asyncio.create_task(fake.wait_identified(before + 1))
        await asyncio.wait([task, identified], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            identified.cancel()
            task.result()  # serve_discord ended before connecting: raise what stopped it
        return cls(fake, store, runs, engine, task)

    async def stop(self, *, close_store: bool = True) -> None:
        """Like SIGTERM: runs still going are left interrupted, then the client closes."""
        await self.runs.shutdown()
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        if close_store:
            await self.store.close()

    async def command(self, person: Json, sub: str, **options: str) -> str:
        """`/research sub option:value`; returns the ephemeral answer the person sees."""
        return await self.interact(self.fake.guild.command(person, sub, **options))

    async def interact(self, payload: Json) -> str:
        """Send a slash command payload; returns the ephemeral answer."""
        await self.fake.dispatch("INTERACTION_CREATE", payload)
        token = re.escape(payload["token"])
        return str(
            (await self.fake.wait_for_call("POST", rf"/webhooks/\d+/{token}")).body["content"]
        )

    async def research(self, topic: str, person: Json | None = None) -> tuple[str, Json]:
        """Start a run; returns its id and its status message (as the fake keeps it)."""
        answer = await self.command(person or self.fake.guild.alice, "company", name=topic)
        found = re.search(r"run `(\w+)`", answer)
        assert found, answer
        return found[1], status_message(self.fake, found[1])

    async def press(self, person: Json, message: Json, action: str, run_id: str) -> str:
        """Press a run button on `message`; returns the ephemeral answer."""
        payload = self.fake.guild.button(person, message, f"rb:{action}:{run_id}")
        await self.fake.dispatch("INTERACTION_CREATE", payload)
        call = await self.fake.wait_for_call("POST", rf"/interactions/{payload['id']}/.+")
        return str(call.body["data"]["content"])


def status_message(fake: FakeDiscord, run_id: str) -> Json:
    """The run's status message as it is now, while it still has its buttons."""
    wanted = f"rb:summarize:{run_id}"
    return next(m for m in fake.messages.values() if wanted in str(m["components"]))


def thread_posts(fake: FakeDiscord, thread_id: str) -> list[DiscordCall]:
    return fake.find("POST", rf"/channels/{thread_id}/messages")


def message_payloads(fake: FakeDiscord) -> list[Json]:
    """Every body that carried a message (channel posts and edits, followups, callback answers)."""
    bodies: list[Json] = []
    for call in fake.calls:
        body = call.body
        if call.path.endswith("/callback"):
            body = body.get("data") if body.get("type") in (4, 7) else None
        if isinstance(body, dict) and ("content" in body or "embeds" in body):
            bodies.append(body)
    return bodies
