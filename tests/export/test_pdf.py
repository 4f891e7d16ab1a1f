"""The PDF export, read back with pypdf: real text in every script (each character drawn with a
glyph, none missing), the headings as bookmarks, clickable citations and source links."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader

from bot.agent.report.model import Report, Section
from bot.domain import RunRecord
from bot.export import Format, render
from tests.export.conftest import (
    ARABIC,
    CYRILLIC,
    HEADINGS,
    JAPANESE,
    SOURCES,
    sample_report,
    sample_run,
)


def pdf(run: RunRecord, report: Report, font_dir: Path | None = None) -> PdfReader:
    exported = render(run, report, Format.PDF, font_dir=font_dir)
    assert exported.filename == "acme-robotics-r1a2b3.pdf"
    assert exported.data.startswith(b"%PDF-")
    return PdfReader(BytesIO(exported.data))


@pytest.fixture(scope="module")
def reader(kanji_fonts: Path) -> PdfReader:
    """The sample report's PDF, laid out once for the tests that only read it."""
    return pdf(sample_run(), sample_report(), kanji_fonts)


def text_of(reader: PdfReader) -> str:
    return "\n".join(page.extract_text() for page in reader.pages)


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def fonts_missing_glyphs(reader: PdfReader) -> list[str]:
    """Fonts that drew some character with no glyph of its own (a box): WeasyPrint gives only
    those an encoding of their own instead of Identity-H."""
    missing = []
    for page in reader.pages:
        for font in page["/Resources"]["/Font"].values():
            font = font.get_object()
            if font["/Encoding"] != "/Identity-H":
                missing.append(str(font["/BaseFont"]))
    return missing


def line_starts(reader: PdfReader) -> dict[str, float]:
    """Where each piece of text on the first page starts, from the left edge (points)."""
    starts: dict[str, float] = {}

    def visit(text: str, cm: list[float], tm: list[float], *_: object) -> None:
        if text.strip():
            starts.setdefault(text.strip(), tm[4] * cm[0] + tm[5] * cm[2] + cm[4])

    reader.pages[0].extract_text(visitor_text=visit)
    return starts


def outline_titles(items: list[Any]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []

    def walk(level: list[Any], depth: int) -> None:
        for item in level:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                found.append((depth, item.title))

    walk(items, 0)
    return found


def test_text_is_real_in_every_script_and_each_character_has_a_glyph(reader: PdfReader) -> None:
    text = text_of(reader)
    assert CYRILLIC in text and "Acme builds warehouse robots [1]" in text
    assert squeezed(JAPANESE) in squeezed(text)
    assert all(word in text for word in ARABIC.split())
    assert '<script>alert("x")</script>' in text
    assert fonts_missing_glyphs(reader) == []
    assert reader.metadata is not None and reader.metadata.title == "Acme Robotics: обзор"


def test_headings_are_bookmarks_under_the_title(reader: PdfReader) -> None:
    assert outline_titles(reader.outline) == [
        (0, "Acme Robotics: обзор"),
        *((1, heading) for heading in HEADINGS),
    ]


def test_citations_jump_to_the_sources_and_the_sources_open_their_pages(
    reader: PdfReader,
) -> None:
    uris, jumps = [], set()
    for page in reader.pages:
        for annotation in page.get("/Annots") or []:
            link = annotation.get_object()
            assert link["/Subtype"] == "/Link"
            if "/A" in link:
                uris.append(link["/A"]["/URI"])
            else:
                jumps.add(str(link["/Dest"]))
    assert uris == [source.url for source in SOURCES]
    assert jumps == {"src-1", "src-2", "src-3"}
    assert {"src-1", "src-2", "src-3"} <= set(reader.named_destinations)
    assert "evil.example" not in text_of(reader).replace("https://evil.example/p.png", "")


def test_each_block_takes_the_direction_of_its_own_script(reader: PdfReader) -> None:
    starts = line_starts(reader)
    middle = float(reader.pages[0].mediabox.width) / 2

    assert starts["Acme builds warehouse robots"] < middle / 2
    assert starts[ARABIC] > middle  # right-aligned: a right-to-left paragraph


def test_an_arabic_report_reads_right_to_left(run: RunRecord, kanji_fonts: Path) -> None:
    title = "تقرير عن أكمي"
    report = Report(
        title=title,
        tldr=f"{ARABIC} [1].",
        sections=[Section(heading="نظرة عامة", body=f"{ARABIC} منذ 2015 [1].")],
        sources=SOURCES[:1],
        language="ar",
    )

    reader = pdf(run, report, kanji_fonts)

    starts = line_starts(reader)
    assert starts[title] > float(reader.pages[0].mediabox.width) / 2
    assert outline_titles(reader.outline) == [
        (0, title),
        (1, "TL;DR"),
        (1, "نظرة عامة"),
        (1, "Sources"),
    ]
    assert fonts_missing_glyphs(reader) == []


def test_with_the_systems_own_cjk_font(run: RunRecord, report: Report) -> None:
    """What the Docker image (fonts-noto-cjk) does, where such a font is installed."""
    fc_list = shutil.which("fc-list")
    if (
        fc_list is None
        or not subprocess.run(
            [fc_list, ":lang=ja"], capture_output=True, text=True, check=False
        ).stdout.strip()
    ):
        pytest.skip("no Japanese font installed here (Debian: fonts-noto-cjk)")
    reader = pdf(run, report)

    assert squeezed(JAPANESE) in squeezed(text_of(reader))
    assert fonts_missing_glyphs(reader) == []


def test_text_no_font_covers_is_one_warning_that_says_what_to_install(
    run: RunRecord, report: Report, kanji_fonts: Path, caplog: pytest.LogCaptureFixture
) -> None:
    report.sections[0].body += "\n\nUnassigned in Unicode, so in every font: \u0378\u0379."

    with caplog.at_level(logging.WARNING):
        pdf(run, report, kanji_fonts)

    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "2 character(s)" in warnings[0] and "U+0378, \u0379 U+0379" in warnings[0]
    assert "fonts-noto-cjk" in warnings[0]
