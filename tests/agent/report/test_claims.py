"""Claim support: cited sentences checked against what their sources said, deterministically
first, then by the fast-model judge; the figures reach the report, its footer and the store."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.agent.events import ReportReady, RunFinished, UsageRecorded
from bot.agent.report.claims import check, cited_sentences
from bot.agent.report.model import Report, Section, Source
from bot.agent.report.support import Verdict
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Request
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
        "Acme Robotics raised $40M in a Series B led by Example Ventures [1].",
        "It was founded in 2019 and employs 1,200 people [1].",
        "Its robots work in 37 warehouses, with margins up about 12% [1].",
        "Pittsburgh-based Acme raised 40,000,000 dollars [1].",
    ],
)
def test_numbers_amounts_dates_and_names_found_in_the_source_support_a_claim(
    sentence: str,
) -> None:
    claim = check(sentence, [1], [ARTICLE])
    assert claim is not None and claim.verdict is Verdict.SUPPORTED, claim
    assert claim.method == "deterministic"


@pytest.mark.parametrize(
    ("sentence", "missing"),
    [
        ("Acme raised $45M in 2019 [1].", "$45M"),
        ("It was founded in 2017 [1].", "2017"),
        ("Its robots work in 370 warehouses [1].", "370"),
        ("Revenue grew 25% [1].", "25"),
    ],
)
def test_a_number_missing_from_every_cited_source_makes_a_claim_unsupported(
    sentence: str, missing: str
) -> None:
    claim = check(sentence, [1, 2], [ARTICLE, "Another page about Acme in 2019."])
    assert claim is not None and claim.verdict is Verdict.UNSUPPORTED
    assert missing.lstrip("$") in claim.note


def test_what_the_numbers_cannot_settle_is_left_for_the_judge() -> None:
    assert check("It makes robots for warehouses [1].", [1], [ARTICLE]) is None  # nothing to check
    # A name the source lacks does not prove the claim wrong: the judge decides.
    assert check("Acme was founded in 2019 by Jane Smith [1].", [1], [ARTICLE]) is None
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


async def _research(services: Services) -> Recorder:
    recorder = Recorder()
    record = await services.runs.submit(Request(topic="Acme Robotics"), recorder)
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


async def test_a_report_checked_deterministically_needs_no_judge_and_says_so_in_its_footer(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = (
        "# Acme\n\n## TL;DR\n- Acme Robotics raised $40M in a Series B [1].\n\n## People\n"
        "Chief executive Jane Doe plans to hire about 120 engineers [1]. "
        "The company has 900 customers [1]."
    )
    anthropic_api.script(*_read_then(web, text))
    # At the last turns a report is not early: no finish guard in this test.
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = await _research(services)
        stored = await services.store.claims(recorder.run_id)  # type: ignore[attr-defined]

    assert len(anthropic_api.requests) == 2
    support = _report(recorder).support
    assert support is not None
    assert [c.verdict for c in support.claims] == [
        Verdict.SUPPORTED,
        Verdict.SUPPORTED,
        Verdict.UNSUPPORTED,
    ]
    assert "900" in support.claims[2].note
    assert stored == support.claims
    assert (
        "3 cited claims · 2 supported by their source · 1 not · 0 unverified"
        in recorder.outcome.markdown
    )


async def test_the_fast_model_judges_what_the_numbers_cannot_settle_and_its_cost_counts(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = (
        "# Acme\n\n## TL;DR\n- It makes picking robots for warehouses [1].\n"
        "- Founded in 2019 [1].\n- Its investors are unhappy [1]."
    )
    anthropic_api.script(*_read_then(web, text), _judged("supported", "unsupported"))
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = await _research(services)

    judge = anthropic_api.requests[2]
    assert judge["model"] == FAST_MODEL
    assert judge["tool_choice"] == {"type": "tool", "name": "record_verdicts"}
    assert "<web_content>" in str(judge["messages"]) and "Example Ventures" in str(
        judge["messages"]
    )
    assert "1. It makes picking robots" in str(judge["messages"])
    support = _report(recorder).support
    assert support is not None
    assert [(c.verdict, c.method) for c in support.claims] == [
        (Verdict.SUPPORTED, "judge"),
        (Verdict.SUPPORTED, "deterministic"),
        (Verdict.UNSUPPORTED, "judge"),
    ]
    used = [e for e in recorder.events if isinstance(e, UsageRecorded)]
    assert [e.model for e in used][-1] == f"anthropic:{FAST_MODEL}"
    total = recorder.events[-1]
    assert isinstance(total, RunFinished)
    assert total.usage.input_tokens == sum(e.usage.input_tokens for e in used)
    assert total.usage.cost_usd == pytest.approx(sum(e.usage.cost_usd or 0 for e in used))


@pytest.mark.parametrize(
    "answer",
    [
        error(500, "api_error", "judge down", should_retry=False),
        reply_text("I would rather not use the tool."),
    ],
)
async def test_a_failed_judge_leaves_its_claims_unknown_and_the_run_completes(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb, answer: Any
) -> None:
    text = "# Acme\n\n## TL;DR\n- It makes picking robots [1].\n- Founded in 2019 [1]."
    anthropic_api.script(*_read_then(web, text), answer)
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = await _research(services)

    assert recorder.outcome.ending.value == "completed"
    support = _report(recorder).support
    assert support is not None
    assert [c.verdict for c in support.claims] == [Verdict.UNKNOWN, Verdict.SUPPORTED]
    assert "1 unverified" in recorder.outcome.markdown


async def test_cancel_while_the_judge_works_sends_the_report_out_unjudged(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    text = "# Acme\n\n## TL;DR\n- It makes picking robots [1].\n- Founded in 2019 [1]."
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
    assert judged and {c.verdict for c in judged} == {Verdict.UNKNOWN}
    assert {c.note for c in judged} == {"not judged: the run was asked to stop"}


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
