"""The deployment files hold together: docker-compose.yml (PostgreSQL and two replicas) read as
Compose reads it, and checked against what the bot actually knows (its settings, its port)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import make_url

from bot.adapters.mcp.settings import McpServeSettings
from bot.config import Settings

ROOT = Path(__file__).resolve().parent.parent
SETTING_NAMES = {
    field.alias
    for model in (Settings, McpServeSettings)  # the MCP server's own, read where it serves
    for field in model.model_fields.values()
    if field.alias
}


def interpolated(value: str, env: dict[str, str]) -> str:
    """Compose's `${NAME}` and `${NAME:?message}` with `env`'s values."""
    return re.sub(r"\$\{(\w+)(?::\?[^}]*)?\}", lambda m: env[m.group(1)], value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_postgres_is_checked_healthy_and_keeps_its_data_on_a_volume(
    compose: dict[str, Any],
) -> None:
    postgres = compose["services"]["postgres"]

    assert postgres["image"].startswith("postgres:18")
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    # PostgreSQL 18's image keeps its data below /var/lib/postgresql (no longer …/data).
    volume, mount = postgres["volumes"][0].split(":")
    assert mount == "/var/lib/postgresql"
    assert volume in compose["volumes"]
    assert postgres["restart"] == "unless-stopped"


def test_two_replicas_wait_for_the_database_and_share_it(compose: dict[str, Any]) -> None:
    services = compose["services"]
    bots = {name: s for name, s in services.items() if name != "postgres"}
    postgres_env = services["postgres"]["environment"]
    env = {"POSTGRES_PASSWORD": "pw"}

    assert sorted(bots) == ["bot-1", "bot-2"]
    published = []
    for bot in bots.values():
        assert bot["build"] == "."
        assert bot["command"] == ["research-bot", "serve"]
        assert bot["depends_on"] == {"postgres": {"condition": "service_healthy"}}
        assert bot["restart"] == "unless-stopped"
        assert bot["env_file"] == ".env"
        # Every name it sets is a setting the bot reads.
        assert set(bot["environment"]) <= SETTING_NAMES
        url = interpolated(bot["environment"]["RESEARCH_BOT_DATABASE_URL"], env)
        settings = Settings.from_mapping({"RESEARCH_BOT_DATABASE_URL": url})
        parsed = make_url(str(settings.database))
        assert (parsed.host, parsed.port) == ("postgres", 5432)
        assert parsed.username == postgres_env["POSTGRES_USER"]
        assert parsed.password == interpolated(postgres_env["POSTGRES_PASSWORD"], env)
        assert parsed.database == postgres_env["POSTGRES_DB"]
        host_port, container_port = bot["ports"][0].split(":")
        # Slack's HTTP mode listens on serve's default port, the one the Dockerfile exposes.
        assert container_port == "3000"
        assert "EXPOSE 3000" in (ROOT / "Dockerfile").read_text()
        published.append(host_port)
    assert len(set(published)) == len(published)
    # The two replicas are the same bot: one definition, nothing that sets one apart.
    assert bots["bot-1"] | {"ports": None} == bots["bot-2"] | {"ports": None}


def test_the_password_is_required_not_defaulted() -> None:
    text = (ROOT / "docker-compose.yml").read_text()

    assert "POSTGRES_PASSWORD" in text
    assert "${POSTGRES_PASSWORD}" not in text  # an unset password must stop Compose
    assert set(re.findall(r"\$\{POSTGRES_PASSWORD(:\?[^}]*)\}", text)) == {
        ":?set POSTGRES_PASSWORD in .env"
    }


def test_every_setting_the_deployment_docs_name_is_one_the_bot_reads() -> None:
    for path in [ROOT / "README.md", ROOT / "docker-compose.yml", *(ROOT / "docs").glob("*.md")]:
        named = set(re.findall(r"RESEARCH_BOT_[A-Z0-9_]*[A-Z0-9]", path.read_text()))
        assert named <= SETTING_NAMES, f"{path.name} names {sorted(named - SETTING_NAMES)}"
