"""PageFetcher against the local fake web: extraction, redirects, caps, deadline, pinning, TLS."""

from __future__ import annotations

import asyncio
import gc
import gzip
import socket
import tracemalloc
import zlib
from collections.abc import Callable

import pytest
from aiohttp import web as aioweb

from bot.agent.web.budget import ReadBudget
from bot.agent.web.fetch import USER_AGENT, FetchLimits, PageFetcher
from bot.errors import FetchRefused, ToolError
from tests.fakes.web import (
    ARTICLE_HTML,
    ARTICLE_PATH,
    INJECTION_PATH,
    PLAIN_PATH,
    SCRIPT_MARKER,
    TLS_HOST,
    FakeWeb,
    gzip_bomb,
    tls_contexts,
)

MiB = 1024 * 1024


async def test_an_article_is_reduced_to_its_main_text(web: FakeWeb, fetcher: PageFetcher) -> None:
    page = await fetcher.fetch(web.url + ARTICLE_PATH)

    assert page.url == web.url + ARTICLE_PATH
    assert page.title.startswith("Acme Robotics raises $40M")
    assert "Series B round led by Example Ventures" in page.text
    assert "about 120 engineers" in page.text
    assert SCRIPT_MARKER not in page.text
    assert "Log in" not in page.text
    assert not page.truncated
    sent = web.requests[-1].headers
    assert sent["User-Agent"] == USER_AGENT
    assert sent["Accept-Encoding"] == "gzip, deflate"
    assert sent["Host"] == web.host_port


async def test_a_hostile_page_comes_back_as_text_without_its_scripts(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    page = await fetcher.fetch(web.url + INJECTION_PATH)

    assert "Ignore previous instructions" in page.text  # the lead's fencing deals with it
    assert "learning budget" in page.text
    assert SCRIPT_MARKER not in page.text


async def test_plain_text_passes_through(web: FakeWeb, fetcher: PageFetcher) -> None:
    page = await fetcher.fetch(web.url + PLAIN_PATH)

    assert page.text.startswith("Acme Robotics press release\n\nAcme Robotics today announced")
    assert page.title == "127.0.0.1"


@pytest.mark.parametrize(
    "encode",
    [gzip.compress, zlib.compress, lambda data: zlib.compress(data)[2:-4]],
    ids=["gzip", "deflate", "raw-deflate"],
)
async def test_compressed_pages_are_inflated(
    web: FakeWeb, fetcher: PageFetcher, encode: Callable[[bytes], bytes]
) -> None:
    name = "gzip" if encode is gzip.compress else "deflate"
    url = web.page("/z", encode(ARTICLE_HTML.encode()), headers={"Content-Encoding": name})

    page = await fetcher.fetch(url)

    assert "Series B round" in page.text


async def test_a_redirect_to_an_allowed_page_is_followed(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    web.redirect("/old", "/middle", status=301)
    web.redirect("/middle", f"//{web.host_port}{ARTICLE_PATH}", status=308)

    page = await fetcher.fetch(web.url + "/old")

    assert page.url == web.url + ARTICLE_PATH
    assert [r.path for r in web.requests] == ["/old", "/middle", ARTICLE_PATH]


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://10.0.0.5/admin", "10.0.0.5 is a private address"),
        ("http://[::1]/", "loopback"),
        ("http://0x7f.1/", "non-standard spelling of 127.0.0.1"),
        ("http://127.0.0.1:1/", "port 1 is not allowed"),
        ("file:///etc/passwd", "not file:"),
    ],
)
async def test_every_redirect_is_checked_again(
    web: FakeWeb, fetcher: PageFetcher, location: str, reason: str
) -> None:
    web.redirect("/go", location)

    with pytest.raises(FetchRefused, match="refused") as refused:
        await fetcher.fetch(web.url + "/go")

    assert reason in str(refused.value)
    assert [r.path for r in web.requests] == ["/go"]


@pytest.mark.parametrize(
    ("location", "scheme"),
    [("jar:http://127.0.0.1!/", "jar:"), ("localhost:+11211aaa", "localhost:")],
)
async def test_a_redirect_with_a_scheme_but_no_host_is_refused(
    web: FakeWeb, fetcher: PageFetcher, location: str, scheme: str
) -> None:
    web.redirect("/go", location)

    with pytest.raises(FetchRefused, match=f"only http and https URLs are read, not {scheme}"):
        await fetcher.fetch(web.url + "/go")

    assert [r.path for r in web.requests] == ["/go"]


