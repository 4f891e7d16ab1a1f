"""`research-bot mcp list` run as a person runs it, against real MCP servers (a local one over
stdio, a remote one over HTTP); and a bad config file stopping `mcp list`, `serve` and
`research` at start with one line."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.mcp import http_entry, stdio_entry
from tests.fakes.mcp.catalog import crm_server
from tests.fakes.mcp.http_server import HttpMcpServer
from tests.process import Cli

CRM_TOOLS = ["lookup_company", "search_wiki", "company_logo", "missing_account", "meet"]
NOBODY = "http://127.0.0.1:9/mcp"
"""The discard port: nothing listens there, a connection is refused at once."""


@pytest.fixture(scope="module")
def crm_http() -> Iterator[HttpMcpServer]:
    with HttpMcpServer(crm_server) as fake:
        yield fake


def _cli(tmp_path: Path, servers: dict[str, Any] | str) -> Cli:
    path = tmp_path / "mcp.json"
    path.write_text(servers if isinstance(servers, str) else json.dumps({"mcpServers": servers}))
    return Cli(tmp_path, {"RESEARCH_BOT_MCP_CONFIG": str(path)})


async def test_every_server_answers_exit_0_with_json(
    tmp_path: Path, crm_http: HttpMcpServer
) -> None:
    cli = _cli(
        tmp_path,
        {
            "crm": stdio_entry("crm", tools={"exclude": ["meet"]}, workspaces=["T0123"]),
            "wiki": http_entry(crm_http.url, tools={"include": ["search_wiki"]}),
        },
    )

    code, out, err = await cli.run("mcp", "list", "--json")

    assert (code, err) == (0, "")
    crm, wiki = json.loads(out)
    assert crm == {
        "name": "crm",
        "transport": "stdio",
        "answers": True,
        "reason": "",
        "tools": CRM_TOOLS,
        "allowed": CRM_TOOLS[:-1],
        "workspaces": ["T0123"],
    }
    assert (wiki["transport"], wiki["answers"], wiki["allowed"]) == ("http", True, ["search_wiki"])
    assert wiki["workspaces"] is None


async def test_a_server_that_does_not_answer_exits_1_with_one_line(
    tmp_path: Path, crm_http: HttpMcpServer
) -> None:
    cli = _cli(tmp_path, {"wiki": http_entry(crm_http.url), "down": http_entry(NOBODY)})

    code, out, err = await cli.run("mcp", "list")

    assert code == 1
    [line] = err.splitlines()
    assert line.startswith("research-bot: MCP server down does not answer: ConnectError")
    assert "wiki  http  answers, 5 of 5 tools allowed  workspaces: all" in out
    assert "  + search_wiki" in out.splitlines()
    assert "down  http  does not answer (ConnectError" in out


@pytest.mark.parametrize(
    "command",
    [("mcp", "list"), ("serve",), ("research", "Acme Robotics")],
    ids=["mcp list", "serve", "research"],
)
async def test_a_bad_config_stops_the_command_at_start_with_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    cli = _cli(tmp_path, {"crm": {"command": sys.executable, "env": {"T": "${CRM_TOKEN}"}}})

    code, out, err = await cli.run(*command)

    assert (code, out) == (2, "")
    assert err == (
        f"research-bot: MCP config {tmp_path / 'mcp.json'}: server 'crm': env T names "
        "${CRM_TOKEN}, which is not set.\n"
    )


async def test_a_file_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    code, _, err = await _cli(tmp_path, '{"mcpServers": {"crm": }').run("mcp", "list")
    assert code == 2
    assert err.endswith("mcp.json: not valid JSON (Expecting value at line 1, column 24).\n")


async def test_without_a_config_there_is_nothing_to_list(tmp_path: Path) -> None:
    code, out, _ = await Cli(tmp_path, {}).run("mcp", "list")
    assert code == 0 and "set RESEARCH_BOT_MCP_CONFIG" in out
