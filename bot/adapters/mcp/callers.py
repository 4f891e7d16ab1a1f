"""Who an MCP caller is: the workspace its runs belong to, and which stored runs it may see.

Over stdio the caller is the person at the terminal: its runs are `mcp` runs of the terminal's
workspace (the empty one), and it sees that workspace's runs, terminal and MCP alike, as
`research-bot history` does. Over HTTP a bearer token names a workspace: its runs are `mcp`
runs of that workspace, and it sees them and what a public channel of that workspace would (the
public Slack or Discord runs of a team or guild with that id); a private conversation's runs
stay out of sight.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass

from pydantic import SecretStr

from bot.domain import Origin, RunRecord
from bot.errors import ConfigError, NotFoundError

PLATFORM = "mcp"
CHAT_PLATFORMS = ("slack", "discord")
MAX_WORKSPACE_CHARS = 100


@dataclass(frozen=True)
class Caller:
    workspace: str
    """"" for the terminal's workspace (stdio)."""
    label: str
    """Who asked, as history shows it: `stdio`, or the token's workspace (never the token)."""

    @property
    def local(self) -> bool:
        return self.workspace == ""

    def origin(self) -> Origin:
        """Where a run this caller starts belongs. A run asked over HTTP is seen by the chat
        workspace it is shared with, as one asked in a public channel of it."""
        return Origin(
            platform=PLATFORM,
            workspace=self.workspace,
            channel=PLATFORM,
            user=self.label,
            user_name=f"MCP client ({self.label})",
            private=self.local,
        )

    def places(self) -> list[str]:
        """The platforms whose runs of this workspace the caller sees."""
        if self.local:
            return ["terminal", PLATFORM]
        return [PLATFORM, *CHAT_PLATFORMS]

    def sees(self, run: RunRecord) -> bool:
        origin = run.origin
        if origin.workspace != self.workspace or origin.platform not in self.places():
            return False
        return self.local or origin.platform == PLATFORM or not origin.private

    def may_control(self, run: RunRecord) -> bool:
        """Summarize, cancel: only the runs started over MCP (a chat thread's run is its
        people's to stop), and over stdio the terminal's too."""
        return self.sees(run) and (self.local or run.origin.platform == PLATFORM)

    def check(self, run: RunRecord) -> RunRecord:
        """The run, or the refusal an unknown id gets (another workspace's run is not named)."""
        if not self.sees(run):
            raise NotFoundError(f"No run {run.run_id} here.")
        return run


STDIO = Caller(workspace="", label="stdio")


class Tokens:
    """RESEARCH_BOT_MCP_TOKENS: each bearer token and the workspace it stands for."""

    def __init__(self, table: dict[str, str]) -> None:
        self._table = [(token.encode(), workspace) for token, workspace in table.items()]

    @classmethod
    def parse(cls, secret: SecretStr | None) -> Tokens:
        """The tokens of the setting; a bad one is one line that never repeats a token."""
        if secret is None:
            return cls({})
        what = 'RESEARCH_BOT_MCP_TOKENS must be JSON {"<token>": "<workspace>"}'
        try:
            table = json.loads(secret.get_secret_value())
        except json.JSONDecodeError:
            raise ConfigError(f"{what}; it is not valid JSON.") from None
        if not isinstance(table, dict):
            raise ConfigError(f"{what}.")
        for n, (token, workspace) in enumerate(table.items(), start=1):
            if not isinstance(workspace, str) or not workspace.strip():
                raise ConfigError(f"{what}: token {n} has no workspace name.")
            if len(workspace) > MAX_WORKSPACE_CHARS or workspace != workspace.strip():
                raise ConfigError(f"{what}: token {n}'s workspace name is not a plain name.")
            if len(token) < 16:
                raise ConfigError(f"{what}: token {n} is shorter than 16 characters.")
        return cls(table)

    def __bool__(self) -> bool:
        return bool(self._table)

    def caller(self, authorization: str | None) -> Caller | None:
        """The caller an `Authorization: Bearer …` header stands for; None for none or a wrong
        one. Every token is compared, in constant time, so the time taken names none."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        given = authorization[len("bearer ") :].strip().encode()
        found: str | None = None
        for token, workspace in self._table:
            if hmac.compare_digest(token, given):
                found = workspace
        return None if found is None else Caller(workspace=found, label=found)
