"""The Slack front end's handlers: `/research`, its buttons and the summarize reaction on a
slack-bolt `AsyncApp`, and the listener that finishes interrupted runs in their old threads."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.base import ChatProgress
from bot.adapters.chat import FILE_REFUSED, ChatError, StatusView
from bot.adapters.commands import USAGE, Command, history_lines, parse_command
from bot.adapters.exports import Exporter
from bot.adapters.slack_export import SlackExports
from bot.adapters.slack_render import (
    ACTION_CANCEL,
    ACTION_EXPORT,
    ACTION_SUMMARIZE,
    MESSAGE_CHARS,
    clip,
    escape,
    mention,
    message_text,
    shared_report_text,
    unescape_incoming,
)
from bot.adapters.slack_sink import (
    SlackBudget,
    SlackSink,
    make_client,
    post_ephemeral,
    post_message,
    post_text,
    require_slack_settings,
    slack_errors,
    upload_file,
)
from bot.agent.i18n import language_for
from bot.agent.report import report_filename
from bot.config import Settings
from bot.domain import Origin, Request, RunRecord
from bot.errors import ConfigError, NotFoundError, RequestError
from bot.runs import RunListener, RunManager
from bot.store import Store
from bot.usage import one_workspace, period_start, usage_lines

log = logging.getLogger(__name__)

COMMAND = "/research"
HISTORY_LIMIT = 15
CANNOT_POST = (
    "I can't post in this channel. Invite me first (`/invite @research-bot`), "
    "or run `/research` in a channel I'm in."
)
TOKEN_REFUSED = (
    "Slack refused my token, so I can't post the run: an admin needs to reinstall the app. "
    "The run was cancelled."
)
FINISHED = "That run has finished."


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
    ) -> None:
        require_slack_settings(settings)
        self.client = client or make_client(settings)
        self.budget = budget or SlackBudget()
        self._runs = runs
        self._store = store
        self._edit_interval = edit_interval_s
        self._emoji = settings.summarize_emoji.strip(":")
        self._parents: dict[tuple[str, str], str] = {}
        """(channel, parent ts) -> run id, for the runs this process can still summarize."""
        self._locales: dict[tuple[str, str], str] = {}
        """(team, user) -> the user's Slack locale (`de-DE`), asked once per user."""
        exporter = Exporter(
            store, platform="slack", place="workspace", font_dir=settings.export_fonts
        )
        self._exports = SlackExports(self.client, exporter)
        secret = settings.slack_signing_secret
        self.app = AsyncApp(
            client=self.client,
            name="research-bot",
            signing_secret=secret.get_secret_value() if secret else "",
        )
        self.app.command(COMMAND)(self._on_command)
        self.app.action(ACTION_SUMMARIZE)(self._on_summarize)
        self.app.action(ACTION_CANCEL)(self._on_cancel)
        self.app.action(ACTION_EXPORT)(self._exports.on_select)
        self.app.event("reaction_added")(self._on_reaction)

    def listener_for(self, run: RunRecord) -> RunListener | None:
        """For `RunManager.recover`: a Slack run finishes in its old thread; others are not ours."""
        if run.origin.platform != "slack" or not run.origin.channel:
            return None
        return self._progress(
            run.origin,
            run.topic,
            run.mode.value,
            run_id=run.run_id,
            thread=run.origin.thread,
            resumed=True,
        )

    async def recover(self) -> list[str]:
        """Finish the Slack runs a previous process left unfinished; returns their ids."""
        return await self._runs.recover(self.listener_for)

    async def check_token(self) -> None:
        try:
            await self.client.auth_test()
        except SlackApiError as error:
            raise ConfigError(
                f"Slack refused SLACK_BOT_TOKEN ({error.response.get('error')}): "
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
        respond: AsyncRespond | None = None,
    ) -> ChatProgress:
        async def unreachable(run: RunRecord, error: ChatError) -> None:
            self._runs.cancel(run.run_id)
            if respond is not None:
                text = TOKEN_REFUSED if error.auth else CANNOT_POST
                await respond(text=text, response_type="ephemeral")

        sink = SlackSink(
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
        return ChatProgress(
            sink,
            view,
            limiter=self.budget.updates(origin.workspace),
            min_edit_interval_s=self._edit_interval,
        )

    async def _on_command(
        self, ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond
    ) -> None:
        # Only parsing (no I/O) before the ack: Slack gives us 3 seconds.
        try:
            parsed = parse_command(unescape_incoming(command.get("text", "")))
        except RequestError as error:
            await ack(text=escape(str(error)), response_type="ephemeral")
            return
        if parsed.kind == "help":
            await ack(text=escape(USAGE), response_type="ephemeral")
            return
        await ack()
        try:
            await self._run_command(parsed, command, respond)
        except Exception:
            # The adapter's edge: log it, and tell the person something they can act on.
            log.exception("slack: /research %s failed", parsed.kind)
            await respond(
                text="Something went wrong on my side. Try again in a minute.",
                response_type="ephemeral",
            )

    async def _run_command(
        self, parsed: Command, command: dict[str, Any], respond: AsyncRespond
    ) -> None:
        team = str(command.get("team_id", ""))
        if parsed.kind == "history":
            runs = await self._store.list_runs(
                platform="slack", workspace=team, limit=HISTORY_LIMIT
            )
            lines = "\n".join(escape(line) for line in history_lines(runs))
            await respond(
                text=clip(f"*Recent research in this workspace*\n{lines}", MESSAGE_CHARS),
                response_type="ephemeral",
            )
        elif parsed.kind == "usage":
            await self._usage(team, parsed.days, respond)
        elif parsed.kind == "show":
            await self._show(parsed.run_id, command, respond)
        elif parsed.kind == "export":
            await self._exports.here(parsed, command, respond)
        else:
            await self._start(parsed, command, respond)

    async def _start(self, parsed: Command, command: dict[str, Any], respond: AsyncRespond) -> None:
        team = str(command.get("team_id", ""))
        origin = Origin(
            platform="slack",
            workspace=team,
            channel=command["channel_id"],
            user=command["user_id"],
            user_name=command.get("user_name", ""),
        )
        progress = self._progress(origin, parsed.topic, parsed.mode.value, respond=respond)
        locale = await self._locale(team, origin.user)
        request = Request(
            topic=parsed.topic,
            mode=parsed.mode,
            origin=origin,
            depth=parsed.depth,
            language=language_for(locale, parsed.topic),
        )
        try:
            record = await self._runs.submit(request, progress)
        except RequestError as error:  # a daily budget or hourly limit said no
            await respond(text=escape(str(error)), response_type="ephemeral")
            return
        progress.view.run_id = record.run_id
        log.info(
            "slack: run %s started by %s in %s/%s",
            record.run_id,
            origin.user,
            team,
            origin.channel,
        )

    async def _usage(self, team: str, days: int, respond: AsyncRespond) -> None:
        since = period_start(self._store.now(), days)
        rows = await self._store.usage(since=since, platform="slack", workspace=team)
        found = one_workspace(rows, since=since.date(), days=days)
        lines = "\n".join(escape(line) for line in usage_lines(found, days=days))
        await respond(
            text=clip(f"*Research spend in this workspace*\n{lines}", MESSAGE_CHARS),
            response_type="ephemeral",
        )

    async def _locale(self, team: str, user: str) -> str | None:
        """The user's locale from `users.info` (cached); None when Slack will not say (an
        install without `users:read`): the topic's language decides then."""
        key = (team, user)
        if key not in self._locales:
            try:
                with slack_errors():
                    info = await self.client.users_info(user=user, include_locale=True)
            except ChatError as error:
                log.warning("slack: no locale for %s: %s", user, error)
                return None
            self._locales[key] = str((info.get("user") or {}).get("locale") or "")
        return self._locales[key] or None

    async def _show(self, run_id: str, command: dict[str, Any], respond: AsyncRespond) -> None:
        """Re-post a past report of this workspace here: its TL;DR, and the file in the thread."""
        try:
            record = await self._store.get_run(
                run_id, platform="slack", workspace=str(command.get("team_id", ""))
            )
        except NotFoundError:
            await respond(
                text=f"No run `{escape(run_id)}` in this workspace. "
                "`/research history` lists them.",
                response_type="ephemeral",
            )
            return
        found = await self._store.report(record.run_id)
        if found is None:
            await respond(
                text=f"Run `{record.run_id}` has no report ({record.status.value}).",
                response_type="ephemeral",
            )
            return
        report, markdown = found
        channel = command["channel_id"]
        text = shared_report_text(command["user_id"], record.run_id, report.title, report.tldr)
        try:
            await self._share(channel, text, report_filename(record), markdown)
        except ChatError as error:
            log.warning("slack: cannot re-post %s in %s: %s", record.run_id, channel, error)
            await respond(text=CANNOT_POST, response_type="ephemeral")

    async def _share(self, channel: str, text: str, filename: str, markdown: str) -> None:
        """`text`, then the report file in its thread, or the report as messages if the file is
        refused. Raises ChatError when Slack takes neither."""
        with slack_errors():
            ts = await post_message(self.client, self.budget, channel, text=text)
        try:
            with slack_errors():
                await upload_file(self.client, channel, ts, filename, markdown)
        except ChatError as error:
            log.warning("slack: report file refused in %s: %s", channel, error)
            note = message_text(FILE_REFUSED.format(reason=error.reason))
            with slack_errors():
                await post_message(self.client, self.budget, channel, text=note, thread_ts=ts)
                await post_text(self.client, self.budget, channel, ts, markdown)

    async def _on_summarize(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        run_id, team, user, channel = _action_context(body)
        record = self._runs.get_active(run_id)
        if record is None or record.origin.workspace != team or not self._runs.summarize(run_id):
            await self._ephemeral(channel, user, FINISHED)

    async def _on_cancel(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        run_id, team, user, channel = _action_context(body)
        record = self._runs.get_active(run_id)
        if record is None or record.origin.workspace != team:
            await self._ephemeral(channel, user, FINISHED)
        elif record.origin.user != user:
            await self._ephemeral(
                channel, user, f"Only {mention(record.origin.user)} can cancel this run."
            )
        else:
            self._runs.cancel(run_id)

    async def _on_reaction(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        item = event.get("item") or {}
        if event.get("reaction") != self._emoji or item.get("type") != "message":
            return
        run_id = self._parents.get((str(item.get("channel")), str(item.get("ts"))))
        event_id = body.get("event_id")
        if run_id is None or not event_id:
            return
        # Slack retries events it thinks we missed: each one acts once, even across restarts.
        if not await self._store.claim(f"slack:{event_id}"):
            log.info("slack: event %s already handled", event_id)
            return
        self._runs.summarize(run_id)

    async def _ephemeral(self, channel: str, user: str, text: str) -> None:
        await post_ephemeral(self.client, channel, user, text)


def _action_context(body: dict[str, Any]) -> tuple[str, str, str, str]:
    """(run id, team, user, channel) of a button press."""
    user = body.get("user") or {}
    team = (body.get("team") or {}).get("id") or user.get("team_id", "")
    return (
        str(body["actions"][0].get("value", "")),
        str(team),
        str(user.get("id", "")),
        str((body.get("channel") or {}).get("id", "")),
    )
