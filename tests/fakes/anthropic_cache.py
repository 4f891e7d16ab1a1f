"""Prompt-cache simulation for the fake Messages API: token estimates and cache accounting.

The prompt is read as one sequence of blocks, tools → system → messages, the order the
real API caches in. Simplifications against the real service, on purpose:

- tokens are estimated as len(json of the block) / 4, at least 1 per block;
- entries never expire (no 5-minute or 1-hour TTL clock) and there is no eviction;
- all cache writes are reported under the TTL of the last breakpoint;
- `tool_choice` is mixed into the hash of message blocks only, so changing it (e.g. a
  synthesis call with `tool_choice: none`) re-buys the conversation but still reads the
  cached tools and system prompt, as the real API documents; images, thinking settings
  and other invalidators are ignored;
- the minimum cacheable prefix is one number for every model (configurable).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20


class TooManyBreakpoints(ValueError):
    """More `cache_control` blocks than the real API accepts."""


def estimate_tokens(value: Any) -> int:
    """Roughly four characters per token, like the usual rule of thumb."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return max(1, len(text) // 4)


@dataclass(frozen=True)
class _Block:
    section: str
    role: str
    body: dict[str, Any]

    @property
    def cache_control(self) -> dict[str, Any] | None:
        cc = self.body.get("cache_control")
        return cc if isinstance(cc, dict) else None

    def key(self) -> str:
        # cache_control itself is an annotation, not prompt content.
        content = {k: v for k, v in self.body.items() if k != "cache_control"}
        return json.dumps([self.section, self.role, content], sort_keys=True)


def _prompt_blocks(body: dict[str, Any]) -> list[_Block]:
    blocks = [_Block("tools", "", t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        blocks.append(_Block("system", "", {"type": "text", "text": system}))
    elif isinstance(system, list):
        blocks += [_Block("system", "", b) for b in system]
    for message in body.get("messages") or []:
        role, content = message.get("role", ""), message.get("content")
        if isinstance(content, str):
            blocks.append(_Block("messages", role, {"type": "text", "text": content}))
        else:
            blocks += [_Block("messages", role, b) for b in content or []]
    return blocks


def count_input_tokens(body: dict[str, Any]) -> int:
    """Total input tokens of a request body, cached or not."""
    return sum(estimate_tokens(b.key()) for b in _prompt_blocks(body))


@dataclass
class PromptCache:
    """Remembers cached prefixes (by hash, per model) and splits a request's input tokens."""

    min_tokens: int = 1024
    prefixes: set[str] = field(default_factory=set)

    def clear(self) -> None:
        self.prefixes.clear()

    def check(self, body: dict[str, Any]) -> None:
        """Raise TooManyBreakpoints if the request could never be accepted."""
        found = sum(1 for b in _prompt_blocks(body) if b.cache_control is not None)
        if found > MAX_BREAKPOINTS:
            raise TooManyBreakpoints(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {found}."
            )

    def usage(self, body: dict[str, Any]) -> dict[str, Any]:
        """Input-side usage for this request, and store the prefixes it writes."""
        self.check(body)
        blocks = _prompt_blocks(body)
        hashes, cumulative = self._prefixes(body, blocks)
        total = cumulative[-1] if cumulative else 0
        breakpoints = [i for i, b in enumerate(blocks) if b.cache_control is not None]
        read_at = self._longest_hit(hashes, breakpoints)
        read = cumulative[read_at] if read_at is not None else 0
        written = [i for i in breakpoints if cumulative[i] >= self.min_tokens]
        creation = 0
        ttl = "5m"
        if written and (read_at is None or written[-1] > read_at):
            creation = cumulative[written[-1]] - read
            ttl = (blocks[written[-1]].cache_control or {}).get("ttl", "5m")
        self.prefixes.update(hashes[i] for i in written)
        return {
            "input_tokens": total - read - creation,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": creation if ttl != "1h" else 0,
                "ephemeral_1h_input_tokens": creation if ttl == "1h" else 0,
            },
        }

    def _prefixes(self, body: dict[str, Any], blocks: list[_Block]) -> tuple[list[str], list[int]]:
        running = hashlib.sha256(str(body.get("model", "")).encode())
        tool_choice = json.dumps(body.get("tool_choice"), sort_keys=True)
        hashes: list[str] = []
        cumulative: list[int] = []
        tokens = 0
        in_messages = False
        for block in blocks:
            if block.section == "messages" and not in_messages:
                in_messages = True
                running.update(tool_choice.encode())
            running.update(block.key().encode())
            tokens += estimate_tokens(block.key())
            hashes.append(running.copy().hexdigest())
            cumulative.append(tokens)
        return hashes, cumulative

    def _longest_hit(self, hashes: list[str], breakpoints: list[int]) -> int | None:
        for bp in reversed(breakpoints):
            for i in range(bp, max(-1, bp - LOOKBACK_BLOCKS), -1):
                if hashes[i] in self.prefixes:
                    return i
        return None
