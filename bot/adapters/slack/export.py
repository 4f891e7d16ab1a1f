"""Slack's side of exporting a report: the finished message's format menu (the file lands in the
run's thread) and `/research export <run id> <format>` (the file lands in the current channel).
Which run may be exported, and how, is the command service's rule; this module only says where
and how."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.commands import Command
from bot.adapters.chat.exports import FORMAT_LABELS, ChatExport
from bot.adapters.chat.service import Caller, CommandService, Reply
from bot.adapters.chat.sink import ChatError
from bot.adapters.slack.client import post_ephemeral, share_file, slack_errors
from bot.adapters.slack.render import clip, escape, mention, parse_export_value
from bot.adapters.slack.service import action_caller, reply_text
from bot.errors import RequestError

log = logging.getLogger(__name__)

NOTE_CHARS = 1_000
"""The comment beside an uploaded file: short, the file is the point."""
FAILED = "Something went wrong on my side. Try again in a minute."


class SlackExports:
    """Uploads exported reports for the Slack front end."""

    def __init__(self, client: AsyncWebClient, service: CommandService) -> None:
        self._client = client
        self._service = service

    async def on_select(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """A format chosen on a finished run's message: that file, in the run's thread."""
        await ack()
        caller = action_caller(body)
        action = body["actions"][0]
        value = str((action.get("selected_option") or {}).get("value", ""))
        try:
            wanted = parse_export_value(value)
            done = await self._service.export(caller, wanted.run_id, wanted.fmt)
            where = done.run.origin.channel or caller.channel
            thread = done.run.origin.thread or str((body.get("message") or {}).get("ts", ""))
            note = f"{mention(caller.user)} asked for the report as {FORMAT_LABELS[wanted.fmt]}."
            await self._upload(done, where, note, thread_ts=thread)
        except (RequestError, ChatError) as error:
            await self._tell(caller, self._refusal(error, value))
        except Exception:
            # The adapter's edge: log it, and tell the person something they can act on.
            log.exception("slack: export %r failed", value)
            await self._tell(caller, FAILED)

    async def here(self, caller: Caller, command: Command, respond: AsyncRespond) -> None:
        """`/research export <run id> <format>`: that file in the channel the command came from."""
        try:
            done = await self._service.export(caller, command.run_id, command.fmt)
            note = (
                f"{mention(caller.user)} shared report `{done.run.run_id}` as "
                f"{FORMAT_LABELS[command.fmt]}: *{escape(done.title)}*"
            )
            await self._upload(done, caller.channel, note)
        except (RequestError, ChatError) as error:
            await respond(text=self._refusal(error, command.run_id), response_type="ephemeral")

    async def _upload(
        self, done: ChatExport, channel: str, note: str, *, thread_ts: str = ""
    ) -> None:
        with slack_errors():
            await share_file(
                self._client, channel, done.file, clip(note, NOTE_CHARS), thread_ts=thread_ts
            )
        log.info("slack: run %s exported as %s to %s", done.run.run_id, done.file.filename, channel)

    async def _tell(self, caller: Caller, text: str) -> None:
        await post_ephemeral(self._client, caller.channel, caller.user, text)

    @staticmethod
    def _refusal(error: RequestError | ChatError, what: str) -> str:
        if isinstance(error, ChatError):
            log.warning("slack: export %s not uploaded: %s", what, error.reason)
            return f"I couldn't upload the file here ({escape(error.reason)})."
        return reply_text(Reply.of(error))
