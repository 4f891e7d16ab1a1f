"""A run's cost limit: whether what it has spent so far has reached it."""

from __future__ import annotations

import logging

from bot.agent.events import Usage

log = logging.getLogger(__name__)


class CostLimit:
    """RESEARCH_BOT_MAX_RUN_COST_USD for one run; `limit` None: no limit."""

    def __init__(self, limit: float | None, run_id: str = "") -> None:
        self.limit = limit
        self._run_id = run_id
        self._unknown_told = False

    def reached(self, usage: Usage) -> bool:
        """True once `usage` costs the limit or more. An unknown cost (a model without a price
        took part) cannot be held to it: that is logged once, and the run goes on."""
        if self.limit is None:
            return False
        if usage.cost_usd is None:
            if not self._unknown_told:
                self._unknown_told = True
                log.warning(
                    "run %s: its cost is unknown (a model without a price), so its cost "
                    "limit of $%.2f cannot be checked; set RESEARCH_BOT_PRICES",
                    self._run_id,
                    self.limit,
                )
            return False
        return usage.cost_usd >= self.limit
