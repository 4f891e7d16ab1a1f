"""What the terminal prints, as a person sees it: stored text without terminal escapes, the
TL;DR as words, `resume` saying what it does, aligned history, whole help texts, and exports
that never overwrite a file unannounced."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from bot.agent.report.model import Report, Section, Source
from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import Origin, Request, RunStatus
from bot.store.runs import Store
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import Cli

# What a hostile page can plant: a screen clear, a title change, an OSC 8 link to a local file,
# an 8-bit CSI and a bidi override.
PLANTED = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;file:///etc/passwd\x07click\x1b]8;;\x1b\\\x9b31m\u202e"
ESCAPES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escapes(text: str) -> list[str]:
    return ESCAPES.findall(text)


@pytest.fixture
def cli(tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Cli:
    return Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))


async def _hostile_run(cli: Cli) -> str:
    """A finished run whose stored report, sources and claims carry planted escapes."""
    page = Source(url="https://acme.example/about", title=f"About Acme{PLANTED}")
    body = f"Acme was founded in 2019 [1]. It has 50 staff{PLANTED} [1]."
    claim = Claim(
        sentence=f"It has 50 staff{PLANTED} [1].",
        sources=[1],
        verdict=Verdict.UNSUPPORTED,
        method="deterministic",
        note=f"not in the cited sources: 50{PLANTED}",
    )
    report = Report(
        title=f"Acme{PLANTED}",
        tldr=f"- Builds robots{PLANTED} [1].",
        sections=[Section(heading="Overview", body=body)],
        sources=[page],
        support=Support(claims=[claim]),
    )
    markdown = f"# Acme{PLANTED}\n\n## Overview\n\n{body}\n"
    slack = Origin(platform="slack", workspace="T1", user="U1", user_name=f"bob{PLANTED}")
    async with Store.connect(Path(cli.env["RESEARCH_BOT_DB"])) as store:
        record = await store.create_run(Request(topic="Acme"))
        await store.finish_run(
            record.run_id, status=RunStatus.DONE, ending="completed", report=(report, markdown)
        )
        await store.create_run(Request(topic="Acme", origin=slack))
    return record.run_id


@pytest.mark.timeout(60)  # eight processes, one after another
async def test_stored_text_reaches_the_terminal_without_its_escapes(cli: Cli) -> None:
    run_id = await _hostile_run(cli)
    commands = [
        ["show", run_id],
        ["show", run_id, "--json"],
        ["show", run_id, "--trajectory"],
        ["eval", run_id],
        ["eval", run_id, "--json"],
        ["history"],
        ["usage"],
        ["export", run_id, "--format", "md"],
    ]

    results = [await cli.run(*command) for command in commands]

    for command, (code, out, err) in zip(commands, results, strict=True):
        assert code == 0, (command, err)
        assert _escapes(out) == [] and _escapes(err) == [], command
    shown, evaluated = results[0][1], results[3][1]
    assert "It has 50 staffclick [1]." in shown  # the text stays, only the escapes go
    assert "- It has 50 staffclick [1]. (not in the cited sources: 50click)" in evaluated
    assert "[1] About Acmeclick <https://acme.example/about>" in evaluated


async def test_a_failure_message_quoting_stored_text_prints_no_escapes(cli: Cli) -> None:
    code, _, err = await cli.run("show", f"abc{PLANTED}")
    assert code == 1 and "No run abc" in err and _escapes(err) == []


async def test_show_of_an_empty_id_says_where_ids_come_from(cli: Cli) -> None:
    for command in (["show", ""], ["show", "  "], ["export", "", "-f", "md"], ["resume", ""]):
        code, _, err = await cli.run(*command)
        said = " ".join(re.sub("[│╭╮╰╯─]", " ", err).split())
        assert code == 2, command
        assert "No run  here" not in said and "`research-bot history` lists" in said, err


REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots for <@U0ADMIN> and *friends* [1].\n"


async def test_the_terminal_tldr_is_words_not_markdown(
    cli: Cli, anthropic_api: FakeAnthropic, tmp_path: Path
) -> None:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]), reply_text(REPORT))
    code, _, err = await cli.run("research", "Acme Robotics", "--output", str(tmp_path / "r.md"))
    assert code == 0, err
    stored = (tmp_path / "r.md").read_text()
    assert "\\<@U0ADMIN>" in stored  # the Markdown file keeps its escape: it is Markdown
    assert "TL;DR: - Builds robots for <@U0ADMIN> and friends [1]." in err
    assert "\\<" not in err and "*friends*" not in err


async def _finished(cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb) -> str:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]), reply_text(REPORT))
    code, _, err = await cli.run("research", "Acme Robotics")
    assert code == 0, err
    started = re.search(r"Run (\w+): researching", err)
    assert started is not None, err
    return started[1]


async def test_resume_of_a_finished_run_says_it_writes_the_report_again(
    cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb, tmp_path: Path
) -> None:
    run_id = await _finished(cli, anthropic_api, web)
    calls = len(anthropic_api.requests)

    code, out, err = await cli.run("resume", run_id, "--output", str(tmp_path / "again.md"))

    assert code == 0, err
    assert out.strip() == str(tmp_path / "again.md")
    assert "Posted after a restart" not in err and "resuming" not in err
    assert "had ended" in err and "written again" in err
    assert len(anthropic_api.requests) == calls


def answer(text: str) -> Any:
    return reply([tool_use("answer", {"answer": text})], "tool_use")


async def test_ask_shows_its_searches_like_research_and_resume_prints_the_answer_again(
    cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    run_id = await _finished(cli, anthropic_api, web)
    anthropic_api.script(
        reply_tools([("web_search", {"query": f"Acme customers{PLANTED}"})]),
        answer(f"Grocers{PLANTED} [1]."),
    )

    code, out, err = await cli.run("ask", run_id, "Who are their customers?")

    assert code == 0, err
    assert "Searched: Acme customers" in err and "web_search:" not in err
    assert out.startswith("Grocersclick [1].") and _escapes(out + err) == []

    code, out, _ = await cli.run("history")
    parent, follow_up = out.splitlines()
    assert parent.startswith(run_id) and "└ follow-up" in follow_up
    # Left-aligned columns start together, right-aligned ones (turns, cost) end together.
    for column, edge in ((r"\d{4}-\d\d-\d\d", 0), (r"\bdone\b", 0), ("turns", 1), (r"\$[\d.]+", 1)):
        found = [re.search(column, line) for line in (parent, follow_up)]
        assert all(found), column
        assert len({m.span()[edge] for m in found if m}) == 1, (column, parent, follow_up)

    calls = len(anthropic_api.requests)
    code, out, err = await cli.run("resume", follow_up.split()[0])
    assert code == 0, err
    assert out.startswith("Grocersclick [1].") and _escapes(out + err) == []
    assert "asking again" not in err and "answered before" in err
    assert len(anthropic_api.requests) == calls


async def test_export_never_overwrites_a_file_unannounced(
    cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb, tmp_path: Path
) -> None:
    run_id = await _finished(cli, anthropic_api, web)
    mine = tmp_path / f"acme-robotics-{run_id}.md"
    mine.write_text("my own notes")

    code, out, err = await cli.run("export", run_id, "--format", "md")

    assert code == 0, err
    written = Path(out.strip())
    assert mine.read_text() == "my own notes"
    assert written == tmp_path / f"acme-robotics-{run_id} (1).md"
    assert "Builds robots" in written.read_text()
    assert f"acme-robotics-{run_id}.md exists: wrote {written.name}" in err

    code, out, err = await cli.run("export", run_id, "--format", "md", "--output", str(mine))
    assert code == 0 and Path(out.strip()) == mine and "Builds robots" in mine.read_text()
    assert f"Replaced {mine}" in err


COMMANDS = [
    ["research"],
    ["resume"],
    ["ask"],
    ["history"],
    ["usage"],
    ["show"],
    ["export"],
    ["eval"],
    ["serve"],
    ["discord", "sync"],
]


def _early_breaks(lines: list[str], width: int) -> list[tuple[str, str]]:
    """Pairs of lines of one paragraph where the next line's first word would have fitted on
    the line before: a break the text made, not the terminal's width."""
    return [
        (line, after)
        for line, after in itertools.pairwise(lines)
        if line and after and len(line) + 1 + len(after.split()[0]) <= width
    ]


