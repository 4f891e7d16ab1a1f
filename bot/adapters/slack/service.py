"""Slack's side of the command service: who asks (a `Caller` from Slack's signed payloads, what
`users.info` says of them) and how its answers show: a private reply (escaped, with our own
mentions, within a message's length), a watch command's answer, a plain notice in a channel,
and a report shared again (its TL;DR here, then the file in that message's thread)."""

from __future__ import annotations

import asyncio
import logging
import re
from functools import partial
from typing import Any, NamedTuple

from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.commands import Command
from bot.adapters.chat.service import Caller, Markup, Reply, Shared
from bot.adapters.chat.sink import FILE_REFUSED, ChatError
from bot.adapters.chat.watches import WatchCommands
from bot.adapters.slack.client import (
    SlackBudget,
    post_message,
    post_text,
    slack_errors,
    upload_file,
)
from bot.adapters.slack.privacy import said_private
from bot.adapters.slack.render import (
    MESSAGE_CHARS,
    clip,
    escape,
    mention,
    message_text,
    shared_report_text,
    unescape_incoming,
)
from bot.domain import Origin
from bot.store.runs import Store

log = logging.getLogger(__name__)

PLATFORM = "slack"
SLACK = Markup(escape=escape, mention=mention, bold="*")


def command_caller(command: dict[str, Any]) -> Caller:
    """The person behind a slash command (the locale is asked for separately: `users.info`,
    and so is whether a channel the command does not name private is public)."""
    channel = str(command.get("channel_id", ""))
    return Caller(
        platform=PLATFORM,
        workspace=str(command.get("team_id", "")),
        channel=channel,
        user=str(command.get("user_id", "")),
        user_name=str(command.get("user_name", "")),
        private=said_private(channel, name=str(command.get("channel_name", ""))),
    )


def action_caller(body: dict[str, Any]) -> Caller:
    """The person behind a button press or a menu choice."""
    user, where = body.get("user") or {}, body.get("channel") or {}
    channel = str(where.get("id", ""))
    return Caller(
        platform=PLATFORM,
        workspace=str((body.get("team") or {}).get("id") or user.get("team_id", "")),
        channel=channel,
        user=str(user.get("id", "")),
        user_name=str(user.get("username") or user.get("name") or ""),
        private=said_private(channel, name=str(where.get("name", ""))),
    )


def event_caller(body: dict[str, Any], *, user: str, channel: str, kind: str = "") -> Caller:
    """The person behind an Events API event (a mention, a message, a reaction) in the body's
    workspace; `kind`: the event's `channel_type`, where it has one."""
    return Caller(
        platform=PLATFORM,
        workspace=str(body.get("team_id", "")),
        channel=channel,
        user=user,
        private=said_private(channel, kind=kind),
    )


class Person(NamedTuple):
    """What `users.info` says of a person that the bot uses."""

    locale: str
    tz: str
    """Their time zone (`Europe/Berlin`), "" when Slack does not say."""
    admin: bool
    """An admin or owner of the workspace."""


class Locales:
    """Each person's Slack locale (`de-DE`) and time zone, asked once from `users.info`; reports
    follow the locale, watches the time zone."""

    def __init__(self, client: AsyncWebClient, *, wait_s: float = 3.0) -> None:
        self._client = client
        self.wait_s = wait_s
        """How long a run's start waits for it: runs start two at a time, so a slow
        `users.info` must not hold the others back for the SDK's whole timeout."""
        self._known: dict[tuple[str, str], Person] = {}

    async def of(self, caller: Caller) -> str | None:
        """None when Slack will not say in time (or at all: an install without `users:read`):
        the topic's language decides then."""
        person = await self._person(caller)
        return (person.locale or None) if person else None

    async def tz(self, caller: Caller) -> str:
        """The person's time zone; UTC when Slack will not say in time."""
        person = await self._person(caller)
        return (person.tz or "UTC") if person else "UTC"

    async def is_admin(self, caller: Caller) -> bool:
        """Asked of Slack anew (someone may have lost the role since); no answer is no."""
        person = await self._person(caller, fresh=True)
        return person is not None and person.admin

    async def _person(self, caller: Caller, *, fresh: bool = False) -> Person | None:
        key = (caller.workspace, caller.user)
        if fresh or key not in self._known:
            try:
                async with asyncio.timeout(self.wait_s):
                    with slack_errors():
                        info = await self._client.users_info(user=caller.user, include_locale=True)
            except TimeoutError:
                log.warning("slack: nothing known of %s: users.info took too long", caller.user)
                return None  # not kept: asked again at this person's next run
            except ChatError as error:
                log.warning("slack: nothing known of %s: %s", caller.user, error)
                return None
            user = info.get("user") or {}
            admin = bool(user.get("is_admin") or user.get("is_owner"))
            self._known[key] = Person(
                str(user.get("locale") or ""), str(user.get("tz") or ""), admin
            )
        return self._known[key]


