"""What the chat front ends say about a run's ending and cost, on every platform."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from bot.adapters.discord.card import run_card

from bot.adapters.chat.commands import history_lines
from bot.adapters.chat.sink import StatusView, StepRow, outcome_summary
from bot.adapters.slack.render import status_line
from bot.agent.events import Ending, Usage
from bot.agent.report.model import Report
from bot.domain import Mode, Origin, RunRecord, RunStatus
from bot.runs.manager import Outcome

REPORT = Report(title="Acme", tldr="Robots.", sections=[], sources=[])


def test_an_unknown_cost_is_said_never_shown_as_zero() -> None:
    outcome = Outcome(ending=Ending.COMPLETED, report=REPORT, usage=Usage(cost_usd=None))
    assert outcome_summary(outcome).splitlines()[0] == "Done · 0 turns · 0s · cost unknown"

    view = StatusView(run_id="r1", topic="Acme", mode="company", requester="U1", cost_usd=None)
    assert "cost unknown" in status_line(view)
    assert "**Cost:** cost unknown" in str(run_card(view).to_components())
    record = RunRecord(
        run_id="r1",
        topic="Acme",
        mode=Mode.COMPANY,
        origin=Origin(),
        status=RunStatus.DONE,
        cost_usd=None,
        created_at=datetime(2026, 1, 2, 3, 4, tzinfo=UTC),
    )
    assert history_lines([record])[0].endswith("· done · cost unknown")
    assert history_lines([record.model_copy(update={"cost_usd": 0.125})])[0].endswith("$0.12")
    watched = record.model_copy(update={"watch_id": "w0a1b2c"})
    assert "· Acme · watch `w0a1b2c` · done ·" in history_lines([watched])[0]
    assert "watch" not in history_lines([record])[0]


def test_a_run_that_failed_inside_says_what_it_could_still_do() -> None:
    written = Outcome(ending=Ending.ERROR_SYNTHESIZED, report=REPORT)
    assert outcome_summary(written).startswith(
        "Done (something failed; written up from what was found) · "
    )
    nothing = Outcome(ending=Ending.ERROR_SYNTHESIS_FAILED, error="Start it again.")
    lines = outcome_summary(nothing).splitlines()
    assert lines[0].startswith("Failed: nothing could be written up · ")
    assert lines[-1] == "Start it again."


def test_counts_take_their_noun_in_the_right_number() -> None:
    one = Outcome(ending=Ending.COMPLETED, report=REPORT, turns=1, usage=Usage(cost_usd=0.01))
    assert outcome_summary(one).splitlines()[0] == "Done · 1 turn · 0s · $0.01"
    view = StatusView(run_id="r1", topic="Acme", mode="company", requester="U1")
    view.steps = [StepRow(number=1, call_id="a", action="Searched: acme")]
    card = str(run_card(view).to_components())
    assert "· 1 step" in card and "· 1 steps" not in card
    view.steps.append(StepRow(number=2, call_id="b", action="Reading: acme.example"))
    assert "· 2 steps" in str(run_card(view).to_components())


def test_what_failed_is_said_once_when_the_tldr_already_says_it() -> None:
    why = "Writing the report failed: the model is overloaded."
    fallback = REPORT.model_copy(update={"tldr": f"{why} This report lists what was found."})
    outcome = Outcome(ending=Ending.ERROR_SYNTHESIS_FAILED, report=fallback, error=why)

    summary = outcome_summary(outcome)
    assert summary.count("failed") == 1  # in the TL;DR alone
    assert summary.startswith("Done (report built from the sources found) · ")
    # Where the TL;DR does not say it, the label does.
    silent = Outcome(ending=Ending.ERROR_SYNTHESIS_FAILED, report=REPORT, error=why)
    assert outcome_summary(silent).startswith(
        "Done (write-up failed: report built from the sources found) · "
    )


def test_a_full_context_is_named_as_the_reason_for_a_sources_only_report() -> None:
    outcome = Outcome(ending=Ending.CONTEXT_FULL_SYNTHESIS_FAILED, report=REPORT)

    assert outcome_summary(outcome).startswith(
        "Done (the model's context was full: report built from the sources found) · "
    )
