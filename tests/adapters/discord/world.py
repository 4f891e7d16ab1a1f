"""The Discord tests' world: a fake Discord (REST and gateway), a real store and runs service, a
scripted engine, and the real bot started by `serve_discord`, as the CLI starts it. Tests act as
Discord does, by sending gateway events, and read what reached the fake REST API."""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.adapters.discord.app import serve_discord
from bot.config import Settings
from bot.runs.manager import RunManager
from bot.runs.quota import Quota, QuotaLimits
from bot.store.runs import Store
from tests.adapters.scripted_engine import ScriptedEngine
from tests.fakes.discord_api import DiscordCall, FakeDiscord
from tests.fakes.discord_components import FILE, IS_COMPONENTS_V2, TEXT_DISPLAY, walk

Json = Any


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
        quota: QuotaLimits | None = None,
        **settings: Any,
    ) -> DiscordBot:
        store = await Store.open(db)
        engine = engine or ScriptedEngine(hold_recovery=True)
        admits = Quota(store, quota) if quota else None
        runs = RunManager(store, engine, max_concurrent=max_concurrent, quota=admits)
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

    async def command(self, person: Json, sub: str, **options: str | int) -> str:
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


async def interrupted_run(fake: FakeDiscord, db_path: Path) -> tuple[str, Json]:
    """A run started by one bot on `db_path`, which stops while the run researches (left
    interrupted, for the next bot on that database): its id and its status message."""
    first = await DiscordBot.start(fake, db_path)
    run_id, message = await first.research("Acme Robotics")
    assert first.engine is not None
    await first.engine.parked(run_id).wait()
    await first.stop()
    return run_id, message


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
        if isinstance(body, dict) and ({"content", "embeds", "components"} & set(body)):
            bodies.append(body)
    return bodies


def is_card(message: Json) -> bool:
    """A Components V2 message: no content, no embeds, everything in its components."""
    flags = int(message.get("flags") or 0)
    return (
        bool(flags & IS_COMPONENTS_V2) and not message.get("content") and not message.get("embeds")
    )


def card_text(message: Json) -> str:
    """Every text display of a card (or of a card's edit), one after the other."""
    texts = walk(message.get("components") or [])
    return "\n".join(c["content"] for c in texts if c.get("type") == TEXT_DISPLAY)


def custom_ids(message: Json) -> list[str]:
    """The card's controls a person can use (enabled buttons and selects), in order."""
    return [
        c["custom_id"]
        for c in walk(message.get("components") or [])
        if "custom_id" in c and not c.get("disabled")
    ]


def card_files(message: Json) -> list[str]:
    """The `attachment://…` files a card shows."""
    found = walk(message.get("components") or [])
    return [c["file"]["url"] for c in found if c.get("type") == FILE]
