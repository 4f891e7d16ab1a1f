"""Discord wire objects for the fake: the world (bot, application, one guild and its text channel,
two members), what the REST API returns, and the gateway payloads a test sends (a slash
command, a button press, a reaction, a message in a channel or thread), shaped as Discord sends
them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Json = Any
EPHEMERAL = 64
_ids = itertools.count(1_300_000_000_000_000_000)


def snowflake() -> str:
    return str(next(_ids))


def _now() -> str:
    return datetime.now(UTC).isoformat()


def user(user_id: str, name: str, *, bot: bool = False) -> Json:
    return {
        "id": user_id,
        "username": name,
        "global_name": name.title(),
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
    }


@dataclass
class World:
    """One guild with one text channel, the bot, and two people: alice and bob."""

    guild_id: str = field(default_factory=snowflake)
    channel_id: str = field(default_factory=snowflake)
    app_id: str = field(default_factory=snowflake)
    alice: Json = field(default_factory=lambda: user(snowflake(), "alice"))
    bob: Json = field(default_factory=lambda: user(snowflake(), "bob"))
    threads: dict[str, Json] = field(default_factory=dict)

    @property
    def bot(self) -> Json:
        return user(self.app_id, "research-bot", bot=True)

    def application(self) -> Json:
        return {
            "id": self.app_id,
            "name": "research-bot",
            "description": "",
            "icon": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "owner": self.alice,
            "verify_key": "0" * 64,
            "team": None,
            "flags": 0,
            "bot": self.bot,
        }

    def text_channel(self) -> Json:
        return {
            "id": self.channel_id,
            "type": 0,
            "guild_id": self.guild_id,
            "name": "research",
            "position": 0,
            "permission_overwrites": [],
            "nsfw": False,
            "parent_id": None,
            "topic": None,
            "last_message_id": None,
            "rate_limit_per_user": 0,
        }

    def thread(self, channel_id: str, message_id: str, name: str) -> Json:
        # Discord gives a thread opened from a message the id of that message.
        thread = {
            "id": message_id,
            "type": 11,
            "guild_id": self.guild_id,
            "parent_id": channel_id,
            "owner_id": self.app_id,
            "name": name,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "flags": 0,
            "total_message_sent": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": _now(),
                "locked": False,
            },
        }
        self.threads[message_id] = thread
        return thread

    def channel(self, channel_id: str) -> Json:
        return self.threads.get(channel_id) or {**self.text_channel(), "id": channel_id}

    def member(self, person: Json) -> Json:
        return {
            "user": person,
            "roles": [],
            "joined_at": _now(),
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
            "nick": None,
            "permissions": "2248473465835073",
        }

    def ready(self, gateway_url: str) -> Json:
        return {
            "v": 10,
            "user": self.bot,
            "guilds": [{"id": self.guild_id, "unavailable": True}],
            "session_id": "fake-session",
            "resume_gateway_url": gateway_url,
            "application": {"id": self.app_id, "flags": 0},
            "shard": [0, 1],
        }

    def guild_create(self) -> Json:
        everyone = {
            "id": self.guild_id,
            "name": "@everyone",
            "permissions": "2248473465835073",
            "position": 0,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }
        return {
            "id": self.guild_id,
            "name": "Fake Guild",
            "unavailable": False,
            "owner_id": self.alice["id"],
            "roles": [everyone],
            "emojis": [],
            "stickers": [],
            "features": [],
            "channels": [self.text_channel()],
            "threads": [],
            "members": [self.member(self.bot)],
            "member_count": 3,
            "large": False,
            "voice_states": [],
            "presences": [],
            "joined_at": _now(),
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "system_channel_flags": 0,
            "icon": None,
        }

    def _interaction(self, kind: int, person: Json, data: Json, **extra: Json) -> Json:
        return {
            "id": snowflake(),
            "application_id": self.app_id,
            "type": kind,
            "token": f"interaction-token-{snowflake()}",
            "version": 1,
            "guild_id": self.guild_id,
            "channel_id": self.channel_id,
            "channel": self.text_channel(),
            "member": self.member(person),
            "data": data,
            "locale": "en-US",
            "guild_locale": "en-US",
            "app_permissions": "2248473465835073",
            "entitlements": [],
            "authorizing_integration_owners": {"0": self.guild_id},
            "context": 0,
            "attachment_size_limit": 10 * 1024 * 1024,
            **extra,
        }

    def command(
        self, person: Json, sub: str, *, locale: str = "en-US", **options: str | int
    ) -> Json:
        """`/research <sub> option:value …` as an INTERACTION_CREATE payload, from a person whose
        Discord client is set to `locale`. Options are strings (type 3) or integers (type 4)."""
        subcommand = {
            "name": sub,
            "type": 1,
            "options": [
                {"name": k, "type": 4 if isinstance(v, int) else 3, "value": v}
                for k, v in options.items()
            ],
        }
        data = {"id": snowflake(), "name": "research", "type": 1, "options": [subcommand]}
        return self._interaction(2, person, data, locale=locale)

    def autocomplete(self, person: Json, sub: str, focused: str, typed: str) -> Json:
        """What Discord sends while `person` types `typed` into `/research <sub>`'s `focused`
        option (an autocomplete interaction, type 4): the bot answers with choices."""
        option = {"name": focused, "type": 3, "value": typed, "focused": True}
        subcommand = {"name": sub, "type": 1, "options": [option]}
        data = {"id": snowflake(), "name": "research", "type": 1, "options": [subcommand]}
        return self._interaction(4, person, data)

    def dm_command(self, person: Json, sub: str, **options: str | int) -> Json:
        """`/research …` by a person who installed the app to their account, in a DM with a
        friend (context 2, a private channel): no guild, and only the user install authorized
        it, so the bot can answer through the interaction's webhook only."""
        payload = self.command(person, sub, **options)
        for key in ("guild_id", "member", "guild_locale"):
            payload.pop(key)
        channel = {"id": snowflake(), "type": 1, "recipients": [person], "last_message_id": None}
        payload.update(
            user=person,
            channel=channel,
            channel_id=channel["id"],
            context=2,
            authorizing_integration_owners={"1": person["id"]},
            app_permissions="0",
        )
        return payload

    def user_install_command(self, person: Json, sub: str, **options: str | int) -> Json:
        """`/research …` from a user install in a server the bot has not joined (context 0)."""
        payload = self.command(person, sub, **options)
        other = snowflake()
        channel = {**self.text_channel(), "id": snowflake(), "guild_id": other}
        payload.update(
            guild_id=other,
            guild={"id": other, "locale": "en-US", "features": []},
            channel=channel,
            channel_id=channel["id"],
            authorizing_integration_owners={"1": person["id"]},
            app_permissions="0",
        )
        return payload

    def dm_channel(self, recipient: str | int) -> Json:
        """What `POST /users/@me/channels` answers: the bot's DM channel with a person."""
        recipient_id = str(recipient)
        person = next(
            (p for p in (self.alice, self.bob) if p["id"] == recipient_id),
            user(recipient_id, "someone"),
        )
        return {"id": snowflake(), "type": 1, "recipients": [person], "last_message_id": None}

    def button(self, person: Json, message: Json, custom_id: str) -> Json:
        """A press on a button of `message` (as the fake stored it) by `person`."""
        data = {"custom_id": custom_id, "component_type": 2}
        return self._interaction(3, person, data, message=message)

    def select(self, person: Json, message: Json, custom_id: str, values: list[str]) -> Json:
        """A choice in a string select of `message` (as the fake stored it) by `person`."""
        data = {"custom_id": custom_id, "component_type": 3, "values": values}
        return self._interaction(3, person, data, message=message)

    def chat_message(
        self, person: Json, channel_id: str, content: str, *, mentions: tuple[Json, ...] = ()
    ) -> Json:
        """MESSAGE_CREATE for `person`'s message in a channel or thread of the guild, mentioning
        `mentions` (users, each with its partial member, as Discord lists them). Write their
        `<@id>` in `content` yourself: Discord sends both."""
        partial = {k: v for k, v in self.member(person).items() if k != "user"}
        return {
            **message(channel_id, {"content": content}, {}, self),
            "author": person,
            "guild_id": self.guild_id,
            "member": partial,
            "mentions": [
                {**who, "member": {k: v for k, v in self.member(who).items() if k != "user"}}
                for who in mentions
            ],
        }

    def reaction(self, person: Json, message_id: str, emoji: str) -> Json:
        """MESSAGE_REACTION_ADD for a unicode emoji on a message in the text channel."""
        return {
            "user_id": person["id"],
            "channel_id": self.channel_id,
            "message_id": message_id,
            "guild_id": self.guild_id,
            "member": self.member(person),
            "emoji": {"id": None, "name": emoji},
            "type": 0,
            "burst": False,
            "burst_colors": [],
            "message_author_id": self.app_id,
        }


