"""Export fixtures: a stored-looking report in four scripts with a hostile section, its run, and
a font that covers the Japanese sample (built here: this machine has no CJK font installed)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen

from bot.agent.report.model import Report, Section, Source
from bot.domain import Mode, Origin, RunRecord, RunStatus

CYRILLIC = "Компания основана в Лидсе"
JAPANESE = "日本語の報告書"
ARABIC = "شركة روبوتات"
HOSTILE = (
    '<script>alert("x")</script> <img src="https://evil.example/p.png"> [run](javascript:alert(1))'
)
SOURCES = [
    Source(url="https://acme.example/about", title="About Acme", read=True),
    Source(url="https://news.example/acme-raises?id=1&x=2", title="Acme raises $40M", read=True),
    Source(url="https://jp.example/kiji", title="日本の記事", read=False),
]
HEADINGS = ["TL;DR", "Overview", "Международные рынки", "Hostile <b>markup</b>", "Sources"]


def sample_report(language: str = "en") -> Report:
    return Report(
        title="Acme Robotics: обзор",
        tldr=f"Acme builds warehouse robots [1]. {CYRILLIC} [2].",
        sections=[
            Section(
                heading="Overview",
                body="Founded in 2015 [1][2].\n\n- Staff: 120 [1]\n- Series B [3]\n\n"
                "| Year | Revenue |\n|---|---|\n| 2023 | £12.5M [2] |\n\n1. First\n2. Second",
            ),
            Section(heading="Международные рынки", body=f"{JAPANESE} [3]。\n\n{ARABIC} [2]."),
            Section(heading="Hostile <b>markup</b>", body=f"{HOSTILE} [1]"),
        ],
        sources=SOURCES,
        created_at=datetime(2026, 3, 2, tzinfo=UTC),
        language=language,
    )


@pytest.fixture
def report() -> Report:
    return sample_report()


@pytest.fixture
def run() -> RunRecord:
    return sample_run()


def sample_run() -> RunRecord:
    return RunRecord(
        run_id="r1a2b3",
        topic="Acme Robotics",
        mode=Mode.COMPANY,
        origin=Origin(),
        status=RunStatus.DONE,
        termination_reason="completed",
        turns=4,
        input_tokens=12_000,
        output_tokens=3_000,
        cost_usd=0.05,
        created_at=datetime(2026, 3, 2, tzinfo=UTC),
    )


@pytest.fixture(scope="session")
def kanji_fonts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with one font that has a glyph (a box) for every character of the Japanese
    samples, for `RESEARCH_BOT_EXPORT_FONTS`."""
    folder = tmp_path_factory.mktemp("fonts")
    text = JAPANESE + SOURCES[2].title + "。 "
    chars = sorted(set(text))
    names = [".notdef", *(f"uni{ord(c):04X}" for c in chars)]
    builder = FontBuilder(1000, isTTF=True)
    builder.setupGlyphOrder(names)
    builder.setupCharacterMap({ord(c): f"uni{ord(c):04X}" for c in chars})
    builder.setupGlyf({name: _box() for name in names})
    builder.setupHorizontalMetrics(dict.fromkeys(names, (1000, 100)))
    builder.setupHorizontalHeader(ascent=880, descent=-120)
    builder.setupNameTable({"familyName": "Test Kanji", "styleName": "Regular"})
    builder.setupOS2(sTypoAscender=880, sTypoDescender=-120, usWinAscent=880, usWinDescent=120)
    builder.setupPost()
    builder.save(str(folder / "test-kanji.ttf"))
    return folder


def _box() -> object:
    pen = TTGlyphPen(None)
    pen.moveTo((100, 0))
    pen.lineTo((100, 800))
    pen.lineTo((900, 800))
    pen.lineTo((900, 0))
    pen.closePath()
    return pen.glyph()
