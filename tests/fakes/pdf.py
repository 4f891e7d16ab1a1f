"""Small real PDFs for tests, written by hand: one page per string, Helvetica, an optional title.

    text_pdf(["Page one text", "Page two text"], title="A paper")   # bytes a PDF reader opens

Each line of a page's string becomes one line of text on that page.
"""

from __future__ import annotations


def _literal(text: str) -> bytes:
    """A PDF string literal (latin-1; backslash and parentheses escaped)."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("latin-1", "replace") + b")"


def _content(text: str) -> bytes:
    lines = [b"BT", b"/F1 11 Tf", b"14 TL", b"72 720 Td"]
    for line in text.splitlines() or [""]:
        lines.append(_literal(line) + b" Tj T*")
    lines.append(b"ET")
    return b"\n".join(lines)


def text_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A PDF whose pages hold `pages` as text; `title` goes in the document information."""
    count = len(pages)
    # Objects: 1 catalog, 2 page tree, 3 font, 4 info, then a page and its content per page.
    page_ids = [5 + 2 * i for i in range(count)]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % n for n in page_ids)
        + b"] /Count %d >>" % count,
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        4: b"<< /Title " + _literal(title) + b" >>" if title else b"<< >>",
    }
    for page_id, text in zip(page_ids, pages, strict=True):
        stream = _content(text)
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1)
        )
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets[number]
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\n" % size
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
