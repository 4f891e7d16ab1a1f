"""Citations are checked on the parsed report: no URL the run did not retrieve survives, in any
syntax; every `[n]` points at the right source after renumbering; lost citations are marked."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.agent.report.model import Report, Source, SourceRegistry, parse_report, render_markdown
from bot.domain import Mode, Origin, RunRecord, RunStatus

A, B, C = "https://a.example/page", "https://b.example/page", "https://c.example/page"
WIKI = "https://en.wikipedia.org/wiki/Acme_(company)"


def registry(*urls: str, read: bool = True) -> SourceRegistry:
    reg = SourceRegistry()
    for url in urls:
        reg.add(Source(url=url, title=f"Title of {url}", read=read))
    return reg


def parsed(body: str, *urls: str) -> Report:
    text = f"# Acme\n\n## TL;DR\n- Acme makes robots [1].\n\n## Overview\n{body}\n"
    return parse_report(text, registry(*(urls or (A, B, C))), topic="Acme", mode="company")


def overview(report: Report) -> str:
    return report.sections[0].body


def markdown(report: Report) -> str:
    run = RunRecord(
        run_id="r1",
        topic="Acme",
        mode=Mode.COMPANY,
        origin=Origin(),
        status=RunStatus.DONE,
        created_at=datetime.now(UTC),
    )
    return render_markdown(report, run, "completed")


def test_a_bare_url_never_retrieved_is_removed_and_its_sentence_marked() -> None:
    report = parsed("Revenue was $5M. Also cited: http://made-up.example/x")

    assert "made-up" not in markdown(report)
    assert overview(report) == "Revenue was $5M. Also cited: [unverified]"
    assert report.support is not None and report.support.unverified == 1


def test_autolinks_reference_definitions_and_html_anchors_are_removed_keeping_words() -> None:
    report = parsed(
        "One <https://auto.example/y> here [2]. See [the filing][f] now [3].\n"
        'Also <a href="https://anchor.example/z">the anchor</a> [2]. And <img src="https://img.example/p.png">.\n\n'
        "[f]: https://ref.example/filing\n"
    )

    text = markdown(report)
    for made_up in ("auto.example", "ref.example", "anchor.example", "img.example"):
        assert made_up not in text
    assert "See the filing now [3]." in overview(report)
    assert "Also the anchor [2]." in overview(report)


def test_links_to_retrieved_pages_become_citations_and_a_url_with_parentheses_stays_whole() -> None:
    report = parsed(f"The history is on Wikipedia {WIKI} and [here]({A}).", WIKI, A)

    assert overview(report) == "The history is on Wikipedia [1] and here [2]."
    assert [s.url for s in report.sources] == [WIKI, A]
    assert f"(<{WIKI}>)" in markdown(report)


def test_a_numeric_reference_definition_to_an_unseen_url_is_no_citation() -> None:
    report = parsed("Founded in 2015 [1].\n\n[1]: https://num.example/made-up")

    assert "num.example" not in markdown(report)
    assert overview(report) == "Founded in 2015 [unverified]."


def test_ranges_lists_and_the_title_are_renumbered_everywhere() -> None:
    text = (
        "# Acme [3] grows\n\n## TL;DR\n- Fast [3-4] and [2–3].\n\n## Deals\n"
        "| Buyer | Link |\n|---|---|\n| City | [4] |\n| Town | [1, 2] |\n"
    )
    reg = registry(A, B, C, "https://d.example")

    report = parse_report(text, reg, topic="Acme", mode="contracts")

    assert report.title == "Acme [1] grows"
    assert report.tldr == "- Fast [1][2] and [1][3]."
    table = " ".join(report.sections[0].body.split())
    assert "| City | [2] |" in table and "| Town | [3][4] |" in table
    assert [s.url for s in report.sources] == [C, "https://d.example", B, A]


def test_years_and_amounts_in_brackets_are_left_alone() -> None:
    report = parsed("In [2024] revenue reached [1500] units [2]. Range [2019-2021] too [1].")

    assert (
        overview(report) == "In [2024] revenue reached [1500] units [2]. Range [2019-2021] too [1]."
    )


def test_a_citation_of_a_source_the_run_does_not_have_is_dropped_and_marked() -> None:
    report = parsed("They have 40 customers [9]. They sell in Asia [9, 2].", A, B)

    assert overview(report) == "They have 40 customers [unverified]. They sell in Asia [2]."
    assert report.support is not None and report.support.unverified == 1


def test_a_foreign_sources_list_is_replaced_by_ours_whatever_its_heading() -> None:
    for heading in ("Quellen", "Références", "Lähteet", "Bronnen"):
        text = (
            "# Acme\n\n## TL;DR\n- Robots [1].\n\n## Überblick\nGegründet 2015 [2].\n\n"
            f"## {heading}\n1. [Acme – Über uns](https://acme.example/about)\n"
            "2. https://made-up.example/quelle\n"
        )

        report = parse_report(text, registry(A, B), topic="Acme", mode="company")

        assert [s.heading for s in report.sections] == ["Überblick"], heading
        assert "acme.example" not in markdown(report)


def test_a_news_section_of_linked_prose_is_not_taken_for_a_sources_list() -> None:
    text = (
        "# Acme\n\n## TL;DR\n- Robots [1].\n\n## Recent news\n"
        f"- In March Acme opened a plant, as [the paper]({A}) says.\n"
        f"- In May it hired 200 people, per [a report]({B}).\n"
    )

    report = parse_report(text, registry(A, B), topic="Acme", mode="company")

    assert [s.heading for s in report.sections] == ["Recent news"]


def test_urls_in_code_and_link_words_are_cut_too() -> None:
    report = parsed(
        f"Run `curl http://made-up.example/api` or see [http://made-up.example]({A}).", A
    )

    assert "made-up" not in markdown(report)


def test_a_search_result_read_later_becomes_read_and_the_sources_say_which_were_only_seen() -> None:
    reg = SourceRegistry()
    seen = reg.add(Source(url=A, title="A (snippet)"))
    reg.add(Source(url=B, title="B (snippet)"))
    assert reg.add(Source(url=A, title="A (page)", read=True)) == seen
    report = parse_report("# Acme\n\n## TL;DR\n- One [1], two [2].", reg, topic="A", mode="company")

    text = markdown(report)

    assert f"1. [A (page)]({A})\n" in text
    assert f"2. [B (snippet)]({B}) (search result only)" in text


def test_restoring_stored_sources_keeps_the_read_one() -> None:
    reg = SourceRegistry()
    reg.restore(1, Source(url=A, title="page", read=True))
    reg.restore(1, Source(url=A, title="snippet"))

    assert reg.sources[0].read and reg.sources[0].title == "page"
