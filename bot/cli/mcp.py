"""`research-bot mcp list`: the MCP servers RESEARCH_BOT_MCP_CONFIG names, each connected once as
`serve` would, with whether it answers, its tools and which runs may call, and its workspaces.
The SDK loads only once the config has been read and found good.

`research-bot mcp serve`: the bot itself as an MCP server over stdio, for a desktop client that
starts it (bot/adapters/mcp/); its runs belong to the terminal's workspace."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import err, fail, load_settings, log_to_terminal, mcp_configs, out
from bot.domain import strip_controls
from bot.errors import BotError

if TYPE_CHECKING:
    from bot.agent.mcp.config import ServerConfig
    from bot.agent.mcp.servers import ServerStatus
    from bot.config import Settings

mcp_app = typer.Typer(
    no_args_is_help=True, help="MCP servers: the private sources RESEARCH_BOT_MCP_CONFIG names."
)
NOT_ALL_ANSWER = 1


@mcp_app.command("list")
def list_servers(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Each configured MCP server: whether it answers, its tools (those runs may call marked
    +), and the workspaces that may use it.

    Exit 1, with one line on stderr for each, when a server does not answer."""
    log_to_terminal()
    # Its retry warnings say what the lines below say, once for each server.
    logging.getLogger("bot.agent.mcp.servers").setLevel(logging.ERROR)
    try:
        configs = mcp_configs(load_settings())
        statuses = asyncio.run(_statuses(configs)) if configs else []
    except BotError as error:
        raise fail(error) from None
    if as_json:
        sys.stdout.write(json.dumps([s.model_dump(mode="json") for s in statuses]) + "\n")
    elif not configs:
        out.print(
            "No MCP servers: set RESEARCH_BOT_MCP_CONFIG to an mcpServers JSON file "
            "(README: Your own sources: MCP servers).",
            markup=False,
        )
    for status in statuses:
        if not as_json:
            out.print(strip_controls(server_text(status)), markup=False, highlight=False)
        if not status.answers:
            line = f"research-bot: MCP server {status.name} does not answer: {status.reason}"
            err.print(strip_controls(line), markup=False, highlight=False)
    if not all(status.answers for status in statuses):
        raise typer.Exit(NOT_ALL_ANSWER)


def server_text(status: ServerStatus) -> str:
    workspaces = ", ".join(status.workspaces) if status.workspaces is not None else "all"
    if not status.answers:
        state = f"does not answer ({status.reason})"
    else:
        state = f"answers, {len(status.allowed)} of {len(status.tools)} tools allowed"
    lines = [f"{status.name}  {status.transport}  {state}  workspaces: {workspaces}"]
    lines += [f"  {'+' if t in status.allowed else '-'} {t}" for t in status.tools]
    return "\n".join(lines)


async def _statuses(configs: list[ServerConfig]) -> list[ServerStatus]:
    from bot.agent.mcp.servers import McpServers

    async with McpServers(configs) as servers:
        return await servers.status()


@mcp_app.command("serve")
def serve_stdio() -> None:
    """Serve research-bot's tools over stdio (an MCP client such as Claude Desktop starts this).

    Its runs belong to the terminal's workspace: `research-bot history` shows them."""
    log_to_terminal()  # stderr: stdout is the protocol's
    try:
        settings = load_settings()
        mcp_configs(settings)  # a bad MCP config stops here, before any client loads
        from bot.adapters.mcp.settings import load_mcp_settings

        asyncio.run(_serve_stdio(settings, load_mcp_settings().wait_s))
    except BotError as error:
        raise fail(error) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


async def _serve_stdio(settings: Settings, wait_s: float) -> None:
    from bot.adapters.mcp.callers import STDIO
    from bot.adapters.mcp.runs import McpRuns
    from bot.adapters.mcp.server import build_server
    from bot.compose import open_services

    async with open_services(settings) as services:
        service = McpRuns(services.store, services.runs, services.followups)
        server = build_server(service, lambda _: STDIO, wait_s=wait_s)
        await server.run_stdio_async()
