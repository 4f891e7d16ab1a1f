"""The `mcpServers` file: both kinds of server, `${VAR}` from the environment, our own keys, and
one line naming the file, the server and the problem for everything wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.agent.mcp.config import ServerConfig, load_mcp_config
from bot.config import Settings
from bot.errors import ConfigError


def _write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def test_a_local_and_a_remote_server_with_variables_and_our_own_keys(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "crm": {
                    "command": "npx",
                    "args": ["-y", "crm-mcp", "--region=${REGION}"],
                    "env": {"CRM_TOKEN": "${CRM_TOKEN}", "MODE": "${MODE:-read-only}"},
                    "tools": {"exclude": ["delete_account"]},
                    "workspaces": ["T0123", "terminal"],
                },
                "wiki": {
                    "type": "http",
                    "url": "https://${WIKI_HOST}/mcp",
                    "headers": {"Authorization": "Bearer ${WIKI_TOKEN}"},
                    "tools": {"include": ["search", "read_page"]},
                    "timeout_s": 12.5,
                },
            }
        },
    )
    environ = {"REGION": "eu", "CRM_TOKEN": "c-1", "WIKI_HOST": "wiki.internal", "WIKI_TOKEN": "w"}

    crm, wiki = load_mcp_config(path, environ)

    assert (crm.name, crm.transport, crm.command) == ("crm", "stdio", "npx")
    assert crm.args == ["-y", "crm-mcp", "--region=eu"]
    assert crm.env == {"CRM_TOKEN": "c-1", "MODE": "read-only"}
    assert crm.allows_tool("find_account") and not crm.allows_tool("delete_account")
    assert crm.allows_workspace("T0123") and crm.allows_workspace("terminal")
    assert not crm.allows_workspace("G999")
    assert (wiki.transport, wiki.url) == ("http", "https://wiki.internal/mcp")
    assert wiki.headers == {"Authorization": "Bearer w"}
    assert wiki.allows_tool("search") and not wiki.allows_tool("delete_page")
    assert wiki.timeout_s == 12.5 and wiki.workspaces is None
    assert wiki.allows_workspace("anything")


def test_defaults() -> None:
    server = ServerConfig(name="crm", command="crm-mcp")
    assert (server.args, server.env, server.timeout_s, server.workspaces) == ([], {}, 30.0, None)
    assert server.allows_tool("anything")


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ('{"mcpServers": {"crm": ', "not valid JSON (Expecting value at line 1, column 24)"),
        ({"servers": {}}, 'needs an object {"mcpServers": {...}}'),
        ({"mcpServers": {}, "globalShortcut": "x"}, "unknown key 'globalShortcut'"),
        ({"mcpServers": {"crm": {"comand": "x"}}}, "server 'crm': unknown key 'comand'"),
        (
            {"mcpServers": {"crm": {"command": "x", "tools": {"inclde": ["a"]}}}},
            "server 'crm': unknown key 'tools.inclde'",
        ),
        (
            {"mcpServers": {"crm": {"command": "x", "url": "https://a"}}},
            "server 'crm': give either command",
        ),
        ({"mcpServers": {"crm": {"env": {}}}}, "server 'crm': give either command"),
        (
            {"mcpServers": {"crm": {"command": "x", "env": {"T": "${CRM_TOKEN}"}}}},
            "server 'crm': env T names ${CRM_TOKEN}, which is not set",
        ),
        (
            {"mcpServers": {"wiki": {"url": "https://w", "headers": {"A": "Bearer ${NOPE}"}}}},
            "server 'wiki': header A names ${NOPE}, which is not set",
        ),
        ({"mcpServers": {"crm": {"url": "ftp://crm"}}}, "url 'ftp://crm' is not an http(s)"),
        ({"mcpServers": {"crm": {"url": "https://c", "type": "sse"}}}, "SSE transport"),
        ({"mcpServers": {"crm": {"url": "https://c", "type": "stdio"}}}, "does not fit"),
        ({"mcpServers": {"crm": {"command": "x", "timeout_s": 0}}}, "timeout_s: Input should"),
        ({"mcpServers": {"crm": "npx crm"}}, "server 'crm': must be an object"),
        ({"mcpServers": {"my crm": {"command": "x"}}}, "server 'my crm': the name must be"),
        ({"mcpServers": {"crm__x": {"command": "x"}}}, "server 'crm__x': the name must be"),
        ({"mcpServers": {"c" * 57: {"command": "x"}}}, "the name must be"),
    ],
)
def test_each_problem_is_one_line_naming_file_server_and_problem(
    tmp_path: Path, document: Any, problem: str
) -> None:
    path = _write(tmp_path, document)

    with pytest.raises(ConfigError) as raised:
        load_mcp_config(path, {})

    message = str(raised.value)
    assert message.startswith(f"MCP config {path}: ")
    assert problem in message
    assert "\n" not in message


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"mcp\.json: cannot be read \(No such file"):
        load_mcp_config(tmp_path / "mcp.json", {})


def test_the_setting_names_the_file_and_empty_means_unset(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    assert Settings.from_mapping({"RESEARCH_BOT_MCP_CONFIG": str(path)}).mcp_config == path
    assert Settings.from_mapping({"RESEARCH_BOT_MCP_CONFIG": ""}).mcp_config is None
    assert Settings.from_mapping({}).mcp_config is None
