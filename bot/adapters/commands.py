"""The `/research` command language both chat platforms share: parsing, usage and history text."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from bot.agent.events import format_cost
from bot.domain import MAX_TOPIC_CHARS, Depth, Mode, RunRecord, validate_topic
from bot.errors import RequestError

USAGE = (
    "Usage:\n"
    "• `/research <company>`: research a company, e.g. `/research Acme Robotics`\n"
    "• `/research contracts <filters>`: open public tenders, e.g. "
    "`/research contracts road maintenance, Ireland, over 1M EUR`\n"
    "• `/research deep <company>`: deep research, slower and more thorough: a plan, several "
    "researchers in parallel, one report\n"
    "• `/research deep contracts <filters>`: the same for public tenders\n"
    "• `/research history`: this workspace's recent runs\n"
    "• `/research show <run id>`: post a past report here\n"
    "• `/research help`: this message\n"
    f"Topics are at most {MAX_TOPIC_CHARS} characters."
)

DISCORD_USAGE = (
    "Usage: `/research company name:<company>`, `/research contracts filters:<filters>` "
    "(either with `depth:deep` for slower, more thorough research), `/research history`, "
    f"`/research show run:<id>`. Topics are at most {MAX_TOPIC_CHARS} characters."
)


class Command(BaseModel):
    kind: Literal["research", "history", "show", "help"]
    topic: str = ""
    mode: Mode = Mode.COMPANY
    depth: Depth = Depth.QUICK
    run_id: str = ""


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
    if head == "show":
        return show_command(rest)
    if head == "deep":
        return deep_command(rest)
    if head == "contracts":
        return research_command(rest, Mode.CONTRACTS)
    return research_command(text, Mode.COMPANY)


def deep_command(text: str) -> Command:
    """What followed `/research deep`: a company, or `contracts` and its filters."""
    words = text.split(maxsplit=1)
    if not words:
        raise RequestError(
            "Deep research on what? `/research deep <company>`, or "
            "`/research deep contracts <filters>`."
        )
    if words[0].lower() == "contracts":
        return research_command(words[1] if len(words) > 1 else "", Mode.CONTRACTS, Depth.DEEP)
    return research_command(text, Mode.COMPANY, Depth.DEEP)


def research_command(
    topic: str, mode: Mode, depth: Depth = Depth.QUICK, usage: str = USAGE
) -> Command:
    try:
        return Command(kind="research", topic=validate_topic(topic), mode=mode, depth=depth)
    except RequestError as error:
        raise RequestError(f"{error}\n\n{usage}") from None


def show_command(run_id: str) -> Command:
    run_id = run_id.strip().strip("`").lower()
    if not run_id or len(run_id) > 40 or not run_id.isalnum():
        raise RequestError("Which run? `/research show <run id>` (see `/research history`).")
    return Command(kind="show", run_id=run_id)


def history_lines(runs: list[RunRecord]) -> list[str]:
    """One plain line per run, newest first; the platform escapes and lays them out."""
    if not runs:
        return ["No runs here yet. Start one with `/research <company>`."]
    return [
        f"`{r.run_id}` · {r.created_at:%Y-%m-%d %H:%M} · {_kind(r)} · {r.topic[:80]} · "
        f"{r.status.value}{f' ({r.termination_reason})' if r.termination_reason else ''} · "
        f"{format_cost(r.cost_usd)}"
        for r in runs
    ]


def _kind(run: RunRecord) -> str:
    """`company`, or `company (deep)`: quick is the default, so only a deep run says its depth."""
    return f"{run.mode.value} (deep)" if run.depth is Depth.DEEP else run.mode.value
