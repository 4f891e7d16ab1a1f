"""What a follow-up's model is told: the system prompt, the run's evidence as its first turn, the
structured final answer, and the instruction that ends its research."""

from __future__ import annotations

from pydantic import BaseModel, Field

from bot.agent.brief import Brief
from bot.agent.fence import fence
from bot.agent.language import frame

ANSWER_TOOL = "answer"
SOURCE_CHARS = 6_000
"""Of what was read of each source, what the model is shown again."""
EVIDENCE_CHARS = 150_000
ANSWER_CHARS = 4_000
"""Of each earlier answer in the thread, what the model is shown again."""

SYSTEM = """\
You answer follow-up questions about a research report that you wrote earlier. The first
message holds the report, its numbered sources with what was read of each, and the question.

{brief}

Answer from that evidence whenever it covers the question: then call `answer` at once, without
searching. Only when the evidence does not cover the question, research briefly with
`web_search` and `read_page`, then answer. Sources you find get the next numbers after the
report's.

Citations: cite facts with the sources' numbers exactly as given, e.g. "revenue was $12M [3]";
never renumber them, never invent sources or URLs, and do not write a list of sources (it is
added for you). Say plainly what the evidence does not tell.

Finish by calling `answer` alone, in a turn of its own: never beside another tool call (an
answer given with other calls is not taken; answer once you have their results). Give a short,
direct answer in Markdown, in the language of the question. Set `update_report` to true only
when the person asks for the report itself to be changed (updated, corrected, extended,
rewritten); then give the whole revised report in `updated_report`, in the report's language
and shape (the `#` title, the TL;DR heading, the same sections), citing by the same numbers,
with the change made.
"""

ALONE = (
    f"`{ANSWER_TOOL}` was not taken: it was called beside other tools. Read their results, then "
    f"call `{ANSWER_TOOL}` alone, in a turn of its own."
)
"""The tool result an answer called beside other tools gets (they run; it is asked again)."""
CUT_OFF = (
    "Your last reply was cut off at the output limit and any tool call in it was lost. Go on "
    f"more concisely: call the tools you need, or call `{ANSWER_TOOL}` alone with a shorter "
    "answer."
)
"""What a follow-up is told after a reply cut off at the output limit."""

FORCED = {
    "max_turns": "You have used all the research turns for this question.",
    "deadline": "The time for this question is up.",
    "forced": "The person who asked wants the answer now.",
    "budget": "The cost budget for this question is spent.",
}


class FollowUpAnswer(BaseModel):
    """Give the answer to the follow-up question (and, only when asked, the revised report)."""

    answer: str = Field(min_length=1, description="The answer in Markdown, citing [n].")
    update_report: bool = Field(
        default=False,
        description="True only when the person asks for the report itself to be changed.",
    )
    updated_report: str | None = Field(
        default=None,
        description="With update_report: the whole revised report in Markdown, same shape and "
        "source numbers.",
    )


def system_prompt(brief: Brief) -> str:
    """The follow-up's system prompt: its job, the research brief (date, company, its limits,
    source order, security), citations and how it answers."""
    return SYSTEM.format(brief=brief.text())


def evidence_turn(
    *,
    topic: str,
    markdown: str,
    sources: list[tuple[int, str]],
    earlier: list[tuple[str, str]],
    question: str,
    language: str,
) -> str:
    """The first user turn: the report, each numbered source's text, earlier questions and
    answers of the thread, and the question. Everything from the web or a model is fenced."""
    words = frame(language)
    listed, room = [], EVIDENCE_CHARS
    for number, text in sources:
        piece = f"Source [{number}]:\n{fence(text[: min(SOURCE_CHARS, max(room, 0))])}"
        room -= len(piece)
        listed.append(piece)
    parts = [
        f"The report about {topic}, as it stands:\n{fence(markdown)}",
        "Its numbered sources, with what was read of each:\n\n" + "\n\n".join(listed),
    ]
    if earlier:
        asked = [f"Q: {q}\nA:\n{fence(a[:ANSWER_CHARS])}" for q, a in earlier]
        parts.append("Earlier follow-up questions in this thread:\n\n" + "\n\n".join(asked))
    parts.append(
        f"The question: {question}\n\nA revised report stays in {words.name}; its TL;DR heading "
        f"is `## {words.tldr}`."
    )
    return "\n\n".join(parts)


def answer_now(why: str) -> str:
    return (
        f"{FORCED[why]} Do not search any more: call `{ANSWER_TOOL}` now with your answer from "
        "what you have, citing sources by their numbers, and say what could not be found."
    )
