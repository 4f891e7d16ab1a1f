"""A local fake of Discord: the REST API (`/api/v10`) and the gateway (websocket), for tests.

    async with FakeDiscord() as fake:
        settings = {"DISCORD_TOKEN": fake.token, "DISCORD_API_URL": fake.api_url}
        ...start a discord.py client; it asks GET /gateway/bot and connects to `fake.gateway_url`
        await fake.wait_identified()              # IDENTIFY seen; READY and GUILD_CREATE sent
        await fake.dispatch("INTERACTION_CREATE", fake.guild.command(fake.guild.alice, "history"))
        await fake.dispatch("MESSAGE_CREATE", fake.guild.chat_message(alice, thread_id, text))
        call = await fake.wait_for_call("POST", r"/channels/\\d+/messages/\\d+/threads")
        fake.rate_limit_next("PATCH", r"/channels/\\d+/messages/\\d+", retry_after=0.01)
        fake.fail_next("POST", r"/channels/\\d+/messages/\\d+/threads", 403)
        fake.fail_next("POST", r"/channels/\\d+/messages", 413, where=lambda c: bool(c.files))
        fake.expire_interaction(token)            # its webhook answers 401 Invalid Webhook Token
        fake.calls                                # every REST call, in order, with its status
        fake.sessions, fake.most_sessions         # gateway sessions open now, and at most at once

Like the real API it answers `Content-Type: application/json` (exactly: discord.py compares the
header), gives a thread opened from a message that message's id, answers interaction callbacks
with the `with_response` JSON, and rate-limits with Discord's 429 body and headers (including
`Via`, without which discord.py takes a 429 for a Cloudflare ban). The gateway speaks JSON with
zlib-stream compression when asked, as discord.py asks.

Message bodies are checked as Discord checks them (tests/fakes/discord_components.py): a
Components V2 message over 40 components or 4,000 characters of text is refused with 400
`{"code": 50035, …}`. An interaction's original response and followups are kept as messages; an
interaction only a user install authorized gets at most 5 followups (then 400, code 40094).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import BodyPartReader, WSMsgType, web

from tests.fakes import discord_payloads as payloads
from tests.fakes.discord_components import invalid_form_body, problems
from tests.fakes.discord_interactions import Interactions

Json = Any


@dataclass
class DiscordCall:
    """One REST request the fake received."""

    method: str
    path: str
    """After `/api/v10`, e.g. `/channels/123/messages`."""
    query: dict[str, str]
    authorization: str
    body: Json
    """The JSON body, or a multipart request's `payload_json`."""
    files: dict[str, bytes]
    """Uploaded files by filename."""
    status: int = 200


@dataclass
class _Failure:
    method: str
    path: re.Pattern[str]
    status: int
    retry_after: float = 0.0
    where: Callable[[DiscordCall], bool] | None = None


