"""The Slack front end's handlers on a slack-bolt `AsyncApp`: `/research`, its buttons (the
choice of company's in bot/adapters/slack/choice.py), the summarize reaction, a person pressing
Slack's stop button, mentions and DMs to the app (bot/adapters/slack/mentions.py), the agent
view (bot/adapters/slack/assistant.py) and whatever none of them takes
(bot/adapters/slack/ingress.py); and the listeners that finish interrupted runs and follow-ups
in their old threads."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.commands import WATCH_KINDS, Command, parse_command, topic_command
from bot.adapters.chat.progress import ChatProgress
from bot.adapters.chat.service import Action, Caller, CommandService, Refused, Reply
from bot.adapters.chat.sink import ChatError, StatusView
from bot.adapters.chat.watches import WatchCommands
from bot.adapters.slack.assistant import AssistantSink, SlackAssistant
from bot.adapters.slack.choice import ACTION_CHOOSE, ACTION_REFINE, SlackChoices
from bot.adapters.slack.client import (
    SlackBudget,
    make_client,
    post_ephemeral,
    require_slack_settings,
    slack_errors,
)
from bot.adapters.slack.export import SlackExports
from bot.adapters.slack.followup import SlackThreads
from bot.adapters.slack.ingress import Unoffered, on_error
from bot.adapters.slack.mentions import SlackMentions
from bot.adapters.slack.privacy import Conversations
from bot.adapters.slack.render import (
    ACTION_CANCEL,
    ACTION_EXPORT,
    ACTION_SUMMARIZE,
    unescape_incoming,
)
from bot.adapters.slack.search import SlackSearch
from bot.adapters.slack.service import (
    PLATFORM,
    Locales,
    action_caller,
    answer_watch,
    command_caller,
    post_notice,
    reply_text,
    share_report,
)
from bot.adapters.slack.sink import SlackSink
from bot.adapters.slack.stream import StreamingProgress, StreamOptions, slack_progress
from bot.adapters.slack.summarize import SummarizeEvents
from bot.config import Settings
from bot.domain import Origin, RunRecord, RunStatus
from bot.errors import ConfigError, RequestError
from bot.runs.followups import FollowUps
from bot.runs.manager import RunListener, RunManager
from bot.store.runs import Store

log = logging.getLogger(__name__)

COMMAND = "/research"
STARTS_AT_ONCE = 2
"""Runs a burst of `/research` commands starts at once after their acks: the others wait, so
that the event loop acks every command of the burst first (bench/slack_ack.py: with every
start at once, the p99 ack took 1.8-2.3x a bare bolt app's; two at a time, 1.1-1.2x)."""
CANNOT_POST = (
    "I can't post in this channel. Invite me first (`/invite @research-bot`), "
    "or run `/research` in a channel I'm in."
)
TOKEN_REFUSED = (
    "Slack refused my token, so I can't post the run: an admin needs to reinstall the app. "
    "The run was cancelled."
)
Tell = Callable[[str], Awaitable[Any]]
"""Says a short private note (safe mrkdwn) to the person who started the run."""


class SlackFrontEnd:
    """The Slack app of this process: handlers, rate budget, and the parent messages of its runs."""

    def __init__(
        self,
        settings: Settings,
        runs: RunManager,
        store: Store,
        *,
        client: AsyncWebClient | None = None,
        budget: SlackBudget | None = None,
        edit_interval_s: float = 3.0,
        followups: FollowUps | None = None,
        locale_wait_s: float = 3.0,
    ) -> None:
        require_slack_settings(settings)
        self.client = client or make_client(settings)
        self.budget = budget or SlackBudget()
        self._runs = runs
        self._store = store
        self._edit_interval = edit_interval_s
        self._starting = asyncio.Semaphore(STARTS_AT_ONCE)
        self._streaming = settings.slack_streaming
        self._parents: dict[tuple[str, str], str] = {}
        """(channel, parent ts) -> run id, for the runs this process can still summarize."""
        self.locales = Locales(self.client, wait_s=locale_wait_s)
        self.conversations = Conversations(self.client, wait_s=locale_wait_s)
        self.service = CommandService(
            runs, store, platform=PLATFORM, place="workspace", font_dir=settings.export_fonts
        )
        self._exports = SlackExports(self.client, self.service)
        self._search = SlackSearch(self.client, self.service)
        self.watches = WatchCommands(runs, store, platform=PLATFORM, limit=settings.max_watches)
        secret = settings.slack_signing_secret
        self.app = AsyncApp(
            client=self.client,
            name="research-bot",
            signing_secret=secret.get_secret_value() if secret else "",
            raise_error_for_unhandled_request=True,  # answered 2xx by `on_error`, not 404
        )
        self.app.error(on_error)
        self.app.middleware(Unoffered())  # before the agent view's middleware reads payloads
        self.app.command(COMMAND)(self._on_command)
        self.app.action(ACTION_SUMMARIZE)(self._on_summarize)
        self.app.action(ACTION_CANCEL)(self._on_cancel)
        self.app.action(ACTION_EXPORT)(self._exports.on_select)
        choices = SlackChoices(self.client, self.service)
        self.app.action(ACTION_CHOOSE)(choices.on_choose)
        self.app.action(ACTION_REFINE)(choices.on_refine)
        summarize = SummarizeEvents(
            self.service, store, self._parents, emoji=settings.summarize_emoji
        )
        self.app.event("reaction_added")(summarize.on_reaction)
        self.app.event("agent_session_stopped")(summarize.on_stop)
        self.threads = SlackThreads(
            self.client,
            store,
            self.budget,
            followups or FollowUps(store, runs),
            self._parents,
            self.conversations,
        )
        mentions = SlackMentions(self, self.threads, store)
        self.app.event("app_mention")(mentions.on_mention)
        self.app.assistant(SlackAssistant(self, self.threads, store).assistant)
        self.app.event("message")(mentions.on_message)  # what the agent view left

    def listener_for(self, run: RunRecord) -> RunListener | None:
        """For a run this process did not receive: a Slack run or follow-up goes on in its
        thread; others are not ours. One that never started (claimed from the replicas' shared
        queue, or left queued by an earlier process) is shown as a new run, with its buttons;
        one that had started is only finished here, so it has none."""
        if run.origin.platform != PLATFORM or not run.origin.channel:
            return None
        if run.parent_run_id is not None:
            return self.threads.listener(run.origin)
        return self._progress(
            run.origin,
            run.topic,
            run.mode.value,
            run_id=run.run_id,
            thread=run.origin.thread,
            resumed=run.status is not RunStatus.QUEUED,
        )

    async def recover(self) -> list[str]:
        """Finish the Slack runs a previous process left unfinished; returns their ids. From
        then on the runs service brings this front end the runs of its watches."""
        recovered = await self._runs.recover(self.listener_for, PLATFORM)
        self._runs.front_ends.attach(PLATFORM, self.listener_for, self.post_notice)
        return recovered

    async def post_notice(self, origin: Origin, text: str) -> None:
        await post_notice(self.client, self.budget, origin, text)

    async def check_token(self) -> None:
        try:
            with slack_errors():
                await self.client.auth_test()
        except ChatError as error:
            if not isinstance(error.__cause__, SlackApiError):
                raise ConfigError(
                    f"Slack's Web API at {self.client.base_url} cannot be reached "
                    f"({error.reason}): check the network, or SLACK_API_URL if it is set."
                ) from None
            raise ConfigError(
                f"Slack refused SLACK_BOT_TOKEN ({error.reason}): "
                "reinstall the app and copy its Bot User OAuth Token."
            ) from None

    def _progress(
        self,
        origin: Origin,
        topic: str,
        mode: str,
        *,
        run_id: str = "",
        thread: str = "",
        resumed: bool = False,
        tell: Tell | None = None,
    ) -> ChatProgress | StreamingProgress:
        """The listener of one run: in a new parent message and its thread, or in a `thread` of
        a DM with the app (runs there are only ever started in a thread of the person's own)."""

        async def unreachable(run: RunRecord, error: ChatError) -> None:
            self._runs.cancel(run.run_id)
            if tell is not None:
                await tell(TOKEN_REFUSED if error.auth else CANNOT_POST)

        in_agent_view = origin.channel.startswith("D") and bool(thread)
        sink = (AssistantSink if in_agent_view else SlackSink)(
            self.client,
            self._store,
            self.budget,
            team=origin.workspace,
            channel=origin.channel,
            thread=thread,
            parents=self._parents,
            resumed=resumed,
            on_unreachable=unreachable,
        )
        view = StatusView(run_id=run_id, topic=topic, mode=mode, requester=origin.user)
        return slack_progress(
            self.client,
            sink,
            view,
            store=self._store,
            budget=self.budget,
            origin=origin,
            options=StreamOptions(mode=self._streaming),
            edit_interval_s=self._edit_interval,
        )

    async def _on_command(
        self, ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond
    ) -> None:
        # Only parsing (no I/O) before the ack: Slack gives us 3 seconds.
        try:
            parsed = parse_command(unescape_incoming(command.get("text", "")))
        except RequestError as error:
            await ack(text=reply_text(Reply.of(error)), response_type="ephemeral")
            return
        if parsed.kind == "help":
            await ack(text=reply_text(self.service.help()), response_type="ephemeral")
            return
        await ack()
        try:
            await self._run_command(parsed, command_caller(command), respond)
        except RequestError as error:
            await respond(text=reply_text(Reply.of(error)), response_type="ephemeral")
        except Exception:
            # The adapter's edge: log it, and tell the person something they can act on.
            log.exception("slack: /research %s failed", parsed.kind)
            await respond(
                text="Something went wrong on my side. Try again in a minute.",
                response_type="ephemeral",
            )

    async def _run_command(self, parsed: Command, caller: Caller, respond: AsyncRespond) -> None:
        """After the ack. Raises RequestError with what to tell the person privately."""
        if parsed.kind == "history":
            reply = await self.service.history(caller)
            await respond(text=reply_text(reply), response_type="ephemeral")
        elif parsed.kind == "search":
            await self._search.answer(caller, parsed.words, respond)
        elif parsed.kind == "usage":
            reply = await self.service.usage(caller, parsed.days)
            await respond(text=reply_text(reply), response_type="ephemeral")
        elif parsed.kind == "show":
            await self._show(caller, parsed.run_id, respond)
        elif parsed.kind == "export":
            await self._exports.here(caller, parsed, respond)
        elif parsed.kind in WATCH_KINDS:
            text = await answer_watch(self.watches, self.locales, caller, parsed)
            await respond(text=text, response_type="ephemeral")
        else:
            await self._start(caller, parsed, respond)

    async def _start(self, caller: Caller, parsed: Command, respond: AsyncRespond) -> None:
        async def tell(text: str) -> None:
            await respond(text=text, response_type="ephemeral")

        await self._submit(caller, parsed, tell=tell)

    async def research(self, caller: Caller, text: str, *, thread: str = "") -> RunRecord:
        """Start the research a message asks for (`deep Acme`): a new run message in the
        caller's channel, or the run shown in an agent-view `thread`. Raises RequestError with
        what to tell the person."""
        record = await self._submit(caller, topic_command(text), thread=thread)
        if thread:
            # The thread is the run's from now on: a second message there is a follow-up.
            self._parents[(caller.channel, thread)] = record.run_id
        return record

    async def _submit(
        self, caller: Caller, wanted: Command, *, thread: str = "", tell: Tell | None = None
    ) -> RunRecord:
        progress = self._progress(
            caller.origin(), wanted.topic, wanted.mode.value, thread=thread, tell=tell
        )
        # A burst of requests: their acks first, their runs' starts (a locale lookup, the
        # store) two at a time.
        async with self._starting:
            caller = await self._settled(caller)
            record = await self.service.start(caller, wanted, progress)
        progress.view.run_id = record.run_id
        return record

    async def _settled(self, caller: Caller) -> Caller:
        """The caller with their locale, and whether their conversation is private where the
        payload did not say, both asked of Slack side by side."""
        if caller.private is None:
            locale, private = await asyncio.gather(
                self.locales.of(caller), self.conversations.private(caller.channel)
            )
        else:
            locale, private = await self.locales.of(caller), caller.private
        return caller.model_copy(update={"locale": locale, "private": private})

    async def _show(self, caller: Caller, run_id: str, respond: AsyncRespond) -> None:
        """Re-post a past report of this workspace here: its TL;DR, and the file in the thread."""
        shared = await self.service.show(caller, run_id)
        try:
            await share_report(self.client, self.budget, caller.channel, shared)
        except ChatError as error:
            log.warning("slack: cannot re-post %s in %s: %s", run_id, caller.channel, error)
            await respond(text=CANNOT_POST, response_type="ephemeral")

    async def _on_summarize(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await self._press(body, "summarize")

    async def _on_cancel(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await self._press(body, "cancel")

    async def _press(self, body: dict[str, Any], action: Action) -> None:
        """A run button: the run's thread shows what it did; only a refusal is said privately."""
        caller = action_caller(body)
        run_id = str(body["actions"][0].get("value", ""))
        try:
            await self.service.press(caller, action, run_id)
        except Refused as refused:
            text = reply_text(refused.reply)
            await post_ephemeral(self.client, caller.channel, caller.user, text)
