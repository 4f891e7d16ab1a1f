"""The runs service, which joins the front ends to the agent: start, queue, summarize, cancel,
persist and recover runs (`manager`), one run's path from events to delivery (`active`), each
listener's own queue (`mailbox`), owners and leases (`owner`), the queue and quotas, how a
run's outcome is told, and follow-up questions as child runs (`followups`)."""

from bot.runs.manager import Engine, Outcome, RunListener, RunManager

__all__ = ["Engine", "Outcome", "RunListener", "RunManager"]
