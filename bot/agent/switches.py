"""Which model providers served one run, told as a `ProviderSwitched` event when one takes over.

Read from each reply's `provider:model` name (the chain in `bot.agent.models.fallback` names
them so); kept apart from the chain so that a run's state does not load the model clients.
"""

from __future__ import annotations

from bot.agent.events import ProviderSwitched


class ProviderWatch:
    """Which providers have served one run, from the `provider:model` of each call's reply. One
    per run, shared by a deep run's researchers, so that each switch is told once per run."""

    def __init__(self) -> None:
        self._served: set[str] = set()
        self._last = ""

    def served(self, model: str, turn: int) -> ProviderSwitched | None:
        """Note a call served by `model`; the event to emit when a provider serves this run for
        the first time after another one did (the chain moves off a provider only when it fails)."""
        provider, colon, name = model.partition(":")
        if not colon:
            return None  # not through the chain: nothing to tell
        previous, self._last = self._last, model
        first_time = provider not in self._served
        self._served.add(provider)
        if not (first_time and previous):
            return None
        before = previous.partition(":")[0]
        return ProviderSwitched(
            turn=turn,
            previous=previous,
            model=model,
            message=f"Model provider switched: {before} failed, so {provider} ({name}) took over.",
        )
