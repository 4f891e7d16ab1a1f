"""`research-bot mcp serve` killed mid-run (SIGKILL): the next stdio server a desktop client
starts takes the orphaned run over, finishes it from its evidence, and answers for it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import ROOT, eventually

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n\n## Overview\nFounded 2015 [1].\n"


def _server(tmp_path: Path, env: dict[str, str], pidfile: Path) -> StdioServerParameters:
    # `exec` keeps the shell's pid, so the test knows which process to kill.
    command = f'echo $$ > "{pidfile}"; exec "{sys.executable}" -m bot mcp serve'
    return StdioServerParameters(command="sh", args=["-c", command], env=env, cwd=tmp_path)


async def test_a_run_of_a_killed_stdio_server_is_finished_by_the_next_one(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        **world_env(tmp_path, anthropic_api, tavily, web),
    }
    anthropic_api.script(reply_tools([("web_search", {"query": "Acme Robotics"})]))
    hang = asyncio.Event()

    async def hang_then_report(body: dict[str, Any]) -> Any:
        if not hang.is_set():
            await asyncio.Event().wait()
        return reply_text(REPORT)

    anthropic_api.responder = hang_then_report
    pidfile = tmp_path / "first.pid"
    first = contextlib.AsyncExitStack()
    mcp = await first.enter_async_context(
        Client(_server(tmp_path, env, pidfile), cache=None, read_timeout_seconds=20)
    )
    started = await mcp.call_tool("start_research", {"topic": "Acme Robotics"})
    run_id = started.structured_content["run_id"]

    async def found_something() -> bool:
        state = await mcp.call_tool("research_status", {"run_id": run_id})
        return bool(state.structured_content["sources"])

    await eventually(found_something, within_s=20)
    hang.set()
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    # Its pipes closed under the client: how the SDK says so on the way out is its business.
    with contextlib.suppress(Exception):
        await first.aclose()

    async with Client(
        _server(tmp_path, env, tmp_path / "second.pid"), cache=None, read_timeout_seconds=20
    ) as mcp:

        async def done() -> bool:
            state = await mcp.call_tool("research_status", {"run_id": run_id})
            return state.structured_content["status"] == "done"

        await eventually(done, within_s=20, every_s=0.1)
        report = await mcp.call_tool("get_report", {"run_id": run_id})

    assert not report.is_error, report.content
    assert report.structured_content["ending"] == "interrupted_synthesized"
    assert "## TL;DR" in report.content[0].text
