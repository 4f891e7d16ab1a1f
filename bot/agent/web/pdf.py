"""A PDF's text and title with pypdf (BSD), read at most `MAX_PDF_PAGES` pages deep.

Pure and synchronous, like the rest of extraction: it runs in the extraction workers, whose time
cap also bounds a PDF crafted to make the parser spin; the page reader's byte caps bound its size.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

from bot.errors import ToolError

if TYPE_CHECKING:
    from pypdf import PdfReader

log = logging.getLogger(__name__)

PDF_TYPE = "application/pdf"
SIGNATURE = b"%PDF-"
MAX_PDF_PAGES = 50
"""Pages read from one PDF; the rest are named in a marker at the end of the text."""
MAX_TITLE_CHARS = 300


def is_pdf(data: bytes | bytearray) -> bool:
    """The PDF signature at the start of a body (after any whitespace)."""
    return bytes(data[:1024]).lstrip().startswith(SIGNATURE)


def pdf_text(
    data: bytes | bytearray, url: str, max_chars: int, max_pages: int = MAX_PDF_PAGES
) -> tuple[str, str]:
    """(text, title) of a PDF; ToolError when it is not one we can read. Reading stops at
    `max_pages` pages or once `max_chars` characters are in hand (the caller cuts the rest)."""
    # Imported here: only the extraction workers load pypdf.
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(bytes(data)), strict=False)
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise ToolError(f"{url} is an encrypted PDF: its text cannot be read")
        total = len(reader.pages)
        parts: list[str] = []
        held = 0
        for number, page in enumerate(reader.pages[:max_pages], start=1):
            try:
                text = page.extract_text() or ""
            except PyPdfError as error:  # one broken page; the others may be fine
                log.info("page %d of %s could not be read: %s", number, url, error)
                continue
            parts.append(text.strip())
            held += len(text)
            if held > max_chars:
                break
        title = _title(reader)
    except PyPdfError as error:
        raise ToolError(f"{url} is not a PDF that can be read ({type(error).__name__})") from error
    text = "\n\n".join(part for part in parts if part)
    if not text:
        raise ToolError(f"{url} is a PDF without a text layer (scanned pages?): nothing to read")
    if total > max_pages and held <= max_chars:
        text += f"\n\n[… only the first {max_pages} of {total} pages were read]"
    return text, title or _first_line(text)


def _title(reader: PdfReader) -> str:
    title = reader.metadata.title if reader.metadata is not None else None
    return " ".join(title.split())[:MAX_TITLE_CHARS] if title else ""


def _first_line(text: str) -> str:
    """A paper's first line is usually its title: better than the host name."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line[:MAX_TITLE_CHARS]
