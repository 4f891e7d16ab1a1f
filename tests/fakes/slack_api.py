"""Fake Slack on 127.0.0.1: the Web API that records every call, and Slack's side of the app's
inbound wire (signed slash commands, button presses and events, sent over HTTP).

Use it with the real slack_sdk / slack-bolt, unmodified:

    async with FakeSlack() as slack:
        client = AsyncWebClient(token=slack.token, base_url=slack.api_url)
        ...
        posted = await slack.wait_for("chat.postMessage")
        assert posted[0].args["unfurl_links"] is False

Answers like Slack: `{"ok": true, ...}` or `{"ok": false, "error": ...}` with HTTP 200, and
HTTP 429 with `Retry-After` when told to (`rate_limit`). Faults on demand: `fail` (a method's
next calls answer an error, optionally with another HTTP status or only for calls matching a
predicate), `lose` (a call is carried out, then its connection drops before the answer), `hold` (a method's next call waits, unanswered, until released) and `revoke` (the
bot token is refused from now on). `files.getUploadURLExternal` hands out
an `upload_url` on this server, so `files_upload_v2` runs its three real steps here.
`response_url`s from `response_url()` are served too (recorded as method "response_url").
Streaming (`chat.startStream` / `appendStream` / `stopStream`, JSON or form bodies): each stream
is kept in `streams` with every chunk in order (`tasks()` folds its task updates); in a channel
`startStream` needs the recipient team and user, as Slack's does. `expire()` is Slack ending a
stream by itself (appends paused too long): later appends and stops answer
`message_not_in_streaming_state`. Agent sessions (`agents.sessions.setStatus`, and
`chat.stopStream`'s `session_status`) are kept in `sessions` with every status in order; with
`subscribed_to_stops` off, `setStatus` warns `missing_agent_session_stopped_event_subscription`
as Slack does. `stop_by_user()` is a person pressing Slack's stop button, which shows only while
the thread's session is `processing`: the thread's streams leave the streaming state, and it
returns the `agent_session_stopped` event Slack sends, for `SlackSender.event`.
`assistant.threads.setStatus` calls are kept in `statuses`, `setTitle` in `titles` and
`setSuggestedPrompts` in `suggested_prompts` (the agent view).
`SlackSender` also sends what people say to the app: a mention (`app_mention`), a message in an
agent-view thread (`message` with `channel_type: im`) and a new agent-view thread
(`assistant_thread_started`), each in the Events API envelope Slack uses.
Socket Mode: `apps.connections.open` (with the app token) hands out a WebSocket URL here that
says hello; `socket_send()` pushes an envelope, and the app's acks are recorded as "socket_ack".

Simplifications: one workspace's token; no scopes; a channel is public and joined unless listed
in `outside_channels` (public, not joined: `not_in_channel` until `conversations.join`) or
`private_channels` (`channel_not_found`); blocks are stored, not validated beyond their count.
`conversations.info` says what kind a conversation is: as `kinds` names it (`public`,
`private`, `im`, `mpim`), else by its id (D a DM, G an old private channel, others public).
`chat.getPermalink` links any message ts of a channel the app can see.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

Json = dict[str, Any]
WAIT_S = 10.0
"""How long `wait_for` waits before failing the test with a clear timeout."""


@dataclass
class Call:
    """One request the fake received, and how it answered."""

    method: str
    args: Json
    status: int = 200
    error: str | None = None
    response: Json = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)
    peer: tuple[str, int] | None = None
    """The client's end of the connection the call came over."""

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None

    def dump(self) -> str:
        """Everything the call carried, as one string (for "never contains" assertions)."""
        return json.dumps(self.args, ensure_ascii=False)


@dataclass
class _Failure:
    error: str
    status: int
    where: Callable[[Json], bool] | None
    fields: Json


@dataclass
class _Loss:
    where: Callable[[Json], bool] | None


@dataclass
class Held:
    """A call kept waiting: `arrived` is set when it comes in; it is answered after `release()`."""

    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)
    where: Callable[[Json], bool] | None = None
    """Only a call whose arguments match is held (None: the next call)."""

    def release(self) -> None:
        self.released.set()


