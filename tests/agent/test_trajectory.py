"""The trajectory `show RUN_ID --trajectory --json` prints, from a run's stored events."""

from __future__ import annotations

from bot.agent.deep.schema import Finding, SubQuestion
from bot.agent.events import (
    DraftReady,
    Ending,
    Event,
    FindingReady,
    ModelText,
    PlanReady,
    ReportReady,
    ResearcherStarted,
    RunFinished,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    Usage,
)
from bot.agent.report.model import Report
from bot.agent.trajectory import trajectory

REPORT = Report(title="Acme", tldr="Acme builds robots [1].", sections=[], sources=[])
FUNDING, PRODUCTS, GAP = "Who funds Acme?", "What does Acme sell?", "Who are Acme's customers?"


def _call(agent: int, turn: int, query: str) -> list[Event]:
    # Every researcher's first call has the same id: ids are only unique within one agent.
    args = {"query": query}
    return [
        ToolCalled(agent=agent, turn=turn, call_id="t1", name="web_search", input=args),
        ToolFinished(
            agent=agent, turn=turn, call_id="t1", name="web_search", is_error=False, content=query
        ),
    ]


def _finding(topic: str) -> Finding:
    return Finding(topic=topic, summary=f"{topic} [1].", read=[1], seen=[2])


DEEP: list[Event] = [
    RunStarted(topic="Acme", mode="company"),
    PlanReady(questions=[SubQuestion(question=FUNDING), SubQuestion(question=PRODUCTS)]),
    ResearcherStarted(agent=1, question=FUNDING),
    ResearcherStarted(agent=2, question=PRODUCTS),
    TurnStarted(agent=1, turn=1),
    TurnStarted(agent=2, turn=1),
    ModelText(agent=2, turn=1, text="Looking at the product pages first."),
    *_call(1, 1, "acme investors"),
    *_call(2, 1, "acme products"),
    FindingReady(agent=1, finding=_finding(FUNDING)),
    TurnStarted(agent=2, turn=2),
    FindingReady(agent=2, finding=_finding(PRODUCTS), from_evidence=True, ending="max_turns"),
    DraftReady(draft="# Acme\nFirst draft.", gaps=[GAP]),
    ResearcherStarted(agent=3, question=GAP, round=2),
    TurnStarted(agent=3, turn=1),
    *_call(3, 1, "acme customers"),
    FindingReady(agent=3, finding=_finding(GAP)),
    DraftReady(draft="# Acme\nSecond draft.", round=2),
    SynthesisStarted(turn=1, reason="completed"),
    ReportReady(turn=1, report=REPORT, synthesis=False),
    RunFinished(ending=Ending.COMPLETED, turns=1, usage=Usage()),
]


def test_a_deep_run_nests_each_researchers_steps_under_the_run() -> None:
    steps = trajectory("r1", DEEP)

    assert steps["termination_reason"] == "completed"
    assert steps["turns"] == [
        {
            "turn": 1,
            "content": "Acme builds robots [1].",
            "tool_calls": [],
            "final": True,
            "synthesis": False,
            "from_evidence_only": False,
        }
    ]
    assert steps["total_turns"] == 1
    assert steps["plan"] == {
        "questions": [{"question": FUNDING, "priority": 2}, {"question": PRODUCTS, "priority": 2}],
        "fallback": False,
    }
    assert steps["draft"] == {"text": "# Acme\nSecond draft.", "gaps": [], "round": 2}

    one, two, three = steps["researchers"]
    assert [(r["agent"], r["question"], r["round"]) for r in (one, two, three)] == [
        (1, FUNDING, 1),
        (2, PRODUCTS, 1),
        (3, GAP, 2),
    ]
    assert one["turns"] == [
        {
            "turn": 1,
            "content": "",
            "tool_calls": [
                {
                    "id": "t1",
                    "name": "web_search",
                    "input": {"query": "acme investors"},
                    "is_error": False,
                    "result": "acme investors",
                    "compressed": False,
                }
            ],
        }
    ]
    assert (one["ending"], one["from_evidence"], one["total_turns"]) == ("completed", False, 1)
    assert one["finding"]["topic"] == FUNDING and one["finding"]["read"] == [1]
    assert [t["turn"] for t in two["turns"]] == [1, 2]
    assert two["turns"][0]["content"] == "Looking at the product pages first."
    assert two["turns"][0]["tool_calls"][0]["result"] == "acme products"
    assert (two["ending"], two["from_evidence"], two["total_turns"]) == ("max_turns", True, 2)
    assert three["turns"][0]["tool_calls"][0]["input"] == {"query": "acme customers"}


def test_a_researcher_stopped_before_its_finding_still_shows_its_steps() -> None:
    cancelled: list[Event] = [
        *DEEP[:11],
        RunFinished(ending=Ending.CANCELLED, turns=0, usage=Usage()),
    ]

    steps = trajectory("r1", cancelled)

    assert steps["turns"] == [] and "draft" not in steps
    assert [(r["agent"], r["finding"], r["ending"]) for r in steps["researchers"]] == [
        (1, None, None),
        (2, None, None),
    ]
    assert steps["researchers"][1]["turns"][0]["tool_calls"][0]["input"] == {
        "query": "acme products"
    }


def test_a_quick_run_keeps_its_flat_shape() -> None:
    quick: list[Event] = [
        RunStarted(topic="Acme", mode="company"),
        TurnStarted(turn=1),
        *_call(0, 1, "acme"),
        ReportReady(turn=2, report=REPORT, synthesis=True),
        RunFinished(ending=Ending.MAX_TURNS_SYNTHESIZED, turns=2, usage=Usage()),
    ]

    steps = trajectory("r1", quick)

    assert list(steps) == ["run_id", "turns", "termination_reason", "total_turns"]
    assert [t["turn"] for t in steps["turns"]] == [1, 2]
    assert steps["turns"][0]["tool_calls"][0]["result"] == "acme"
    assert steps["turns"][1]["final"] is True and steps["turns"][1]["synthesis"] is True
    assert (steps["termination_reason"], steps["total_turns"]) == ("max_turns_synthesized", 2)
