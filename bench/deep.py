"""Deep run: wall time against its critical path (goal: at most 1.10), the researchers' input cost
against the same researchers without a shared cached prefix, and the page fetches the run's
shared page cache avoided.

The real `DeepResearch` runs against a scripted in-process model that answers each call by its
forced tool (plan, coverage check, report, claim judge) or, for a researcher, by its turn: search, read
pages (researchers read some of the same URLs), then `submit_finding`. Every reply, search and
page waits a scripted latency. The critical path is what a perfect engine would take: the plan,
the slowest researcher (its turns' model latency plus each turn's slowest tool; a page another
researcher already asked for arrives when that fetch ends), the coverage check, the final report
and the claim judge. Input cost replays the researchers' recorded requests through the prompt-cache
simulation of the fake Messages API.

    python -m bench.deep [--runs 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.token_cost import prose
from bot.agent.calls import Limits
from bot.agent.compress import Compressor
from bot.agent.control import Control
from bot.agent.deep.engine import DeepLimits, DeepResearch
from bot.agent.deep.researcher import FINISH
from bot.agent.events import (
    Ending,
    Event,
    FindingReady,
    PlanReady,
    ReportReady,
    RunFinished,
    ToolFinished,
    Usage,
)
from bot.agent.models.port import ModelCall, ModelReply
from bot.agent.report.model import Source
from bot.agent.web.extract import Page
from bot.agent.web.registry import research_tools
from bot.domain import Depth, Request
from tests.fakes.anthropic_cache import PromptCache, count_input_tokens
from tests.fakes.deep_script import forced, numbers_shown, question_of

GOAL = 1.10
TOPIC = "Acme Robotics"
REQUEST = Request(topic=TOPIC, depth=Depth.DEEP)
QUESTIONS = [
    f"What does {TOPIC} make and sell?",
    f"How is {TOPIC} funded and who owns it?",
    f"Who founded and leads {TOPIC}?",
    f"Who are {TOPIC}'s customers and competitors?",
]
"""As many researchers as DeepLimits allows at once: they all run in parallel."""
STEP_S = (0.150, 0.300)
"""The plan, the supervisor's coverage check and the final report."""
TURN_S = (0.050, 0.150)
JUDGE_S = (0.040, 0.080)
TOOL_S = (0.020, 0.200)
READING_TURNS = (1, 3)
READS_PER_TURN = (2, 3)
SITE = "https://acme-robotics.example"
SHARED = [f"{SITE}/{p}" for p in ("about", "products", "funding", "team", "news", "customers")]
SHARED_SHARE = 0.5
"""Of each researcher's page reads, about this share goes to the pages above (the others: its own)."""
PAGE_CHARS = (6_000, 12_000)
SNIPPET_CHARS = 500
MODEL, FAST_MODEL = "scripted", "scripted-fast"
READ, WRITE = 0.1, 1.25
MIN_CACHE_TOKENS = 1024


@dataclass(frozen=True)
class Turn:
    model_s: float
    calls: tuple[tuple[str, str], ...]
    """(tool, query or URL); empty for the last turn, which submits the finding."""


@dataclass(frozen=True)
class Script:
    plan_s: float
    check_s: float
    final_s: float
    judge_s: float
    turns: dict[str, list[Turn]]
    """Each researcher's turns, by its sub-question."""
    tool_s: dict[str, float]
    """How long each search (by query) and each page (by URL) takes, whoever asks for it."""


def make_script(rng: random.Random) -> Script:
    turns: dict[str, list[Turn]] = {}
    for i, question in enumerate(QUESTIONS):
        work = [
            Turn(rng.uniform(*TURN_S), (("web_search", question), ("web_search", f"{TOPIC} {i}")))
        ]
        read: list[str] = []
        for t in range(rng.randint(*READING_TURNS)):
            batch: list[str] = []
            for k in range(rng.randint(*READS_PER_TURN)):
                fresh = [u for u in SHARED if u not in read + batch]
                shared = fresh and rng.random() < SHARED_SHARE
                batch.append(rng.choice(fresh) if shared else f"{SITE}/r{i}/page-{t}-{k}")
            read += batch
            work.append(Turn(rng.uniform(*TURN_S), tuple(("read_page", u) for u in batch)))
        turns[question] = [*work, Turn(rng.uniform(*TURN_S), ())]
    calls = [c for ts in turns.values() for turn in ts for c in turn.calls]
    return Script(
        plan_s=rng.uniform(*STEP_S),
        check_s=rng.uniform(*STEP_S),
        final_s=rng.uniform(*STEP_S),
        judge_s=rng.uniform(*JUDGE_S),
        turns=turns,
        tool_s={arg: rng.uniform(*TOOL_S) for _, arg in calls},
    )


