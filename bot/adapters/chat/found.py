"""What `/research search` answers with, on every chat platform: one entry per past report or
answer found (its run, date, topic, who asked, a snippet and where to open it), as plain lines
the platform escapes. Topics and snippets are stored model and user text: flattened to one line
here, made inert by the platform's escaping (as history lines are), so they mention nobody."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.store.search import ReportHit

ThreadLink = Callable[[ReportHit], Awaitable[str | None]]
"""Where a hit's thread opens on its platform (a Slack permalink, a Discord jump link), or None
when the platform cannot say: the hit then names `/research show <run id>`."""
SEARCH_LIMIT = 5
"""Hits one answer shows: each is three lines, which keeps a chat message readable (and bounds
the permalink calls)."""
SNIPPET_CHARS = 200
TOPIC_CHARS = 80
NAME_CHARS = 60
SHOW = "`/research show {run_id}`"
"""How a platform's person opens a run by id, for a hit without a link."""


def no_hits(words: str, place: str) -> str:
    return f"No report of this {place} that you can see from here mentions “{one_line(words, 80)}”."


def hit_lines(hit: ReportHit, link: str | None, show: str = SHOW) -> list[str]:
    """Three plain lines: the run, its date, kind, topic and asker; the snippet; where to open
    it (`link`, else the `show` command)."""
    who = one_line(hit.user_name, NAME_CHARS) or "someone"
    where = link or show.format(run_id=hit.run_id)
    return [
        f"`{hit.run_id}` · {hit.created_at:%Y-%m-%d} · {_kind(hit)} · "
        f"{one_line(hit.topic, TOPIC_CHARS)} · asked by {who}",
        f"    {one_line(hit.snippet, SNIPPET_CHARS)}",
        f"    open: {where}",
    ]


def _kind(hit: ReportHit) -> str:
    if hit.parent_run_id:
        return "follow-up answer"
    return "report" if hit.version == 1 else "report (later version)"


def one_line(text: str, limit: int) -> str:
    """`text` on one line (no line of its own can pose as another entry), cut to `limit`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
