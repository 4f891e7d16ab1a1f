"""The Slack tests' world: a fake Slack, a real store and runs service, a scripted engine, and the
real bolt app served over HTTP on 127.0.0.1 with Slack's signed requests arriving at it."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.adapters.slack_front import SlackFrontEnd
from bot.adapters.slack_sink import SlackBudget
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
from tests.fakes.slack_api import FakeSlack, SlackSender

SECRET = "signing-secret-for-tests"
CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("web_search", {"query": "Acme Robotics funding"}),
    ("read_page", {"url": "https://news.example/acme"}),
    ("web_search", {"query": "Acme Robotics customers"}),
)


class ScriptedEngine:
    """Research by script: one turn of the given tool calls, then it waits, on asyncio events,
    for Summarize or Cancel (or `release`), and writes its report. No model, no sleeps."""

    def __init__(
        self,
        *,
        calls: Sequence[tuple[str, dict[str, Any]]] = CALLS,
        tldr: str = "Acme Robotics builds warehouse robots [1].",
        count_presses: bool = False,
    ) -> None:
        self.calls = calls
        self.tldr = tldr
        self.count_presses = count_presses
        """Instead of writing up on Summarize: say "press N" each time, until Cancel."""
        self.release = asyncio.Event()
        """Lets every parked run finish as `completed`."""
        self._parked: dict[str, asyncio.Event] = {}

    def parked(self, run_id: str) -> asyncio.Event:
        """Set once the run has made its tool calls and waits."""
        return self._parked.setdefault(run_id, asyncio.Event())

    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        yield RunStarted(topic=request.topic, mode=request.mode.value)
        yield TurnStarted(turn=1)
        for n, (name, args) in enumerate(self.calls, start=1):
            yield ToolCalled(turn=1, call_id=f"call{n}", name=name, input=args)
            yield ToolFinished(
                turn=1,
                call_id=f"call{n}",
                name=name,
                is_error=False,
                content="...",
                sources=[_source(n)],
            )
        yield UsageRecorded(turn=1, model="claude-test", usage=_usage())
        self.parked(run_id).set()
        if self.count_presses:
            async for event in self._count_presses(control):
                yield event
            return
        await _first(control.summarize_requested, control.cancel_requested, self.release)
        if control.cancel_requested.is_set():
            yield RunFinished(ending=Ending.CANCELLED, turns=1, usage=_usage())
            return
        forced = control.summarize_requested.is_set()
        if forced:
            yield Notice(message="Summarize requested: writing the report from what I have.")
        async for event in self._write_up(
            2, Ending.FORCED_SYNTHESIZED if forced else Ending.COMPLETED, len(self.calls)
        ):
            yield event

    async def recover(
        self, run_id: str, request: Request, history: list[Event]
    ) -> AsyncIterator[Event]:
        found = sum(len(e.sources) for e in history if isinstance(e, ToolFinished))
        async for event in self._write_up(2, Ending.INTERRUPTED_SYNTHESIZED, found):
            yield event

    async def _count_presses(self, control: Control) -> AsyncIterator[Event]:
        presses = itertools.count(1)
        while True:
            await _first(control.summarize_requested, control.cancel_requested)
            if control.cancel_requested.is_set():
                yield RunFinished(ending=Ending.CANCELLED, turns=1, usage=_usage())
                return
            control.rearm_summarize()
            yield Notice(message=f"press {next(presses)}")

    async def _write_up(self, turn: int, ending: Ending, sources: int) -> AsyncIterator[Event]:
        yield SynthesisStarted(turn=turn, reason=ending.value)
        report = Report(
            title="Acme Robotics",
            tldr=self.tldr,
            sections=[Section(heading="Overview", body="Robots [1].")],
            sources=[_source(n) for n in range(1, sources + 1)],
        )
        yield ReportReady(turn=turn, report=report, synthesis=ending != Ending.COMPLETED)
        yield RunFinished(ending=ending, turns=turn, usage=_usage() + _usage())


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


def slack_settings(slack: FakeSlack, **more: Any) -> Settings:
    return Settings.from_mapping(
        {
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.api_url,
            **more,
        }
    )


def front_end(slack: FakeSlack, runs: RunManager, store: Store, **settings: Any) -> SlackFrontEnd:
    # A long edit interval makes throttling visible: one edit early, then only the final
    # one. Posts are not held back: the tests' channels are busier than any real one.
    return SlackFrontEnd(
        slack_settings(slack, **settings),
        runs,
        store,
        budget=SlackBudget(post_burst=100),
        edit_interval_s=60.0,
    )


async def serve(front: SlackFrontEnd, slack: FakeSlack) -> tuple[web.AppRunner, SlackSender]:
    """The bolt app over HTTP on 127.0.0.1:0, and Slack's side of the wire pointed at it."""
    runner = web.AppRunner(front.app.web_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
    return runner, SlackSender(url, SECRET, response_url=slack.response_url("cmd"))


@dataclass
class SlackWorld:
    """One bot process: store, runs service and Slack front end, served on 127.0.0.1:0."""

    slack: FakeSlack
    store: Store
    engine: ScriptedEngine
    runs: RunManager
    front: SlackFrontEnd
    sender: SlackSender
    _runner: web.AppRunner = field(repr=False)

    @classmethod
    async def start(
        cls,
        slack: FakeSlack,
        db: Path,
        *,
        engine: ScriptedEngine | None = None,
        max_concurrent: int = 4,
        **settings: Any,
    ) -> SlackWorld:
        store = await Store.open(db)
        engine = engine or ScriptedEngine()
        runs = RunManager(store, engine, max_concurrent=max_concurrent)
        front = front_end(slack, runs, store, **settings)
        runner, sender = await serve(front, slack)
        return cls(slack, store, engine, runs, front, sender, runner)

    async def stop(self) -> None:
        """Like SIGTERM: runs still going are left interrupted, for the next start to recover."""
        await self.runs.shutdown()
        await self._runner.cleanup()
        await self.store.close()

    async def research(self, topic: str, **kwargs: Any) -> tuple[str, str]:
        """Run `/research topic`; returns (run id, parent ts) once the parent message is up."""
        before = len(self.slack.calls_to("chat.postMessage"))
        status, body = await self.sender.command(topic, **kwargs)
        assert (status, body) == (200, "")
        parent = (await self.slack.wait_for("chat.postMessage", before + 1))[before]
        return button_value(parent.args["blocks"], "research_summarize"), parent.response["ts"]


def button_value(blocks: list[dict[str, Any]], action_id: str) -> str:
    """The value (run id) of a button in a message's blocks; "" when there is no such button."""
    for block in blocks:
        for element in block.get("elements", []) if block["type"] == "actions" else []:
            if element.get("action_id") == action_id:
                return str(element["value"])
    return ""