@dataclass
class SharedFile:
    file_id: str
    filename: str
    title: str
    content: bytes
    channel: str = ""
    thread_ts: str = ""
    initial_comment: str = ""


@dataclass
class Stream:
    """A streamed message as Slack holds it."""

    channel: str
    ts: str
    thread_ts: str
    task_display_mode: str
    chunks: list[Json] = field(default_factory=list)
    blocks: list[Json] = field(default_factory=list)
    state: str = "streaming"
    """streaming | stopped (by the app) | stopped_by_user | expired (by Slack)"""

    def tasks(self) -> dict[str, Json]:
        """Each task as its latest `task_update` shows it, in the order they first came."""
        found: dict[str, Json] = {}
        for chunk in self.chunks:
            if chunk.get("type") == "task_update":
                found[chunk["id"]] = chunk
        return found

    def text(self) -> str:
        """Every `markdown_text` streamed, joined."""
        return "".join(c["text"] for c in self.chunks if c.get("type") == "markdown_text")

    def titles(self) -> list[str]:
        return [c["title"] for c in self.chunks if c.get("type") == "plan_update"]


SESSION_STATUSES = ("active", "processing", "suspended", "closed")


@dataclass
class Session:
    """An agent session as Slack holds it: one thread's lifecycle status."""

    channel: str
    thread_ts: str
    title: str
    initiator: str
    history: list[str] = field(default_factory=list)
    """Every status it was set to, in order (by `setStatus` or `stopStream`)."""

    @property
    def status(self) -> str:
        return self.history[-1]


class SlackError(Exception):
    def __init__(self, error: str, fields: Json | None = None) -> None:
        self.error = error
        self.fields = fields or {}


class _StreamMethods:
    """`chat.*Stream` and `assistant.threads.setStatus`, mixed into FakeSlack's methods."""

    streams: dict[tuple[str, str], Stream]
    sessions: dict[tuple[str, str], Session]
    subscribed_to_stops: bool
    statuses: list[Json]
    titles: list[Json]
    suggested_prompts: list[Json]
    messages: dict[tuple[str, str], Json]

    def _check_channel(self, channel: str) -> None: ...

    def _next_ts(self) -> str: ...

    def _chat_startStream(self, args: Json) -> Json:
        channel = str(args.get("channel", ""))
        self._check_channel(channel)
        if not args.get("thread_ts"):
            raise SlackError("invalid_arguments")
        if channel.startswith("C") and not args.get("recipient_user_id"):
            raise SlackError("missing_recipient_user_id")
        if channel.startswith("C") and not args.get("recipient_team_id"):
            raise SlackError("missing_recipient_team_id")
        ts = self._next_ts()
        stream = Stream(channel, ts, str(args["thread_ts"]), args.get("task_display_mode", ""))
        self.streams[(channel, ts)] = stream
        self.messages[(channel, ts)] = {
            "ts": ts,
            "text": "",
            "blocks": [],
            "thread_ts": stream.thread_ts,
        }
        _take_chunks(stream, args)
        return {"channel": channel, "ts": ts}

    def _chat_appendStream(self, args: Json) -> Json:
        stream = self._streaming(args)
        if not args.get("markdown_text") and not args.get("chunks"):
            raise SlackError("invalid_arguments")
        _take_chunks(stream, args)
        return {"channel": stream.channel, "ts": stream.ts}

    def _chat_stopStream(self, args: Json) -> Json:
        stream = self._streaming(args)
        wanted = args.get("session_status")
        if wanted is not None and wanted not in SESSION_STATUSES:
            raise SlackError("invalid_arguments")
        session = self.sessions.get((stream.channel, stream.thread_ts))
        if wanted is not None and session is not None:
            session.history.append(str(wanted))
        _take_chunks(stream, args)
        stream.blocks = _json_list(args.get("blocks"))
        stream.state = "stopped"
        self.messages[(stream.channel, stream.ts)].update(text=stream.text(), blocks=stream.blocks)
        return {"channel": stream.channel, "ts": stream.ts, "message": {"ts": stream.ts}}

    def _streaming(self, args: Json) -> Stream:
        stream = self.streams.get((str(args.get("channel", "")), str(args.get("ts", ""))))
        if stream is None:
            raise SlackError("message_not_found")
        if stream.state != "streaming":
            raise SlackError("message_not_in_streaming_state")
        return stream

    def _agents_sessions_setStatus(self, args: Json) -> Json:
        channel, thread = str(args.get("channel_id", "")), str(args.get("thread_ts", ""))
        if args.get("status") not in SESSION_STATUSES or not thread:
            raise SlackError("invalid_arguments")
        self._check_channel(channel)
        if len(str(args.get("title", ""))) > 200:
            raise SlackError("invalid_arguments")
        session = self.sessions.setdefault(
            (channel, thread),
            Session(
                channel, thread, str(args.get("title", "")), str(args.get("initiator_user_id", ""))
            ),
        )
        session.history.append(str(args["status"]))
        answer: Json = {"status": session.status, "title": session.title}
        if not self.subscribed_to_stops:
            answer["warning"] = "missing_agent_session_stopped_event_subscription"
        return answer

    def _assistant_threads_setStatus(self, args: Json) -> Json:
        if not args.get("channel_id") or not args.get("thread_ts") or "status" not in args:
            raise SlackError("invalid_arguments")
        self.statuses.append(args)
        return {}

    def _assistant_threads_setTitle(self, args: Json) -> Json:
        if not args.get("channel_id") or not args.get("thread_ts") or not args.get("title"):
            raise SlackError("invalid_arguments")
        self.titles.append(args)
        return {}

    def _assistant_threads_setSuggestedPrompts(self, args: Json) -> Json:
        prompts = _json_list(args.get("prompts"))
        if not args.get("channel_id") or not prompts or len(prompts) > 4:
            raise SlackError("invalid_arguments")
        if any(not p.get("title") or not p.get("message") for p in prompts):
            raise SlackError("invalid_arguments")
        self.suggested_prompts.append({**args, "prompts": prompts})
        return {}