async def test_a_same_scheme_redirect_without_a_host_stays_on_the_host(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    """`http:127.0.0.1/` is a relative reference, as browsers read it: a path on this host."""
    web.redirect("/go", "http:127.0.0.1/")

    with pytest.raises(ToolError, match="HTTP 404"):
        await fetcher.fetch(web.url + "/go")

    assert [r.path for r in web.requests] == ["/go", "/127.0.0.1/"]


@pytest.mark.parametrize(
    "location",
    [b"http://[::1", "http://\u2121/".encode(), b"http://127.0.0.1:8x/", b"http://a\x01b/"],
    ids=["open-ipv6", "not-idna", "bad-port", "control-character"],
)
async def test_a_location_that_is_not_a_url_is_refused(
    web: FakeWeb, fetcher: PageFetcher, location: bytes
) -> None:
    url = web.raw("/go", b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\n\r\n")

    with pytest.raises(FetchRefused, match=r"/go redirects to an invalid URL"):
        await fetcher.fetch(url)


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nno colon in this header\r\n\r\n",
        b"HTTP/1.1 2OO OK\r\n\r\n",
        b"<html>no status line, no headers</html>",
        b"",
    ],
    ids=["bad-header-line", "bad-status-line", "http-0.9", "nothing"],
)
async def test_an_answer_that_breaks_http_is_a_tool_error(
    web: FakeWeb, fetcher: PageFetcher, answer: bytes
) -> None:
    url = web.raw("/broken", answer)

    with pytest.raises(ToolError, match=r"could not fetch .*/broken: RemoteProtocolError: \w"):
        await fetcher.fetch(url)


@pytest.mark.parametrize("reset", [True, False], ids=["reset", "closed"])
async def test_a_connection_cut_mid_body_is_a_tool_error(
    web: FakeWeb, fetcher: PageFetcher, reset: bool
) -> None:
    url = web.cut("/cut", ARTICLE_HTML.encode() * 20, after=2000, reset=reset)

    with pytest.raises(
        ToolError, match=r"could not fetch .*/cut: (ReadError|RemoteProtocolError): \w"
    ):
        await fetcher.fetch(url)


async def test_five_redirects_are_followed_and_six_are_refused(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    for hop in range(6):
        web.redirect(f"/r{hop}", f"/r{hop + 1}")
    web.page("/r6", ARTICLE_HTML)

    page = await fetcher.fetch(web.url + "/r1")
    with pytest.raises(FetchRefused, match="more than 5 redirects"):
        await fetcher.fetch(web.url + "/r0")

    assert page.url == web.url + "/r6"


async def test_a_port_that_is_not_allowed_is_refused(fetcher: PageFetcher) -> None:
    async with FakeWeb() as other:
        with pytest.raises(FetchRefused, match=f"port {other.host_port.split(':')[1]} is not"):
            await fetcher.fetch(other.url + ARTICLE_PATH)

        assert other.requests == []


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/x", "javascript:alert(1)", "data:,hi"]
)
async def test_schemes_other_than_http_and_https_are_refused(
    fetcher: PageFetcher, url: str
) -> None:
    with pytest.raises(FetchRefused, match="only http and https"):
        await fetcher.fetch(url)


async def test_a_body_over_the_raw_cap_is_refused(web: FakeWeb) -> None:
    async def chunked(request: aioweb.Request) -> aioweb.StreamResponse:
        response = aioweb.StreamResponse(headers={"Content-Type": "text/html"})
        response.enable_chunked_encoding()  # no Content-Length: the cap must count bytes
        await response.prepare(request)
        for _ in range(32):
            await response.write(b"<p>" + b"x" * 65_536 + b"</p>")
        return response

    sized = web.page("/sized", b"<p>" + b"y" * (2 * MiB) + b"</p>")
    streamed = web.route("/streamed", chunked)
    limits = FetchLimits(max_raw_bytes=MiB, deadline_s=5)
    async with PageFetcher(allow_hosts=[web.host_port], limits=limits) as fetcher:
        for url in (sized, streamed):
            with pytest.raises(FetchRefused, match="larger than 1,048,576 bytes"):
                await fetcher.fetch(url)


def zlib_bomb() -> bytes:
    packer = zlib.compressobj(1)
    return b"".join(packer.compress(bytes(MiB)) for _ in range(16)) + packer.flush()


@pytest.mark.parametrize(("encoding", "make_bomb"), [("gzip", gzip_bomb), ("deflate", zlib_bomb)])
async def test_a_compression_bomb_stops_at_the_decoded_cap_without_growing_memory(
    web: FakeWeb, fetcher: PageFetcher, encoding: str, make_bomb: Callable[[], bytes]
) -> None:
    bomb = make_bomb()  # gzip_bomb: 256 MiB of zeros in about 255 KiB
    url = web.page("/bomb", bomb, headers={"Content-Encoding": encoding})
    assert len(bomb) < 300 * 1024

    tracemalloc.start()
    try:
        with pytest.raises(FetchRefused, match="decompresses to more than 10,485,760 bytes"):
            await fetcher.fetch(url)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 40 * MiB  # the cap plus change, not 256 MiB


