"""The provider chain: one `ModelPort` over several providers, tried in order.

The first provider serves every call it can. When it fails with its own fault after its SDK's
retries (overloaded, 5xx, rate-limited, unreachable, a reply cut off), the same call goes to
the next provider, and the run goes on without knowing. A failure that is ours (a rejected key,
an invalid request, a conversation too long) is raised at once: another provider would only
fail the same way, or hide the mistake.

A provider that failed is passed over for `cooldown_s`, so each later turn of a run does not
wait through its retries again; it is still tried last rather than refusing a call.

Callers name the primary provider's models (`ModelCall.model` None is its research model, its
fast model's name the fast one); each provider is asked for its own model of the same role. A
reply's `model` is `provider:model` (`anthropic:claude-sonnet-5-5`, `openai:gpt-4.1-mini`), so
the trajectory shows which one served each turn. A run learns of a switch from those names
(`bot.agent.switches.ProviderWatch`) and tells it as a `ProviderSwitched` event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.agent.models.port import ModelCall, ModelPort, ModelReply
from bot.errors import ModelError

log = logging.getLogger(__name__)
COOLDOWN_S = 60.0


@dataclass(frozen=True)
class Provider:
    name: str
    """`anthropic` or `openai`: the prefix of each reply's model."""
    port: ModelPort
    model: str
    """Its research model."""
    fast_model: str
    """Its cheap model for compression, checks and claim judging."""


class ModelChain:
    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        cooldown_s: float = COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not providers:
            raise ValueError("a model chain needs at least one provider")
        self._providers = list(providers)
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._failed_at: dict[str, float] = {}

    @property
    def model(self) -> str:
        """The research model callers name: the primary provider's."""
        return self._providers[0].model

    @property
    def fast_model(self) -> str:
        """The fast model callers name: the primary provider's."""
        return self._providers[0].fast_model

    async def complete(self, call: ModelCall) -> ModelReply:
        failures: list[ModelError] = []
        for provider in self._in_turn():
            try:
                reply = await provider.port.complete(self._routed(call, provider))
            except ModelError as error:
                if not error.provider_fault:
                    raise
                self._failed_at[provider.name] = self._clock()
                log.warning("model provider %s failed: %s", provider.name, error)
                failures.append(error)
                continue
            if failures:
                log.warning("model provider %s took the call instead", provider.name)
            return reply.model_copy(update={"model": f"{provider.name}:{reply.model}"})
        if len(failures) == 1:
            raise failures[0]
        raise ModelError(" ".join(str(f) for f in failures), provider_fault=True) from failures[-1]

    def _in_turn(self) -> list[Provider]:
        """The providers in order, those that failed in the last `cooldown_s` moved last."""
        now = self._clock()
        cooling = {name for name, at in self._failed_at.items() if now - at < self._cooldown_s}
        return sorted(self._providers, key=lambda p: p.name in cooling)

    def _routed(self, call: ModelCall, provider: Provider) -> ModelCall:
        primary = self._providers[0]
        if call.model == primary.fast_model:
            model = provider.fast_model
        elif call.model in (None, primary.model):
            model = provider.model
        else:
            model = call.model  # a model asked for by its own name
        return call if model == call.model else call.model_copy(update={"model": model})
