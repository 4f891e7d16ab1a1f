"""The HTML export, read back with html.parser: one file that loads nothing and runs nothing,
the model's and the web's words escaped, citations and sources linked."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

from bot.agent.report.model import Report
from bot.domain import RunRecord
from bot.export import Format, render
from tests.export.conftest import (
    ARABIC,
    CYRILLIC,
    HEADINGS,
    HOSTILE,
    JAPANESE,
    SOURCES,
    sample_report,
)


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    text: str = ""


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.open: list[Element] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self.elements.append(element)
        if tag not in {"meta", "br", "hr", "img", "link", "input"}:
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self.open and self.open.pop().tag != tag:
            pass

    def handle_data(self, data: str) -> None:
        self.text += data
        for element in self.open:
            element.text += data

    def all(self, tag: str) -> list[Element]:
        return [e for e in self.elements if e.tag == tag]


def page(run: RunRecord, report: Report) -> tuple[Page, str]:
    exported = render(run, report, Format.HTML)
    assert exported.filename == "acme-robotics-r1a2b3.html"
    assert exported.media_type.startswith("text/html")
    source = exported.data.decode()
    parsed = Page()
    parsed.feed(source)
    parsed.close()
    return parsed, source


def test_headings_and_every_script_read_as_written(run: RunRecord, report: Report) -> None:
    parsed, _ = page(run, report)

    assert [h.text for h in parsed.all("h1")] == ["Acme Robotics: обзор"]
    assert [h.text for h in parsed.all("h2")] == HEADINGS
    assert CYRILLIC in parsed.text and JAPANESE in parsed.text and ARABIC in parsed.text
    arabic = next(p for p in parsed.all("p") if ARABIC in p.text)
    assert arabic.attrs["dir"] == "rtl"
    assert parsed.all("title")[0].text == "Acme Robotics: обзор"
    assert parsed.all("html")[0].attrs == {"lang": "en", "dir": "ltr"}


def test_citations_link_to_the_sources_and_the_sources_to_their_pages(
    run: RunRecord, report: Report
) -> None:
    parsed, _ = page(run, report)

    citations = [a for a in parsed.all("a") if a.attrs.get("class") == "cite"]
    assert [(a.attrs["href"], a.text) for a in citations[:2]] == [
        ("#src-1", "[1]"),
        ("#src-2", "[2]"),
    ]
    assert {a.attrs["href"] for a in citations} == {"#src-1", "#src-2", "#src-3"}
    entries = [li for li in parsed.all("li") if li.attrs.get("id")]
    assert [li.attrs["id"] for li in entries] == ["src-1", "src-2", "src-3"]
    links = [a for a in parsed.all("a") if a.attrs.get("class") != "cite"]
    assert [a.attrs["href"] for a in links] == [source.url for source in SOURCES]
    assert [a.text for a in links] == [source.title for source in SOURCES]
    assert {a.attrs["rel"] for a in links} == {"noopener noreferrer nofollow"}
    assert "(search result only)" in entries[2].text


def test_nothing_hostile_survives_as_markup(run: RunRecord, report: Report) -> None:
    parsed, source = page(run, report)

    assert not [e for e in parsed.elements if e.tag in {"script", "img", "iframe", "link", "b"}]
    assert not [e for e in parsed.elements if any(name.startswith("on") for name in e.attrs)]
    assert "&lt;script&gt;" in source and "<script" not in source
    assert '<script>alert("x")</script>' in parsed.text
    assert "javascript:" not in "".join(str(a.attrs.get("href")) for a in parsed.all("a"))
    assert "(javascript:alert(1))" in parsed.text  # the words stay, as words
    assert HOSTILE.split("</script>")[0] in parsed.text
    hrefs = [str(a.attrs["href"]) for a in parsed.all("a")]
    assert all(h.startswith(("#src-", "https://")) for h in hrefs)


def test_the_page_fits_a_phone_and_forbids_remote_loads(run: RunRecord, report: Report) -> None:
    parsed, source = page(run, report)

    metas = {str(m.attrs.get("name") or m.attrs.get("http-equiv")): m for m in parsed.all("meta")}
    assert metas["viewport"].attrs["content"] == "width=device-width, initial-scale=1"
    assert str(metas["Content-Security-Policy"].attrs["content"]).startswith("default-src 'none'")
    assert "@media print" in source and "url(" not in source


def test_an_arabic_report_is_a_right_to_left_page(run: RunRecord) -> None:
    parsed, _ = page(run, sample_report(language="ar"))

    assert parsed.all("html")[0].attrs == {"lang": "ar", "dir": "rtl"}
    # An English paragraph inside it still reads left to right.
    english = next(p for p in parsed.all("p") if p.text.startswith("Acme builds"))
    assert english.attrs["dir"] == "ltr"


def test_the_settled_company_stands_under_the_title_as_text(run: RunRecord, report: Report) -> None:
    settled = report.model_copy(
        update={"company": "Acme Robotics Ltd <b>x</b> · acme.example · United Kingdom"}
    )
    parsed, source = page(run, settled)

    [line] = [e for e in parsed.all("p") if e.attrs.get("class") == "company"]
    assert line.text == "Acme Robotics Ltd <b>x</b> · acme.example · United Kingdom"
    assert "<b>x</b>" not in source
    assert source.index('class="company"') < source.index('class="byline"')
    _, unsettled = page(run, report)
    assert 'class="company"' not in unsettled
