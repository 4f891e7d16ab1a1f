"""A stored report as a file to hand someone: Markdown, HTML, PDF or Word, from the `Report` and
its run alone (no model call). One call for every front end: `await export(run, report, fmt)`."""

from __future__ import annotations

import asyncio
import logging
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

from bot.agent.report.model import Report, render_markdown, report_filename
from bot.domain import RunRecord
from bot.errors import ConfigError
from bot.export.document import document, ending

log = logging.getLogger(__name__)


class Format(StrEnum):
    MD = "md"
    HTML = "html"
    PDF = "pdf"
    DOCX = "docx"


MEDIA_TYPES = {
    Format.MD: "text/markdown; charset=utf-8",
    Format.HTML: "text/html; charset=utf-8",
    Format.PDF: "application/pdf",
    Format.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


class Exported(NamedTuple):
    filename: str
    data: bytes
    media_type: str


async def export(
    run: RunRecord, report: Report, fmt: Format, *, font_dir: Path | None = None
) -> Exported:
    """The file, rendered in a worker thread: laying out a long PDF takes seconds of CPU, which
    the event loop (a chat bot's acknowledgements) must not wait for."""
    return await asyncio.to_thread(render, run, report, fmt, font_dir=font_dir)


def render(
    run: RunRecord, report: Report, fmt: Format, *, font_dir: Path | None = None
) -> Exported:
    """`font_dir`: extra fonts for the PDF (`RESEARCH_BOT_EXPORT_FONTS`)."""
    name = str(Path(report_filename(run)).with_suffix(f".{fmt.value}"))
    return Exported(name, _data(run, report, fmt, font_dir), MEDIA_TYPES[fmt])


def _data(run: RunRecord, report: Report, fmt: Format, font_dir: Path | None) -> bytes:
    # The PDF and Word libraries load only for their own format.
    if fmt is Format.MD:
        return render_markdown(report, run, ending(run)).encode()
    if fmt is Format.DOCX:
        from bot.export.word_doc import render_docx

        return render_docx(document(report, run))
    from bot.export.html_doc import render_html_page

    page = render_html_page(document(report, run))
    return page.encode() if fmt is Format.HTML else _pdf(run.run_id, page, font_dir)


def _pdf(run_id: str, page: str, font_dir: Path | None) -> bytes:
    try:
        from bot.export.pdf_doc import font_files, render_pdf
    except OSError as error:  # WeasyPrint could not load Pango
        raise ConfigError(
            f"PDF export needs the Pango library ({error}). Install libpango-1.0-0 and "
            "libpangoft2-1.0-0 (README: Exporting a report)."
        ) from None
    pdf = render_pdf(page, font_files(font_dir))
    if pdf.missing:
        log.warning(
            "run %s: the PDF shows %d character(s) as boxes, no installed font has them (%s): "
            "install fonts-noto-cjk / fonts-noto-core, or put a font in RESEARCH_BOT_EXPORT_FONTS",
            run_id,
            len(pdf.missing),
            ", ".join(f"{char} U+{ord(char):04X}" for char in pdf.missing[:12]),
        )
    return pdf.data
