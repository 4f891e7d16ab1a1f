"""Fake MCP servers, written with the official SDK's server side (catalog.py names their tools).

STDIO_SERVER: the script that serves one over stdio:  [sys.executable, STDIO_SERVER, "crm"]
HttpMcpServer(crm_server): one over Streamable HTTP on 127.0.0.1 (http_server.py)
stdio_entry("crm") / http_entry(url): their entries for an `mcpServers` config file
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

STDIO_SERVER = str(Path(__file__).resolve().parent / "stdio_server.py")


def stdio_entry(which: str = "crm", *flags: str, **own: Any) -> dict[str, Any]:
    """An `mcpServers` entry that starts the `which` fake over stdio; `own`: our own keys
    (tools, timeout_s, workspaces)."""
    return {"command": sys.executable, "args": [STDIO_SERVER, which, *flags], **own}


def http_entry(url: str, **own: Any) -> dict[str, Any]:
    return {"url": url, **own}
