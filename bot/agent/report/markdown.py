"""Markdown in and out: the one parser (markdown-it-py with GitHub's tables and bare-URL links)
and the renderer that turns a parsed, edited token stream back into Markdown (mdformat)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache

import mdformat.plugins
from linkify_it import LinkifyIt
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdformat.renderer import MDRenderer

LINK_OPENERS = {"link_open": "link_close", "gfm_autolink_open": "gfm_autolink_close"}


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"linkify": True}, renderer_cls=MDRenderer)  # type: ignore[arg-type]
    md.enable("linkify")
    # Bare URLs need a scheme (or `www.`, through the GFM rule): `acme.com` in prose stays prose.
    md.linkify = LinkifyIt(options={"fuzzy_link": False, "fuzzy_email": False})
    # Every link is seen as a link whatever its scheme, so that `javascript:` and `file:` links
    # can be found and taken apart instead of surviving as text that looks like a link.
    md.validateLink = _any_link  # type: ignore[method-assign]
    md.options["mdformat"] = {"number": True}
    md.options["store_labels"] = True
    gfm = mdformat.plugins.PARSER_EXTENSIONS["gfm"]
    md.options["parser_extension"] = [gfm]
    gfm.update_mdit(md)
    return md


def _any_link(url: str) -> bool:
    return True


def linkify() -> LinkifyIt:
    """The bare-URL finder the parser uses."""
    finder: LinkifyIt = _parser().linkify
    return finder


def parse(text: str) -> list[Token]:
    """Block tokens with their inline children. Reference definitions are resolved into the links
    that use them and do not appear in the stream, so they leave with whatever drops those links."""
    return _parser().parse(text, {})


def title_line(text: str) -> int | None:
    """The line (from 0) of the text's `# ` title when its first heading is one; None when it
    has no heading or its first heading is a section's."""
    first = next((t for t in parse(text) if t.type == "heading_open" and t.level == 0), None)
    if first is None or first.tag != "h1" or first.map is None:
        return None
    return first.map[0]


def from_title(text: str) -> str:
    """The text from its `# ` title on: what stands before the title ("Based on my research,
    here is the report:") is the model talking, not the report. Text without a title, or whose
    first heading is a section's, is returned as it is."""
    line = title_line(text)
    if not line:
        return text
    # Line numbers as the parser counts them: it reads `\r\n` and `\r` as line ends too.
    return "\n".join(re.split(r"\r\n?|\n", text)[line:])


def render(tokens: list[Token]) -> str:
    """Markdown for a token stream (no reference definitions: links are written inline)."""
    md = _parser()
    for token in inline_tokens(tokens):
        for child in token.children or []:
            child.meta.pop("label", None)
    out: str = md.renderer.render(tokens, md.options, {"references": {}})
    return out.strip()


def render_inline(token: Token) -> str:
    """Markdown for one inline token (a heading's or a table cell's text)."""
    return render([Token("paragraph_open", "p", 1), token, Token("paragraph_close", "p", -1)])


def inline_tokens(tokens: list[Token]) -> Iterator[Token]:
    return (token for token in tokens if token.type == "inline")


def text_of(tokens: list[Token]) -> str:
    """The plain text of inline children (link labels, emphasis and code spans included)."""
    return "".join(t.content for t in tokens if t.type in {"text", "code_inline"})


def rewrite_links(
    children: list[Token], replace: Callable[[str, list[Token], Token], list[Token] | None]
) -> list[Token]:
    """Inline children with each link (`[x](url)`, `<url>`, a bare URL) offered to `replace`
    as (target, label tokens, opening token); it returns what stands in its place, or None to
    keep the link."""
    out: list[Token] = []
    index = 0
    while index < len(children):
        token = children[index]
        closer = LINK_OPENERS.get(token.type)
        if closer is None:
            out.append(token)
            index += 1
            continue
        end = next(i for i in range(index, len(children)) if children[i].type == closer)
        label = children[index + 1 : end]
        target = str(token.attrs.get("href", ""))
        instead = replace(target, label, token)
        out.extend(children[index : end + 1] if instead is None else instead)
        index = end + 1
    return out


def text_token(content: str) -> Token:
    return Token("text", "", 0, content=content)
