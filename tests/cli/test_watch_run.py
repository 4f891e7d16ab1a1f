"""`research-bot watch run` end to end, as a subprocess against the local fakes: the watch's run
writes its report as `research` does, is marked with its watch, and the watch's next
period is counted from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.store.runs import Store
from bot.watches.cadence import Cadence
from bot.watches.model import NewWatch
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb
from tests.process import Cli

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n\n## Overview\nFounded 2015 [2].\n"


@pytest.fixture
def cli(tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Cli:
    return Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))


async def test_a_watch_run_writes_its_report_and_is_marked_with_its_watch(
    cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb, tmp_path: Path
) -> None:
    anthropic_api.script(
        reply_tools([("read_page", {"url": web.url + ARTICLE_PATH})]), reply_text(REPORT)
    )
    async with Store.connect(tmp_path / "runs.sqlite3") as store:
        watch = await store.add_watch(
            NewWatch(topic="Acme Robotics", cadence=Cadence.DAILY), limit=1
        )

    code, out, err = await cli.run("watch", "run", watch.id, "--output", str(tmp_path / "a.md"))

    assert code == 0, err
    assert out.strip() == str(tmp_path / "a.md")
    assert "## TL;DR" in (tmp_path / "a.md").read_text()
    async with Store.connect(tmp_path / "runs.sqlite3") as store:
        [run] = await store.list_runs()
        assert await store.watch_ids_of([run.run_id]) == {run.run_id: watch.id}
        [after] = await store.list_watches("terminal", "")
    assert after.last_run_id == run.run_id
    assert after.last_run_at is not None and after.next_run_at > after.last_run_at
