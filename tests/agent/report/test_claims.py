"""Claim support: cited sentences checked against what their sources said, deterministically
first, then by the fast-model judge; the figures reach the report, its footer and the store."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

import pytest

from bot.agent.events import ReportReady, RunFinished, UsageRecorded
from bot.agent.report.claims import check, cited_sentences
from bot.agent.report.judge import FAILED, NO_VERDICT, OVER_BUDGET, SKIPPED, TIMED_OUT
from bot.agent.report.model import Report, Section, Source
from bot.agent.report.support import Verdict
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Company, Identity, Request
from tests.conftest import FAST_MODEL, Recorder
from tests.fakes.anthropic_api import (
    FakeAnthropic,
    error,
    reply,
    reply_text,
    reply_tools,
    tool_use,
)
from tests.fakes.web import ARTICLE_PATH, FakeWeb

ARTICLE = (
    "Acme Robotics, the Pittsburgh maker of autonomous picking robots, said on Tuesday that it "
    "had raised $40 million in a Series B round led by Example Ventures. The company, founded "
    "in 2019, has 1200 staff and says its robots work in 37 warehouses. Margins rose 12.4%."
)


@pytest.mark.parametrize(
    "sentence",
    [
        "It had raised $40M in a Series B round led by Example Ventures [1].",
        "The company, founded in 2019, has 1,200 staff [1].",
        "Margins rose about 12% [1].",
    ],
)
def test_a_cited_passage_saying_the_same_with_its_numbers_supports_a_claim(sentence: str) -> None:
    claim = check(sentence, [1], [ARTICLE])
    assert claim is not None and claim.verdict is Verdict.SUPPORTED, claim
    assert claim.method == "deterministic" and claim.note.startswith("the source says: ")


@pytest.mark.parametrize(
    ("sentence", "missing"),
    [
        ("Acme raised $45M in 2019 [1].", "$45M"),
        ("It was founded in 2017 [1].", "2017"),
        ("Its robots work in 370 warehouses [1].", "370"),
        ("Revenue grew 25% [1].", "25%"),
    ],
)
def test_a_number_missing_from_every_cited_source_makes_a_claim_unsupported(
    sentence: str, missing: str
) -> None:
    claim = check(sentence, [1, 2], [ARTICLE, "Another page about Acme in 2019."])
    assert claim is not None and claim.verdict is Verdict.UNSUPPORTED
    assert claim.note == f"not in the cited sources: {missing}"


def test_what_the_numbers_cannot_settle_is_left_for_the_judge() -> None:
    assert check("It makes robots for warehouses [1].", [1], [ARTICLE]) is None  # nothing to check
    # A name the source lacks does not prove the claim wrong: the judge decides.
    assert check("Acme was founded in 2019 by Jane Smith [1].", [1], [ARTICLE]) is None
    # Its numbers are there, but in other words: not near enough to settle it.
    assert check("Its 37 warehouses report margins up about 12% [1].", [1], [ARTICLE]) is None
    unknown = check("Acme raised $40M [1].", [1], [""])
    assert unknown is not None and unknown.verdict is Verdict.UNKNOWN


def test_cited_sentences_split_bullets_and_sentences_and_ignore_years_in_brackets() -> None:
    sources = [Source(url=f"https://s{n}.example/") for n in (1, 2, 3)]
    report = Report(
        title="Acme",
        tldr="- Acme raised $40M [1].\n- Uncited line.",
        sections=[
            Section(
                heading="Overview",
                body=(
                    "Acme Inc. was founded in 2019 [2]. It works in 37 warehouses. [1][3] "
                    "The plan for [2024] is unclear. Growth was strong [1-3].\n\n"
                    "| Buyer | Value | Link |\n|---|---|---|\n| City | $1M | [3] |\n"
                    "- Acme raised $40M [1]."
                ),
            )
        ],
        sources=sources,
    )
    assert cited_sentences(report) == [
        ("Acme raised $40M [1].", [1]),
        ("Acme Inc. was founded in 2019 [2].", [2]),
        ("It works in 37 warehouses. [1][3]", [1, 3]),
        ("Growth was strong [1-3].", [1, 2, 3]),
        ("| City | $1M | [3] |", [3]),
    ]


async def _research(services: Services, identity: Identity | None = None) -> Recorder:
    recorder = Recorder()
    request = Request(topic="Acme Robotics", identity=identity)
    record = await services.runs.submit(request, recorder)
    recorder.run_id = record.run_id  # type: ignore[attr-defined]
    await recorder.finished.wait()
    return recorder


def _report(recorder: Recorder) -> Report:
    return next(e for e in recorder.events if isinstance(e, ReportReady)).report


def _read_then(web: FakeWeb, text: str) -> list[Any]:
    return [reply_tools([("read_page", {"url": web.url + ARTICLE_PATH})]), reply_text(text)]


async def _never(body: dict[str, Any]) -> Any:
    await asyncio.Event().wait()


def _judged(*verdicts: str) -> Any:
    claims = [{"id": i, "verdict": v, "reason": "r"} for i, v in enumerate(verdicts, start=1)]
    return reply([tool_use("record_verdicts", {"claims": claims})], "tool_use")


RAISED = "It had raised $40 million in a Series B round led by Example Ventures [1]."


async def test_a_report_checked_deterministically_needs_no_judge_and_says_so_in_its_footer(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = f"# Acme\n\n## TL;DR\n- {RAISED}\n\n## People\nThe company has 900 customers [1]."
    anthropic_api.script(*_read_then(web, text))
    # At the last turns a report is not early: no finish guard in this test.
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = await _research(services)
        stored = await services.store.claims(recorder.run_id)  # type: ignore[attr-defined]

    assert len(anthropic_api.requests) == 2
    support = _report(recorder).support
    assert support is not None
    assert [c.verdict for c in support.claims] == [Verdict.SUPPORTED, Verdict.UNSUPPORTED]
    assert support.claims[1].note == "not in the cited sources: 900"
    assert stored == support.claims
    assert (
        "2 cited claims: 1 supported by their sources, 1 not supported, 0 left unchecked · "
        "0 checked by the model, 2 settled by their numbers or a matching passage"
    ) in recorder.outcome.markdown


async def test_the_judge_sees_the_passages_that_matter_answers_three_ways_and_its_cost_counts(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = (
        "# Acme\n\n## TL;DR\n- It makes picking robots for warehouses [1].\n"
        f"- {RAISED}\n- Its investors are unhappy [1].\n- Its robots are loved by buyers [1]."
    )
    verdicts = _judged("supported", "not_stated", "unsupported")
    anthropic_api.script(*_read_then(web, text), verdicts)
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = await _research(services)

    assert len(anthropic_api.requests) == 3  # one call for the report's three open claims
    judge = anthropic_api.requests[2]
    assert judge["model"] == FAST_MODEL
    assert judge["tool_choice"] == {"type": "tool", "name": "record_verdicts"}
    asked = str(judge["messages"])
    assert "Claim 1 (section TL;DR): It makes picking robots for warehouses" in asked
    assert "Claim 3 (section TL;DR): Its robots are loved by buyers" in asked
    assert "Claim 4" not in asked
    # Passages, fenced, not the whole page: what bears on no claim is not sent.
    assert "<web_content>" in asked and "autonomous picking robots" in asked
    assert "second factory" not in asked
    support = _report(recorder).support
    assert support is not None
    assert [(c.verdict, c.method, c.note) for c in support.claims] == [
        (Verdict.SUPPORTED, "judge", "r"),
        (Verdict.SUPPORTED, "deterministic", support.claims[1].note),
        (Verdict.UNSUPPORTED, "judge", "not in the cited excerpts: r"),
        (Verdict.UNSUPPORTED, "judge", "contradicted by the source: r"),
    ]
    assert (
        "4 cited claims: 2 supported by their sources, 2 not supported, 0 left unchecked · "
        "3 checked by the model, 1 settled by their numbers or a matching passage"
    ) in recorder.outcome.markdown
    used = [e for e in recorder.events if isinstance(e, UsageRecorded)]
    assert [e.model for e in used][-1] == f"anthropic:{FAST_MODEL}"
    total = recorder.events[-1]
    assert isinstance(total, RunFinished)
    assert total.usage.input_tokens == sum(e.usage.input_tokens for e in used)
    assert total.usage.cost_usd == pytest.approx(sum(e.usage.cost_usd or 0 for e in used))


async def test_the_judge_knows_the_topic_the_date_and_each_claim_section_and_judges_excerpts(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = (
        "# Acme\n\n## TL;DR\n- It makes picking robots [1].\n\n"
        "## Customers and market\nIts robots are loved by buyers [1]."
    )
    anthropic_api.script(*_read_then(web, text), _judged("supported", "not_stated"))
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = await _research(services)

    judge = anthropic_api.requests[2]
    asked = judge["messages"][0]["content"]
    assert asked.startswith(
        f"The report is about: Acme Robotics. Today is {date.today().isoformat()}."
    )
    assert "Claim 2 (section Customers and market): Its robots are loved" in asked
    system = judge["system"][0]["text"]
    assert "excerpts" in system and "another language" in system
    assert "says less than its passages is supported" in system
    support = _report(recorder).support
    assert support is not None
    assert support.claims[1].note == "not in the cited excerpts: r"
    assert "in the source" not in support.claims[1].note


async def test_the_judge_is_told_the_settled_company_not_just_the_name(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    acme = Identity(company=Company(name="Acme Robotics, Inc.", website="acme-robotics.com"))
    text = "# Acme\n\n## TL;DR\n- It makes picking robots [1]."
    anthropic_api.script(*_read_then(web, text), _judged("supported"))
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        await _research(services, acme)

    asked = anthropic_api.requests[2]["messages"][0]["content"]
    assert asked.startswith("The report is about: Acme Robotics, Inc. (acme-robotics.com).")


UNCHECKED_FOOTER = (
    "2 cited claims: 1 supported by their sources, 0 not supported, 1 left unchecked · "
    "0 checked by the model, 1 settled by their numbers or a matching passage"
)


@pytest.mark.parametrize(
    ("answer", "note"),
    [
        (error(500, "api_error", "judge down", should_retry=False), FAILED),
        (reply_text("I would rather not use the tool."), NO_VERDICT),
    ],
)
async def test_a_failed_judge_leaves_its_claims_unchecked_and_the_footer_says_so(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb, answer: Any, note: str
) -> None:
    text = f"# Acme\n\n## TL;DR\n- It makes picking robots [1].\n- {RAISED}"
    anthropic_api.script(*_read_then(web, text), answer)
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = await _research(services)

    assert recorder.outcome.ending.value == "completed"
    support = _report(recorder).support
    assert support is not None
    assert (support.claims[0].verdict, support.claims[0].note) == (Verdict.UNKNOWN, note)
    assert support.claims[1].verdict is Verdict.SUPPORTED
    assert UNCHECKED_FOOTER in recorder.outcome.markdown


async def test_a_judge_that_takes_too_long_leaves_its_claims_unchecked(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = f"# Acme\n\n## TL;DR\n- It makes picking robots [1].\n- {RAISED}"
    anthropic_api.script(*_read_then(web, text))
    anthropic_api.responder = _never  # the judge's call is never answered
    # Every model call has this timeout: long enough that a loaded machine answers the scripted
    # research calls within it, short enough to keep the test quick.
    quick = settings.model_copy(update={"max_turns": 3, "model_timeout_s": 2})
    async with open_services(quick) as services:
        recorder = await _research(services)

    support = _report(recorder).support
    assert support is not None
    assert (support.claims[0].verdict, support.claims[0].note) == (Verdict.UNKNOWN, TIMED_OUT)
    assert UNCHECKED_FOOTER in recorder.outcome.markdown


async def test_cancel_while_the_judge_works_sends_the_report_out_unchecked(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = f"# Acme\n\n## TL;DR\n- It makes picking robots [1].\n- {RAISED}"
    anthropic_api.script(*_read_then(web, text))
    anthropic_api.responder = _never  # the judge's call is not answered
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = Recorder()
        record = await services.runs.submit(Request(topic="Acme Robotics"), recorder)
        await anthropic_api.wait_for_requests(3)
        assert services.runs.cancel(record.run_id)
        await recorder.finished.wait()

    assert recorder.outcome.ending.value == "completed"
    support = _report(recorder).support
    assert support is not None
    judged = [c for c in support.claims if c.method == "judge"]
    assert judged and {(c.verdict, c.note) for c in judged} == {(Verdict.UNKNOWN, SKIPPED)}
    assert UNCHECKED_FOOTER in recorder.outcome.markdown


async def test_summarize_pressed_skips_the_judge_and_the_footer_says_what_is_unchecked(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = f"# Acme\n\n## TL;DR\n- It makes picking robots [1].\n- {RAISED}"
    anthropic_api.script(reply_tools([("read_page", {"url": web.url + ARTICLE_PATH})]))
    anthropic_api.responder = _never  # the second research turn hangs until Summarize
    async with open_services(settings.model_copy(update={"max_turns": 5})) as services:
        recorder = Recorder()
        record = await services.runs.submit(Request(topic="Acme Robotics"), recorder)
        await anthropic_api.wait_for_requests(2)
        anthropic_api.script(reply_text(text))  # the write-up
        assert services.runs.summarize(record.run_id)
        await recorder.finished.wait()

    assert len(anthropic_api.requests) == 3  # no judge call
    support = _report(recorder).support
    assert support is not None
    assert (support.claims[0].verdict, support.claims[0].note) == (Verdict.UNKNOWN, SKIPPED)
    assert UNCHECKED_FOOTER in recorder.outcome.markdown


async def test_a_run_over_its_budget_leaves_its_claims_unchecked(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = f"# Acme\n\n## TL;DR\n- It makes picking robots [1].\n- {RAISED}"
    anthropic_api.script(*_read_then(web, text))  # the second reply is the budget's write-up
    spent = settings.model_copy(update={"max_turns": 5, "max_run_cost_usd": 1e-9})
    async with open_services(spent) as services:
        recorder = await _research(services)

    assert recorder.outcome.ending.value == "budget_synthesized"
    assert len(anthropic_api.requests) == 2  # no judge call
    support = _report(recorder).support
    assert support is not None
    assert (support.claims[0].verdict, support.claims[0].note) == (Verdict.UNKNOWN, OVER_BUDGET)
    assert UNCHECKED_FOOTER in recorder.outcome.markdown


async def test_a_report_from_the_evidence_alone_is_not_measured(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    anthropic_api.script(
        reply_tools([("read_page", {"url": web.url + ARTICLE_PATH})]),
        error(400, "invalid_request_error", "synthesis refused"),
    )
    async with open_services(settings.model_copy(update={"max_turns": 1})) as services:
        recorder = await _research(services)

    report = _report(recorder)
    assert report.from_evidence_only and report.support is None
    assert len(anthropic_api.requests) == 2 and "cited claims" not in recorder.outcome.markdown


async def test_a_report_too_large_for_one_judge_call_is_split_and_every_claim_is_judged(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    topics = [f"topic{i:02d}" for i in range(60)]
    filler = "with a long description of its many features and the places it works in " * 8
    paragraphs = "".join(f"<p>The {t} unit is made {filler}.</p>" for t in topics)
    url = web.page("/long", f"<html><head><title>Long</title></head><body>{paragraphs}</body>")
    bullets = "\n".join(f"- The {t} unit is liked [1]." for t in topics)
    answer = _judged(*["supported"] * len(topics))
    anthropic_api.script(
        reply_tools([("read_page", {"url": url})]),
        reply_text(f"# Acme\n\n## TL;DR\n{bullets}"),
        answer,
        answer,
    )
    whole = {"max_turns": 3, "compress_threshold_tokens": 10**9}  # the page is read as it is
    async with open_services(settings.model_copy(update=whole)) as services:
        recorder = await _research(services)

    judged = [
        r
        for r in anthropic_api.requests
        if (r.get("tool_choice") or {}).get("name") == "record_verdicts"
    ]
    assert len(judged) == 2  # split past the size, not one call per claim
    asked = "".join(str(r["messages"]) for r in judged)
    assert all(f"The {t} unit is liked" in asked for t in topics)
    support = _report(recorder).support
    assert support is not None and len(support.claims) == len(topics)
    assert {c.verdict for c in support.claims} == {Verdict.SUPPORTED}
