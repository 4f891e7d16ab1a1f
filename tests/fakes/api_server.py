"""What the fake arXiv, GitHub and Brave APIs share: an aiohttp server on 127.0.0.1 (port 0) that
records every request and can be told to fail the next ones.

    async with FakeX() as fake:
        fake.url                                  # the base URL to configure the client with
        fake.fail_next(503)                       # the next request answers 503 (n=3: three)
        fake.fail_next(403, headers={"x-ratelimit-remaining": "0"})
        fake.answer_next(b"<not xml>", status=200, content_type="text/html")
        fake.requests[-1].query["q"]              # every request, in order
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from aiohttp import web
from aiohttp.typedefs import Handler


@dataclass(frozen=True)
class ApiRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass(frozen=True)
class _Scripted:
    body: bytes
    status: int
    content_type: str
    headers: dict[str, str]


class FakeApi:
    """Subclasses add their routes in `routes()`; a scripted answer, when queued, comes first."""

    def __init__(self, prefix: str = "") -> None:
        self.requests: list[ApiRequest] = []
        self.url = ""
        self._prefix = prefix
        self._script: deque[_Scripted] = deque()
        self._runner: web.AppRunner | None = None

    def routes(self) -> dict[str, Handler]:
        raise NotImplementedError

    def fail_next(self, status: int, n: int = 1, *, headers: dict[str, str] | None = None) -> None:
        body = b'{"message": "fake failure"}'
        self._script.extend([_Scripted(body, status, "application/json", headers or {})] * n)

    def answer_next(
        self, body: bytes | str, *, status: int = 200, content_type: str = "application/json"
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self._script.append(_Scripted(data, status, content_type, {}))

    async def __aenter__(self) -> Self:
        app = web.Application()
        for path, handler in self.routes().items():
            app.router.add_get(self._prefix + path, self._recorded(handler))
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}{self._prefix}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _recorded(self, handler: Handler) -> Handler:
        async def answer(request: web.Request) -> web.StreamResponse:
            self.requests.append(
                ApiRequest(request.method, request.path, dict(request.query), dict(request.headers))
            )
            if self._script:
                step = self._script.popleft()
                headers = {"Content-Type": step.content_type, **step.headers}
                return web.Response(body=step.body, status=step.status, headers=headers)
            return await handler(request)

        return answer
