"""The report as a PDF: the HTML page laid out for A4 by WeasyPrint (Pango and HarfBuzz shape
every script; fontconfig finds a font for each), with real text, clickable links and the
headings as bookmarks. Nothing is fetched: the only files it may read are the extra fonts."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from weasyprint import CSS, HTML
from weasyprint.text.fonts import FontConfiguration
from weasyprint.urls import URLFetcher, URLFetcherResponse

FONT_SUFFIXES = frozenset({".ttf", ".otf", ".ttc", ".otc"})
PAGE_CSS = """
@page {
  size: A4; margin: 20mm 18mm 22mm;
  @bottom-center {
    content: counter(page) " / " counter(pages); direction: ltr;
    font-family: %(families)s; font-size: 8pt; color: #666;
  }
}
html { font-size: 10.5pt; }
body { font-family: %(families)s; max-width: none; padding: 0; }
pre, code { font-family: "DejaVu Sans Mono", "Noto Sans Mono", %(families)s, monospace; }
body a { color: #0b57d0; }
.url { font-size: 8.5pt; }
"""
# Latin, Cyrillic, Greek and Arabic first from the fonts most installs have; then any extra
# fonts; then fontconfig's own choice for whatever is left (CJK from fonts-noto-cjk).
SYSTEM_FAMILIES = ['"Noto Sans"', '"DejaVu Sans"']


class Pdf(NamedTuple):
    data: bytes
    missing: list[str]
    """Characters no font had a glyph for (drawn as boxes), in code point order."""


def render_pdf(page_html: str, fonts: Sequence[Path] = ()) -> Pdf:
    """`fonts`: font files tried after the system's usual ones, before fontconfig's fallback."""
    # WeasyPrint warns of every CSS rule it ignores and of each missing glyph, character by
    # character: the one that matters to an operator, text no font covers, is returned instead.
    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    font_config = FontConfiguration()
    faces = [f"extra-font-{i}" for i in range(len(fonts))]
    rules = [
        f'@font-face {{ font-family: "{face}"; src: url("{path.resolve().as_uri()}"); }}'
        for face, path in zip(faces, fonts, strict=True)
    ]
    families = ", ".join([*SYSTEM_FAMILIES, *(f'"{face}"' for face in faces), "sans-serif"])
    fetcher = _OnlyFonts({path.resolve().as_uri(): path for path in fonts})
    stylesheet = CSS(
        string="\n".join([*rules, PAGE_CSS % {"families": families}]),
        font_config=font_config,
        url_fetcher=fetcher,
    )
    page = HTML(string=page_html, url_fetcher=fetcher, media_type="print")
    document = page.render(stylesheets=[stylesheet], font_config=font_config)
    pdf: bytes = document.write_pdf()
    missing = sorted({chr(c) for font in document.fonts.values() for c in _missing(font)})
    return Pdf(pdf, missing)


def _missing(font: Any) -> dict[int, int]:
    """The code points a font was asked for and has no glyph for."""
    missing: dict[int, int] = getattr(font, "missing", {})
    return missing


def font_files(folder: Path | None) -> list[Path]:
    """The fonts in a folder (sorted by name: the order they are tried in)."""
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in FONT_SUFFIXES)


class _OnlyFonts(URLFetcher):  # type: ignore[misc]
    """Refuses every address but the extra fonts': a report can make the PDF fetch nothing."""

    def __init__(self, allowed: dict[str, Path]) -> None:
        super().__init__(allowed_protocols={"file"})
        self._allowed = allowed

    def fetch(self, url: str, headers: Any = None) -> URLFetcherResponse:
        path = self._allowed.get(url)
        if path is None:
            raise ValueError(f"not fetched: {url[:80]}")
        return URLFetcherResponse(url, body=path.read_bytes())
