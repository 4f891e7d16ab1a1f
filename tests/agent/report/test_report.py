"""Reports: every citation points at a source this run retrieved, in code, not by prompt alone."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.agent.report.model import (
    Source,
    SourceRegistry,
    evidence_report,
    parse_report,
    render_markdown,
)
from bot.domain import Mode, Origin, RunRecord, RunStatus


def registry(*urls: str) -> SourceRegistry:
    reg = SourceRegistry()
    for url in urls:
        reg.add(Source(url=url, title=f"Title of {url}"))
    return reg


def test_citations_are_renumbered_by_first_use_and_numbers_past_the_sources_dropped() -> None:
    reg = registry("https://a.example", "https://b.example", "https://c.example")
    text = (
        "# Acme\n\n## TL;DR\n- Grows fast [3].\n\n## Overview\n"
        "Founded 2015 [1, 3, 7]. Revenue [2].\n\n## Sources\n1. [invented](https://x.example)\n"
    )

    report = parse_report(text, reg, topic="Acme", mode="company")

    assert report.title == "Acme"
    assert report.tldr == "- Grows fast [1]."
    assert report.sections[0].body == "Founded 2015 [1][2]. Revenue [3]."
    assert [s.url for s in report.sources] == [
        "https://c.example",
        "https://a.example",
        "https://b.example",
    ]
    assert [s.heading for s in report.sections] == ["Overview"]


def test_links_to_unseen_urls_lose_the_link_and_seen_ones_become_citations() -> None:
    reg = registry("https://seen.example/page")
    text = (
        "# T\n\n## TL;DR\nSee [the page](https://seen.example/page#top) "
        "and [a rumour](https://evil.example/x)."
    )

    report = parse_report(text, reg, topic="T", mode="company")

    assert report.tldr == "See the page [1] and a rumour."
    assert [s.url for s in report.sources] == ["https://seen.example/page"]


def test_text_without_the_template_still_makes_a_report() -> None:
    report = parse_report(
        "Plain answer with no headings [1].",
        registry("https://a.example"),
        topic="X",
        mode="company",
    )

    assert report.title == "Research: X"
    assert report.tldr == "Plain answer with no headings [1]."
    assert report.sections[0].heading == "Overview"


def test_an_evidence_report_lists_what_was_found_and_says_why() -> None:
    reg = registry("https://a.example")

    report = evidence_report("Acme", "company", reg, "Writing the report failed.")

    assert report.from_evidence_only and "Writing the report failed." in report.tldr
    assert "[1] **Title of https://a.example**" in report.sections[0].body


def test_markdown_has_numbered_sources_and_a_footer() -> None:
    reg = registry("https://a.example")
    report = parse_report("# Acme\n\n## TL;DR\nOk [1].", reg, topic="Acme", mode="company")
    run = RunRecord(
        run_id="abc234defg",
        topic="Acme",
        mode=Mode.COMPANY,
        origin=Origin(),
        status=RunStatus.DONE,
        turns=3,
        cost_usd=0.0123,
        created_at=datetime.now(UTC),
    )

    markdown = render_markdown(report, run, "completed")

    assert "1. [Title of https://a.example](https://a.example)" in markdown
    assert "Run `abc234defg` · 3 turns · ending: completed" in markdown
    assert "$0.0123" in markdown


def test_text_before_the_title_is_dropped_and_a_report_without_a_title_parses_as_before() -> None:
    reg = registry("https://a.example")
    chatty = "Based on my research, here is the report:\n\n# Acme\n\n## TL;DR\n- Grows.\n"
    report = parse_report(chatty, reg, topic="Acme", mode="company")
    assert (report.title, report.tldr, report.sections) == ("Acme", "- Grows.", [])

    untitled = "Acme makes robots.\n\n## TL;DR\n- Grows.\n\n## People\nNone found.\n"
    report = parse_report(untitled, reg, topic="Acme", mode="company")
    assert report.title == "Research: Acme"
    assert [(s.heading, s.body) for s in report.sections] == [
        ("Overview", "Acme makes robots."),
        ("People", "None found."),
    ]
