"""The report as a Word document: real heading styles (the navigation pane and a table of
contents see them), citations that link to a numbered sources list, and the list to the pages."""

from __future__ import annotations

from dataclasses import dataclass
from io import BytesIO
from typing import Any

import docx
from docx.document import Document as WordDocument
from docx.shared import Pt
from docx.text.paragraph import Paragraph
from docx.text.run import Run
from markdown_it.token import Token

from bot.export.document import (
    SOURCE_ANCHOR,
    Document,
    Entry,
    direction,
    parse,
    parse_inline,
)
from bot.export.word_xml import (
    bookmark,
    hyperlink,
    new_numbering,
    number,
    right_to_left,
    run_in,
)

BOOKMARK = "src_"
"""Word's bookmark names: a letter first, then letters, digits and underscores."""
CODE_FONT = "Consolas"
MAX_LIST_DEPTH = 3
"""Word's built-in list styles go three levels deep."""


def render_docx(doc: Document) -> bytes:
    word = docx.Document()
    word.core_properties.title = doc.plain_title
    word.core_properties.language = doc.language
    writer = _Writer(word)
    writer.heading(parse_inline(doc.title, len(doc.sources)), 1)
    if doc.company:
        word.add_paragraph(doc.company)
    byline = word.add_paragraph()
    byline.add_run(doc.byline).italic = True
    for part in doc.parts:
        writer.heading(parse_inline(part.heading, len(doc.sources)), 2)
        writer.blocks(parse(part.body, len(doc.sources)))
    if doc.sources:
        writer.heading([Token("text", "", 0, content=doc.sources_heading)], 2)
        writer.sources(doc.sources)
    for note in doc.notes:
        paragraph = word.add_paragraph()
        writer.inline(paragraph, parse_inline(note, 0), size=Pt(8))
    buffer = BytesIO()
    word.save(buffer)
    return buffer.getvalue()


@dataclass
class _List:
    style: str
    num_id: int | None
    """The numbering instance of an ordered list (None: bullets)."""
    item_started: bool = False


@dataclass
class _Format:
    bold: int = 0
    italic: int = 0
    strike: int = 0

    def apply(self, run: Run, *, code: bool = False, size: Pt | None = None) -> None:
        run.bold = bool(self.bold) or None
        run.italic = bool(self.italic) or None
        run.font.strike = bool(self.strike) or None
        if code:
            run.font.name = CODE_FONT
        if size is not None:
            run.font.size = size


