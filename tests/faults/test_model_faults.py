"""Faults of the model API and of tools, end to end: the real SDK against the fake Messages API,
the real runs service and SQLite store. Each asserts the ending, what the person was told
(outcome error, report) and what the store kept (status, termination reason, events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import SecretStr

from bot.adapters.chat.sink import outcome_summary
from bot.agent.events import Ending, ToolFinished
from bot.agent.report.model import Source
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Request, RunStatus
from tests.conftest import Recorder
from tests.fakes.anthropic_api import (
    FakeAnthropic,
    Scripted,
    dropped,
    error,
    prompt_too_long,
    reply_text,
    reply_tools,
    stalled,
    stream_error,
)
from tests.fakes.web import ARTICLE_PATH, FakeWeb

REPORT = "# Acme\n\n## TL;DR\nAcme builds robots [1]."
SEARCH = reply_tools([("web_search", {"query": "acme"})])


@asynccontextmanager
async def bot(settings: Settings, **overrides: Any) -> AsyncIterator[Services]:
    async with open_services(settings.model_copy(update=overrides)) as services:
        yield services


async def research(services: Services, topic: str = "Acme Robotics") -> tuple[Recorder, str]:
    recorder = Recorder()
    record = await services.runs.submit(Request(topic=topic), recorder)
    await recorder.finished.wait()
    return recorder, record.run_id


async def stored(services: Services, run_id: str) -> tuple[RunStatus, str | None, list[str]]:
    run = await services.store.get_run(run_id)
    kinds = [e.kind for e in await services.store.events(run_id)]
    return run.status, run.termination_reason, kinds


def always(scripted: Scripted) -> Any:
    async def answer(body: dict[str, Any]) -> Scripted:
        return scripted

    return answer


# --- the model API fails beyond its retries ---


async def test_rate_limited_beyond_retries_with_nothing_found_fails_plainly(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.responder = always(error(429, "rate_limit_error", "slow down", retry_after=0.001))
    async with bot(settings, model_max_retries=1) as services:
        recorder, run_id = await research(services)
        status, reason, kinds = await stored(services, run_id)

    assert recorder.outcome.ending is Ending.LLM_ERROR and recorder.outcome.report is None
    assert "rate-limiting" in recorder.outcome.error
    assert len(anthropic_api.requests) == 2
    assert (status, reason) == (RunStatus.FAILED, "llm_error")
    assert kinds[-1] == "run_finished" and "report_ready" not in kinds


async def test_rate_limited_mid_run_is_written_up_from_the_evidence(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    limited = error(429, "rate_limit_error", "slow down", retry_after=0.001)
    anthropic_api.script(SEARCH, limited, limited, reply_text(REPORT))
    async with bot(settings, model_max_retries=1) as services:
        recorder, run_id = await research(services)
        status, reason, kinds = await stored(services, run_id)

    outcome = recorder.outcome
    assert outcome.ending is Ending.ERROR_SYNTHESIZED
    assert "rate-limiting" in outcome.error and "written from what had been found" in outcome.error
    assert "Acme builds robots" in outcome.markdown
    write_up = anthropic_api.requests[3]
    assert write_up["tool_choice"] == {"type": "none"} and len(write_up["messages"]) == 1
    assert "acme - result 1" in str(write_up["messages"])
    assert (status, reason) == (RunStatus.DONE, "error_synthesized")
    assert "synthesis_started" in kinds and "report_ready" in kinds


async def test_overloaded_beyond_retries_even_for_the_write_up_keeps_the_evidence(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(SEARCH)
    anthropic_api.responder = always(
        error(529, "overloaded_error", "Overloaded", retry_after=0.001)
    )
    async with bot(settings, model_max_retries=2) as services:
        recorder, run_id = await research(services)
        status, reason, kinds = await stored(services, run_id)

    outcome = recorder.outcome
    assert outcome.ending is Ending.ERROR_SYNTHESIS_FAILED
    assert "overloaded" in outcome.error and "Writing the report failed" in outcome.error
    assert outcome.report.from_evidence_only and "acme - result 1" in outcome.markdown
    assert len(anthropic_api.requests) == 1 + 3 + 3  # the turn, then 3 attempts each
    assert (status, reason) == (RunStatus.DONE, "error_synthesis_failed")
    assert kinds.count("report_ready") == 1


async def test_a_plain_500_beyond_retries_says_to_try_again(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.responder = always(error(500, "api_error", "Internal server error"))
    async with bot(settings) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    assert recorder.outcome.ending is Ending.LLM_ERROR
    assert "(500)" in recorder.outcome.error and "try again" in recorder.outcome.error
    assert (status, reason) == (RunStatus.FAILED, "llm_error")


# --- a stream that breaks after it started (the SDK does not retry these) ---


async def test_a_stream_dropped_mid_reply_is_retried_and_succeeds(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(dropped(reply_text(REPORT), after=4), reply_text(REPORT))
    async with bot(settings, model_max_retries=1) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    assert recorder.outcome.ending is Ending.COMPLETED
    assert "Acme builds robots" in recorder.outcome.markdown
    assert len(anthropic_api.requests) == 2
    assert (status, reason) == (RunStatus.DONE, "completed")


async def test_sdk_retries_and_stream_retries_share_one_budget(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    # Budget 2 retries = 3 attempts: a 529 the SDK retries, then two broken streams. A fourth
    # attempt would have succeeded; it must never be made.
    anthropic_api.script(
        error(529, "overloaded_error", "Overloaded", retry_after=0.001),
        dropped(reply_text(REPORT)),
        dropped(reply_text(REPORT)),
        reply_text(REPORT),
    )
    async with bot(settings, model_max_retries=2) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    assert len(anthropic_api.requests) == 3
    assert recorder.outcome.ending is Ending.LLM_ERROR
    assert "connection to the Anthropic API broke" in recorder.outcome.error
    assert (status, reason) == (RunStatus.FAILED, "llm_error")


async def test_a_stream_dropped_every_time_ends_after_the_budget_with_the_evidence(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(SEARCH)
    anthropic_api.responder = always(dropped(reply_text(REPORT), after=2))
    async with bot(settings, model_max_retries=1) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    assert len(anthropic_api.requests) == 1 + 2 + 2
    outcome = recorder.outcome
    assert outcome.ending is Ending.ERROR_SYNTHESIS_FAILED
    assert "connection to the Anthropic API broke" in outcome.error
    assert outcome.report.from_evidence_only
    assert (status, reason) == (RunStatus.DONE, "error_synthesis_failed")


async def test_an_error_event_mid_stream_is_retried(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(stream_error("overloaded_error", "Overloaded"), reply_text(REPORT))
    async with bot(settings, model_max_retries=1) as services:
        recorder, _ = await research(services)
    assert recorder.outcome.ending is Ending.COMPLETED
    assert len(anthropic_api.requests) == 2


async def test_an_error_event_mid_stream_without_retries_left_ends_the_run(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(stream_error("api_error", "Internal server error"))
    async with bot(settings) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    assert recorder.outcome.ending is Ending.LLM_ERROR
    assert "part-way through a reply (api_error)" in recorder.outcome.error
    assert (status, reason) == (RunStatus.FAILED, "llm_error")


async def test_a_model_that_hangs_past_its_timeout_ends_the_run(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_text(REPORT, delay_s=30))
    async with bot(settings, model_timeout_s=1) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    assert recorder.outcome.ending is Ending.LLM_ERROR
    assert "did not answer in time" in recorder.outcome.error
    assert (status, reason) == (RunStatus.FAILED, "llm_error")


async def test_a_stream_that_goes_silent_past_the_timeout_is_a_broken_stream(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(stalled(reply_text(REPORT), after=2, stall_s=30))
    async with bot(settings, model_timeout_s=1) as services:
        recorder, _ = await research(services)

    assert recorder.outcome.ending is Ending.LLM_ERROR
    assert "ReadTimeout" in recorder.outcome.error
    assert len(anthropic_api.requests) == 1


# --- requests the API refuses ---


async def test_a_prompt_too_long_is_written_up_in_a_fresh_conversation(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(SEARCH, prompt_too_long(), reply_text(REPORT))
    recorder, run_id = await research(world)
    status, reason, _ = await stored(world, run_id)

    assert recorder.outcome.ending is Ending.CONTEXT_FULL_SYNTHESIZED
    assert "Acme builds robots" in recorder.outcome.markdown
    fresh = anthropic_api.requests[2]
    assert len(fresh["messages"]) == 1 and "acme - result 1" in str(fresh["messages"])
    assert (status, reason) == (RunStatus.DONE, "context_full_synthesized")


@pytest.mark.parametrize(
    ("max_turns", "script"),
    [
        (12, [SEARCH, prompt_too_long(), prompt_too_long()]),  # the fresh write-up too
        (1, [SEARCH, prompt_too_long()]),  # the turn limit's write-up overflows
    ],
    ids=["fresh-write-up-too", "turn-limit-write-up"],
)
async def test_a_context_too_full_for_any_write_up_says_so_in_the_ending(
    settings: Settings, anthropic_api: FakeAnthropic, max_turns: int, script: list[Scripted]
) -> None:
    anthropic_api.script(*script)
    async with bot(settings, max_turns=max_turns) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    assert recorder.outcome.ending is Ending.CONTEXT_FULL_SYNTHESIS_FAILED
    assert outcome_summary(recorder.outcome).startswith(
        "Done (the model's context was full: report built from the sources found)"
    )
    assert "context window" in recorder.outcome.report.tldr
    assert (status, reason) == (RunStatus.DONE, "context_full_synthesis_failed")


async def test_a_rejected_key_names_the_setting_to_fix(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    async with bot(settings, anthropic_api_key=SecretStr("sk-wrong")) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    assert recorder.outcome.ending is Ending.LLM_ERROR
    assert "ANTHROPIC_API_KEY" in recorder.outcome.error
    assert anthropic_api.requests == []  # the fake refused it before reading the body
    assert (status, reason) == (RunStatus.FAILED, "llm_error")


# --- the context window and prices ---


async def test_older_tool_results_are_compacted_before_the_window_fills(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    article = web.url + ARTICLE_PATH
    anthropic_api.script(
        reply_tools([("read_page", {"url": article})]),
        reply_tools([("web_search", {"query": "acme"})]),
        reply_text(REPORT),
    )
    async with bot(settings, context_window_tokens=1_000) as services:
        recorder, run_id = await research(services)
        _, reason, kinds = await stored(services, run_id)

    assert recorder.outcome.ending is Ending.COMPLETED and reason == "completed"
    notices = [e.message for e in recorder.events if e.kind == "notice"]
    assert notices == ["Compacted older tool results to stay within the model's context window."]
    assert "notice" in kinds
    page = anthropic_api.requests[1]["messages"][-1]["content"][0]
    last = anthropic_api.requests[2]["messages"]
    compacted, latest = last[2]["content"][0], last[4]["content"][0]
    assert compacted["tool_use_id"] == page["tool_use_id"] == last[1]["content"][0]["id"]
    assert compacted["content"].startswith("[1] ") and article in compacted["content"]
    assert "[compacted" in compacted["content"]
    assert len(compacted["content"]) < len(page["content"])
    assert "[compacted" not in latest["content"] and "acme - result 1" in latest["content"]


async def test_a_model_without_a_price_has_an_unknown_cost_not_zero(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_text(REPORT))
    async with bot(settings, model="claude-unpriced-1") as services:
        recorder, run_id = await research(services)
        run = await services.store.get_run(run_id)

    assert recorder.outcome.ending is Ending.COMPLETED
    assert recorder.outcome.usage.output_tokens > 0 and recorder.outcome.usage.cost_usd is None
    assert run.cost_usd is None
    assert "cost unknown" in recorder.outcome.markdown


# --- a tool that fails in a way nobody expected ---


class BrokenSearch:
    """A search provider with a bug: what it raises is no expected failure."""

    name = "broken"

    async def search(self, query: str, max_results: int) -> list[Source]:
        raise KeyError("results")


async def test_a_tool_that_breaks_unexpectedly_is_an_error_result_and_the_run_goes_on(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    anthropic_api.script(
        reply_tools(
            [("web_search", {"query": "acme"}), ("read_page", {"url": web.url + ARTICLE_PATH})]
        ),
        reply_text(REPORT),
    )
    async with open_services(settings, search=BrokenSearch()) as services:
        recorder, run_id = await research(services)
        status, reason, _ = await stored(services, run_id)

    results = anthropic_api.requests[1]["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True, False]
    assert results[0]["content"] == "web_search failed unexpectedly; try another source."
    assert "<web_content>" in results[1]["content"]
    finished = [e for e in recorder.events if isinstance(e, ToolFinished)]
    assert sorted(e.is_error for e in finished) == [False, True]
    assert recorder.outcome.ending is Ending.COMPLETED
    assert (status, reason) == (RunStatus.DONE, "completed")


def odd_tool_use() -> Scripted:
    """A tool_use whose input is not an object: the loop cannot take it (a bug's stand-in)."""
    odd = reply_tools([("web_search", {"query": "x"})])
    odd.content[0]["input"] = ["not", "an", "object"]
    return odd


async def test_a_bug_in_the_loop_mid_run_is_written_up_from_the_evidence(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(SEARCH, odd_tool_use(), reply_text(REPORT))
    recorder, run_id = await research(world)
    status, reason, _ = await stored(world, run_id)

    outcome = recorder.outcome
    assert outcome.ending is Ending.ERROR_SYNTHESIZED
    assert f"logged with run id {run_id}" in outcome.error
    assert "Acme builds robots" in outcome.markdown
    assert (status, reason) == (RunStatus.DONE, "error_synthesized")


async def test_a_bug_before_anything_was_found_ends_plainly_and_says_what_to_do(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(odd_tool_use())
    recorder, run_id = await research(world)
    status, reason, kinds = await stored(world, run_id)

    outcome = recorder.outcome
    assert outcome.ending is Ending.ERROR_SYNTHESIS_FAILED and outcome.report is None
    assert run_id in outcome.error and "start the research again" in outcome.error
    assert len(anthropic_api.requests) == 1
    assert (status, reason) == (RunStatus.FAILED, "error_synthesis_failed")
    assert kinds[-1] == "run_finished"


# --- the model misbehaves the way real ones do ---


async def test_chatter_before_the_title_is_not_filed_as_a_section(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_text(
            "Based on my research, here is the report:\n\n# Acme\n\n## TL;DR\n- Acme builds "
            "robots.\n\n## People\nNo leaders were found in two searches."
        )
    )
    recorder, _ = await research(world)

    report = recorder.outcome.report
    assert report is not None and report.title == "Acme"
    assert [s.heading for s in report.sections] == ["People"]
    assert "Based on my research" not in recorder.outcome.markdown


async def test_a_report_cut_off_at_the_output_limit_is_delivered_whole_from_its_title(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_text("# Acme\n\n## TL;DR\n- Acme builds ware", "max_tokens"),
        reply_text("house robots.\n\n## People\nNo leaders were found."),
    )
    recorder, _ = await research(world)

    report = recorder.outcome.report
    assert report is not None and report.title == "Acme"
    assert report.tldr == "- Acme builds warehouse robots."
    assert [s.heading for s in report.sections] == ["People"]
    told = anthropic_api.requests[1]["messages"][-1]["content"]
    assert "exact point where it stopped" in str(told)


async def test_a_model_that_starts_its_cut_off_report_again_is_delivered_once(
    world: Services, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_text("# Acme\n\n## TL;DR\n- Acme builds ware", "max_tokens"),
        reply_text("# Acme\n\n## TL;DR\n- Acme builds robots."),
    )
    recorder, _ = await research(world)

    report = recorder.outcome.report
    assert report is not None and report.tldr == "- Acme builds robots."
    assert recorder.outcome.markdown.count("# Acme\n") == 1
