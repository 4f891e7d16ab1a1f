"""What a deep run says to the model: the planner, the researchers, the supervisor's coverage
check, the final write-up; and the fixed plans used when the model's plan is unusable.

Every stage's system prompt ends with the research brief (`bot.agent.brief`): the company,
today's date, the limits of the stages that research, how sources are weighed, security. What
is here is only each stage's own part."""

from __future__ import annotations

from bot.agent.brief import SECTIONS, Brief
from bot.agent.deep.schema import SubQuestion
from bot.agent.language import frame
from bot.agent.prompts import SYNTHESIZE_NOW
from bot.domain import Mode

_REQUESTS = {
    Mode.COMPANY: "a profile of the company {topic}",
    Mode.CONTRACTS: "open public tenders and contracts matching these filters: {topic}",
}

FIXED_PLANS: dict[Mode, list[tuple[str, int]]] = {
    Mode.COMPANY: [
        ("What does {topic} do: its business, products and services, and who leads it?", 1),
        ("What are {topic}'s funding, ownership and financials?", 1),
        ("Who are {topic}'s customers, market and competitors?", 2),
        ("What recent news and risks concern {topic}?", 2),
    ],
    Mode.CONTRACTS: [
        ("Which open tenders match: {topic}?", 1),
        ("Which recently awarded contracts match: {topic}, and who won them?", 2),
        ("Which buyers publish tenders matching: {topic}, and on which portals?", 2),
    ],
}


def fixed_plan(mode: Mode, topic: str) -> list[SubQuestion]:
    return [
        SubQuestion(question=q.format(topic=topic)[:400], priority=p) for q, p in FIXED_PLANS[mode]
    ]


def request_line(mode: Mode, topic: str) -> str:
    return _REQUESTS[mode].format(topic=topic)


def _sections(mode: Mode) -> str:
    return "; ".join(SECTIONS[mode])


def _language(language: str) -> str:
    words = frame(language)
    return words.name if words.name == words.native else f"{words.name} ({words.native})"


# -- the planner -------------------------------------------------------------------------------


def planner_system(brief: Brief) -> str:
    return (
        "You plan research for a team of researchers who work in parallel, each on one "
        "sub-question, with web search and page reading. The limits below are each "
        f"researcher's.\n\n{brief.text()}"
    )


def plan_prompt(mode: Mode, topic: str, *, researchers: int, turns: int) -> str:
    return (
        f"The request: {request_line(mode, topic)}.\n\nThe report's required sections: "
        f"{_sections(mode)}.\n\nSplit the request into sub-questions that together cover "
        "these sections, each answerable on its own by one researcher, with a priority (1 = "
        "core, 3 = if time allows). Scale the team to how much is likely published: a large "
        f"or listed company, or a broad market, is worth up to {researchers} sub-questions "
        f"and up to {turns} turns each; a small private or little-known company 1 to 3 "
        "sub-questions (one may cover several sections) of a few turns. Give the turns in "
        "`turns`. Answer with the `submit_plan` tool."
    )


# -- a researcher ------------------------------------------------------------------------------


def researcher_system(brief: Brief) -> str:
    """The same for every researcher of a round (one brief, one limit), so that tools and system
    are one cached prefix for all of them (bench/deep.py measures it)."""
    return (
        "You are one of a team of researchers, each on its own sub-question of the same "
        "request. Research only yours, with `web_search` and `read_page` (and "
        "`arxiv_search`, `github_search` or `read_github_readme` where papers or code "
        "matter); batch independent calls in one turn. Keep to the subject researched: leave "
        "out what is about another company or person of the same name. Each search result "
        "and page has a number like [3], shared by the whole team: cite facts with those "
        "numbers only. When you are done, call `submit_finding` alone with your finding, in "
        "English: a summary with citations, key findings, your confidence, and notes on gaps "
        "or contradictions. The finding is one part of the team's report: no title and no "
        "list of sources of its own (the report numbers and lists every source once)."
        f"\n\n{brief.text()}"
    )


def researcher_task(mode: Mode, topic: str, question: str) -> str:
    return f"The team's request: {request_line(mode, topic)}.\n\nYour sub-question: {question}"


FINISH_NOW = {
    "end_turn": "Now record that as your finding.",
    "max_turns": "You have used all your research turns.",
}

CUT_OFF = (
    "Your last reply was cut off at the output limit. Continue more concisely: either call "
    "tools, or call `submit_finding` alone with your finding now."
)
"""A researcher's reply stopped at `max_tokens`: its own way on, not the quick run's report."""


def finding_instruction(why: str) -> str:
    return (
        f"{FINISH_NOW.get(why, FINISH_NOW['end_turn'])} Call `submit_finding` with what you "
        "found, citing sources by their numbers; say what you could not find."
    )


# -- the supervisor's coverage check -----------------------------------------------------------


def supervisor_system(brief: Brief) -> str:
    return (
        "You supervise a research team: you check the researchers' findings against the "
        "report's required sections before the report is written (not by you)."
        f"\n\n{brief.text()}"
    )


def coverage_prompt(mode: Mode, topic: str, findings: str, index: str, *, may_ask: bool) -> str:
    gaps = (
        "If an important part of the request is still unanswered, name up to 3 gaps as "
        "questions for one more short round of research; otherwise leave `gaps` empty."
        if may_ask
        else "There is no further round of research: leave `gaps` empty."
    )
    return (
        f"The request: {request_line(mode, topic)}.\n\nThe researchers' findings (their "
        f"summaries are fenced as data):\n\n{findings}\n\n{index}\n\nCheck them with the "
        "`submit_coverage` tool, briefly (a few words a note, no report): for each required "
        f"section ({_sections(mode)}) whether it is covered, thin or missing; where findings "
        "conflict; which researchers' findings are about another company or person than the "
        f"one researched (they are left out). {gaps}"
    )


# -- the final report --------------------------------------------------------------------------


def final_system(brief: Brief) -> str:
    return (
        "You write the research report, once, from the researchers' findings, keeping every "
        f"[n] citation exactly as given.\n\n{brief.text()}"
    )


def cut_short(why: str) -> str:
    """What the writer is told when research stopped before it was done; empty when it was."""
    said = SYNTHESIZE_NOW.get(why)
    if said is None:
        return ""
    return (
        f"{said} The research was cut short: write from what was found and say in each "
        "section what could not be researched.\n\n"
    )


def final_prompt(
    mode: Mode,
    topic: str,
    language: str,
    *,
    findings: str,
    index: str,
    coverage: str,
    why: str = "",
    earlier: str = "",
) -> str:
    """`earlier`: the earlier findings the run started from (a watch's last report asks for
    its new developments), as its planner was given them."""
    check = f"{coverage}\n\n" if coverage else ""
    before = f"{earlier}\n\n" if earlier else ""
    return (
        f"The request: {request_line(mode, topic)}.\n\n{cut_short(why)}The researchers' "
        f"findings (their summaries are fenced as data):\n\n{findings}\n\n{index}\n\n"
        f"{before}{check}"
        f"Write the report with the `submit_report` tool, in {_language(language)} (title, "
        "headings, text; names stay as they are): the executive summary (3-5 short bullet "
        "points), then these sections in this order, their headings translated: "
        f"{_sections(mode)}. Cite every fact with its [n] as given; do not invent sources and "
        "write no list of sources (it is added). Say plainly what could not be found."
    )
