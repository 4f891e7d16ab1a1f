"""Citation checking on the parsed report: every link whose target the run did not retrieve is
taken apart, every `[n]` renumbered, the model's own sources list dropped, and a statement that
lost all its citations marked `[unverified]`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from markdown_it.token import Token

from bot.agent.language import FRAMES
from bot.agent.report.markdown import (
    LINK_OPENERS,
    inline_tokens,
    parse,
    render,
    render_inline,
    rewrite_links,
    text_of,
    text_token,
)
from bot.agent.report.markup import anchors_as_links, find_urls, html_blocks_as_text
from bot.domain import strip_escapes

UNVERIFIED = "[unverified]"
# A bracketed group of numbers and ranges: `[3]`, `[1, 3]`, `[3-5]`, `[3–5]`. Whether it is a
# citation depends on the numbers (see `_Checker._group`), not on the brackets alone.
_GROUP = re.compile(r"\[(\d+(?:\s*[-–—,;]\s*\d+)*)\]")
_RANGE = re.compile(r"\s*(\d+)\s*(?:[-–—]\s*(\d+))?\s*")
# Where a statement ends inside a text token: `.`, `!`, `?` before a space, or CJK punctuation.
_END = re.compile(r"[.!?](?=\s|$)|[。！？]")
MAX_RANGE = 50
MAX_LABEL_WORDS = 12
NOT_A_SOURCE = 1000
"""From here on a bracketed number is a year or an amount (`[2024]`), never a citation."""


@dataclass
class Part:
    """A `#`/`##` heading and the blocks under it (heading None: text before the first one)."""

    heading: Token | None
    level: int
    body: list[Token] = field(default_factory=list)


@dataclass
class Checked:
    title: str | None
    """The model's `#` title, checked like the rest; None if it wrote none."""
    sections: list[tuple[str | None, str]]
    """(heading, body) in order; heading None for text before the first heading."""
    cited: list[int]
    """The run's source numbers in order of first citation: the report's sources, renumbered."""
    unverified: int


def check(
    text: str,
    lookup: Callable[[str], int | None],
    count: int,
    *,
    renumber: bool = True,
    mark: str = UNVERIFIED,
) -> Checked:
    """`lookup`: the run's number for a URL it retrieved, else None; `count`: how many it has.
    `renumber` False keeps the run's numbers (a follow-up cites its run's list as it stands).
    `mark`: what marks a statement that lost every citation (in the report's language)."""
    # Escapes go whole before Markdown escaping: `]` escaped inside an OSC 8 link would cut the
    # sequence where a terminal stops reading it, and print the rest.
    tokens = html_blocks_as_text(parse(strip_escapes(text)))
    parts = _split(tokens)
    title = _take_title(parts)
    # The model's own bibliography: a trailing section shaped like one (never the first section).
    while len(parts) > 1 and is_sources_section(parts[-1]):
        parts.pop()
    checker = _Checker(lookup, count, renumber=renumber, mark=mark)
    checked_title = render_inline(checker.inline(title)) if title is not None else None
    sections = []
    for part in (p for p in parts if p.heading is not None or p.body):
        heading = render_inline(checker.inline(part.heading)) if part.heading else None
        for token in inline_tokens(part.body):
            checker.inline(token)
        for token in part.body:
            if token.type in {"fence", "code_block"}:
                token.content = checker.scrub(token.content)
        sections.append((heading, render(part.body)))
    return Checked(checked_title, sections, checker.cited, checker.unverified)


def _split(tokens: list[Token]) -> list[Part]:
    """Top-level `#` and `##` headings cut the document; deeper ones stay inside a part."""
    parts = [Part(heading=None, level=0)]
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == "heading_open" and token.level == 0 and token.tag in {"h1", "h2"}:
            parts.append(Part(heading=tokens[index + 1], level=int(token.tag[1])))
            index += 3
            continue
        parts[-1].body.append(token)
        index += 1
    return parts


def _take_title(parts: list[Part]) -> Token | None:
    """The first heading is the title when it is a `#` one; what stood under or above it is
    the text before the first section."""
    first = next((i for i, part in enumerate(parts) if part.heading is not None), None)
    if first is None or parts[first].level != 1:
        return None
    head = parts[first]
    title, head.heading, head.level = head.heading, None, 0
    if first:
        parts[0].body += parts.pop(first).body
    return title


def is_sources_section(part: Part) -> bool:
    """A bibliography, recognised by its shape whatever its heading says: only lists or lines,
    most of the entries a link, a URL or a leading citation number. A list under the heading we
    give our own list in some language (`## Sources`, `## Quellen` …) counts even without links."""
    body = part.body
    if part.heading is None or not body:
        return False
    if any(t.level == 0 and t.type not in _LISTISH for t in body):
        return False
    if text_of(part.heading.children or []).strip().casefold() in _OUR_HEADINGS:
        return True
    entries = [t.children or [] for t in inline_tokens(body) if t.level <= 3]
    lines = [line for children in entries for line in _lines(children)]
    references = sum(_is_reference(line) for line in lines)
    return bool(lines) and references * 2 > len(lines)


_OUR_HEADINGS = frozenset(frame.sources.casefold() for frame in FRAMES.values())
_LISTISH = {f"{kind}_{end}" for kind in ("bullet_list", "ordered_list", "list_item", "paragraph")
            for end in ("open", "close")} | {"inline"}  # fmt: skip


def _lines(children: list[Token]) -> list[list[Token]]:
    lines: list[list[Token]] = [[]]
    for child in children:
        if child.type in {"softbreak", "hardbreak"}:
            lines.append([])
        else:
            lines[-1].append(child)
    return [line for line in lines if line]


