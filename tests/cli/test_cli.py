"""The `research-bot` command end to end, as a subprocess against the local fakes."""

from __future__ import annotations

import json
import re
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.agent.events import Usage, UsageRecorded
from bot.domain import Origin, Request
from bot.store.runs import Store
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb
from tests.process import Cli, wait_for_line

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n\n## Overview\nFounded 2015 [2].\n"


@pytest.fixture
def cli(tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Cli:
    return Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))


async def test_without_a_key_it_says_what_to_set_and_exits_2(cli: Cli) -> None:
    del cli.env["ANTHROPIC_API_KEY"]
    code, _, err = await cli.run("research", "Acme Robotics")
    assert code == 2
    assert "ANTHROPIC_API_KEY" in err and "console.anthropic.com" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2


async def test_an_invalid_setting_is_one_clear_line(cli: Cli) -> None:
    cli.env["RESEARCH_BOT_MAX_TURNS"] = "lots"
    code, _, err = await cli.run("research", "Acme Robotics")
    assert code == 2 and "RESEARCH_BOT_MAX_TURNS" in err and "Traceback" not in err


async def test_an_empty_topic_is_refused(cli: Cli) -> None:
    code, _, err = await cli.run("research", "   ")
    assert code == 2 and "what to research" in err


async def test_research_writes_the_report_then_history_and_show_find_it(
    cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    anthropic_api.script(
        reply_tools(
            [
                ("web_search", {"query": "Acme Robotics"}),
                ("read_page", {"url": web.url + ARTICLE_PATH}),
            ]
        ),
        reply_text(REPORT),
    )

    code, out, err = await cli.run("research", "Acme Robotics")

    assert code == 0, err
    path = Path(out.strip())
    assert path.parent == cli.cwd and path.name.startswith("acme-robotics-")
    markdown = path.read_text()
    assert "## TL;DR" in markdown and "## Sources" in markdown and "ending: completed" in markdown
    assert "Searched: Acme Robotics" in err

    code, out, _ = await cli.run("history", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 1
    row = rows[0]
    assert {
        "run_id",
        "topic",
        "mode",
        "depth",
        "status",
        "termination_reason",
        "created_at",
        "turns",
        "cost_usd",
    } <= row.keys()
    assert (row["topic"], row["depth"], row["status"], row["termination_reason"]) == (
        "Acme Robotics",
        "quick",
        "done",
        "completed",
    )

    code, out, _ = await cli.run("show", row["run_id"], "--trajectory")
    steps = json.loads(out)
    assert steps["run_id"] == row["run_id"] and steps["total_turns"] == 2
    assert steps["termination_reason"] == "completed"
    assert [len(t["tool_calls"]) for t in steps["turns"]] == [2, 0]
    assert steps["turns"][-1]["final"] is True and steps["turns"][-1]["synthesis"] is False

    code, out, _ = await cli.run("show", row["run_id"].upper())
    assert code == 0 and out == markdown

    code, _, err = await cli.run("show", "nosuchrun")
    assert code == 1 and "No run" in err


async def test_ctrl_c_once_summarizes_now(
    cli: Cli, anthropic_api: FakeAnthropic, tmp_path: Path
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "acme"})]),
        reply_text("never delivered"),
        reply_text(REPORT),
    )
    first = anthropic_api.hold()
    process = await cli.start("research", "Acme", "--output", str(tmp_path / "r.md"))
    await anthropic_api.wait_for_requests(1)
    first.set()
    second = anthropic_api.hold()
    await anthropic_api.wait_for_requests(2)
    assert process.stderr is not None
    await wait_for_line(process.stderr, "Searched: acme")

    process.send_signal(signal.SIGINT)
    await anthropic_api.wait_for_cancelled(1)
    second.set()
    out, _ = await process.communicate()

    assert process.returncode == 0
    assert out.decode().strip() == str(tmp_path / "r.md")
    assert "ending: forced_synthesized" in (tmp_path / "r.md").read_text()


async def test_ctrl_c_twice_cancels(cli: Cli, anthropic_api: FakeAnthropic) -> None:
    anthropic_api.hold()
    process = await cli.start("research", "Acme")
    assert process.stderr is not None
    await wait_for_line(process.stderr, "researching")
    await anthropic_api.wait_for_requests(1)

    process.send_signal(signal.SIGINT)
    await wait_for_line(process.stderr, "Summarizing now… (Ctrl-C again to cancel)")
    while "Nothing has been gathered yet" not in (
        said := (await process.stderr.readline()).decode()
    ):
        assert said, "the process ended before saying there was nothing to summarize"
    process.send_signal(signal.SIGINT)
    _, err = await process.communicate()

    assert process.returncode == 1
    assert "Cancelled" in err.decode()
    # The second Ctrl-C is Cancel, and the notice in between says so, nothing else.
    assert "Nothing has been gathered yet" in said and "Ctrl-C again cancels" in said
    assert "press again in a moment" not in said