def researchers_s(script: Script, *, shared: bool) -> float:
    """The slowest researcher. Shared: a page asked for earlier by another researcher arrives
    when that fetch ends (or at once, if it has); the earliest asks are found by iterating."""
    first: dict[str, float] = {}
    while True:
        asked: dict[str, float] = {}
        ends = []
        for turns in script.turns.values():
            now = 0.0
            for turn in turns:
                now += turn.model_s
                done = now
                for tool, arg in turn.calls:
                    start = min(now, first.get(arg, now)) if tool == "read_page" else now
                    asked[arg] = min(asked.get(arg, now), now)
                    done = max(done, start + script.tool_s[arg])
                now = done
            ends.append(now)
        if not shared or asked == first:
            return max(ends)
        first = asked


def critical_path(script: Script, *, judged: bool, shared: bool = True) -> float:
    after = script.check_s + script.final_s + (script.judge_s if judged else 0.0)
    return script.plan_s + researchers_s(script, shared=shared) + after


def results(query: str) -> list[Source]:
    rng = random.Random(query)
    slug = "-".join(re.findall(r"\w+", query.lower()))
    return [
        Source(
            url=f"https://news{i}.example/{slug}",
            title=f"{query}: result {i}",
            snippet=prose(rng, SNIPPET_CHARS)[:SNIPPET_CHARS],
        )
        for i in range(10)
    ]


def page(url: str) -> Page:
    rng = random.Random(url)
    text = prose(rng, rng.randint(*PAGE_CHARS))
    return Page(url=url, title=f"{TOPIC} - {url.rsplit('/', 1)[-1]}", text=text, truncated=False)


class ScriptedWeb:
    """The search engine and the page fetcher: each answer (made in advance) waits its scripted
    latency; every real page fetch is counted."""

    name = "scripted"

    def __init__(self, script: Script) -> None:
        self._latency = script.tool_s
        calls = [c for turns in script.turns.values() for turn in turns for c in turn.calls]
        self._results = {arg: results(arg) for tool, arg in calls if tool == "web_search"}
        self._pages = {arg: page(arg) for tool, arg in calls if tool == "read_page"}
        self.fetches: Counter[str] = Counter()

    async def search(self, query: str, max_results: int) -> list[Source]:
        await asyncio.sleep(self._latency[query])
        return self._results[query][:max_results]

    async def fetch(self, url: str) -> Page:
        self.fetches[url] += 1
        await asyncio.sleep(self._latency[url])
        return self._pages[url]


@dataclass
class Sent:
    body: dict[str, Any]
    """The request as the Messages API would receive it."""
    started: float
    answered: float
    question: str | None
    """A researcher's sub-question; None for the other calls."""


