"""How a run's tool calls and counts read in a status, a thread or a terminal line: one line
per call, whatever the model put in its input."""

from __future__ import annotations

from urllib.parse import urlsplit

from bot.agent.events import ToolCalled
from bot.agent.mcp.names import split_name


def describe_call(event: ToolCalled) -> str:
    """A person-readable line for a tool call. Its input is the model's: shown, never obeyed,
    and whatever it holds (a URL that is no URL, a number, a list) still makes a line."""
    if event.name == "web_search":
        return f"Searched: {_argument(event, 'query', 150)}"
    if event.name == "read_page":
        return f"Reading: {page_label(_argument(event, 'url', 2000))}"
    if event.name == "arxiv_search":
        return f"Searched arXiv: {_argument(event, 'query', 150)}"
    if event.name == "github_search":
        return f"Searched GitHub: {_argument(event, 'query', 150)}"
    if event.name == "read_github_readme":
        return f"Reading the README of {_argument(event, 'repo', 100)}"
    if event.name == "past_reports":
        return f"Searched the team's earlier reports: {_argument(event, 'query', 150)}"
    if (mcp := split_name(event.name)) is not None:
        # A private source: the thread says which one the run asked (never what it answered).
        return f"Asked {mcp[0]} · {mcp[1]} (private source)"
    return event.name


def page_label(url: str, limit: int = 80) -> str:
    """A page as a person can tell it from others on its site: host and path, without the
    scheme, query or fragment (`news.example/2025/acme-raises-40m`); the text as it is when it
    does not parse as a URL."""
    try:
        parts = urlsplit(url)
    except ValueError:  # `https://[click](javascript:alert(1))/`: an IPv6 literal gone wrong
        return _clip(url, limit)
    host = parts.netloc.rpartition("@")[2]  # never a user name or password
    if not host:
        return _clip(url, limit)
    return _clip(host + parts.path.rstrip("/"), limit)


def _argument(event: ToolCalled, name: str, limit: int) -> str:
    value = event.input.get(name, "")
    return _clip(value if isinstance(value, str) else str(value), limit)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 turn`, `2 turns`, `0 sources`: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def sources_label(count: int) -> str:
    return counted(count, "source")
