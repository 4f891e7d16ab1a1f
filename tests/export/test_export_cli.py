"""`research-bot export` the way a person runs it: a stored run's report written as a file."""

from __future__ import annotations

from pathlib import Path

import docx
import pytest
from pypdf import PdfReader

from bot.agent.report.model import Report
from bot.domain import Mode, Origin, Request, RunStatus
from bot.store.runs import Store
from tests.export.conftest import CYRILLIC, JAPANESE
from tests.process import Cli


@pytest.fixture
def cli(tmp_path: Path, kanji_fonts: Path) -> Cli:
    return Cli(
        tmp_path,
        {
            "RESEARCH_BOT_DB": str(tmp_path / "runs.sqlite3"),
            "RESEARCH_BOT_EXPORT_FONTS": str(kanji_fonts),
        },
    )


async def stored(cli: Cli, report: Report | None) -> str:
    """A finished run, with `report` stored for it (None: a run that ended without one)."""
    request = Request(topic="Acme Robotics", mode=Mode.COMPANY, origin=Origin())
    async with Store.connect(cli.env["RESEARCH_BOT_DB"]) as store:
        run = await store.create_run(request)
        saved = (report, "# stored markdown\n") if report else None
        status = RunStatus.DONE if report else RunStatus.FAILED
        await store.finish_run(run.run_id, status=status, ending="completed", report=saved)
    return run.run_id


async def test_export_writes_the_file_in_the_current_folder_or_where_asked(
    cli: Cli, report: Report, tmp_path: Path
) -> None:
    run_id = await stored(cli, report)

    code, out, err = await cli.run("export", run_id, "--format", "docx")

    assert (code, err) == (0, "")
    path = Path(out.strip())
    assert path == cli.cwd / f"acme-robotics-{run_id}.docx"
    assert docx.Document(str(path)).paragraphs[0].text == "Acme Robotics: обзор"

    target = tmp_path / "out" / "report.pdf"
    target.parent.mkdir()
    code, out, err = await cli.run("export", run_id.upper(), "-f", "pdf", "--output", str(target))

    assert (code, err) == (0, "")
    assert Path(out.strip()) == target
    text = "".join(page.extract_text() for page in PdfReader(target).pages)
    assert CYRILLIC in text and JAPANESE in text.replace(" ", "")


async def test_unknown_formats_runs_and_missing_reports_are_short_refusals(
    cli: Cli, report: Report
) -> None:
    run_id = await stored(cli, report)
    failed = await stored(cli, None)

    code, _, err = await cli.run("export", run_id, "--format", "xls")
    assert code == 2 and "xls" in err and "Traceback" not in err

    code, _, err = await cli.run("export", "nosuchrun", "--format", "html")
    assert code == 1 and err.strip() == "research-bot: No run nosuchrun here."

    code, _, err = await cli.run("export", failed, "--format", "html")
    assert code == 1 and "has no report" in err and "Traceback" not in err
    assert list(cli.cwd.glob("*.html")) == []