def message(
    channel_id: str,
    body: Json,
    files: dict[str, bytes],
    world: World,
    message_id: str | None = None,
    *,
    webhook_id: str | None = None,
) -> Json:
    body = body or {}
    attachments = [
        {
            "id": snowflake(),
            "filename": name,
            "size": len(data),
            "url": f"https://cdn.invalid/{name}",
            "proxy_url": f"https://cdn.invalid/{name}",
            "content_type": "text/markdown; charset=utf-8",
        }
        for name, data in files.items()
    ] or body.get("attachments", [])
    out = {
        "id": message_id or snowflake(),
        "channel_id": channel_id,
        "author": world.bot,
        "content": body.get("content") or "",
        "timestamp": _now(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": attachments,
        "embeds": body.get("embeds") or [],
        "pinned": False,
        "type": 0,
        "flags": body.get("flags") or 0,
        "components": body.get("components") or [],
    }
    if webhook_id is not None:
        out["webhook_id"] = webhook_id
        out["application_id"] = world.app_id
    return out


def callback(interaction_id: str, body: Json, world: World) -> Json:
    """What `POST /interactions/{id}/{token}/callback?with_response=1` returns."""
    kind = body["type"]
    data = body.get("data") or {}
    flags = data.get("flags") or 0
    answer: Json = {
        "interaction": {
            "id": interaction_id,
            "type": 2,
            "response_message_loading": kind == 5,
            "response_message_ephemeral": bool(flags & EPHEMERAL),
        }
    }
    if kind in (4, 5):
        sent = message(world.channel_id, data, {}, world, webhook_id=world.app_id)
        answer["interaction"]["response_message_id"] = sent["id"]
        answer["resource"] = {"type": kind, "message": sent}
    return answer


def commands(body: Json, world: World) -> Json:
    """`PUT …/commands` answers the commands with their ids."""
    return [
        {
            "id": snowflake(),
            "application_id": world.app_id,
            "version": snowflake(),
            "type": 1,
            "default_member_permissions": None,
            "nsfw": False,
            **command,
        }
        for command in body
    ]
