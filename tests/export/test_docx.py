"""The Word export, read back with python-docx: real heading styles, citations that jump to a
numbered sources list, the list's links to the pages, and every script as written."""

from __future__ import annotations

from io import BytesIO

import docx
from docx.document import Document as WordDocument
from docx.oxml.ns import qn

from bot.agent.report.model import Report
from bot.domain import RunRecord
from bot.export import Format, render
from tests.export.conftest import ARABIC, CYRILLIC, HEADINGS, JAPANESE, SOURCES


def word(run: RunRecord, report: Report) -> WordDocument:
    exported = render(run, report, Format.DOCX)
    assert exported.filename == "acme-robotics-r1a2b3.docx"
    return docx.Document(BytesIO(exported.data))


def test_headings_are_word_headings(run: RunRecord, report: Report) -> None:
    document = word(run, report)

    headings = [
        (p.style.name, p.text)
        for p in document.paragraphs
        if p.style is not None and str(p.style.name).startswith("Heading")
    ]
    assert headings == [
        ("Heading 1", "Acme Robotics: обзор"),
        *(("Heading 2", heading) for heading in HEADINGS),
    ]
    assert document.core_properties.title == "Acme Robotics: обзор"


def test_citations_jump_to_a_numbered_list_of_linked_sources(
    run: RunRecord, report: Report
) -> None:
    document = word(run, report)
    paragraphs = document.paragraphs

    tldr = next(p for p in paragraphs if p.text.startswith("Acme builds"))
    assert [link.fragment for link in tldr.hyperlinks] == ["src_1", "src_2"]
    assert [link.text for link in tldr.hyperlinks] == ["[1]", "[2]"]
    start = next(i for i, p in enumerate(paragraphs) if p.text == "Sources") + 1
    entries = paragraphs[start : start + len(SOURCES)]
    assert [p.style.name for p in entries if p.style is not None] == ["List Number"] * 3
    assert [p.hyperlinks[0].url for p in entries] == [s.url for s in SOURCES]
    assert [p.hyperlinks[0].text for p in entries] == [s.title for s in SOURCES]
    bookmarks = [p._p.find(qn("w:bookmarkStart")).get(qn("w:name")) for p in entries]
    assert bookmarks == ["src_1", "src_2", "src_3"]
    assert "(search result only)" in entries[2].text


def test_each_numbered_list_counts_from_its_own_start(run: RunRecord, report: Report) -> None:
    """The body's "1. First 2. Second" and the sources both start at 1 in Word."""
    document = word(run, report)
    numbering = document.part.numbering_part.element

    def start_of(text: str) -> tuple[int, str]:
        paragraph = next(p for p in document.paragraphs if p.text.startswith(text))
        num_id = paragraph._p.pPr.numPr.numId.val
        num = numbering.num_having_numId(num_id)
        override = num.find(qn("w:lvlOverride")).find(qn("w:startOverride"))
        return num_id, override.get(qn("w:val"))

    first, sources = start_of("First"), start_of("About Acme")
    assert first[1] == sources[1] == "1" and first[0] != sources[0]
    assert start_of("Second") == first


def test_every_script_is_there_and_arabic_reads_right_to_left(
    run: RunRecord, report: Report
) -> None:
    document = word(run, report)

    text = "\n".join(p.text for p in document.paragraphs)
    assert CYRILLIC in text and JAPANESE in text and ARABIC in text
    assert '<script>alert("x")</script>' in text
    arabic = next(p for p in document.paragraphs if ARABIC in p.text)
    assert arabic._p.pPr.find(qn("w:bidi")) is not None
    english = next(p for p in document.paragraphs if p.text.startswith("Acme builds"))
    assert english._p.pPr is None or english._p.pPr.find(qn("w:bidi")) is None
    table = document.tables[0]
    assert [c.text for c in table.rows[1].cells] == ["2023", "£12.5M [2]"]


def test_the_settled_company_is_the_paragraph_after_the_title(
    run: RunRecord, report: Report
) -> None:
    settled = report.model_copy(update={"company": "Acme Robotics Ltd · acme.example · UK"})

    texts = [p.text for p in word(run, settled).paragraphs]
    unsettled = [p.text for p in word(run, report).paragraphs]

    assert texts[:2] == ["Acme Robotics: обзор", "Acme Robotics Ltd · acme.example · UK"]
    assert unsettled[1] != texts[1]
    assert texts[2:] == unsettled[1:]
