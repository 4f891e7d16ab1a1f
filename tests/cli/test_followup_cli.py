"""`research-bot ask`, and follow-ups in `history` and `show`, as subprocesses against the fakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb
from tests.process import Cli

REPORT = "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [4].\n\n## Overview\nFounded 2019 [4].\n"
REVISED = REPORT.replace("[4]", "[1]") + "\n## Customers and market\nGrocers [2].\n"


def answer(text: str, **more: Any) -> Any:
    return reply([tool_use("answer", {"answer": text, **more})], "tool_use")


@pytest.fixture
def cli(tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Cli:
    return Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))


async def researched(cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb) -> str:
    anthropic_api.script(
        reply_tools(
            [
                ("web_search", {"query": "Acme Robotics"}),
                ("read_page", {"url": web.url + ARTICLE_PATH}),
            ]
        ),
        reply_text(REPORT),
    )
    code, _, err = await cli.run("research", "Acme Robotics")
    assert code == 0, err
    code, out, _ = await cli.run("history", "--json")
    return str(json.loads(out)[0]["run_id"])


async def test_ask_answers_updates_the_report_and_history_and_show_nest_follow_ups(
    cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    run_id = await researched(cli, anthropic_api, web)

    anthropic_api.script(answer("They raised $40 million [1]."))
    code, out, err = await cli.run("ask", run_id, "How much did they raise?")
    assert code == 0, err
    assert out.startswith("They raised $40 million [1].") and ARTICLE_PATH in out

    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme customers"})]),
        answer("Added their customers [2].", update_report=True, updated_report=REVISED),
    )
    code, out, err = await cli.run("ask", run_id, "Update the report with customers", "--json")
    assert code == 0, err
    asked = json.loads(out)
    assert (asked["parent_run_id"], asked["ending"], asked["version"]) == (run_id, "completed", 2)
    assert "Searched: Acme customers" in err and asked["cost_usd"] > 0
    file = Path(asked["report_file"])
    assert file.name == f"acme-robotics-{run_id}-v2.md" and "Grocers [2]" in file.read_text()

    code, out, _ = await cli.run("show", run_id)
    assert code == 0 and out == file.read_text()

    code, out, _ = await cli.run("history")
    lines = out.splitlines()
    assert lines[0].startswith(run_id)
    assert len(lines) == 3 and all("└ follow-up" in line for line in lines[1:])
    assert lines[2].split()[0] == asked["run_id"]
    assert "answered" in lines[1] and "How much did they raise?" in lines[1]

    code, out, _ = await cli.run("history", "--json")
    rows = json.loads(out)
    assert [r["parent_run_id"] for r in rows] == [None, run_id, run_id]
    assert [r["termination_reason"] for r in rows] == ["completed", "answered", "completed"]

    code, out, _ = await cli.run("show", run_id, "--trajectory", "--json")
    steps = json.loads(out)
    follow_ups = steps["follow_ups"]
    assert [f["question"] for f in follow_ups] == [
        "How much did they raise?",
        "Update the report with customers",
    ]
    assert [f["termination_reason"] for f in follow_ups] == ["answered", "completed"]
    assert [len(t["tool_calls"]) for t in follow_ups[1]["turns"]] == [1, 0]
    assert follow_ups[1]["turns"][-1]["final"] is True


async def test_ask_refuses_unknown_runs_and_empty_questions(
    cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    code, _, err = await cli.run("ask", "nosuchrun", "Why?")
    assert code == 1 and "No run nosuchrun" in err and "Traceback" not in err
    run_id = await researched(cli, anthropic_api, web)
    code, _, err = await cli.run("ask", run_id, "   ")
    assert code == 2 and "Ask a question" in err and "Traceback" not in err