async def test_an_encoding_we_cannot_bound_is_refused(web: FakeWeb, fetcher: PageFetcher) -> None:
    url = web.page("/br", b"\x1b\x00", headers={"Content-Encoding": "br"})

    with pytest.raises(FetchRefused, match="unsupported encoding 'br'"):
        await fetcher.fetch(url)


async def test_a_slow_drip_trips_the_total_deadline(web: FakeWeb) -> None:
    url = web.drip("/slow", ARTICLE_HTML.encode())
    limits = FetchLimits(deadline_s=0.5, read_timeout_s=10)  # each byte comes well in time
    async with PageFetcher(allow_hosts=[web.host_port], limits=limits) as fetcher:
        with pytest.raises(ToolError, match=r"timed out: reading .* took more than 0.5 s"):
            await fetcher.fetch(url)


@pytest.mark.parametrize(
    ("content_type", "kind"),
    [
        ("image/png", "image/png"),
        ("application/octet-stream", "application/octet-stream"),
        ("", "without a content type"),
    ],
)
async def test_content_that_is_not_text_is_refused(
    web: FakeWeb, fetcher: PageFetcher, content_type: str, kind: str
) -> None:
    # Not a PDF either (those are read: tests/agent/web/test_pdf.py).
    url = web.page("/file", b"\x89PNG\r\n\x1a\n\x00\x01", content_type=content_type)

    with pytest.raises(FetchRefused, match="not a text page") as refused:
        await fetcher.fetch(url)

    assert kind in str(refused.value)


async def test_http_errors_and_empty_pages_are_tool_errors(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    empty = web.page("/empty", "<html><body><script>x()</script></body></html>")

    with pytest.raises(ToolError, match="HTTP 404 Not Found") as missing:
        await fetcher.fetch(web.url + "/nope")
    with pytest.raises(ToolError, match="no readable text"):
        await fetcher.fetch(empty)

    assert not isinstance(missing.value, FetchRefused)


async def test_a_closed_port_is_a_tool_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with PageFetcher(allow_hosts=[f"127.0.0.1:{port}"]) as fetcher:
        with pytest.raises(ToolError, match=r"could not fetch .*ConnectError"):
            await fetcher.fetch(f"http://127.0.0.1:{port}/")


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain; charset=rot13",
        "text/plain; charset=zlib",
        "text/plain; charset=nope",
        "text/plain; charset=idna",  # refuses the "replace" error handler
        "text/plain; charset=undefined",  # refuses everything
    ],
)
async def test_a_charset_that_is_not_a_text_codec_falls_back_to_utf8(
    web: FakeWeb, fetcher: PageFetcher, content_type: str
) -> None:
    url = web.page("/odd.txt", "Grüße aus Pittsburgh", content_type=content_type)

    page = await fetcher.fetch(url)

    assert page.text == "Grüße aus Pittsburgh"


@pytest.mark.parametrize(
    ("charset", "body"),
    [("utf-7", b"Acme +2AA- Robotics"), ("unicode_escape", b"Acme \\ud800 Robotics")],
)
async def test_a_charset_that_makes_lone_surrogates_still_gives_utf8_text(
    web: FakeWeb, fetcher: PageFetcher, charset: str, body: bytes
) -> None:
    url = web.page("/odd.txt", body, content_type=f"text/plain; charset={charset}")

    page = await fetcher.fetch(url)

    assert page.text == "Acme ? Robotics"
    page.text.encode("utf-8")  # what SQLite and the next model request will do


