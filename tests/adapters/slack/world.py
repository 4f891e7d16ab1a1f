"""The Slack tests' world: a fake Slack, a real store and runs service, a scripted engine, and the
real bolt app served over HTTP on 127.0.0.1 with Slack's signed requests arriving at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.adapters.slack.app import web_app
from bot.adapters.slack.client import SlackBudget
from bot.adapters.slack.front import SlackFrontEnd
from bot.config import Settings
from bot.runs.manager import RunManager
from bot.runs.quota import Quota, QuotaLimits
from bot.store.runs import Store
from tests.adapters.scripted_engine import ScriptedEngine
from tests.fakes.slack_api import FakeSlack, SlackSender

SECRET = "signing-secret-for-tests"
EDITED = {"RESEARCH_BOT_SLACK_STREAMING": "off"}
"""Settings for a world whose runs show as the edited status message (no streamed plan): for
tests about the edits themselves."""


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
    runner = web.AppRunner(web_app(front.app), access_log=None)
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
        quota: QuotaLimits | None = None,
        **settings: Any,
    ) -> SlackWorld:
        store = await Store.open(db)
        engine = engine or ScriptedEngine()
        admits = Quota(store, quota) if quota else None
        runs = RunManager(store, engine, max_concurrent=max_concurrent, quota=admits)
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
