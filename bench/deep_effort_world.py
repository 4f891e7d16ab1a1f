"""The scripted world of bench.deep_effort: a model that answers each deep-run call as a real
model would answer what that call asks for, with replies sized like a real model's, and waits
for each as if generating it; scripted searches and pages. It runs inside each engine's
subprocess and imports `bot` only inside `run_side`, so whichever `bot` is first on the path
is the one measured."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

TOPIC = "Acme Robotics"
TOKENS_PER_S = 2_500.0
"""About 50 times a real model's output speed: the waits keep their proportions, not their length."""
FIRST_TOKEN_S = 0.05
TOOL_S = 0.03
CHARS_PER_TOKEN = 4
"""Output tokens are the reply's characters (its tool input as JSON) / 4, as the fake API counts."""
WORDS_PER_SECTION = {"large": 200, "small": 90}
"""The report's length: words per required section (8 of them; the old writer's 3-7 sections
hold the same words). The old supervisor's draft is the same report, organised by theme."""
FINDING_CHARS = {"large": 2_400, "small": 1_200}
"""A finding's summary (about 600 and 300 tokens), plus five key findings."""
THOUGHT_CHARS = 200
"""The few words a researcher writes before its tool calls each turn."""
SECTIONS = [
    "Overview", "Products and services", "Funding and financials", "People",
    "Customers and market", "Competitors", "Recent news", "Risks",
]  # fmt: skip
OLD_AREAS = [
    "business and products", "funding and financials", "people", "market and competitors",
    "risks and news",
]  # fmt: skip
"""The five areas the old plan prompt names as typical: the old planner always asks these."""


@dataclass(frozen=True)
class Scenario:
    name: str
    size: str
    """large | small: what is published about the company."""
    gap_round: bool = False
    """The supervisor names one gap after the first round (one more researcher)."""
    small_plan: tuple[int, int] = (2, 4)
    """What a planner allowed to scale gives a small company: sub-questions, turns each."""


SCENARIOS = [
    Scenario("listed company", "large"),
    Scenario("listed company, a gap round", "large", gap_round=True),
    Scenario("small private company", "small"),
]


def prose(rng: random.Random, chars: int, cited: list[int]) -> str:
    """Sentences of report-like text with citations, about `chars` long."""
    words = [
        "the", "company", "sells", "warehouse", "robots", "to", "grocery", "chains", "and",
        "reported", "revenue", "growth", "in", "2024", "while", "its", "competitors", "raised",
        "new", "funding", "rounds", "and", "hired", "engineers", "in", "Europe",
    ]  # fmt: skip
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(words) for _ in range(14)).capitalize()
        sentence += f" [{rng.choice(cited)}]." if cited else "."
        out.append(sentence)
        size += len(sentence) + 1
    return " ".join(out)


def tokens_of(value: Any) -> int:
    return max(1, len(json.dumps(value, ensure_ascii=False)) // CHARS_PER_TOKEN)


def forced(body: dict[str, Any]) -> str | None:
    choice = body.get("tool_choice") or {}
    return choice.get("name") if choice.get("type") == "tool" else None


def first_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content if b.get("type") == "text")


def cited_numbers(body: dict[str, Any]) -> list[int]:
    found = re.findall(r"\[(\d+)\]", json.dumps(body["messages"]))
    return sorted({int(n) for n in found})[:20] or [1]


@dataclass
class Calls:
    """Output tokens by stage, as the scripted model billed them."""

    plan: int = 0
    researchers: int = 0
    supervisor: int = 0
    writer: int = 0
    judge: int = 0
    """The claim judge runs on the fast model: not a research-model figure."""
    supervisor_calls: int = 0
    writer_calls: int = 0


