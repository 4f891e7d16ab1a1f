"""Token cost: input cost of a scripted 12-turn run against resending it all uncached (goal 0.35).

The real `Researcher`, `AnthropicModel` and anthropic SDK talk to the fake Messages API
(tests/fakes/anthropic_api.py), which simulates prompt caching with a 1,024-token minimum and
reports `cache_read_input_tokens` and `cache_creation_input_tokens` like the real one. The
tools are the production `web_search` and `read_page` (same schemas, headings and fences)
over a scripted search engine and scripted pages of realistic size (about 1.5k-3k tokens per
result, 2-3 results per turn), so the conversation grows as it does in a real run.

Cost is counted in input-token equivalents: uncached input at 1, cache reads at 0.1, cache
writes (5 minutes) at 1.25. The naive loop sends the very same requests without
`cache_control`: every input token at 1.

    python -m bench.token_cost
"""

from __future__ import annotations

import asyncio
import random
import sys
from dataclasses import dataclass

from anthropic import AsyncAnthropic

from bot.agent.calls import Limits
from bot.agent.compress import Compressor, estimate_tokens
from bot.agent.control import Control
from bot.agent.events import Ending, Event, RunFinished, ToolFinished, Usage, UsageRecorded
from bot.agent.loop import Researcher
from bot.agent.models.port import AnthropicModel
from bot.agent.report.model import Source
from bot.agent.web.fetch import Page
from bot.agent.web.registry import research_tools
from bot.config import DEFAULT_PRICES, Settings
from bot.domain import Request
from tests.fakes.anthropic_api import FakeAnthropic, Reply, reply_text, reply_tools
from tests.fakes.anthropic_cache import count_input_tokens

GOAL = 0.35
TURNS = 12
READ, WRITE = 0.1, 1.25
MODEL = str(Settings.model_fields["model"].default)
FAST_MODEL = str(Settings.model_fields["fast_model"].default)
TOPIC = "Acme Robotics"
SITE = "https://acme-robotics.example"
PAGE_CHARS = (6_000, 12_000)
"""Extracted page text, about 1.5k-3k tokens at four characters a token."""
SEARCH_RESULTS = 10
SNIPPET_CHARS = 500
"""What Tavily returns at most per result: ten of them make about 1.5k tokens."""
VOCABULARY = (
    "robots warehouse picking autonomous funding series customers revenue founded engineers "
    "logistics platform fleet pilot contract retail grocery partners investors valuation growth "
    "market competitors Pittsburgh software vision gripper deployment throughput hiring chief "
    "executive announced quarter million percent expansion"
)
WORDS = VOCABULARY.split()
REPORT = """# Acme Robotics

## TL;DR
- Acme builds autonomous picking robots for warehouses [1][3].
- It raised a Series B round [2].

## Overview
Acme was founded in Pittsburgh [1] and deploys fleets in grocery warehouses [4].

## Risks
Competition is strong [5].
"""


def prose(rng: random.Random, chars: int) -> str:
    """Plausible-looking text of about `chars` characters, in paragraphs."""
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        words.append(word + ("." if rng.random() < 0.08 else ""))
        size += len(word) + 1
    text = " ".join(words)
    return "\n\n".join(text[i : i + 600] for i in range(0, len(text), 600))


class ScriptedSearch:
    """A SearchProvider with full-size results: ten titles, URLs and 500-character snippets."""

    name = "scripted"

    async def search(self, query: str, max_results: int) -> list[Source]:
        rng = random.Random(query)
        slug = "-".join(query.lower().split())
        return [
            Source(
                url=f"https://news{i}.example/{slug}",
                title=f"{query}: result {i}",
                snippet=prose(rng, SNIPPET_CHARS)[:SNIPPET_CHARS],
            )
            for i in range(max_results)
        ]


class ScriptedPages:
    """Stands in for PageFetcher: `read_page` only calls `fetch(url)`."""

    async def fetch(self, url: str) -> Page:
        rng = random.Random(url)
        return Page(
            url=url,
            title=f"Acme Robotics - {url.rsplit('/', 1)[-1]}",
            text=prose(rng, rng.randint(*PAGE_CHARS)),
            truncated=False,
        )


def tool_turn(rng: random.Random, number: int) -> Reply:
    """2-3 parallel calls: searches early on, mostly page reads later."""
    calls = []
    for i in range(rng.randint(2, 3)):
        if number == 1 or (i == 0 and number % 3 == 0):
            calls.append(
                (
                    "web_search",
                    {"query": f"{TOPIC} topic {number}-{i}", "max_results": SEARCH_RESULTS},
                )
            )
        else:
            calls.append(("read_page", {"url": f"{SITE}/page-{number}-{i}"}))
    return reply_tools(calls, text=f"Turn {number}: looking further into {TOPIC}.")


