"""The `/research` command language both chat platforms share: parsing, help and history text.
What each command then does, and who may do it, is `bot.adapters.chat.service`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from bot.agent.report.model import format_cost
from bot.domain import MAX_TOPIC_CHARS, Depth, Mode, RunRecord, validate_topic
from bot.errors import RequestError
from bot.export import Format
from bot.watches.cadence import Cadence, parse_cadence

USAGE_DAYS = 7
"""The period `/research usage` covers unless told."""
MAX_USAGE_DAYS = 366
USAGE = (
    "Usage:\n"
    "• `/research <company>`: research a company, e.g. `/research Acme Robotics`\n"
    "• `/research contracts <filters>`: open public tenders, e.g. "
    "`/research contracts road maintenance, Ireland, over 1M EUR`\n"
    "• `/research deep <company>`: deep research, slower and more thorough: a plan, several "
    "researchers in parallel, one report\n"
    "• `/research deep contracts <filters>`: the same for public tenders\n"
    "• `/research watch <company> [daily|weekdays|weekly|monthly] [deep]`: research it again "
    "each period (weekly unless you say), its reports in this channel; also "
    "`/research watch contracts <filters>`\n"
    "• `/research watches`: this channel's watches; `/research watch pause|resume <id>`, "
    "`/research unwatch <id>` (the person who made it, or an admin)\n"
    "• `/research company <name>`: a company whose name starts with `deep`, `contracts`, "
    "`search` or `watch`, "
    "e.g. `/research company deep instinct`; capitalised, `/research Deep Instinct` is the "
    "company too\n"
    "• `/research history`: this workspace's recent runs (a private channel's or DM's only "
    "there)\n"
    "• `/research search <words>`: this workspace's past reports and answers that mention "
    "them, e.g. `/research search acme pricing` (only you see it)\n"
    "• `/research usage [days]`: what this workspace spent, per day and per person "
    f"(the last {USAGE_DAYS} days unless you say)\n"
    "• `/research show <run id>`: post a past report here\n"
    "• `/research export <run id> md|html|pdf|docx`: a past report as a file here\n"
    "• `/research help`: this message\n"
    f"Topics are at most {MAX_TOPIC_CHARS} characters."
)

DISCORD_USAGE = (
    "Usage: `/research company name:<company>`, `/research contracts filters:<filters>` "
    "(either with `depth:deep` for slower, more thorough research), `/research history`, "
    "`/research search words:<words>`, "
    "`/research usage [days:<n>]`, "
    "`/research show run:<id>`, `/research export run:<id> format:<format>`, "
    "`/research watch topic:<company> [every:<cadence>] [depth:deep] [mode:contracts] "
    "[timezone:<zone>]` "
    "(its reports in this channel), `/research watches`, `/research watch-pause watch:<id>`, "
    "`/research watch-resume watch:<id>`, `/research unwatch watch:<id>`. "
    f"Topics are at most {MAX_TOPIC_CHARS} characters."
)
SEARCH_USAGE = (
    "Search for what? `/research search <words>`, e.g. `/research search acme pricing`: "
    "this workspace's past reports and answers, only you see them."
)
EXPORT_USAGE = (
    "Which run, in which format? `/research export <run id> md|html|pdf|docx` "
    "(see `/research history`)."
)
WATCH_USAGE = (
    "Watch what? `/research watch <company> [daily|weekdays|weekly|monthly] [deep]`, "
    "e.g. `/research watch Acme Robotics weekly`."
)
WHICH_WATCH = "Which watch? `/research {how} <id>` (see `/research watches`)."
WatchChange = Literal["unwatch", "pause", "resume"]
WATCH_KINDS = frozenset({"watch", "watches", "unwatch", "pause", "resume"})


class Command(BaseModel):
    kind: (
        Literal["research", "history", "search", "usage", "show", "export", "help"]
        | Literal["watch", "watches"]
        | WatchChange
    )
    topic: str = ""
    mode: Mode = Mode.COMPANY
    depth: Depth = Depth.QUICK
    run_id: str = ""
    days: int = USAGE_DAYS
    fmt: Format = Format.MD
    """The file an `export` asks for."""
    words: str = ""
    """What a `search` looks for, as typed."""
    cadence: Cadence = Cadence.WEEKLY
    """How often a `watch` researches its topic again."""
    tz: str | None = None
    """A `watch`'s time zone when its maker named one (Discord's `timezone:`); else the
    platform's for that person (Slack's profile)."""
    watch_id: str = ""
    """The watch an `unwatch`, `pause` or `resume` changes."""


def parse_command(text: str) -> Command:
    """Parse what followed `/research`. Raises RequestError with a short usage message."""
    words = text.split(maxsplit=1)
    if not words:
        raise RequestError("Tell me what to research.\n\n" + USAGE)
    head, rest = words[0].lower(), (words[1] if len(words) > 1 else "").strip()
    if head == "help" and not rest:
        return Command(kind="help")
    if head == "history" and not rest:
        return Command(kind="history")
    if head == "usage" and (not rest or rest.isdigit()):
        return usage_command(int(rest) if rest else USAGE_DAYS)
    if head == "search" and not _names_a_company(words[0], rest):
        return search_command(rest)
    if head == "watch" and not _names_a_company(words[0], rest):
        return watch_command(rest)
    if head == "watches" and not rest:
        return Command(kind="watches")
    if head == "unwatch":
        return change_command("unwatch", rest)
    if head == "show":
        return show_command(rest)
    if head == "export":
        words = rest.split()
        if len(words) != 2:
            raise RequestError(EXPORT_USAGE)
        return export_command(*words)
    return topic_command(text)


MODE_WORDS = frozenset({"deep", "contracts", "company", "search", "watch"})
"""Words that open a command: `deep` and `contracts` choose the run, `company` says that what
follows is a company's name whatever its first word, `search` looks through past reports,
`watch` researches again each period."""
UNKNOWN_CADENCES = frozenset({"hourly", "fortnightly", "biweekly", "quarterly", "yearly"})
"""Cadences people ask for that a watch does not have: said so, not read as part of the topic
(typed in lower case at the end; `Acme Quarterly` is a name)."""


def topic_command(text: str, usage: str = USAGE) -> Command:
    """Research as typed: `<company>`, `contracts <filters>`, `deep <company>`,
    `deep contracts <filters>`, or `company <name>` for a name that starts with one of those
    words (what follows `/research`, or a message to the bot)."""
    head, rest = _split(text)
    if _names_a_company(head, rest):
        return research_command(text, Mode.COMPANY, usage=usage)
    if head.lower() == "deep":
        return deep_command(rest, usage)
    if head.lower() == "contracts":
        return research_command(rest, Mode.CONTRACTS, usage=usage)
    if head.lower() == "company":
        return research_command(rest, Mode.COMPANY, usage=usage)
    return research_command(text, Mode.COMPANY, usage=usage)


def deep_command(text: str, usage: str = USAGE) -> Command:
    """What followed `/research deep`: a company, `contracts` and its filters, or `company`
    and a name."""
    head, rest = _split(text)
    if not head:
        raise RequestError(
            "Deep research on what? `/research deep <company>`, or "
            "`/research deep contracts <filters>`."
        )
    if _names_a_company(head, rest):
        return research_command(text, Mode.COMPANY, Depth.DEEP, usage)
    if head.lower() == "contracts":
        return research_command(rest, Mode.CONTRACTS, Depth.DEEP, usage)
    if head.lower() == "company":
        return research_command(rest, Mode.COMPANY, Depth.DEEP, usage)
    return research_command(text, Mode.COMPANY, Depth.DEEP, usage)


def _split(text: str) -> tuple[str, str]:
    words = text.split(maxsplit=1)
    return (words[0], words[1]) if len(words) > 1 else (words[0] if words else "", "")


def _names_a_company(head: str, rest: str) -> bool:
    """`Deep Instinct`, `Contracts Finder`: a capitalised mode word before one or two capitalised
    words reads as a company's name. Typed in lower case (`deep acme robotics`) it is the mode,
    and so it is before anything longer (`Deep contracts road maintenance, Ireland`)."""
    words = rest.split()
    return (
        head.lower() in MODE_WORDS
        and head[:1].isupper()
        and 1 <= len(words) <= 2
        and all(word[:1].isupper() for word in words)
    )


def research_command(
    topic: str, mode: Mode, depth: Depth = Depth.QUICK, usage: str = USAGE
) -> Command:
    try:
        return Command(kind="research", topic=validate_topic(topic), mode=mode, depth=depth)
    except RequestError as error:
        raise RequestError(f"{error}\n\n{usage}" if usage else str(error)) from None


def watch_command(text: str) -> Command:
    """What followed `/research watch`: `pause <id>`, `resume <id>`, or a topic as for a run,
    then a cadence and `deep` at its end, in either order (`Acme Robotics weekly deep`). Only
    those last words count, once each: `Weekly Inc` is a topic, and so is `Publishers Weekly
    weekly` (a weekly watch of Publishers Weekly), and `Pause Games` is a company."""
    head, rest = _split(text)
    if head.lower() in ("pause", "resume") and not (head[:1].isupper() and rest[:1].isupper()):
        return change_command("pause" if head.lower() == "pause" else "resume", rest)
    words, cadence, deep = text.split(), None, False
    while words:
        last = words[-1].lower()
        if cadence is None and last in (c.value for c in Cadence):
            cadence = Cadence(last)
        elif last == "deep" and not deep:
            deep = True
        elif cadence is None and words[-1] in UNKNOWN_CADENCES:
            parse_cadence(last)  # raises: says which cadences there are
        else:
            break
        words.pop()
    if not words:
        raise RequestError(WATCH_USAGE)
    wanted = topic_command(" ".join(words), usage="")  # a bad topic: one line
    return Command(
        kind="watch",
        topic=wanted.topic,
        mode=wanted.mode,
        depth=Depth.DEEP if deep else wanted.depth,
        cadence=cadence or Cadence.WEEKLY,
    )


def change_command(how: WatchChange, watch_id: str) -> Command:
    """`unwatch <id>`, `watch pause <id>`, `watch resume <id>`."""
    found = _run_id(watch_id)
    if not found:
        raise RequestError(
            WHICH_WATCH.format(how="unwatch" if how == "unwatch" else f"watch {how}")
        )
    return Command(kind=how, watch_id=found)


def show_command(run_id: str) -> Command:
    run_id = _run_id(run_id)
    if not run_id:
        raise RequestError("Which run? `/research show <run id>` (see `/research history`).")
    return Command(kind="show", run_id=run_id)


def search_command(words: str, usage: str = SEARCH_USAGE) -> Command:
    """`search <words>`: the words as typed; none at all gets `usage`."""
    words = " ".join(words.split())
    if not words:
        raise RequestError(usage)
    if len(words) > MAX_TOPIC_CHARS:
        raise RequestError(f"Search for at most {MAX_TOPIC_CHARS} characters.")
    return Command(kind="search", words=words)


def export_command(run_id: str, fmt: str) -> Command:
    """`export <run id> <format>`; the format as its file extension (`pdf`, `.PDF`)."""
    run_id, fmt = _run_id(run_id), fmt.strip().strip("`").removeprefix(".").lower()
    if not run_id or fmt not in {f.value for f in Format}:
        raise RequestError(EXPORT_USAGE)
    return Command(kind="export", run_id=run_id, fmt=Format(fmt))


def _run_id(text: str) -> str:
    """A run id as typed (`AbC123`, in backticks or not), or "" when it cannot be one."""
    run_id = text.strip().strip("`").lower()
    return run_id if run_id and len(run_id) <= 40 and run_id.isalnum() else ""


def usage_command(days: int) -> Command:
    if not 1 <= days <= MAX_USAGE_DAYS:
        raise RequestError(f"`/research usage <days>`: from 1 to {MAX_USAGE_DAYS} days.")
    return Command(kind="usage", days=days)


def history_lines(runs: list[RunRecord]) -> list[str]:
    """One plain line per run, newest first; the platform escapes and lays them out."""
    if not runs:
        return ["No runs here yet. Start one with `/research <company>`."]
    return [
        f"`{r.run_id}` · {r.created_at:%Y-%m-%d %H:%M} · {_kind(r)} · {r.topic[:80]} · "
        f"{f'watch `{r.watch_id}` · ' if r.watch_id else ''}"
        f"{r.status.value}{f' ({r.termination_reason})' if r.termination_reason else ''} · "
        f"{format_cost(r.cost_usd)}"
        for r in runs
    ]


def follow_up_line(child: RunRecord) -> str:
    """One plain line for a follow-up question, marked as under the run above it."""
    question = child.topic if len(child.topic) <= 80 else child.topic[:79] + "…"
    ending = f" ({child.termination_reason})" if child.termination_reason else ""
    return (
        f"↳ `{child.run_id}` · follow-up: {question} · {child.status.value}{ending} · "
        f"{format_cost(child.cost_usd)}"
    )


def _kind(run: RunRecord) -> str:
    """`company`, or `company (deep)`: quick is the default, so only a deep run says its depth."""
    return f"{run.mode.value} (deep)" if run.depth is Depth.DEEP else run.mode.value