class ScriptedModel:
    """A ModelPort that answers each call as the planner, a researcher, the supervisor, the
    writer or the claim judge would, after that call's scripted latency; it records each call."""

    def __init__(self, script: Script) -> None:
        self._script = script
        self._ids = itertools.count(1)
        self.sent: list[Sent] = []

    async def complete(self, call: ModelCall) -> ModelReply:
        started = time.perf_counter()
        body = {**call.model_dump(mode="json"), "model": call.model or MODEL}
        latency, uses, question = self._answer(body)
        # The scripted latency includes the time spent recording the call and making the answer.
        await asyncio.sleep(max(0.0, started + latency - time.perf_counter()))
        self.sent.append(Sent(body, started, time.perf_counter(), question))
        content = [
            {"type": "tool_use", "id": f"toolu_{next(self._ids)}", "name": name, "input": args}
            for name, args in uses
        ]
        return ModelReply(
            content=content,
            stop_reason="tool_use",
            usage=Usage(output_tokens=200),
            model=body["model"],
        )

    def _answer(self, body: dict[str, Any]) -> tuple[float, list[tuple[str, Any]], str | None]:
        script, name = self._script, forced(body)
        if name == "submit_plan":
            plan = [{"question": q, "priority": 1 + i % 2} for i, q in enumerate(QUESTIONS)]
            return script.plan_s, [(name, {"questions": plan})], None
        if name == "submit_coverage":
            check = {"sections": [{"section": "Overview", "status": "covered"}], "gaps": []}
            return script.check_s, [(name, check)], None
        if name == "submit_report":
            return script.final_s, [(name, final_report())], None
        if name == "record_verdicts":
            listed = body["messages"][0]["content"]
            ids = re.findall(r"^Claim (\d+): ", listed, re.MULTILINE)
            verdicts = [{"id": int(i), "verdict": "supported"} for i in ids]
            return script.judge_s, [(name, {"claims": verdicts})], None
        if name is None and any(t["name"] == FINISH for t in body["tools"]):
            question = question_of(body)
            turn = script.turns[question][sum(m["role"] == "assistant" for m in body["messages"])]
            uses = [
                (tool, {"query": arg} if tool == "web_search" else {"url": arg})
                for tool, arg in turn.calls
            ]
            return turn.model_s, uses or [(FINISH, finding(question, body))], question
        raise SystemExit(f"the scripted model has no answer for this call ({name})")


def finding(question: str, body: dict[str, Any]) -> dict[str, Any]:
    cited = "".join(f"[{n}]" for n in numbers_shown(body)[:3])
    return {
        "summary": f"On {question}: {TOPIC} builds warehouse robots {cited}.",
        "key_findings": [f"It sells to grocery warehouses {cited}."],
        "confidence": "high",
    }


def final_report() -> dict[str, Any]:
    return {
        "title": f"{TOPIC}: deep profile",
        "executive_summary": f"{TOPIC} builds warehouse robots [1].",
        "sections": [
            {"heading": "Business", "body": "It sells picking robots to grocery warehouses [2]."},
            {
                "heading": "Customers and market",
                "body": "A growing company with a clear market [1].",
            },
        ],
    }


def check(events: list[Event], script: Script) -> None:
    """A run that fell back or lost work would flatter the ratio: refuse it."""
    last = events[-1]
    if not isinstance(last, RunFinished) or last.ending is not Ending.COMPLETED:
        raise SystemExit(f"the scripted deep run did not complete: {last}")
    plans = [e for e in events if isinstance(e, PlanReady)]
    findings = [e for e in events if isinstance(e, FindingReady)]
    reports = [e for e in events if isinstance(e, ReportReady)]
    if len(plans) != 1 or plans[0].fallback or len(findings) != len(QUESTIONS):
        raise SystemExit("the plan fell back, or not every researcher wrote a finding")
    if any(f.from_evidence for f in findings) or any(r.from_evidence_only for r in reports):
        raise SystemExit("a finding or the report was written without the model")
    tools = [e for e in events if isinstance(e, ToolFinished)]
    expected = sum(len(turn.calls) for turns in script.turns.values() for turn in turns)
    if len(tools) != expected or any(t.is_error for t in tools):
        raise SystemExit("the scripted tools did not all run and succeed")


def input_cost(sent: list[Sent], *, min_tokens: int, shared: bool, at_once: bool = False) -> float:
    """The researchers' input in token-equivalents as the API bills it, replaying their requests
    in the order sent. A prefix a request writes can be read by requests sent after its reply
    (`at_once`: as soon as it was sent). Not `shared`: each researcher's system+tools prefix is
    its own (the baseline, whose system prompt would carry its sub-question)."""
    cache = PromptCache(min_tokens)
    pending: list[tuple[float, set[str]]] = []
    cost = 0.0
    for s in sorted((s for s in sent if s.question), key=lambda s: s.started):
        for ready, hashes in pending:
            if ready <= s.started:
                cache.prefixes |= hashes
        pending = [(ready, hashes) for ready, hashes in pending if ready > s.started]
        body = s.body if shared else {**s.body, "model": f"{s.body['model']}: {s.question}"}
        before = set(cache.prefixes)
        usage = cache.usage(body)
        written, cache.prefixes = cache.prefixes - before, before
        pending.append((s.started if at_once else s.answered, written))
        cost += (
            usage["input_tokens"]
            + READ * usage["cache_read_input_tokens"]
            + WRITE * usage["cache_creation_input_tokens"]
        )
    return cost


