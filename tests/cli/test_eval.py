"""`research-bot eval` and the claim-support figures in `show --json`, as a person runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.agent.events import RunFinished, ToolFinished
from bot.agent.report.model import Report, Section, Source
from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import Request, RunStatus
from bot.store.runs import Store
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb
from tests.process import Cli

REPORT = (
    "# Acme\n\n## TL;DR\n- It had raised $40 million in a Series B round led by Example "
    "Ventures [1].\n\n## People\nChief executive Jane Doe plans to hire about 120 engineers "
    "[1]. The company has 900 customers [1]."
)
FIGURES = (
    "3 cited claims: 1 supported by their sources, 1 not supported, 1 left unchecked · "
    "0 checked by the model, 2 settled by their numbers or a matching passage"
)


@pytest.fixture
def cli(tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Cli:
    return Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))


async def test_eval_prints_the_figures_the_unsupported_and_the_unchecked_claims(
    cli: Cli, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    article = web.url + ARTICLE_PATH
    # The judge answers without verdicts: its one open claim is left unchecked.
    anthropic_api.script(
        reply_tools([("read_page", {"url": article})]),
        reply_text(REPORT),
        reply_text("I would rather not use the tool."),
    )
    code, out, err = await cli.run("research", "Acme Robotics", "--max-turns", "3")
    assert code == 0, err
    assert FIGURES in Path(out.strip()).read_text()
    # What changed for the person is in the footer; why is for the log, not their terminal.
    assert "judge" not in err and "verdict" not in err
    code, out, _ = await cli.run("history", "--json")
    run_id = json.loads(out)[0]["run_id"]

    code, out, _ = await cli.run("eval", run_id)
    assert code == 0
    assert (
        "3 cited claims: 1 supported by their sources, 1 not supported, 1 left unchecked (33% "
        "supported) · 0 checked by the model, 2 settled by their numbers or a matching passage"
    ) in out
    assert "- The company has 900 customers [1]. (not in the cited sources: 900)" in out
    assert "Left unchecked (they may or may not be supported):" in out
    assert (
        "- Chief executive Jane Doe plans to hire about 120 engineers [1]. "
        "(unchecked: the check gave no verdict for it)"
    ) in out
    assert f"[1] Acme Robotics raises $40M to scale warehouse robots <{article}>" in out

    code, out, _ = await cli.run("eval", run_id, "--json")
    result = json.loads(out)
    assert result["measured"] == "stored" and result["supported_share"] == pytest.approx(1 / 3)
    assert result["figures"] == {
        "claims": 3,
        "supported": 1,
        "unsupported": 1,
        "unchecked": 1,
        "judged": 0,
        "settled": 2,
        "uncited": 0,
    }
    assert result["unsupported"][0]["sources"] == [
        {"n": 1, "title": "Acme Robotics raises $40M to scale warehouse robots", "url": article}
    ]
    assert result["unchecked"][0]["note"] == "unchecked: the check gave no verdict for it"

    code, out, _ = await cli.run("show", run_id, "--json")
    shown = json.loads(out)["claim_support"]
    assert (shown["claims"], shown["supported"], shown["unchecked"]) == (3, 1, 1)

    code, out, _ = await cli.run("eval", "--all", "--json")
    summary = json.loads(out)
    assert summary["runs_measured"] == 1 and summary["figures"]["unchecked"] == 1
    code, out, _ = await cli.run("eval", "--all")
    assert out.startswith("1 runs measured · 3 cited claims")


async def test_eval_all_sums_the_statements_that_lost_their_citations(cli: Cli) -> None:
    page = Source(url="https://acme.example/about", title="About Acme")
    async with Store.connect(Path(cli.env["RESEARCH_BOT_DB"])) as store:
        for uncited in (1, 2):
            record = await store.create_run(Request(topic="Acme"))
            claim = Claim(
                sentence="Acme [1].", sources=[1], verdict=Verdict.SUPPORTED, method="judge"
            )
            report = Report(
                title="Acme",
                tldr="Acme [1]. Made up [unverified].",
                sources=[page],
                support=Support(claims=[claim], unverified=uncited),
            )
            await store.finish_run(
                record.run_id, status=RunStatus.DONE, ending="completed", report=(report, "# A")
            )

    code, out, err = await cli.run("eval", "--all", "--json")
    assert code == 0, err
    figures = json.loads(out)["figures"]
    assert (figures["claims"], figures["judged"], figures["uncited"]) == (2, 2, 3)
    code, out, _ = await cli.run("eval", "--all")
    assert "3 statements marked [unverified]: their sources were never retrieved" in out


async def test_eval_measures_a_run_stored_before_claims_were_measured(cli: Cli) -> None:
    page = Source(url="https://acme.example/about", title="About Acme")
    async with Store.connect(Path(cli.env["RESEARCH_BOT_DB"])) as store:
        record = await store.create_run(Request(topic="Acme"))
        await store.append_event(
            record.run_id,
            ToolFinished(
                turn=1,
                call_id="t1",
                name="read_page",
                is_error=False,
                content="[1] About Acme\n<web_content>\nAcme was founded in 2019.\n</web_content>",
                sources=[page],
                numbers=[1],
            ),
        )
        await store.append_event(
            record.run_id, RunFinished(ending="completed", turns=2, usage={"input_tokens": 1})
        )
        body = "Acme was founded in 2019 [1]. It has 50 staff [1]. It is well liked [1]."
        report = Report(
            title="Acme", tldr="", sections=[Section(heading="Overview", body=body)], sources=[page]
        )
        await store.finish_run(
            record.run_id, status=RunStatus.DONE, ending="completed", report=(report, "# Acme")
        )

    code, out, err = await cli.run("eval", record.run_id, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["measured"] == "deterministic"
    assert (result["figures"]["supported"], result["figures"]["unsupported"]) == (1, 1)
    assert result["figures"]["unchecked"] == 1

    code, out, _ = await cli.run("eval", "--all")
    assert code == 0 and out.strip() == "No run has measured claims yet."


async def test_eval_needs_a_run_or_all_and_says_when_a_run_is_unknown(cli: Cli) -> None:
    code, _, err = await cli.run("eval")
    assert code == 2 and "RUN_ID or --all" in err
    code, _, err = await cli.run("eval", "nosuchrun")
    assert code == 1 and "No run" in err
