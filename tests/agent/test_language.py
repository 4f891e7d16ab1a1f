"""The asker's language: locales to primary tags, detection from a topic, and the frame words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.agent.brief import for_stage
from bot.agent.language import FRAMES, detect, language_for, normalise, stated
from bot.agent.prompts import evidence_prompt, system_prompt, task
from bot.agent.report.model import (
    Report,
    Source,
    SourceRegistry,
    evidence_report,
    parse_report,
    render_markdown,
)
from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import Mode, Origin, RunRecord, RunStatus
from bot.errors import RequestError


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("de-DE", "de"),
        ("de", "de"),
        ("pt-BR", "pt"),
        ("es-ES", "es"),
        ("en-US", "en"),
        ("en-GB", "en"),
        ("fr_FR", "fr"),
        ("JA", "ja"),
        ("ja-JP", "ja"),
        ("ru", "ru"),
        ("zh-CN", None),
        ("ko", None),
        ("", None),
        (None, None),
        ("  ", None),
    ],
)
def test_locales_normalise_to_a_primary_tag_we_write(tag: str | None, expected: str) -> None:
    assert normalise(tag) == expected


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("Straßenbau Ausschreibungen in Bayern über 1 Mio EUR", "de"),
        ("Was macht die Firma Bosch", "de"),
        ("entretien des routes, Irlande, plus de 1 M EUR", "fr"),
        ("Quelle est la stratégie de Renault", "fr"),
        ("mantenimiento de carreteras en España", "es"),
        ("Яндекс", "ru"),
        ("Ремонт дорог в Москве", "ru"),
        ("トヨタ自動車", "ja"),
        ("road maintenance, Ireland, over 1M EUR", "en"),
        ("manutenzione stradale in Italia", "it"),
        ("manutenção de estradas no Brasil", "pt"),
        # A long topic is read whole (the detector cuts at 80 characters by default).
        (
            "Acme Robotics GmbH, Siemens AG, Deutsche Bahn AG, Robert Bosch GmbH und ihre "
            "Lieferanten in der Region",
            "de",
        ),
    ],
)
def test_a_clear_topic_gives_its_language(topic: str, expected: str) -> None:
    assert detect(topic) == expected
    assert language_for(None, topic) == expected


@pytest.mark.parametrize(
    "topic",
    [
        # Names alone say little about the asker: English stays.
        "Siemens",
        "Deutsche Bahn",
        "Banco Santander",
        "Société Générale",
        "Deutsche Bank AG Frankfurt am Main",
        "Acme Robotics",
        # Scripts and languages we do not write, and no words at all.
        "삼성전자",
        "Київстар",
        "wegenonderhoud in Nederland boven 1 miljoen",
        "123 456",
        "",
    ],
)
def test_an_unclear_or_unknown_topic_falls_back_to_english(topic: str) -> None:
    assert language_for(None, topic) == "en"


def test_a_stated_locale_wins_and_an_unknown_one_leaves_it_to_the_topic() -> None:
    assert language_for("de-DE", "Acme Robotics") == "de"
    assert language_for("en-US", "Was macht die Firma Bosch") == "en"
    assert language_for("ko", "Was macht die Firma Bosch") == "de"
    assert language_for("ko", "Samsung") == "en"


def test_a_typed_language_must_be_one_we_write() -> None:
    assert stated("de-DE") == "de"
    assert stated(None) is None
    with pytest.raises(RequestError, match="de, en, es, fr, it, ja, pt, ru"):
        stated("klingon")


def test_the_task_names_the_language_and_its_tldr_heading() -> None:
    german = task(Mode.COMPANY, "Acme Robotics", "de")
    assert "Acme Robotics" in german
    assert "Write the report in German (Deutsch)" in german
    assert "`## Kurzfassung`" in german
    assert "in Japanese (日本語)" in task(Mode.CONTRACTS, "道路", "ja")
    assert "Write the report in English." in task(Mode.COMPANY, "Acme")
    assert "Write the report in French" in evidence_prompt(
        Mode.COMPANY, "Acme", "[1] a page", "interrupted", "fr"
    )
    # The system prompt stays the same in every language: it is the cached prefix.
    assert "the language the task" in system_prompt(for_stage(Mode.COMPANY, None))


def test_every_language_has_its_own_tldr_heading_the_parser_knows() -> None:
    registry = SourceRegistry()
    registry.add(Source(url="https://acme.example/"))
    for language, words in FRAMES.items():
        text = f"# Acme\n\n## {words.tldr}\n- Punkt [1].\n\n## Teil\nText [1].\n"
        report = parse_report(text, registry, topic="Acme", mode="company")
        assert report.tldr.strip() == "- Punkt [1].", language
        assert [s.heading for s in report.sections] == ["Teil"], language


def _run() -> RunRecord:
    return RunRecord(
        run_id="abc123",
        topic="Acme",
        mode=Mode.COMPANY,
        origin=Origin(),
        language="de",
        status=RunStatus.DONE,
        turns=3,
        input_tokens=1200,
        created_at=datetime(2026, 1, 5, tzinfo=UTC),
    )


def test_a_german_report_has_a_german_frame() -> None:
    registry = SourceRegistry()
    registry.add(Source(url="https://acme.example/", title="Acme"))
    report = parse_report(
        "# Acme GmbH\n\n## Kurzfassung\n- Baut Roboter [1].\n\n## Überblick\nGegründet 2015 [1].",
        registry,
        topic="Acme",
        mode="company",
    ).model_copy(update={"language": "de", "created_at": datetime(2026, 1, 5, tzinfo=UTC)})

    markdown = render_markdown(report, _run(), "completed")

    assert markdown.splitlines()[:5] == [
        "# Acme GmbH",
        "",
        "*Unternehmensrecherche · 2026-01-05*",
        "",
        "## Kurzfassung",
    ]
    assert "## Quellen\n\n1. [Acme](https://acme.example/) (nur Suchergebnis)" in markdown
    assert "## TL;DR" not in markdown and "## Sources" not in markdown
    assert "Lauf `abc123` · 3 Runden · Ende: completed · Tokens ein 1.200" in markdown


def test_the_claim_support_footer_speaks_the_report_language() -> None:
    claims = [
        Claim(sentence="Baut Roboter [1].", sources=[1], verdict=Verdict.SUPPORTED, method="judge"),
        Claim(sentence="Hat 40 Kunden [1].", sources=[1], verdict=Verdict.UNKNOWN, method="judge"),
    ]
    support = Support(claims=claims, unverified=1)
    report = Report(title="Acme", tldr="Baut Roboter [1].", language="de", support=support)

    markdown = render_markdown(report, _run(), "completed")

    assert (
        "2 belegte Aussagen: 1 von ihren Quellen gestützt, 0 nicht gestützt, 1 ungeprüft · "
        "1 vom Modell geprüft, 0 durch ihre Zahlen oder eine gleichlautende Stelle entschieden · "
        "1 Aussagen als [unbelegt] markiert: ihre Quellen wurden nie abgerufen"
    ) in markdown
    english = render_markdown(report.model_copy(update={"language": "en"}), _run(), "completed")
    assert (
        "2 cited claims: 1 supported by their sources, 0 not supported, 1 left unchecked · "
        "1 checked by the model, 0 settled by their numbers or a matching passage · "
        "1 statements marked [unverified]: their sources were never retrieved"
    ) in english


@pytest.mark.parametrize("language", sorted(FRAMES))
def test_every_footer_word_and_number_is_in_the_report_language(language: str) -> None:
    """Each frame has its own words for each count (no English left over) and the run's
    figures are written the language's way."""
    words = FRAMES[language]
    counts = ("{claims}", "{supported}", "{unsupported}", "{unchecked}", "{judged}", "{settled}")
    assert all(name in words.support for name in counts)
    assert "{uncited}" in words.uncited and "{mark}" in words.uncited
    if language != "en":
        english = FRAMES["en"]
        assert words.unverified_mark != english.unverified_mark
        assert words.cost_unknown != english.cost_unknown
    run = _run().model_copy(update={"input_tokens": 1_234_567, "cost_usd": None})
    markdown = render_markdown(Report(title="A", tldr="B", language=language), run, "completed")
    expected = {"en": "1,234,567", "de": "1.234.567", "ja": "1,234,567"}.get(language)
    if expected is not None:
        assert expected in markdown
    assert "1234567" not in markdown and words.cost_unknown in markdown


def test_a_statement_that_lost_its_citations_is_marked_in_the_report_language() -> None:
    registry = SourceRegistry()
    registry.add(Source(url="https://acme.example/"))
    text = "# Acme\n\n## Kurzfassung\nAcme baut Roboter [https://made-up.example/x]."
    report = parse_report(text, registry, topic="Acme", mode="company", language="de")
    assert "[unbelegt]" in report.tldr and "[unverified]" not in report.tldr


def test_a_report_from_the_sources_alone_speaks_the_language_too() -> None:
    empty = evidence_report("Acme", "company", SourceRegistry(), "Zeit abgelaufen.", language="de")
    assert empty.language == "de"
    assert empty.title == "Recherche: Acme (nur Quellen)"
    assert empty.tldr.startswith("Zeit abgelaufen. Dieser Bericht listet")
    assert [s.heading for s in empty.sections] == ["Was gefunden wurde"]
    assert empty.sections[0].body == "Bevor der Lauf endete, wurden keine Quellen abgerufen."
    english = evidence_report("Acme", "company", SourceRegistry(), "Time is up.")
    assert english.title == "Research: Acme (sources only)" and english.language == "en"
