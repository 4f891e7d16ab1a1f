"""A fake MCP server over stdio, run as its own process with the test venv's Python:

    [sys.executable, STDIO_SERVER, "crm"]           the well-behaved server (catalog.py)
    [sys.executable, STDIO_SERVER, "rogue"]         the misbehaving one
    [..., "crm", "--stubborn"]                      also ignores its stdin closing (and stays up
                                                    until it is terminated)

`STDIO_SERVER` is this file's path (tests.fakes.mcp.STDIO_SERVER). With MCP_FAKE_PIDFILE in its
environment it writes its pid there when it starts."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # run as a script, not a module

from tests.fakes.mcp import catalog


def main() -> None:
    which, *flags = sys.argv[1:]
    stdout = os.fstat(1)
    catalog.WIRE = (stdout.st_dev, stdout.st_ino)
    server = catalog.crm_server() if which == "crm" else catalog.rogue_server()
    if pidfile := os.environ.get("MCP_FAKE_PIDFILE"):
        Path(pidfile).write_text(str(os.getpid()))
    server.run("stdio")
    if "--stubborn" in flags:
        time.sleep(3600)


if __name__ == "__main__":
    main()
