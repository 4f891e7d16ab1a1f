"""The report as one self-contained HTML page: no script, nothing loaded from anywhere (its own
Content-Security-Policy says so to the browser), readable on a phone and printable. Every word
from the model or the web is escaped; citations link to the sources list, the list to the pages."""

from __future__ import annotations

from html import escape

from bot.export.document import (
    EXTERNAL_REL,
    SOURCE_ANCHOR,
    Document,
    Entry,
    direction,
    plain,
    render_html,
    render_inline_html,
)

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
CSS = """
body {
  margin: 0 auto; max-width: 46rem; padding: 1rem 1.25rem 3rem;
  font: 1.0625rem/1.6 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans",
    "Helvetica Neue", Arial, sans-serif;
  color: #1b1b1b; background: #fff; overflow-wrap: break-word;
}
h1 { font-size: 1.75rem; line-height: 1.25; margin: 1rem 0 .25rem; }
h2 { font-size: 1.3rem; margin: 2rem 0 .5rem; border-bottom: 1px solid #ddd; }
h3, h4, h5, h6 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
.company { margin: 0 0 0.25rem; font-weight: 600; }
.byline { margin: 0 0 1.5rem; color: #555; font-style: italic; }
a { color: #0b57d0; }
a.cite { text-decoration: none; white-space: nowrap; font-size: .85em; }
pre, code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: .9em; }
pre { padding: .75rem; white-space: pre-wrap; background: #f4f4f4; border-radius: 4px; }
blockquote { margin: 1rem 0; padding: 0 1rem; border-inline-start: 3px solid #ccc; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #ccc; padding: .3rem .6rem; vertical-align: top; }
.sources ol { padding-inline-start: 2rem; }
.sources li { margin: .4rem 0; }
.url { display: block; font-size: .85em; color: #555; overflow-wrap: anywhere; }
.note { font-size: .85em; color: #555; }
footer { margin-top: 2.5rem; padding-top: .75rem; border-top: 1px solid #ddd;
  font-size: .85em; color: #555; }
h2, h3 { break-after: avoid; }
pre, blockquote, tr, .sources li { break-inside: avoid; }
@media screen {
  html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
  /* A wide table or code line scrolls on a phone instead of widening the page. */
  table, pre { display: block; overflow-x: auto; }
  .sources li:target { background: #fff3b0; }
}
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
}
"""


def render_html_page(doc: Document) -> str:
    n = len(doc.sources)
    company = (
        f'<p class="company"{_dir(doc.company)}>{escape(doc.company)}</p>\n' if doc.company else ""
    )
    sections = "\n".join(
        f"<section>\n<h2{_dir(plain(part.heading))}>{render_inline_html(part.heading, n)}</h2>\n"
        f"{render_html(part.body, n)}</section>"
        for part in doc.parts
    )
    sources = ""
    if doc.sources:
        items = "\n".join(_entry(entry) for entry in doc.sources)
        sources = (
            f'<section class="sources">\n<h2{_dir(doc.sources_heading)}>'
            f"{escape(doc.sources_heading)}</h2>\n"
            f"<ol>\n{items}\n</ol>\n</section>"
        )
    notes = "\n".join(
        f"<p{_dir(plain(note))}>{render_inline_html(note, 0)}</p>" for note in doc.notes
    )
    return f"""<!DOCTYPE html>
<html lang="{escape(doc.language)}" dir="{"rtl" if doc.rtl else "ltr"}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="referrer" content="no-referrer">
<title>{escape(doc.plain_title)}</title>
<style>{CSS}</style>
</head>
<body>
<header>
<h1{_dir(doc.plain_title)}>{render_inline_html(doc.title, n)}</h1>
{company}<p class="byline"{_dir(doc.byline)}>{escape(doc.byline)}</p>
</header>
<main>
{sections}
</main>
{sources}
<footer>
{notes}
</footer>
</body>
</html>
"""


def _entry(entry: Entry) -> str:
    label = escape(entry.label)
    if entry.url is not None:
        href = escape(entry.url)
        label = f'<a href="{href}" rel="{EXTERNAL_REL}">{label}</a>'
        if entry.label != entry.url:
            label += f' <span class="url">{href}</span>'
    note = f' <span class="note">{escape(entry.note)}</span>' if entry.note else ""
    return f'<li id="{SOURCE_ANCHOR}{entry.number}"{_dir(entry.label)}>{label}{note}</li>'


def _dir(text: str) -> str:
    way = direction(text)
    return f' dir="{way}"' if way else ""
