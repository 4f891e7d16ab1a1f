"""A deep run from the terminal end to end: `research-bot research --depth deep` as a subprocess,
the real engine against the fake Messages API (answered by `DeepScript`), Tavily and web."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.agent.brief import SECTIONS
from bot.domain import Mode
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, Scripted, error
from tests.fakes.deep_script import QUESTIONS, DeepScript, forced
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb
from tests.process import Cli


@pytest.fixture
def cli(tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Cli:
    return Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))


@pytest.fixture
def script(anthropic_api: FakeAnthropic, web: FakeWeb) -> DeepScript:
    script = DeepScript(article_url=f"{web.url}{ARTICLE_PATH}")
    anthropic_api.responder = script
    return script


async def test_a_deep_run_from_the_terminal_writes_the_report_and_keeps_its_researchers(
    cli: Cli, script: DeepScript, web: FakeWeb
) -> None:
    code, out, err = await cli.run("research", "Acme Robotics", "--depth", "deep")

    assert code == 0, err
    started = re.search(r"Run (\w+): researching 'Acme Robotics'", err)
    assert started, err
    run_id = started[1]
    path = Path(out.strip())
    assert path.parent == cli.cwd and path.name == f"acme-robotics-{run_id}.md"
    markdown = path.read_text()
    assert markdown.startswith(f"# {script.title}\n")
    headings = re.findall(r"^## (.+)$", markdown, re.M)
    assert headings == ["TL;DR", *SECTIONS[Mode.COMPANY], "Sources"]
    # Every source of every researcher, once: three searches' three results and the article.
    sources = re.findall(r"^\d+\. \[.+\]\((\S+)\)", markdown, re.M)
    assert len(sources) == len(set(sources)) == 10
    assert f"{web.url}{ARTICLE_PATH}" in sources
    assert "ending: completed" in markdown

    # The progress names the plan, then who searched what, each finding and the coverage check.
    assert (
        "Plan: 3 researchers\n" + "".join(f"{n}. {q}\n" for n, q in enumerate(QUESTIONS, 1)) in err
    )
    for agent in (1, 2, 3):
        assert re.search(rf"\[researcher {agent}\] Searched: ", err), err
        assert re.search(rf"Finding {agent} done: .+ \(4 sources, high confidence\)", err), err
    assert err.index("Plan: 3") < err.index("Finding") < err.index("Coverage checked: 2 of 8")
    assert "Writing the report" in err and re.search(r"^Done · \d+ turns", err, re.M), err

    code, out, _ = await cli.run("show", run_id, "--trajectory", "--json")
    assert code == 0
    steps = json.loads(out)
    assert steps["termination_reason"] == "completed"
    assert [q["question"] for q in steps["plan"]["questions"]] == QUESTIONS
    researchers = steps["researchers"]
    assert [r["agent"] for r in researchers] == [1, 2, 3]
    assert sorted(r["question"] for r in researchers) == sorted(QUESTIONS)
    for researcher in researchers:
        assert researcher["total_turns"] == 3 and researcher["ending"] == "completed"
        calls = [c["name"] for t in researcher["turns"] for c in t["tool_calls"]]
        assert calls == ["web_search", "read_page"]
        finding = researcher["finding"]
        assert finding["summary"].startswith(f"On {researcher['question']}: ")
        assert finding["read"] == [10] and len(finding["seen"]) == 3
    assert steps["coverage"]["sections"][0] == {
        "section": "Overview",
        "status": "covered",
        "note": "",
    }
    assert steps["turns"][-1]["final"] is True and steps["turns"][-1]["synthesis"] is True

    code, out, _ = await cli.run("history", "--json")
    [row] = json.loads(out)
    assert code == 0
    assert (row["run_id"], row["depth"], row["status"], row["termination_reason"]) == (
        run_id,
        "deep",
        "done",
        "completed",
    )
    code, out, _ = await cli.run("history")
    assert code == 0 and re.search(rf"^{run_id} .* company +deep +done +completed ", out, re.M), out


async def test_a_deep_run_says_the_same_number_of_turns_everywhere(
    cli: Cli, script: DeepScript
) -> None:
    code, out, err = await cli.run("research", "Acme Robotics", "--depth", "deep")
    assert code == 0, err
    said = re.search(r"^Done · (\d+) turns", err, re.M)
    assert said, err
    code, history, _ = await cli.run("history", "--json")
    footer = re.search(r" · (\d+) turns · ending: ", Path(out.strip()).read_text())
    assert footer
    assert int(said[1]) == json.loads(history)[0]["turns"] == int(footer[1])


async def test_a_deep_run_whose_writers_all_fail_says_failed_once(
    cli: Cli, script: DeepScript, anthropic_api: FakeAnthropic
) -> None:
    async def writers_down(body: dict[str, Any]) -> Scripted:
        # The planner and the researchers answer; every write-up after them fails (the
        # supervisor's and the final one), so the findings become the report.
        if forced(body) in (None, "submit_plan", "submit_finding"):
            return await script(body)
        return error(500, "api_error", "fake: writer down", should_retry=False)

    anthropic_api.responder = writers_down
    code, out, err = await cli.run("research", "Acme Robotics", "--depth", "deep")

    assert code == 0, err
    assert Path(out.strip()).read_text().startswith("# ")
    ending = err[err.index("\nDone (") :]
    assert re.match(r"\nDone \(report built from the sources found\) · \d+ turns", ending), err
    assert ending.count("failed") == 1, ending  # the TL;DR's "The final write-up failed, …"
