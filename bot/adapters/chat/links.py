"""The one rule for links in chat output: only http(s) links stay links. A `[x](javascript:…)`
keeps its words, a `<file:///…>` becomes plain text; Slack and Discord both apply it."""

from __future__ import annotations

from markdown_it.token import Token

from bot.agent.report.markdown import inline_tokens, parse, render, rewrite_links, text_token
from bot.agent.urls import is_web


def web_links_only(text: str) -> str:
    """`text` (Markdown from the model or the web) with every non-http(s) link made plain text.
    Text without such a link comes back unchanged, byte for byte."""
    if ":" not in text:
        return text
    tokens = parse(text)
    changed = False

    def plain(target: str, label: list[Token], opener: Token) -> list[Token] | None:
        nonlocal changed
        if is_web(target):
            return None
        if opener.markup == "linkify" or opener.type == "gfm_autolink_open":
            # Already plain in the text: keep it plain, not rewritten as `<…>`.
            return [text_token(opener.meta.get("source_text") or _words(label))]
        changed = True
        return [text_token(target)] if opener.info == "auto" else label

    for token in inline_tokens(tokens):
        token.children = rewrite_links(token.children or [], plain)
    return render(tokens) if changed else text


def _words(label: list[Token]) -> str:
    return "".join(t.content for t in label)
