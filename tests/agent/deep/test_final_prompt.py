"""A deep run's final write-up is given the earlier findings its planner started from: a watched
run's asks it for the new developments since its watch's last report."""

from __future__ import annotations

from bot.agent.deep.prompts import final_prompt
from bot.agent.prompts import NEW_DEVELOPMENTS, earlier_findings
from bot.domain import Mode

LAST = "# Acme Robotics\n\n## TL;DR\n- Revenue was $12 million [1].\n"


def _prompt(earlier: str) -> str:
    return final_prompt(
        Mode.COMPANY, "Acme Robotics", "en", findings="(findings)", index="[1] a", coverage="",
        earlier=earlier,
    )  # fmt: skip


def test_a_watched_deep_runs_write_up_sees_the_last_report_and_is_asked_what_is_new() -> None:
    prompt = _prompt(earlier_findings("Acme Robotics", "2026-11-01", LAST, watched=True))

    assert f"## {NEW_DEVELOPMENTS}" in prompt
    assert "Revenue was $12 million [1]." in prompt and "<web_content>" in prompt
    assert prompt.index("(findings)") < prompt.index("Earlier findings")


def test_a_run_without_earlier_findings_is_not_told_of_any() -> None:
    assert "Earlier findings" not in _prompt("") and NEW_DEVELOPMENTS not in _prompt("")