def _listing(help_text: str) -> dict[str, list[str]]:
    """The Commands panel of the top-level help: each command's description, line by line."""
    panel = help_text.split("Commands")[1].splitlines()[1:]
    rows: dict[str, list[str]] = {}
    name = ""
    for line in panel:
        found = re.match(r"│ (\S*) +(.*?) *│$", line)
        if found is None:
            break
        name = found[1] or name
        rows.setdefault(name, []).append(found[2])
    return rows


def _description(help_text: str) -> list[list[str]]:
    """The paragraphs of a command's help, between its usage line and its first panel."""
    paragraphs: list[list[str]] = [[]]
    for line in help_text.split("Usage:")[1].split("╭")[0].splitlines()[1:]:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


@pytest.mark.timeout(60)  # eleven processes, one after another
async def test_every_help_text_is_whole_and_wraps_only_at_the_terminal_width(cli: Cli) -> None:
    cli.env["COLUMNS"] = "80"
    helps = [await cli.run(*command, "--help") for command in [[], *COMMANDS]]
    assert all(code == 0 for code, _, _ in helps), [err for _, _, err in helps]

    listing = _listing(helps[0][1])
    assert set(listing) >= {"research", "resume", "ask", "history", "show", "export", "eval"}
    for name, lines in listing.items():
        assert _early_breaks(lines, 60) == [], name
        assert lines[-1].endswith((".", ")")), (name, lines)
    for command, (_, out, _) in zip(COMMANDS, helps[1:], strict=True):
        paragraphs = _description(out)
        assert paragraphs, command
        for lines in paragraphs:
            assert _early_breaks(lines, 74) == [], (command, lines)
            assert lines[-1].endswith((".", ")")), (command, lines)


def test_a_history_row_counts_one_turn_as_one_turn() -> None:
    from datetime import UTC, datetime

    from bot.cli.history import history_line
    from bot.domain import Origin, RunRecord, RunStatus

    now = datetime(2026, 1, 1, tzinfo=UTC)
    run = RunRecord(
        run_id="abc2345678",
        topic="Acme",
        mode="company",
        origin=Origin(platform="terminal"),
        status=RunStatus.DONE,
        turns=1,
        created_at=now,
    )
    assert "  1 turn  " in history_line(run, now)
    assert " 2 turns  " in history_line(run.model_copy(update={"turns": 2}), now)