async def test_serve_without_a_platform_says_which_tokens_to_set(cli: Cli) -> None:
    code, _, err = await cli.run("serve")
    assert code == 2
    assert "SLACK_BOT_TOKEN" in err and "DISCORD_TOKEN" in err and "Traceback" not in err


async def test_serve_runs_slack_and_discord_in_one_process_and_stops_on_sigterm(
    cli: Cli, tmp_path: Path
) -> None:
    async with FakeSlack() as slack, FakeDiscord() as discord:
        cli.env |= {
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_APP_TOKEN": slack.app_token,
            "SLACK_API_URL": slack.api_url,
            "DISCORD_TOKEN": discord.token,
            "DISCORD_API_URL": discord.api_url,
        }
        process = await cli.start("serve")
        await slack.wait_for("apps.connections.open")
        await discord.wait_identified()

        process.send_signal(signal.SIGTERM)
        _, err = await process.communicate()

    assert process.returncode == 0, err.decode()
    assert "serving slack, discord" in err.decode()


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--deadline", "999999"], {}, "--deadline 999999.0"),
        (["--deadline", "1e9"], {}, "--deadline 1000000000.0"),
        (["--max-turns", "0"], {}, "--max-turns 0"),
        (["--depth", "deep", "--max-turns", "51"], {}, "--max-turns 51"),
        (["--depth", "deep", "--deadline", "0"], {}, "--deadline 0.0"),
        ([], {"RESEARCH_BOT_PRICES": "{not json"}, "not valid JSON"),
        ([], {"RESEARCH_BOT_FETCH_ALLOW_HOSTS": "intranet/x"}, "RESEARCH_BOT_FETCH_ALLOW_HOSTS"),
        ([], {"ANTHROPIC_BASE_URL": "not-a-url"}, "ANTHROPIC_BASE_URL"),
    ],
)
async def test_command_line_values_are_checked_like_settings(
    cli: Cli, anthropic_api: FakeAnthropic, args: list[str], env: dict[str, str], named: str
) -> None:
    cli.env |= env
    code, _, err = await cli.run("research", "Acme", *args)
    assert code == 2 and named in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and anthropic_api.requests == []
    # The option the person typed, never the setting's field name behind it.
    assert not re.search(r"\b(deep_)?(max_turns|deadline_s)\b", err), err
    assert not Path(cli.env["RESEARCH_BOT_DB"]).exists()  # refused before a run is recorded


async def test_a_deep_run_is_stored_and_listed_as_deep(
    cli: Cli, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.hold()
    process = await cli.start(
        "research", "roads, Ireland", "--mode", "contracts", "--depth", "deep"
    )
    await anthropic_api.wait_for_requests(1)

    code, out, _ = await cli.run("history", "--json")
    [row] = json.loads(out)
    assert code == 0
    assert (row["topic"], row["mode"], row["depth"]) == ("roads, Ireland", "contracts", "deep")
    code, out, _ = await cli.run("history")
    assert code == 0 and re.search(r" contracts +deep +running ", out), out

    process.send_signal(signal.SIGTERM)
    await process.communicate()
    assert process.returncode == 128 + signal.SIGTERM
    code, out, _ = await cli.run("history", "--json")
    assert [(r["depth"], r["status"]) for r in json.loads(out)] == [("deep", "interrupted")]


async def test_an_unknown_depth_is_refused_and_help_names_the_depths(
    cli: Cli, anthropic_api: FakeAnthropic
) -> None:
    code, _, err = await cli.run("research", "Acme", "--depth", "nonsense")
    assert code == 2 and "--depth" in err and "'nonsense' is not one of" in err
    assert "Traceback" not in err and anthropic_api.requests == []
    code, out, _ = await cli.run("research", "--help")
    assert code == 0 and "--depth" in out and "quick" in out and "deep" in out


async def test_control_characters_never_reach_the_store_or_the_screen(
    cli: Cli, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_text(REPORT))
    code, _, err = await cli.run("research", "Acme\x1b]0;pwned\x07 \x1b[2JRobotics\u202e")
    assert code == 0, err
    code, out, _ = await cli.run("history")
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    code, out, _ = await cli.run("history", "--json")
    assert json.loads(out)[0]["topic"] == "Acme Robotics"


async def test_a_model_without_a_price_says_cost_unknown(
    cli: Cli, anthropic_api: FakeAnthropic
) -> None:
    cli.env["RESEARCH_BOT_MODEL"] = "claude-unpriced-1"
    anthropic_api.script(reply_text(REPORT))
    code, _, err = await cli.run("research", "Acme")
    assert code == 0 and "no price is known for claude-unpriced-1" in err
    code, out, _ = await cli.run("history")
    assert "cost unknown" in out and "$0.00" not in out
    code, out, _ = await cli.run("history", "--json")
    assert json.loads(out)[0]["cost_usd"] is None


async def test_a_german_request_gets_a_german_report_and_an_unknown_language_is_refused(
    cli: Cli, anthropic_api: FakeAnthropic
) -> None:
    german = "# Acme Robotics GmbH\n\n## Kurzfassung\n- Baut Roboter [1].\n\n## Überblick\nSeit 2015 [1].\n"
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics"})]), reply_text(german)
    )

    code, out, err = await cli.run("research", "Acme Robotics", "--language", "de-DE")

    assert code == 0, err
    task = json.dumps(anthropic_api.requests[0]["messages"][0], ensure_ascii=False)
    assert "Write the report in German (Deutsch)" in task
    markdown = Path(out.strip()).read_text()
    assert "*Unternehmensrecherche · " in markdown
    assert "## Kurzfassung\n\n- Baut Roboter [1]." in markdown
    assert "## Quellen" in markdown and "Ende: completed" in markdown
    assert "## TL;DR" not in markdown and "## Sources" not in markdown

    code, _, err = await cli.run("research", "Acme Robotics", "--language", "tlh")
    assert code == 2 and "de, en, es, fr, it, ja, pt, ru" in err


