"""`research-bot mcp serve` as a desktop client starts it: a subprocess on stdio, driven by the
SDK's own client. One process for the whole story (the suite's time is short)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import ROOT

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n\n## Overview\nFounded 2015 [1].\n"


async def test_a_run_over_stdio_is_followed_to_its_report_in_the_terminals_history(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        **world_env(tmp_path, anthropic_api, tavily, web),
    }
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "bot", "mcp", "serve"], env=env, cwd=tmp_path
    )
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics"})]), reply_text(REPORT)
    )
    steps: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        steps.append(message or "")

    async with Client(server, cache=None, read_timeout_seconds=20) as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        result = await mcp.call_tool("research", {"topic": "Acme Robotics"}, None, progress)
        run_id = result.structured_content["run_id"]
        status = await mcp.call_tool("research_status", {"run_id": run_id})
        found = await mcp.call_tool("search_reports", {"query": "robots"})
        unknown = await mcp.call_tool("get_report", {"run_id": "nosuchrun"})

    assert {"research", "start_research", "get_report", "ask_followup"} <= tools.keys()
    assert tools["research_status"].output_schema is not None
    assert result.structured_content["status"] == "done", result.content
    assert any("Acme Robotics" in step for step in steps), steps
    assert status.structured_content["sources"] >= 1
    assert [hit["run_id"] for hit in found.structured_content["hits"]] == [run_id]
    assert unknown.is_error and "No run nosuchrun here." in unknown.content[0].text
