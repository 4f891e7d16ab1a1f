"""A deep run scripted on the fake Messages API: each request is answered from what it is.

Researchers run in parallel, so replies cannot come from one queue in order: `DeepScript` is a
`responder` that reads each request (its forced tool, its sub-question, how many turns its
conversation has) and answers as the planner, a researcher, the supervisor (its coverage
check) or the writer would. Knobs make any step fail, come back malformed or cut off.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.anthropic_api import (
    Scripted,
    error,
    reply,
    reply_text,
    reply_tools,
    tool_use,
)

QUESTIONS = [
    "What does Acme Robotics make?",
    "How is Acme Robotics funded?",
    "Who leads Acme Robotics?",
]


def forced(body: dict[str, Any]) -> str | None:
    choice = body.get("tool_choice") or {}
    return choice.get("name") if choice.get("type") == "tool" else None


def first_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content if b.get("type") == "text")


def question_of(body: dict[str, Any]) -> str:
    """A researcher's sub-question (its task's last line)."""
    return first_user_text(body).rsplit("Your sub-question: ", 1)[-1].strip()


def numbers_shown(body: dict[str, Any]) -> list[int]:
    """The citation numbers the tool results of a researcher's conversation carry."""
    found: list[int] = []
    for message in body["messages"]:
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result":
                text = json.dumps(block.get("content"))
                found += [int(n) for n in re.findall(r"\[(\d+)\]", text)]
    return sorted(set(found))


def forced_reply(name: str, args: dict[str, Any]) -> Scripted:
    return reply([tool_use(name, args)], "tool_use")