async def test_without_language_the_topic_decides(cli: Cli, anthropic_api: FakeAnthropic) -> None:
    anthropic_api.script(reply_text("# Яндекс\n\n## Кратко\n- Поисковая компания.\n"))

    code, out, err = await cli.run("research", "Яндекс")

    assert code == 0, err
    assert "Write the report in Russian (Русский)" in json.dumps(
        anthropic_api.requests[0]["messages"][0], ensure_ascii=False
    )
    markdown = Path(out.strip()).read_text()
    assert "*Исследование компании · " in markdown
    assert "## Кратко\n\n- Поисковая компания." in markdown


async def _seed(db: Path, runs: list[tuple[int, Origin, float | None]]) -> None:
    """Stored runs: (days ago, where and who, cost; None: a model without a price took part)."""
    now = datetime.now(UTC)
    for days_ago, origin, cost in runs:
        async with Store.connect(db, clock=lambda d=days_ago: now - timedelta(days=d)) as store:
            run = await store.create_run(Request(topic="Acme", origin=origin))
            used = Usage(input_tokens=10, cost_usd=cost)
            await store.append_event(run.run_id, UsageRecorded(turn=1, model="m", usage=used))


async def test_usage_shows_spend_per_day_and_per_person_for_each_workspace(cli: Cli) -> None:
    alice = Origin(platform="slack", workspace="T1", channel="C1", user="U1", user_name="alice")
    bob = Origin(platform="slack", workspace="T1", channel="C1", user="U2", user_name="bob")
    await _seed(
        Path(cli.env["RESEARCH_BOT_DB"]),
        [(0, Origin(), 0.5), (0, alice, 0.25), (1, alice, None), (1, bob, 1.0), (9, bob, 7.0)],
    )
    today = datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)

    code, out, err = await cli.run("usage", "--days", "2", "--json")

    assert code == 0, err
    slack, terminal = json.loads(out)
    assert (terminal["platform"], terminal["total"]["cost_usd"]) == ("terminal", 0.5)
    assert terminal["by_person"][0]["name"] == "terminal"
    assert (slack["workspace"], slack["since"], slack["days"]) == ("T1", str(yesterday), 2)
    assert (slack["total"]["runs"], slack["total"]["cost_usd"], slack["total"]["unpriced"]) == (
        3,
        1.25,
        1,
    )
    days = [(d["key"], d["runs"], d["cost_usd"]) for d in slack["by_day"]]
    assert days == [(str(today), 1, 0.25), (str(yesterday), 2, 1.0)]
    people = [(p["name"], p["runs"], p["cost_usd"], p["unpriced"]) for p in slack["by_person"]]
    assert people == [("bob", 1, 1.0, 0), ("alice", 2, 0.25, 1)]

    code, out, _ = await cli.run("usage", "--days", "1")
    assert code == 0
    assert out.splitlines() == [
        "slack T1:",
        f"  Total for the last 1 day (UTC, since {today}): $0.25 · 1 run",
        "  By day:",
        f"  • {today} · $0.25 · 1 run",
        "  By person:",
        "  • alice · $0.25 · 1 run",
        "terminal:",
        f"  Total for the last 1 day (UTC, since {today}): $0.50 · 1 run",
        "  By day:",
        f"  • {today} · $0.50 · 1 run",
        "  By person:",
        "  • terminal · $0.50 · 1 run",
    ]


async def test_a_spent_daily_budget_refuses_a_terminal_run_with_when_it_resets(
    cli: Cli, anthropic_api: FakeAnthropic
) -> None:
    await _seed(Path(cli.env["RESEARCH_BOT_DB"]), [(0, Origin(), 1.0)])
    cli.env["RESEARCH_BOT_DAILY_BUDGET_USD"] = "1"

    code, _, err = await cli.run("research", "Acme Robotics")

    assert code == 75
    assert "Today's research budget here ($1.00) is spent: $1.00 so far." in err
    assert "It resets at midnight UTC (in " in err and "Traceback" not in err
    assert anthropic_api.requests == []
    code, out, _ = await cli.run("history", "--json")
    assert len(json.loads(out)) == 1
