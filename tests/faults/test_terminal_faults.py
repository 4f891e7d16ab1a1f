"""Faults a terminal user meets, through the real `research-bot` command: a run killed by
SIGTERM, SIGHUP or kill -9 (then `history` and `resume`), a database that is locked,
read-only, full or not SQLite, and many runs at once on one database."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from bot.domain import Request
from bot.store.runs import Store
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import Cli, eventually, wait_for_line

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n"


@pytest.fixture
def cli(tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Cli:
    return Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))


def _db(cli: Cli) -> Path:
    return Path(cli.env["RESEARCH_BOT_DB"])


async def _hang(body: dict[str, Any]) -> Any:
    await asyncio.Event().wait()


async def _report(body: dict[str, Any]) -> Any:
    return reply_text(REPORT)


def _stored_kinds(db: Path) -> list[str]:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return [row[0] for row in conn.execute("SELECT kind FROM events ORDER BY id")]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
async def test_a_killed_terminal_run_is_interrupted_then_resumed(
    cli: Cli, anthropic_api: FakeAnthropic, tmp_path: Path, sig: signal.Signals
) -> None:
    anthropic_api.script(reply_tools([("web_search", {"query": "acme"})]))
    anthropic_api.responder = _hang
    process = await cli.start("research", "Acme Robotics")
    assert process.stderr is not None
    await wait_for_line(process.stderr, "Searched: acme")
    await anthropic_api.wait_for_requests(2)

    async def evidence_stored() -> bool:
        return "tool_finished" in _stored_kinds(_db(cli))

    await eventually(evidence_stored)
    process.send_signal(sig)
    _, rest = await process.communicate()

    if sig is signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
    else:
        assert process.returncode == 128 + sig.value
        assert "research-bot resume" in rest.decode() and "Traceback" not in rest.decode()
    code, out, _ = await cli.run("history", "--json")
    [row] = json.loads(out)
    assert code == 0 and row["status"] == "interrupted"

    anthropic_api.responder = _report
    code, out, err = await cli.run("resume", row["run_id"], "--output", str(tmp_path / "r.md"))
    assert code == 0, err
    assert out.strip() == str(tmp_path / "r.md")
    markdown = (tmp_path / "r.md").read_text()
    assert "ending: interrupted_synthesized" in markdown and "acme - result 1" in markdown
    code, out, _ = await cli.run("history", "--json")
    assert json.loads(out)[0]["status"] == "done"

    code, _, err = await cli.run("resume", row["run_id"], "--output", str(tmp_path / "again.md"))
    assert code == 0 and (tmp_path / "again.md").read_text() == markdown
    # The turn, the one that hung, the write-up and its claim judge; delivering again costs none.
    assert len(anthropic_api.requests) == 4


async def test_an_output_in_a_missing_folder_is_refused_before_any_spend(
    cli: Cli, anthropic_api: FakeAnthropic, tmp_path: Path
) -> None:
    code, _, err = await cli.run("research", "Acme", "--output", str(tmp_path / "no" / "r.md"))
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    assert anthropic_api.requests == []


async def test_a_report_that_cannot_be_written_is_kept_and_resume_writes_it(
    cli: Cli, anthropic_api: FakeAnthropic, tmp_path: Path
) -> None:
    anthropic_api.responder = _report
    folder = tmp_path / "out"
    folder.mkdir()
    process = await cli.start("research", "Acme", "--output", str(folder / "r.md"))
    assert process.stderr is not None
    await wait_for_line(process.stderr, "researching")
    folder.rmdir()  # gone while the run works
    _, err = await process.communicate()
    assert process.returncode == 1
    assert "research-bot show" in err.decode() and "research-bot resume" in err.decode()

    run_id = json.loads((await cli.run("history", "--json"))[1])[0]["run_id"]
    code, _, err = await cli.run("resume", run_id, "--output", str(tmp_path / "r.md"))
    assert code == 0 and "Builds robots" in (tmp_path / "r.md").read_text()
    assert len(anthropic_api.requests) == 1
    # What happened, in the terminal's terms: nothing restarted, nothing was posted.
    assert "could not be written then: it is written now" in err
    assert "Posted after a restart" not in err and "resuming" not in err


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def _one_run(db: Path) -> str:
    async with Store.connect(db) as store:
        return (await store.create_run(Request(topic="Earlier"))).run_id


async def test_a_file_that_is_not_sqlite_is_one_line_and_left_untouched(cli: Cli) -> None:
    _db(cli).write_text("my notes, not a database\n" * 100)
    before = _digest(_db(cli))
    for command in (["history"], ["show", "abc"], ["research", "Acme"]):
        code, _, err = await cli.run(*command)
        assert code == 2, command
        assert "is not a research-bot database" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
    assert _digest(_db(cli)) == before


async def test_a_locked_database_is_one_line_and_readers_still_read(
    cli: Cli, anthropic_api: FakeAnthropic
) -> None:
    earlier = await _one_run(_db(cli))
    cli.env["RESEARCH_BOT_DB_BUSY_TIMEOUT_S"] = "0.2"
    with closing(sqlite3.connect(_db(cli), isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")  # another process holding the write lock
        code, _, err = await cli.run("research", "Acme")
        assert code == 2 and "is locked by another process" in err and "Traceback" not in err
        code, out, _ = await cli.run("history", "--json")
        assert code == 0 and [r["run_id"] for r in json.loads(out)] == [earlier]
        writer.execute("ROLLBACK")
    assert anthropic_api.requests == []


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Make a file read-only even for root (who ignores file modes): immutable, as on a
    read-only volume. Undone afterwards so pytest can clean up."""
    frozen: list[Path] = []

    def freeze(path: Path) -> None:
        if os.getuid() != 0:
            path.chmod(0o444)
            return
        if shutil.which("chattr") is None:
            pytest.skip("chattr (e2fsprogs) is needed to make a file read-only for root")
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
        if made.returncode != 0:
            pytest.skip(f"this file system cannot make a file immutable: {made.stderr!r}")
        frozen.append(path)

    yield freeze
    for path in frozen:
        subprocess.run(["chattr", "-i", str(path)], check=True)