@dataclass
class FakeDiscord:
    """The fake server; URLs are set once entered."""

    token: str = "fake-bot-token"
    guild: payloads.World = field(default_factory=payloads.World)
    calls: list[DiscordCall] = field(default_factory=list, init=False)
    identifies: list[Json] = field(default_factory=list, init=False)
    most_sessions: int = field(default=0, init=False)
    """The most identified gateway sessions that were ever open at once."""
    messages: dict[str, Json] = field(default_factory=dict, init=False)
    """Every message created, by id, as last returned (interaction responses included)."""
    interactions: Interactions = field(init=False)
    """Interaction responses and followups (tests/fakes/discord_interactions.py)."""
    api_url: str = field(default="", init=False)
    gateway_url: str = field(default="", init=False)
    _failures: deque[_Failure] = field(default_factory=deque, init=False, repr=False)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition, init=False, repr=False)
    _sockets: list[_Gateway] = field(default_factory=list, init=False, repr=False)
    _runner: web.AppRunner | None = field(default=None, init=False, repr=False)

    def rate_limit_next(self, method: str, path: str, *, retry_after: float = 0.01) -> None:
        """The next request matching `method` and the `path` regex answers 429 once."""
        self._failures.append(_Failure(method, re.compile(path), 429, retry_after))

    def fail_next(
        self,
        method: str,
        path: str,
        status: int = 403,
        *,
        where: Callable[[DiscordCall], bool] | None = None,
    ) -> None:
        """The next matching request (and matching `where`, e.g. one carrying files) fails with
        `status` (403 Missing Permissions by default)."""
        self._failures.append(_Failure(method, re.compile(path), status, where=where))

    def __post_init__(self) -> None:
        self.interactions = Interactions(self.guild, self.messages)

    def expire_interaction(self, token: str) -> None:
        """From now on this interaction's webhook refuses every call, as after 15 minutes."""
        self.interactions.expired.add(token)

    async def wait_for_call(
        self,
        method: str,
        path: str,
        *,
        status: int = 200,
        after: int = 0,
        where: Callable[[DiscordCall], bool] | None = None,
    ) -> DiscordCall:
        """The first call (from index `after`) with this method, path regex and status (and
        matching `where`, e.g. one whose content says something)."""
        pattern = re.compile(path)
        async with self._changed:
            while True:
                for call in self.calls[after:]:
                    if (
                        call.method == method
                        and pattern.fullmatch(call.path)
                        and call.status == status
                        and (where is None or where(call))
                    ):
                        return call
                await self._changed.wait()

    def find(self, method: str, path: str) -> list[DiscordCall]:
        pattern = re.compile(path)
        return [c for c in self.calls if c.method == method and pattern.fullmatch(c.path)]

    async def wait_identified(self, count: int = 1) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.identifies) >= count)

    @property
    def sessions(self) -> int:
        """Identified gateway sessions open now."""
        return len(self._sockets)

    async def wait_sessions(self, count: int) -> None:
        """Until exactly `count` identified gateway sessions are open."""
        async with self._changed:
            await self._changed.wait_for(lambda: len(self._sockets) == count)

    async def dispatch(self, event: str, data: Json) -> None:
        """Send a gateway DISPATCH to every connected client."""
        if event == "INTERACTION_CREATE":
            self.interactions.sent[data["token"]] = data
        for socket in list(self._sockets):
            if not socket.ws.closed:
                await socket.dispatch(event, data)

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        port = self._runner.addresses[0][1]
        self.api_url = f"http://127.0.0.1:{port}/api/v10"
        self.gateway_url = f"ws://127.0.0.1:{port}/gateway"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for socket in list(self._sockets):
            await socket.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _record(self, call: DiscordCall) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    async def _rest(self, request: web.Request) -> web.Response:
        call = await _read_call(request)
        if request.headers.get("Authorization") != f"Bot {self.token}" and not (
            call.path.startswith(("/interactions/", "/webhooks/"))
        ):
            call.status = 401
            await self._record(call)
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        failure = next(
            (
                f
                for f in self._failures
                if f.method == call.method
                and f.path.fullmatch(call.path)
                and (f.where is None or f.where(call))
            ),
            None,
        )
        if failure is not None:
            self._failures.remove(failure)
            call.status = failure.status
            await self._record(call)
            if failure.status == 429:
                return _rate_limited(failure.retry_after)
            return _json(
                _ERRORS.get(failure.status, {"message": "Error", "code": 0}), status=failure.status
            )
        refusal = self._refusal(call)
        if refusal is not None:
            call.status = refusal[0]
            await self._record(call)
            return _json(refusal[1], status=refusal[0])
        status, answer = self._answer(call)
        call.status = status
        await self._record(call)
        return web.Response(status=204) if status == 204 else _json(answer, status=status)

    def _refusal(self, call: DiscordCall) -> tuple[int, Json] | None:
        """What Discord would refuse before acting: an expired interaction token, one followup
        too many, a message body it does not accept (an edit merged over the stored message)."""
        route = f"{call.method} {call.path}"
        refused = self.interactions.refusal(route)
        if refused is not None:
            return refused
        body = self.interactions.edited(route, call.body)
        if m := re.fullmatch(r"PATCH /channels/\d+/messages/(\d+)", route):
            body = {**self.messages.get(m[1], {}), **call.body}
        elif re.fullmatch(r"POST /(channels/\d+/messages|webhooks/\d+/[^/]+)", route):
            body = call.body or {}
        elif call.path.endswith("/callback") and (call.body or {}).get("type") in (4, 7):
            body = call.body.get("data") or {}
        found = problems(body, call.files) if body is not None else []
        return (400, invalid_form_body(found)) if found else None

    def _answer(self, call: DiscordCall) -> tuple[int, Json]:
        world, route = self.guild, f"{call.method} {call.path}"
        if m := re.fullmatch(r"POST /channels/(\d+)/messages/(\d+)/threads", route):
            return 201, world.thread(m[1], m[2], call.body["name"])
        if m := re.fullmatch(r"POST /channels/(\d+)/messages", route):
            return 200, self._store(payloads.message(m[1], call.body, call.files, world))
        if m := re.fullmatch(r"PATCH /channels/(\d+)/messages/(\d+)", route):
            return 200, self._store(
                payloads.message(
                    m[1], {**self.messages.get(m[2], {}), **call.body}, call.files, world, m[2]
                )
            )
        if m := re.fullmatch(r"DELETE /channels/\d+/messages/(\d+)", route):
            self.messages.pop(m[1], None)
            return 204, None
        if (answer := self.interactions.answer(route, call.body, call.files)) is not None:
            return answer
        if m := re.fullmatch(r"PUT /applications/\d+(/guilds/\d+)?/commands", route):
            return 200, payloads.commands(call.body, world)
        if m := re.fullmatch(r"GET /channels/(\d+)", route):
            return 200, world.channel(m[1])
        fixed = {
            "GET /users/@me": world.bot,
            "GET /oauth2/applications/@me": world.application(),
            "GET /gateway/bot": {
                "url": self.gateway_url,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 0,
                    "max_concurrency": 1,
                },
            },
            "GET /gateway": {"url": self.gateway_url},
        }
        if route in fixed:
            return 200, fixed[route]
        return 404, {"message": "404: Not Found", "code": 0}

    def _store(self, message: Json) -> Json:
        self.messages[message["id"]] = message
        return message

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        compress = request.query.get("compress")
        if compress not in (None, "zlib-stream"):
            await ws.close(code=4000, message=f"this fake cannot speak {compress}".encode())
            return ws
        socket = _Gateway(ws, zlib.compressobj() if compress else None)
        await socket.send({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                break
            await self._on_gateway(socket, json.loads(msg.data))
        async with self._changed:
            if socket in self._sockets:
                self._sockets.remove(socket)
            self._changed.notify_all()
        return ws

    async def _on_gateway(self, socket: _Gateway, data: Json) -> None:
        if data["op"] == 1:
            await socket.send({"op": 11, "d": None, "s": None, "t": None})
        elif data["op"] == 2:
            self._sockets.append(socket)
            self.most_sessions = max(self.most_sessions, len(self._sockets))
            await socket.dispatch("READY", self.guild.ready(self.gateway_url))
            await socket.dispatch("GUILD_CREATE", self.guild.guild_create())
            async with self._changed:
                self.identifies.append(data["d"])
                self._changed.notify_all()


@dataclass
class _Gateway:
    ws: web.WebSocketResponse
    deflate: Any
    seq: int = 0

    async def send(self, payload: Json) -> None:
        text = json.dumps(payload)
        if self.deflate is None:
            await self.ws.send_str(text)
        else:
            data = self.deflate.compress(text.encode()) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
            await self.ws.send_bytes(data)

    async def dispatch(self, event: str, data: Json) -> None:
        self.seq += 1
        await self.send({"op": 0, "t": event, "s": self.seq, "d": data})


async def _read_call(request: web.Request) -> DiscordCall:
    body: Json = None
    files: dict[str, bytes] = {}
    if request.content_type == "multipart/form-data":
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "payload_json":
                body = json.loads(await part.text())
            elif part.filename:
                files[part.filename] = bytes(await part.read())
    elif request.can_read_body:
        body = json.loads(await request.read() or b"null")
    return DiscordCall(
        request.method,
        "/" + request.match_info["tail"],
        dict(request.query),
        request.headers.get("Authorization", ""),
        body,
        files,
    )


_ERRORS = {
    403: {"message": "Missing Permissions", "code": 50013},
    404: {"message": "Unknown Message", "code": 10008},
    413: {"message": "Request entity too large", "code": 40005},
    500: {"message": "500: Internal Server Error", "code": 0},
}


def _json(data: Json, *, status: int = 200) -> web.Response:
    # Exactly `application/json`: discord.py only parses bodies whose type is that string.
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


def _rate_limited(retry_after: float) -> web.Response:
    body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
    headers = {
        "Content-Type": "application/json",
        "Via": "1.1 google",
        "Retry-After": str(max(1, round(retry_after))),
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": f"{time.time() + retry_after:.3f}",
        "X-RateLimit-Reset-After": f"{retry_after:.3f}",
        "X-RateLimit-Bucket": "fake-bucket-0001",
        "X-RateLimit-Scope": "user",
    }
    return web.Response(body=json.dumps(body).encode(), status=429, headers=headers)
