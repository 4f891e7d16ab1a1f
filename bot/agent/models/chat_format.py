"""Translating between the Messages API's shapes, which the whole agent speaks, and Chat
Completions', which every OpenAI-compatible server reads: a `ModelCall` becomes a request body,
a reply's text and tool calls become content blocks with a Messages API stop reason.

Pure data, no SDK: `openai_model.py` sends what this builds. What Chat Completions has no form
for is left out: `cache_control` marks (its prompt caching is automatic), and Anthropic's own
blocks (thinking, server tools) that no other provider could read.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from typing import Any

from bot.agent.models.port import Block, ModelCall

log = logging.getLogger(__name__)

ChatMessage = dict[str, Any]
"""One message as Chat Completions speaks it."""

STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
"""Chat Completions' `finish_reason` → the Messages API's `stop_reason`; others pass as they are."""
_TOOL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Tool call ids the Messages API accepts back, should the next turn go to Anthropic."""


def chat_request(call: ModelCall) -> dict[str, Any]:
    """`messages`, and `tools`, `tool_choice` and `parallel_tool_calls` when the call has tools."""
    system = "\n\n".join(b["text"] for b in call.system if b.get("type") == "text")
    messages: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
    for message in call.messages:
        messages.extend(_messages(message))
    body: dict[str, Any] = {"messages": messages}
    if call.tools:
        body["tools"] = [_tool(t) for t in call.tools]
        # Chat Completions refuses a tool_choice without tools.
        if call.tool_choice is not None:
            body.update(_tool_choice(call.tool_choice))
    return body


def _messages(message: dict[str, Any]) -> Iterator[ChatMessage]:
    role, content = message["role"], message["content"]
    if isinstance(content, str):
        yield {"role": role, "content": content}
    elif role == "assistant":
        yield _assistant(content)
    else:
        # Tool results answer the assistant's calls and must come right after them; words the
        # user message adds (a nudge, feedback) follow as a user message of their own.
        for block in content:
            if block.get("type") == "tool_result":
                yield {
                    "role": "tool",
                    "tool_call_id": block["tool_use_id"],
                    "content": _result_text(block),
                }
        text = _text(content)
        if text:
            yield {"role": "user", "content": text}


def _assistant(content: list[Block]) -> ChatMessage:
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})},
        }
        for b in content
        if b.get("type") == "tool_use"
    ]
    # No text beside tool calls is null; an assistant message with neither must still be text.
    message: ChatMessage = {
        "role": "assistant",
        "content": _text(content) or (None if calls else ""),
    }
    if calls:
        message["tool_calls"] = calls
    return message


def _text(content: list[Block]) -> str:
    return "\n\n".join(b["text"] for b in content if b.get("type") == "text" and b["text"])


def _result_text(block: Block) -> str:
    content = block.get("content", "")
    text = content if isinstance(content, str) else _text(content)
    # Chat Completions has no is_error: the model reads it in the text instead.
    return f"Error: {text}" if block.get("is_error") else text


def _tool(tool: Block) -> dict[str, Any]:
    function = {"name": tool["name"], "parameters": tool["input_schema"]}
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Block) -> dict[str, Any]:
    kind = choice["type"]
    body: dict[str, Any] = {}
    if kind == "tool":
        body["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    else:
        body["tool_choice"] = {"auto": "auto", "none": "none", "any": "required"}[kind]
    if choice.get("disable_parallel_tool_use"):
        body["parallel_tool_calls"] = False
    return body


class ReplyParts:
    """A reply as it streams in: text, refusal, tool calls by index, finish reason."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None

    def add_call(self, index: int, id: str | None, name: str | None, arguments: str | None) -> None:
        call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        call["id"] = id or call["id"]
        call["name"] += name or ""
        call["arguments"] += arguments or ""

    def blocks(self) -> tuple[list[Block], str | None]:
        """Content blocks in the Messages API's shape, and its stop reason."""
        text, refusal = "".join(self.text), "".join(self.refusal)
        content: list[Block] = (
            [{"type": "text", "text": text or refusal}] if text or refusal else []
        )
        content += [_tool_use(self.calls[i]) for i in sorted(self.calls)]
        reason = self.finish_reason
        if refusal and not text:
            return content, "refusal"
        # A forced tool call finishes with "stop": the calls are what the loop must see.
        if self.calls and reason != "length":
            return content, "tool_use"
        return content, STOP_REASONS.get(reason or "", reason)


def _tool_use(call: dict[str, Any]) -> Block:
    try:
        arguments = json.loads(call["arguments"] or "{}")
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        # The tool then answers with what is missing, and the model can call it again.
        log.warning("tool call %s came with arguments that are not a JSON object", call["name"])
        arguments = {}
    call_id = call["id"] if _TOOL_ID.match(call["id"]) else f"call_{uuid.uuid4().hex[:24]}"
    return {"type": "tool_use", "id": call_id, "name": call["name"], "input": arguments}
