"""Group commit, for both engines: the small writes many tasks make at once (a run's events)
share one transaction, and each caller resumes once it is committed.

A batch first runs whole, with no savepoints: a savepoint and its release cost more than the
write they guard, and a write almost never fails. When one does, the transaction is rolled back
and the batch runs again with each write in its own savepoint, so only the failed write's
caller hears of it. Order is submission order, so one task's writes land in the order it made
them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection

T = TypeVar("T")
Work = Callable[[Connection], T]
"""A unit of work: the queries of one transaction, as a function of a SQLAlchemy connection
(both engines run the same ones)."""

Pending = tuple[Work[object], "asyncio.Future[object]"]
"""A write waiting for its batch, and where its caller waits."""
Outcome = tuple[object, BaseException | None]
"""A write's result, or the error its caller is to hear."""


class OneFailed(Exception):
    """A write of the batch failed: roll the transaction back and run the batch `apart`."""


def together(conn: Connection, works: list[Work[object]]) -> list[Outcome]:
    """Every write of the batch, inside the caller's transaction."""
    try:
        return [(work(conn), None) for work in works]
    except Exception as error:
        raise OneFailed from error


def apart(
    conn: Connection, works: list[Work[object]], explain: Callable[[BaseException], BaseException]
) -> list[Outcome]:
    """The batch again, each write in its own savepoint, so one that fails fails alone."""
    outcomes: list[Outcome] = []
    for work in works:
        try:
            with conn.begin_nested():
                outcomes.append((work(conn), None))
        except Exception as error:
            outcomes.append((None, explain(error)))
    return outcomes


def settle(futures: list[asyncio.Future[object]], outcomes: list[Outcome]) -> None:
    """Each waiting caller, its own outcome (one that gave up waiting is skipped)."""
    for future, (result, error) in zip(futures, outcomes, strict=True):
        if future.done():
            continue
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)
