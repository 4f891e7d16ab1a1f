"""arXiv, GitHub and a PDF end to end: the real composition (runs service, store, engine, SDK
clients, extraction worker) against the fake Messages API, arXiv, GitHub and web. The scripted
model picks the tools; the report cites a paper, a repository and a PDF it read."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agent.events import Ending, ToolFinished
from bot.agent.report.support import Verdict
from bot.agent.trajectory import trajectory
from bot.compose import open_services
from bot.config import Settings
from bot.domain import Request
from tests.conftest import Recorder, world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use
from tests.fakes.arxiv_api import FakeArxiv, FakePaper
from tests.fakes.github_api import FakeGitHub, repo
from tests.fakes.pdf import text_pdf
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb

PAPER_ID = "2401.01234"
PDF_TEXT = "Tactile grasping for warehouse robots\nOur gripper picks 40 items per minute."
README = "# Grasp\n\nA Python library for tactile grasping, running on 37 warehouse robots.\n"
REPORT = """# Tactile grasping

## TL;DR
- A tactile gripper reaches 93% grasp success [1].
- The open-source library runs on 37 warehouse robots [3].

## Overview
The paper's gripper picks 40 items per minute [5].

## Products and services
The library has 321 stars on GitHub [3].

## Customers and market
The gripper was tested on 1,200 items [1].

## Risks
The paper measured 40 items per minute in one setting [5].
"""


@pytest.fixture
async def arxiv(web: FakeWeb) -> AsyncIterator[FakeArxiv]:
    async with FakeArxiv() as fake:
        fake.papers_for["all:tactile AND all:grasping"] = [
            FakePaper(
                PAPER_ID,
                "Tactile grasping for warehouse robots",
                "A tactile gripper that reaches 93% grasp success on 1,200 items.",
                base=web.url,
            ),
            FakePaper(
                "2402.05678", "Grasp planning survey", "A survey of grasp planning.", base=web.url
            ),
        ]
        yield fake


@pytest.fixture
async def github() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub() as fake:
        fake.repos = [
            repo("acme/grasp", "Tactile grasping library", stars=321),
            repo("acme/tactile-sim", "Tactile sensor simulator"),
        ]
        fake.readmes["acme/grasp"] = README
        yield fake


async def test_a_report_cites_a_paper_a_repository_and_a_pdf_it_read(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    arxiv: FakeArxiv,
    github: FakeGitHub,
) -> None:
    pdf_url = web.page(f"/pdf/{PAPER_ID}v1", text_pdf([PDF_TEXT]), content_type="application/pdf")
    env = {
        **world_env(tmp_path, anthropic_api, tavily, web),
        "ARXIV_API_URL": arxiv.url,
        "GITHUB_API_URL": github.url,
        "GITHUB_TOKEN": "ghp_test",
        "RESEARCH_BOT_TOOL_TIMEOUTS": json.dumps({"arxiv_search": 20, "read_github_readme": 10}),
    }
    anthropic_api.script(
        reply_tools([("arxiv_search", {"query": "tactile grasping"})]),
        reply_tools([("github_search", {"query": "tactile grasping"})]),
        reply_tools(
            [("read_page", {"url": pdf_url}), ("read_github_readme", {"repo": "acme/grasp"})]
        ),
        reply_text(REPORT),
        # The claim judge, for the claims the sources do not state word for word.
        reply(
            [
                tool_use(
                    "record_verdicts",
                    {"claims": [{"id": i, "verdict": "supported"} for i in range(1, 7)]},
                )
            ],
            "tool_use",
        ),
    )

    async with open_services(Settings.from_mapping(env)) as services:
        recorder = Recorder()
        record = await services.runs.submit(Request(topic="Tactile grasping"), recorder)
        await asyncio.wait_for(recorder.finished.wait(), 30)
        stored = await services.store.events(record.run_id)

    outcome = recorder.outcome
    assert outcome.ending is Ending.COMPLETED
    # Each cited claim is checked against the text the run got from arXiv, GitHub or the PDF.
    support = outcome.report.support
    assert len(support.claims) == 6 and support.count(Verdict.SUPPORTED) == 6
    judged = str(anthropic_api.requests[-1]["messages"])
    assert all(f"Source [{n}]:" in judged for n in (1, 2, 3))
    cited = {source.url: source.read for source in outcome.report.sources}
    assert cited == {
        f"{web.url}/abs/{PAPER_ID}v1": False,  # seen in arxiv_search, with its abstract
        "https://github.com/acme/grasp": True,  # listed by github_search, then its README read
        pdf_url: True,  # the paper's PDF, read by the page reader
    }
    # Every tool result reached the model fenced, and the model chose each tool itself.
    finished = [e for e in stored if isinstance(e, ToolFinished)]
    assert [e.name for e in finished] in (
        ["arxiv_search", "github_search", "read_page", "read_github_readme"],
        ["arxiv_search", "github_search", "read_github_readme", "read_page"],
    )
    assert not any(e.is_error for e in finished)
    by_name = {e.name: e.content for e in finished}
    assert (
        "<web_content>" in by_name["arxiv_search"]
        and "93% grasp success" in by_name["arxiv_search"]
    )
    assert f"PDF: {pdf_url}" in by_name["arxiv_search"]
    assert "40 items per minute" in by_name["read_page"]
    assert "37 warehouse robots" in by_name["read_github_readme"]
    steps = trajectory(record.run_id, stored)["turns"]
    assert [c["name"] for c in steps[0]["tool_calls"]] == ["arxiv_search"]
    # The wire: arXiv's Atom API and GitHub's REST API, with the configured token.
    assert arxiv.requests[0].query["search_query"] == "all:tactile AND all:grasping"
    assert {r.path for r in github.requests} == {"/search/repositories", "/repos/acme/grasp/readme"}
    assert all(r.headers["Authorization"] == "Bearer ghp_test" for r in github.requests)
    tools_offered = {tool["name"] for tool in anthropic_api.requests[0]["tools"]}
    assert {"arxiv_search", "github_search", "read_github_readme"} <= tools_offered