def _json_list(value: Any) -> list[Json]:
    """A list argument: as is from a JSON body, parsed from a form field."""
    if isinstance(value, str):
        return list(json.loads(value))
    return list(value or [])


def _take_chunks(stream: Stream, args: Json) -> None:
    if args.get("markdown_text"):
        stream.chunks.append({"type": "markdown_text", "text": args["markdown_text"]})
    stream.chunks.extend(_json_list(args.get("chunks")))


class FakeSlack(_StreamMethods):
    """The Web API on 127.0.0.1:0; `api_url` once entered."""

    def __init__(
        self,
        *,
        token: str = "xoxb-test",
        app_token: str = "xapp-test",
        team_id: str = "T1",
        bot_user_id: str = "UBOT",
    ) -> None:
        self.token = token
        self.app_token = app_token
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.url = ""
        self.calls: list[Call] = []
        self.messages: dict[tuple[str, str], Json] = {}
        """(channel, ts) -> the message as it stands now (text, blocks, thread_ts)."""
        self.files: dict[str, SharedFile] = {}
        self.outside_channels: set[str] = set()
        self.private_channels: set[str] = set()
        self.kinds: dict[str, str] = {}
        """Channel id -> what `conversations.info` says it is: public, private, im or mpim."""
        self.locales: dict[str, str] = {}
        """User id -> the locale `users.info` reports for them (en-US when not set)."""
        self.streams: dict[tuple[str, str], Stream] = {}
        """(channel, ts) -> a streamed message."""
        self.sessions: dict[tuple[str, str], Session] = {}
        """(channel, thread ts) -> the agent session of that thread."""
        self.subscribed_to_stops = True
        """Whether the app's manifest subscribes to `agent_session_stopped`."""
        self.statuses: list[Json] = []
        """`assistant.threads.setStatus` calls, in order (the status "" clears it)."""
        self.titles: list[Json] = []
        self.suggested_prompts: list[Json] = []
        self._rate_limits: dict[str, list[int]] = {}
        self._failures: dict[str, list[_Failure]] = {}
        self._holds: dict[str, list[Held]] = {}
        self._losses: dict[str, list[_Loss]] = {}
        self._held: list[Held] = []
        """Every hold handed out, released when the fake stops so no request waits forever."""
        self._refusal: str | None = None
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._sockets: list[web.WebSocketResponse] = []
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)  # slack_sdk reads users.info with GET
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_post("/response/{key}", self._response_url)
        app.router.add_get("/link", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        for held in self._held:
            held.release()
        for socket in self._sockets:
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, key: str = "r1") -> str:
        return f"{self.url}/response/{key}"

    # -- telling it what to do -------------------------------------------------------------

    def rate_limit(self, method: str, *, times: int = 1, retry_after: int = 0) -> None:
        """The next `times` calls of `method` get HTTP 429 with `Retry-After: retry_after`."""
        self._rate_limits.setdefault(method, []).extend([retry_after] * times)

    def fail(
        self,
        method: str,
        error: str,
        *,
        times: int = 1,
        status: int = 200,
        where: Callable[[Json], bool] | None = None,
        **fields: Any,
    ) -> None:
        """The next `times` calls of `method` (whose arguments match `where`) answer
        `{"ok": false, "error": error, **fields}` with HTTP `status` (Slack uses 200)."""
        failure = _Failure(error, status, where, fields)
        self._failures.setdefault(method, []).extend([failure] * times)

    def lose(self, method: str, *, where: Callable[[Json], bool] | None = None) -> None:
        """The next call of `method` (whose arguments match `where`) is carried out and recorded,
        then its connection drops before the answer: the app cannot tell whether it was."""
        self._losses.setdefault(method, []).append(_Loss(where))

    def hold(self, method: str, *, where: Callable[[Json], bool] | None = None) -> Held:
        """The next call of `method` (whose arguments match `where`) waits until `release()`
        before it is answered (and recorded): a request in flight, for as long as a test needs."""
        held = Held(where=where)
        self._holds.setdefault(method, []).append(held)
        self._held.append(held)
        return held

    def revoke(self, error: str | None = "invalid_auth") -> None:
        """From now on every call with the bot token answers `error`, as after an uninstall
        (None: accepted again, as after a reinstall)."""
        self._refusal = error

    def stop_by_user(self, channel: str, thread_ts: str, *, user: str = "U1") -> Json:
        """A person presses the stop button of the thread's agent session: its streams stop
        streaming; returns the `agent_session_stopped` event Slack then sends to the app. Slack
        shows the button only while the session is `processing` (an AssertionError otherwise);
        the session stays so until the app moves it."""
        session = self.sessions.get((channel, thread_ts))
        assert session is not None and session.status == "processing", "no stop button shows"
        stopped = []
        for stream in self.streams.values():
            if (stream.channel, stream.thread_ts, stream.state) == (
                channel,
                thread_ts,
                "streaming",
            ):
                stream.state = "stopped_by_user"
                stopped.append(stream.ts)
        return {
            "type": "agent_session_stopped",
            "channel": channel,
            "thread_ts": thread_ts,
            "streaming_message_ts": stopped,
            "user": user,
            "event_ts": self._next_ts(),
        }

    def expire(self, channel: str, ts: str) -> None:
        """Slack ends a stream by itself (its appends paused past Slack's undocumented limit)."""
        self.streams[(channel, ts)].state = "expired"

    # -- reading what happened -------------------------------------------------------------

    def calls_to(self, *methods: str, ok_only: bool = True) -> list[Call]:
        return [c for c in self.calls if c.method in methods and (c.ok or not ok_only)]

    async def wait_for(
        self,
        method: str,
        count: int = 1,
        *,
        where: Callable[[Call], bool] | None = None,
        ok_only: bool = True,
    ) -> list[Call]:
        """The successful calls to `method` (matching `where`), once there are `count` of them
        (with `ok_only` off: refused ones too)."""

        def found() -> list[Call]:
            calls = self.calls_to(method, ok_only=ok_only)
            return [c for c in calls if where is None or where(c)]

        async with asyncio.timeout(WAIT_S), self._changed:
            await self._changed.wait_for(lambda: len(found()) >= count)
        return found()

    def thread(self, channel: str, ts: str) -> list[str]:
        """The texts posted in a message's thread, in order."""
        return [
            c.args.get("text", "")
            for c in self.calls_to("chat.postMessage")
            if c.args.get("channel") == channel and c.args.get("thread_ts") == ts
        ]

    # -- the wire --------------------------------------------------------------------------

    async def _record(self, call: Call) -> None:
        self.calls.append(call)
        async with self._changed:
            self._changed.notify_all()

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await _arguments(request)
        held = self._hold_for(method, args)
        if held is not None:
            held.arrived.set()
            await held.released.wait()
        call = Call(
            method, args, peer=request.transport and request.transport.get_extra_info("peername")
        )
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or args.get(
            "token", ""
        )
        retry_after = _pop(self._rate_limits, method)
        if retry_after is not None:
            call.status, call.error = 429, "ratelimited"
            await self._record(call)
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": str(retry_after)},
            )
        try:
            if token != (self.app_token if method == "apps.connections.open" else self.token):
                raise SlackError("invalid_auth")
            if self._refusal is not None and token == self.token:
                raise SlackError(self._refusal)
            forced = self._forced_failure(method, args)
            if forced is not None:
                call.status = forced.status
                raise SlackError(forced.error, forced.fields)
            handler = getattr(self, "_" + method.replace(".", "_"), None)
            if handler is None:
                raise SlackError("unknown_method")
            body: Json = {"ok": True, **handler(args)}
        except SlackError as failure:
            call.error = failure.error
            body = {"ok": False, "error": failure.error, **failure.fields}
        call.response = body
        await self._record(call)
        if _take(self._losses.get(method, []), args) is not None and request.transport:
            request.transport.close()
        return web.json_response(body, status=call.status)

    def _hold_for(self, method: str, args: Json) -> Held | None:
        return _take(self._holds.get(method, []), args)

    def _forced_failure(self, method: str, args: Json) -> _Failure | None:
        return _take(self._failures.get(method, []), args)

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        data = await request.read()
        if file_id not in self.files:
            await self._record(Call("upload", {"file_id": file_id}, status=404))
            return web.Response(status=404, text="unknown upload")
        self.files[file_id].content = data
        await self._record(Call("upload", {"file_id": file_id, "bytes": len(data)}))
        return web.Response(text=f"OK - {len(data)}")

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        await self._record(Call("response_url", {"key": request.match_info["key"], **body}))
        return web.Response(text="ok")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        await socket.send_json(
            {"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A1"}}
        )
        await self._record(Call("socket_connected", {}))
        async for message in socket:
            if message.type == aiohttp.WSMsgType.TEXT:
                await self._record(Call("socket_ack", json.loads(message.data)))
        self._sockets.remove(socket)
        return socket

    async def socket_send(self, kind: str, payload: Json, *, retry_attempt: int = 0) -> str:
        """Push an envelope (`slash_commands`, `interactive`, `events_api`) to the connected app."""
        envelope_id = f"env-{next(self._ids)}"
        await self._sockets[-1].send_json(
            {
                "envelope_id": envelope_id,
                "type": kind,
                "payload": payload,
                "accepts_response_payload": kind != "events_api",
                "retry_attempt": retry_attempt,
                "retry_reason": "timeout" if retry_attempt else "",
            }
        )
        return envelope_id

    # -- methods (each returns the fields beside "ok", or raises SlackError) ------------------

    def _auth_test(self, args: Json) -> Json:
        return {
            "url": "https://fake.slack.test/",
            "team": "Fake",
            "user": "research-bot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": "BBOT",
            "is_enterprise_install": False,
        }

    def _check_channel(self, channel: str) -> None:
        if not channel or channel in self.private_channels:
            raise SlackError("channel_not_found")
        if channel in self.outside_channels:
            raise SlackError("not_in_channel")

    def _next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def _chat_postMessage(self, args: Json) -> Json:
        channel = str(args.get("channel", ""))
        self._check_channel(channel)
        if not args.get("text") and not args.get("blocks"):
            raise SlackError("no_text")
        if len(args.get("blocks") or []) > 50:
            raise SlackError("invalid_blocks")
        ts = self._next_ts()
        message = {
            "ts": ts,
            "user": self.bot_user_id,
            "text": args.get("text", ""),
            "blocks": args.get("blocks") or [],
            "thread_ts": args.get("thread_ts"),
        }
        self.messages[(channel, ts)] = message
        return {"channel": channel, "ts": ts, "message": message}

    def _chat_update(self, args: Json) -> Json:
        key = (str(args.get("channel", "")), str(args.get("ts", "")))
        if key not in self.messages:
            raise SlackError("message_not_found")
        self.messages[key].update(text=args.get("text", ""), blocks=args.get("blocks") or [])
        return {"channel": key[0], "ts": key[1], "text": args.get("text", "")}

    def _chat_postEphemeral(self, args: Json) -> Json:
        self._check_channel(str(args.get("channel", "")))
        if not args.get("user") or not (args.get("text") or args.get("blocks")):
            raise SlackError("invalid_arguments")
        return {"message_ts": self._next_ts()}

    def _conversations_join(self, args: Json) -> Json:
        channel = str(args.get("channel", ""))
        if channel in self.private_channels:
            raise SlackError("method_not_supported_for_channel_type")
        self.outside_channels.discard(channel)
        return {"channel": {"id": channel, "is_member": True}}

    def _conversations_replies(self, args: Json) -> Json:
        channel, ts = str(args.get("channel", "")), str(args.get("ts", ""))
        self._check_channel(channel)
        thread = [
            m
            for (where, key), m in sorted(self.messages.items())
            if where == channel and ts in (key, m.get("thread_ts"))
        ]
        return {"messages": thread, "has_more": False}

    def _conversations_info(self, args: Json) -> Json:
        """As Slack answers it: a DM's object has `is_im` and no `is_private`; a channel's and a
        group DM's carry `is_channel`, `is_group`, `is_im`, `is_mpim` and `is_private`."""
        channel = str(args.get("channel", ""))
        if not channel or channel in self.private_channels:
            raise SlackError("channel_not_found")
        default = {"D": "im", "G": "private"}.get(channel[:1], "public")
        kind = self.kinds.get(channel, default)
        common: Json = {
            "id": channel,
            "created": 1654868334,
            "is_archived": False,
            "is_org_shared": False,
            "context_team_id": self.team_id,
            "updated": 1723390262,
        }
        if kind == "im":
            user = {"user": "U1", "is_open": True, "priority": 0, "latest": None}
            return {"channel": {**common, "is_im": True, **user}}
        name = f"mpdm-ada--bob-{channel.lower()}" if kind == "mpim" else f"{kind}-{channel.lower()}"
        found = {
            **common,
            "name": name,
            "name_normalized": name,
            "is_channel": kind == "public",
            "is_group": kind == "private" and channel.startswith("G"),
            "is_im": False,
            "is_mpim": kind == "mpim",
            "is_private": kind != "public",
            "is_general": False,
            "is_shared": False,
            "is_ext_shared": False,
            "is_member": channel not in self.outside_channels,
            "creator": "U1",
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": "", "creator": "", "last_set": 0},
            "previous_names": [],
        }
        return {"channel": found}

    def _chat_getPermalink(self, args: Json) -> Json:
        channel, ts = str(args.get("channel", "")), str(args.get("message_ts", ""))
        self._check_channel(channel)
        if not ts:
            raise SlackError("message_not_found")
        link = f"https://fake.slack.test/archives/{channel}/p{ts.replace('.', '')}"
        return {"channel": channel, "permalink": link}

    def _reactions_add(self, args: Json) -> Json:
        return {}

    def _users_info(self, args: Json) -> Json:
        user_id = str(args.get("user", ""))
        if not user_id.startswith("U"):
            raise SlackError("user_not_found")
        user: Json = {"id": user_id, "team_id": self.team_id, "name": user_id.lower()}
        if str(args.get("include_locale", "")).lower() in ("1", "true"):
            user["locale"] = self.locales.get(user_id, "en-US")
        return {"user": user}

    def _apps_connections_open(self, args: Json) -> Json:
        return {"url": f"ws://127.0.0.1:{self.url.rsplit(':', 1)[1]}/link"}

    def _files_getUploadURLExternal(self, args: Json) -> Json:
        if not args.get("filename") or not args.get("length"):
            raise SlackError("invalid_arguments")
        file_id = f"F{next(self._ids):08d}"
        self.files[file_id] = SharedFile(file_id, str(args["filename"]), "", b"")
        return {"upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def _files_completeUploadExternal(self, args: Json) -> Json:
        wanted = json.loads(args.get("files", "[]"))
        channel = str(args.get("channel_id", ""))
        if channel:
            self._check_channel(channel)
        done = []
        for entry in wanted:
            shared = self.files.get(entry.get("id", ""))
            if shared is None or not shared.content:
                raise SlackError("file_not_found")
            shared.title = entry.get("title") or shared.filename
            shared.channel, shared.thread_ts = channel, str(args.get("thread_ts", ""))
            shared.initial_comment = str(args.get("initial_comment", ""))
            done.append({"id": shared.file_id, "name": shared.filename, "title": shared.title})
        return {"files": done}


def _pop(queue: dict[str, list[Any]], method: str) -> Any:
    pending = queue.get(method)
    return pending.pop(0) if pending else None


async def _arguments(request: web.Request) -> Json:
    """Query string, form fields and JSON body together, as Slack reads them."""
    args: Json = dict(request.query)
    if request.content_type == "application/json":
        args.update(await request.json())
    elif request.can_read_body:
        args.update((await request.post()).items())
    return args


class SlackSender:
    """Slack's side of the inbound wire: signed requests to the app at `url` (its /slack/events).

    `timestamp` and `signature` can be overridden to forge or replay requests.
    """

    def __init__(
        self, url: str, signing_secret: str, *, response_url: str = "", team: str = "T1"
    ) -> None:
        self.url = url
        self.verifier = SignatureVerifier(signing_secret)
        self.response_url = response_url
        self.team = team
        self._ids = itertools.count(1)

    async def send(
        self,
        body: str,
        content_type: str,
        *,
        timestamp: int | None = None,
        signature: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signed = self.verifier.generate_signature(timestamp=stamp, body=body)
        all_headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature if signature is not None else signed,
            **(headers or {}),
        }
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url, data=body.encode(), headers=all_headers) as response,
        ):
            return response.status, await response.text()

    def command_body(self, text: str, **kwargs: Any) -> str:
        return urlencode(self.command_payload(text, **kwargs))

    def command_payload(
        self,
        text: str,
        *,
        team: str | None = None,
        channel: str = "C1",
        channel_name: str = "research",
        user: str = "U1",
        user_name: str = "ada",
    ) -> dict[str, str]:
        n = next(self._ids)
        return {
            "token": "legacy",
            "team_id": team or self.team,
            "team_domain": "fake",
            "channel_id": channel,
            "channel_name": channel_name,
            "user_id": user,
            "user_name": user_name,
            "command": "/research",
            "text": text,
            "api_app_id": "A1",
            "is_enterprise_install": "false",
            "response_url": f"{self.response_url}-{n}" if self.response_url else "",
            "trigger_id": f"trigger-{n}",
        }

    async def command(self, text: str, **kwargs: Any) -> tuple[int, str]:
        return await self.send(
            self.command_body(text, **kwargs), "application/x-www-form-urlencoded"
        )

    async def action(
        self,
        action_id: str,
        value: str,
        *,
        user: str = "U1",
        team: str | None = None,
        channel: str = "C1",
        message_ts: str = "",
    ) -> tuple[int, str]:
        """A button press."""
        element = {
            "type": "button",
            "action_id": action_id,
            "block_id": "controls",
            "value": value,
            "action_ts": str(time.time()),
            "text": {"type": "plain_text", "text": action_id},
        }
        return await self._block_action(element, user, team, channel, message_ts)

    async def select(
        self,
        action_id: str,
        option: Json,
        *,
        user: str = "U1",
        team: str | None = None,
        channel: str = "C1",
        message_ts: str = "",
    ) -> tuple[int, str]:
        """A choice in a `static_select` (`option` as the message's blocks offer it)."""
        element = {
            "type": "static_select",
            "action_id": action_id,
            "block_id": "select",
            "selected_option": option,
            "action_ts": str(time.time()),
        }
        return await self._block_action(element, user, team, channel, message_ts)

    async def _block_action(
        self, action: Json, user: str, team: str | None, channel: str, message_ts: str
    ) -> tuple[int, str]:
        team = team or self.team
        payload = {
            "type": "block_actions",
            "api_app_id": "A1",
            "token": "legacy",
            "user": {"id": user, "username": user.lower(), "team_id": team},
            "team": {"id": team, "domain": "fake"},
            "container": {
                "type": "message",
                "message_ts": message_ts,
                "channel_id": channel,
                "is_ephemeral": False,
            },
            "channel": {"id": channel, "name": "research"},
            "message": {"type": "message", "ts": message_ts, "user": "UBOT", "text": ""},
            "trigger_id": f"trigger-{next(self._ids)}",
            "response_url": self.response_url,
            "actions": [action],
        }
        return await self.send(
            urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"
        )

    async def event(
        self, event: Json, *, event_id: str, team: str | None = None, retry_num: int | None = None
    ) -> tuple[int, str]:
        body = {
            "token": "legacy",
            "team_id": team or self.team,
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
            "event": event,
            "authorizations": [
                {
                    "team_id": team or self.team,
                    "user_id": "UBOT",
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
        }
        headers = {}
        if retry_num is not None:
            headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "timeout"}
        return await self.send(json.dumps(body), "application/json", headers=headers)

    async def reaction(
        self,
        name: str,
        *,
        channel: str,
        ts: str,
        event_id: str,
        user: str = "U2",
        retry_num: int | None = None,
    ) -> tuple[int, str]:
        event = {
            "type": "reaction_added",
            "user": user,
            "reaction": name,
            "item_user": "UBOT",
            "event_ts": str(time.time()),
            "item": {"type": "message", "channel": channel, "ts": ts},
        }
        return await self.event(event, event_id=event_id, retry_num=retry_num)

    async def mention(
        self,
        text: str,
        *,
        event_id: str,
        channel: str = "C1",
        user: str = "U1",
        thread_ts: str = "",
        bot_user_id: str = "UBOT",
        retry_num: int | None = None,
    ) -> tuple[int, str]:
        """`user` says `<@bot> text` in a channel (or in the thread `thread_ts`)."""
        ts = f"{time.time():.6f}"
        event: Json = {
            "type": "app_mention",
            "user": user,
            "text": f"<@{bot_user_id}> {text}",
            "ts": ts,
            "channel": channel,
            "event_ts": ts,
            "team": self.team,
            "client_msg_id": f"msg-{next(self._ids)}",
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        return await self.event(event, event_id=event_id, retry_num=retry_num)

    async def direct_message(
        self,
        text: str,
        *,
        event_id: str,
        thread_ts: str = "",
        channel: str = "D1",
        user: str = "U1",
        retry_num: int | None = None,
    ) -> tuple[int, str]:
        """`user` writes in an agent-view thread of their DM with the app (or, without
        `thread_ts`, in the DM itself, outside any thread)."""
        ts = f"{time.time():.6f}"
        event: Json = {
            "type": "message",
            "channel_type": "im",
            "user": user,
            "text": text,
            "ts": ts,
            "channel": channel,
            "event_ts": ts,
            "team": self.team,
            "client_msg_id": f"msg-{next(self._ids)}",
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        return await self.event(event, event_id=event_id, retry_num=retry_num)

    async def thread_started(
        self, *, event_id: str, thread_ts: str, channel: str = "D1", user: str = "U1"
    ) -> tuple[int, str]:
        """`user` opens a new thread in the app's agent view (from channel C1)."""
        event = {
            "type": "assistant_thread_started",
            "assistant_thread": {
                "user_id": user,
                "context": {"channel_id": "C1", "team_id": self.team, "enterprise_id": None},
                "channel_id": channel,
                "thread_ts": thread_ts,
            },
            "event_ts": f"{time.time():.6f}",
        }
        return await self.event(event, event_id=event_id)


Pending = TypeVar("Pending", Held, _Failure, _Loss)


def _take(pending: list[Pending], args: Json) -> Pending | None:
    """The first of `pending` (holds or failures, in the order asked) that applies to this
    call, taken off the list."""
    for n, entry in enumerate(pending):
        if entry.where is None or entry.where(args):
            return pending.pop(n)
    return None