async def test_a_read_only_database_is_one_line_and_left_untouched(
    cli: Cli, read_only: Callable[[Path], None]
) -> None:
    earlier = await _one_run(_db(cli))
    read_only(_db(cli))
    before = _digest(_db(cli))

    code, _, err = await cli.run("research", "Acme")
    assert code == 2 and "read-only" in err and "Traceback" not in err, err
    code, out, err = await cli.run("history", "--json")
    assert code == 0, err
    assert [r["run_id"] for r in json.loads(out)] == [earlier]
    assert _digest(_db(cli)) == before


# Its three steps took 2-3 s alone but went past the 30 s default with the other worker busy,
# when each command imported its SDKs anew (seconds each); forked now, kept with room to spare.
@pytest.mark.timeout(90)
async def test_a_full_disk_is_one_line_and_the_history_survives(cli: Cli) -> None:
    earlier = await _one_run(_db(cli))
    for leftover in _db(cli).parent.glob("runs.sqlite3-*"):
        leftover.unlink()
    before = _digest(_db(cli))

    code, _, err = await cli.run("research", "Acme", max_file_bytes=1024)
    assert code == 2 and "disk full" in err and "Traceback" not in err, err

    assert _digest(_db(cli)) == before
    code, out, _ = await cli.run("history", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [earlier]


def _most_in_flight(db: Path) -> int:
    """The most runs that were open at one moment: started and not yet finished."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        spans = conn.execute("SELECT created_at, finished_at FROM runs").fetchall()
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    return max(itertools.accumulate(step for _, step in edges))


CONCURRENT_RUNS = 12
"""Six processes a core, started at once on a database none of them has created yet: each
opens it (the first creating the schema and switching it to WAL while the others wait on
the lock) and then writes its run, its events and its report while the others write theirs.
Thirty did the same at two and a half times the cost; the test checks that the runs really
overlapped, so a smaller number cannot quietly stop contending."""


@pytest.mark.timeout(90)
async def test_many_terminal_runs_on_one_database_all_finish(
    cli: Cli, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.responder = _report
    cli.nice = 19
    runs = CONCURRENT_RUNS
    processes = [await cli.start("research", f"Company {n}") for n in range(runs)]
    results = await asyncio.gather(*(p.communicate() for p in processes))

    failed = [err.decode() for p, (_, err) in zip(processes, results, strict=True) if p.returncode]
    assert failed == []
    code, out, _ = await cli.run("history", "--json", "--limit", "100")
    rows = json.loads(out)
    assert code == 0
    assert len(rows) == runs and {r["status"] for r in rows} == {"done"}
    assert _most_in_flight(_db(cli)) >= runs // 2
