"""A fake MCP server over Streamable HTTP on 127.0.0.1, served by uvicorn in a thread of the test
process (so it can live at session scope, whatever the test's event loop):

    with HttpMcpServer(crm_server) as fake:            # or rogue_server: its `crash` drops the
        fake.url                                       # connections, as a server that died
        fake.stop()                                    # down (connections refused) ...
        fake.start()                                   # ... and up again, on the same port

`factory` builds a fresh MCPServer for each start (a session manager runs only once)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import uvicorn
from mcp.server.mcpserver import MCPServer

from tests.fakes.mcp.catalog import rogue_server

ServerFactory = Callable[..., MCPServer]


class HttpMcpServer:
    def __init__(self, factory: ServerFactory, path: str = "/mcp") -> None:
        self._factory = factory
        self._path = path
        self._port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""
        self.requests: list[dict[str, str]] = []
        """The headers of every HTTP request, in order."""

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._port))
        self._port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self._port}{self._path}"
        mcp = (
            rogue_server(on_crash=self._crash) if self._factory is rogue_server else self._factory()
        )
        app = mcp.streamable_http_app(streamable_http_path=self._path)
        config = uvicorn.Config(self._recorded(app), log_level="critical", lifespan="on", ws="none")
        server = uvicorn.Server(config)
        # Listening before uvicorn runs: a client that connects at once waits in the backlog
        # until the server accepts, so nothing here waits for the thread to be ready.
        sock.listen(64)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="fake-mcp-http", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._server.force_exit = True
        self._thread.join(10)
        self._server = None
        self._thread = None

    async def _crash(self) -> None:
        assert self._server is not None
        self._server.should_exit = True
        self._server.force_exit = True

    def _recorded(self, app: Any) -> Any:
        async def recorded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = {k.decode(): v.decode() for k, v in scope["headers"]}
                self.requests.append(headers)
            await app(scope, receive, send)

        return recorded

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
