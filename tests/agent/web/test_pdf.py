"""The page reader on PDFs: by content type or signature, capped, in the extraction workers."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfWriter

from bot.agent.web.extract_pool import Extractor
from bot.agent.web.fetch import FetchLimits, PageFetcher
from bot.agent.web.pdf import MAX_PDF_PAGES
from bot.errors import FetchRefused, ToolError
from tests.fakes.pdf import text_pdf
from tests.fakes.web import FakeWeb

PAPER = text_pdf(
    [
        "Tactile grasping for warehouse robots\nWe reach 93% grasp success on 1,200 items.",
        "Results\nThe gripper (model TG-2) picks 40 items per minute.",
    ],
    title="Tactile grasping for warehouse robots",
)


async def test_a_pdf_is_read_by_its_content_type(web: FakeWeb, fetcher: PageFetcher) -> None:
    url = web.page("/paper.pdf", PAPER, content_type="application/pdf")

    page = await fetcher.fetch(url)

    assert page.title == "Tactile grasping for warehouse robots"
    assert "93% grasp success on 1,200 items" in page.text
    assert "picks 40 items per minute" in page.text  # the second page too
    assert "application/pdf" in web.requests[-1].headers["Accept"]


@pytest.mark.parametrize("content_type", ["application/octet-stream", "", "text/plain"])
async def test_a_pdf_is_known_by_its_signature_whatever_it_is_called(
    web: FakeWeb, fetcher: PageFetcher, content_type: str
) -> None:
    url = web.page("/download", PAPER, content_type=content_type)

    page = await fetcher.fetch(url)

    assert "93% grasp success" in page.text


async def test_without_a_title_the_first_line_names_the_pdf(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    url = web.page("/untitled.pdf", text_pdf(["A study of grippers\nBody."]), content_type="")

    assert (await fetcher.fetch(url)).title == "A study of grippers"


async def test_only_the_first_pages_are_read_and_the_text_says_so(
    web: FakeWeb, fetcher: PageFetcher
) -> None:
    pages = [f"Chapter {n} text." for n in range(1, MAX_PDF_PAGES + 11)]
    url = web.page("/book.pdf", text_pdf(pages), content_type="application/pdf")

    page = await fetcher.fetch(url)

    assert f"Chapter {MAX_PDF_PAGES} text." in page.text
    assert f"Chapter {MAX_PDF_PAGES + 1} text." not in page.text
    assert page.text.endswith(
        f"[… only the first {MAX_PDF_PAGES} of {MAX_PDF_PAGES + 10} pages were read]"
    )


async def test_the_text_cap_cuts_a_long_pdf(web: FakeWeb) -> None:
    url = web.page("/long.pdf", text_pdf(["word " * 300] * 5), content_type="application/pdf")
    limits = FetchLimits(deadline_s=20, max_text_chars=500)
    async with PageFetcher(allow_hosts=[web.host_port], limits=limits) as fetcher:
        page = await fetcher.fetch(url)

    assert page.truncated and "text cut here" in page.text
    assert len(page.text) < 700


async def test_the_byte_cap_holds_for_pdfs(web: FakeWeb) -> None:
    url = web.page("/big.pdf", PAPER, content_type="application/pdf")
    limits = FetchLimits(deadline_s=20, max_raw_bytes=len(PAPER) - 1)
    async with PageFetcher(allow_hosts=[web.host_port], limits=limits) as fetcher:
        with pytest.raises(FetchRefused, match="larger than"):
            await fetcher.fetch(url)


@pytest.mark.parametrize(
    "body",
    [b"%PDF-1.7\n garbage, not a PDF at all", PAPER[: len(PAPER) // 3]],
    ids=["garbage", "truncated"],
)
async def test_a_broken_pdf_is_a_tool_error(
    web: FakeWeb, fetcher: PageFetcher, body: bytes
) -> None:
    url = web.page("/broken.pdf", body, content_type="application/pdf")

    with pytest.raises(ToolError):
        await fetcher.fetch(url)


async def test_an_address_the_guard_refuses_is_not_read_as_pdf(fetcher: PageFetcher) -> None:
    with pytest.raises(FetchRefused, match="link-local"):
        await fetcher.fetch("http://169.254.169.254/paper.pdf")


async def test_pdfs_are_extracted_in_the_worker_process(web: FakeWeb) -> None:
    url = web.page("/paper.pdf", PAPER, content_type="application/pdf")
    async with (
        Extractor(workers=1, timeout_s=10) as pool,
        PageFetcher(allow_hosts=[web.host_port], extractor=pool) as fetcher,
    ):
        page = await fetcher.fetch(url)
        assert len(pool.pids()) == 1  # a small PDF still went to the worker, not the event loop

    assert page.title == "Tactile grasping for warehouse robots"
    assert "picks 40 items per minute" in page.text


async def test_a_pdf_without_text_says_so(web: FakeWeb, fetcher: PageFetcher) -> None:
    url = web.page("/scan.pdf", text_pdf(["", ""]), content_type="application/pdf")

    with pytest.raises(ToolError, match="a PDF without a text layer"):
        await fetcher.fetch(url)


async def test_a_pdf_locked_with_a_password_says_so(web: FakeWeb, fetcher: PageFetcher) -> None:
    writer = PdfWriter(clone_from=io.BytesIO(PAPER))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    locked = io.BytesIO()
    writer.write(locked)
    url = web.page("/locked.pdf", locked.getvalue(), content_type="application/pdf")

    with pytest.raises(ToolError, match="is an encrypted PDF"):
        await fetcher.fetch(url)