@dataclass
class DeepScript:
    article_url: str
    questions: list[str] = field(default_factory=lambda: list(QUESTIONS))
    plan: str = "ok"
    """ok | malformed (twice: the fixed plan is used) | malformed_once"""
    plan_turns: int | None = None
    """The turns the plan gives each researcher (None: it leaves them to the settings)."""
    failing: set[str] = field(default_factory=set)
    """Sub-questions whose researcher's model calls fail."""
    failing_late: set[str] = field(default_factory=set)
    """Sub-questions whose researcher searches and reads, then fails to write its finding."""
    cut_off: set[str] = field(default_factory=set)
    """Sub-questions whose researcher's first reply after reading is cut off at max_tokens."""
    supervisor: str = "ok"
    """ok | fail | gaps (asks one more round)"""
    other_entity: list[int] = field(default_factory=list)
    """Researchers the supervisor finds to be about another company."""
    final: str = "ok"
    """ok | fail"""
    findings: str = "plain"
    """plain | report: each finding written like a whole report, as models often do (its own
    `#` title repeating the sub-question, its own sources list linking every page it cites)"""
    title: str = "Acme Robotics: deep profile"
    read_delay_s: float = 0.0
    """How long each researcher's second turn (reading a page) takes to come back."""
    read_output_tokens: int | None = None
    """The output tokens each researcher's second turn is billed (a costly turn)."""
    hold: asyncio.Event | None = None
    """When given, researchers' second turn waits for it: they have searched (so the run has
    sources) and are stuck, e.g. for pressing Summarize mid-run."""
    plan_gate: asyncio.Event | None = None
    """When given, the plan waits for it (nothing has been found yet)."""
    searched: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a researcher asks for its second turn (its search results are in)."""
    calls: list[str] = field(default_factory=list)
    """What was asked, in order: plan, researcher:<question>, draft (the supervisor's call),
    final, judge, summarize."""
    _plans: int = 0

    async def __call__(self, body: dict[str, Any]) -> Scripted:
        name = forced(body)
        tools = {t["name"] for t in body.get("tools", [])}
        if name == "submit_plan":
            if self.plan_gate is not None:
                await self.plan_gate.wait()
            return self._plan()
        if name == "submit_coverage":
            self.calls.append("draft")
            return self._coverage(body)
        if name == "submit_report":
            self.calls.append("final")
            if self.final == "fail":
                return error(500, "api_error", "fake: writer down", should_retry=False)
            return forced_reply("submit_report", self._final(body))
        if name == "record_verdicts":
            self.calls.append("judge")
            return reply_text("no verdicts")
        if "submit_finding" in tools:
            return await self._researcher(body, name)
        # The fast model summarizing a long text (a long finding).
        self.calls.append("summarize")
        return reply_text("SUMMARY OF THE REST.")

    def _plan(self) -> Scripted:
        self._plans += 1
        self.calls.append("plan")
        if self.plan == "malformed" or (self.plan == "malformed_once" and self._plans == 1):
            return forced_reply("submit_plan", {"questions": [{"question": "x"}]})
        questions = [{"question": q, "priority": 1 + i % 3} for i, q in enumerate(self.questions)]
        plan: dict[str, Any] = {"questions": questions}
        if self.plan_turns is not None:
            plan["turns"] = self.plan_turns
        return forced_reply("submit_plan", plan)

    async def _researcher(self, body: dict[str, Any], name: str | None) -> Scripted:
        question = question_of(body)
        self.calls.append(f"researcher:{question}")
        if question in self.failing:
            return error(500, "api_error", "fake: researcher down", should_retry=False)
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if question in self.failing_late and turns >= 2:
            return error(500, "api_error", "fake: researcher down", should_retry=False)
        if question in self.cut_off and turns == 2:
            return reply([{"type": "text", "text": "On " + question + ": Acme"}], "max_tokens")
        if name == "submit_finding" or turns >= 2:
            shown = numbers_shown(body)
            summary = f"On {question}: Acme Robotics builds warehouse robots " + "".join(
                f"[{n}]" for n in shown[:2]
            )
            if self.findings == "report":
                summary = self._report_like(question, summary, body)
            return forced_reply(
                "submit_finding",
                {
                    "summary": summary,
                    "key_findings": [f"Founded in 2015 [{shown[0]}]"] if shown else [],
                    "confidence": "high",
                    "notes": [],
                },
            )
        if turns == 0:
            return reply_tools([("web_search", {"query": question})])
        self.searched.set()
        if self.hold is not None:
            await self.hold.wait()
        read = reply_tools([("read_page", {"url": self.article_url})], delay_s=self.read_delay_s)
        return dataclasses.replace(read, output_tokens=self.read_output_tokens)

    @staticmethod
    def _report_like(question: str, summary: str, body: dict[str, Any]) -> str:
        """A title repeating the question, the summary, then a sources list: `[n] [title](url)`
        for every page the researcher's tool results numbered, and a page it never saw."""
        entries = []
        for message in body["messages"]:
            if message["role"] != "user" or isinstance(message["content"], str):
                continue
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    text = json.dumps(block.get("content"))
                    entries += re.findall(r"\[(\d+)\] ([^\\]+?)\\n(https?://[^\s\\\"]+)", text)
        listed = [f"[{n}] [{title}]({url})" for n, title, url in entries]
        listed.append("https://never-retrieved.example/acme")
        return f"# {question}\n\n{summary}\n\n## Sources\n\n" + "\n".join(listed)

    def _coverage(self, body: dict[str, Any]) -> Scripted:
        if self.supervisor == "fail":
            return error(500, "api_error", "fake: supervisor down", should_retry=False)
        prompt = first_user_text(body)
        gaps = (
            [{"question": "Who are Acme Robotics' customers?"}] if self.supervisor == "gaps" else []
        )
        if "There is no further round" in prompt:
            gaps = []
        sections = [
            {"section": name, "status": "covered" if n < 2 else "missing"}
            for n, name in enumerate(required_sections(prompt, "for each required section ("))
        ]
        check = {"sections": sections, "gaps": gaps, "other_entity": self.other_entity}
        return forced_reply("submit_coverage", check)

    def _final(self, body: dict[str, Any]) -> dict[str, Any]:
        """The report in the sections the prompt asks for, in its order."""
        prompt = first_user_text(body)
        german = "German" in prompt
        names = required_sections(prompt, "their headings translated: ")
        return {
            "title": "Acme Robotics: Tiefenprofil" if german else self.title,
            "executive_summary": (
                "Acme Robotics baut Lagerroboter [1]."
                if german
                else "Acme Robotics builds warehouse robots [1]."
            ),
            "sections": [
                {"heading": name, "body": "Founded in 2015 [2]." if n else "Robots [1]."}
                for n, name in enumerate(names or ["Business"])
            ],
        }


def required_sections(prompt: str, after: str) -> list[str]:
    """The section names a supervisor's or writer's prompt lists after `after`, `; `-separated."""
    if after not in prompt:
        return []
    listed = prompt.split(after, 1)[1]
    return [name.strip() for name in re.split(r"[).]", listed, maxsplit=1)[0].split(";")]
