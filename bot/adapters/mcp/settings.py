"""The MCP server's own settings, read once where it is served (`research-bot mcp serve`,
`serve mcp`) from the environment and `.env`, as the bot's settings are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.errors import ConfigError


class McpServeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    tokens: SecretStr | None = Field(default=None, alias="RESEARCH_BOT_MCP_TOKENS")
    """JSON `{"<token>": "<workspace>"}`: the bearer tokens taken over HTTP, each with the
    workspace whose runs its caller starts and sees."""
    port: int = Field(default=8765, ge=1, le=65_535, alias="RESEARCH_BOT_MCP_PORT")
    """The port of the MCP server over HTTP."""
    wait_s: float = Field(default=120, gt=0, le=3_600, alias="RESEARCH_BOT_MCP_WAIT_S")
    """How long the `research` tool waits for the report before it answers with the run's id."""

    @field_validator("tokens", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


def load_mcp_settings(values: Mapping[str, Any] | None = None) -> McpServeSettings:
    """From `values` (tests), else the environment; a bad value is one line naming the setting
    (never its value: it may be a token)."""
    try:
        return McpServeSettings(**values) if values is not None else McpServeSettings()
    except ValidationError as error:
        problem = error.errors()[0]
        name = ".".join(str(part) for part in problem["loc"])
        raise ConfigError(f"{name}: {problem['msg']}.") from None