async def run_floor(script: Script, *, judged: bool) -> float:
    """The same waits with no engine at all (a page read twice waits on one sleep)."""
    reads: dict[str, asyncio.Task[None]] = {}

    async def tool(name: str, arg: str) -> None:
        if name != "read_page":
            await asyncio.sleep(script.tool_s[arg])
            return
        reads.setdefault(arg, asyncio.ensure_future(asyncio.sleep(script.tool_s[arg])))
        await reads[arg]

    async def researcher(turns: list[Turn]) -> None:
        for turn in turns:
            await asyncio.sleep(turn.model_s)
            await asyncio.gather(*(tool(*call) for call in turn.calls))

    started = time.perf_counter()
    await asyncio.sleep(script.plan_s)
    await asyncio.gather(*(researcher(turns) for turns in script.turns.values()))
    for step_s in (script.check_s, script.final_s, script.judge_s if judged else 0.0):
        await asyncio.sleep(step_s)
    return time.perf_counter() - started


CACHE_CASES = [
    (f"API rules (no prefix under {MIN_CACHE_TOKENS:,} tokens is cached)", MIN_CACHE_TOKENS, False),
    ("what if the prefix were cacheable", 0, False),
    ("...and each write readable as soon as sent", 0, True),
]
"""(label, minimum cacheable prefix, writes readable at once): the first is how the API bills."""


@dataclass(frozen=True)
class Measured:
    wall: float
    path: float
    unshared: float
    """The critical path if every researcher fetched its pages itself."""
    floor: float
    judged: bool
    reads: int
    """read_page calls the researchers made."""
    fetched: int
    twice: int
    """URLs fetched more than once."""
    avoided: int
    prefix: int
    """Tokens of the researchers' shared system+tools prefix."""
    uncached: int
    costs: list[tuple[float, float]]
    """(ours, baseline) for each of CACHE_CASES."""


async def one_run(script: Script) -> Measured:
    model, web = ScriptedModel(script), ScriptedWeb(script)
    # The threshold is never crossed: this benchmark measures the engine, not summarizing.
    compressor = Compressor(model, fast_model=FAST_MODEL, threshold_tokens=10**9, timeout_s=10)
    toolbox = research_tools(web, web, timeout_s=30)  # type: ignore[arg-type]
    engine = DeepResearch(model, toolbox, compressor, Limits(), DeepLimits(len(QUESTIONS)))
    started = time.perf_counter()
    events = [event async for event in engine.research("bench", REQUEST, Control())]
    wall = time.perf_counter() - started
    check(events, script)
    judged = any(forced(s.body) == "record_verdicts" for s in model.sent)
    if len(model.sent) != 3 + judged + sum(map(len, script.turns.values())):
        raise SystemExit("the engine made model calls the script has no latency for in its path")
    researchers = [s for s in model.sent if s.question]
    first = researchers[0].body
    return Measured(
        wall=wall,
        path=critical_path(script, judged=judged),
        unshared=critical_path(script, judged=judged, shared=False),
        floor=await run_floor(script, judged=judged),
        judged=judged,
        reads=sum(e.name == "read_page" for e in events if isinstance(e, ToolFinished)),
        fetched=sum(web.fetches.values()),
        twice=sum(n > 1 for n in web.fetches.values()),
        avoided=engine.pages_avoided,
        prefix=count_input_tokens({"tools": first["tools"], "system": first["system"]}),
        uncached=sum(count_input_tokens(s.body) for s in researchers),
        costs=[
            (
                input_cost(model.sent, min_tokens=minimum, shared=True, at_once=at_once),
                input_cost(model.sent, min_tokens=minimum, shared=False, at_once=at_once),
            )
            for _, minimum, at_once in CACHE_CASES
        ],
    )


