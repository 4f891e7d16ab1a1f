"""How much bot time an MCP call adds over the server's own: the same tool of a local server
(the SDK's own server side, over stdio), called by the SDK's bare client (the baseline) and by
a run's toolbox (`mcp__crm__lookup_company`: McpServers, McpTools, the result made a numbered
source), alternately, in one process. Goal: at most 5 ms more per call (issue 28).

    python -m bench.mcp_overhead            # about 10 s  (--calls 300)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from bot.agent.mcp.config import ServerConfig
from bot.agent.mcp.servers import McpServers
from bot.agent.mcp.tools import McpTools
from bot.agent.report.model import SourceRegistry
from bot.agent.web.registry import Toolbox, ToolContext
from tests.fakes.mcp import STDIO_SERVER

GOAL_MS = 5.0
ARGUMENTS = {"name": "Acme Robotics"}


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def main(calls: int) -> int:
    config = ServerConfig(name="crm", command=sys.executable, args=[STDIO_SERVER, "crm"])
    bare = Client(stdio_client(StdioServerParameters(command=sys.executable, args=config.args)))
    async with bare, McpServers([config]) as servers:
        await servers.connected("crm")
        toolbox = Toolbox([], McpTools(servers))
        ctx = ToolContext(SourceRegistry(), "bench")

        async def sdk() -> object:
            return await bare.call_tool("lookup_company", ARGUMENTS)

        async def ours() -> object:
            result = await toolbox.call(ctx, "mcp__crm__lookup_company", ARGUMENTS)
            assert not result.is_error, result.output.heading
            return result

        for _ in range(20):  # warm both paths: imports, the servers' first answers
            await sdk()
            await ours()
        baseline, measured = [], []
        for _ in range(calls):  # alternately, so both meet the same machine
            baseline.append(await _timed(sdk))
            measured.append(await _timed(ours))

    added = statistics.median(measured) - statistics.median(baseline)
    p95 = statistics.quantiles(measured, n=20)[-1] - statistics.quantiles(baseline, n=20)[-1]
    print(f"calls: {calls} each, one local server over stdio")
    print(f"SDK client alone: median {statistics.median(baseline):.2f} ms")
    print(f"through the toolbox: median {statistics.median(measured):.2f} ms")
    print(f"added by the bot: median {added:.2f} ms, p95 {p95:.2f} ms (goal <= {GOAL_MS} ms)")
    passed = added <= GOAL_MS
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    sys.exit(asyncio.run(main(parser.parse_args().calls)))
