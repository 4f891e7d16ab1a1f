"""Fake Anthropic Messages API on 127.0.0.1: scripted replies in the real JSON and SSE wire format.

Use it with the real SDK, unmodified:

    async with FakeAnthropic() as fake:
        fake.script(reply_tools([("web_search", {"query": "acme"})]), reply_text("Done."))
        client = AsyncAnthropic(api_key="sk-test", base_url=fake.url, max_retries=0)
        ...
        assert fake.requests[0]["tool_choice"] == {"type": "auto"}

Replies come from the queue filled by `script()`, then from `responder` (an async
function of the request body), whose default answers 500 "fake: no scripted reply" with
`x-should-retry: false` so an unscripted call fails at once instead of being retried.

Simplifications: only `x-api-key` (or a bearer token), `anthropic-version`, the
required fields and the cache breakpoint limit are validated; the reply is whatever was
scripted, whatever the request asked (max_tokens, stop_sequences and tool names are
not enforced); output tokens are estimated from the content. Prompt-cache accounting is
simulated, see `anthropic_cache`.

Faults, in the real wire format: `error(...)` is an HTTP error before any stream starts
(429/529 with `retry-after`, 400 `prompt_too_long()`, 401 ...); `dropped(reply, after=n)`
closes the connection after n SSE events; `stream_error(...)` sends an `event: error`
after `message_start`; `stalled(reply, after=n, stall_s=...)` goes silent mid-stream;
`delay_s` holds the whole answer back (a hang past the client's timeout).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import random
import string
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.anthropic_cache import (
    PromptCache,
    TooManyBreakpoints,
    count_input_tokens,
    estimate_tokens,
)

CHUNK_CHARS = 16
Event = tuple[str, dict[str, Any]]


@dataclass
class Reply:
    """A successful assistant message: its content blocks and how it stopped."""

    content: list[dict[str, Any]]
    stop_reason: str | None = "end_turn"
    stop_sequence: str | None = None
    delay_s: float = 0.0
    output_tokens: int | None = None
    cut: Cut | None = None
    """Streamed only: what goes wrong part-way through the stream."""


@dataclass
class Cut:
    """The stream stops after `after` SSE events: the connection drops, an `error` event is
    sent (then the stream ends), or the server goes silent for `stall_s` first."""

    after: int
    error: dict[str, str] | None = None
    stall_s: float = 0.0


@dataclass
class ErrorReply:
    """An API error: HTTP status, error type and message, optional retry headers."""

    status: int
    type: str
    message: str
    retry_after: float | None = None
    should_retry: bool | None = None
    delay_s: float = 0.0


Scripted = Reply | ErrorReply
Responder = Callable[[dict[str, Any]], Awaitable[Scripted]]


def new_id(prefix: str) -> str:
    """An id shaped like the real ones: `msg_01…`, `toolu_01…`, `req_01…`."""
    alphabet = string.ascii_letters + string.digits
    return prefix + "01" + "".join(random.choices(alphabet, k=22))


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    """One tool_use content block."""
    return {"type": "tool_use", "id": id or new_id("toolu_"), "name": name, "input": input}


def reply(
    content: Sequence[dict[str, Any]],
    stop_reason: str | None = "end_turn",
    *,
    stop_sequence: str | None = None,
    delay_s: float = 0.0,
) -> Reply:
    """Any message: pass the blocks and any stop_reason, known to the SDK or not."""
    return Reply(list(content), stop_reason, stop_sequence, delay_s)


def reply_text(text: str, stop_reason: str = "end_turn", *, delay_s: float = 0.0) -> Reply:
    """A message with one text block."""
    return reply([{"type": "text", "text": text}], stop_reason, delay_s=delay_s)


def reply_tools(
    calls: Sequence[tuple[str, dict[str, Any]]], text: str | None = None, *, delay_s: float = 0.0
) -> Reply:
    """A `tool_use` turn: optional leading text, then one tool_use block per call."""
    blocks = [{"type": "text", "text": text}] if text else []
    blocks += [tool_use(name, args) for name, args in calls]
    return reply(blocks, "tool_use", delay_s=delay_s)


def error(
    status: int,
    type: str,
    message: str,
    retry_after: float | None = None,
    *,
    should_retry: bool | None = None,
    delay_s: float = 0.0,
) -> ErrorReply:
    """An error reply, e.g. error(429, "rate_limit_error", "slow down", retry_after=1)."""
    return ErrorReply(status, type, message, retry_after, should_retry, delay_s)


def prompt_too_long(tokens: int = 250_000, maximum: int = 200_000) -> ErrorReply:
    """The real API's answer when the request does not fit the model's context window."""
    return error(
        400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {maximum} maximum"
    )


def dropped(scripted: Reply, after: int = 3) -> Reply:
    """`scripted`, but the connection is closed after `after` SSE events (streaming only)."""
    return dataclasses.replace(scripted, cut=Cut(after))


def stream_error(
    type: str = "overloaded_error", message: str = "Overloaded", *, after: int = 1
) -> Reply:
    """A stream that starts (`message_start`, ...) and then carries an `event: error`."""
    body = reply_text("never finished")
    return dataclasses.replace(body, cut=Cut(after, error={"type": type, "message": message}))


def stalled(scripted: Reply, after: int = 2, *, stall_s: float = 30.0) -> Reply:
    """`scripted`, but the server goes silent for `stall_s` after `after` SSE events."""
    return dataclasses.replace(scripted, cut=Cut(after, stall_s=stall_s))


async def no_scripted_reply(body: dict[str, Any]) -> Scripted:
    """The default responder: fail loudly, and tell the SDK not to retry."""
    return error(500, "api_error", "fake: no scripted reply", should_retry=False)


def _error_response(err: ErrorReply) -> web.Response:
    request_id = new_id("req_")
    headers = {"request-id": request_id}
    if err.retry_after is not None:
        headers["retry-after"] = f"{err.retry_after:g}"
    if err.should_retry is not None:
        headers["x-should-retry"] = "true" if err.should_retry else "false"
    payload = {
        "type": "error",
        "error": {"type": err.type, "message": err.message},
        "request_id": request_id,
    }
    return web.json_response(payload, status=err.status, headers=headers)


def _bad_request(message: str) -> web.Response:
    return _error_response(error(400, "invalid_request_error", message))


def _chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


def _block_events(index: int, block: dict[str, Any]) -> Iterator[Event]:
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": c} for c in _chunks(block["text"])]
        deltas += [{"type": "citations_delta", "citation": c} for c in block.get("citations") or []]
    elif kind in ("tool_use", "server_tool_use"):
        start = {**block, "input": {}}
        raw = json.dumps(block.get("input", {}))
        # The real API opens every tool input with an empty fragment.
        deltas = [{"type": "input_json_delta", "partial_json": c} for c in ["", *_chunks(raw)]]
    elif kind == "thinking":
        start = {**block, "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": c} for c in _chunks(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
    else:
        start = block
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def sse_events(message: dict[str, Any]) -> Iterator[Event]:
    """The event sequence the real API streams for this complete message."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block)
    counts = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    delta_usage = {k: usage[k] for k in counts} | {"output_tokens": usage["output_tokens"]}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": delta_usage}
    yield "message_stop", {"type": "message_stop"}


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


