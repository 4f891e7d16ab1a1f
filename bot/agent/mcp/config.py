"""The operator's MCP servers: the `mcpServers` JSON file RESEARCH_BOT_MCP_CONFIG names, in the
shape Claude Desktop, Claude Code and Cursor read, plus research-bot's own keys per server
(`tools`, `timeout_s`, `workspaces`). Servers come only from this file: nothing typed in chat
and nothing a model or a page writes can add one."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.addresses import is_web_address
from bot.errors import ConfigError

SERVER_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")
"""A name that fits `mcp__<name>__<tool>` (Anthropic: `^[a-zA-Z0-9_-]{1,64}$`), with no `__`
inside, so that the tool name still says where the server's name ends."""
MAX_SERVER_NAME = 64 - len("mcp____") - 1
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ToolFilter(BaseModel):
    """Which of a server's tools runs may call: `include` (absent: all), less `exclude`."""

    model_config = ConfigDict(extra="forbid")

    include: list[str] | None = None
    exclude: list[str] = []


class ServerConfig(BaseModel):
    """One server: local (`command`, started over stdio) or remote (`url`, Streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    command: str | None = None
    """The program to start (it must exist where the bot runs: in Docker, inside the image)."""
    args: list[str] = []
    env: dict[str, str] = {}
    """Added to the few variables a local server inherits (HOME, PATH …), never the bot's keys."""
    url: str | None = None
    headers: dict[str, str] = {}
    """Sent with every request to a remote server (`Authorization: Bearer ${TOKEN}`)."""
    tools: ToolFilter = ToolFilter()
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    """Longest one call (and connecting) may take."""
    workspaces: list[str] | None = None
    """Slack team ids, Discord guild ids, or `terminal`, whose runs may use it; None: every one."""

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def allows_tool(self, tool: str) -> bool:
        listed = self.tools.include is None or tool in self.tools.include
        return listed and tool not in self.tools.exclude

    def allows_workspace(self, scope: str) -> bool:
        return self.workspaces is None or scope in self.workspaces


class _Entry(BaseModel):
    """An entry as written: ServerConfig's keys, and `type` as Claude Code writes it."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["stdio", "http", "streamable-http", "sse"] | None = None
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}
    tools: ToolFilter = ToolFilter()
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    workspaces: list[str] | None = None


def load_mcp_config(path: Path, environ: Mapping[str, str] | None = None) -> list[ServerConfig]:
    """The servers `path` configures, `${VAR}` (or `${VAR:-default}`) replaced from `environ`
    (the process environment) in command, args, env, url and headers. Anything wrong is a
    ConfigError of one line naming the file, the server and the problem."""
    variables = os.environ if environ is None else environ
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"MCP config {path}: cannot be read ({_why(error)}).") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"MCP config {path}: not valid JSON ({error.msg} at line {error.lineno}, "
            f"column {error.colno})."
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("mcpServers"), dict):
        raise ConfigError(f'MCP config {path}: needs an object {{"mcpServers": {{...}}}}.')
    if unknown := sorted(set(document) - {"mcpServers"}):
        raise ConfigError(f"MCP config {path}: unknown key {unknown[0]!r} (only mcpServers).")
    return [_server(path, name, entry, variables) for name, entry in document["mcpServers"].items()]


def _server(path: Path, name: str, entry: Any, environ: Mapping[str, str]) -> ServerConfig:
    where = f"MCP config {path}: server {name!r}"
    if not SERVER_NAME.fullmatch(name) or len(name) > MAX_SERVER_NAME:
        raise ConfigError(
            f"{where}: the name must be letters, digits, - and single _ (at most "
            f"{MAX_SERVER_NAME}), as it becomes part of tool names."
        )
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: must be an object with command or url.")
    try:
        parsed = _Entry.model_validate(entry)
    except ValidationError as error:
        raise ConfigError(f"{where}: {_problem(error)}.") from None
    if (parsed.command is None) == (parsed.url is None):
        raise ConfigError(f"{where}: give either command (a local server) or url (a remote one).")
    if parsed.type == "sse":
        raise ConfigError(f"{where}: the SSE transport is not supported; use Streamable HTTP.")
    if parsed.type is not None and (parsed.type == "stdio") != (parsed.command is not None):
        raise ConfigError(f"{where}: type {parsed.type!r} does not fit its command or url.")

    def expand(value: str, key: str) -> str:
        def variable(match: re.Match[str]) -> str:
            value = environ.get(match[1])
            if value is None and match[2] is None:
                raise ConfigError(f"{where}: {key} names ${{{match[1]}}}, which is not set.")
            return value if value is not None else match[2]

        return _VARIABLE.sub(variable, value)

    url = parsed.url and expand(parsed.url, "url")
    if url is not None and not is_web_address(url):
        raise ConfigError(f"{where}: url {url!r} is not an http(s) address.")
    return ServerConfig(
        name=name,
        command=parsed.command and expand(parsed.command, "command"),
        args=[expand(arg, "args") for arg in parsed.args],
        env={key: expand(value, f"env {key}") for key, value in parsed.env.items()},
        url=url,
        headers={key: expand(value, f"header {key}") for key, value in parsed.headers.items()},
        tools=parsed.tools,
        timeout_s=parsed.timeout_s,
        workspaces=parsed.workspaces,
    )


def _problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"unknown key {where!r}"
    return f"{where}: {first['msg']}"


def _why(error: OSError | UnicodeDecodeError) -> str:
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    return "not UTF-8 text"
