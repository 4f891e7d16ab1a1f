"""`research-bot eval`: how far a stored run's cited claims are backed by their sources, or the
same figures over the whole history. Reads only.

A run stored before claims were measured is measured here from its stored events, with the
deterministic check alone (no model is called): what it cannot settle counts as unverified.
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from bot.agent.report.model import Report
from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import Request, RunRecord, strip_controls
from bot.errors import NotFoundError
from bot.store.runs import Store


class Figures(BaseModel):
    claims: int = 0
    supported: int = 0
    unsupported: int = 0
    unverified: int = 0
    """Cited claims neither check could settle."""
    uncited: int = 0
    """Statements marked [unverified]: their only citations were never retrieved."""

    @property
    def supported_share(self) -> float | None:
        return self.supported / self.claims if self.claims else None

    def add(self, counts: dict[Verdict, int]) -> None:
        self.supported += counts.get(Verdict.SUPPORTED, 0)
        self.unsupported += counts.get(Verdict.UNSUPPORTED, 0)
        self.unverified += counts.get(Verdict.UNKNOWN, 0)
        self.claims += sum(counts.values())


class CitedSource(BaseModel):
    n: int
    title: str
    url: str


class Unsupported(BaseModel):
    sentence: str
    note: str
    sources: list[CitedSource]


class RunEval(BaseModel):
    run_id: str
    topic: str
    measured: str
    """`stored` (measured when the report was written) or `deterministic` (measured now)."""
    figures: Figures
    supported_share: float | None
    unsupported: list[Unsupported]


class HistoryEval(BaseModel):
    runs_measured: int
    figures: Figures
    supported_share: float | None


def support_figures(report: Report) -> dict[str, float | int | None] | None:
    """The footer's figures for `show --json` (None: the report's claims were not measured)."""
    if report.support is None:
        return None
    figures = figures_of(report.support)
    return {**figures.model_dump(), "supported_share": figures.supported_share}


def figures_of(support: Support) -> Figures:
    figures = Figures(uncited=support.unverified)
    figures.add({v: support.count(v) for v in Verdict})
    return figures


async def evaluate_run(store: Store, run_id: str) -> RunEval:
    record = await store.get_run(run_id)
    saved = await store.report(record.run_id)
    if saved is None:
        raise NotFoundError(f"Run {record.run_id} has no report ({record.status.value}).")
    report = saved[0]
    measured = "stored"
    if report.support is None:
        measured = "deterministic"
        claims = await _measure_now(store, record, report)
    else:
        claims = await store.claims(record.run_id) or report.support.claims
    unverified = report.support.unverified if report.support is not None else 0
    figures = figures_of(Support(claims=claims, unverified=unverified))
    return RunEval(
        run_id=record.run_id,
        topic=strip_controls(record.topic),
        measured=measured,
        figures=figures,
        supported_share=figures.supported_share,
        unsupported=[
            _unsupported(claim, report) for claim in claims if claim.verdict is Verdict.UNSUPPORTED
        ],
    )


async def _measure_now(store: Store, record: RunRecord, report: Report) -> list[Claim]:
    # The checker's module loads the model client's; only a run stored before claims were
    # measured needs it, so every other read starts without them.
    from bot.agent.report.claims import in_report_order, measure_deterministic
    from bot.agent.state import RunState

    request = Request(topic=record.topic, mode=record.mode, language=record.language)
    history = await store.events(record.run_id)
    run = RunState.from_history(request, history, lambda _: None, time.monotonic(), record.run_id)
    settled, open_ = measure_deterministic(run, report)
    for claim in open_:
        claim.note = "not judged (measured after the run, without a model)"
    return in_report_order(report, settled + open_)


def _unsupported(claim: Claim, report: Report) -> Unsupported:
    cited = [
        CitedSource(n=n, title=strip_controls(s.title), url=s.url)
        for n in claim.sources
        if (s := report.sources[n - 1] if 1 <= n <= len(report.sources) else None) is not None
    ]
    return Unsupported(sentence=strip_controls(claim.sentence), note=claim.note, sources=cited)


async def evaluate_history(store: Store) -> HistoryEval:
    counts = await store.claim_counts()
    figures = Figures()
    for per_run in counts.values():
        figures.add(per_run)
    return HistoryEval(
        runs_measured=len(counts), figures=figures, supported_share=figures.supported_share
    )


def figures_line(figures: Figures) -> str:
    share = figures.supported_share
    line = (
        f"{figures.claims} cited claims · {figures.supported} supported by their source · "
        f"{figures.unsupported} not · {figures.unverified} unverified"
    )
    if figures.uncited:
        line += f" · {figures.uncited} marked [unverified]"
    return line + (f" ({share:.0%} supported)" if share is not None else "")


def render_run(result: RunEval) -> str:
    lines = [f"Run {result.run_id} · {result.topic}", figures_line(result.figures)]
    if result.measured == "deterministic":
        lines.append("(measured now from the stored sources, deterministic check only)")
    if result.unsupported:
        lines += ["", "Not supported by their sources:"]
    for item in result.unsupported:
        lines.append(f"- {item.sentence}" + (f" ({item.note})" if item.note else ""))
        lines += [f"    [{s.n}] {s.title or s.url} <{s.url}>" for s in item.sources]
    return "\n".join(lines)


def render_history(result: HistoryEval) -> str:
    if not result.runs_measured:
        return "No run has measured claims yet."
    return f"{result.runs_measured} runs measured · {figures_line(result.figures)}"
