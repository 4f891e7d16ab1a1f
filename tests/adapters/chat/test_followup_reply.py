"""The thread side of a follow-up on any platform (`FollowUpReply`), on a sink that keeps what it
was sent, or refuses: how often researching is said, a refused file, nothing delivered."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.adapters.chat.followup_reply import FollowUpReply
from bot.adapters.chat.sink import ChatError, DeliveryFailed
from bot.agent.events import Ending, ToolCalled, Usage
from bot.domain import Mode, Origin, RunRecord, RunStatus
from bot.runs.manager import Outcome

CHILD = RunRecord(
    run_id="child",
    topic="Who?",
    mode=Mode.COMPANY,
    origin=Origin(),
    parent_run_id="parent",
    status=RunStatus.RUNNING,
    created_at=datetime(2026, 1, 5, tzinfo=UTC),
)


class Thread:
    """A sink that keeps what reached the thread; `refuse` names the calls it refuses."""

    show_command = "`show {run_id}`"

    def __init__(self, *refuse: str) -> None:
        self.refuse = set(refuse)
        self.said: list[str] = []
        self.files: list[tuple[str, str]] = []

    async def reply(self, run: RunRecord, text: str) -> None:
        if "reply" in self.refuse:
            raise ChatError("missing_scope")
        self.said.append(text)

    async def upload_report(
        self, run: RunRecord, filename: str, markdown: str, comment: str
    ) -> None:
        if "upload" in self.refuse:
            raise ChatError("file too large")
        self.files.append((filename, comment))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def search(query: str) -> ToolCalled:
    return ToolCalled(turn=1, call_id=query, name="web_search", input={"query": query})


async def test_researching_is_said_once_then_at_most_once_per_interval() -> None:
    thread, clock = Thread(), Clock()
    listener = FollowUpReply(thread, limit=100, interval_s=30, clock=clock)
    await listener.on_event(CHILD, search("a"))
    clock.now = 10
    await listener.on_event(CHILD, search("b"))
    await listener.on_event(CHILD, search("c"))
    clock.now = 40
    await listener.on_event(CHILD, search("d"))
    clock.now = 50
    await listener.on_event(CHILD, search("e"))
    assert thread.said == [
        "Looking beyond the report: Searched: a",
        "Still looking: Searched: b; Searched: c; Searched: d",
    ]


async def test_a_long_answer_is_split_and_a_new_version_is_filed() -> None:
    thread = Thread()
    outcome = Outcome(
        ending=Ending.ANSWERED,
        answer="line\n" * 30,
        version=2,
        markdown="# v2",
        filename="acme-v2.md",
        usage=Usage(cost_usd=0.01),
    )
    await FollowUpReply(thread, limit=60).on_finished(CHILD, outcome)
    assert all(len(text) <= 60 for text in thread.said) and len(thread.said) > 2
    assert thread.said[-1].endswith("_Answered from the run's sources · $0.01_")
    assert thread.files == [("acme-v2.md", "Report v2")]


async def test_a_refused_file_points_to_show_for_the_run_asked_about() -> None:
    thread = Thread("upload")
    outcome = Outcome(
        ending=Ending.COMPLETED, answer="Grocers [3].", version=3, markdown="#", filename="v3.md"
    )
    await FollowUpReply(thread, limit=2000).on_finished(CHILD, outcome)
    assert thread.said[-1] == "I couldn't attach report v3: `show parent` posts it."


async def test_nothing_delivered_raises_so_it_is_delivered_again_later() -> None:
    outcome = Outcome(ending=Ending.ANSWERED, answer="Grocers [3].")
    with pytest.raises(DeliveryFailed, match="missing_scope"):
        await FollowUpReply(Thread("reply"), limit=2000).on_finished(CHILD, outcome)
