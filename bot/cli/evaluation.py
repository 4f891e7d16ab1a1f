"""`research-bot eval`: how far a stored run's cited claims are backed by their sources, or the
same figures over the whole history. Reads only.

A run stored before claims were measured is measured here from its stored events, with the
deterministic check alone (no model is called): what it cannot settle is left unchecked.
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from bot.agent.report.model import Report
from bot.agent.report.support import DETERMINISTIC, JUDGE, Claim, Support, Verdict
from bot.agent.state import RunState
from bot.domain import Request, RunRecord, strip_controls
from bot.errors import NotFoundError
from bot.store.runs import Store


class Figures(BaseModel):
    claims: int = 0
    supported: int = 0
    unsupported: int = 0
    unchecked: int = 0
    """Cited claims nothing could check (no source text; the judge failed, timed out, was
    skipped or over budget): never counted as supported."""
    judged: int = 0
    """Claims the fast model checked."""
    settled: int = 0
    """Claims settled without a model: by their numbers, or a source passage saying the same."""
    uncited: int = 0
    """Statements marked [unverified]: their only citations were never retrieved."""

    @property
    def supported_share(self) -> float | None:
        return self.supported / self.claims if self.claims else None

    def add(self, counts: dict[tuple[Verdict, str], int]) -> None:
        for (verdict, method), n in counts.items():
            self.claims += n
            self.supported += n if verdict is Verdict.SUPPORTED else 0
            self.unsupported += n if verdict is Verdict.UNSUPPORTED else 0
            self.unchecked += n if verdict is Verdict.UNKNOWN else 0
            checked = verdict is not Verdict.UNKNOWN
            self.judged += n if checked and method == JUDGE else 0
            self.settled += n if checked and method == DETERMINISTIC else 0


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
    unchecked: list[Unsupported]
    """Claims left unchecked, with why (their note)."""


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
    counts: dict[tuple[Verdict, str], int] = {}
    for claim in support.claims:
        counts[(claim.verdict, claim.method)] = counts.get((claim.verdict, claim.method), 0) + 1
    figures.add(counts)
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
            _listed(claim, report) for claim in claims if claim.verdict is Verdict.UNSUPPORTED
        ],
        unchecked=[_listed(claim, report) for claim in claims if claim.verdict is Verdict.UNKNOWN],
    )


async def _measure_now(store: Store, record: RunRecord, report: Report) -> list[Claim]:
    # The checker's module loads the model client's; only a run stored before claims were
    # measured needs it, so every other read starts without them.
    from bot.agent.report.claims import in_report_order, measure_deterministic

    request = Request(topic=record.topic, mode=record.mode, language=record.language)
    history = await store.events(record.run_id)
    run = RunState.from_history(request, history, lambda _: None, time.monotonic(), record.run_id)
    settled, open_ = measure_deterministic(run, report)
    for claim in open_:
        claim.note = "unchecked: measured after the run, without a model"
    return in_report_order(report, settled + open_)


def _listed(claim: Claim, report: Report) -> Unsupported:
    cited = [
        CitedSource(n=n, title=strip_controls(s.title), url=s.url)
        for n in claim.sources
        if (s := report.sources[n - 1] if 1 <= n <= len(report.sources) else None) is not None
    ]
    note = strip_controls(claim.note)  # a judge's reason or a quoted passage: untrusted text
    return Unsupported(sentence=strip_controls(claim.sentence), note=note, sources=cited)


async def evaluate_history(store: Store) -> HistoryEval:
    counts = await store.claim_counts()
    figures = Figures(uncited=sum((await store.uncited_counts()).values()))
    for per_run in counts.values():
        figures.add(per_run)
    return HistoryEval(
        runs_measured=len(counts), figures=figures, supported_share=figures.supported_share
    )


def figures_line(figures: Figures) -> str:
    share = figures.supported_share
    line = (
        f"{figures.claims} cited claims: {figures.supported} supported by their sources, "
        f"{figures.unsupported} not supported, {figures.unchecked} left unchecked"
        + (f" ({share:.0%} supported)" if share is not None else "")
        + f" · {figures.judged} checked by the model, {figures.settled} settled by their "
        "numbers or a matching passage"
    )
    if figures.uncited:
        line += f" · {figures.uncited} statements marked [unverified]: their sources were never retrieved"
    return line


def render_run(result: RunEval) -> str:
    lines = [f"Run {result.run_id} · {result.topic}", figures_line(result.figures)]
    if result.measured == "deterministic":
        lines.append("(measured now from the stored sources, deterministic check only)")
    for heading, items in (
        ("Not supported by their sources:", result.unsupported),
        ("Left unchecked (they may or may not be supported):", result.unchecked),
    ):
        if items:
            lines += ["", heading]
        for item in items:
            lines.append(f"- {item.sentence}" + (f" ({item.note})" if item.note else ""))
            lines += [f"    [{s.n}] {s.title or s.url} <{s.url}>" for s in item.sources]
    return "\n".join(lines)


def render_history(result: HistoryEval) -> str:
    if not result.runs_measured:
        return "No run has measured claims yet."
    return f"{result.runs_measured} runs measured · {figures_line(result.figures)}"