class _Writer:
    """Markdown tokens (see `bot.export.document.parse`) into Word paragraphs."""

    def __init__(self, word: WordDocument) -> None:
        self._word = word
        self._lists: list[_List] = []
        self._quotes = 0

    def heading(self, children: list[Token], level: int) -> None:
        paragraph = self._word.add_heading(level=level)
        self.inline(paragraph, children)

    def blocks(self, tokens: list[Token]) -> None:
        index = 0
        while index < len(tokens):
            token = tokens[index]
            if token.type == "heading_open":
                # `#` and `##` only cut sections, so a body's headings start at level 3.
                self.heading(tokens[index + 1].children or [], max(3, int(token.tag[1])))
            elif token.type == "paragraph_open":
                self._paragraph(tokens[index + 1].children or [])
            elif token.type == "table_open":
                end = next(i for i in range(index, len(tokens)) if tokens[i].type == "table_close")
                self._table(tokens[index:end])
                index = end
            else:
                self._structure(token)
            index += 1

    def _structure(self, token: Token) -> None:
        kind = token.type
        if kind in {"bullet_list_open", "ordered_list_open"}:
            self._open_list(ordered=kind == "ordered_list_open", start=token.attrGet("start"))
        elif kind in {"bullet_list_close", "ordered_list_close"}:
            self._lists.pop()
        elif kind == "list_item_open":
            self._lists[-1].item_started = False
        elif kind in {"blockquote_open", "blockquote_close"}:
            self._quotes += 1 if kind == "blockquote_open" else -1
        elif kind in {"fence", "code_block"}:
            self._code(token.content)
        elif kind == "hr":
            self._word.add_paragraph()

    def _open_list(self, *, ordered: bool, start: Any) -> None:
        depth = min(len(self._lists) + 1, MAX_LIST_DEPTH)
        style = ("List Number" if ordered else "List Bullet") + (f" {depth}" if depth > 1 else "")
        num_id = new_numbering(self._word, style, int(start or 1)) if ordered else None
        self._lists.append(_List(style, num_id))

    def _paragraph(self, children: list[Token]) -> None:
        style: str | None = "Quote" if self._quotes else None
        current = self._lists[-1] if self._lists else None
        if current is not None:
            depth = min(len(self._lists), MAX_LIST_DEPTH)
            first = not current.item_started
            style = current.style if first else "List Continue" + (f" {depth}" if depth > 1 else "")
            current.item_started = True
        paragraph = self._word.add_paragraph(style=style)
        if current is not None and current.num_id is not None and style == current.style:
            number(paragraph, current.num_id)
        self.inline(paragraph, children)

    def inline(self, paragraph: Paragraph, children: list[Token], size: Pt | None = None) -> None:
        form = _Format()
        link: Any = None
        for child in children:
            kind = child.type
            if kind in {"strong_open", "strong_close", "em_open", "em_close", "s_open", "s_close"}:
                step = 1 if kind.endswith("_open") else -1
                name = {"strong": "bold", "em": "italic", "s": "strike"}[kind.rsplit("_", 1)[0]]
                setattr(form, name, getattr(form, name) + step)
            elif kind == "link_open":
                link = self._link(paragraph, str(child.attrGet("href") or ""))
            elif kind == "link_close":
                link = None
            elif kind == "hardbreak":
                paragraph.add_run().add_break()
            elif child.content or kind == "softbreak":
                text = " " if kind == "softbreak" else child.content
                run = run_in(link, paragraph, text) if link is not None else paragraph.add_run(text)
                form.apply(run, code=kind == "code_inline", size=size)
        if direction("".join(c.content for c in children if c.type == "text")) == "rtl":
            right_to_left(paragraph)

    def _link(self, paragraph: Paragraph, href: str) -> Any:
        if href.startswith(f"#{SOURCE_ANCHOR}"):
            return hyperlink(paragraph, anchor=BOOKMARK + href.removeprefix(f"#{SOURCE_ANCHOR}"))
        return hyperlink(paragraph, url=href)

    def _code(self, content: str) -> None:
        paragraph = self._word.add_paragraph()
        lines = content.rstrip("\n").split("\n")
        for index, line in enumerate(lines, start=1):
            run = paragraph.add_run(line)
            run.font.name = CODE_FONT
            run.font.size = Pt(9)
            if index < len(lines):
                run.add_break()

    def _table(self, tokens: list[Token]) -> None:
        rows: list[list[list[Token]]] = []
        for token in tokens:
            if token.type == "tr_open":
                rows.append([])
            elif token.type == "inline":
                rows[-1].append(token.children or [])
        if not rows:
            return
        table = self._word.add_table(rows=len(rows), cols=max(len(row) for row in rows))
        table.style = "Table Grid"
        for cells, row in zip(rows, table.rows, strict=True):
            for children, cell in zip(cells, row.cells, strict=False):
                self.inline(cell.paragraphs[0], children)
        for run in (r for cell in table.rows[0].cells for r in cell.paragraphs[0].runs):
            run.bold = True

    def sources(self, entries: list[Entry]) -> None:
        num_id = new_numbering(self._word, "List Number")
        for entry in entries:
            paragraph = self._word.add_paragraph(style="List Number")
            number(paragraph, num_id)
            if entry.url is None:
                paragraph.add_run(entry.label)
            else:
                run_in(hyperlink(paragraph, url=entry.url), paragraph, entry.label)
                if entry.label != entry.url:
                    paragraph.add_run().add_break()
                    paragraph.add_run(entry.url).font.size = Pt(8)
            if entry.note:
                paragraph.add_run(f" {entry.note}").italic = True
            bookmark(paragraph, f"{BOOKMARK}{entry.number}", entry.number)
            if direction(entry.label) == "rtl":
                right_to_left(paragraph)
