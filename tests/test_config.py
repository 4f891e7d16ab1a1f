"""Settings: the documented names, their parsing, and nothing read from the machine in tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.config import Settings


def test_names_parse_as_documented() -> None:
    settings = Settings.from_mapping(
        {
            "ANTHROPIC_API_KEY": "sk-x",
            "RESEARCH_BOT_FETCH_ALLOW_HOSTS": "intranet.local, 10.0.0.5:8080,,",
            "RESEARCH_BOT_MAX_TURNS": "5",
            "RESEARCH_BOT_DEADLINE_S": "60",
            "RESEARCH_BOT_PRICES": '{"my-model": {"input": 1, "output": 2, "cache_write": 1.25,'
            ' "cache_read": 0.1}}',
        }
    )

    assert settings.fetch_allow_hosts == ["intranet.local", "10.0.0.5:8080"]
    assert (settings.max_turns, settings.deadline_s) == (5, 60)
    price = settings.price("my-model")
    assert price is not None and price.output == 2
    assert settings.price("claude-sonnet-5-5") is not None  # defaults stay


def test_an_empty_value_means_unset() -> None:
    settings = Settings.from_mapping({"ANTHROPIC_API_KEY": "  ", "TAVILY_API_KEY": ""})
    assert settings.anthropic_api_key is None and settings.tavily_api_key is None


def test_from_mapping_ignores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_BOT_MAX_TURNS", "3")
    assert Settings.from_mapping({}).max_turns == 12
    assert Settings().max_turns == 3


def test_out_of_range_values_are_refused_with_their_name() -> None:
    with pytest.raises(ValidationError, match="RESEARCH_BOT_MAX_TURNS"):
        Settings.from_mapping({"RESEARCH_BOT_MAX_TURNS": "0"})


def test_deep_research_settings_have_their_defaults_and_names() -> None:
    defaults = Settings.from_mapping({})
    assert (defaults.deep_researchers, defaults.deep_max_turns, defaults.deep_deadline_s) == (
        4,
        8,
        1800,
    )
    settings = Settings.from_mapping(
        {
            "RESEARCH_BOT_DEEP_RESEARCHERS": "2",
            "RESEARCH_BOT_DEEP_MAX_TURNS": "20",
            "RESEARCH_BOT_DEEP_DEADLINE_S": "600",
        }
    )
    assert (settings.deep_researchers, settings.deep_max_turns, settings.deep_deadline_s) == (
        2,
        20,
        600,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("RESEARCH_BOT_DEEP_RESEARCHERS", "0"),
        ("RESEARCH_BOT_DEEP_RESEARCHERS", "9"),
        ("RESEARCH_BOT_DEEP_MAX_TURNS", "0"),
        ("RESEARCH_BOT_DEEP_MAX_TURNS", "51"),
        ("RESEARCH_BOT_DEEP_DEADLINE_S", "0"),
        ("RESEARCH_BOT_DEEP_DEADLINE_S", "86401"),
    ],
)
def test_deep_research_settings_out_of_range_are_refused(name: str, value: str) -> None:
    with pytest.raises(ValidationError, match=name):
        Settings.from_mapping({name: value})


@pytest.mark.parametrize(
    "url", ["mysql://u:pw@h/db", "postgresql://u:pw@h:port/db", "postgres://u:pw@h:5x/db"]
)
def test_a_database_url_that_is_no_postgresql_url_is_refused_at_start(url: str) -> None:
    with pytest.raises(ValidationError, match="RESEARCH_BOT_DATABASE_URL"):
        Settings.from_mapping({"RESEARCH_BOT_DATABASE_URL": url})


def test_the_database_is_the_url_when_one_is_set_and_the_file_otherwise(tmp_path: Path) -> None:
    url = "postgresql://bot:secret@db.internal:5432/research"
    assert Settings.from_mapping({"RESEARCH_BOT_DATABASE_URL": url}).database == url
    plain = Settings.from_mapping({"RESEARCH_BOT_DB": str(tmp_path / "x.sqlite3")})
    assert plain.database == tmp_path / "x.sqlite3"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ANTHROPIC_BASE_URL", "not-a-url"),
        ("ANTHROPIC_BASE_URL", "ftp://proxy.example"),
        ("OPENAI_BASE_URL", "localhost:11434/v1"),
        ("TAVILY_BASE_URL", "https://"),
        ("SLACK_API_URL", "http://127.0.0.1:99999/api/"),
        ("DISCORD_API_URL", "http://127.0.0.1:port/api"),
    ],
)
def test_an_api_address_that_is_not_a_web_address_is_refused_with_its_name(
    name: str, value: str
) -> None:
    with pytest.raises(ValidationError, match=f"{name}[^$]*is not an http\\(s\\) address"):
        Settings.from_mapping({name: value})


def test_api_addresses_as_people_write_them_are_kept() -> None:
    settings = Settings.from_mapping(
        {
            "ANTHROPIC_BASE_URL": "https://gateway.example/anthropic",
            "OPENAI_BASE_URL": "http://localhost:11434/v1",
            "SLACK_API_URL": "http://127.0.0.1:8080/api/",
            "GITHUB_API_URL": "",
        }
    )
    assert settings.anthropic_base_url == "https://gateway.example/anthropic"
    assert settings.openai_base_url == "http://localhost:11434/v1"
    assert settings.slack_api_url == "http://127.0.0.1:8080/api/"
    assert settings.github_api_url is None


@pytest.mark.parametrize(
    "entry", ["intranet/x", "http://intranet", "user@intranet", "intranet:99999", "[nope]:80"]
)
def test_an_allow_list_entry_that_is_not_host_port_is_refused_with_the_setting(entry: str) -> None:
    with pytest.raises(ValidationError, match="RESEARCH_BOT_FETCH_ALLOW_HOSTS") as refused:
        Settings.from_mapping({"RESEARCH_BOT_FETCH_ALLOW_HOSTS": f"wiki.corp, {entry}"})
    assert repr(entry) in str(refused.value)
