"""What an event adds to its run's row (tokens and cost, or its turn count), in statements built
once: a statement built per event costs more than SQLite takes to run it (`bench.loop_overhead`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Integer, bindparam, case, update

from bot.agent.events import Event, RunFinished, TurnStarted, UsageRecorded
from bot.store.schema import RUNS


def _at_least(column: Any, value: Any) -> Any:
    return case((column < value, value), else_=column)


_ADD_USAGE = (
    update(RUNS)
    .where(RUNS.c.run_id == bindparam("run"))
    .values(
        input_tokens=RUNS.c.input_tokens + bindparam("inputs"),
        output_tokens=RUNS.c.output_tokens + bindparam("outputs"),
        cache_read_tokens=RUNS.c.cache_read_tokens + bindparam("cache_reads"),
        cache_write_tokens=RUNS.c.cache_write_tokens + bindparam("cache_writes"),
        cost_usd=RUNS.c.cost_usd + bindparam("cost"),
        # An unknown cost anywhere makes the run's total unknown for good.
        cost_known=RUNS.c.cost_known * bindparam("known"),
    )
)
_ADD_TURN = update(RUNS).where(RUNS.c.run_id == bindparam("run")).values(turns=RUNS.c.turns + 1)
_RAISE_TURNS = (
    update(RUNS)
    .where(RUNS.c.run_id == bindparam("run"))
    .values(turns=_at_least(RUNS.c.turns, bindparam("least", type_=Integer)))
)


def count_event(conn: Connection, run_id: str, event: Event) -> None:
    """What an event adds to its run's row: tokens and cost, or its turn count."""
    if isinstance(event, UsageRecorded):
        use = event.usage
        known = use.cost_usd is not None
        conn.execute(
            _ADD_USAGE,
            {
                "run": run_id,
                "inputs": use.input_tokens,
                "outputs": use.output_tokens,
                "cache_reads": use.cache_read_tokens,
                "cache_writes": use.cache_write_tokens,
                "cost": use.cost_usd if known else 0.0,
                "known": int(known),
            },
        )
    elif isinstance(event, TurnStarted) and event.agent:
        # A deep run's researchers count their own turns: the run's count is their sum.
        conn.execute(_ADD_TURN, {"run": run_id})
    elif isinstance(event, TurnStarted | RunFinished):
        turns = event.turn if isinstance(event, TurnStarted) else event.turns
        conn.execute(_RAISE_TURNS, {"run": run_id, "least": turns})
