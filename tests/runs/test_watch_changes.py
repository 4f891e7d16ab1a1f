"""What changed since a watch's last report: the sources no earlier report had, the one line
when nothing is new, and the section placed under the report's title."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.agent.report.model import Report, Source
from bot.runs.watch_changes import new_sources, what_changed, with_changes

SINCE = datetime(2026, 9, 1, 9, tzinfo=UTC)


def report(*urls: str) -> Report:
    return Report(title="Acme", tldr="x", sources=[Source(url=u, title=u[-5:]) for u in urls])


def test_only_sources_no_earlier_report_had_are_new() -> None:
    earlier = [report("https://acme.example/about/"), report("https://news.example/a")]
    current = report(
        "https://ACME.example/about", "https://www.news.example/a#top", "https://ft.example/b"
    )
    assert [n for n, _ in new_sources(current, earlier)] == [3]
    section = what_changed(current, earlier, SINCE)
    assert section is not None
    assert section.splitlines()[0] == "## What changed since 1 Sep 2026"
    assert "- [3] ple/b (search result)" in section


def test_nothing_new_is_one_line_and_a_first_report_has_none() -> None:
    same = report("https://acme.example/about")
    assert (
        what_changed(same, [same], SINCE) == "No material change since 1 Sep 2026: no new sources."
    )
    assert what_changed(same, [], SINCE) is None


def test_the_section_goes_under_the_title() -> None:
    assert (
        with_changes("# Acme\n\n## TL;DR\n- x", "CHANGES") == "# Acme\n\nCHANGES\n\n## TL;DR\n- x"
    )
