"""Slack's side of exporting a report: the finished message's format menu (the file lands in the
run's thread) and `/research export <run id> <format>` (the file lands in the current channel).
Which run may be exported, and how, is `Exporter`'s rule; this module only says where and how."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat import ChatError
from bot.adapters.commands import Command
from bot.adapters.exports import FORMAT_LABELS, ChatExport, Exporter
from bot.adapters.slack_render import clip, escape, mention, parse_export_value
from bot.adapters.slack_sink import post_ephemeral, share_file, slack_errors
from bot.errors import ConfigError, RequestError

log = logging.getLogger(__name__)

NOTE_CHARS = 1_000
"""The comment beside an uploaded file: short, the file is the point."""
FAILED = "Something went wrong on my side. Try again in a minute."


class SlackExports:
    """Uploads exported reports for the Slack front end."""

    def __init__(self, client: AsyncWebClient, exporter: Exporter) -> None:
        self._client = client
        self._exporter = exporter

    async def on_select(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """A format chosen on a finished run's message: that file, in the run's thread."""
        await ack()
        user = body.get("user") or {}
        user_id = str(user.get("id", ""))
        team = str((body.get("team") or {}).get("id") or user.get("team_id", ""))
        channel = str((body.get("channel") or {}).get("id", ""))
        action = body["actions"][0]
        value = str((action.get("selected_option") or {}).get("value", ""))
        try:
            wanted = parse_export_value(value)
            done = await self._exporter.export(wanted.run_id, wanted.fmt, workspace=team)
            where = done.run.origin.channel or channel
            thread = done.run.origin.thread or str((body.get("message") or {}).get("ts", ""))
            note = f"{mention(user_id)} asked for the report as {FORMAT_LABELS[wanted.fmt]}."
            await self._upload(done, where, note, thread_ts=thread)
        except (RequestError, ConfigError, ChatError) as error:
            await post_ephemeral(self._client, channel, user_id, self._refusal(error, value))
        except Exception:
            # The adapter's edge: log it, and tell the person something they can act on.
            log.exception("slack: export %r failed", value)
            await post_ephemeral(self._client, channel, user_id, FAILED)

    async def here(self, command: Command, payload: dict[str, Any], respond: AsyncRespond) -> None:
        """`/research export <run id> <format>`: that file in the channel the command came from."""
        team = str(payload.get("team_id", ""))
        try:
            done = await self._exporter.export(command.run_id, command.fmt, workspace=team)
            note = (
                f"{mention(payload['user_id'])} shared report `{done.run.run_id}` as "
                f"{FORMAT_LABELS[command.fmt]}: *{escape(done.title)}*"
            )
            await self._upload(done, payload["channel_id"], note)
        except (RequestError, ConfigError, ChatError) as error:
            await respond(text=self._refusal(error, command.run_id), response_type="ephemeral")

    async def _upload(
        self, done: ChatExport, channel: str, note: str, *, thread_ts: str = ""
    ) -> None:
        with slack_errors():
            await share_file(
                self._client, channel, done.file, clip(note, NOTE_CHARS), thread_ts=thread_ts
            )
        log.info("slack: run %s exported as %s to %s", done.run.run_id, done.file.filename, channel)

    @staticmethod
    def _refusal(error: RequestError | ConfigError | ChatError, what: str) -> str:
        if isinstance(error, ChatError):
            log.warning("slack: export %s not uploaded: %s", what, error.reason)
            return f"I couldn't upload the file here ({escape(error.reason)})."
        if isinstance(error, ConfigError):
            # This machine cannot make the format (no Pango for a PDF): the operator must act.
            log.warning("slack: export %s: %s", what, error)
        return escape(str(error))
