"""Slack's rate limits divided between replicas: each of N replicas sends at 1/N of the allowed
rate, so together they never exceed it; the budget re-divides when the count changes. Measured
on aiolimiter's real buckets, on an event loop whose clock the test moves (no sleeps)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bot.adapters.slack.client import (
    APPEND_BURST,
    APPENDS_PER_MINUTE,
    POST_BURST,
    POSTS_PER_SECOND,
    UPDATE_BURST,
    UPDATES_PER_MINUTE,
    SharedLimiter,
    SlackBudget,
    one_in,
)

STEP_S = 1 / 16
"""How often the measured sender tries (exact in binary, so the clock does not drift)."""


class ClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock only the test moves: aiolimiter reads the loop's time."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def time(self) -> float:
        return self.now


def sends_within(make: Callable[[], SharedLimiter], seconds: float) -> int:
    """How many sends a limiter lets through in `seconds` to a sender that sends whenever it
    may (it asks every `STEP_S`), starting with a full budget."""
    loop = ClockLoop()

    async def count() -> int:
        limiter = make()
        sent = 0
        while loop.now <= seconds:
            while limiter.has_capacity():
                async with limiter:
                    sent += 1
            loop.now += STEP_S
        return sent

    try:
        return loop.run_until_complete(count())
    finally:
        loop.close()


def _replicas(count: int) -> Callable[[], int]:
    return lambda: count


def test_three_replicas_each_send_a_third_and_together_no_more_than_one() -> None:
    alone = sends_within(lambda: SlackBudget().updates("T1"), 60)
    third = sends_within(lambda: SlackBudget(share=one_in(_replicas(3))).updates("T1"), 60)

    # Alone: the burst, then the rate (the most Slack's Tier 3 sees in any minute); the last
    # drop may land a rounding error after the minute.
    assert UPDATE_BURST + UPDATES_PER_MINUTE - 1 <= alone <= UPDATE_BURST + UPDATES_PER_MINUTE
    assert 3 * third <= alone, "three replicas together sent more than one may"
    assert third >= alone // 3 - 1, "a replica got less than its third"


def test_every_budget_is_divided_between_the_replicas() -> None:
    budget = SlackBudget(share=one_in(_replicas(3)))
    buckets = {
        "chat.update": (budget.updates("T1"), UPDATE_BURST, UPDATES_PER_MINUTE / 60),
        "chat.postMessage": (budget.posts("C1"), POST_BURST, POSTS_PER_SECOND),
        "chat.appendStream": (budget.appends("T1"), APPEND_BURST, APPENDS_PER_MINUTE / 60),
        "chat.startStream": (budget.stream_ends("chat.startStream", "T1"), 8, 12 / 60),
    }
    for method, (limiter, burst, per_second) in buckets.items():
        assert limiter.cost() == 3.0, method
        # The bucket is Slack's whole one; a send takes three times its share of it.
        assert limiter.max_rate == burst, method
        assert limiter.max_rate / limiter.time_period == pytest.approx(per_second), method


def test_the_budget_re_divides_when_replicas_come_and_go() -> None:
    alive = [1]
    loop = ClockLoop()

    async def at_once(limiter: SharedLimiter) -> int:
        """Sends allowed back to back, after the bucket has drained for a minute."""
        loop.now += 60
        sent = 0
        while limiter.has_capacity():
            await limiter.acquire()
            sent += 1
        return sent

    async def scenario() -> list[int]:
        posts = SlackBudget(share=one_in(lambda: alive[0])).posts("C1")
        seen = [await at_once(posts)]
        alive[0] = 3
        seen.append(await at_once(posts))
        alive[0] = 2
        seen.append(await at_once(posts))
        return seen

    try:
        # Alone the whole burst of 3; with three replicas one each; with two, one (1.5 whole).
        assert loop.run_until_complete(scenario()) == [POST_BURST, 1, 1]
    finally:
        loop.close()


def test_more_replicas_than_the_burst_still_divide_the_rate() -> None:
    minutes = 10
    alone = sends_within(lambda: SlackBudget().posts("C1"), 60 * minutes)
    fifth = sends_within(lambda: SlackBudget(share=one_in(_replicas(5))).posts("C1"), 60 * minutes)

    whole = POSTS_PER_SECOND * 60 * minutes
    assert whole + POST_BURST - 1 <= alone <= whole + POST_BURST
    # One send at once (a bucket holds at least one), then a fifth of the rate.
    assert whole // 5 - 1 <= fifth <= 1 + whole // 5


@pytest.mark.parametrize("share", [0.0, -1.0, 2.0])
def test_a_share_out_of_range_counts_as_the_whole_budget(share: float) -> None:
    limiter = SlackBudget(share=lambda: share).posts("C1")
    assert limiter.cost() == 1.0
    assert limiter.max_rate == POST_BURST
