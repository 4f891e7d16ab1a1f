"""Settings: every knob of the bot, read once from the environment and `.env`, validated at start."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from bot.addresses import is_allow_entry, is_web_address
from bot.errors import ConfigError


class Price(BaseModel):
    """USD per million tokens for one model."""

    input: float
    output: float
    cache_write: float
    """5-minute cache writes."""
    cache_read: float


# One table, overridable with RESEARCH_BOT_PRICES (JSON). Rates as published for these models.
DEFAULT_PRICES: dict[str, Price] = {
    "claude-sonnet-5-5": Price(input=2.0, output=10.0, cache_write=2.5, cache_read=0.10),
    "claude-haiku-5-5": Price(input=0.10, output=0.50, cache_write=0.125, cache_read=0.01),
    "claude-sonnet-5": Price(input=2.0, output=10.0, cache_write=2.5, cache_read=0.20),
    "claude-opus-5-5": Price(input=4.0, output=20.0, cache_write=5.0, cache_read=0.20),
    "claude-sonnet-4-6": Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30),
    "claude-haiku-4-5": Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.10),
    # OpenAI charges nothing extra to write its automatic prompt cache: a write is plain input.
    "gpt-4.1": Price(input=2.0, output=8.0, cache_write=2.0, cache_read=0.50),
    "gpt-4.1-mini": Price(input=0.40, output=1.60, cache_write=0.40, cache_read=0.10),
    "gpt-4.1-nano": Price(input=0.10, output=0.40, cache_write=0.10, cache_read=0.025),
}
ProviderName = Literal["anthropic", "openai"]
PROVIDERS: tuple[ProviderName, ...] = ("anthropic", "openai")
API_ADDRESSES = (
    *("anthropic_base_url", "openai_base_url", "tavily_base_url", "brave_api_url"),
    *("arxiv_api_url", "github_api_url", "slack_api_url", "discord_api_url"),
)
"""Settings that are the address of an API: http(s) URLs, checked at start."""


def _default_db() -> Path:
    return Path(platformdirs.user_data_dir("research-bot")) / "research-bot.sqlite3"


class Settings(BaseSettings):
    """Everything the bot can be told. Names are the environment variables, case-insensitive."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    anthropic_api_key: SecretStr | None = Field(default=None, alias="ANTHROPIC_API_KEY")
    """Key for the Messages API (console.anthropic.com → API keys)."""
    anthropic_base_url: str | None = Field(default=None, alias="ANTHROPIC_BASE_URL")
    """The SDK's own variable: a proxy or a local fake of the Messages API."""
    model: str = Field(default="claude-sonnet-5-5", alias="RESEARCH_BOT_MODEL")
    """The research model."""
    fast_model: str = Field(default="claude-haiku-5-5", alias="RESEARCH_BOT_FAST_MODEL")
    """The cheap model that compresses large tool output."""
    prices: Annotated[dict[str, Price], NoDecode] = Field(
        default_factory=lambda: dict(DEFAULT_PRICES), alias="RESEARCH_BOT_PRICES"
    )
    """USD per million tokens by model id; JSON in the environment, merged over the defaults."""

    openai_api_key: SecretStr | None = Field(default=None, alias="OPENAI_API_KEY")
    """Key for an OpenAI-compatible API (OpenAI, Azure, OpenRouter …); a local server needs none."""
    openai_base_url: str | None = Field(default=None, alias="OPENAI_BASE_URL")
    """An OpenAI-compatible server's `/v1` address (default OpenAI's), e.g. Ollama's
    `http://localhost:11434/v1`: with it alone the bot runs on a local model, no key at all."""
    openai_model: str = Field(default="gpt-4.1-mini", alias="RESEARCH_BOT_OPENAI_MODEL")
    """The research model on the OpenAI-compatible provider (a local server: the model's name)."""
    openai_fast_model: str | None = Field(default=None, alias="RESEARCH_BOT_OPENAI_FAST_MODEL")
    """Its cheap model for compression and checks; unset: the research model."""
    providers: Annotated[list[ProviderName], NoDecode] = Field(
        default_factory=list, alias="RESEARCH_BOT_PROVIDERS"
    )
    """Model providers in the order they are tried, comma-separated: the first serves every
    call, the next one a call the first failed after its retries (overloaded, down). Unset:
    `anthropic,openai`, each only when configured."""

    tavily_api_key: SecretStr | None = Field(default=None, alias="TAVILY_API_KEY")
    """Tavily search; without it the key-less search provider is used."""
    tavily_base_url: str | None = Field(default=None, alias="TAVILY_BASE_URL")
    brave_api_key: SecretStr | None = Field(default=None, alias="BRAVE_API_KEY")
    """Brave Search, tried when Tavily fails (or has no key), before the key-less provider."""
    brave_api_url: str | None = Field(default=None, alias="BRAVE_API_URL")
    """Brave's API base (default `https://api.search.brave.com/res/v1`)."""
    arxiv_api_url: str | None = Field(default=None, alias="ARXIV_API_URL")
    """arXiv's API base for `arxiv_search` (default `https://export.arxiv.org/api`)."""
    github_token: SecretStr | None = Field(default=None, alias="GITHUB_TOKEN")
    """Optional: GitHub's rate limits for `github_search` and READMEs are far higher with one."""
    github_api_url: str | None = Field(default=None, alias="GITHUB_API_URL")
    """GitHub's REST API base (default `https://api.github.com`; GitHub Enterprise: `…/api/v3`)."""

    db_path: Path = Field(default_factory=_default_db, alias="RESEARCH_BOT_DB")
    """The SQLite file that keeps every run (unless RESEARCH_BOT_DATABASE_URL names a server)."""
    database_url: SecretStr | None = Field(default=None, alias="RESEARCH_BOT_DATABASE_URL")
    """`postgresql://user:password@host:5432/db`: runs in PostgreSQL, shared by all replicas."""
    run_lease_s: float = Field(default=60, ge=3, le=3600, alias="RESEARCH_BOT_RUN_LEASE_S")
    """How long a claim on a run lasts unrenewed; after it, another replica takes the run over."""
    db_busy_timeout_s: float = Field(
        default=15, ge=0, le=600, alias="RESEARCH_BOT_DB_BUSY_TIMEOUT_S"
    )
    """How long a write waits for another process holding the database before giving up."""
    export_fonts: Path | None = Field(default=None, alias="RESEARCH_BOT_EXPORT_FONTS")
    """A folder of extra fonts (.ttf, .otf, .ttc) for PDF export, tried after the system's: for
    a script no installed font covers (a CJK font on a machine where you cannot install one)."""
    mcp_config: Path | None = Field(default=None, alias="RESEARCH_BOT_MCP_CONFIG")
    """An `mcpServers` JSON file: MCP servers whose tools runs may use (README: MCP servers)."""

    max_turns: int = Field(default=12, ge=1, le=100, alias="RESEARCH_BOT_MAX_TURNS")
    """Model turns with tools before the run is asked to write up."""
    deadline_s: float = Field(default=900, gt=0, le=86_400, alias="RESEARCH_BOT_DEADLINE_S")
    """Wall-clock seconds of research before the run is asked to write up."""
    synthesis_timeout_s: float = Field(default=180, gt=0, alias="RESEARCH_BOT_SYNTHESIS_TIMEOUT_S")
    """Time allowed for the final write-up call, on top of the deadline."""
    model_timeout_s: float = Field(default=120, gt=0, alias="RESEARCH_BOT_MODEL_TIMEOUT_S")
    """Longest single model request; never more than what is left of the deadline."""
    model_max_retries: int = Field(default=2, ge=0, le=10, alias="RESEARCH_BOT_MODEL_MAX_RETRIES")
    """Retries the Anthropic SDK makes on 408/409/429/5xx/529 (its one retry policy)."""
    max_output_tokens: int = Field(default=8_000, ge=256, alias="RESEARCH_BOT_MAX_OUTPUT_TOKENS")
    """Output budget per turn (the report is one turn)."""
    tool_timeout_s: float = Field(default=30, gt=0, alias="RESEARCH_BOT_TOOL_TIMEOUT_S")
    """Each tool call's own timeout."""
    tool_timeouts: Annotated[dict[str, Annotated[float, Field(gt=0)]], NoDecode] = Field(
        default_factory=dict, alias="RESEARCH_BOT_TOOL_TIMEOUTS"
    )
    """Per-tool timeouts over `tool_timeout_s`, JSON by tool name: `{"arxiv_search": 45}`."""
    compress_threshold_tokens: int = Field(
        default=3_000, ge=100, alias="RESEARCH_BOT_COMPRESS_THRESHOLD_TOKENS"
    )
    """Tool output above this many (estimated) tokens is summarized by the fast model."""
    max_concurrent_runs: int = Field(
        default=4, ge=1, le=200, alias="RESEARCH_BOT_MAX_CONCURRENT_RUNS"
    )
    """Runs that research at once; more wait in a queue."""
    identify: bool = Field(default=True, alias="RESEARCH_BOT_IDENTIFY")
    """Settle which company a company run is about before researching: one search, one fast-model call."""
    reuse_days: int = Field(default=7, ge=0, le=365, alias="RESEARCH_BOT_REUSE_DAYS")
    """Days back a run reuses its workspace's report on the same company and pages read; 0: off."""
    choice_timeout_s: float = Field(default=120, gt=0, alias="RESEARCH_BOT_CHOICE_TIMEOUT_S")
    """How long a run waits for a person to choose among namesakes before taking the most likely."""

    deep_researchers: int = Field(default=4, ge=1, le=8, alias="RESEARCH_BOT_DEEP_RESEARCHERS")
    """Researchers a deep run sends out in parallel; the whole deep run takes one run slot."""
    deep_max_turns: int = Field(default=8, ge=1, le=50, alias="RESEARCH_BOT_DEEP_MAX_TURNS")
    """Model turns with tools each researcher of a deep run may take."""
    deep_deadline_s: float = Field(
        default=1_800, gt=0, le=86_400, alias="RESEARCH_BOT_DEEP_DEADLINE_S"
    )
    """Wall-clock seconds for a whole deep run: plan, researchers, draft and final report."""

    followup_max_turns: int = Field(default=3, ge=1, le=20, alias="RESEARCH_BOT_FOLLOWUP_MAX_TURNS")
    """Turns with tools a follow-up may take when the run's evidence falls short; then it answers."""
    followup_max_cost_usd: float | None = Field(
        default=0.25, gt=0, alias="RESEARCH_BOT_FOLLOWUP_MAX_COST_USD"
    )
    """A follow-up whose spend reaches this stops researching and answers. Empty: no limit."""
    max_run_cost_usd: float | None = Field(default=2.0, gt=0, alias="RESEARCH_BOT_MAX_RUN_COST_USD")
    """A run whose spend reaches this writes up from what it has (`budget_synthesized`); a deep
    run counts every researcher. Empty: no limit. A run with an unpriced model is not held to it."""
    daily_budget_usd: float | None = Field(
        default=None, gt=0, alias="RESEARCH_BOT_DAILY_BUDGET_USD"
    )
    """Spend per workspace per UTC day: past it, new runs are refused until midnight UTC."""
    user_runs_per_hour: int = Field(
        default=10, ge=0, le=10_000, alias="RESEARCH_BOT_USER_RUNS_PER_HOUR"
    )
    """Runs one person (in Slack or Discord) may start in any hour; 0: no limit."""
    watch_tick_s: float = Field(default=60, gt=0, le=3_600, alias="RESEARCH_BOT_WATCH_TICK_S")
    """How often `serve` looks for due watches and starts their runs."""
    max_watches: int = Field(default=20, ge=0, le=10_000, alias="RESEARCH_BOT_MAX_WATCHES")
    """Watches one workspace (Slack team, Discord guild, the terminal) may keep."""

    fetch_allow_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, alias="RESEARCH_BOT_FETCH_ALLOW_HOSTS"
    )
    """`host[:port]` entries the fetch guard lets through although private (intranets, tests)."""

    summarize_emoji: str = Field(default="memo", alias="RESEARCH_BOT_SUMMARIZE_EMOJI")
    """Reaction name that means "Summarize now" (Slack name; Discord uses its unicode form)."""

    slack_bot_token: SecretStr | None = Field(default=None, alias="SLACK_BOT_TOKEN")
    slack_app_token: SecretStr | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_signing_secret: SecretStr | None = Field(default=None, alias="SLACK_SIGNING_SECRET")
    slack_api_url: str | None = Field(default=None, alias="SLACK_API_URL")
    slack_streaming: Literal["auto", "on", "off"] = Field(
        default="auto", alias="RESEARCH_BOT_SLACK_STREAMING"
    )
    """A run's progress in Slack: `auto` streams a live plan into its thread (`chat.startStream`)
    and falls back to the edited status message where streaming is unavailable; `on` does the
    same but logs every fallback as a warning; `off` only edits the status message."""
    discord_token: SecretStr | None = Field(default=None, alias="DISCORD_TOKEN")
    discord_api_url: str | None = Field(default=None, alias="DISCORD_API_URL")

    context_window_tokens: int = Field(
        default=200_000, ge=1_000, alias="RESEARCH_BOT_CONTEXT_WINDOW_TOKENS"
    )
    """The research model's context window: past 75% of it, older tool results are compacted."""

    extract_workers: int = Field(default=1, ge=1, le=32, alias="RESEARCH_BOT_EXTRACT_WORKERS")
    """Processes that turn pages into text (about 65 MB each), started at the first page read.
    One reads about 250 pages a second (bench/scale.py); a second one costs another 65 MB."""
    extract_timeout_s: float = Field(
        default=10, gt=0, le=300, alias="RESEARCH_BOT_EXTRACT_TIMEOUT_S"
    )
    """Longest one page may take to extract; its worker is then replaced and the page refused."""
    fetch_max_concurrent: int = Field(
        default=32, ge=1, le=1_000, alias="RESEARCH_BOT_FETCH_MAX_CONCURRENT"
    )
    """Pages read at once by the whole process; more wait for a slot."""
    fetch_max_mib_in_flight: int = Field(
        default=20, ge=1, le=4_096, alias="RESEARCH_BOT_FETCH_MAX_MIB_IN_FLIGHT"
    )
    """MiB of page bodies held at once (two of the largest pages); a fetch past it is refused."""

    @field_validator(
        *("anthropic_api_key", "openai_api_key", "openai_fast_model", "tavily_api_key"),
        *("brave_api_key", "github_token", "slack_bot_token", "slack_app_token"),
        *("slack_signing_secret", "discord_token", "mcp_config", *API_ADDRESSES),
        *("max_run_cost_usd", "daily_budget_usd", "followup_max_cost_usd"),
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        """`KEY=` in a .env file or a compose file means not set, not an empty key; for a cost
        limit (`RESEARCH_BOT_MAX_RUN_COST_USD=`) it turns the limit off."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("database_url", mode="after")
    @classmethod
    def _a_postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        url = value.get_secret_value()
        if not url.startswith(("postgresql://", "postgres://")):
            raise ValueError("must start with postgresql:// (for SQLite, set RESEARCH_BOT_DB)")
        from sqlalchemy import make_url  # only when a URL is set: the import is not free
        from sqlalchemy.exc import ArgumentError

        try:  # the port and the rest read now, not at the first query (and never echoed)
            make_url(url).port  # noqa: B018
        except (ValueError, ArgumentError):
            raise ValueError(
                "is not a PostgreSQL URL: postgresql://user:password@host:5432/database"
            ) from None
        return value

    @property
    def database(self) -> str | Path:
        """Where runs are kept: the PostgreSQL URL when one is set, else the SQLite file."""
        return self.database_url.get_secret_value() if self.database_url else self.db_path

    @field_validator(*API_ADDRESSES)
    @classmethod
    def _api_address(cls, value: str | None) -> str | None:
        """Checked at start: a wrong address would otherwise fail inside each run."""
        if value is not None and not is_web_address(value):
            raise ValueError(f"{value!r} is not an http(s) address, e.g. https://api.example.com")
        return value

    @field_validator("fetch_allow_hosts")
    @classmethod
    def _allow_entries(cls, entries: list[str]) -> list[str]:
        """Checked here (the page reader checks again) so that a refusal names the setting."""
        for entry in entries:
            if not is_allow_entry(entry):
                raise ValueError(f"{entry!r} is not host[:port], e.g. intranet.local:8080")
        return entries

    @field_validator("fetch_allow_hosts", "providers", mode="before")
    @classmethod
    def _csv(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("prices", "tool_timeouts", mode="before")
    @classmethod
    def _json(cls, value: Any) -> Any:
        """JSON text, as the environment gives it (also through `from_mapping`)."""
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"not valid JSON ({error.msg} at character {error.pos})") from None

    @field_validator("prices", mode="after")
    @classmethod
    def _merge_prices(cls, value: dict[str, Price]) -> dict[str, Price]:
        return {**DEFAULT_PRICES, **value}

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Settings:
        """Settings from a plain mapping only (no environment, no `.env`): what tests use."""
        return _MappingOnly(**values)

    def price(self, model: str) -> Price | None:
        return self.prices.get(model)

    def unpriced_models(self) -> list[str]:
        """Configured providers' models with no price: their runs show "cost unknown", never $0."""
        models = {
            "anthropic": (self.model, self.fast_model),
            "openai": (self.openai_model, self.openai_fast()),
        }
        used = [m for name in self.provider_order() for m in models[name]]
        return [m for m in dict.fromkeys(used) if m not in self.prices]

    def openai_fast(self) -> str:
        return self.openai_fast_model or self.openai_model

    def provider_order(self) -> list[ProviderName]:
        """The providers to try, in order; empty when none is configured. A provider that
        RESEARCH_BOT_PROVIDERS names but that is not configured is a ConfigError."""
        configured = {
            "anthropic": self.anthropic_api_key is not None,
            "openai": self.openai_api_key is not None or self.openai_base_url is not None,
        }
        if not self.providers:
            return [name for name in PROVIDERS if configured[name]]
        order = list(dict.fromkeys(self.providers))
        setting = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY or OPENAI_BASE_URL"}
        for name in order:
            if not configured[name]:
                raise ConfigError(
                    f"RESEARCH_BOT_PROVIDERS names {name}, which is not configured: "
                    f"set {setting[name]}."
                )
        return order


class _MappingOnly(Settings):
    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        *sources: PydanticBaseSettingsSource,
        **named: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)
