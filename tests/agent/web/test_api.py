"""The client for trusted APIs (arXiv, GitHub, Brave) against the local fake web: a byte cap,
redirects only on the API's own origin, and every failure an ApiError."""

from __future__ import annotations

import socket

import pytest

from bot.agent.web.api import ApiClient, ApiError
from tests.fakes.web import FakeWeb


async def test_a_body_over_the_cap_is_refused(web: FakeWeb) -> None:
    web.page("/big", b"x" * 5_000, content_type="application/json")
    web.route("/dripped", _chunked(b"y" * 5_000))
    async with ApiClient("Test", web.url, timeout_s=5, max_bytes=1_000) as api:
        assert await api.get("plain.txt")  # small enough
        for path in ("big", "dripped"):  # declared, or found out while reading
            with pytest.raises(ApiError, match="Test sent more than 1,000 bytes"):
                await api.get(path)


async def test_redirects_stay_on_the_api_origin(web: FakeWeb) -> None:
    web.redirect("/moved", "/plain.txt", status=301)
    web.redirect("/away", "http://127.0.0.2:9/steal-the-token")
    async with ApiClient(
        "Test", web.url, timeout_s=5, headers={"Authorization": "Bearer t"}
    ) as api:
        assert b"Acme Robotics press release" in await api.get("moved")
        with pytest.raises(ApiError, match="redirected away from its own address"):
            await api.get("away")

    assert [r.path for r in web.requests] == ["/moved", "/plain.txt", "/away"]
    assert web.requests[0].headers["Accept-Encoding"] == "identity"


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (401, "Test answered HTTP 401 (the key or token was refused)"),
        (404, "Test answered HTTP 404 (not found)"),
        (429, "Test answered HTTP 429 (rate limited: try again in a minute)"),
        (502, "Test answered HTTP 502 (the service is failing)"),
    ],
)
async def test_error_statuses_are_api_errors_with_their_status(
    web: FakeWeb, status: int, said: str
) -> None:
    web.page("/fail", '{"message": "no"}', status=status, content_type="application/json")
    async with ApiClient("Test", web.url, timeout_s=5) as api:
        with pytest.raises(ApiError) as caught:
            await api.get("fail")

    assert str(caught.value) == said and caught.value.status == status


async def test_an_unreachable_api_is_an_api_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    async with ApiClient("Test", closed, timeout_s=5) as api:
        with pytest.raises(ApiError, match="Test could not be reached"):
            await api.get("anything")


def _chunked(data: bytes):  # type: ignore[no-untyped-def]
    from aiohttp import web as aioweb

    async def handler(request: aioweb.Request) -> aioweb.StreamResponse:
        response = aioweb.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for start in range(0, len(data), 500):
            await response.write(data[start : start + 500])
        return response

    return handler


@pytest.mark.parametrize(
    "location",
    [
        b"jar:http://127.0.0.1!/",
        b"http:127.0.0.1/",
        b"localhost:+11211aaa",
        b"http://[::1",
        "http://\u2121/".encode(),
        b"http://127.0.0.1:8x/",
        b"http://a\x01b/",
    ],
)
async def test_a_redirect_to_something_that_is_not_a_url_is_an_api_error(
    web: FakeWeb, location: bytes
) -> None:
    """httpx raises building the next request, as InvalidURL or as a protocol error."""
    web.raw("/go", b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\n\r\n")
    async with ApiClient("Test", web.url, timeout_s=5) as api:
        with pytest.raises(ApiError, match=r"^Test redirected to an invalid address$"):
            await api.get("go")