async def test_a_page_on_a_host_whose_idna_label_is_bogus_gets_its_host_as_title(
    web: FakeWeb,
) -> None:
    async def to_localhost(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    port = web.host_port.split(":")[1]
    async with PageFetcher(allow_hosts=[web.host_port], resolver=to_localhost) as fetcher:
        page = await fetcher.fetch(f"http://xn--zz.test:{port}{PLAIN_PATH}")

    assert page.title == "xn--zz.test"


async def test_long_text_is_cut_with_a_visible_marker(web: FakeWeb, fetcher: PageFetcher) -> None:
    url = web.page("/long.txt", "word " * 20_000, content_type="text/plain")

    page = await fetcher.fetch(url)

    assert page.truncated
    assert page.text.endswith("[… text cut here: the page is longer than 40,000 characters]")
    assert len(page.text) < 40_100


async def test_cookies_are_not_kept_between_fetches(web: FakeWeb, fetcher: PageFetcher) -> None:
    url = web.page("/cookie", ARTICLE_HTML, headers={"Set-Cookie": "track=1; Path=/"})

    await fetcher.fetch(url)
    await fetcher.fetch(url)

    assert "Cookie" not in web.requests[-1].headers


async def test_the_connection_goes_to_the_address_that_was_checked(web: FakeWeb) -> None:
    """DNS rebinding: the name answers an allowed address, then the metadata address."""
    answers = [["127.0.0.1"], ["169.254.169.254"]]
    asked: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    port = web.host_port.split(":")[1]
    url = f"http://rebind.test:{port}{ARTICLE_PATH}"
    async with PageFetcher(allow_hosts=[web.host_port], resolver=rebinding) as fetcher:
        page = await fetcher.fetch(url)
        with pytest.raises(FetchRefused, match=r"rebind\.test resolves to 169\.254\.169\.254"):
            await fetcher.fetch(url)

    assert page.url == url
    assert asked == ["rebind.test", "rebind.test"]  # once per fetch: nothing resolved again
    assert [r.headers["Host"] for r in web.requests] == [f"rebind.test:{port}"]


async def test_https_is_pinned_and_still_verifies_the_name() -> None:
    server, client = tls_contexts()

    async def to_localhost(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    async with FakeWeb(tls=server) as web:
        port = web.host_port.split(":")[1]
        async with PageFetcher(
            allow_hosts=[web.host_port], resolver=to_localhost, verify=client
        ) as fetcher:
            page = await fetcher.fetch(f"https://{TLS_HOST}:{port}{ARTICLE_PATH}")
            with pytest.raises(ToolError, match=r"could not fetch .*ConnectError"):
                await fetcher.fetch(f"https://127.0.0.1:{port}{ARTICLE_PATH}")  # not its name

    assert "Series B round" in page.text
    assert web.requests[0].headers["Host"] == f"{TLS_HOST}:{port}"


async def test_bombs_at_once_never_hold_more_than_the_process_budget(web: FakeWeb) -> None:
    url = web.page("/bomb", gzip_bomb(), headers={"Content-Encoding": "gzip"})
    budget = ReadBudget(max_fetches=8, max_bytes=4 * MiB)
    limits = FetchLimits(deadline_s=10, max_decoded_bytes=2 * MiB)
    async with PageFetcher(allow_hosts=[web.host_port], limits=limits, budget=budget) as fetcher:
        results = await asyncio.gather(
            *(fetcher.fetch(url) for _ in range(8)), return_exceptions=True
        )

    reasons = {str(error).split(":")[0] for error in results if isinstance(error, ToolError)}
    assert len(results) == 8 and all(isinstance(error, ToolError) for error in results)
    assert reasons <= {"refused", "the bot is reading too many large pages at once"}
    # Never past the process budget (what that means for RSS is measured in bench/scale.py).
    assert budget.peak_bytes <= 4 * MiB
    assert budget.held_bytes == 0 and budget.fetching == 0


async def test_a_refused_body_is_freed_while_its_error_is_still_held(web: FakeWeb) -> None:
    url = web.page("/bomb", gzip_bomb(), headers={"Content-Encoding": "gzip"})
    limits = FetchLimits(deadline_s=10, max_decoded_bytes=2 * MiB)
    async with PageFetcher(allow_hosts=[web.host_port], limits=limits) as fetcher:
        gc.disable()  # what only the collector would free counts as held
        tracemalloc.start()
        try:
            errors = await asyncio.gather(
                *(fetcher.fetch(url) for _ in range(4)), return_exceptions=True
            )
            held, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            gc.enable()

    # The errors (and their tracebacks, which hold the reading frames) are alive here.
    assert all(isinstance(error, FetchRefused) for error in errors), errors
    # Four refused bodies of 2 MiB each, kept by their errors, would be 8 MiB and more; what
    # is left is each reader's last chunks and inflater state.
    assert held < 2 * MiB


async def test_fetches_beyond_the_limit_wait_for_a_slot(web: FakeWeb) -> None:
    gate, two_in = asyncio.Event(), asyncio.Event()
    inside = [0, 0]  # now, most at once

    async def held(request: aioweb.Request) -> aioweb.StreamResponse:
        inside[0] += 1
        inside[1] = max(inside)
        if inside[0] == 2:
            two_in.set()
        await gate.wait()
        inside[0] -= 1
        return aioweb.Response(text=ARTICLE_HTML, content_type="text/html")

    url = web.route("/held", held)
    budget = ReadBudget(max_fetches=2)
    async with PageFetcher(allow_hosts=[web.host_port], budget=budget) as fetcher:
        fetches = [asyncio.create_task(fetcher.fetch(url)) for _ in range(5)]
        await two_in.wait()
        assert budget.fetching == 2 and not any(task.done() for task in fetches)
        gate.set()
        pages = await asyncio.gather(*fetches)

    assert [page.title for page in pages] == [pages[0].title] * 5
    assert inside[1] == 2 and len(web.requests) == 5