async def answer_watch(
    watches: WatchCommands, locales: Locales, caller: Caller, wanted: Command
) -> str:
    """A watch command's private answer: the time zone asked of Slack only to make a watch, and
    whether the person is an admin only when the watch is not theirs."""
    if wanted.kind == "watch":
        reply = await watches.add(caller, wanted, await locales.tz(caller))
    elif wanted.kind == "watches":
        reply = await watches.list(caller)
    else:
        reply = await watches.change(caller, wanted, partial(locales.is_admin, caller))
    return reply_text(reply)


async def post_notice(
    client: AsyncWebClient, budget: SlackBudget, origin: Origin, text: str
) -> None:
    """One plain message in the origin's channel (escaped, no unfurl). Raises ChatError when
    Slack refuses; a channel the bot was removed from is not joined again (`not_in_channel`)."""
    with slack_errors():
        async with budget.posts(origin.channel):
            await client.chat_postMessage(
                channel=origin.channel,
                text=message_text(text),
                unfurl_links=False,
                unfurl_media=False,
            )


async def first_delivery(store: Store, body: dict[str, Any]) -> bool:
    """Whether this event is new: Slack retries events it thinks we missed, and each acts once,
    even across restarts. An event without an id is not acted on."""
    event_id = str(body.get("event_id") or "")
    if event_id and await store.claim(f"slack:{event_id}"):
        return True
    log.info("slack: event %s already handled", event_id or "(no id)")
    return False


def message_text_to_bot(text: str, bot_user_id: str | None) -> str:
    """A message to the bot as typed (`<@UBOT> Who &amp; why?` → `Who & why?`): the bot's own
    mention dropped and Slack's entities decoded. Other mentions stay as Slack wrote them."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    return unescape_incoming(text).strip()


def research_request(text: str) -> str:
    """A message to the bot read as `/research` would read it: a leading `research` (or
    `/research`, typed from habit) dropped, so `research deep Acme` is `deep Acme`."""
    words = text.split(maxsplit=1)
    if words and words[0].lower() in ("research", "/research"):
        return words[1].strip() if len(words) > 1 else ""
    return text


def reply_text(reply: Reply) -> str:
    return clip(reply.render(SLACK), MESSAGE_CHARS)


async def share_report(
    client: AsyncWebClient, budget: SlackBudget, channel: str, shared: Shared
) -> None:
    """Who shared which report and its TL;DR, then the file in that message's thread, or the
    report as messages when the file is refused. Raises ChatError when Slack takes neither."""
    run, report = shared.run, shared.report
    text = shared_report_text(shared.by, run.run_id, report.title, report.tldr)
    with slack_errors():
        ts = await post_message(client, budget, channel, text=text)
    try:
        with slack_errors():
            await upload_file(client, channel, ts, shared.filename, shared.markdown)
    except ChatError as error:
        log.warning("slack: report file of %s refused in %s: %s", run.run_id, channel, error)
        note = message_text(FILE_REFUSED.format(reason=error.reason))
        with slack_errors():
            await post_message(client, budget, channel, text=note, thread_ts=ts)
            await post_text(client, budget, channel, ts, shared.markdown)
