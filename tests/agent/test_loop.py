"""The research loop end to end: the real SDK clients against the fake Messages API, Tavily and web."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from anthropic import AsyncAnthropic

from bot.agent.calls import Limits
from bot.agent.compress import Compressor
from bot.agent.control import Control
from bot.agent.events import (
    Ending,
    Event,
    ReportReady,
    RunFinished,
    RunStarted,
    ToolFinished,
    TurnStarted,
)
from bot.agent.loop import Researcher
from bot.agent.models.port import AnthropicModel
from bot.agent.report.model import Source
from bot.agent.web.registry import Toolbox
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Mode, Request, RunStatus
from tests.conftest import FAST_MODEL, TEST_MODEL, Recorder
from tests.fakes.anthropic_api import (
    FakeAnthropic,
    error,
    reply,
    reply_text,
    reply_tools,
    tool_use,
)
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, INJECTION_PATH, FakeWeb

REPORT = """# Acme Robotics

## TL;DR
- Acme builds warehouse robots [1].

## Overview
Acme was founded in 2015 [1][2] and claims 40 customers [99].
See [their blog](https://never-seen.example/blog) and [the article]({article}).

## Sources
1. made up by the model
"""


@asynccontextmanager
async def bot(settings: Settings, **overrides: Any) -> AsyncIterator[Services]:
    async with open_services(settings.model_copy(update=overrides)) as services:
        yield services


async def run(
    services: Services, topic: str = "Acme Robotics", mode: Mode = Mode.COMPANY
) -> Recorder:
    recorder = Recorder()
    record = await services.runs.submit(Request(topic=topic, mode=mode), recorder)
    recorder.run_id = record.run_id  # type: ignore[attr-defined]
    return recorder


def finished(recorder: Recorder) -> RunFinished:
    last = recorder.events[-1]
    assert isinstance(last, RunFinished)
    return last


def report_of(recorder: Recorder) -> ReportReady:
    return next(e for e in recorder.events if isinstance(e, ReportReady))


async def test_a_run_searches_reads_in_parallel_and_cites_only_what_it_retrieved(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    article = web.url + ARTICLE_PATH
    first = reply_tools(
        [("web_search", {"query": "Acme Robotics"}), ("read_page", {"url": article})],
        text="Searching first.",
    )
    anthropic_api.script(first, reply_text(REPORT.format(article=article)))

    recorder = await run(world)
    await recorder.finished.wait()

    assert finished(recorder).ending is Ending.COMPLETED
    second = anthropic_api.requests[1]
    results = second["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == [b["id"] for b in first.content[1:]]
    assert not any(r["is_error"] for r in results)
    assert "<web_content>" in results[1]["content"]
    report = report_of(recorder).report
    urls = [s.url for s in report.sources]
    assert urls[0].startswith(web.url) and article in urls
    assert "[99]" not in report.sections[0].body and "never-seen.example" not in str(report)
    assert all(s.heading != "Sources" for s in report.sections)
    assert recorder.outcome.markdown.count("## Sources") == 1
    stored = await world.store.get_run(recorder.run_id)  # type: ignore[attr-defined]
    assert stored.status is RunStatus.DONE and stored.turns == 2


async def test_prompt_caching_marks_system_and_the_growing_conversation(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "a"})]),
        reply_tools([("web_search", {"query": "b"})]),
        reply_text("# R\n\nok"),
    )
    recorder = await run(world)
    await recorder.finished.wait()

    third = anthropic_api.requests[2]
    assert third["system"][0]["cache_control"] == {"type": "ephemeral"}
    marked = [
        m
        for m in third["messages"]
        if isinstance(m["content"], list) and "cache_control" in m["content"][-1]
    ]
    assert len(marked) == 2 and marked[-1] is third["messages"][-1]
    assert finished(recorder).usage.cache_read_tokens > 0


async def test_tool_failures_become_error_results_and_the_run_goes_on(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_tools(
            [
                ("read_page", {"url": "http://10.0.0.7/admin"}),
                ("web_search", {}),
                ("no_such_tool", {"x": 1}),
            ]
        ),
        reply_text("# R\n\n## TL;DR\nNothing found."),
    )
    recorder = await run(world)
    await recorder.finished.wait()

    results = anthropic_api.requests[1]["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True, True, True]
    assert "10.0.0.7" in results[0]["content"] and "query" in results[1]["content"]
    assert finished(recorder).ending is Ending.COMPLETED


async def test_max_turns_ends_in_one_synthesis_call_without_tools(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "a"})]),
        reply_tools([("web_search", {"query": "b"})]),
        reply_text("# Acme\n\n## TL;DR\nSynthesized [1]."),
    )
    async with bot(settings, max_turns=2) as services:
        recorder = await run(services)
        await recorder.finished.wait()

    synthesis = anthropic_api.requests[2]
    assert synthesis["tool_choice"] == {"type": "none"}
    assert synthesis["tools"] == anthropic_api.requests[0]["tools"]
    assert "Do not call any tools" in str(synthesis["messages"][-1])
    assert finished(recorder).ending is Ending.MAX_TURNS_SYNTHESIZED
    assert report_of(recorder).synthesis and finished(recorder).turns == 3


async def test_failed_synthesis_still_delivers_a_report_from_the_evidence(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "acme"})]),
        error(500, "api_error", "boom", should_retry=False),
    )
    async with bot(settings, max_turns=1) as services:
        recorder = await run(services)
        await recorder.finished.wait()

    assert finished(recorder).ending is Ending.MAX_TURNS_SYNTHESIS_FAILED
    ready = report_of(recorder)
    assert ready.from_evidence_only and len(ready.report.sources) == 3
    assert "acme - result 1" in recorder.outcome.markdown


async def test_summarize_now_cancels_the_call_in_flight_and_writes_up(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "acme"})]),
        reply_text("never delivered"),
        reply_text("# Acme\n\n## TL;DR\nNow [1]."),
    )
    first = anthropic_api.hold()
    recorder = await run(world)
    await anthropic_api.wait_for_requests(1)
    first.set()
    second = anthropic_api.hold()
    await anthropic_api.wait_for_requests(2)
    await recorder.wait_for("tool_finished")

    assert world.runs.summarize(recorder.run_id)  # type: ignore[attr-defined]
    await anthropic_api.wait_for_cancelled(1)
    second.set()
    await recorder.finished.wait()

    assert finished(recorder).ending is Ending.FORCED_SYNTHESIZED
    assert anthropic_api.requests[2]["tool_choice"] == {"type": "none"}
    assert "Now [1]" in recorder.outcome.markdown


async def test_summarize_with_nothing_gathered_says_so_and_goes_on(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    gate = anthropic_api.hold()
    anthropic_api.script(reply_text("# Acme\n\n## TL;DR\nDone."))
    recorder = await run(world)
    await anthropic_api.wait_for_requests(1)

    world.runs.summarize(recorder.run_id)  # type: ignore[attr-defined]
    await recorder.wait_for("notice")
    gate.set()
    await recorder.finished.wait()

    notices = [e for e in recorder.events if e.kind == "notice"]
    assert len(notices) == 1 and "Nothing has been gathered yet" in notices[0].message
    assert finished(recorder).ending is Ending.COMPLETED
    assert anthropic_api.cancelled == 0


async def test_summarize_during_tools_keeps_finished_results_and_stops_the_rest(
    world: Services, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    tavily.hang_next()
    article = web.url + ARTICLE_PATH
    turn = reply_tools([("web_search", {"query": "acme"}), ("read_page", {"url": article})])
    anthropic_api.script(turn, reply_text("# Acme\n\n## TL;DR\nFrom the page [1]."))
    recorder = await run(world)
    await recorder.wait_for("tool_finished")

    world.runs.summarize(recorder.run_id)  # type: ignore[attr-defined]
    await recorder.finished.wait()

    assert finished(recorder).ending is Ending.FORCED_SYNTHESIZED
    search, page, instruction = anthropic_api.requests[1]["messages"][-1]["content"]
    assert [search["tool_use_id"], page["tool_use_id"]] == [b["id"] for b in turn.content]
    assert search["is_error"] and "stopped before it finished" in search["content"]
    assert not page["is_error"] and "<web_content>" in page["content"]
    assert "Do not call any tools" in instruction["text"]


async def test_cancel_stops_at_once(world: Services, anthropic_api: FakeAnthropic) -> None:
    anthropic_api.hold()
    recorder = await run(world)
    await anthropic_api.wait_for_requests(1)

    world.runs.cancel(recorder.run_id)  # type: ignore[attr-defined]
    await recorder.finished.wait()

    assert finished(recorder).ending is Ending.CANCELLED
    await anthropic_api.wait_for_cancelled(1)
    stored = await world.store.get_run(recorder.run_id)  # type: ignore[attr-defined]
    assert stored.status is RunStatus.CANCELLED


async def test_the_deadline_interrupts_a_slow_call_and_writes_up(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "acme"})]),
        reply_text("never delivered"),
        reply_text("# Acme\n\n## TL;DR\nLate [1]."),
    )
    async with bot(settings, deadline_s=1.5) as services:
        first = anthropic_api.hold()
        recorder = await run(services)
        await anthropic_api.wait_for_requests(1)
        first.set()
        second = anthropic_api.hold()
        await anthropic_api.wait_for_requests(3)  # the slow turn, then the write-up
        second.set()
        await recorder.finished.wait()

    assert finished(recorder).ending is Ending.DEADLINE_SYNTHESIZED
    assert anthropic_api.cancelled == 1


async def test_stop_reasons(settings: Settings, anthropic_api: FakeAnthropic) -> None:
    search = tool_use("web_search", {"query": "acme"})
    anthropic_api.script(
        reply([{"type": "text", "text": "partial"}, search], "max_tokens"),
        reply([{"type": "text", "text": "thinking on the server"}], "pause_turn"),
        reply_text("# Acme\n\n## TL;DR\nok"),
    )
    async with bot(settings) as services:
        recorder = await run(services)
        await recorder.finished.wait()
        second, third = anthropic_api.requests[1:3]
        assert second["messages"][-2] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "partial"}],
        }
        assert "cut off" in str(second["messages"][-1])
        assert third["messages"][-1]["role"] == "assistant"
        assert finished(recorder).ending is Ending.COMPLETED

        anthropic_api.script(reply([], "refusal"))
        refused = await run(services)
        await refused.finished.wait()
        assert finished(refused).ending is Ending.REFUSED

        anthropic_api.script(reply_text("?", "something_new"))
        unknown = await run(services)
        await unknown.finished.wait()
        assert finished(unknown).ending is Ending.LLM_ERROR
        assert "something_new" in (finished(unknown).error or "")


async def test_a_full_context_is_written_up_in_a_fresh_conversation(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "acme"})]),
        reply([], "model_context_window_exceeded"),
        reply_text("# Acme\n\n## TL;DR\nFrom evidence [2]."),
    )
    recorder = await run(world)
    await recorder.finished.wait()

    fresh = anthropic_api.requests[2]
    assert len(fresh["messages"]) == 1 and "acme - result 2" in str(fresh["messages"])
    assert finished(recorder).ending is Ending.CONTEXT_FULL_SYNTHESIZED
    assert report_of(recorder).report.sources[0].title == "acme - result 2"


async def test_an_overloaded_api_ends_with_a_message_a_person_can_act_on(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(error(529, "overloaded_error", "Overloaded"))
    recorder = await run(world)
    await recorder.finished.wait()

    end = finished(recorder)
    assert end.ending is Ending.LLM_ERROR and "try again" in (end.error or "")
    stored = await world.store.get_run(recorder.run_id)  # type: ignore[attr-defined]
    assert stored.status is RunStatus.FAILED


async def test_long_pages_are_compressed_by_the_fast_model_and_fenced(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    async def answer(body: dict[str, Any]) -> Any:
        if body["model"] == FAST_MODEL:
            return reply_text("SUMMARY: the page tries an injection; facts: none.")
        return reply_text("# R\n\n## TL;DR\nok [1]")

    anthropic_api.responder = answer
    anthropic_api.script(reply_tools([("read_page", {"url": web.url + INJECTION_PATH})]))
    async with bot(settings, compress_threshold_tokens=100) as services:
        recorder = await run(services)
        await recorder.finished.wait()

    finished_tool = next(e for e in recorder.events if isinstance(e, ToolFinished))
    assert finished_tool.compressed and "SUMMARY" in finished_tool.content
    assert finished_tool.content.count("<web_content>") == 1
    assert any(r["model"] == FAST_MODEL for r in anthropic_api.requests)


async def test_contracts_mode_asks_for_a_table(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_text("# Tenders\n\n## TL;DR\nNone open."))
    recorder = await run(world, topic="road maintenance, Ireland", mode=Mode.CONTRACTS)
    await recorder.finished.wait()

    request = anthropic_api.requests[0]
    assert "Buyer | Title | Value | Deadline | Link" in request["system"][0]["text"]
    assert "road maintenance, Ireland" in request["messages"][0]["content"][0]["text"]


# --- finishing a run from its stored events (restart, or its task failed) ---

HISTORY: list[Event] = [
    RunStarted(topic="Acme Robotics", mode="company"),
    TurnStarted(turn=1),
    ToolFinished(
        turn=1,
        call_id="toolu_01a",
        name="web_search",
        is_error=False,
        content="Results for 'acme':\n<web_content>\n[1] Acme home\n</web_content>",
        sources=[Source(url="https://acme.example/", title="Acme home")],
        numbers=[1],
    ),
]


@asynccontextmanager
async def engine(fake: FakeAnthropic) -> AsyncIterator[Researcher]:
    """The research engine alone, on the real SDK (recovery needs no tools but their schemas)."""
    async with AsyncAnthropic(api_key="sk-test", base_url=fake.url, max_retries=0) as client:
        model = AnthropicModel(client, model=TEST_MODEL, prices={})
        compressor = Compressor(model, fast_model=FAST_MODEL, threshold_tokens=3_000, timeout_s=5)
        yield Researcher(model, Toolbox([]), compressor, Limits())


async def recovered(
    researcher: Researcher, history: list[Event], control: Control, why: str
) -> list[Event]:
    request = Request(topic="Acme Robotics")
    return [e async for e in researcher.recover("run1", request, history, control, why=why)]


async def test_recovery_after_a_failure_with_nothing_found_says_so_without_a_model_call(
    anthropic_api: FakeAnthropic,
) -> None:
    async with engine(anthropic_api) as researcher:
        events = await recovered(researcher, HISTORY[:2], Control(), "error")

    last = events[-1]
    assert isinstance(last, RunFinished) and last.ending is Ending.ERROR_SYNTHESIS_FAILED
    assert last.error == (
        "Something went wrong inside the bot before anything was found; start the research again."
    )
    assert anthropic_api.requests == []


async def test_recovery_after_a_failure_writes_up_the_evidence_as_an_error_ending(
    anthropic_api: FakeAnthropic,
) -> None:
    anthropic_api.script(reply_text("# Acme\n\n## TL;DR\nFrom the evidence [1]."))
    async with engine(anthropic_api) as researcher:
        events = await recovered(researcher, HISTORY, Control(), "error")

    assert [e.kind for e in events][-2:] == ["report_ready", "run_finished"]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].ending is Ending.ERROR_SYNTHESIZED
    request = anthropic_api.requests[0]
    assert request["tool_choice"] == {"type": "none"} and "Acme home" in str(request["messages"])


async def test_summarize_during_recovery_is_harmless_and_cancel_stops_it(
    anthropic_api: FakeAnthropic,
) -> None:
    anthropic_api.script(reply_text("# Acme\n\n## TL;DR\nRecovered [1]."))
    async with engine(anthropic_api) as researcher:
        gate = anthropic_api.hold()
        control = Control()
        running = asyncio.create_task(recovered(researcher, HISTORY, control, "interrupted"))
        await anthropic_api.wait_for_requests(1)
        control.summarize()
        gate.set()
        summarized = await running

        gate = anthropic_api.hold()
        control = Control()
        running = asyncio.create_task(recovered(researcher, HISTORY, control, "interrupted"))
        # The first write-up came before this one (Summarize had skipped its claim judge).
        await anthropic_api.wait_for_requests(2)
        control.cancel()
        # It ends while the model's answer is still held back: nothing waits for the call.
        cancelled = await running
        gate.set()

    assert isinstance(summarized[-1], RunFinished)
    assert summarized[-1].ending is Ending.INTERRUPTED_SYNTHESIZED
    assert isinstance(cancelled[-1], RunFinished) and cancelled[-1].ending is Ending.CANCELLED
    evidence = next(e for e in cancelled if isinstance(e, ReportReady))
    assert evidence.from_evidence_only and evidence.report.sources[0].title == "Acme home"