@dataclass
class World:
    scenario: Scenario
    calls: Calls = field(default_factory=Calls)
    supervised: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def answer(self, body: dict[str, Any]) -> tuple[str, list[tuple[str, Any]], str]:
        """(stage, tool calls or [("text", text)], text before them) for one request."""
        name = forced(body)
        tools = {t["name"] for t in body.get("tools", [])}
        if name == "submit_plan":
            return "plan", [(name, self.plan(body))], ""
        if name in ("submit_draft", "submit_coverage"):
            self.supervised += 1
            check = self.draft(body) if name == "submit_draft" else self.coverage(body)
            return "supervisor", [(name, check)], ""
        if name == "submit_report":
            return "writer", [(name, self.report(body))], ""
        if name == "record_verdicts":
            ids = re.findall(r"^Claim (\d+)", first_text(body), re.M)
            verdicts = [{"id": int(i), "verdict": "supported"} for i in ids]
            return "judge", [(name, {"claims": verdicts})], ""
        if "submit_finding" in tools:
            return "researchers", *self.researcher(body, name)
        raise SystemExit(f"the scripted model has no answer for this call ({name})")

    def plan(self, body: dict[str, Any]) -> dict[str, Any]:
        scalable = "turns" in json.dumps(body["tools"][0]["input_schema"])
        if not scalable:  # the old prompt: 3 to 6 sub-questions, typically its five areas
            areas = OLD_AREAS
            return {"questions": [self.question(a, i) for i, a in enumerate(areas)]}
        allowed = int(re.findall(r"up to (\d+) sub-questions", first_text(body))[0])
        if self.scenario.size == "small":
            count, turns = self.scenario.small_plan
            areas = ["business, products and people", "funding, customers, news and risks"]
            return {
                "questions": [self.question(a, i) for i, a in enumerate(areas[:count])],
                "turns": turns,
            }
        return {"questions": [self.question(a, i) for i, a in enumerate(OLD_AREAS[:allowed])]}

    @staticmethod
    def question(area: str, i: int) -> dict[str, Any]:
        return {"question": f"What is known about {TOPIC}'s {area}?", "priority": 1 + i % 2}

    def researcher(
        self, body: dict[str, Any], name: str | None
    ) -> tuple[list[tuple[str, Any]], str]:
        task = first_text(body)
        question = task.rsplit("Your sub-question: ", 1)[-1].strip()
        slug = "-".join(re.findall(r"\w+", question.lower()))[:40]
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        work = (
            [["s", "s"], ["r", "r"], ["r", "r"]]
            if self.scenario.size == "large"
            else [["s", "s"], ["s", "s"], ["r"]]
        )
        thought = prose(self.rng, THOUGHT_CHARS, [])
        if name == "submit_finding" or turn >= len(work):
            return [("submit_finding", self.finding(body))], ""
        calls: list[tuple[str, Any]] = []
        for k, kind in enumerate(work[turn]):
            if kind == "s":
                calls.append(("web_search", {"query": f"{question} {turn}{k}"}))
            else:
                calls.append(("read_page", {"url": f"https://pages.example/{slug}/{turn}{k}"}))
        return calls, thought

    def finding(self, body: dict[str, Any]) -> dict[str, Any]:
        cited = cited_numbers(body)
        chars = FINDING_CHARS[self.scenario.size]
        return {
            "summary": prose(self.rng, chars, cited),
            "key_findings": [prose(self.rng, 90, cited) for _ in range(5)],
            "confidence": "medium",
            "notes": [prose(self.rng, 80, [])],
        }

    def gaps(self, body: dict[str, Any]) -> list[dict[str, str]]:
        ask = self.scenario.gap_round and "There is no further round" not in first_text(body)
        return [{"question": f"Who are {TOPIC}'s largest customers?"}] if ask else []

    def report_chars(self) -> int:
        return WORDS_PER_SECTION[self.scenario.size] * len(SECTIONS) * 6

    def draft(self, body: dict[str, Any]) -> dict[str, Any]:
        cited = cited_numbers(body)
        themes = ["Business", "Money", "People", "Market", "Outlook", "Conclusion"]
        each = self.report_chars() // len(themes)
        text = "\n\n".join(f"## {t}\n\n{prose(self.rng, each, cited)}" for t in themes)
        return {"draft": text, "gaps": self.gaps(body)}

    def coverage(self, body: dict[str, Any]) -> dict[str, Any]:
        thin = self.scenario.size == "small"
        sections = [
            {
                "section": s,
                "status": "thin" if thin and i % 2 else "covered",
                "note": prose(self.rng, 50, []) if thin and i % 2 else "",
            }
            for i, s in enumerate(SECTIONS)
        ]
        conflicts = [prose(self.rng, 120, cited_numbers(body))]
        return {"sections": sections, "conflicts": conflicts, "gaps": self.gaps(body)}

    def report(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = first_text(body)
        cited = cited_numbers(body)
        listed = re.search(r"their headings translated: ([^.]+)\.", prompt)
        names = listed[1].split("; ") if listed else ["Business", "Money", "People", "Market"]
        names = names if listed else [*names, "Outlook", "Conclusion"]
        each = self.report_chars() // len(names)
        return {
            "title": f"{TOPIC}: deep profile",
            "executive_summary": "\n".join(f"- {prose(self.rng, 110, cited)}" for _ in range(4)),
            "sections": [{"heading": n, "body": prose(self.rng, each, cited)} for n in names],
        }


async def run_side(scenario: Scenario) -> dict[str, Any]:
    """One deep run of whichever `bot` is first on the path, against the scripted world."""
    from bot.agent.calls import Limits
    from bot.agent.compress import Compressor
    from bot.agent.control import Control
    from bot.agent.deep.engine import DeepLimits, DeepResearch
    from bot.agent.events import FindingReady, ReportReady, RunFinished, Usage
    from bot.agent.models.port import ModelCall, ModelReply
    from bot.agent.report.model import Source
    from bot.agent.web.extract import Page
    from bot.agent.web.registry import research_tools
    from bot.domain import Depth, Request

    world = World(scenario)
    ids = iter(range(1, 10**6))

    class Model:
        async def complete(self, call: ModelCall) -> ModelReply:
            started = time.perf_counter()
            body = call.model_dump(mode="json")
            stage, uses, thought = world.answer(body)
            content: list[dict[str, Any]] = [{"type": "text", "text": thought}] if thought else []
            content += [
                {"type": "tool_use", "id": f"toolu_{next(ids)}", "name": n, "input": a}
                for n, a in uses
            ]
            out = tokens_of([b.get("input", b.get("text")) for b in content])
            setattr(world.calls, stage, getattr(world.calls, stage) + out)
            if stage in ("supervisor", "writer"):
                key = f"{stage}_calls"
                setattr(world.calls, key, getattr(world.calls, key) + 1)
            wait = FIRST_TOKEN_S + out / TOKENS_PER_S
            await asyncio.sleep(max(0.0, started + wait - time.perf_counter()))
            usage = Usage(input_tokens=tokens_of(body["messages"]), output_tokens=out)
            return ModelReply(
                content=content, stop_reason="tool_use", usage=usage, model=call.model or "m"
            )

    class Web:
        name = "scripted"

        async def search(self, query: str, max_results: int, recency: Any = None) -> list[Source]:
            await asyncio.sleep(TOOL_S)
            slug = "-".join(re.findall(r"\w+", query.lower()))[:60]
            rng = random.Random(query)
            return [
                Source(
                    url=f"https://news{i}.example/{slug}",
                    title=f"{TOPIC} news {i}",
                    snippet=prose(rng, 300, []),
                )
                for i in range(min(max_results, 5))
            ]

        async def fetch(self, url: str) -> Page:
            await asyncio.sleep(TOOL_S)
            text = prose(random.Random(url), 5_000, [])
            return Page(
                url=url, title=f"{TOPIC}: {url.rsplit('/', 2)[-2]}", text=text, truncated=False
            )

    model, web = Model(), Web()
    compressor = Compressor(model, fast_model="fast", threshold_tokens=10**9, timeout_s=30)
    toolbox = research_tools(web, web, timeout_s=30)  # type: ignore[arg-type]
    engine = DeepResearch(model, toolbox, compressor, Limits(), DeepLimits())
    request = Request(topic=TOPIC, depth=Depth.DEEP)
    started = time.perf_counter()
    last_finding = started
    events = []
    async for event in engine.research("bench", request, Control()):
        events.append(event)
        if isinstance(event, FindingReady):
            last_finding = time.perf_counter()
    ended = time.perf_counter()
    finished = events[-1]
    reports = [e for e in events if isinstance(e, ReportReady)]
    if not isinstance(finished, RunFinished) or not reports or reports[0].from_evidence_only:
        raise SystemExit(f"{scenario.name}: the scripted run fell back or failed: {finished}")
    if any(isinstance(e, FindingReady) and e.from_evidence for e in events):
        raise SystemExit(f"{scenario.name}: a finding was written without the model")
    return {
        "scenario": scenario.name,
        "researchers": sum(isinstance(e, FindingReady) for e in events),
        "ending": finished.ending.value,
        "sections": len(reports[0].report.sections),
        "tokens": asdict(world.calls),
        "wall_s": ended - started,
        "after_s": ended - last_finding,
    }
