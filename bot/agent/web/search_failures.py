"""Why a search provider failed: the errors that move the search chain on to the next provider,
and a short reason for each, chosen by exception type."""

from __future__ import annotations

import httpx
from ddgs import exceptions as ddgs_errors
from tavily import errors as tavily_errors

from bot.agent.web.listing import clip
from bot.errors import ToolError


class SearchProviderError(ToolError):
    """A provider answered, but with something we cannot use."""


# What a provider raises when its service is down, slow, rate limited or refuses us: the chain
# moves on. Anything else is a bug and propagates.
FAILURES: tuple[type[BaseException], ...] = (
    ToolError,
    tavily_errors.InvalidAPIKeyError,
    tavily_errors.MissingAPIKeyError,
    tavily_errors.UsageLimitExceededError,
    tavily_errors.ForbiddenError,
    tavily_errors.BadRequestError,
    tavily_errors.TimeoutError,
    tavily_errors.KeylessUnsupportedEndpointError,
    httpx.HTTPError,
    ddgs_errors.DDGSException,
    TimeoutError,
)

_TIMEOUTS = (
    tavily_errors.TimeoutError,
    ddgs_errors.TimeoutException,
    httpx.TimeoutException,
    TimeoutError,
)

# First match wins, so subclasses come before their bases.
_LABELS: tuple[tuple[type[BaseException], str], ...] = (
    (tavily_errors.InvalidAPIKeyError, "invalid API key (401)"),
    (tavily_errors.UsageLimitExceededError, "rate or usage limit (429)"),
    (tavily_errors.ForbiddenError, "forbidden or plan limit (403/432/433)"),
    (tavily_errors.BadRequestError, "bad request (400)"),
    (tavily_errors.MissingAPIKeyError, "no API key"),
    (ddgs_errors.RatelimitException, "rate limited"),
    (SearchProviderError, "unusable answer"),
    (ToolError, ""),
    (httpx.HTTPError, "network error"),
    (ddgs_errors.DDGSException, "failed"),
)


def describe_failure(exc: BaseException) -> str:
    """A short, user-safe reason for a provider failure, chosen by exception type."""
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, _TIMEOUTS):
        return "timed out"
    label = next((text for kind, text in _LABELS if isinstance(exc, kind)), type(exc).__name__)
    detail = " ".join(str(exc).split())
    if not label or not detail:
        return clip(label or detail, 160) or type(exc).__name__
    return clip(f"{label}: {detail}", 160)
