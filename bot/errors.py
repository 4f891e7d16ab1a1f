"""The small exception tree, and which errors a user sees.

    BotError                      base; its message is safe to show a user
    ├── ConfigError               a setting is missing or invalid (exit 2, no traceback)
    ├── RequestError              a user's request is malformed (short usage message)
    ├── NotFoundError             a run id unknown in this workspace
    ├── StoreError                the SQLite file cannot be used (locked, read-only, full, foreign)
    ├── ModelError                the model API failed after the SDK's own retries
    │   │                         (`provider_fault`: another provider may take the call)
    │   └── ContextOverflow       the conversation no longer fits the model's window
    └── ToolError                 an expected tool failure: becomes an is_error tool_result
        └── FetchRefused          the fetch guard said no (private address, bad scheme, size …)

The SDKs' typed errors are translated into ModelError in bot/agent/models/port.py (the one module
that imports `anthropic`) and bot/agent/models/openai_compat.py (the one that imports `openai`); the
provider chain (bot/agent/models/fallback.py) passes a provider's fault on to the next provider, and
the loop turns what is left into the `llm_error` ending.
"""


class BotError(Exception):
    """Base class; the message is written for the person who will read it."""


class ConfigError(BotError):
    """A setting is missing or invalid."""


class RequestError(BotError):
    """A request from a user cannot be run as it is."""


class NotFoundError(BotError):
    """No such run here."""


class StoreError(BotError):
    """The database cannot be opened or written; the message names the file and what to do."""


class ModelError(BotError):
    """The model could not answer; the message says why and what to do."""

    def __init__(self, message: str, *, provider_fault: bool = False) -> None:
        super().__init__(message)
        self.provider_fault = provider_fault
        """The provider failed (overloaded, 5xx, rate-limited, unreachable, a reply cut off), not
        the request: another provider may answer the same call. False for what is ours to fix
        (a rejected key, an invalid request, a conversation too long)."""


class ContextOverflow(ModelError):
    """The request no longer fits the model's context window (a 400 "prompt is too long")."""


class ToolError(BotError):
    """An expected failure of a tool; the model reads the message and may try something else."""


class FetchRefused(ToolError):
    """The fetch guard refused a URL, an address, a redirect, a size or a content type."""