def report_runs(rows: list[Measured]) -> None:
    print(
        f"deep run: {len(QUESTIONS)} researchers in parallel, {READING_TURNS[0]}-{READING_TURNS[1]} "
        f"reading turns each; model {TURN_S[0] * 1000:.0f}-{TURN_S[1] * 1000:.0f} ms a turn, "
        f"plan/check/report {STEP_S[0] * 1000:.0f}-{STEP_S[1] * 1000:.0f} ms, claim judge "
        f"{JUDGE_S[0] * 1000:.0f}-{JUDGE_S[1] * 1000:.0f} ms, tools "
        f"{TOOL_S[0] * 1000:.0f}-{TOOL_S[1] * 1000:.0f} ms"
    )
    print(
        f"{'run':>3}  {'path':>7}  {'wall':>7}  {'ratio':>5}  {'floor':>5}  {'judge':>5}  "
        f"{'reads':>5}  {'fetched':>7}  {'avoided':>7}  {'ours':>7}  {'baseline':>8}  {'ratio':>5}"
    )
    for i, r in enumerate(rows, start=1):
        ours, base = r.costs[0]
        print(
            f"{i:>3}  {r.path:>5.3f} s  {r.wall:>5.3f} s  {r.wall / r.path:>5.3f}  "
            f"{r.floor / r.path:>5.3f}  {'yes' if r.judged else 'no':>5}  {r.reads:>5}  "
            f"{r.fetched:>7}  {r.avoided:>7}  {ours:>7,.0f}  {base:>8,.0f}  {ours / base:>5.3f}"
        )
    saved_ms = statistics.median((r.unshared - r.path) * 1000 for r in rows)
    print(
        "path: plan + slowest researcher + coverage check + final report + claim judge (a page another "
        f"researcher asked for first arrives with that fetch: {saved_ms:.0f} ms shorter, median, "
        "than fetching every page anew)"
    )


def report_pages_and_cost(rows: list[Measured]) -> None:
    reads, fetched = sum(r.reads for r in rows), sum(r.fetched for r in rows)
    avoided, twice = sum(r.avoided for r in rows), sum(r.twice for r in rows)
    print(
        f"page reads, all runs: {reads} asked for, {fetched} fetched, {avoided} answered by the "
        f"shared cache (engine.pages_avoided); URLs fetched more than once: {twice}"
    )
    print(
        f"researchers' input cost (input x1, cache read x{READ}, cache write x{WRITE}), ours "
        "against a baseline whose system+tools prefix is each researcher's own; shared prefix "
        f"{statistics.median(r.prefix for r in rows):,.0f} tokens; medians:"
    )
    for i, (label, _, _) in enumerate(CACHE_CASES):
        ours = statistics.median(r.costs[i][0] for r in rows)
        base = statistics.median(r.costs[i][1] for r in rows)
        print(f"  {label}: {ours:,.0f} / {base:,.0f} = {ours / base:.3f}")
    uncached = statistics.median(r.uncached for r in rows)
    ours = statistics.median(r.costs[0][0] for r in rows)
    print(
        f"  the same requests uncached: {uncached:,.0f} (ours / uncached = {ours / uncached:.3f})"
    )


def report(rows: list[Measured]) -> bool:
    report_runs(rows)
    report_pages_and_cost(rows)
    floor = statistics.median(r.floor / r.path for r in rows)
    print(f"median bare asyncio floor (same sleeps, no engine): {floor:.3f}")
    ratio = statistics.median(r.wall / r.path for r in rows)
    extra_ms = statistics.median((r.wall - r.path) * 1000 for r in rows)
    print(
        f"median DeepResearch.research: wall / critical path = {ratio:.3f} ({extra_ms:+.1f} ms "
        f"a run)  {'PASS' if ratio <= GOAL else 'FAIL'} (goal <= {GOAL})"
    )
    return ratio <= GOAL


async def bench(runs: int, seed: int) -> list[Measured]:
    return [await one_run(make_script(random.Random(seed + i))) for i in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sys.exit(0 if report(asyncio.run(bench(args.runs, args.seed))) else 1)


if __name__ == "__main__":
    main()