def script(ending: str) -> list[Reply]:
    """`completed`: 11 tool turns and the report at turn 12. `max_turns`: 12 tool turns, then
    the loop's own synthesis call (tools kept, `tool_choice: none`)."""
    rng = random.Random(7)
    tool_turns = TURNS - 1 if ending == "completed" else TURNS
    return [*(tool_turn(rng, n) for n in range(1, tool_turns + 1)), reply_text(REPORT)]


@dataclass
class Cost:
    calls: list[Usage]
    sent: list[int]
    """Total input tokens of each request as the fake server counts them (cached or not)."""
    results: list[int]
    """Estimated tokens of each tool result the model was given."""

    @property
    def ours(self) -> float:
        return sum(
            u.input_tokens + READ * u.cache_read_tokens + WRITE * u.cache_write_tokens
            for u in self.calls
        )

    @property
    def naive(self) -> int:
        return sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for u in self.calls)


async def measure(ending: str) -> Cost:
    async with (
        FakeAnthropic(min_cache_tokens=1024) as fake,
        AsyncAnthropic(api_key=fake.api_key, base_url=fake.url, max_retries=0) as client,
    ):
        fake.script(*script(ending))
        model = AnthropicModel(client, model=MODEL, prices=DEFAULT_PRICES)
        # No summarizing: tool output stays whole, so the context grows as large as it can.
        compressor = Compressor(model, fast_model=FAST_MODEL, threshold_tokens=10**9, timeout_s=30)
        tools = research_tools(ScriptedSearch(), ScriptedPages(), timeout_s=30)  # type: ignore[arg-type]
        engine = Researcher(model, tools, compressor, Limits(max_turns=TURNS))
        events = [e async for e in engine.research("bench", Request(topic=TOPIC), Control())]
        check(events, ending)
        # The research model's conversation only: the claim judge's one call on the fast model
        # (unscripted here, so it fails and its claims stay unknown) is not what caching is for.
        calls = [e.usage for e in events if isinstance(e, UsageRecorded) and e.model == MODEL]
        results = [estimate_tokens(e.content) for e in events if isinstance(e, ToolFinished)]
        sent = [count_input_tokens(body) for body in fake.requests if body["model"] == MODEL]
        return Cost(calls=calls, sent=sent, results=results)


def check(events: list[Event], ending: str) -> None:
    """Refuse to report on a run that did not go as scripted."""
    last = events[-1]
    expected = Ending.COMPLETED if ending == "completed" else Ending.MAX_TURNS_SYNTHESIZED
    if not isinstance(last, RunFinished) or last.ending is not expected:
        raise SystemExit(f"the scripted run ended with {last} instead of {expected}")
    if any(isinstance(e, ToolFinished) and e.is_error for e in events):
        raise SystemExit("a scripted tool failed")


def show(title: str, cost: Cost) -> float:
    print(f"\n{title}")
    print(
        f"{'call':>4}  {'input':>7}  {'cache read':>10}  {'cache write':>11}  {'full':>7}  "
        f"{'ours':>8}"
    )
    for n, u in enumerate(cost.calls, start=1):
        full = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        ours = u.input_tokens + READ * u.cache_read_tokens + WRITE * u.cache_write_tokens
        print(
            f"{n:>4}  {u.input_tokens:>7}  {u.cache_read_tokens:>10}  {u.cache_write_tokens:>11}"
            f"  {full:>7}  {ours:>8.0f}"
        )
    if cost.sent != [
        u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for u in cost.calls
    ]:
        raise SystemExit("the usage reported does not add up to the requests sent")
    print(
        f"{len(cost.results)} tool results of {min(cost.results):,}-{max(cost.results):,} "
        f"tokens (mean {sum(cost.results) // len(cost.results):,})"
    )
    ratio = cost.ours / cost.naive
    print(f"ours {cost.ours:,.0f}  naive {cost.naive:,}  ratio {ratio:.3f}")
    return ratio


def main() -> None:
    print(
        f"token cost: {TURNS}-turn scripted run, input token-equivalents "
        f"(input x1, cache read x{READ}, cache write x{WRITE}) against resending it all "
        f"uncached"
    )
    ratio = show(
        "ending `completed`: 11 tool turns, the report at turn 12 (the goal's run)",
        asyncio.run(measure("completed")),
    )
    synthesis = asyncio.run(measure("max_turns"))
    forced = show(
        "ending `max_turns_synthesized`: 12 tool turns, then the synthesis call", synthesis
    )
    last = synthesis.calls[-1]
    print(
        f"\ncompleted run: {ratio:.3f} of the naive cost  "
        f"{'PASS' if ratio <= GOAL else 'FAIL'} (goal <= {GOAL})"
    )
    over = "within" if forced <= GOAL else "over"
    print(
        f"max-turns run with synthesis: {forced:.3f} of the naive cost, {over} the same goal "
        f"(for information; its synthesis call read {last.cache_read_tokens:,} tokens from the "
        f"cache and wrote {last.cache_write_tokens:,})"
    )
    sys.exit(0 if ratio <= GOAL else 1)


if __name__ == "__main__":
    main()
