"""Raw HTML and URLs inside a parsed report: anchors become links the checker can judge, HTML
blocks become their text, and URLs are found where Markdown does not make them links."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

from markdown_it.token import Token

from bot.agent.report.markdown import linkify, parse


@dataclass(frozen=True)
class Found:
    url: str
    start: int
    end: int


def find_urls(text: str) -> list[Found]:
    """Every URL in plain text (code, a link's words, alt text), as the bare-URL rule sees them."""
    matches = linkify().match(text) or []
    return [Found(m.url, m.index, m.last_index) for m in matches]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self.tags.append((f"/{tag}", {}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _read(html: str) -> _Tags:
    tags = _Tags()
    tags.feed(html)
    tags.close()
    return tags


def anchors_as_links(children: list[Token]) -> list[Token]:
    """`<a href="…">words</a>` as a link the checker judges; other inline HTML stays as it is
    (the checker cuts the addresses out of it)."""
    out: list[Token] = []
    for child in children:
        tags = _read(child.content).tags if child.type == "html_inline" else []
        if not any(tag in {"a", "/a"} for tag, _ in tags):
            out.append(child)
            continue
        for tag, attributes in tags:
            if tag == "a":
                out.append(Token("link_open", "a", 1, attrs={"href": attributes.get("href") or ""}))
            elif tag == "/a":
                out.append(Token("link_close", "a", -1))
    return _balanced(out)


def _balanced(children: list[Token]) -> list[Token]:
    """Drop a link opener without its closer (or a closer without an opener): raw HTML need
    not be well formed, the token stream must be."""
    out: list[Token] = []
    open_at: int | None = None
    for child in children:
        if child.type == "link_open" and child.tag == "a":
            if open_at is not None:
                out.pop(open_at)
            open_at = len(out)
        elif child.type == "link_close" and child.tag == "a":
            if open_at is None:
                continue
            open_at = None
        out.append(child)
    if open_at is not None:
        out.pop(open_at)
    return out


def html_blocks_as_text(tokens: list[Token]) -> list[Token]:
    """An HTML block keeps only its words, parsed again as Markdown (its citations count)."""
    out: list[Token] = []
    for token in tokens:
        if token.type != "html_block":
            out.append(token)
            continue
        words = "".join(_read(token.content).text).replace("<", "&lt;").strip()
        for inner in parse(words) if words else []:
            inner.level += token.level
            out.append(inner)
    return out