def _is_reference(line: list[Token]) -> bool:
    """An entry of a sources list: it starts with a link, a URL or a citation number, or is a
    short label ending with a bare URL (prose is longer, or has more than one statement)."""
    line = [t for t in line if not (t.type == "text" and not t.content.strip(" \t.,;:–—-()"))]
    if not line:
        return False
    first, last = line[0], line[-1]
    if first.type in LINK_OPENERS or first.type == "html_inline":
        return True
    if first.type == "text" and _GROUP.match(first.content.lstrip()):
        return True
    if not (last.type in _CLOSERS and (last.info == "auto" or last.type == "gfm_autolink_close")):
        return False
    words = text_of(line)
    return not _END.search(words) and len(words.split()) <= MAX_LABEL_WORDS


_CLOSERS = set(LINK_OPENERS.values())


class _Checker:
    """Renumbers citations in document order and counts the statements that lost theirs."""

    def __init__(
        self,
        lookup: Callable[[str], int | None],
        count: int,
        *,
        renumber: bool = True,
        mark: str = UNVERIFIED,
    ) -> None:
        self._mark = mark
        self._lookup = lookup
        self._count = count
        self._renumbers = renumber
        self._new: dict[int, int] = {}
        self.cited: list[int] = []
        self.unverified = 0

    def inline(self, token: Token) -> Token:
        children = rewrite_links(anchors_as_links(token.children or []), self._link)
        marked: list[Token] = []
        for child in children:
            if child.type == "text":
                marked += self._citations(self.scrub(child.content))
            elif child.type == "image":
                marked.append(text_token(self.scrub(text_of(child.children or []))))
            elif child.type in {"code_inline", "html_inline"}:
                child.content = self.scrub(child.content)
                marked.append(child)
            else:
                marked.append(child)
        token.children = self._sentences(marked)
        return token

    def scrub(self, text: str) -> str:
        """Text with every URL the run did not retrieve cut out (code, link labels, alt text)."""
        for url in reversed(find_urls(text)):
            if self._lookup(url.url) is None:
                text = text[: url.start] + text[url.end :]
        return text

    def _link(self, target: str, label: list[Token], opener: Token) -> list[Token]:
        """A link's words stay as text; a retrieved target becomes a citation, any other is a
        lost citation. A bare URL or `<url>` has no words but its target; `[3]: url` has its
        number, which the target decides."""
        for token in label:
            if token.type == "text":
                token.content = self.scrub(token.content)
        if target.lower().startswith("mailto:"):
            return label
        number = self._lookup(target)
        words = label
        if (
            opener.info == "auto"
            or opener.type == "gfm_autolink_open"
            or _GROUP.fullmatch(f"[{text_of(label)}]")
        ):
            words = []
        space = [text_token(" ")] if words and number else []
        return [*words, *space, _marker([number] if number else [])]

    def _citations(self, text: str) -> list[Token]:
        out: list[Token] = []
        position = 0
        for match in _GROUP.finditer(text):
            numbers = self._group(match.group(1))
            if numbers is None:
                continue
            before = text[position : match.start()]
            out.append(text_token(before if numbers else before.rstrip(" ")))
            out.append(_marker(numbers))
            position = match.end()
        out.append(text_token(text[position:]))
        return out

    def _group(self, inner: str) -> list[int] | None:
        """The in-range source numbers a bracketed group cites (empty: it cites only sources the
        run does not have), or None when it is no citation (a year or an amount, a backwards or
        huge range)."""
        numbers: list[int] = []
        for piece in re.split(r"[,;]", inner):
            match = _RANGE.fullmatch(piece)
            if match is None:
                return None
            low = int(match.group(1))
            high = int(match.group(2) or low)
            if high < low or high - low > MAX_RANGE or high >= NOT_A_SOURCE:
                return None
            numbers += range(low, high + 1)
        return [n for n in numbers if 1 <= n <= self._count]

    def _sentences(self, children: list[Token]) -> list[Token]:
        """Markers become renumbered citations; a statement with lost citations and none kept
        gets the mark (`[unverified]`) before its full stop (or at the end of its cell, item or line)."""
        out: list[Token] = []
        kept = lost = 0
        for child in children:
            if child.type == "citation":
                numbers = sorted({self._renumber(n) for n in child.meta["numbers"]})
                kept, lost = (kept + 1, lost) if numbers else (kept, lost + 1)
                out.append(text_token("".join(f"[{n}]" for n in numbers)))
                continue
            if child.type != "text":
                out.append(child)
                continue
            position = 0
            for end in _END.finditer(child.content):
                before = child.content[position : end.start()]
                if lost and not kept:
                    before = f"{before.rstrip()} {self._mark}"
                    self.unverified += 1
                out.append(text_token(before + end.group()))
                kept = lost = 0
                position = end.end()
            out.append(text_token(child.content[position:]))
        if lost and not kept:
            out.append(text_token(f" {self._mark}"))
            self.unverified += 1
        return _joined(out)

    def _renumber(self, old: int) -> int:
        if old not in self._new:
            self.cited.append(old)
            self._new[old] = len(self.cited) if self._renumbers else old
        return self._new[old]


def _joined(children: list[Token]) -> list[Token]:
    """Adjacent text pieces as one token, so the renderer sees (and collapses) their spaces."""
    out: list[Token] = []
    for child in children:
        if child.type == "text" and out and out[-1].type == "text":
            out[-1] = text_token(out[-1].content + child.content)
        elif child.type != "text" or child.content:
            out.append(child)
    return out


def _marker(numbers: list[int]) -> Token:
    """Stands for a citation until the statement it belongs to is complete."""
    marker = Token("citation", "", 0)
    marker.meta["numbers"] = numbers
    return marker
