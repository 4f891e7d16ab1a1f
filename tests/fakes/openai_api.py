"""Fake OpenAI-compatible Chat Completions API on 127.0.0.1: scripted replies in the real JSON and
SSE wire format, for the real `openai` SDK, unmodified:

    async with FakeOpenAI() as fake:
        fake.script(chat_tools([("web_search", {"query": "acme"})]), chat_text("Done."))
        client = AsyncOpenAI(api_key="sk-test", base_url=fake.url + "/v1", max_retries=0)
        ...
        assert fake.requests[0]["tool_choice"] == "auto"

Replies come from the queue filled by `script()`, then from `responder` (an async function of
the request body), whose default answers 500 "fake: no scripted reply" with
`x-should-retry: false`, so an unscripted call fails at once instead of being retried.

Streaming (`stream: true`) sends `chat.completion.chunk`s: the role, content in small pieces,
each tool call's id and name then its arguments in pieces, the finish reason, the usage chunk
(with `stream_options.include_usage`) and `data: [DONE]`. Like the real API it refuses a
conversation whose tool messages do not answer the assistant's tool calls, and a `tool_choice`
without tools. `api_key=None` is a local server that takes any key. Faults: `chat_error(...)`
before any stream (with `x-should-retry` and `retry-after`), `cut(reply, after=n)` closes the
connection after n chunks.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import string
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CHUNK_CHARS = 16


@dataclass
class ChatReply:
    """An assistant message: text, tool calls (`{"id", "name", "arguments"}`), how it finished."""

    text: str = ""
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    finish_reason: str | None = None
    """Default: `tool_calls` when there are calls, else `stop`."""
    refusal: str | None = None
    cached_tokens: int = 0
    report_usage: bool = True
    """False: a server that never reports usage."""
    cut_after: int | None = None
    """Streamed only: the connection closes after this many chunks."""
    delay_s: float = 0.0


@dataclass
class ChatError:
    status: int
    message: str
    type: str = "server_error"
    code: str | None = None
    should_retry: bool | None = False
    retry_after: float | None = None


Scripted = ChatReply | ChatError
Responder = Callable[[dict[str, Any]], Awaitable[Scripted]]


def new_id(prefix: str, k: int = 24) -> str:
    return prefix + "".join(random.choices(string.ascii_letters + string.digits, k=k))


def chat_text(text: str, finish_reason: str = "stop", *, cached_tokens: int = 0) -> ChatReply:
    return ChatReply(text=text, finish_reason=finish_reason, cached_tokens=cached_tokens)


def chat_tools(
    calls: Sequence[tuple[str, dict[str, Any]]],
    text: str = "",
    *,
    finish_reason: str | None = None,
) -> ChatReply:
    """A turn that calls tools; `finish_reason="stop"` is what a forced tool call ends with."""
    tool_calls = [
        {"id": new_id("call_"), "name": name, "arguments": json.dumps(args)} for name, args in calls
    ]
    return ChatReply(text=text, tool_calls=tool_calls, finish_reason=finish_reason)


def chat_error(
    status: int,
    message: str,
    *,
    type: str = "server_error",
    code: str | None = None,
    should_retry: bool | None = False,
    retry_after: float | None = None,
) -> ChatError:
    return ChatError(status, message, type, code, should_retry, retry_after)


def context_too_long() -> ChatError:
    """OpenAI's answer when the conversation does not fit the model's window."""
    return chat_error(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages resulted "
        "in 130000 tokens. Please reduce the length of the messages.",
        type="invalid_request_error",
        code="context_length_exceeded",
    )


def cut(reply: ChatReply, after: int = 2) -> ChatReply:
    return dataclasses.replace(reply, cut_after=after)


async def no_scripted_reply(body: dict[str, Any]) -> Scripted:
    return chat_error(500, "fake: no scripted reply")


class FakeOpenAI:
    """The fake server. `requests` holds every accepted JSON body sent to /v1/chat/completions."""

    def __init__(self, api_key: str | None = "sk-test") -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.responder: Responder = no_scripted_reply
        self.url = ""
        self._queue: deque[Scripted] = deque()
        self._runner: web.AppRunner | None = None

    def script(self, *replies: Scripted) -> None:
        self._queue.extend(replies)

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._completions)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.api_key is not None and key != self.api_key:
            return _error(
                chat_error(
                    401,
                    "Incorrect API key provided.",
                    type="invalid_request_error",
                    code="invalid_api_key",
                )
            )
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _invalid("We could not parse the JSON body of your request.")
        problem = _problem(body)
        if problem is not None:
            return _invalid(problem)
        self.requests.append(body)
        scripted = self._queue.popleft() if self._queue else await self.responder(body)
        if isinstance(scripted, ChatError):
            return _error(scripted)
        if scripted.delay_s:
            await asyncio.sleep(scripted.delay_s)
        completion = _completion(body, scripted)
        if not body.get("stream"):
            return web.json_response(completion)
        return await self._stream(request, body, scripted, completion)

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        scripted: ChatReply,
        completion: dict[str, Any],
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            }
        )
        await response.prepare(request)
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        for sent, chunk in enumerate(_chunks(completion, with_usage)):
            if scripted.cut_after is not None and sent == scripted.cut_after:
                if request.transport is not None:
                    request.transport.close()
                return response
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _problem(body: Any) -> str | None:
    """What the real API would refuse about this request, as its message says it."""
    if not isinstance(body, dict):
        return "The request body must be a JSON object."
    for name in ("model", "messages"):
        if name not in body:
            return f"Missing required parameter: '{name}'."
    if "tool_choice" in body and not body.get("tools"):
        return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or "name" not in tool.get("function", {}):
            return "Missing required parameter: 'tools[0].function.name'."
    return _conversation_problem(body["messages"])


def _conversation_problem(messages: list[dict[str, Any]]) -> str | None:
    pending: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}"
            )
        if role not in ("system", "developer", "user", "assistant"):
            return f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool'."
        content = message.get("content")
        if content is None and not message.get("tool_calls"):
            return "Invalid value for 'content': expected a string, got null."
        if not (content is None or isinstance(content, str)) and not all(
            isinstance(p, dict) and p.get("type") == "text" for p in content
        ):
            return "Invalid type for 'content': expected a string or an array of text parts."
        pending = [call["id"] for call in message.get("tool_calls") or []]
    return None


def _completion(body: dict[str, Any], scripted: ChatReply) -> dict[str, Any]:
    calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for c in scripted.tool_calls
    ]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": scripted.text or None,
        "refusal": scripted.refusal,
    }
    if calls:
        message["tool_calls"] = calls
    finish = scripted.finish_reason or ("tool_calls" if calls else "stop")
    prompt = len(json.dumps(body["messages"]) + json.dumps(body.get("tools") or [])) // 4
    completion = (len(scripted.text) + sum(len(c["arguments"]) for c in scripted.tool_calls)) // 4
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion + 1,
        "total_tokens": prompt + completion + 1,
        "prompt_tokens_details": {"cached_tokens": min(scripted.cached_tokens, prompt)},
    }
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage if scripted.report_usage else None,
    }


def _chunks(completion: dict[str, Any], with_usage: bool) -> Iterator[dict[str, Any]]:
    """The chunks the real API streams for this complete reply."""
    base = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }
    usage: dict[str, Any] = {"usage": None} if with_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return base | {"choices": [choice]} | usage

    message = completion["choices"][0]["message"]
    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in _pieces(message["content"] or ""):
        yield chunk({"content": piece})
    for piece in _pieces(message["refusal"] or ""):
        yield chunk({"refusal": piece})
    for index, call in enumerate(message.get("tool_calls") or []):
        start = {"index": index, "id": call["id"], "type": "function"}
        yield chunk(
            {
                "tool_calls": [
                    start | {"function": {"name": call["function"]["name"], "arguments": ""}}
                ]
            }
        )
        for piece in _pieces(call["function"]["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, completion["choices"][0]["finish_reason"])
    if with_usage and completion["usage"] is not None:
        yield base | {"choices": [], "usage": completion["usage"]}


def _pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


def _error(err: ChatError) -> web.Response:
    headers = {"x-request-id": new_id("req_")}
    if err.should_retry is not None:
        headers["x-should-retry"] = "true" if err.should_retry else "false"
    if err.retry_after is not None:
        headers["retry-after"] = f"{err.retry_after:g}"
    payload = {"error": {"message": err.message, "type": err.type, "param": None, "code": err.code}}
    return web.json_response(payload, status=err.status, headers=headers)


def _invalid(message: str) -> web.Response:
    return _error(chat_error(400, message, type="invalid_request_error", should_retry=None))