async def _cut_stream(
    request: web.Request, response: web.StreamResponse, cut: Cut
) -> web.StreamResponse:
    if cut.stall_s > 0:
        await asyncio.sleep(cut.stall_s)
    if cut.error is not None:
        await response.write(_sse("error", {"type": "error", "error": cut.error}))
        await response.write_eof()
        return response
    # Mid-body, without the final chunk: the client sees the peer close an incomplete message.
    if request.transport is not None:
        request.transport.close()
    return response


class FakeAnthropic:
    """The fake server. `requests` holds every authenticated JSON body sent to /v1/messages."""

    def __init__(self, api_key: str = "sk-test", *, min_cache_tokens: int = 1024) -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.cancelled = 0
        self.responder: Responder = no_scripted_reply
        self.cache = PromptCache(min_cache_tokens)
        self.url = ""
        self._queue: deque[Scripted] = deque()
        self._gate: asyncio.Event | None = None
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None

    def script(self, *replies: Scripted) -> None:
        """Queue replies; each request takes the next one."""
        self._queue.extend(replies)

    def hold(self) -> asyncio.Event:
        """Hold every request from now on until the returned gate is set."""
        self._gate = asyncio.Event()
        return self._gate

    async def wait_for_requests(self, count: int) -> None:
        """Wait until `count` requests have been recorded."""
        await self._wait(lambda: len(self.requests) >= count)

    async def wait_for_cancelled(self, count: int) -> None:
        """Wait until clients have dropped `count` requests before their answer was done."""
        await self._wait(lambda: self.cancelled >= count)

    async def __aenter__(self) -> FakeAnthropic:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        # handler_cancellation makes a client disconnect cancel the handler, so it is seen.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0
        )
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._gate is not None:
            self._gate.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _wait(self, done: Callable[[], bool]) -> None:
        while not done():
            await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _read(self, request: web.Request) -> dict[str, Any] | web.Response:
        key = request.headers.get("x-api-key") or request.headers.get("authorization") or ""
        if key.removeprefix("Bearer ") != self.api_key:
            return _error_response(error(401, "authentication_error", "invalid x-api-key"))
        if "anthropic-version" not in request.headers:
            return _bad_request("anthropic-version: header is required")
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _bad_request("There was an issue with your request body: invalid JSON")
        if not isinstance(body, dict):
            return _bad_request("request body must be a JSON object")
        return body

    def _invalid(self, body: dict[str, Any], required: Sequence[str]) -> web.Response | None:
        missing = [name for name in required if name not in body]
        if missing:
            return _bad_request(f"{missing[0]}: Field required")
        try:
            self.cache.check(body)
        except TooManyBreakpoints as exc:
            return _bad_request(str(exc))
        return None

    async def _count_tokens(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(request)
        if isinstance(body, web.Response):
            return body
        invalid = self._invalid(body, ("model", "messages"))
        return invalid or web.json_response({"input_tokens": count_input_tokens(body)})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(request)
        if isinstance(body, web.Response):
            return body
        self.requests.append(body)
        self._notify()
        invalid = self._invalid(body, ("model", "max_tokens", "messages"))
        if invalid is not None:
            return invalid
        scripted = self._queue.popleft() if self._queue else await self.responder(body)
        try:
            return await self._answer(request, body, scripted)
        except (asyncio.CancelledError, ConnectionResetError):
            self.cancelled += 1
            self._notify()
            raise

    async def _answer(
        self, request: web.Request, body: dict[str, Any], scripted: Scripted
    ) -> web.StreamResponse:
        if self._gate is not None:
            await self._gate.wait()
        if scripted.delay_s > 0:
            await asyncio.sleep(scripted.delay_s)
        if isinstance(scripted, ErrorReply):
            return _error_response(scripted)
        message = self._message(body, scripted)
        if not body.get("stream"):
            return web.json_response(message, headers={"request-id": new_id("req_")})
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "request-id": new_id("req_"),
            }
        )
        await response.prepare(request)
        cut = scripted.cut
        for sent, (name, data) in enumerate(sse_events(message)):
            if cut is not None and sent == cut.after:
                return await _cut_stream(request, response, cut)
            await response.write(_sse(name, data))
        await response.write_eof()
        return response

    def _message(self, body: dict[str, Any], scripted: Reply) -> dict[str, Any]:
        content = copy.deepcopy(scripted.content)
        usage = self.cache.usage(body)
        usage["output_tokens"] = scripted.output_tokens or estimate_tokens(content)
        usage["service_tier"] = "standard"
        return {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": scripted.stop_reason,
            "stop_sequence": scripted.stop_sequence,
            "usage": usage,
        }
