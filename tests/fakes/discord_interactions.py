"""The fake Discord's interaction webhooks: the callback that answers an interaction, its
original response (kept as a message, edited and deleted through `…/messages/@original`), followups
(at most 5 when only a user install authorized the interaction, as on Discord), a token that
has expired (401 Invalid Webhook Token), and the DM channel a bot opens to reach a person."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import discord_payloads as payloads

Json = Any
USER_ONLY_FOLLOWUPS = 5
EXPIRED = {"message": "Invalid Webhook Token", "code": 50027}
TOO_MANY = {
    "message": "This interaction has hit the maximum number of follow up messages",
    "code": 40094,
}
_TOKEN = re.compile(r"\w+ /(?:webhooks/\d+|interactions/\d+)/([^/]+).*")


@dataclass
class Interactions:
    world: payloads.World
    messages: dict[str, Json]
    """The fake's messages, shared: responses and followups are kept there too."""
    originals: dict[str, str] = field(default_factory=dict)
    """An interaction token's original response message id."""
    expired: set[str] = field(default_factory=set)
    sent: dict[str, Json] = field(default_factory=dict)
    """Every interaction dispatched, by token."""
    followups: dict[str, int] = field(default_factory=dict)

    def original(self, token: str) -> Json:
        """The original response of the interaction with this token, as it is now."""
        return self.messages[self.originals[token]]

    def refusal(self, route: str) -> tuple[int, Json] | None:
        token = _TOKEN.fullmatch(route)
        if token is None:
            return None
        if token[1] in self.expired:
            return 401, EXPIRED
        followup = re.fullmatch(r"POST /webhooks/\d+/[^/]+", route)
        if followup and self.followups.get(token[1], 0) >= self._followup_limit(token[1]):
            return 400, TOO_MANY
        return None

    def edited(self, route: str, body: Json) -> Json | None:
        """An edit of an original response, merged over it (what Discord checks)."""
        if m := re.fullmatch(r"PATCH /webhooks/\d+/([^/]+)/messages/@original", route):
            return {**self.messages.get(self.originals.get(m[1], ""), {}), **body}
        return None

    def answer(self, route: str, body: Json, files: dict[str, bytes]) -> tuple[int, Json] | None:
        world = self.world
        if m := re.fullmatch(r"POST /interactions/(\d+)/([^/]+)/callback", route):
            answer = payloads.callback(m[1], body, world)
            if "resource" in answer:
                self.originals[m[2]] = self._store(answer["resource"]["message"])["id"]
            return 200, answer
        if m := re.fullmatch(r"PATCH /webhooks/(\d+)/([^/]+)/messages/@original", route):
            original = self.messages.get(self.originals.get(m[2], ""), {})
            edited = payloads.message(
                original.get("channel_id", world.channel_id),
                {**original, **body},
                files,
                world,
                original.get("id"),
                webhook_id=m[1],
            )
            self.originals[m[2]] = edited["id"]
            return 200, self._store(edited)
        if m := re.fullmatch(r"DELETE /webhooks/\d+/([^/]+)/messages/@original", route):
            self.messages.pop(self.originals.pop(m[1], ""), None)
            return 204, None
        if m := re.fullmatch(r"POST /webhooks/(\d+)/([^/]+)", route):
            self.followups[m[2]] = self.followups.get(m[2], 0) + 1
            channel = (self.sent.get(m[2]) or {}).get("channel_id", world.channel_id)
            return 200, self._store(payloads.message(channel, body, files, world, webhook_id=m[1]))
        if route == "POST /users/@me/channels":
            return 200, world.dm_channel(body["recipient_id"])
        return None

    def _followup_limit(self, token: str) -> int:
        owners = (self.sent.get(token) or {}).get("authorizing_integration_owners", {})
        return 1_000 if "0" in owners else USER_ONLY_FOLLOWUPS

    def _store(self, message: Json) -> Json:
        self.messages[message["id"]] = message
        return message
