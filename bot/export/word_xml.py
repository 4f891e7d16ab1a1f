"""The WordprocessingML python-docx has no call for: hyperlinks (to a web page or a bookmark),
bookmarks, a list that numbers from its own start, and right-to-left paragraphs."""

from __future__ import annotations

from typing import Any

from docx.document import Document as WordDocument
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import RGBColor
from docx.text.paragraph import Paragraph
from docx.text.run import Run

LINK_COLOR = "0B57D0"
# What may follow `w:bidi` in a paragraph's properties (the schema fixes their order).
_AFTER_BIDI = (
    "w:adjustRightInd", "w:snapToGrid", "w:spacing", "w:ind", "w:contextualSpacing",
    "w:mirrorIndents", "w:suppressOverlap", "w:jc", "w:textDirection", "w:textAlignment",
    "w:textboxTightWrap", "w:outlineLvl", "w:divId", "w:cnfStyle", "w:rPr", "w:sectPr",
    "w:pPrChange",
)  # fmt: skip


def hyperlink(paragraph: Paragraph, *, url: str | None = None, anchor: str | None = None) -> Any:
    """An empty `w:hyperlink` at the end of the paragraph, to a web page or a bookmark; its runs
    are added with `run_in`."""
    link = OxmlElement("w:hyperlink")
    if url is not None:
        rel = paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
        link.set(qn("r:id"), rel)
    else:
        link.set(qn("w:anchor"), str(anchor))
    link.set(qn("w:history"), "1")
    paragraph._p.append(link)
    return link


def run_in(link: Any, paragraph: Paragraph, text: str) -> Run:
    """A run inside a hyperlink, coloured and underlined like one."""
    element = OxmlElement("w:r")
    link.append(element)
    run = Run(element, paragraph)
    run.text = text
    run.font.color.rgb = RGBColor.from_string(LINK_COLOR)
    run.font.underline = True
    return run


def bookmark(paragraph: Paragraph, name: str, number: int) -> None:
    """The whole paragraph as the bookmark `name` (a hyperlink's `anchor`)."""
    start = OxmlElement("w:bookmarkStart")
    start.set(qn("w:id"), str(number))
    start.set(qn("w:name"), name)
    end = OxmlElement("w:bookmarkEnd")
    end.set(qn("w:id"), str(number))
    paragraph._p.insert(1 if paragraph._p.pPr is not None else 0, start)
    paragraph._p.append(end)


def new_numbering(doc: WordDocument, style: str, start: int = 1) -> int:
    """A numbering instance of the list style's own definition, counting from `start`: each
    numbered list of the report counts from its own start, not on from the previous one."""
    numbering = doc.part.numbering_part.element
    style_num = doc.styles[style].element.pPr.numPr.numId.val
    abstract = numbering.num_having_numId(style_num).abstractNumId.val
    num = numbering.add_num(abstract)
    num.add_lvlOverride(ilvl=0).add_startOverride(start)
    return int(num.numId)


def number(paragraph: Paragraph, num_id: int) -> None:
    num_pr = paragraph._p.get_or_add_pPr().get_or_add_numPr()
    num_pr.get_or_add_ilvl().val = 0
    num_pr.get_or_add_numId().val = num_id


def right_to_left(paragraph: Paragraph) -> None:
    properties = paragraph._p.get_or_add_pPr()
    properties.insert_element_before(OxmlElement("w:bidi"), *_AFTER_BIDI)
