"""Calls to the APIs the bot is configured to trust (arXiv, GitHub, Brave Search): one client each,
created once, with a byte cap on every answer, redirects kept on the API's own origin, and every
expected failure an `ApiError` the model can read.

Their base URLs come from settings, not from the model or the web, so they are not put through
the page reader's address guard; what they return is still untrusted text (fenced by the tools).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from bot.agent.web.fetch import USER_AGENT
from bot.errors import ToolError

M = TypeVar("M", bound=BaseModel)
MiB = 1024 * 1024

_HINTS = {
    400: "the request was not accepted",
    401: "the key or token was refused",
    403: "forbidden, or a rate limit was reached",
    404: "not found",
    422: "the query was not accepted",
    429: "rate limited: try again in a minute",
}


class ApiError(ToolError):
    """An API failed, refused, or answered with something we cannot use."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ApiClient:
    """GETs from one API: `async with ApiClient("GitHub", url, timeout_s=10) as api: ...`."""

    def __init__(
        self,
        service: str,
        base_url: str,
        *,
        timeout_s: float,
        headers: dict[str, str] | None = None,
        max_bytes: int = 2 * MiB,
    ) -> None:
        self.service = service
        self.max_bytes = max_bytes
        base = httpx.URL(base_url.rstrip("/") + "/")
        self._origin = (base.scheme, base.host, base.port)
        self._http = httpx.AsyncClient(
            base_url=base,
            # Identity: the byte cap then counts what is held, with no inflation behind it.
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **(headers or {})},
            timeout=timeout_s,
            follow_redirects=True,
            max_redirects=3,
            event_hooks={"request": [self._same_origin], "response": [_parse_location]},
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def get(
        self, path: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None
    ) -> bytes:
        """The body of a 2xx answer to GET `path` (relative to the base URL)."""
        # Built outside the `try`: from here on an InvalidURL can only come from a redirect.
        request = self._http.build_request("GET", path, params=params, headers=headers)
        try:
            response = await self._http.send(request, stream=True)
            try:
                if not response.is_success:
                    raise ApiError(self._status_text(response), status=response.status_code)
                return await self._body(response)
            finally:
                await response.aclose()
        except httpx.InvalidURL as exc:  # `jar:http://x!/`, `http:127.0.0.1/`, a bad port
            raise ApiError(f"{self.service} redirected to an invalid address") from exc
        except httpx.TimeoutException as exc:
            raise ApiError(f"{self.service} did not answer in time") from exc
        except httpx.TooManyRedirects as exc:
            raise ApiError(f"{self.service} redirected too often") from exc
        except httpx.HTTPError as exc:  # refused, reset, not HTTP, a broken redirect
            raise ApiError(f"{self.service} could not be reached ({type(exc).__name__})") from exc

    async def get_model(
        self,
        path: str,
        model: type[M],
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> M:
        """A JSON answer, validated into `model`."""
        data = await self.get(path, params, headers)
        try:
            return model.model_validate_json(data)
        except ValidationError as exc:
            raise ApiError(f"{self.service} answered with something unexpected") from exc

    def _status_text(self, response: httpx.Response) -> str:
        status = response.status_code
        hint = _HINTS.get(status, "the service is failing" if status >= 500 else "")
        return f"{self.service} answered HTTP {status}" + (f" ({hint})" if hint else "")

    async def _body(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length", "")
        too_big = ApiError(f"{self.service} sent more than {self.max_bytes:,} bytes")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise too_big
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self.max_bytes:
                raise too_big
        return bytes(body)

    async def _same_origin(self, request: httpx.Request) -> None:
        """A redirect may not take our headers (a token) to another host."""
        if (request.url.scheme, request.url.host, request.url.port) != self._origin:
            raise ApiError(f"{self.service} redirected away from its own address")


async def _parse_location(response: httpx.Response) -> None:
    """httpx reports a Location it cannot parse as a protocol error and one it can parse but not
    follow as InvalidURL; parsing it here first makes both an InvalidURL, which `get` names."""
    if response.has_redirect_location:
        httpx.URL(response.headers["location"])
